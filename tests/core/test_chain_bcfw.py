"""Core properties of the chain model and BCFW: oracle = brute force, score identity,
monotone dual, gap identity, convergence to an independently computed optimum, determinism,
sampler frequencies, bad input."""
import math

import numpy as np
import pytest

import reference_ssvm as ref
from conftest import random_chain_data
from gaplab.core import CacheConfig, ChainModel, Solver, SolverConfig, max_oracle
from gaplab.core import kernels as kr
from gaplab.core.datasets.base import SequenceData


@pytest.mark.parametrize("loss_augmented", [True, False])
def test_viterbi_equals_brute_force(loss_augmented):
    rng = np.random.default_rng(0)
    for trial in range(60):
        K = int(rng.integers(1, 5))
        data = random_chain_data(n=3, T_range=(1, 5), K=K, F=3, seed=trial)
        model = ChainModel(data)
        w = rng.normal(size=model.d)
        for i in range(data.n):
            x = data.dense_features(i)
            ygt = model.ground_truth(i)
            yb, vb = ref.brute_force_decode(x, ygt, w, K, loss_augmented=loss_augmented)
            y, v = max_oracle(model, i, w, loss_augmented=loss_augmented)
            assert v == pytest.approx(vb, abs=1e-10)
            # the labelling we return attains the maximum
            val = ref.score(x, y, w, K) + (ref.hamming(ygt, y) if loss_augmented else 0.0)
            assert val == pytest.approx(vb, abs=1e-10)


def test_score_identity_and_feature_map():
    """ψ matches the independent reference layout; check_model does the rest (scores, statistics,
    Viterbi and decoding against ψ and the loss, every labelling of these short chains)."""
    from gaplab.core.models import check_model
    data = random_chain_data(n=4, T_range=(1, 6), K=4, F=5, seed=3)
    model = ChainModel(data)
    rng = np.random.default_rng(1)
    for i in range(data.n):
        y = rng.integers(0, 4, size=model.label_len(i))
        assert np.allclose(model.joint_feature(i, y), ref.joint_feature(data.dense_features(i), y, 4))
    check_model(model, blocks=4, labellings=10, enumerate_up_to=4 ** 6, seed=1)


def _w_from_mu(solver):
    """w recomputed from the block statistics: (1/λn) Σ_i (ψ(y_i) − B_i μ_i), via dense ψ."""
    model, S = solver.model, solver.S
    M = model.arrays
    n, lam = model.n, solver.lam
    w = np.zeros(model.d)
    for i in range(n):
        so, se = M.stat_off[i], M.stat_off[i + 1]
        mu = S.mu[so:se]
        T, K = model.label_len(i), model.K
        X = np.hstack([model.data.dense_features(i), np.ones((T, 1))])
        U = mu[: T * K].reshape(T, K)
        Bm = np.concatenate([(X.T @ U).ravel(), U[0], U[-1], mu[T * K:]])
        w += model.joint_feature(i, model.ground_truth(i)) - Bm
    return w / (lam * n)


@pytest.mark.parametrize("sampling", ["uniform", "permutation", "gap", "maxgap"])
def test_dual_monotone_and_gap_identity(sampling):
    data = random_chain_data(n=8, T_range=(1, 4), K=3, F=4, seed=7)
    s = Solver(ChainModel(data), lam=0.05, sampling=sampling, max_passes=50, gap_check=3)
    D = s.dual_objective()
    for _ in range(200):
        s.step()
        D2 = s.dual_objective()
        assert D2 >= D - 1e-12
        D = D2
    ex = s.exact_gap()
    assert ex.gap >= 0
    assert ex.primal >= ex.dual
    assert ex.primal - ex.dual == pytest.approx(ex.gap, rel=1e-9, abs=1e-14)
    assert np.allclose(s.w, _w_from_mu(s), atol=1e-10)
    # the primal agrees with an independent computation
    assert ex.primal == pytest.approx(ref.primal_objective(data, s.w, 0.05), rel=1e-10)
    # block gaps are non-negative and sum to the gap
    assert np.all(ex.block_gaps >= -1e-12)
    assert ex.block_gaps.sum() == pytest.approx(ex.gap, rel=1e-12)


def test_converges_to_independent_qp_optimum():
    data = random_chain_data(n=4, T_range=(1, 3), K=2, F=3, seed=11)
    lam = 0.1
    _, w_star, primal_star, dual_star, gap_star = ref.solve_dual_qp(data, lam)
    assert gap_star < 1e-8
    s = Solver(ChainModel(data), lam=lam, sampling="gap", gap_threshold=1e-4, gap_check=1, max_passes=5000)
    r = s.run()
    assert r.exact_gap <= 1e-4
    assert r.primal >= primal_star - 1e-9
    assert r.primal - primal_star <= r.exact_gap + 1e-9
    assert dual_star - r.dual <= r.exact_gap + 1e-9


def _trace_key(trace):
    return [(r["kind"], r["iteration"], r["oracle_calls"], r["heuristic_gap"], r["exact_gap"], r["dual"]) for r in trace]


@pytest.mark.parametrize("sampling", ["uniform", "permutation", "gap", "maxgap"])
def test_same_seed_same_trace_and_steps_equal_passes(sampling):
    data = random_chain_data(n=7, T_range=(1, 4), K=3, F=3, seed=5)
    model = ChainModel(data)
    cfg = SolverConfig(lam=0.02, sampling=sampling, gap_check=2, max_passes=10, seed=42)
    a = Solver(model, cfg)
    ra = a.run(final_gap_check=False)
    b = Solver(model, cfg)
    rb = b.run(final_gap_check=False)
    c = Solver(model, cfg)
    while c.effective_passes < 10:
        c.step()
    assert _trace_key(ra.trace) == _trace_key(rb.trace)
    assert _trace_key(ra.trace) == _trace_key(c.trace())
    assert np.array_equal(a.w, c.w)
    d = Solver(model, cfg.replace(seed=43))
    d.run(final_gap_check=False)
    if sampling != "maxgap":
        assert not np.array_equal(a.w, d.w)


def test_gap_sampler_frequencies_follow_gap_power():
    data = random_chain_data(n=6, T_range=(1, 2), K=2, F=2, seed=2)
    for p in (1.0, 2.0):
        s = Solver(ChainModel(data), lam=0.1, sampling="gap", gap_power=p, max_passes=10)
        g = np.array([0.1, 0.2, 0.0, 0.4, 0.05, 0.25])
        S = s.S
        S.gap_est[:] = g
        S.gap_iter[:] = 0
        S.counters[kr.C_UNVISITED] = 0
        S.unv_pos[:] = -1
        kr.tree_rebuild(S, s._cf, s.n)
        draws = 60000
        counts = np.zeros(6)
        for _ in range(draws):
            counts[kr.sample_block(s._M, S, s._ci, s._cf)] += 1
        expect = g ** p / np.sum(g ** p)
        assert np.allclose(counts / draws, expect, atol=0.01)
        assert np.allclose(s.sampling_probabilities(), expect)
        assert counts[2] == 0


def test_gap_sampling_visits_every_block_first():
    data = random_chain_data(n=9, T_range=(1, 3), K=2, F=2, seed=4)
    s = Solver(ChainModel(data), lam=0.1, sampling="gap", max_passes=10)
    s.steps(9)
    assert sorted(r.block for r in s.last_steps(9)) == list(range(9))


@pytest.mark.parametrize("bad,match", [
    (dict(lam=0.0), "lam"), (dict(lam=-1.0), "lam"), (dict(lam=math.nan), "lam"),
    (dict(gap_check=0), "gap_check"), (dict(gap_check=0.5), "gap_check"),
    (dict(gap_power=0.0), "gap_power"), (dict(gap_power=-2.0), "gap_power"),
    (dict(sampling="sometimes"), "sampling"), (dict(step="sideways"), "step"),
    (dict(max_passes=0), "max_passes"), (dict(seed=-1), "seed"),
])
def test_bad_config_raises_naming_argument(bad, match):
    with pytest.raises(ValueError, match=match):
        SolverConfig(**bad)
    data = random_chain_data(n=2, seed=0)
    with pytest.raises(ValueError, match=match):
        Solver(ChainModel(data), **bad)


def test_bad_cache_config():
    for kw, match in [(dict(factor=0), "F"), (dict(nu=-1), "nu"), (dict(size=0), "size")]:
        with pytest.raises(ValueError, match=match):
            CacheConfig(**kw)


def test_bad_data_raises():
    x = np.ones((3, 2))
    with pytest.raises(ValueError, match="NaN"):
        SequenceData.from_dense([np.array([[np.nan, 1.0]])], [[0]], ["a", "b"])
    with pytest.raises(ValueError, match="labels"):
        SequenceData.from_dense([x], [[0, 1, 5]], ["a", "b"])
    with pytest.raises(ValueError, match="empty"):
        SequenceData.from_dense([np.zeros((0, 2))], [[]], ["a", "b"])
    with pytest.raises(ValueError, match="labels"):
        SequenceData.from_dense([x], [[0, -1, 1]], ["a", "b"])


def test_bad_bounds_raise_and_leave_nothing():
    data = random_chain_data(n=2, seed=0)
    m = ChainModel(data)
    with pytest.raises(ValueError, match="lb <= ub"):
        Solver(m, lam=0.1, lb=np.ones(m.d), ub=np.zeros(m.d))
    with pytest.raises(ValueError, match="NaN"):
        Solver(m, lam=0.1, lb=np.full(m.d, np.nan))
    with pytest.raises(ValueError, match="shape"):
        Solver(m, lam=0.1, lb=np.zeros(3))


def test_failed_reconfiguration_keeps_solver_intact():
    data = random_chain_data(n=3, seed=0)
    s = Solver(ChainModel(data), lam=0.1, max_passes=5)
    s.steps(5)
    w = s.w
    with pytest.raises(ValueError):
        s.warm_start(-1.0)
    assert np.array_equal(w, s.w) and s.iteration == 5
