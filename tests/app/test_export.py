"""Exports for slides, headless: the trace CSV/JSON files and the GIF of the
last steps of the Step tab. The browser side (PNG pixel ratio, SVG) is in
tests/browser/test_export_buttons.py."""
from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

from gaplab.app.export import trace_csv, trace_json
from gaplab.core import jsonsafe


def _snap(trace, manual=()):
    return SimpleNamespace(label="gap sampling · seed 0", dataset="toy", n=4, lam=0.01,
                           config={"seed": 0, "sampling": "gap"}, iteration=8, effective_passes=2.0,
                           oracle_calls=8, heuristic_gap=math.inf, exact_gap=math.nan,
                           trace=tuple(trace), manual_checks=tuple(manual), comparison=())


TRACE = [
    # first pass: an unvisited block leaves the heuristic gap at +inf; no gap check yet
    dict(kind="pass", iteration=4, effective_passes=1.0, oracle_calls=4, wall_time_s=0.01,
         heuristic_gap=math.inf, exact_gap=math.nan, primal=math.nan, dual=0.125, cache_hits=0,
         test_error=math.nan),
    dict(kind="gap_check", iteration=4, effective_passes=1.0, oracle_calls=8, wall_time_s=0.02,
         heuristic_gap=0.5, exact_gap=0.25, primal=0.375, dual=0.125, cache_hits=0,
         test_error=np.float64("nan")),
    dict(kind="pass", iteration=8, effective_passes=2.0, oracle_calls=12, wall_time_s=0.03,
         heuristic_gap=0.1 + 0.2, dual=0.2, cache_hits=1),      # no exact gap, primal, test error
]


def _rows(text):
    return list(csv.DictReader(io.StringIO("\n".join(r for r in text.splitlines() if not r.startswith("#")))))


def test_trace_csv_writes_empty_cells_for_missing_values():
    text = trace_csv(_snap(TRACE)).read()
    assert "nan" not in text.lower()
    rows = _rows(text)
    assert [r["kind"] for r in rows] == ["pass", "gap_check", "pass"]
    assert rows[0]["exact_gap"] == rows[0]["test_error"] == rows[0]["primal"] == ""
    assert rows[1]["test_error"] == "" and rows[2]["exact_gap"] == "" and rows[2]["test_error"] == ""
    # +inf (a value: an unvisited block) is kept; finite numbers round-trip exactly
    assert float(rows[0]["heuristic_gap"]) == math.inf
    assert float(rows[2]["heuristic_gap"]) == 0.1 + 0.2
    assert float(rows[1]["exact_gap"]) == 0.25


def test_trace_csv_round_trip_reads_missing_values_as_nan():
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(trace_csv(_snap(TRACE)), comment="#")
    assert df["test_error"].isna().all()
    assert df["exact_gap"].isna().tolist() == [True, False, True]
    assert df["heuristic_gap"].tolist()[0] == math.inf and df["heuristic_gap"].tolist()[2] == 0.1 + 0.2
    assert df["kind"].tolist() == ["pass", "gap_check", "pass"]


def test_trace_json_follows_the_jsonsafe_convention():
    text = trace_json(_snap(TRACE)).read()

    def no_constant(name):
        raise AssertionError(f"non-standard JSON token {name}")

    doc = json.loads(text, parse_constant=no_constant)           # strict JSON: no NaN/Infinity
    assert doc["heuristic_gap"] == "inf" and doc["exact_gap"] == "nan"
    assert doc["trace"][0]["test_error"] == "nan"                # not null: nothing is folded
    back = jsonsafe.decode(doc)
    assert back["heuristic_gap"] == math.inf and math.isnan(back["trace"][1]["test_error"])
    assert back["trace"][2]["heuristic_gap"] == 0.1 + 0.2


# ----------------------------------------------------------------------------- GIF of the last steps
@pytest.fixture(scope="module")
def stepped():
    from gaplab.app.session import Session
    s = Session()            # the default problem (OCR-small)
    assert s.wait_idle(120), s.messages()
    for _ in range(12):
        s.step()
    yield s
    s.close()


def test_gif_has_one_distinct_frame_per_step_of_the_session(stepped):
    from PIL import Image, ImageSequence

    from gaplab.app.animate import last_steps_gif, replay_frames

    s = stepped
    before = s.snapshot
    state = (s.solver.iteration, np.array(s.solver.gap_estimates), np.array(s.solver.w))
    data = last_steps_gif(s, steps=8).getvalue()
    im = Image.open(io.BytesIO(data))
    assert im.format == "GIF" and im.n_frames == 8
    frames = [np.asarray(f.convert("RGB"), dtype=np.int16) for f in ImageSequence.Iterator(im)]
    assert frames[0].shape[:2] == (600, 960)
    for a, b in zip(frames, frames[1:]):
        assert np.abs(a - b).sum() > 0          # every step changes what is drawn
    # the frames replay the steps the session took (deterministic), without changing the session
    replayed = replay_frames(s.solver_at(4), 8)
    assert [f.block for f in replayed] == [r.block for r in s.solver.last_steps(8)]
    assert [f.iteration for f in replayed] == list(range(5, 13))
    assert np.array_equal(replayed[-1].gaps, s.solver.gap_estimates)
    assert s.snapshot.version == before.version and s.solver.iteration == state[0]
    assert np.array_equal(s.solver.gap_estimates, state[1]) and np.array_equal(s.solver.w, state[2])


def test_gif_asks_for_steps_in_range_and_stops_at_the_run_start(stepped):
    from gaplab.app.animate import last_steps_gif
    from PIL import Image

    for bad in (0, -3, 201, 2.5, True):
        with pytest.raises(ValueError, match="steps must be an int"):
            last_steps_gif(stepped, steps=bad)
    im = Image.open(last_steps_gif(stepped, steps=50))      # only 12 steps since the reset
    assert im.n_frames == 12


def test_app_gif_button_downloads_the_last_steps():
    pytest.importorskip("panel")
    import asyncio

    from PIL import Image

    from gaplab.app.main import build_app

    app = build_app(periodic=False)     # headless: no periodic callback, no background compile
    try:
        assert app.session.wait_idle(120)
        for _ in range(5):
            app.session.step()
        app.gif_steps.value = 3
        im = Image.open(asyncio.run(app.d_gif.callback()))   # made in a worker thread
        assert im.format == "GIF" and im.n_frames == 3
        assert "gaplab-export-gif" in app.d_gif.css_classes
        # a value the browser sends is bounded on the server: no GIF, a warning naming the range
        seen = len(app.session.messages())
        for bad in (10**9, 0, None):
            app.gif_steps.value = bad
            assert asyncio.run(app.d_gif.callback()).getvalue() == b""
        warnings = app.session.messages(seen)
        assert len(warnings) == 3 and all(lv == "warning" and "steps must be an int in [1, 200]" in t
                                          for lv, t in warnings), warnings
        # fewer frames than asked: the page says why (a setting switch with α kept)
        app.session.sampling = "uniform"
        for _ in range(4):
            app.session.step()
        app.gif_steps.value = 20
        seen = len(app.session.messages())
        im = Image.open(asyncio.run(app.d_gif.callback()))
        assert im.n_frames == 4
        notes = [t for _lv, t in app.session.messages(seen)]
        assert any("4 frames, not 20" in t and "switched settings at step 5" in t for t in notes), notes
        # ... and offers the GIF across the switch: the 5 steps before it and the 4 after
        assert app.d_gif_across.visible and any("Make the GIF across the switch" in t for t in notes), notes
        im = Image.open(asyncio.run(app.d_gif_across.callback()))
        assert im.format == "GIF" and im.n_frames == 9
        app.session.reset()          # a new run: no switch to cross, the button says so and hides
        app.session.step()
        seen = len(app.session.messages())
        assert asyncio.run(app.d_gif_across.callback()).getvalue() == b""
        assert not app.d_gif_across.visible
        assert any("GIF across the switch" in t for _lv, t in app.session.messages(seen))
    finally:
        app.close()


def test_gif_across_a_switch_replays_the_steps_taken_before_and_after_it():
    """Gap sampling for 6 steps, a switch to uniform sampling with α kept, 4 more steps: the GIF
    of the last 8 steps across the switch replays steps 3-6 under gap sampling and 7-10 under
    uniform sampling, the very blocks the session drew, each frame's caption saying which side
    of the switch it is on; the session is not changed."""
    from gaplab.app.animate import across_switch_span, frame_lines, gif_span, replay_frames
    from gaplab.app.session import Session
    s = Session(sampling="gap", max_passes=1e6)
    try:
        assert s.wait_idle(120), s.messages()
        blocks = []
        for _ in range(6):
            blocks.append(s.step().last_step.block)
        with pytest.raises(ValueError, match="setting switch"):
            across_switch_span(s, 8)                 # no switch yet
        s.sampling = "uniform"
        assert s.keep_alpha and len(s.snapshot.switches) == 1
        for _ in range(4):
            blocks.append(s.step().last_step.block)
        assert gif_span(s.snapshot, 8)[0] == 6       # the plain GIF stops at the switch
        first, at, label = across_switch_span(s, 8)
        assert (first, at) == (2, 6) and "uniform" in label
        state = (s.snapshot.version, np.array(s.solver.w))
        before = replay_frames(s.solver_before_switch(first), at - first, phase="before")
        after = replay_frames(s.solver_at(at), 4, phase="after")
        assert [f.iteration for f in before + after] == list(range(3, 11))
        assert [f.block for f in before + after] == blocks[2:]
        assert s.solver_before_switch(0).config.sampling.name == "GAP" and s.solver.config.sampling.name == "UNIFORM"
        assert frame_lines(before[0], "t")[-1] == "before" and frame_lines(after[0], "t")[-1] == "after"
        assert s.snapshot.version == state[0] and np.array_equal(s.solver.w, state[1])
        with pytest.raises(ValueError, match="iteration must be an int in"):
            s.solver_before_switch(7)               # after the switch
        s.reset()
        assert s.before_switch() is None
    finally:
        s.close()


def test_gif_bins_blocks_as_the_page_does(stepped):
    """OCR-small's 626 blocks: the Step tab draws bins of 5 (⌈626/140⌉), and so does the GIF."""
    import math

    from gaplab.app import animate
    from gaplab.app.views import BlockGapsView

    assert animate.FRAME_BARS == BlockGapsView.MAX_BARS
    n = stepped.snapshot.n
    page = math.ceil(n / BlockGapsView.MAX_BARS)
    assert animate._bins(n, animate.FRAME_BARS)[0] == page == 5
    frames = animate.replay_frames(stepped.solver_at(10), 1)
    from matplotlib.figure import Figure
    fig = Figure()
    animate._draw(fig, frames[0], "t", (1e-6, 1.0), 1.0, animate.FRAME_BARS)
    assert any("bins of 5 blocks" in ax.get_xlabel() for ax in fig.axes)


def test_every_figure_of_every_tab_has_png_and_svg_buttons():
    pn = pytest.importorskip("panel")
    from bokeh.models import Plot
    from panel.links import Callback

    from gaplab.app.main import build_app

    app = build_app(periodic=False)
    try:
        assert app.session.wait_idle(120)
        app.blocks   # the Step tab's per-block plots
        for tab in range(1, len(app.TAB_NAMES)):
            app._ensure_tab(tab)
        figures = {id(p.object): p.object for p in app._layout.select(pn.pane.Bokeh)
                   if isinstance(p.object, Plot)}
        exported, targets = {kind: set() for kind in ("png", "svg")}, set()
        for b in app._layout.select(pn.widgets.Button):
            for kind in exported:
                if f"gaplab-export-{kind}" in b.css_classes:
                    for cb in Callback.registry.get(b, []):
                        if cb.args.get("fig") is not None:
                            exported[kind].add(id(cb.args["fig"]))
                        elif cb.args.get("target"):
                            targets.add(cb.args["target"])
        titles = lambda ids: sorted(figures[i].title.text if figures[i].title else "?" for i in ids)  # noqa: E731
        assert len(figures) >= 15
        for kind in exported:
            assert not set(figures) - exported[kind], titles(set(figures) - exported[kind])
        # the Sweeps tab's HoloViews figure is exported as a whole, found by its pane's CSS class
        holo = [p for p in app._layout.select(pn.pane.HoloViews)]
        assert holo and all(set(p.css_classes) & targets for p in holo)
    finally:
        app.close()


# ------------------------------------------------------------------ file names and switch marks
_TITLES = ["Per-block gap estimates ĝᵢ, coloured by staleness (ocr-small, n = 626)",
           "Per-block gap estimates ĝᵢ, coloured by staleness (conll2000, n = 8,936) — 100 bins of 90 blocks",
           "Duality gap vs effective passes · λ = 0.001 · gap sampling (P ∝ ĝᵢ) with a cache, F = 0.25, ν = 0.01",
           "", "ĝᵢ", "x" * 100]


def test_png_file_name_never_cuts_a_number():
    """The old rule (``slice(0, 60)``) named the OCR-small bars figure ``..._ocr_small_n_62``
    when n = 626: a file name keeps whole tokens, and "n = 626" stays ``n_626``."""
    from gaplab.app.export import FILE_STEM_MAX, file_stem
    stem = file_stem(_TITLES[0])
    assert stem.endswith("_ocr_small_n_626")
    assert file_stem(_TITLES[1]).split("_")[8:10] == ["n", "8936"]        # no thousands comma split
    for title in _TITLES:
        stem = file_stem(title)
        assert len(stem) <= FILE_STEM_MAX or "_" not in stem
        words = re.sub(r"([0-9]),(?=[0-9])", r"\1", title)
        # every token of the stem is a whole word or number of the title
        for tok in stem.split("_"):
            assert tok == "gaplab" or tok == "figure" or re.search(rf"(?<![A-Za-z0-9.]){re.escape(tok)}(?![A-Za-z0-9])",
                                                                   words), (tok, title)


@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
def test_png_file_name_rule_is_the_same_in_the_browser():
    """The export button names the file in the browser (the title can change at run time):
    the JS rule gives the same stem as :func:`file_stem` on every title."""
    from gaplab.app.export import FILE_STEM_JS, file_stem
    js = f"const f = {FILE_STEM_JS};\nconsole.log(JSON.stringify({json.dumps(_TITLES)}.map(f)));"
    out = subprocess.run(["node", "-e", js], capture_output=True, text=True, timeout=60, check=True).stdout
    assert json.loads(out) == [file_stem(t) for t in _TITLES]


def test_csv_header_lists_the_settings_switched_with_alpha_kept():
    """Start uniform, switch to gap sampling with α kept: the header says when (iteration and
    pass) and from what to what, as the convergence curves' switch mark does."""
    from gaplab.app.session import Session
    s = Session(dataset="toy", sampling="uniform", max_passes=1e6)
    try:
        assert s.wait_idle(120) and s.status == "idle", s.messages()
        n = s.snapshot.n
        s.step_n(3 * n)
        assert s.wait_idle(60)
        it, passes = s.snapshot.iteration, s.snapshot.effective_passes
        s.sampling = "gap"
        snap = s.snapshot
        assert len(snap.switches) == 1
        head = [ln for ln in trace_csv(snap).getvalue().splitlines() if ln.startswith("#")]
        assert any("sampling=gap" in ln for ln in head)
        sw = [ln for ln in head if "switch" in ln]
        assert sw == [f"# switch at iteration {it:,} ({passes:.2f} passes): uniform sampling -> gap sampling"]
    finally:
        s.close()


def test_gif_caption_writes_counts_and_round_off_as_the_step_sentence_does():
    """The GIF's caption was "block 5150 · γ = 1 … ĝ before 7.09e-19 → exact after 1.42e-18":
    counts with separators and the one round-off rule (gaplab.app.wording)."""
    from gaplab.app.animate import StepFrame, frame_lines
    tol = 1e-12 * 0.5 / 8936          # ROUND_OFF × the objective scale / n
    fr = StepFrame(iteration=12345, block=5150, kind="fw", cache_hit=False, gamma=1.0, gamma_max=1.0,
                   gap_prev=7.094e-19, gap_after=1.4188e-18, truth="", corner="", note="",
                   gaps=np.zeros(3), staleness=np.zeros(3), gap_tol=tol)
    lines = frame_lines(fr, "gaplab")
    assert "step #12,345: block 5,150" in lines[1]
    assert lines[2] == "block gap: ĝ before 0 (round-off) → exact after 0 (round-off)"
    real = StepFrame(**{**fr.__dict__, "gap_prev": 3.2e-4, "gap_after": math.inf})
    assert frame_lines(real, "gaplab")[2] == "block gap: ĝ before 0.00032 → exact after +∞"
