"""The app object without a browser: every tab draws from snapshots, buttons act on the session,
notifications are visible, the toy tab reports a speed-up, lessons render and set up."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

pn = pytest.importorskip("panel")

from gaplab.app.lessons import LESSONS  # noqa: E402
from gaplab.app.main import LESSONS as LESSONS_TAB  # noqa: E402
from gaplab.app.main import TOY, GapLabApp, build_app  # noqa: E402
from gaplab.app.views import BlockGapsView, trace_columns  # noqa: E402


def _finite(col):
    return int(np.sum(np.isfinite(np.asarray(col, dtype=np.float64))))


def test_build_app_is_a_panel_viewable_with_widgets_from_params(app):
    assert isinstance(app, GapLabApp) and isinstance(app.__panel__(), pn.layout.Panel)
    s = app.session
    # widgets are generated from the session's parameters and stay linked both ways
    app.widgets["sampling"].value = "uniform"
    assert s.sampling == "uniform" and s.solver.config.sampling.name == "UNIFORM"
    s.lam = 0.05
    assert app.widgets["lam"].value == 0.05
    assert not app.widgets["gap_power"].visible  # p only matters for gap sampling
    s.sampling = "gap"
    assert app.widgets["gap_power"].visible
    assert not app.widgets["cache_factor"].visible
    app.widgets["cache"].value = True
    assert app.widgets["cache_factor"].visible and s.solver.config.cache.enabled


def test_step_button_updates_anatomy_and_block_gaps(app):
    app.on_step()
    st = app.session.snapshot.last_step
    assert f"<span class='gaplab-block'>{st.block}</span>" in app.anatomy.word.object
    assert "data:image/png;base64," in app.anatomy.word.object  # the OCR word image
    assert f"{st.block} of 626" in app.anatomy.table.object
    assert _finite(app.blocks.src.data["top"]) == 1 and app.blocks.span.location == st.block
    assert "iteration <b>1</b>" in app.status.panel.object
    app.on_step()
    assert _finite(app.blocks.src.data["top"]) == 2


def test_run_then_every_tab_draws(app):
    app.session.max_passes = 25
    app.on_run()
    assert app.session.wait_idle(60)
    app.on_compare()
    app.session.sampling = "uniform"
    app.on_run()
    assert app.session.wait_idle(60)
    for tab in range(len(app.TAB_NAMES)):
        app.tabs.active = tab
        app.refresh(force=True)
    snap = app.session.snapshot
    # convergence: current run (slot 0) and the comparison run (slot 1), exact points and lines
    heur = app.gap_passes.slots.slots[0]["heur"].data
    exact = app.gap_passes.slots.slots[0]["exact"].data
    cols = trace_columns(snap.trace)
    assert len(heur["x"]) == len(cols["pass"]["x"]) > 20 and len(exact["x"]) == 2
    assert np.all(np.asarray(exact["y"]) > 0)  # log axis: positive
    assert len(app.gap_passes.slots.slots[1]["heur"].data["x"]) > 20
    assert app.gap_passes.slots.items[1].visible and app.gap_passes.slots.items[1].label["value"].startswith("#1 gap")
    assert len(app.gap_passes.slots.items) == 2  # comparison slots are made on demand
    assert len(app.primal_dual.primal.data["x"]) == 2 and len(app.test_error.slots.slots[0]["pts"].data["y"]) == 2
    # test error in percent, as in the status line (the same number in both places)
    te = np.asarray(app.test_error.slots.slots[0]["pts"].data["y"])
    assert np.all((te > 0.5) & (te < 50))
    assert f"{te[-1]:.2f}%" in app.status.panel.object
    assert "budget" in app.alert.object


def test_cache_tab_shows_hits_and_active_sets(app):
    s = app.session
    s.param.update(cache=True, step_kind="pairwise", gap_check=1, max_passes=6)
    s.run()
    assert s.wait_idle(60)
    app.tabs.active = 2
    app.refresh(force=True)
    rate = np.asarray(app.cache.slots.slots[0]["rate"].data["y"], dtype=float)
    assert np.nanmax(rate) > 0
    assert len(app.cache.asrc.data["x"]) > 0 and max(app.cache.asrc.data["max"]) >= 1
    assert len(app.cache.tsrc.data["x"]) == 200
    assert "cache hits" in app.cache.info.object


def test_notifications_are_visible(app):
    app.on_compare()  # nothing to compare yet
    assert app.alert.visible and app.alert.alert_type == "warning" and "Nothing to compare" in app.alert.object


def test_exact_gaps_button_overlays_block_gaps(app):
    app.session.step_n(1000)
    assert app.session.wait_idle(60)
    app.on_exact()
    ex = np.asarray(app.blocks.exact.data["y"], dtype=float)
    # one exact mark per bar: per block, or per bin of blocks (its largest exact gᵢ)
    assert _finite(ex) == len(app.blocks.src.data["x"]) == math.ceil(626 / math.ceil(626 / BlockGapsView.MAX_BARS))
    assert "exact gap" in app.blocks.info.object


def test_toy_tab_reports_a_speedup(app):
    app.toy.param.update(n=10, K=30, eps=1e-3)
    app.tabs.active = TOY
    app.toy_view._run()
    assert app.toy.wait(60)
    app.refresh(force=True)
    summary = app.toy.summary()
    assert summary["speedup"] > 1 and summary["min_n_K"] == 10
    m = re.search(r"speed-up <b[^>]*>([\d.]+)×", app.toy_view.headline.object)
    assert m and float(m.group(1)) > 1
    assert list(app.toy_view.bsrc.data["name"]) == ["uniform", "curvature", "gap"]
    # "Step this problem in the solver" loads the toy problem into the session
    app.toy_view._load_into_session()
    assert app.session.dataset == "toy" and app.session.snapshot.n == 10


def test_every_lesson_page_renders_and_sets_up(app):
    app.tabs.active = LESSONS_TAB
    for page, lesson in enumerate(LESSONS):
        app.lessons.go(page)
        app.refresh(force=True)
        assert lesson.title in app.lessons.title.object
        assert len(app.lessons.live.objects) >= 1
    app.lessons.go(4)  # pairwise and away steps
    app.lessons.apply_setup()
    assert app.session.step_kind == "pairwise"
    app.on_step()
    from gaplab.app.views import AnatomyView
    anatomy = [v for v in app.lessons.views() if isinstance(v, AnatomyView)]
    assert len(anatomy) == 1 and "away corner" in anatomy[0].word.object
    assert LESSONS[-1].views == ("path",) and "regularization path" in LESSONS[-1].title


def test_close_is_idempotent_and_stops_everything(app):
    app.session.max_passes = 1e6
    app.on_run()
    app.close()
    app.close()
    assert not app.session.running and app.session.solver is None
    app.refresh()  # no error after close


def test_two_apps_are_independent():
    a, b = build_app(periodic=False), build_app(periodic=False)
    try:
        assert a.session.wait_idle(60) and b.session.wait_idle(60)
        a.on_step()
        a.on_step()
        b.refresh(force=True)
        assert a.session.snapshot.iteration == 2 and b.session.snapshot.iteration == 0
        assert a.blocks.src is not b.blocks.src and _finite(b.blocks.src.data["top"]) == 0
    finally:
        a.close()
        b.close()


def test_log_axes_have_a_positive_floor():
    cols = trace_columns([{"kind": "gap_check", "effective_passes": 1.0, "wall_time_s": 0.1, "oracle_calls": 5,
                           "iteration": 5, "exact_gap": -1e-17, "primal": 1.0, "dual": 1.0, "test_error": math.nan},
                          {"kind": "pass", "effective_passes": 1.0, "wall_time_s": 0.1, "oracle_calls": 5,
                           "iteration": 5, "heuristic_gap": math.inf, "dual": 1.0, "cache_hit": 0}])
    assert cols["check"]["gap"][0] > 0 and np.isnan(cols["pass"]["heur"][0])
