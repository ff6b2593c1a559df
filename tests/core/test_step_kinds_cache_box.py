"""Pairwise / away / combined steps with active sets, the oracle cache, box
constraints and the batch FW step."""
import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

import reference_ssvm as ref
from conftest import random_chain_data
from solver_checks import atoms_w, check_invariants, check_log, gap_pass_outputs_by_chunking
from gaplab.core import CacheConfig, ChainModel, MulticlassModel, Solver
from gaplab.core import kernels as kr

KINDS = ["fw", "pairwise", "away", "combined"]


def _models():
    chain = ChainModel(random_chain_data(n=6, T_range=(1, 4), K=3, F=3, seed=21))
    rng = np.random.default_rng(3)
    feats = [rng.normal(size=(4, 5)) * (rng.random((4, 5)) < 0.7) for _ in range(5)]
    for f in feats:
        f[0] = 0
    mc = MulticlassModel(feats, [np.array([0.0, 1.0, 0.5, 1.0])] * 5, np.zeros(5, dtype=int))
    return [chain, mc]


@pytest.mark.parametrize("box", [False, True])
@pytest.mark.parametrize("cache", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_invariants_after_many_random_steps(kind, cache, box):
    for model in _models():
        lb = ub = None
        if box:
            rng = np.random.default_rng(0)
            lb = np.where(rng.random(model.d) < 0.5, -0.05, -np.inf)
            ub = np.where(rng.random(model.d) < 0.5, 0.05, np.inf)
        steps = 10_000
        s = Solver(model, lam=0.03, step=kind, sampling="gap", gap_check=3, cache=CacheConfig(enabled=cache, size=2),
                   track_active_set=True, lb=lb, ub=ub, log_size=steps, max_passes=1e9)
        D = s.dual_objective()
        for chunk in range(20):
            s.steps(steps // 20)
            D2 = s.dual_objective()
            assert D2 >= D - 1e-12  # the dual never decreases (gap passes do not change it)
            D = D2
        check_log(s, steps)
        check_invariants(s, lb, ub)
        ex = s.exact_gap(count=False)
        assert ex.gap >= -1e-12
        assert ex.primal - ex.dual == pytest.approx(ex.gap, abs=1e-10)


def test_invariants_on_ocr_subset_long_run(ocr_small):
    """Many steps on real data (where a single-atom away step once produced γ_max = inf)."""
    train, _ = ocr_small
    model = ChainModel(train.subset(range(120)))
    for kind in ["away", "combined", "pairwise"]:
        s = Solver(model, lam=0.1, step=kind, sampling="gap", cache={"enabled": True}, log_size=4096,
                   max_passes=1e9)
        for _ in range(10):
            s.steps(4096)
            check_log(s, 4096)
        check_invariants(s)
        ex = s.exact_gap(count=False)
        assert ex.primal - ex.dual == pytest.approx(ex.gap, abs=1e-10)


def _dual_along(solver, i, direction_atoms, gammas):
    """Independent dual objective D(α + γ d) for α from the atoms and d given as a dict
    labelling -> coefficient, via dense ψ (Paper: Eq. (3))."""
    m = solver.model
    n, lam = m.n, solver.lam
    base = atoms_w(solver) * lam * n  # = Σ α δψ
    ell = sum(a * loss for j in range(n) for _, a, loss in solver.atoms(j)) / n
    gt = m.joint_feature(i, m.ground_truth(i))
    out = []
    for g in gammas:
        v = base.copy()
        e = ell
        for y, c in direction_atoms:
            v += g * c * (gt - m.joint_feature(i, np.array(y)))
            e += g * c * m.loss(i, np.array(y)) / n
        w = v / (lam * n)
        out.append(e - 0.5 * lam * w @ w)
    return np.array(out)


@pytest.mark.parametrize("kind", ["fw", "pairwise", "away"])
def test_closed_form_gamma_equals_numeric_line_search(kind):
    model = ChainModel(random_chain_data(n=5, T_range=(2, 4), K=3, F=3, seed=8))
    s = Solver(model, lam=0.05, step=kind, sampling="uniform", track_active_set=True, max_passes=1e9)
    s.steps(40)
    checked = 0
    for _ in range(60):
        before = s.copy()
        rec = s.step()
        if rec.gamma <= 0 or rec.kind != kind:
            continue
        i = rec.block
        atoms = before.atoms(i)
        if rec.kind == "fw":
            d = [(tuple(rec.fw_corner), 1.0)] + [(tuple(y), -a) for y, a, _ in atoms if a > 0]
        elif rec.kind == "pairwise":
            d = [(tuple(rec.fw_corner), 1.0), (tuple(rec.away_corner), -1.0)]
        else:
            d = [(tuple(y), a) for y, a, _ in atoms if a > 0] + [(tuple(rec.away_corner), -1.0)]
        res = minimize_scalar(lambda g: -_dual_along(before, i, d, [g])[0], bounds=(0, rec.gamma_max),
                              method="bounded", options={"xatol": 1e-12})
        assert rec.gamma == pytest.approx(res.x, abs=1e-6 * max(1.0, rec.gamma_max))
        # and the dual really moved by the reported improvement
        D0, D1 = _dual_along(before, i, d, [0.0, rec.gamma])
        assert D1 - D0 == pytest.approx(rec.improvement, rel=1e-6, abs=1e-12)
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("kind", ["fw", "pairwise"])
def test_cache_that_never_hits_gives_the_trace_without_cache(kind):
    model = ChainModel(random_chain_data(n=10, T_range=(2, 5), K=3, F=4, seed=2))
    base = dict(lam=0.01, step=kind, sampling="gap", gap_check=2, max_passes=12, seed=5, track_active_set=True)
    a = Solver(model, **base).run()
    b = Solver(model, cache=CacheConfig(enabled=True, factor=1e300, nu=1e300), **base).run()
    assert b.cache_hits == 0
    keys = ["kind", "iteration", "oracle_calls", "heuristic_gap", "exact_gap", "dual"]
    assert [[r[k] for k in keys] for r in a.trace] == [[r[k] for k in keys] for r in b.trace]
    assert np.array_equal(a.w, b.w)


def test_plain_bcfw_and_never_hitting_cache_agree():
    """Plain BCFW (atoms not tracked) and BCFW with a cache that never hits give the same trace."""
    model = ChainModel(random_chain_data(n=10, T_range=(2, 5), K=3, F=4, seed=2))
    base = dict(lam=0.01, sampling="gap", gap_check=2, max_passes=8, seed=5)
    a = Solver(model, **base).run()
    b = Solver(model, cache=CacheConfig(enabled=True, factor=1e300, nu=1e300), **base).run()
    assert np.allclose(a.w, b.w, atol=1e-12)
    assert [r["oracle_calls"] for r in a.trace] == [r["oracle_calls"] for r in b.trace]


def test_cache_hit_rule_on_hand_made_numbers():
    rule = kr.cache_hit_rule
    # F·g_i dominates: 0.25·0.4 = 0.1 > 0.01/10·2 = 0.002
    assert rule(0.1, 0.4, True, 2.0, 0.25, 0.01, 10)
    assert not rule(0.0999, 0.4, True, 2.0, 0.25, 0.01, 10)
    # ν/n·g dominates: 0.5/4·2 = 0.25 > 0.25·0.4 = 0.1
    assert rule(0.25, 0.4, True, 2.0, 0.25, 0.5, 4)
    assert not rule(0.2499, 0.4, True, 2.0, 0.25, 0.5, 4)
    # never-visited block / no global gap yet: no hit
    assert not rule(10.0, np.inf, False, 2.0, 0.25, 0.01, 10)
    assert not rule(10.0, 0.1, True, np.inf, 0.25, 0.01, 10)


def test_cache_hits_happen_and_save_oracle_calls(ocr_small):
    train, _ = ocr_small
    model = ChainModel(train.subset(range(150)))
    s = Solver(model, lam=0.1, step="pairwise", sampling="gap", cache={"enabled": True}, max_passes=20)
    r = s.run()
    assert r.cache_hits > 0
    assert r.oracle_calls == r.steps - r.cache_hits + s.S.counters[kr.C_GAPPASS] * model.n
    assert r.effective_passes == pytest.approx(r.oracle_calls / model.n)


def test_eviction_never_drops_an_active_atom():
    model = ChainModel(random_chain_data(n=4, T_range=(3, 5), K=4, F=3, seed=9))
    s = Solver(model, lam=0.001, step="fw", cache=CacheConfig(enabled=True, size=1), sampling="uniform",
               track_active_set=True, max_passes=1e9)
    for _ in range(50):
        s.steps(20)
        check_invariants(s)  # Σα = 1 would break if an active atom were evicted
    # FW steps keep many active atoms: the pool holds them all, beyond the cache size
    assert s.active_set_sizes().max() > 1
    assert np.all(s.cache_sizes() >= s.active_set_sizes())


def _box_qp_optimum(data, lam, lb, ub):
    """Independent: min_w λ/2‖w‖² + (1/n)Σ_i ξ_i s.t. ξ_i >= L(y) − ⟨w, δψ_i(y)⟩ ∀y, lb <= w <= ub
    over all labellings (tiny problems), by SLSQP."""
    model = ChainModel(data)
    n, d, K = data.n, model.d, data.n_labels
    rows, losses, owner = [], [], []
    for i in range(n):
        x = data.dense_features(i)
        gt = model.ground_truth(i)
        pg = ref.joint_feature(x, gt, K)
        for y in ref.all_labelings(len(gt), K):
            rows.append(pg - ref.joint_feature(x, y, K))
            losses.append(ref.hamming(gt, y))
            owner.append(i)
    Dpsi, L, owner = np.array(rows), np.array(losses), np.array(owner)
    E = np.zeros((len(owner), n))
    E[np.arange(len(owner)), owner] = 1

    def f(z):
        w, xi = z[:d], z[d:]
        return 0.5 * lam * w @ w + xi.sum() / n

    def jac(z):
        return np.concatenate([lam * z[:d], np.full(n, 1.0 / n)])

    cons = {"type": "ineq", "fun": lambda z: z[d:] @ E.T + Dpsi @ z[:d] - L,
            "jac": lambda z: np.hstack([Dpsi, E])}
    bounds = [(None if np.isinf(a) else a, None if np.isinf(b) else b) for a, b in zip(lb, ub)] + [(0, None)] * n
    z0 = np.concatenate([np.clip(np.zeros(d), lb, ub), np.ones(n)])
    res = minimize(f, z0, jac=jac, constraints=[cons], bounds=bounds, method="SLSQP",
                   options={"ftol": 1e-14, "maxiter": 2000})
    assert res.success, res.message
    return res.fun, res.x[:d]


def test_box_constrained_problem_converges_to_independent_qp():
    data = random_chain_data(n=4, T_range=(1, 3), K=2, F=2, seed=13)
    lam = 0.05
    m = ChainModel(data)
    # unconstrained optimum, to pick bounds it violates
    free = Solver(m, lam=lam, gap_threshold=1e-9, gap_check=1, max_passes=1e5, step="pairwise").run()
    lb = np.full(m.d, -np.inf)
    ub = np.full(m.d, np.inf)
    j = int(np.argmax(np.abs(free.w)))
    if free.w[j] > 0:
        ub[j] = 0.3 * free.w[j]
    else:
        lb[j] = 0.3 * free.w[j]
    lb[np.argsort(free.w)[:2]] = np.maximum(lb[np.argsort(free.w)[:2]], -0.1)
    qp_val, qp_w = _box_qp_optimum(data, lam, lb, ub)
    s = Solver(m, lam=lam, lb=lb, ub=ub, gap_threshold=1e-7, gap_check=1, max_passes=2e5, step="pairwise")
    r = s.run()
    assert r.exact_gap <= 1e-7
    assert np.all(r.w >= lb) and np.all(r.w <= ub)
    assert r.primal == pytest.approx(ref.primal_objective(data, r.w, lam), rel=1e-12)
    # the App. H gap is a certificate: primal − optimum <= gap, and it converged to the QP optimum
    assert r.primal - qp_val <= r.exact_gap + 1e-7
    assert qp_val - r.primal <= 1e-7
    assert free.primal < qp_val - 1e-6  # the bound was active


def test_box_gap_equals_lagrange_gap():
    data = random_chain_data(n=6, T_range=(1, 4), K=3, F=3, seed=4)
    m = ChainModel(data)
    lb = np.zeros(m.d)  # positivity constraints, as for the paper's HorseSeg / LSP models
    s = Solver(m, lam=0.02, lb=lb, max_passes=1e9, step="combined")
    s.steps(500)
    ex = s.exact_gap(count=False)
    # independent Lagrange gap: primal at w = clip(v) minus the box dual (Paper: App. H)
    S = s.S
    v, w = S.v, S.w
    assert np.allclose(w, np.maximum(v, 0))
    primal = ref.primal_objective(data, w, 0.02)
    beta_l = np.maximum(lb - v, 0)  # ub = +inf: β_u = 0
    ell = S.ell.sum()
    dual = ell - 0.5 * 0.02 * w @ w + 0.02 * beta_l @ lb
    assert ex.primal == pytest.approx(primal, rel=1e-12)
    assert ex.gap == pytest.approx(primal - dual, abs=1e-12)
    assert ex.gap >= 0


@pytest.mark.slow
def test_bcpfw_gap_cache_reaches_bcfw_optimum(ocr_small):
    train, _ = ocr_small
    model = ChainModel(train)
    a = Solver(model, lam=0.1, step="pairwise", sampling="gap", cache={"enabled": True},
               gap_threshold=1e-3, max_passes=500).run()
    b = Solver(model, lam=0.1, step="fw", sampling="gap", gap_threshold=1e-3, max_passes=1500).run()
    assert a.exact_gap <= 1e-3 and b.exact_gap <= 1e-3
    assert abs(a.primal - b.primal) <= max(a.exact_gap, b.exact_gap)
    assert a.cache_hits > 0


def test_batch_step_keeps_invariants_and_counts():
    model = ChainModel(random_chain_data(n=8, T_range=(1, 4), K=3, F=3, seed=6))
    s = Solver(model, lam=0.05, step="pairwise", batch_step=True, gap_check=1, max_passes=10)
    D0 = s.dual_objective()
    r = s.run()
    assert r.step_counts["batch"] >= 1
    assert any(t["kind"] == "batch" for t in r.trace)
    check_invariants(s)
    assert s.dual_objective() >= D0


def test_batch_step_result_is_the_certified_point():
    """A run that converges at a gap check returns the point that gap certifies: no batch step
    after a gap check that met the threshold, and the reported gap is the gap of the returned w."""
    model = ChainModel(random_chain_data(n=8, T_range=(1, 4), K=3, F=3, seed=6))
    s = Solver(model, lam=0.05, step="fw", batch_step=True, gap_check=1, gap_threshold=1e-2, max_passes=500)
    r = s.run()
    assert r.status.name == "CONVERGED" and r.exact_gap <= 1e-2
    assert r.trace[-1]["kind"] == "gap_check"
    assert s.exact_gap(count=False).gap == pytest.approx(r.exact_gap, abs=1e-14)
    np.testing.assert_array_equal(r.w, s.w)


def test_warm_start_keeps_primal_or_dual():
    model = ChainModel(random_chain_data(n=6, T_range=(1, 4), K=3, F=3, seed=3))
    s = Solver(model, lam=0.1, step="pairwise", max_passes=20)
    s.run()
    p = s.warm_start(0.05, keep="primal")
    assert np.allclose(p.w, s.w)
    check_invariants(p)
    d = s.warm_start(0.05, keep="dual")
    assert np.allclose(d.w, 2 * s.w)
    check_invariants(d)
    assert p.iteration == 0 and p.oracle_calls == 0


def test_bad_box_and_cache_input():
    model = ChainModel(random_chain_data(n=3, seed=1))
    with pytest.raises(ValueError, match="cache factor F"):
        Solver(model, lam=0.1, cache={"enabled": True, "factor": 0})
    with pytest.raises(ValueError, match="nu"):
        Solver(model, lam=0.1, cache={"enabled": True, "nu": -0.1})
    with pytest.raises(ValueError, match="size"):
        Solver(model, lam=0.1, cache={"enabled": True, "size": 0})
    with pytest.raises(ValueError, match="lb <= ub"):
        Solver(model, lam=0.1, lb=np.zeros(model.d), ub=-np.ones(model.d))
    with pytest.raises(ValueError, match="NaN"):
        Solver(model, lam=0.1, ub=np.full(model.d, np.nan))
    with pytest.raises(ValueError, match="track_active_set"):
        Solver(model, lam=0.1, step="pairwise", track_active_set=False)


def test_label_space_pairwise_direction_matches_dense():
    """The pairwise step's label-space ‖B(m(s) − m(v))‖² equals the dense one, and its update of
    μ_i, v and w is bitwise the dense update (random labellings with repeated transitions, T = 1
    included, with and without a box)."""
    from numba import njit

    from gaplab.core import kernels as kr

    @njit
    def dense(M, i, ys, yv, gam, coef, mu, v, w, lb, ub, has_box, dl, zbuf):
        p = M.stat_off[i + 1] - M.stat_off[i]
        for q in range(p):
            dl[q] = 0.0
        kr.label_add(M, i, ys, 1.0, dl)
        kr.label_add(M, i, yv, -1.0, dl)
        qn = kr.block_sqnorm(M, i, dl, zbuf)
        for q in range(p):
            mu[q] += gam * dl[q]
        kr.block_axpy(M, i, coef, dl, v, w, lb, ub, has_box)
        return qn

    from gaplab.core.models.chain_pairwise import chain_pair_apply, chain_pair_sqnorm

    @njit
    def sparse(M, i, ys, yv, gam, coef, mu, v, w, lb, ub, has_box):
        pos = np.empty(max(ys.shape[0], 1), dtype=np.int64)
        qn = chain_pair_sqnorm(M, i, ys, yv, pos)
        chain_pair_apply(M, i, ys, yv, gam, mu, coef, v, w, lb, ub, has_box, pos)
        return qn

    rng = np.random.default_rng(0)
    model = ChainModel(random_chain_data(n=12, T_range=(1, 7), K=3, F=4, seed=2))
    M = model.arrays
    for trial in range(300):
        i = int(rng.integers(M.n))
        T = int(M.lab_off[i + 1] - M.lab_off[i])
        p = int(M.stat_off[i + 1] - M.stat_off[i])
        ys = rng.integers(0, M.K, T)
        yv = ys.copy() if trial % 7 == 0 else rng.integers(0, M.K, T)
        same = rng.random(T) < 0.4
        yv[same] = ys[same]  # positions where the corners agree
        has_box = bool(trial % 2)
        lb = np.full(M.d, -0.3) if has_box else np.zeros(0)
        ub = np.full(M.d, 0.2) if has_box else np.zeros(0)
        gam, coef = float(rng.random()), float(rng.normal())
        mu0, v0 = rng.normal(size=p), rng.normal(size=M.d)
        a = [mu0.copy(), v0.copy()]
        b = [mu0.copy(), v0.copy()]
        wa = np.clip(v0, lb, ub) if has_box else a[1]
        wb = np.clip(v0, lb, ub) if has_box else b[1]
        qa = dense(M, i, ys, yv, gam, coef, a[0], a[1], wa, lb, ub, has_box, np.zeros(p), np.zeros(M.d))
        qb = sparse(M, i, ys, yv, gam, coef, b[0], b[1], wb, lb, ub, has_box)
        assert qb == pytest.approx(qa, rel=1e-12, abs=1e-12)
        np.testing.assert_array_equal(b[0], a[0])
        np.testing.assert_array_equal(b[1], a[1])
        np.testing.assert_array_equal(wb, wa)


def _binary_chain(n=12, seed=2):
    data = random_chain_data(n=n, T_range=(1, 7), K=3, F=5, seed=seed)
    X = [(data.dense_features(i) != 0).astype(float) for i in range(data.n)]
    Y = [data.labels[data.seq_offsets[i]:data.seq_offsets[i + 1]] for i in range(data.n)]
    return ChainModel(type(data).from_dense(X, Y, [str(k) for k in range(3)], name="binary"))


def test_binary_feature_flag():
    """Binary features (every stored value 1.0, as OCR pixels) set ``feat_unit``; others do not."""
    assert _binary_chain().arrays.feat_unit == 1
    assert ChainModel(random_chain_data(n=6, seed=1)).arrays.feat_unit == 0


@pytest.mark.parametrize("step", ["pairwise", "combined"])
def test_binary_feature_path_gives_the_same_trace(step):
    """The cache-hit kernels skip the feature values when all are 1.0 (1.0·x is x exactly): a run on
    binary features with that path is bitwise the run with the general path (flag forced off)."""
    model = _binary_chain(n=15, seed=4)
    base = dict(lam=0.01, step=step, sampling="gap", cache={"enabled": True}, gap_check=2, max_passes=15,
                seed=1)
    a = Solver(model, **base)
    b = Solver(model, **base)
    b._M = b._M._replace(feat_unit=0)
    ra, rb = a.run(), b.run()
    assert ra.cache_hits > 20  # the hit path ran
    assert ra.cache_hits == rb.cache_hits
    np.testing.assert_array_equal(ra.w, rb.w)
    keys = ["kind", "iteration", "oracle_calls", "heuristic_gap", "exact_gap", "dual"]
    assert [[r[k] for k in keys] for r in ra.trace] == [[r[k] for k in keys] for r in rb.trace]


def test_exact_gap_pass_does_not_depend_on_threads_or_chunks(ocr_small):
    """The exact gap pass spreads the blocks over threads: any chunking, and one thread or all,
    gives bitwise the same block gaps, hinge terms and deltas, and sums in block order."""
    import numba

    train, _ = ocr_small
    model = ChainModel(train.subset(range(200)))
    s = Solver(model, lam=0.01, step="pairwise", sampling="gap", cache={"enabled": True}, max_passes=3, seed=0)
    s.run()
    M, S = s._M, s.S
    first = gap_pass_outputs_by_chunking(s, (1, 7, 64, M.n))
    g = first[0]
    assert all(g >= -1e-12)
    # one block by hand: g_i = max oracle value − ⟨μ_i, h_i⟩ over n
    assert g[5] == pytest.approx(s.block_gap_now(5), rel=1e-12, abs=1e-15)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = s.exact_gap(count=False)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = s.exact_gap(count=False)
    finally:
        numba.set_num_threads(before)
    in_block_order = 0.0
    for x in g:
        in_block_order += float(x)
    assert one.gap == many.gap == in_block_order
    np.testing.assert_array_equal(one.block_deltas, many.block_deltas)
    assert one.primal == many.primal
