"""The app in front of a class, headless: slow motion, Pause vs Stop, lessons as a
sequence, numbers that agree between views, datasets offered, export, projector mode."""
from __future__ import annotations

import csv
import io
import json
import math
import time

import numpy as np
import pytest

pn = pytest.importorskip("panel")

from gaplab.app.export import trace_csv, trace_json  # noqa: E402
from gaplab.app.main import PROJECTOR_BARS  # noqa: E402
from gaplab.app.views import _fmt_gap, step_sentence  # noqa: E402


@pytest.fixture(scope="module")
def app(module_app):
    return module_app


@pytest.fixture
def fresh(app):
    s = app.session
    s.param.update(speed=math.inf, max_passes=100, sampling="gap", step_kind="fw", cache=False)
    s.reset()
    yield app
    s.pause()


def test_speed_paces_the_run_in_steps_per_second(fresh):
    s = fresh.session
    s.param.update(max_passes=1e6, speed=20.0)
    t0 = time.perf_counter()
    s.run()
    time.sleep(1.5)
    s.pause()
    rate = s.snapshot.iteration / (time.perf_counter() - t0)
    assert 16 <= rate <= 24, rate          # within 20% of 20 steps/s
    assert s.status == "paused"


def test_one_pass_per_frame_moves_in_whole_passes(fresh):
    s = fresh.session
    s.param.update(max_passes=1e6, speed="pass")
    s.run()
    time.sleep(0.7)
    s.pause()
    it = s.snapshot.iteration
    assert it >= s.snapshot.n and it % s.snapshot.n == 0   # paused between two frames
    assert s.snapshot.effective_passes <= 0.7 / 0.25 + 2    # about 4 frames per second


def test_pause_keeps_the_run_and_stop_ends_it(fresh):
    s = fresh.session
    s.step_n(50)
    assert s.wait_idle(30) and s.snapshot.iteration == 50
    s.pause()
    s.step()                                 # after Pause (or a finished Step ×N): continues
    assert s.snapshot.iteration == 51
    s.stop()
    assert s.status == "stopped" and s.snapshot.iteration == 51   # the stopped run stays on screen
    s.step()                                 # after Stop: a new run from α⁰
    assert s.snapshot.iteration == 1 and s.snapshot.trace == ()


def test_lesson_setup_restarts_after_the_budget(fresh):
    s = fresh.session
    s.param.update(max_passes=1)
    s.run()
    assert s.wait_idle(60) and s.status == "budget"
    les = fresh.lessons
    les.go(2)                                 # page 3: sampling = uniform
    les.apply_setup()
    assert s.status == "idle" and s.snapshot.iteration == 0 and s.sampling == "uniform"
    s.step()
    les.apply_setup()                         # settings already in place: still a fresh start
    assert s.snapshot.iteration == 0
    s.step()
    assert s.snapshot.iteration == 1         # and the solver answers


def test_anatomy_step_number_agrees_with_the_status_line(fresh):
    app = fresh
    for _ in range(3):
        app.on_step()
    app.refresh(force=True)
    snap = app.session.snapshot
    assert f"iteration <b>{snap.iteration}</b>" in app.status.panel.object
    assert f"#{snap.iteration}" in app.anatomy.table.object            # the step just taken
    assert f"(iteration {snap.iteration - 1} → {snap.iteration})" in app.anatomy.table.object


def test_step_sentence_says_what_happened(fresh):
    app = fresh
    app.on_step()
    st = app.session.snapshot.last_step
    n = app.session.snapshot.n
    assert st.probability == pytest.approx(1.0 / n)   # first draw: every block unvisited
    text = step_sentence(app.session.snapshot, st)
    assert f"block <b>{st.block}</b>" in text and "probability" in text and "gap sampling" in text
    assert "max oracle" in text and "γ =" in text and "was" in text and "at the step and is" in text
    app.refresh(force=True)
    assert "What just happened" in app.anatomy.sentence.object


def test_round_off_gaps_are_shown_as_zero():
    assert _fmt_gap(-1.4e-18).startswith("0 ") and "round-off" in _fmt_gap(-1.4e-18)
    assert _fmt_gap(7.8e-4) == "7.8000e-04"
    assert _fmt_gap(-1e-3) == "-1.0000e-03"     # a real negative number is not hidden


def test_probability_axis_stops_at_one_under_max_gap(fresh):
    s = fresh.session
    s.sampling = "maxgap"
    s.step_n(700)
    assert s.wait_idle(30)
    fresh.refresh(force=True)
    p = np.asarray(s.snapshot.probabilities)
    assert p.sum() == pytest.approx(1.0) and p.max() == 1.0       # the core: one-hot
    assert fresh.blocks.pfig.y_range.end == 1.0                    # the axis: at most 1


def test_trace_exports_carry_config_and_seed(fresh):
    s = fresh.session
    s.param.update(max_passes=2, seed=3)
    s.run()
    assert s.wait_idle(60)
    snap = s.snapshot
    text = trace_csv(snap).read()
    assert "seed=3" in text and "seed 3" in text.splitlines()[0]
    rows = list(csv.DictReader(io.StringIO("\n".join(r for r in text.splitlines() if not r.startswith("#")))))
    passes = [r for r in rows if r["kind"] == "pass"]
    assert len(passes) == 2 and float(passes[-1]["effective_passes"]) == pytest.approx(2.0)
    doc = json.loads(trace_json(snap).read())
    assert doc["config"]["seed"] == 3 and doc["n"] == snap.n and len(doc["trace"]) == len(snap.trace)
    assert "seed 3" in snap.label               # legends carry the seed
    s.seed = 0


def test_projector_mode_bins_bars_and_enlarges_text(fresh):
    app = fresh
    app.on_step()
    app.set_projector(True)
    try:
        assert not app.shown(app.sidebar) and app.shown(app.topbar) \
            and app._bar_copies[app.b_step] in app.topbar.select(pn.widgets.Button)
        n = app.session.snapshot.n
        assert len(app.blocks_p.src.data["x"]) == math.ceil(n / math.ceil(n / PROJECTOR_BARS)) <= PROJECTOR_BARS
        assert app.blocks_p.fig.title.text_font_size == "19px"
        assert "font-size:18.2px" in app.anatomy_p.table.object
    finally:
        app.set_projector(False)
    assert app.shown(app.sidebar) and not app.shown(app.topbar) and app.blocks.fig.title.text_font_size == "14px"


def test_every_setting_tooltip_names_its_lesson(app):
    for name in ("sampling", "step_kind", "gap_check", "lam"):
        assert "Lessons tab, page" in app.widgets[name].description


def test_toy_visit_counts_show_where_the_steps_went():
    from gaplab.app.toy_tab import ToyLab, ToyView
    lab = ToyLab(n=10, K=30, eps=1e-3)
    view = ToyView(lab)
    assert lab.start() and lab.wait(120) and lab.error is None
    view.update(force=True)
    visits = lab.result["visits"]
    for k in ("uniform", "curvature", "gap"):
        assert visits[k].sum() == lab.result[k]["steps"]          # every step counted once
    t = lab.result["prediction"]["hard_steps_needed"]
    assert visits["gap"][0] >= t and visits["gap"][1:].max() <= 2   # gap: the hard block, easy ones ~once
    assert visits["uniform"][1:].mean() > 0.5 * visits["uniform"][0]  # uniform: easy blocks as often
    np.testing.assert_array_equal(visits["uniform"], visits["curvature"])  # equal curvatures: same draws
    assert "Where the steps went" in view.visits_info.object
    assert "Why " in view.explain.object and "curvature" in view.sampler_info.object
