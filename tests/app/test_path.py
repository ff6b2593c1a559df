"""The regularization-path tab at the session level (no browser): breakpoints arrive while the
path is computed, Stop is prompt, picking a λ loads exactly the path's w(λ) into the session's
solver (from a checkpoint or by replaying breakpoints), memory stays bounded, and the tab's
views draw the path (Paper: Sec. 4, Proposition 1, App. K)."""
from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

from gaplab.app import pathlab_worker
from gaplab.app.session import Session

SHORT = dict(eps=0.5, lam_min=0.1)   # ~15 breakpoints on OCR-small, about a second


def _short_path(s: Session, **kw):
    lab = s.path
    lab.param.update(**{**SHORT, **kw})
    assert lab.start()
    assert lab.wait(120)
    snap = lab.snapshot
    assert snap.status == "done", (snap.message, s.messages())
    return lab, snap


def test_breakpoints_arrive_live_and_stop_ends_the_path(sess):
    lab = sess.path
    lab.lam_min = 1e-6  # a long path: it is still running when we stop it
    t0 = time.perf_counter()
    assert lab.start()
    seen = []
    while time.perf_counter() - t0 < 60:
        n = lab.snapshot.n_points
        if not seen or n != seen[-1]:
            seen.append(n)
        if n >= 3:
            break
        time.sleep(0.005)
    snap = lab.snapshot
    assert lab.running and snap.status == "running" and snap.n_points >= 3 and not snap.end
    assert len(set(seen)) >= 2  # points appeared one after another, not all at the end
    workers = [t for t in threading.enumerate() if t.name == f"gaplab-path-{sess.session_id}"]
    assert len(workers) == 1
    t1 = time.perf_counter()
    lab.stop()
    assert time.perf_counter() - t1 < 30   # a hang guard: stop() joins the worker between breakpoints
    assert not lab.running
    snap = lab.snapshot
    assert snap.status == "stopped" and snap.end == "stopped" and snap.n_points >= 3
    n = snap.n_points
    time.sleep(0.2)
    assert lab.snapshot.n_points == n
    # the columns are the core's: decreasing λ, cumulative passes increasing, gaps <= κε
    lam, passes = snap.cols["lam"], snap.cols["cum_passes"]
    assert np.all(np.diff(lam) < 0) and np.all(np.diff(passes) > 0)
    certified = snap.cols["certified"]
    assert np.all(snap.cols["gap"][certified] <= snap.eps)
    assert np.all(np.isfinite(snap.cols["test_error"]))
    with pytest.raises(ValueError):
        snap.cols["lam"][0] = 1.0  # immutable


def test_pick_loads_the_paths_w_into_the_solver(sess):
    lab, snap = _short_path(sess)
    path = lab.path
    assert snap.n_points == len(path) >= 5 and snap.end == "lam_min"
    assert set(snap.checkpoints) == set(range(len(path)))  # OCR-small: every breakpoint fits
    lo, hi = snap.lam_range
    assert lo == pytest.approx(path.lam_end) and hi == path.lams[0]
    for lam in (hi, float(np.sqrt(path.lams[2] * path.lams[3])), float(path.lams[4]), lo * 1.0001):
        assert lab.pick(lam)
        assert sess.wait_idle(60) and sess.status == "idle", sess.messages()
        s = sess.solver
        assert s.lam == lam and sess.lam == lam
        assert np.allclose(s.w, path.w_at(lam))
        ex = sess.snapshot
        assert ex.exact_gap <= lab.eps * (1 + 1e-9)          # the ε-path's certificate at λ
        if lam < path.lams[0]:  # Proposition 1 is exact (above λ_∞ gap_at is Alg. 6's bound)
            assert ex.exact_gap == pytest.approx(path.gap_at(lam), rel=1e-6, abs=1e-9)
        assert math.isfinite(ex.exact_test_error) and ex.origin.startswith("path")
        assert lab.snapshot.picked == lam
    # the loaded solver is the session's solver: Step and Run continue from it
    w0 = sess.solver.w
    st = sess.step().last_step
    assert st is not None and sess.snapshot.iteration == 1 and not np.array_equal(sess.solver.w, w0)
    assert "from path" in sess.snapshot.label


def test_replay_from_thinned_checkpoints_is_exact(sess, monkeypatch):
    size = sess.solver.memory_bytes()
    monkeypatch.setattr(pathlab_worker, "CHECKPOINT_BUDGET_BYTES", 3 * size + size // 2)  # 3 checkpoints
    lab, snap = _short_path(sess)
    path = lab.path
    J = len(path)
    cks = snap.checkpoints
    assert len(cks) <= 4 and 0 in cks and J - 1 in cks  # bounded: 3 on the stride + the latest
    missing = [j for j in range(J) if j not in cks]
    assert missing
    j = max(missing)
    lam = float(path.lams[j])
    assert lab.pick(lam) and sess.wait_idle(60), sess.messages()
    assert "replayed" in sess.messages()[-1][1] and sess.messages()[-1][0] == "success"
    np.testing.assert_array_equal(sess.solver.w, path.w_at(lam))  # the replay is deterministic
    assert sess.snapshot.exact_gap <= lab.eps


def test_pick_refusals_are_notifications(sess):
    assert not sess.path.pick(0.1)
    assert sess.messages()[-1][0] == "warning" and "Start path" in sess.messages()[-1][1]
    lab, snap = _short_path(sess)
    assert not lab.pick(-1.0) and sess.messages()[-1][0] == "warning"
    solver = sess.solver
    sess.dataset = "toy"          # a path belongs to its dataset: the switch forgets it
    assert lab.snapshot.n_points == 0 and lab.path is None
    assert not lab.pick(0.5) and sess.messages()[-1][0] == "warning"
    assert sess.solver is not solver


def test_heuristic_path_and_grid_search(sess):
    lab = sess.path
    lab.heuristic = True
    assert lab.kappa == 0.7     # the paper's κ for the heuristic path
    lab, snap = _short_path(sess, grid=True)
    assert snap.kind == "heuristic" and snap.n_points >= 3
    # heuristic: the stale gap sum stops the solver; the true gap is a diagnostic
    assert np.all(np.isfinite(snap.cols["exact_gap"][1:]))
    g = snap.grid
    assert len(g["lam"]) >= 2 and np.all(np.log2(g["lam"]) == np.round(np.log2(g["lam"])))
    assert np.all(g["exact_gap"] <= lab.eps) and np.all(np.diff(g["cum_passes"]) > 0)
    lab.heuristic = False
    assert lab.kappa == 0.9


def test_path_runs_beside_the_session_and_closes(sess):
    sess.max_passes = 1e6
    sess.run()
    time.sleep(0.1)
    lab = sess.path
    lab.lam_min = 1e-6
    assert lab.start()
    assert sess.status == "paused"  # starting a path pauses the run (two shared cores)
    assert not lab.start() and "already" in sess.messages()[-1][1]
    time.sleep(0.3)
    t = lab._thread
    sess.close()
    assert not t.is_alive() and lab.snapshot.status == "closed"


# ------------------------------------------------------------------------------- the tab's views
pn = pytest.importorskip("panel")


def test_path_tab_draws_and_picks():
    from gaplab.app.main import LESSONS as LESSONS_TAB
    from gaplab.app.main import PATH, build_app
    from gaplab.app.lessons import LESSONS

    app = build_app(periodic=False)
    try:
        assert app.session.wait_idle(60)
        app.tabs.active = PATH
        app.refresh(force=True)
        view = app.path_view
        assert view.slider.disabled and "Start a path" in view.pick_info.object
        app.session.path.param.update(**SHORT)
        view._start()
        assert app.session.path.wait(120)
        app.refresh(force=True)
        ps = app.session.path.snapshot
        n = ps.n_points
        assert len(view.cost_src.data["x"]) == n and len(view.gap_src.data["x"]) == n
        assert len(view.test_pts.data["x"]) == n and np.all(np.asarray(view.gap_src.data["gap"]) > 0)
        assert f"<b class='gaplab-path-breakpoints'>{n}</b> breakpoints" in view.summary.object
        assert "lam_min" in view.summary.object and not view.slider.disabled
        assert view.x_range.start > view.x_range.end  # flipped: λ decreases to the right
        lo, hi = ps.lam_range
        # the slider holds −log10 λ: it runs the way the plots do (λ decreases to the right)
        assert view.slider.start == pytest.approx(-math.log10(hi), abs=1e-3)
        assert view.slider.end == pytest.approx(-math.log10(lo), abs=1e-3)
        # a click on a plot picks the λ under the mouse
        from bokeh.events import Tap
        lam = float(np.sqrt(ps.cols["lam"][2] * ps.cols["lam"][3]))
        view._on_tap(Tap(model=view.test, x=lam, y=0.3))
        assert app.session.wait_idle(60)
        app.refresh(force=True)
        app.refresh(force=True)
        assert app.session.wait_idle(60)
        loads = [m for m in app.session.messages() if m[1].startswith("Loaded the path's model")]
        assert len(loads) == 1   # moving the slider to the picked λ does not pick again
        assert app.session.solver.lam == lam and view.slider.value == pytest.approx(-math.log10(lam))
        assert "gaplab-path-picked" in view.pick_info.object and "loaded" in view.pick_info.object
        assert view.pick_spans[0].location == lam
        assert "(from the path)" in app.status.panel.object
        assert view.pick_best() and app.session.wait_idle(60)
        # the Step and Convergence tabs show the picked model
        app.on_step()
        app.tabs.active = 1
        app.refresh(force=True)
        assert len(app.gap_passes.slots.slots[0]["exact"].data["x"]) == 1   # its exact gap at load
        # lesson 8: text and the path's live view
        app.tabs.active = LESSONS_TAB
        app.lessons.go(len(LESSONS) - 1)
        app.refresh(force=True)
        assert "regularization path" in app.lessons.title.object and "Proposition 1" in app.lessons.text.object
        (live,) = app.lessons.views()
        assert len(live.cost_src.data["x"]) == n
    finally:
        app.close()


def test_heuristic_path_end_and_eps_tooltip_promise_no_certificate():
    """Issue 34 item 5: App. K's heuristic path stops on stale gaps and certifies nothing, so its
    ρ <= 0 end does not say the last w is ε-approximate for every smaller λ, and the ε setting
    promises gap <= ε only on the ε-approximate path; the ε-path's end keeps the promise."""
    from gaplab.app.pathlab import PathLab
    from gaplab.app.pathlab_snapshot import end_words
    eps_end, heur_end = end_words("rho<=0", "eps"), end_words("rho<=0", "heuristic")
    assert "ε-approximate for every smaller λ" in eps_end
    assert "certifies nothing" in heur_end and "not known to be ε-approximate" in heur_end
    assert end_words("lam_min", "heuristic") == end_words("lam_min", "eps") == "λ_min reached"
    doc = PathLab.param["eps"].doc
    assert "ε-approximate path" in doc and "heuristic path aims at ε but certifies nothing" in doc
