"""Parameter-level tests of the app's Session (no browser, no Panel): every control changes what
the solver does, Reset restores the initial state, invalid settings are impossible or give a
visible notification (never an exception out of a callback), runs stop promptly, sessions are
independent and release their resources."""
from __future__ import annotations

import dataclasses
import functools
import math
import threading
import time

import numpy as np
import pytest

from app_session import idle_session

from gaplab.app import session as session_mod
from gaplab.app.session import control as session_control   # where Session looks up its loader
from gaplab.app.session import GAP_CHECK_CHOICES, Session


_session = functools.partial(idle_session, 60)


def _fingerprint(s: Session, passes: float = 3.0):
    """Run a fixed number of block steps and summarize what the solver did."""
    n = s.solver.n
    s.step_n(int(passes * n))
    assert s.wait_idle(60)
    sv = s.solver
    recs = sv.last_steps(64)
    return {
        "n": sv.n, "d": sv.model.arrays.d, "oracle_calls": sv.oracle_calls,
        "dual": round(sv.dual_objective(), 12), "w": np.round(sv.w, 12),
        "counts": sv.step_counts(), "blocks": [r.block for r in recs],
        "kinds": sorted({r.kind for r in recs}), "checks": sum(r["kind"] == "gap_check" for r in sv.trace()),
    }


def _differs(a, b) -> bool:
    for k in a:
        if isinstance(a[k], np.ndarray):
            if a[k].shape != b[k].shape or not np.array_equal(a[k], b[k]):
                return True
        elif a[k] != b[k]:
            return True
    return False


# ------------------------------------------------------------------------------- defaults
def test_default_session_is_the_embedded_default(sess):
    snap = sess.snapshot
    assert (sess.dataset, sess.sampling, sess.lam, sess.step_kind, sess.cache) == ("ocr-small", "gap", 0.01, "fw", False)
    assert snap.n == 626 and snap.iteration == 0 and snap.status == "idle"
    assert math.isinf(snap.heuristic_gap) and np.all(np.isinf(snap.gap_estimates))
    cfg = sess.solver.config
    assert cfg.sampling.name == "GAP" and cfg.lam == 0.01 and cfg.gap_check == 10


def test_step_records_the_anatomy(sess):
    snap = sess.step()
    st = snap.last_step
    assert snap.iteration == 1 and 0 <= st.block < snap.n
    assert st.kind == "fw" and st.oracle_called and not st.cache_hit
    assert len(st.truth) == len(st.fw_corner) == st.image.shape[0] and st.image.shape[1:] == (16, 8)
    assert st.truth == tuple(sess.solver.model.describe_label(st.block, sess.solver.model.ground_truth(st.block)))
    assert 0 <= st.gamma <= st.gamma_max and st.gap_before >= 0 and st.gap_after >= 0
    assert np.isfinite(snap.gap_estimates[st.block]) and np.sum(np.isfinite(snap.gap_estimates)) == 1
    assert snap.staleness[st.block] == 1  # computed at the step's iteration k, now k + 1


# ------------------------------------------------------------------------------- controls
CONTROLS = [
    # (parameter, new value, baseline settings)
    ("lam", 0.1, {}),
    ("sampling", "uniform", {}),
    ("sampling", "permutation", {}),
    ("sampling", "maxgap", {}),
    ("gap_power", 3.0, {}),
    ("step_kind", "pairwise", {}),
    ("step_kind", "away", {}),
    ("step_kind", "combined", {}),
    # the cache's global hit criterion uses the last exact gap g^(k0): check the gap every pass
    ("cache", True, {"gap_check": 1}),
    ("cache_factor", 0.01, {"cache": True, "gap_check": 1}),
    ("cache_nu", 1e-4, {"cache": True, "cache_factor": 0.01, "gap_check": 1}),
    ("cache_size", 1, {"cache": True, "cache_factor": 0.01, "cache_nu": 1e-4, "gap_check": 1}),
    ("gap_check", 1, {}),
    ("gap_check", math.inf, {"sampling": "uniform", "gap_check": 1}),
    ("seed", 7, {}),
    ("toy_K", 30, {"dataset": "toy"}),
    ("toy_n", 40, {"dataset": "toy"}),
]


@pytest.mark.parametrize("name,value,base", CONTROLS, ids=[f"{c[0]}={c[1]}" for c in CONTROLS])
def test_every_control_changes_what_the_solver_does(name, value, base):
    a = _session(**base)
    b = _session(**base)
    try:
        setattr(b, name, value)
        assert b.wait_idle(60) and b.status == "idle", b.messages()
        if name in Session.SOLVER_SETTINGS:  # the new solver runs with the new setting
            cfg = b.solver.config
            got = {"lam": cfg.lam, "sampling": cfg.sampling.name.lower(), "gap_power": cfg.gap_power,
                   "step_kind": cfg.step.name.lower(), "cache": cfg.cache.enabled,
                   "cache_factor": cfg.cache.factor, "cache_nu": cfg.cache.nu, "cache_size": cfg.cache.size,
                   "gap_check": cfg.gap_check, "seed": cfg.seed}[name]
            assert got == value
        assert _differs(_fingerprint(a), _fingerprint(b)), f"changing {name} to {value} changed nothing"
    finally:
        a.close()
        b.close()


def test_dataset_control_switches_the_training_set():
    s = _session()
    try:
        s.dataset = "ocr-large"
        assert s.status == "loading" or s.snapshot.n == 6251
        assert s.wait_idle(60) and s.snapshot.n == 6251 and s.snapshot.dataset == "ocr-large"
        s.dataset = "toy"  # the toy problem of App. C needs λ = 1/n: the session sets it
        assert s.snapshot.dataset == "toy" and s.snapshot.n == s.toy_n and s.lam == pytest.approx(1 / s.toy_n)
        st = s.step().last_step
        assert st.note in ("hard object", "easy object") and st.image is None
        s.dataset = "ocr-small"
        assert s.wait_idle(60) and s.snapshot.n == 626 and s.lam == 0.01
    finally:
        s.close()


def test_budget_and_step_n_controls(sess):
    sess.max_passes = 2
    sess.run()
    assert sess.wait_idle(60)
    assert sess.status == "budget" and 2 <= sess.snapshot.effective_passes < 2 + 1 / 626 * 2
    assert any(m[0] == "success" and "budget" in m[1] for m in sess.messages())
    sess.run()  # at the budget: refused with a visible notification
    assert sess.messages()[-1][0] == "warning" and not sess.running
    sess.max_passes = 3
    sess.run()
    assert sess.wait_idle(60) and 3 <= sess.snapshot.effective_passes < 3.01
    it = sess.snapshot.iteration
    sess.n_steps = 37
    sess.step_n()
    assert sess.wait_idle(60) and sess.snapshot.iteration == it + 37


# ------------------------------------------------------------------------------- reset
def test_reset_restores_the_initial_state(sess):
    snap0 = sess.snapshot
    blocks0 = [sess.step().last_step.block for _ in range(5)]
    sess.step_n(2000)
    assert sess.wait_idle(60)
    sess.compute_exact_gaps()
    sess.add_to_comparison()
    snap1 = sess.reset()
    assert snap1.iteration == 0 and snap1.oracle_calls == 0 and snap1.trace == () and snap1.manual_checks == ()
    assert snap1.last_step is None and snap1.status == "idle" and math.isnan(snap1.exact_gap)
    np.testing.assert_array_equal(snap1.gap_estimates, snap0.gap_estimates)
    np.testing.assert_array_equal(snap1.probabilities, snap0.probabilities)
    assert not np.any(sess.solver.w)
    assert len(snap1.comparison) == 1  # the comparison runs are kept on purpose
    assert [sess.step().last_step.block for _ in range(5)] == blocks0  # same seed, same run


# ------------------------------------------------------------------------------- invalid input
@pytest.mark.parametrize("name,value", [("lam", 0.0), ("lam", -1.0), ("gap_power", 0.0), ("cache_size", 0),
                                        ("cache_nu", -1.0), ("sampling", "bogus"), ("step_kind", "zigzag"),
                                        ("seed", -1), ("gap_check", 3), ("max_passes", 0.0), ("dataset", "mnist")])
def test_invalid_values_are_impossible(sess, name, value):
    solver, before = sess.solver, getattr(sess, name)
    with pytest.raises(ValueError):
        setattr(sess, name, value)
    assert getattr(sess, name) == before and sess.solver is solver


def test_rejected_combination_gives_a_notification_and_keeps_the_solver(sess, monkeypatch):
    solver = sess.solver
    real = session_control.SolverConfig

    def picky(**kw):
        if str(kw.get("step")) == "away" and kw["cache"].enabled:
            raise ValueError("away steps with a cache are not supported here")
        return real(**kw)

    monkeypatch.setattr(session_control, "SolverConfig", picky)
    sess.cache = True
    solver = sess.solver
    sess.step_kind = "away"  # no exception escapes the parameter callback
    level, text = sess.messages()[-1]
    assert level == "error" and "not supported" in text
    assert sess.step_kind == "fw" and sess.solver is solver  # reverted, old solver kept


def test_dataset_that_cannot_load_gives_a_notification(sess, monkeypatch):
    real = session_control.load_problem

    def loader(name, *a, **k):
        if name == "ocr-large":
            raise FileNotFoundError("OCR-large not found; set GAPLAB_DATA")
        return real(name, *a, **k)

    monkeypatch.setattr(session_control, "load_problem", loader)
    sess.dataset = "ocr-large"
    assert sess.wait_idle(30)
    assert sess.status == "error" and sess.messages()[-1][0] == "error"
    assert "GAPLAB_DATA" in sess.messages()[-1][1]
    assert sess.snapshot.n == 0   # the views draw nothing of the previous dataset
    sess.step()  # nothing loaded: a warning, not an exception
    sess.run()
    assert sess.messages()[-1][0] == "warning"
    sess.dataset = "ocr-small"
    assert sess.wait_idle(60) and sess.status == "idle" and sess.snapshot.n == 626


def test_picker_offers_only_problems_whose_data_is_installed(tmp_path, monkeypatch):
    from gaplab.app.settings import missing_problems
    monkeypatch.setenv("GAPLAB_DATA", str(tmp_path))
    monkeypatch.setattr("platformdirs.user_cache_dir", lambda *a, **k: str(tmp_path / "cache"))
    from gaplab.core.problems import get_problem
    if get_problem("conll2000").installed():
        pytest.skip("CoNLL-2000 is found outside $GAPLAB_DATA on this machine")
    s = Session(load=False)
    try:
        assert "conll2000" not in s.param.dataset.objects
        assert {"ocr-small", "ocr-large", "toy"} <= set(s.param.dataset.objects)
        assert "GAPLAB_DATA" in missing_problems()["conll2000"]
        with pytest.raises(ValueError):
            s.dataset = "conll2000"
    finally:
        s.close()
    (tmp_path / "train.txt").write_text("Confidence NN B-NP\n\n")
    (tmp_path / "test.txt").write_text("Confidence NN B-NP\n\n")
    s = Session(load=False)
    try:
        assert "conll2000" in s.param.dataset.objects   # offered once its files are there
    finally:
        s.close()


def test_actions_while_loading_are_refused_politely(monkeypatch):
    real = session_control.load_problem

    def slow(name, *a, **k):
        time.sleep(0.6)
        return real(name, *a, **k)

    monkeypatch.setattr(session_control, "load_problem", slow)
    s = Session()
    try:
        assert s.status == "loading"
        s.step()
        s.compute_exact_gaps()
        assert [m[0] for m in s.messages()] == ["warning", "warning"]
        assert s.wait_idle(30) and s.status == "idle"
    finally:
        s.close()


def test_comparison_needs_a_run_first(sess):
    assert sess.add_to_comparison() is None and sess.messages()[-1][0] == "warning"


# ------------------------------------------------------------------------------- run control
def test_run_stops_within_half_a_second_and_uses_one_worker_thread():
    s = _session(dataset="ocr-large", max_passes=1e6)
    try:
        s.run()
        time.sleep(0.6)
        workers = [t for t in threading.enumerate() if t.name.startswith(f"gaplab-session-{s.session_id}-")]
        assert len(workers) == 1 and s.status == "running"
        t0 = time.perf_counter()
        s.stop()
        assert time.perf_counter() - t0 < 0.5
        assert not s.running and s.status == "stopped"
        it = s.snapshot.iteration
        assert it > 0 and s.snapshot.steps_per_s > 0
        time.sleep(0.2)
        assert s.solver.iteration == it == s.snapshot.iteration
        # Stop ended the run: Run starts a new one from α⁰ (Pause would have resumed it)
        s.run()
        time.sleep(0.05)
        s.pause()
        assert s.status == "paused" and 0 < s.snapshot.iteration < it
        it2 = s.snapshot.iteration
        s.run()
        time.sleep(0.2)
        s.pause()
        assert s.status == "paused" and s.snapshot.iteration > it2
    finally:
        s.close()


def test_snapshots_are_immutable_and_published_at_most_10_per_second():
    s = _session(max_passes=1e6)
    try:
        versions = set()
        s.run()
        t_end = time.perf_counter() + 1.0
        while time.perf_counter() < t_end:
            versions.add(s.snapshot.version)
            time.sleep(0.005)
        s.stop()
        assert len(versions) <= 13  # 10 Hz plus the start
        snap = s.snapshot
        with pytest.raises(dataclasses.FrozenInstanceError):
            snap.iteration = 0
        for arr in (snap.gap_estimates, snap.staleness, snap.probabilities):
            with pytest.raises(ValueError):
                arr[0] = 1
        assert snap.trace and all(r["kind"] in ("pass", "gap_check", "batch") for r in snap.trace)
    finally:
        s.close()


def test_settings_change_mid_run_stops_and_rebuilds():
    # keep α on (the default): the run pauses and continues from the current α under the new
    # sampler; off: the solver is rebuilt at α⁰
    s = _session(max_passes=1e6)
    try:
        s.run()
        time.sleep(0.3)
        s.sampling = "uniform"
        assert not s.running and s.status == "paused" and s.snapshot.iteration > 0
        assert s.solver.config.sampling.name == "UNIFORM"
        assert "continuing from the current α" in s.messages()[-1][1]
        s.keep_alpha = False
        s.run()
        time.sleep(0.3)
        s.sampling = "gap"
        assert not s.running and s.status == "idle" and s.snapshot.iteration == 0
        assert s.solver.config.sampling.name == "GAP"
        assert "reset" in s.messages()[-1][1]
    finally:
        s.close()


def test_exact_gaps_are_counted_and_shown(sess):
    sess.step_n(1500)
    assert sess.wait_idle(60)
    calls = sess.snapshot.oracle_calls
    ex = sess.compute_exact_gaps()
    snap = sess.snapshot
    assert snap.oracle_calls == calls + snap.n
    assert snap.exact_gap == ex.gap and snap.exact_primal == ex.primal
    assert snap.exact_block_gaps is not None and snap.exact_block_gaps.sum() == pytest.approx(ex.gap, rel=1e-9)
    assert snap.manual_checks[-1]["exact_gap"] == ex.gap and np.isfinite(snap.exact_test_error)
    np.testing.assert_allclose(snap.gap_estimates, snap.exact_block_gaps)  # all estimates refreshed
    assert np.all(snap.staleness == 0)


def test_comparison_runs_are_kept_and_capped(sess):
    sess.max_passes = 1
    for k in range(session_mod.MAX_COMPARISON_RUNS + 1):
        sess.reset()
        sess.run()
        assert sess.wait_idle(60)
        assert sess.add_to_comparison() is not None
    runs = sess.snapshot.comparison
    assert len(runs) == session_mod.MAX_COMPARISON_RUNS and runs[0].index == 2
    sess.clear_comparison()
    assert sess.snapshot.comparison == ()


# ------------------------------------------------------------------------------- independence
def test_two_sessions_never_share_state():
    a, b = _session(max_passes=1e6), _session(max_passes=1e6)
    try:
        assert a.solver is not b.solver and not np.shares_memory(a.solver.S.w, b.solver.S.w)
        a.step_n(500)
        assert a.wait_idle(60)
        assert a.snapshot.iteration == 500 and b.snapshot.iteration == 0
        a.sampling = "uniform"
        assert b.sampling == "gap" and b.solver.config.sampling.name == "GAP"
        a.run(); b.run()
        time.sleep(0.4)
        assert a.running and b.running
        a.stop()
        ib = b.snapshot.iteration
        time.sleep(0.3)
        assert b.running and b.snapshot.iteration > ib
        b.stop()
    finally:
        a.close()
        b.close()


def test_close_releases_the_worker_and_the_solver():
    s = _session(max_passes=1e6)
    s.run()
    time.sleep(0.2)
    t = s._thread
    s.close()
    assert t is not None and not t.is_alive()
    assert s.solver is None and s.problem is None and s.closed and s.snapshot.status == "closed"
    s.step()
    s.run()  # after close: silently nothing
    s.close()  # idempotent


def test_gap_check_choices_are_the_papers():
    assert set(GAP_CHECK_CHOICES.values()) == {1, 5, 10, 20, 100, math.inf}
