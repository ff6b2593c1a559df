"""Presenter tools: keep α when a setting changes, go back through the
last steps, bookmarkable states. Session-level (no browser)."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from app_session import idle_session

from gaplab.app.safe_html import md_esc
from gaplab.app.session import Session


_session = functools.partial(idle_session, 120)


def _steps(s: Session, k: int):
    s.step_n(k)
    assert s.wait_idle(120)
    assert s.solver.iteration >= k


def _w_is_A_alpha(s: Session):
    """w = Aα: recomputing w from the block statistics (μ, the α-weighted corners) gives w."""
    c = s.solver.copy()
    c.recompute_primal()
    np.testing.assert_allclose(c.w, s.solver.w, rtol=1e-9, atol=1e-12)


def _dual_non_decreasing(s: Session, k: int):
    d = [s.solver.dual_objective()]
    for _ in range(k):
        s.step()
        d.append(s.solver.dual_objective())
    d = np.array(d)
    # exact line search: every block step improves the dual (round-off allowed)
    assert np.all(np.diff(d) >= -1e-12 * np.maximum(1.0, np.abs(d[1:]))), np.diff(d).min()


# ------------------------------------------------------------------------ keep α
def test_switch_uniform_to_gap_mid_run_keeps_alpha():
    s = _session(dataset="toy", sampling="uniform", step_kind="pairwise")
    try:
        n = s.solver.n
        _steps(s, 3 * n)
        before = s.snapshot
        w0, d0, it0 = s.solver.w, s.solver.dual_objective(), s.solver.iteration
        s.sampling = "gap"
        after = s.snapshot
        assert s.solver.config.sampling.name == "GAP"
        assert s.solver.iteration == it0 == after.iteration      # the run continues
        assert s.solver.dual_objective() == d0 and np.array_equal(s.solver.w, w0)
        assert after.dual == before.dual
        assert len(after.trace) == len(before.trace)           # the curve continues
        assert [m[3] for m in after.switches] == ["gap sampling"]
        # the convergence legend names both parts of the curve, not "gap" for the whole of it
        from gaplab.app.views.base import current_label
        assert current_label(after).startswith("current: uniform sampling → gap sampling (now ")
        assert current_label(before) == f"current: {before.label}"
        # the anatomy still describes the last step as taken (drawn by the uniform sampler)
        assert after.last_step == before.last_step and after.last_step.sampling == "uniform"
        assert after.switches[0][0] == pytest.approx(before.effective_passes)
        _w_is_A_alpha(s)
        _dual_non_decreasing(s, 2 * n)
        _w_is_A_alpha(s)
        assert s.solver.iteration == it0 + 2 * n
        msgs = [m for _, m in s.messages()]
        assert any("continuing from the current α" in m for m in msgs)
        assert not any("restarted" in m or "was reset" in m for m in msgs)
    finally:
        s.close()


@pytest.mark.parametrize("change", [dict(step_kind="away"), dict(step_kind="fw"), dict(cache=True),
                                    dict(sampling="permutation"), dict(gap_check=1)])
def test_switch_step_kind_or_cache_keeps_alpha(change):
    s = _session(dataset="toy", sampling="gap", step_kind="pairwise")
    try:
        n = s.solver.n
        _steps(s, 2 * n + 3)
        w0, d0, it0 = s.solver.w, s.solver.dual_objective(), s.solver.iteration
        s.param.update(**change)
        assert s.solver.iteration == it0 and s.solver.dual_objective() == d0
        assert np.array_equal(s.solver.w, w0)
        assert len(s.snapshot.switches) == 1
        _dual_non_decreasing(s, 2 * n)
        _w_is_A_alpha(s)
    finally:
        s.close()


def test_fw_without_atoms_to_pairwise_restarts_and_says_why():
    s = _session(dataset="toy", sampling="gap", step_kind="fw")
    try:
        _steps(s, 10)
        s.step_kind = "pairwise"
        assert s.solver.iteration == 0 and s.snapshot.switches == ()
        assert any("kept no atoms" in m for _, m in s.messages())
    finally:
        s.close()


def test_lam_change_warm_starts_from_the_current_alpha():
    s = _session(dataset="toy", sampling="gap", step_kind="pairwise", lam=0.05)
    try:
        n = s.solver.n
        _steps(s, 4 * n)
        w0 = s.solver.w
        old = s.solver
        s.lam = 0.02
        new = s.solver
        assert new.lam == 0.02 and new is not old
        # same α, w scaled by λ_old/λ_new (w = Aα/λ)
        np.testing.assert_allclose(new.w, w0 * 0.05 / 0.02, rtol=1e-12)
        assert s.snapshot.switches and "λ = 0.02" in s.snapshot.switches[0][3]
        assert "λ = 0.05" in s.snapshot.label
        from gaplab.app.views import StatusView
        sv = StatusView()
        sv.update(s.snapshot, True)
        assert "warm start from α at λ = 0.05" in sv.panel.object and "from the path" not in sv.panel.object
        ex = s.compute_exact_gaps()
        assert math.isfinite(ex.gap) and ex.gap >= -1e-12
        # the gap is the new λ's: the primal and dual are evaluated at λ = 0.05
        d_new = new.dual_objective()
        assert ex.dual == pytest.approx(d_new, rel=1e-12, abs=1e-15)
        fresh = _session(dataset="toy", sampling="gap", step_kind="pairwise", lam=0.05)
        try:
            assert ex.gap < fresh.compute_exact_gaps().gap    # a warm start, not α⁰
        finally:
            fresh.close()
        _dual_non_decreasing(s, n)
        _w_is_A_alpha(s)
    finally:
        s.close()


def test_reset_restarts_from_alpha0_and_keep_alpha_off_restarts():
    s = _session(dataset="toy", sampling="uniform", step_kind="pairwise")
    try:
        _steps(s, 30)
        s.sampling = "gap"
        assert s.solver.iteration == 30
        s.reset()
        assert s.solver.iteration == 0 and np.all(s.solver.w == 0) and s.snapshot.switches == ()
        assert s.solver.config.sampling.name == "GAP"
        _steps(s, 30)
        s.keep_alpha = False
        s.sampling = "uniform"
        assert s.solver.iteration == 0 and np.all(s.solver.w == 0)
    finally:
        s.close()


def test_switch_marker_is_in_the_curve_data():
    pytest.importorskip("panel")
    from gaplab.app.views import GapView
    s = _session(dataset="toy", sampling="uniform", step_kind="pairwise")
    try:
        n = s.solver.n
        _steps(s, 2 * n)
        s.sampling = "gap"
        _steps(s, n)
        snap = s.snapshot
        v = GapView("passes", name="gap_passes")
        v.update(snap, True)
        assert list(v.switches.data["x"]) == [pytest.approx(2.0)]
        assert v.switches.data["label"] == ["→ gap sampling"]
        vt = GapView("time")
        vt.update(snap, True)
        assert vt.switches.data["x"][0] == pytest.approx(snap.switches[0][1])
    finally:
        s.close()


# ------------------------------------------------------------------------ go back
def _state(s: Session):
    sv, snap = s.solver, s.snapshot
    return dict(w=sv.w, alpha=sv.S.a_alpha.copy(), mu=sv.S.mu.copy(), gaps=sv.gap_estimates,
                dual=sv.dual_objective(), it=sv.iteration, calls=sv.oracle_calls,
                step=snap.last_step.iteration if snap.last_step else None,
                block=snap.last_step.block if snap.last_step else None,
                heur=snap.heuristic_gap, rng=sv.S.rng.copy())


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            assert a[k].shape == b[k].shape and np.array_equal(a[k], b[k]), k
        else:
            assert a[k] == b[k] or (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k])), k


@pytest.mark.parametrize("kind", ["fw", "pairwise"])
def test_back_five_steps_equals_fifteen_steps_and_replays_bitwise(kind):
    s = _session(dataset="ocr-small", step_kind=kind)
    try:
        states = []
        for _ in range(20):
            s.step()
            states.append(_state(s))
        for _ in range(5):
            s.back()
        _assert_same(_state(s), states[14])
        assert s.snapshot.last_step.iteration == 14 and s.snapshot.iteration == 15
        for k in range(15, 20):
            s.step()
            _assert_same(_state(s), states[k])
    finally:
        s.close()


def test_back_reaches_two_hundred_steps_after_a_run():
    s = _session(dataset="toy", sampling="gap", step_kind="pairwise")
    try:
        _steps(s, 700)
        ref = s.solver.copy()
        ref_states = {}
        # the reference: a fresh solver stepped to each target
        for t in (500, 650, 699):
            c = _session(dataset="toy", sampling="gap", step_kind="pairwise")
            try:
                c.solver.steps(t)
                ref_states[t] = (c.solver.w, c.solver.gap_estimates)
            finally:
                c.close()
        for t in (699, 650, 500):
            s.go_to(t)
            assert s.solver.iteration == t
            assert np.array_equal(s.solver.w, ref_states[t][0])
            assert np.array_equal(s.solver.gap_estimates, ref_states[t][1])
        s.go_to(700)
        assert np.array_equal(s.solver.w, ref.w)
    finally:
        s.close()


def test_back_past_the_history_or_a_switch_is_refused_cleanly():
    s = _session(dataset="toy", sampling="uniform", step_kind="pairwise")
    try:
        _steps(s, 10)
        s.sampling = "gap"
        s.step()
        s.back()
        assert s.solver.iteration == 10
        w = s.solver.w
        s.back()   # before the switch: not reachable
        assert s.solver.iteration == 10 and np.array_equal(s.solver.w, w)
        assert "not reachable" in s.messages()[-1][1]
        with pytest.raises(ValueError, match="k must be"):
            s.back(0)
    finally:
        s.close()


def test_back_after_an_exact_gap_pass_keeps_the_check():
    s = _session(dataset="toy", sampling="gap", step_kind="fw")
    try:
        for _ in range(8):
            s.step()
        ex = s.compute_exact_gaps()
        for _ in range(4):
            s.step()
        s.back(4)
        assert s.solver.iteration == 8 and s.snapshot.exact_gap == ex.gap
        s.back(2)
        assert s.solver.iteration == 6 and s.snapshot.manual_checks == ()
    finally:
        s.close()


# ------------------------------------------------------------------------ keys, buttons
@pytest.fixture(scope="module")
def app():
    pytest.importorskip("panel")
    from gaplab.app.main import build_app
    a = build_app(periodic=False)
    assert a.session.wait_idle(60)
    yield a
    a.close()


def test_keyboard_mapping_is_in_the_page(app):
    from gaplab.app.keys import KEYMAP, KeyboardShortcuts
    assert {KEYMAP[" "], KEYMAP["ArrowRight"], KEYMAP["ArrowLeft"], KEYMAP["r"], KEYMAP["p"]} == \
        {"step", "step_n", "back", "run", "projector"}
    assert KEYMAP[" "] == "step" and KEYMAP["ArrowRight"] == "step_n" and KEYMAP["ArrowLeft"] == "back"
    assert app.keys in list(app._layout.select(KeyboardShortcuts))
    script = KeyboardShortcuts._scripts["render"]
    assert "addEventListener('keydown'" in script and "'INPUT'" in script and "'TEXTAREA'" in script
    assert '"ArrowLeft": "back"' in script
    # the model sent to the page carries the script
    model = app.keys.get_root()
    assert "keydown" in str(model.scripts) or "keydown" in str(getattr(model, "callbacks", ""))


def test_keys_drive_the_buttons(app):
    s = app.session
    s.param.update(speed=math.inf, sampling="gap", step_kind="fw", cache=False, n_steps=7)
    s.reset()
    app.keys.press = "step:1"            # Steps and ← go to the session's worker
    assert s.wait_idle(60) and s.snapshot.iteration == 1
    app.keys.press = "step:2"
    assert s.wait_idle(60) and s.snapshot.iteration == 2
    app.keys.press = "back:3"
    assert s.wait_idle(60) and s.snapshot.iteration == 1
    app.keys.press = "step_n:4"
    assert s.wait_idle(60) and s.snapshot.iteration == 8
    app.keys.press = "projector:5"
    assert app.projector
    app.keys.press = "projector:6"
    assert not app.projector
    app.keys.press = "bogus:7"                  # not an action: nothing happens
    assert s.snapshot.iteration == 8
    app.b_back.clicks += 1
    assert s.snapshot.iteration == 7


# ------------------------------------------------------------------------ URL state
def test_a_session_from_a_query_equals_one_stepped_by_hand():
    from gaplab.app.urlstate import query_of, query_string, session_from_query
    hand = _session(dataset="toy", sampling="uniform", step_kind="pairwise", seed=3)
    try:
        hand.lam = 0.02
        for _ in range(37):
            hand.step()
        q = query_string(query_of(hand, tab=5, lesson=4))
        assert "dataset=toy" in q and "sampling=uniform" in q and "steps=37" in q and "lam=0.02" in q
        assert "tab=lessons" in q and "lesson=4" in q and "seed=3" in q
        s, req = session_from_query(q)
        try:
            assert req.notices == [] and req.tab == 5 and req.lesson == 4 and req.steps == 37
            assert (s.dataset, s.sampling, s.step_kind, s.seed, s.lam) == ("toy", "uniform", "pairwise", 3, 0.02)
            _assert_same(_state(s), _state(hand))
            assert s.snapshot.last_step.probability == hand.snapshot.last_step.probability
            # both go on identically
            for _ in range(5):
                hand.step()
                s.step()
            _assert_same(_state(s), _state(hand))
        finally:
            s.close()
    finally:
        hand.close()


def test_a_lesson_url_opens_the_same_screen():
    from gaplab.app.urlstate import parse_query
    from gaplab.app.session import Session
    req = parse_query("?dataset=ocr-small&sampling=gap&lesson=4&steps=120", Session)
    assert req.notices == [] and req.settings == {"dataset": "ocr-small", "sampling": "gap"}
    assert req.lesson == 4 and req.steps == 120


@pytest.mark.parametrize("query, key", [
    ("?sampling=<script>alert(1)</script>", "sampling"),
    ("?lam=-1", "lam"), ("?lam=nan", "lam"), ("?lam=1e999", "lam"), ("?seed=1.5", "seed"),
    ("?steps=-3", "steps"), ("?steps=99999999999", "steps"), ("?lesson=0", "lesson"),
    ("?tab=<img src=x onerror=alert(1)>", "tab"), ("?cache=maybe", "cache"),
    ("?dataset=../../etc/passwd", "dataset"), ("?gap_check=7", "gap_check"),
    ("?<b>bold</b>=1", "<b>bold</b>"), ("?sampling=" + "x" * 500, "sampling"),
])
def test_a_bad_query_value_is_refused_cleanly(query, key):
    from gaplab.app.session import Session
    from gaplab.app.urlstate import parse_query
    req = parse_query(query, Session)
    assert req.settings == {} and req.steps is None and req.tab is None and req.lesson is None
    assert len(req.notices) == 1
    text = req.notices[0]
    assert repr(key if len(key) <= 40 else key[:40] + "…") in text
    shown = md_esc(text)                             # what the alert and toasts render
    assert "<" not in shown and ">" not in shown     # escaped: no markup reaches the page


def test_bad_values_next_to_good_ones_keep_the_good_ones():
    from gaplab.app.urlstate import session_from_query
    s, req = session_from_query("?dataset=toy&sampling=bogus&step_kind=away&steps=12&seed=x")
    try:
        assert s.step_kind == "away" and s.sampling == "gap" and s.seed == 0
        assert s.solver.iteration == 12 and len(req.notices) == 2
        assert sum("ignored" in m for _, m in s.messages()) == 2
    finally:
        s.close()


def test_the_app_opens_a_url_on_its_tab_and_lesson(app):
    s = app.session
    req = app.open_url("?dataset=ocr-small&sampling=uniform&lesson=4&steps=30&<i>x</i>=1")
    try:
        assert len(req.notices) == 1 and "'<i>x</i>'" in req.notices[0]
        assert app.tabs.active == 5 and app.lessons.page == 3 and "page 4 of" in app.lessons.pager.object
        assert s.sampling == "uniform" and s.snapshot.iteration == 30
        assert app.alert.object == md_esc(req.notices[0])  # the notice reached the page, escaped
        assert "<i>" not in app.alert.object
        q = app.url_query()
        assert q["dataset"] == "ocr-small" and q["sampling"] == "uniform" and q["steps"] == "30"
        assert q["tab"] == "lessons" and q["lesson"] == "4"
    finally:
        s.param.update(sampling="gap")
        s.reset()
        app.tabs.active = 0


# ------------------------------------------------------------------------ one set of numbers
def test_the_anatomy_says_which_step_it_shows_when_it_lags(app):
    # every view and the status line draw one snapshot per refresh (tests/app/test_snapshot.py);
    # should a snapshot's last step be older than its iteration, the anatomy says so itself
    import dataclasses
    s = app.session
    s.param.update(speed=math.inf, sampling="gap", step_kind="fw", cache=False)
    s.reset()
    app.tabs.active = 0
    for _ in range(3):
        app.on_step()
    app.refresh(force=True)
    assert "steps ago" not in app.anatomy.table.object      # anatomy and numbers agree
    third = s._snapshot.last_step
    s.step_n(7)
    assert s.wait_idle(60)
    real = s._snapshot
    try:
        s._snapshot = dataclasses.replace(real, last_step=third, version=real.version + 1)
        app.refresh()
        assert "#3 &nbsp;" in app.anatomy.table.object
        assert "last drawn step: #3, 7 steps ago" in app.anatomy.table.object
        assert "iteration <b>10</b>" in app.status.panel.object
    finally:
        s._snapshot = real
        app.refresh(force=True)
    assert "steps ago" not in app.anatomy.table.object


def test_history_memory_stays_bounded_and_back_stays_exact():
    from gaplab.app.history import History
    s = _session(dataset="toy", sampling="gap", step_kind="pairwise")
    try:
        sv = s.solver
        h = History(depth=200, spacing=5, max_bytes=4 * sv.memory_bytes())
        ref = {}
        for k in range(400):
            h.note(sv)
            sv.step()
            ref[sv.iteration] = sv.w
        assert len(h.checkpoints) <= 4
        assert h.earliest <= sv.iteration - 200
        for t in (sv.iteration - 200, sv.iteration - 1, sv.iteration - 77):
            assert np.array_equal(h.reach(t).w, ref[t])
    finally:
        s.close()


def test_a_setting_change_after_stop_restarts_from_alpha0():
    s = _session(dataset="toy", sampling="uniform", step_kind="pairwise")
    try:
        _steps(s, 30)
        s.stop()
        s.sampling = "gap"
        assert s.solver.iteration == 0 and s.snapshot.switches == ()
    finally:
        s.close()


def test_a_url_never_claims_steps_it_cannot_reproduce():
    from gaplab.app.urlstate import query_of
    s = _session(dataset="toy", sampling="uniform", step_kind="pairwise")
    try:
        _steps(s, 30)
        assert query_of(s)["steps"] == "30"
        s.sampling = "gap"            # α kept: not "gap sampling from α⁰, 30 steps"
        q = query_of(s)
        assert q.get("sampling", "gap") == "gap" and "steps" not in q
        s.reset()
        assert query_of(s)["steps"] == "0"
    finally:
        s.close()


def test_close_frees_the_checkpoints():
    s = _session(dataset="toy", sampling="gap", step_kind="pairwise")
    for _ in range(60):
        s.step()
    assert len(s._history.checkpoints) >= 2
    s.close()
    assert s._history.checkpoints == ()
