"""Axes that teach: log gap axes label at least three ticks; the Convergence
and Cache figures keep their legends off the data, start at pass 0, mark runs at other λ and
say why a uniform run's heuristic gap starts late."""
from __future__ import annotations

import json
import math
import shutil
import subprocess

import numpy as np
import pytest

pytest.importorskip("panel")

from gaplab.app import views  # noqa: E402

NODE = shutil.which("node") or shutil.which("nodejs")


def _major_ticks(start, end):
    """The app's log ticker's major ticks for a range, run by Node (the same JS BokehJS runs)."""
    src = f"const f = (cb_data) => {{ {views._LOG_MAJOR_JS} }};\n" \
          f"process.stdout.write(JSON.stringify(f({{start: {start!r}, end: {end!r}}})));"
    out = subprocess.run([NODE, "-e", src], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed (runs the ticker's JS)")
@pytest.mark.parametrize("lo,hi", [(1e-3, 1e-2), (1e-6, 1.0), (1e-12, 1.0), (1e-4, 1e-2), (2e-3, 5e-3),
                                   (3e-4, 4e-4), (1e-5, 3e-5), (0.5, 1e4), (1.0, 10.0)])
def test_log_axes_label_at_least_three_ticks_inside_the_range(lo, hi):
    ticks = _major_ticks(lo, hi)
    assert len(ticks) >= 3, ticks
    assert all(lo * (1 - 1e-6) <= t <= hi * (1 + 1e-6) for t in ticks), ticks
    assert ticks == sorted(ticks) and len(set(ticks)) == len(ticks)
    assert len(ticks) <= 13


@pytest.fixture(scope="module")
def pairwise():
    from gaplab.app.session import Session
    s = Session(step_kind="pairwise", cache=True)
    assert s.wait_idle(120), s.messages()
    yield s
    s.close()


def test_active_set_plot_starts_at_pass_0(pairwise):
    s = pairwise
    s.reset()
    h0 = s.snapshot.active_history
    assert h0 and h0[0][0] == 0.0 and h0[0][1] == 1.0        # α⁰: one atom per block
    s.step_n(2 * s.snapshot.n)
    assert s.wait_idle(300)
    view = views.CacheView()
    view.update(s.snapshot)
    x = view.asrc.data["x"]
    assert x[0] == 0.0 and x[-1] >= 1.0
    assert view.afig.x_range.start == 0.0 and view.afig.x_range.end >= x[-1]
    assert view.fig.x_range.start == 0.0


@pytest.fixture(scope="module")
def app(module_app):
    return module_app


def _figures(app, tabs):
    import panel as pn
    from bokeh.models import Plot
    for t in tabs:
        app._ensure_tab(t)
    return [p.object for t in tabs for p in app._boxes[t].select(pn.pane.Bokeh) if isinstance(p.object, Plot)]


def test_legends_never_cover_the_data(app):
    from bokeh.models import Legend
    app.blocks
    figs = _figures(app, range(len(app.TAB_NAMES)))
    inside = [f.title.text for f in figs if any(isinstance(r, Legend) for r in f.center)]
    assert inside == []


def test_gap_plot_marks_runs_at_other_lam_and_says_why_uniform_starts_late():
    from gaplab.app.session import Session
    s = Session(sampling="uniform", max_passes=2, lam=0.01)
    try:
        assert s.wait_idle(300), s.messages()
        s.run()
        assert s.wait_idle(300)
        view = views.GapView("passes")
        view.update(s.snapshot)
        heur = view.slots.slots[0]["heur"].data["y"]
        assert not np.isfinite(heur[0])             # uniform: some block unvisited after pass 1
        note = view.late_note.text
        assert "every block is visited" in note and "ĝᵢ = ∞" in note and "n = 626" in note
        assert view.lam_note.text == ""             # one λ
        s.add_to_comparison()
        s.param.update(lam=0.001, sampling="gap")
        s.reset()
        s.run()
        assert s.wait_idle(300)
        view.update(s.snapshot)
        labels = [it.label.value for it in view.slots.legend.items if it.visible]
        assert any("λ=0.01" in t for t in labels) and any("λ=0.001" in t for t in labels), labels
        assert "different λ (0.001, 0.01" in view.lam_note.text
        assert "every block is visited" in view.late_note.text     # the uniform run is still drawn
    finally:
        s.close()


def test_gap_plot_normalised_on_request_draws_gap_over_primal():
    """Runs at different λ on one gap axis: ticking "normalised (gap / primal)" draws every exact
    gap check at g/P(w) and the heuristic line at ĝ/(D + ĝ); the axis label says so; off again,
    the plain gaps come back."""
    from gaplab.app.session import Session
    s = Session(dataset="toy", sampling="gap", max_passes=6, gap_check=1, lam=0.1)
    try:
        assert s.wait_idle(300), s.messages()
        s.run()
        assert s.wait_idle(300)
        s.add_to_comparison()
        s.param.update(lam=0.001)
        s.reset()
        s.run()
        assert s.wait_idle(300)
        snap = s.snapshot
        view = views.GapView("passes")
        assert view.fig.yaxis[0].axis_label == "duality gap"
        view.update(snap)
        plain = [dict(view.slots.slots[k]["exact"].data) for k in (0, 1)]
        view.set_normalised(True)
        view.update(snap)
        assert "/ primal" in view.fig.yaxis[0].axis_label
        for k, trace in ((0, snap.trace), (1, snap.comparison[-1].trace)):
            checks = [r for r in trace if r["kind"] == "gap_check"]
            assert len(checks) >= 3
            want = np.array([r["exact_gap"] / r["primal"] for r in checks])
            got = np.asarray(view.slots.slots[k]["exact"].data["y"])
            ok = want > views.GAP_FLOOR
            np.testing.assert_allclose(got[ok], want[ok], rtol=1e-12)
            assert np.all(got <= 1.0)          # 0 <= g <= P when the primal is positive
            passes = [r for r in trace if r["kind"] == "pass"]
            hw = np.array([r["heuristic_gap"] / (r["dual"] + r["heuristic_gap"]) for r in passes])
            hg = np.asarray(view.slots.slots[k]["heur"].data["y"])
            fin = np.isfinite(hw) & (hw > views.GAP_FLOOR)
            assert fin.any()
            np.testing.assert_allclose(hg[fin], hw[fin], rtol=1e-12)
        # the runs at λ = 0.1 and 0.001 differ in level by far more in the plain gaps
        ny = view.fig.y_range
        assert ny.end <= 1.0
        view.set_normalised(False)
        view.update(snap)
        assert view.fig.yaxis[0].axis_label == "duality gap"
        for k in (0, 1):
            np.testing.assert_array_equal(view.slots.slots[k]["exact"].data["y"], plain[k]["y"])
    finally:
        s.close()


def test_convergence_tab_normalise_checkbox_switches_both_gap_plots():
    from gaplab.app.main import CONVERGENCE, build_app
    app = build_app(periodic=False)
    try:
        assert app.session.wait_idle(300)
        app.tabs.active = CONVERGENCE
        assert app.w_normalise.value is False and app.w_normalise in list(app.tabs[CONVERGENCE].select())
        assert not app.gap_passes.normalised and app.gap_passes.fig.yaxis[0].axis_label == "duality gap"
        app.w_normalise.value = True
        assert app.gap_passes.normalised and app.gap_time.normalised
        assert "/ primal" in app.gap_time.fig.yaxis[0].axis_label
        app.w_normalise.value = False
        assert not app.gap_time.normalised and app.gap_time.fig.yaxis[0].axis_label == "duality gap"
    finally:
        app.close()
