"""What the page says while the solver kernels compile at start-up: the banner above the status
line and the status line's first words, both made from one :class:`gaplab.app.kernels.KernelState`.

The page redraws them whenever :func:`progress_key` changes: the compile's phase, its fraction
(in whole percent), what numba is compiling now, and the elapsed seconds, so that a class
watching a cold start sees the clock and the fraction move while numba works. No Panel import.
"""
from __future__ import annotations

from .kernels import COMPILE_NOTE, KernelState
from .refstep import REFERENCE_NOTE
from .safe_html import esc

__all__ = ["progress_key", "banner_html", "status_words"]


def progress_key(ks: KernelState) -> tuple:
    """What the banner and the status line show of ``ks``: when it changes, they are redrawn.
    The elapsed seconds (to a tenth, so that a page whose server is slowed by a busy machine
    still shows it is alive) count only while the buttons wait for the compile."""
    seconds = None if ks.ready else round(ks.elapsed_s, 1)
    return ks.status, int(round(100 * ks.fraction)), ks.message, seconds


def status_words(ks: KernelState) -> str:
    """The status line's first words while a Step waits for the compile (plain text)."""
    return f"compiling kernels {int(round(100 * ks.fraction))}% · {ks.elapsed_s:.0f} s"


def banner_html(ks: KernelState, reference: bool = False, projector: bool = False) -> str:
    """The banner's HTML for ``ks`` ("" when there is nothing to say: kernels ready, or no
    background compile). Every text from the compile (function names, errors) is escaped.
    ``reference``: the Steps are being answered by the reference solver meanwhile
    (:data:`gaplab.app.refstep.REFERENCE_NOTE`). ``projector``: projector mode's wording, one
    line at 18 px in 1280 px (the whole note is the line's tooltip: one hover away)."""
    if ks.status == "background":
        full = (f"Solver ready. Still compiling in the background: {ks.message} ({100 * ks.fraction:.0f}%) "
                "— the first exact gap check, or the first step with another step kind, the cache or "
                "the path may wait for it.")
        if projector:
            return (f"<div class='gaplab-compile-short' title='{esc(full)}' style='color:#8a5a00;"
                    f"white-space:nowrap'>Solver ready · still compiling more kernels in the background "
                    f"({100 * ks.fraction:.0f}%) <span style='color:#888'>ⓘ</span></div>")
        return f"<div style='color:#8a5a00;font-size:12.5px'>{esc(full)}</div>"
    if projector and not ks.ready:
        pct = int(round(100 * ks.fraction))
        more = (f"{ks.message}. " + (REFERENCE_NOTE + ". " if reference else "") +
                "Run, Step ×N and the other solver buttons wake up when the kernels of a Step are compiled.")
        return (f"<div class='gaplab-startup' title='{esc(more)}' style='background:#fff4d6;border:1px solid "
                f"#f0c36d;border-radius:4px;padding:2px 10px;white-space:nowrap'><b>{esc(COMPILE_NOTE)}</b> — "
                f"<span class='gaplab-startup-fraction'>{pct}%</span> · "
                f"<span class='gaplab-startup-seconds'>{ks.elapsed_s:.1f} s</span>"
                + (" · <span class='gaplab-reference-note'>the reference solver answers Step</span>" if reference
                   else "") + " <span style='color:#888'>ⓘ</span></div>")
    if ks.ready:
        return ""
    pct = int(round(100 * ks.fraction))
    return (
        "<div class='gaplab-startup' style='background:#fff4d6;border:1px solid #f0c36d;"
        "border-radius:4px;padding:6px 10px;font-size:14px'><b>" + esc(COMPILE_NOTE) + "</b> — "
        f"<span class='gaplab-startup-fraction'>{pct}%</span> · "
        f"<span class='gaplab-startup-seconds'>{ks.elapsed_s:.1f} s</span> · "
        f"<span class='gaplab-startup-what' style='color:#666'>{esc(ks.message)}</span><br>"
        + (f"<span class='gaplab-reference-note' style='font-size:14px'><b>{esc(REFERENCE_NOTE)}</b> "
           "(the same blocks and steps as the fast solver; it takes over when ready).</span><br>"
           if reference else "") +
        "<span style='font-size:12.5px'>Run, Step ×N and the other solver buttons wake up when the "
        "kernels of a Step are compiled (Step too, unless the reference solver can answer it); the "
        "settings and the Lessons can be read meanwhile.</span><div style='background:#eee;height:6px;"
        "margin-top:4px'><div style='background:"
        f"#f0a020;height:6px;width:{pct}%'></div></div></div>")
