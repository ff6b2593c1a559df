"""Steps answered by the reference solver while the kernels compile, then the hand-over to the
fast solver (gaplab.app.refstep). The kernels are marked "compiling" (kernels.state patched);
nothing is cold-compiled here."""
import functools
import math

import numpy as np
import pytest

from app_session import idle_session

from gaplab.app import kernels
from gaplab.app.refstep import REFERENCE_NOTE, Xoshiro, reference_stepper
from gaplab.app.startup import banner_html
from gaplab.core.rng import rng_randint, rng_uniform, seed_state

K = 9   # Steps answered by the reference solver


@pytest.fixture
def compiling(monkeypatch):
    """kernels.state() says "compiling" until flag["ready"] is set."""
    flag = {"ready": False}

    def state():
        if flag["ready"]:
            return kernels.KernelState("ready", 1.0, "ready", 1.0)
        return kernels.KernelState("compiling", 0.3, "a block step", 5.0)

    monkeypatch.setattr(kernels, "state", state)
    return flag


_session = functools.partial(idle_session, 60)


SHOWN = ("iteration", "block", "kind", "cache_hit", "drop", "oracle_called", "fw_corner", "away_corner",
         "truth", "unvisited")
SHOWN_NUMBERS = ("gamma", "gamma_max", "gap_before", "direction_gap", "gap_after", "improvement",
                 "probability", "gap_prev")


def _same_numbers(a, b, scale):
    if math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
        return a == b or (math.isnan(a) and math.isnan(b))
    return abs(a - b) <= 1e-9 * (abs(a) + abs(b) + scale)


def test_xoshiro_in_python_is_the_kernels_stream():
    py, nb = Xoshiro(7), seed_state(7)
    for n in (626, 5, 1, 1000):
        assert [py.randint(n) for _ in range(50)] == [int(rng_randint(nb, n)) for _ in range(50)]
    assert py.uniform() == rng_uniform(nb)


@pytest.mark.parametrize("sampling", ["gap", "uniform"])
def test_reference_steps_then_handover_equal_the_fast_solver(compiling, sampling):
    ref_sess, fast_sess = _session(sampling=sampling, seed=3), _session(sampling=sampling, seed=3)
    try:
        shown = []
        assert ref_sess.reference_can_step()   # the page enables Step while compiling
        for _ in range(K):
            shown.append(ref_sess.step())
            assert ref_sess.reference_stepping, "a Step while compiling is answered by the reference solver"
        compiling["ready"] = True
        expected = [fast_sess.step() for _ in range(K)]
        assert not fast_sess.reference_stepping
        n = expected[-1].n
        for a, b in zip(shown, expected):
            sa, sb = a.last_step, b.last_step
            for f in SHOWN:
                assert getattr(sa, f) == getattr(sb, f), (f, getattr(sa, f), getattr(sb, f))
            for f in SHOWN_NUMBERS:
                assert _same_numbers(getattr(sa, f), getattr(sb, f), 1.0 / n), (f, getattr(sa, f), getattr(sb, f))
            assert a.iteration == b.iteration and a.oracle_calls == b.oracle_calls
            assert _same_numbers(a.dual, b.dual, 1.0 / n)
            assert np.array_equal(np.isinf(a.gap_estimates), np.isinf(b.gap_estimates))
            fin = np.isfinite(b.gap_estimates)
            assert np.allclose(a.gap_estimates[fin], b.gap_estimates[fin], rtol=1e-9, atol=1e-15)
            assert np.array_equal(a.probabilities, b.probabilities)
            assert np.array_equal(a.staleness, b.staleness)
            assert a.trace == b.trace
        # the next Step (kernels ready) hands over: the fast solver replays the K steps
        after, want = ref_sess.step(), fast_sess.step()
        assert not ref_sess.reference_stepping
        s, t = ref_sess._solver, fast_sess._solver
        for name in ("w", "v", "mu", "ell", "gap_est", "gap_iter", "tree", "unv", "unv_pos", "rng", "counters",
                     "scalars"):
            assert getattr(s.S, name).tobytes() == getattr(t.S, name).tobytes(), name   # bitwise
        assert [repr(r) for r in s.last_steps(K + 1)] == [repr(r) for r in t.last_steps(K + 1)]
        assert s.trace() == t.trace()
        assert after.iteration == K + 1
        for f in SHOWN + SHOWN_NUMBERS:   # from here on, exactly the fast solver's step
            x, y = getattr(after.last_step, f), getattr(want.last_step, f)
            assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), (f, x, y)
        # Back reaches the steps the reference solver answered (replayed by the fast solver)
        ref_sess.go_to(3)
        fast_sess.go_to(3)
        assert ref_sess._solver.S.w.tobytes() == fast_sess._solver.S.w.tobytes()
        assert ref_sess.snapshot.last_step.block == fast_sess.snapshot.last_step.block
    finally:
        ref_sess.close()
        fast_sess.close()


def test_step_n_while_reference_stepping_hands_over_first(compiling):
    ref_sess, fast_sess = _session(seed=5), _session(seed=5)
    try:
        for _ in range(3):
            ref_sess.step()
        assert ref_sess.reference_stepping
        ref_sess.step_n(4)      # needs the fast solver: hands over (compiling if it must)
        assert ref_sess.wait_idle(60)
        assert not ref_sess.reference_stepping
        compiling["ready"] = True
        for _ in range(3):
            fast_sess.step()
        fast_sess.step_n(4)
        assert fast_sess.wait_idle(60)
        assert ref_sess._solver.iteration == fast_sess._solver.iteration == 7
        assert np.array_equal(ref_sess._solver.S.w, fast_sess._solver.S.w)
        assert np.array_equal(ref_sess._solver.S.rng, fast_sess._solver.S.rng)
    finally:
        ref_sess.close()
        fast_sess.close()


def test_unsupported_settings_wait_for_the_kernels(compiling):
    sess = _session(step_kind="pairwise")
    try:
        assert reference_stepper(sess._solver) is None
        assert not sess.reference_can_step()   # the page keeps Step disabled while compiling
    finally:
        sess.close()


def test_banner_says_the_reference_solver_answers():
    ks = kernels.KernelState("compiling", 0.3, "a block step", 5.0)
    assert REFERENCE_NOTE in banner_html(ks, reference=True)
    assert REFERENCE_NOTE not in banner_html(ks)
