"""The readable reference solver (gaplab.core.reference) against the fast solver, step by step.

The reference is driven with the blocks the fast solver chose; at every step both must take the
same FW corner (cache hit or oracle), the same away corner, the same step kind and γ, find the
same block gap estimate and reach the same w (1e-10 relative). Gap checks and batch steps of the
fast solver are mirrored and compared too. Exact ties (two labellings with the same H_i up to
round-off, which an interior pairwise step creates on purpose) are followed through the drivers'
``oracle``: :class:`FollowCorners` takes the fast solver's corner only when it ties with the
reference's own choice.
"""
import math

import numpy as np
import pytest

from follow_reference import TIE_TOL, FollowCorners, follow, pair
from gaplab.core import ChainModel, load_ocr
from gaplab.core import reference as ref
from gaplab.toy_examples.hard_easy import make_hard_easy

KINDS = ["fw", "pairwise", "away", "combined"]
LAM = 0.01


@pytest.fixture(scope="module")
def ocr():
    train, _ = load_ocr("small")
    return ChainModel(train.subset(np.arange(10), name="ocr-small[:10]"))


@pytest.fixture(scope="module")
def toy():
    model, lam, _ = make_hard_easy(5, 10)  # App. C: one hard block, four easy ones
    return model, lam


def box(model):
    """w_transitions >= 0 (a positivity box as in App. H) and the per-label bias weights (the
    constant attribute's row of the emission block) <= 0.005; everything else free."""
    lb, ub = np.full(model.d, -np.inf), np.full(model.d, np.inf)
    lb[model.trans_off:] = 0.0
    ub[model.F * model.K:model.first_off] = 0.005
    return lb, ub


@pytest.mark.parametrize("cache", [False, True], ids=["nocache", "cache"])
@pytest.mark.parametrize("kind", KINDS)
def test_ocr_step_by_step(ocr, kind, cache):
    solver, state = pair(ocr, LAM, kind, cache=cache)
    c = follow(solver, state, kind, 80)
    assert c["steps"] == 80 and c["gap_checks"] >= 7
    if cache:  # both hits and misses, so the Alg. 5 rule made real decisions
        assert c["hits"] >= 10 and c["misses"] >= 10, c
    if kind in ("away", "combined"):
        assert c["fw"] > 0 and c["away"] + c["pairwise"] > 0, c
    if kind == "pairwise":
        assert c["pairwise"] == 80


@pytest.mark.parametrize("kind,cache", [("fw", False), ("pairwise", True), ("combined", False)])
def test_ocr_box_and_batch_step_by_step(ocr, kind, cache):
    lb, ub = box(ocr)
    solver, state = pair(ocr, LAM, kind, cache=cache, lb=lb, ub=ub, batch=True)
    c = follow(solver, state, kind, 60)
    assert c["batch"] >= 4, c
    assert np.any(state.v < lb) and np.any(state.v > ub)  # both sides of the box are active
    assert np.all(state.w >= lb) and np.all(state.w <= ub)


@pytest.mark.parametrize("cache", [False, True], ids=["nocache", "cache"])
@pytest.mark.parametrize("kind", KINDS)
def test_toy_step_by_step(toy, kind, cache):
    model, lam = toy
    # F = 0.3 rather than 0.25: the toy's gaps are dyadic rationals, and with F = 0.25 a cache gap
    # lands exactly on the hit threshold, where round-off decides hit or miss
    solver, state = pair(model, lam, kind, cache=cache, size=4, factor=0.3, sampling="uniform")
    c = follow(solver, state, kind, 80, stop_gap=1e-10)
    assert c["steps"] >= 40 and c["misses"] > 0, c
    if cache and kind == "pairwise":  # FW steps on the toy always find a new label: no hits
        assert c["hits"] > 0, c


@pytest.mark.parametrize("kind", KINDS)
def test_invariants_after_many_steps(ocr, kind):
    lb, ub = box(ocr)
    state, gaps = ref.solve(ocr, LAM, passes=12, kind=kind, sampling="gap", gap_check=3,
                            batch=True, seed=1, lb=lb, ub=ub, cache=kind != "fw", cache_size=6)
    n = state.n
    for i in range(n):
        if state.atoms is None:
            break
        alpha = state.atoms[i]
        a = np.array(list(alpha.values()))
        assert np.all(a >= 0) and a.sum() == pytest.approx(1.0, abs=1e-12)
        w_i = sum(al * ref.corner(state, i, y)[0] for y, al in alpha.items())
        ell_i = sum(al * ref.corner(state, i, y)[1] for y, al in alpha.items())
        np.testing.assert_allclose(state.w_i[i], w_i, atol=1e-12 * max(1.0, np.abs(w_i).max()))
        assert state.ell_i[i] == pytest.approx(ell_i, abs=1e-14)
        if kind != "fw":  # the cache (with the active set inside it) stays within its size
            assert len(alpha) <= max(state.cache_size, int((a > 0).sum()))
    np.testing.assert_allclose(state.v, state.w_i.sum(axis=0), atol=1e-12)  # w = Aα
    assert state.ell == pytest.approx(state.ell_i.sum(), abs=1e-14)
    assert np.all(state.w >= lb) and np.all(state.w <= ub)
    res = ref.exact_gap(state, count=False)
    assert res.gap >= 0 and np.all(res.block_gaps >= -1e-14)
    assert res.primal >= res.dual
    assert res.gap == pytest.approx(res.primal - res.dual, rel=1e-9, abs=1e-14)  # Eq. (4) and App. H
    assert len(gaps) == 4 and gaps[-1] < gaps[0]


def test_gap_sampling_probabilities_match(ocr):
    solver, state = pair(ocr, LAM, "fw")
    for _ in range(3):  # unvisited blocks first, then p_i ∝ g_i (Alg. 2)
        np.testing.assert_allclose(ref.gap_sampling_probabilities(state), solver.sampling_probabilities(),
                                   atol=1e-12)
        follow(solver, state, "fw", 7)
    rng = np.random.default_rng(0)
    draws = [ref.sample_block(state, rng) for _ in range(200)]
    assert set(draws) <= set(np.flatnonzero(ref.gap_sampling_probabilities(state) > 0))


def test_line_search_and_cache_rule():
    d = np.array([3.0, 4.0])  # λ‖d‖² = 2.5 at λ = 0.1
    assert ref.line_search(1.0, d, 0.1, 1.0) == pytest.approx((0.4, 0.2))
    assert ref.line_search(10.0, d, 0.1, 1.0)[0] == 1.0   # clipped at γ_max
    assert ref.line_search(-1.0, d, 0.1, 1.0) == (0.0, 0.0)  # no ascent direction
    assert ref.line_search(1.0, np.zeros(2), 0.1, 0.3)[0] == 0.3
    assert ref.cache_hit_rule(0.3, 1.0, 10.0, F=0.25, nu=0.01, n=10)
    assert not ref.cache_hit_rule(0.2, 1.0, 10.0, F=0.25, nu=0.01, n=10)
    assert not ref.cache_hit_rule(1e9, 1.0, math.inf, F=0.25, nu=0.01, n=10)  # before a gap pass


def test_bad_input(ocr):
    state = ref.init_state(ocr, LAM)
    with pytest.raises(ValueError, match="kind"):
        ref.block_step(state, 0, "frank")
    with pytest.raises(ValueError, match="active sets"):
        ref.block_step(state, 0, "pairwise")
    with pytest.raises(IndexError, match="block 10"):
        ref.block_step(state, 10)
    with pytest.raises(ValueError, match="lam"):
        ref.init_state(ocr, 0.0)
    with pytest.raises(ValueError, match="shape"):
        ref.init_state(ocr, LAM, lb=np.zeros(3))


def test_reference_solver_reaches_the_independent_qp_optimum():
    """Independently of the fast solver: on a tiny chain problem the reference solver's gap is a
    true duality gap of the QP that tests/reference_ssvm.py solves by enumeration (its own ψ,
    Viterbi and dual), so P(w) − P(w*) <= gap bounds λ/2‖w − w*‖² (the primal is λ-strongly convex)."""
    import reference_ssvm as indep

    lam = 1.0  # BCPFW converges linearly here (at λ = 0.1 it needs ~1500 passes)
    data = indep.make_random_chain_data(4, (1, 3), 3, 2, seed=0)
    _, w_star, primal_star, _, _ = indep.solve_dual_qp(data, lam)
    state, gaps = ref.solve(ChainModel(data), lam, passes=200, kind="pairwise", sampling="uniform", gap_check=40,
                            seed=0)
    res = ref.exact_gap(state, count=False)
    assert res.gap < 1e-9 and gaps[-1] == pytest.approx(res.gap, abs=1e-15)
    assert gaps[0] > 1e-4  # it did have work to do
    assert res.primal == pytest.approx(indep.primal_objective(data, state.w, lam), abs=1e-12)
    assert primal_star - 1e-12 <= res.primal <= primal_star + res.gap + 1e-12
    assert 0.5 * lam * np.sum((state.w - w_star) ** 2) <= res.gap + 1e-12


def test_cache_holds_up_to_size_labellings():
    """CacheConfig.size > 16 is honoured: the fast solver's atom pools grow until a block can
    keep `size` labellings (inactive ones included), as the reference cache does (Alg. 5's working
    set). The pools used to start at min(size, 16) + 1 slots and evict instead of growing."""
    train, _ = load_ocr("small")
    model = ChainModel(train.subset(np.arange(3)))
    solver, state = pair(model, 0.001, "pairwise", cache=True, size=100)
    for _ in range(40):
        follow(solver, state, "pairwise", 10)
        assert list(solver.cache_sizes()) == [len(a) for a in state.atoms]


# ------------------------------------------------------------------ the drivers read like the paper
DRIVERS = {"bcfw_step": ("Alg. 1", "Alg. 2", "Alg. 9"), "bcfw_cache_step": ("Alg. 5",),
           "bcpfw_step": ("Alg. 3",), "bcafw_step": ("Alg. 4",), "combined_step": ("App. G",),
           "batch_fw_step": ("Alg. 8",), "solve": ("Alg. 1", "Alg. 2")}


def _lesson_functions():
    from gaplab.app.lessons import LESSONS
    return {name for lesson in LESSONS for name in lesson.code}


@pytest.mark.parametrize("name", sorted(DRIVERS))
def test_each_algorithm_has_a_short_driver_citing_it(name):
    import inspect
    src = inspect.getsource(getattr(ref, name))
    assert len(src.splitlines()) <= 40, (name, len(src.splitlines()))
    for alg in DRIVERS[name]:
        assert alg in src, (name, alg)


def test_lessons_show_a_driver_per_algorithm_without_the_tie_break():
    """Every driver but the combined step (not one of the paper's algorithms) is on a lesson page,
    and no function a lesson shows mentions ties or a preferred corner: the tests' tie-break
    lives in the oracle they pass (FollowCorners, in tests/follow_reference.py)."""
    import inspect
    import re
    shown = _lesson_functions()
    assert set(DRIVERS) - {"combined_step", "batch_fw_step"} <= shown, set(DRIVERS) - shown
    for name in shown:
        src = inspect.getsource(getattr(ref, name))
        assert not re.search(r"prefer|tie.?break|break_tie|_tied|TIE_TOL|FollowCorners", src, re.I), name
        assert set(inspect.signature(getattr(ref, name)).parameters) <= {
            "state", "i", "oracle", "y", "y_s", "y_a", "step", "g", "direction", "lam", "gamma_max",
            "cache_gap", "block_gap_estimate", "global_gap", "F", "nu", "n", "rng", "sampling",
            "power", "count", "model", "passes", "kind", "gap_check", "batch", "seed", "state_options"}, name


def test_the_default_oracle_is_the_plain_max_oracle(ocr):
    """FollowCorners with corners that do not tie with the reference's own choice changes
    nothing: the same corners, step kinds, γ and w as the default oracle."""
    plain = ref.init_state(ocr, LAM, atoms=True)
    follow_ = ref.init_state(ocr, LAM, atoms=True)
    for k, i in enumerate([0, 3, 3, 7, 0, 5, 3, 1]):
        driver = (ref.bcpfw_step, ref.bcafw_step)[k % 2]
        other = ocr.ground_truth(i)   # H_i = 0 < max H_i: not tied with the FW corner
        tie = abs(ref.scaled_H(follow_, i, other) - ref.scaled_H(follow_, i, ref.max_oracle_corner(follow_, i)))
        assert tie * follow_.n > TIE_TOL
        a = driver(plain, i)
        b = driver(follow_, i, FollowCorners(fw=other, away=other))
        assert np.array_equal(a.fw_corner, b.fw_corner) and np.array_equal(a.away_corner, b.away_corner)
        assert a.gamma == b.gamma and a.kind == b.kind and a.gamma > 0
    np.testing.assert_array_equal(plain.w, follow_.w)
