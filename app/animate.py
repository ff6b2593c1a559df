"""A GIF of the last steps of the Step tab, made on the server (no screen recording): one frame
per block step with the step's anatomy (block, step kind, γ, the block's gap before and after)
above the per-block gap estimates ĝᵢ coloured by staleness, the step's block marked.

The steps are not recorded while the solver runs: they are replayed from the session's history
(:mod:`gaplab.app.history`: the solver is deterministic, so a checkpoint copied and stepped again
gives the same steps), on an independent copy; the session's state is not changed. Frames are
drawn by matplotlib (Agg) and written by Pillow (both dependencies of gaplab already).
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass, field

import numpy as np

from .wording import ROUND_OFF, count, gamma_words, gap_words

__all__ = ["StepFrame", "replay_frames", "render_gif", "last_steps_gif", "gif_span", "across_switch_span",
           "across_switch_gif", "MAX_FRAMES", "FRAME_BARS"]

#: the most steps one GIF shows (the history keeps at least this many steps back)
MAX_FRAMES = 200
#: more blocks than this are drawn in bins of ⌈n / FRAME_BARS⌉ (the largest ĝᵢ, the mean
#: staleness of each bin): the Step tab's bars (``BlockGapsView.MAX_BARS``), so a GIF bins as
#: the page does (the app passes the projector's count in projector mode)
FRAME_BARS = 140


@dataclass(frozen=True)
class StepFrame:
    """What one frame draws: the state right after block step ``iteration``.

    ``gaps`` and ``staleness`` are float64 (n,) (ĝᵢ, +inf where never computed; iterations
    since ĝᵢ was computed, NaN where never); ``gap_prev`` is ĝ of the block before the step
    (+inf: unvisited), ``gap_after`` its exact gap after the step (a diagnostic oracle call)."""

    iteration: int
    block: int
    kind: str
    cache_hit: bool
    gamma: float
    gamma_max: float
    gap_prev: float
    gap_after: float
    truth: str
    corner: str
    note: str
    gaps: np.ndarray = field(repr=False)
    staleness: np.ndarray = field(repr=False)
    image: np.ndarray | None = field(default=None, repr=False)
    gap_tol: float = 0.0     # the round-off threshold of a block gap (gaplab.app.wording)
    phase: str = ""          # a GIF across a setting switch: before or after it, in the caption


def _text(d) -> str:
    if not d:
        return ""
    t = d.get("text")
    if t is None and d.get("label_text") is not None:
        t = " ".join(str(x) for x in d["label_text"])
    return "" if t is None else str(t)


def _describe(model, i, y) -> dict:
    try:
        return dict(model.describe_block(i, y))
    except Exception:   # a model that cannot describe a block still gets its bars drawn
        return {}


def replay_frames(solver, steps: int, phase: str = "") -> list[StepFrame]:
    """Step an independent copy of ``solver`` ``steps`` times and record a frame after each
    step (``phase``: a caption line of every frame). ``solver`` itself is not changed.

    Raises
    ------
    ValueError
        If ``steps`` is not an int in [1, MAX_FRAMES].
    """
    steps = _check_steps(steps)
    s = solver.copy()
    model = s.model
    data = getattr(model, "data", None)
    extras = getattr(data, "extras", None) or {}
    frames = []
    for _ in range(int(steps)):
        before = s.gap_estimates
        s.steps(1)
        r = s.last_steps(1)[-1]
        i = r.block
        truth = _describe(model, i, model.ground_truth(i))
        corner = _describe(model, i, r.fw_corner) if r.fw_corner is not None else {}
        image = truth.get("image")
        if image is None and extras.get("images") is not None and hasattr(data, "tokens"):
            image = extras["images"][data.tokens(i)]
        st = np.asarray(s.staleness, dtype=np.float64)
        frames.append(StepFrame(
            iteration=r.iteration + 1, block=i, kind=r.kind, cache_hit=r.cache_hit, gamma=r.gamma,
            gamma_max=r.gamma_max, gap_prev=float(before[i]), gap_after=s.block_gap_now(i),
            truth=_text(truth), corner=_text(corner), note=str(truth.get("note") or ""),
            gaps=np.asarray(s.gap_estimates, dtype=np.float64), staleness=np.where(st >= 0, st, np.nan),
            image=None if image is None else np.asarray(image),
            gap_tol=ROUND_OFF * abs(float(s.dual_objective())) / max(int(s.n), 1), phase=phase))
    return frames


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    return f"{v:.3g}"


def _bins(n: int, max_bars: int):
    b = max(1, math.ceil(n / max_bars))
    return b, np.arange(0, n, b)


def frame_lines(frame: StepFrame, title: str) -> list[str]:
    """The text above a frame's bars: the step, γ and the block gap before → after (counts and
    round-off written as in the step sentence, :mod:`gaplab.app.wording`)."""
    kind = {"fw": "FW", "away": "away", "pairwise": "pairwise"}.get(frame.kind, frame.kind)
    corner = "cache corner (cache hit, no oracle call)" if frame.cache_hit else "FW corner (max oracle)"
    lines = [title,
             f"step #{frame.iteration:,}: block {count(frame.block)}" + (f" ({frame.note})" if frame.note else "")
             + f" · {kind} step · γ = {gamma_words(frame.gamma, '.3g')} (γmax = {_fmt(frame.gamma_max)})",
             f"block gap: ĝ before {gap_words(frame.gap_prev, frame.gap_tol, '.3g')} → exact after "
             f"{gap_words(frame.gap_after, frame.gap_tol, '.3g')}"]
    if frame.truth:
        lines.append(f"truth: {frame.truth[:60]}   {corner}: {frame.corner[:60]}")
    if frame.phase:
        lines.append(frame.phase)
    return lines


def _draw(fig, frame: StepFrame, title: str, ylim, st_max, max_bars):
    from matplotlib import cm, colormaps, colors

    fig.clear()
    top = fig.add_axes([0.03, 0.66, 0.94, 0.30])
    top.axis("off")
    lines = frame_lines(frame, title)
    top.text(0.0, 1.0, "\n".join(lines[:-1] if frame.phase else lines), va="top", ha="left", fontsize=11,
             family="DejaVu Sans", transform=top.transAxes, linespacing=1.5)
    if frame.phase:   # the setting switch, in the switch's colour on the convergence curves
        top.text(0.0, 1.0, "\n" * (len(lines) - 1) + lines[-1], va="top", ha="left", fontsize=11,
                 family="DejaVu Sans", transform=top.transAxes, linespacing=1.5, color="#d62728",
                 fontweight="bold")
    if frame.image is not None and frame.image.ndim == 3 and frame.image.shape[0] <= 40:
        word = np.concatenate(list(frame.image), axis=1)          # (16, 8·T) letters side by side
        im = fig.add_axes([0.70, 0.66, 0.27, 0.12])
        im.imshow(word, cmap="gray_r" if word.max() <= 1 else "gray", interpolation="nearest", aspect="equal")
        im.axis("off")
    ax = fig.add_axes([0.09, 0.10, 0.80, 0.50])
    g, stl = frame.gaps, frame.staleness
    n = len(g)
    b, starts = _bins(n, max_bars)
    known = np.isfinite(g)
    if b == 1:
        x, gb, sb = np.arange(n), np.where(known, g, np.nan), stl
    else:
        gmax = np.maximum.reduceat(np.where(known, g, -np.inf), starts)
        gb = np.where(np.isfinite(gmax), gmax, np.nan)
        ok = np.isfinite(stl)
        cnt = np.add.reduceat(ok.astype(np.float64), starts)
        sb = np.where(cnt > 0, np.add.reduceat(np.where(ok, stl, 0.0), starts) / np.maximum(cnt, 1), np.nan)
        x = starts + (np.minimum(starts + b, n) - 1 - starts) / 2.0
    lo, hi = ylim
    norm = colors.Normalize(0, max(st_max, 1.0))
    cmap = colormaps["viridis_r"]     # the Step tab's palette: dark = stale
    drawn = np.isfinite(gb)
    ax.bar(x[drawn], np.maximum(gb[drawn], lo) - lo, bottom=lo, width=0.9 * b,
           color=cmap(norm(np.nan_to_num(sb[drawn], nan=0.0))), linewidth=0)
    ax.axvline(frame.block, color="#d62728", linestyle="--", linewidth=1.5, alpha=0.8)
    ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    ax.set_xlim(-0.5 * b - 0.5, n - 0.5 + 0.5 * b)
    ax.set_xlabel("block i (training example)" + (f" — bins of {count(b)} blocks (max ĝᵢ)" if b > 1 else ""))
    ax.set_ylabel("block gap estimate ĝᵢ")
    unvisited = int(np.count_nonzero(~known))
    ax.set_title("Per-block gap estimates, colour: staleness (iterations since ĝᵢ was computed); "
                 f"dashed: this step's block{f'; {unvisited} unvisited (ĝ = ∞, no bar)' if unvisited else ''}",
                 fontsize=9, loc="left")
    sm = cm.ScalarMappable(norm=norm, cmap=cmap)
    cax = fig.add_axes([0.91, 0.10, 0.015, 0.50])
    fig.colorbar(sm, cax=cax)


def render_gif(frames, *, title: str = "", fps: float = 4.0, size=(9.6, 6.0), dpi: int = 100,
               max_bars: int = FRAME_BARS) -> bytes:
    """The GIF (bytes) of ``frames`` (from :func:`replay_frames`), ``fps`` frames per second,
    ``size`` inches × ``dpi`` pixels (default 960 × 600), looping. The log axis and the colour
    scale are fixed over all frames, so only what the steps changed moves.

    Raises
    ------
    ValueError
        If ``frames`` is empty or ``fps`` is not in (0, 50].
    """
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    frames = list(frames)
    if not frames:
        raise ValueError("frames must hold at least one step frame, got none")
    if not 0 < fps <= 50:
        raise ValueError(f"fps must be in (0, 50] frames per second, got {fps!r}")
    vals = np.concatenate([f.gaps[np.isfinite(f.gaps) & (f.gaps > 0)] for f in frames])
    if vals.size:
        hi = 10.0 ** math.ceil(math.log10(vals.max()))
        lo = max(10.0 ** math.floor(math.log10(vals.min())), hi * 1e-6)
    else:
        lo, hi = 1e-6, 1.0
    if hi <= lo:
        hi = lo * 10
    st_max = max((float(np.nanmax(f.staleness)) for f in frames if np.isfinite(f.staleness).any()), default=1.0)
    fig = Figure(figsize=size, dpi=dpi)
    canvas = FigureCanvasAgg(fig)
    images = []
    for f in frames:
        _draw(fig, f, title, (lo, hi), st_max, max_bars)
        canvas.draw()
        rgba = np.asarray(canvas.buffer_rgba())
        images.append(Image.fromarray(rgba[:, :, :3].copy()).quantize(colors=128, method=Image.Quantize.FASTOCTREE))
    out = io.BytesIO()
    images[0].save(out, format="GIF", save_all=True, append_images=images[1:], loop=0,
                   duration=int(round(1000 / fps)), disposal=1, optimize=False)
    return out.getvalue()


def _check_steps(steps) -> int:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or not 1 <= steps <= MAX_FRAMES:
        raise ValueError(f"steps must be an int in [1, {MAX_FRAMES}] (block steps), got {steps!r}")
    return int(steps)


def gif_span(snap, steps: int) -> tuple:
    """(first, why): a GIF of the last ``steps`` block steps of the run in ``snap`` (a session's
    Snapshot) shows the steps after iteration ``first``; ``why`` says why that is fewer than
    ``steps`` ("" when it is not). Steps before the last reset or setting switch, or further
    back than the session's history keeps, ran under other settings or are no longer kept, and
    cannot be replayed.

    Raises
    ------
    ValueError
        If ``steps`` is not an int in [1, MAX_FRAMES], or the run has no step to show.
    """
    steps = _check_steps(steps)
    first = max(snap.iteration - steps, snap.history_from)
    if not snap.n or snap.history_from < 0 or snap.iteration <= first:
        raise ValueError("no block step to show yet: take a few steps first")
    if first == snap.iteration - steps:
        return first, ""
    switch = next((m for m in reversed(snap.switches) if m[2] == first), None)
    if switch is not None:
        why = (f"the run switched settings at step {count(first)} ({switch[3]}); the steps before it "
               "ran under the old settings and are not replayed. Take more steps to get all frames")
    elif first == 0:
        why = f"the run has taken only {count(snap.iteration)} steps since α⁰"
    else:
        why = (f"the history starts at step {count(first)} (the last reset, setting switch or the "
               "oldest step kept)")
    return first, why


def last_steps_gif(session, steps: int = 30, fps: float = 4.0, max_bars: int = FRAME_BARS) -> io.BytesIO:
    """A GIF of the last ``steps`` block steps of ``session``'s run (fewer when the run has
    fewer steps since its last reset or setting switch: :func:`gif_span` says why), for a
    download button; blocks in bins of ⌈n / max_bars⌉ as the page draws them. Takes seconds
    (matplotlib draws every frame): call it off a server's event loop.

    Raises
    ------
    ValueError
        If the run has no step to show, or ``steps`` is not an int in [1, MAX_FRAMES].
    """
    snap = session.snapshot
    first, _why = gif_span(snap, steps)
    start = session.solver_at(first)
    frames = replay_frames(start, snap.iteration - first)
    title = f"gaplab · {snap.dataset} (n = {count(snap.n)}) · {snap.label}"
    return io.BytesIO(render_gif(frames, title=title, fps=fps, max_bars=max_bars))


def across_switch_span(session, steps: int) -> tuple:
    """(first, switch, label): a GIF of the last ``steps`` block steps across the run's last
    setting switch with α kept starts after step ``first`` (before the switch at step
    ``switch``, replayed under the settings of before it; ``label`` says what the switch
    changed).

    Raises
    ------
    ValueError
        If ``steps`` is out of range, or the last ``steps`` steps do not reach back past a
        setting switch whose earlier steps the session keeps.
    """
    snap = session.snapshot
    first, _why = gif_span(snap, steps)
    before = session.before_switch()
    if before is None or before[1] != first or snap.iteration - first >= steps:
        raise ValueError("the last steps do not reach back past a setting switch whose earlier steps are kept")
    earliest, at, label = before
    return max(at - (steps - (snap.iteration - at)), earliest), at, label


def across_switch_gif(session, steps: int = 30, fps: float = 4.0, max_bars: int = FRAME_BARS) -> io.BytesIO:
    """A GIF of the last ``steps`` block steps of ``session``'s run across its last setting
    switch with α kept: the steps before the switch are replayed under the settings they ran
    under, and every frame's caption says whether it is before or after the switch (and what
    changed). Fewer frames when the steps before the switch are not kept that far back. Takes
    seconds: call it off a server's event loop.

    Raises
    ------
    ValueError
        As :func:`across_switch_span`.
    """
    snap = session.snapshot
    first, at, label = across_switch_span(session, steps)
    frames = replay_frames(session.solver_before_switch(first), at - first,
                           phase=f"before the setting switch at step {count(at)}")
    frames += replay_frames(session.solver_at(at), snap.iteration - at,
                            phase=f"after the setting switch at step {count(at)}: {label}")
    title = f"gaplab · {snap.dataset} (n = {count(snap.n)}) · {snap.label}"
    return io.BytesIO(render_gif(frames, title=title, fps=fps, max_bars=max_bars))
