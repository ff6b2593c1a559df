"""The regularization path (Paper: Sec. 4, Proposition 1; App. D, Alg. 6-7; App. K) and grid
search with warm starts.

The certificates are checked independently: primal objectives by the reference implementation
(tests/reference_ssvm.py, plain numpy Viterbi), dual objectives from the path's dual points
(atoms snapshotted at every breakpoint, rescaled by Proposition 1 in this file) by the reference.
"""
import math

import numpy as np
import pytest

import reference_ssvm as ref
from conftest import random_chain_data
from gaplab.core import ChainModel, SolverConfig, Solver
from gaplab.core.regpath import (
    PathConfig, RegPath, block_deltas, default_grid, grid_search, init_reg_path, iter_grid, iter_path,
    prop1_warm_start, regularization_path,
)

PAIRWISE = SolverConfig(step="pairwise", sampling="gap")


@pytest.fixture(scope="module")
def tiny():
    data = random_chain_data(n=12, T_range=(1, 4), K=3, F=4, seed=3)
    return data, ChainModel(data)


@pytest.fixture(scope="module")
def ocr60(ocr_small_module):
    train, test = ocr_small_module
    sub = train.subset(range(60))
    return sub, test.subset(range(100)), ChainModel(sub)


@pytest.fixture(scope="module")
def ocr_small_module():
    from gaplab.core.datasets.ocr import load_ocr
    return load_ocr("small")


def atoms_of(solver):
    """(alphas, labelings) of every block, from the solver's atoms."""
    alphas, labs = [], []
    for i in range(solver.n):
        at = solver.atoms(i)
        alphas.append(np.array([a for _, a, _ in at]))
        labs.append([np.array(y) for y, _, _ in at])
    return alphas, labs


def rescale_prop1(alphas, labs, data, rho):
    """Proposition 1, written here independently: α(y) ← ρα(y) for y ≠ y_i, the rest on y_i."""
    out_a, out_l = [], []
    for i, (a, ls) in enumerate(zip(alphas, labs)):
        gt = data.labels[data.tokens(i)]
        a2, l2, rest = [], [], 1.0
        for ai, y in zip(a, ls):
            if np.array_equal(y, gt):
                continue
            a2.append(rho * ai)
            l2.append(y)
            rest -= rho * ai
        a2.append(rest)
        l2.append(gt.copy())
        out_a.append(np.array(a2))
        out_l.append(l2)
    return out_a, out_l


def ref_delta(data, alphas, labs, w):
    """Δ = (1/n) Σ_i Σ_y α_i(y) H_i(y; w), H_i(y; w) = L_i(y) − ⟨w, ψ(x_i, y_i) − ψ(x_i, y)⟩."""
    K = data.n_labels
    tot = 0.0
    for i, (a, ls) in enumerate(zip(alphas, labs)):
        x = data.dense_features(i)
        gt = data.labels[data.tokens(i)]
        for ai, y in zip(a, ls):
            tot += ai * (ref.hamming(gt, y) - w @ (ref.joint_feature(x, gt, K) - ref.joint_feature(x, y, K)))
    return tot / data.n


# ---------------------------------------------------------------------------- Alg. 6
def test_init_matches_alg6(tiny):
    data, model = tiny
    eps, kappa = 0.1, 0.9
    init = init_reg_path(model, eps, kappa)
    K, n = data.n_labels, data.n
    psi = np.zeros(model.d)
    theta = np.zeros(n)
    for i in range(n):
        x, gt = data.dense_features(i), data.labels[data.tokens(i)]
        yt = init.y_tilde[i]
        assert ref.hamming(gt, yt) == pytest.approx(1.0)  # argmax of the loss (w = 0)
        psi += (ref.joint_feature(x, gt, K) - ref.joint_feature(x, yt, K)) / n
    for i in range(n):
        x, gt = data.dense_features(i), data.labels[data.tokens(i)]
        _, best = ref.brute_force_decode(x, gt, psi, K, loss_augmented=False)
        theta[i] = best - ref.score(x, gt, psi, K)
    np.testing.assert_allclose(init.psi_tilde, psi, atol=1e-12)
    np.testing.assert_allclose(init.theta, theta, atol=1e-10)
    assert init.lam_inf == pytest.approx((psi @ psi + theta.mean()) / (kappa * eps), rel=1e-12)
    assert init.block_bounds.sum() == pytest.approx(kappa * eps, rel=1e-10)
    np.testing.assert_allclose(init.w_inf, psi / init.lam_inf)


def test_above_lam_inf_is_eps_approximate(tiny):
    """λ >= λ_∞: w = (λ_∞/λ)·w_∞ with the dual point α_∞ has gap <= κε·λ_∞/λ <= ε."""
    data, model = tiny
    eps, kappa = 0.1, 0.9
    path = regularization_path(model, eps=eps, kappa=kappa, lam_min=1.0, solver_config=PAIRWISE)
    init = init_reg_path(model, eps, kappa)
    lam_inf = path.lam_inf
    assert lam_inf == pytest.approx(init.lam_inf)
    alphas = [np.array([1.0])] * data.n
    labs = [[y] for y in init.y_tilde]
    for lam in lam_inf * np.array([1.0, 1.3, 2.0, 10.0, 1e3]):
        w = path.w_at(lam)
        np.testing.assert_allclose(w, (lam_inf / lam) * path.W[0], rtol=1e-12)
        np.testing.assert_allclose(w, ref.w_from_alpha(data, alphas, labs, lam), atol=1e-12)
        gap = ref.primal_objective(data, w, lam) - ref.dual_objective_from_alpha(data, alphas, labs, lam)
        assert gap <= kappa * eps * lam_inf / lam + 1e-12
        assert gap <= eps
        # and the solver agrees (exact gap of α_∞ at λ)
        s = Solver(model, lam=lam, step="fw", track_active_set=False)
        s.set_vertices(init.y_tilde)
        np.testing.assert_allclose(s.w, w, atol=1e-12)
        assert s.exact_gap(count=False).gap == pytest.approx(gap, abs=1e-10)
        assert path.gap_at(lam) == pytest.approx(kappa * eps * lam_inf / lam)


# ---------------------------------------------------------------------------- Proposition 1
@pytest.mark.parametrize("step", ["fw", "pairwise"])
def test_proposition1_gap_identity(tiny, step):
    """After the rescaling, g(α, λ_new) = g(α_old, λ_old) + (1 − ρ)Δ and w is unchanged."""
    data, model = tiny
    lam = 0.3
    s = Solver(model, lam=lam, step=step, sampling="uniform", track_active_set=True, max_passes=3.0)
    s.run(final_gap_check=False)
    old = s.exact_gap(count=False)
    alphas, labs = atoms_of(s)
    delta = ref_delta(data, alphas, labs, s.w)
    assert block_deltas(s).sum() == pytest.approx(delta, abs=1e-12)
    ell = old.dual + 0.5 * lam * s.w @ s.w
    assert delta == pytest.approx(ell - lam * s.w @ s.w, abs=1e-12)
    for rho in (0.999, 0.9, 0.5, 0.1, 1e-3):
        new = s.warm_start(rho * lam, keep="primal")
        g_new = new.exact_gap(count=False).gap
        assert abs(g_new - (old.gap + (1 - rho) * delta)) <= 1e-9
        np.testing.assert_array_equal(new.w, s.w)
        np.testing.assert_allclose(new.S.ell, rho * s.S.ell, rtol=1e-14, atol=0)  # ℓ_i ← ρℓ_i
        # the dual variables are those of Proposition 1 (checked by the reference dual)
        a2, l2 = rescale_prop1(alphas, labs, data, rho)
        na, nl = atoms_of(new)
        assert ref.dual_objective_from_alpha(data, na, nl, rho * lam) == pytest.approx(
            ref.dual_objective_from_alpha(data, a2, l2, rho * lam), abs=1e-12)


@pytest.mark.parametrize("cache", [False, True])
def test_repeated_primal_warm_starts_keep_atoms_consistent(tiny, cache):
    """Regression (core fix in Solver.warm_start): the ground-truth atom inserted by the
    rescaling used to fill the last slot of a pool (or overflow the label hash to int64), after
    which the atoms lost mass and no longer matched w."""
    from gaplab.core import CacheConfig
    data, model = tiny
    s = Solver(model, lam=1.0, step="pairwise", sampling="gap", cache=CacheConfig(enabled=cache, size=2),
               max_passes=2.0)
    for k in range(25):
        s.run(final_gap_check=False)
        s = s.warm_start(s.lam * 0.8, keep="primal")
        alphas, labs = atoms_of(s)
        assert all(abs(a.sum() - 1) < 1e-9 and a.min() >= 0 for a in alphas)
        np.testing.assert_allclose(ref.w_from_alpha(data, alphas, labs, s.lam), s.w, atol=1e-9)


def test_prop1_warm_start_moves_gap_estimates(tiny):
    """Alg. 7 line 15: exact block gaps g_i at λ_old become g_i + (1 − ρ)δ_i at λ_new."""
    data, model = tiny
    s = Solver(model, lam=0.3, step="pairwise", max_passes=3.0)
    s.run(final_gap_check=False)
    ex = s.exact_gap(count=True)  # estimates exact
    deltas = block_deltas(s)
    new = prop1_warm_start(s, 0.2, gap=ex.gap)
    truth = new.copy().exact_gap(count=True)
    np.testing.assert_allclose(new.gap_estimates, truth.block_gaps, atol=1e-12)
    np.testing.assert_allclose(ex.block_gaps + (1 - 0.2 / 0.3) * deltas, truth.block_gaps, atol=1e-12)
    np.testing.assert_array_equal(s.gap_estimates, ex.block_gaps)  # the old solver is untouched



def test_exact_pass_block_deltas_match_and_expire(tiny):
    """The δ_i an exact gap pass returns (free, from its scores) equal the separately computed
    ones and the reference Δ; after a block step or a batch step the pass is no longer fresh."""
    data, model = tiny
    s = Solver(model, lam=0.3, step="pairwise", sampling="gap", max_passes=2.0)
    s.run(final_gap_check=False)
    assert s.fresh_exact_gap is None or s.fresh_exact_gap.block_deltas.shape == (s.n,)
    s.steps(3)
    assert s.fresh_exact_gap is None
    computed = block_deltas(s)  # no fresh pass: the separate kernel
    ex = s.exact_gap(count=True, store_corners=True)
    assert s.fresh_exact_gap is ex
    np.testing.assert_allclose(ex.block_deltas, computed, rtol=1e-12, atol=1e-15)
    alphas, labs = atoms_of(s)
    assert ex.block_deltas.sum() == pytest.approx(ref_delta(data, alphas, labs, s.w), abs=1e-12)
    s.batch_step(ex.gap)
    assert s.fresh_exact_gap is None
    assert s.exact_gap(count=False).block_deltas == pytest.approx(block_deltas(s), abs=1e-15)

# ---------------------------------------------------------------------------- the ε-approximate path
def _path_with_atoms(model, **kw):
    snaps = []
    pts = []
    for p in iter_path(model, solver_config=PAIRWISE, keep_solver=True, **kw):
        snaps.append(atoms_of(p.solver))
        pts.append(p)
    path = RegPath("eps", {}, pts)
    return path, snaps


def _ref_gap(data, path, snaps, lam):
    """Independent duality gap at λ of the path: reference primal of w_at(λ), reference dual of
    the breakpoint's atoms rescaled by Proposition 1 (kept as they are above λ_∞)."""
    j, scale = path.piece_at(lam)
    w = path.w_at(lam)
    alphas, labs = snaps[j]
    if not (j == 0 and lam >= path.lams[0]):
        alphas, labs = rescale_prop1(alphas, labs, data, lam / path.lams[j])
    np.testing.assert_allclose(ref.w_from_alpha(data, alphas, labs, lam), w, atol=1e-9 * max(1, np.abs(w).max()))
    return ref.primal_objective(data, w, lam) - ref.dual_objective_from_alpha(data, alphas, labs, lam)


def test_eps_path_certified_at_random_lambdas(tiny):
    data, model = tiny
    eps, lam_min = 0.1, 0.05
    path, snaps = _path_with_atoms(model, eps=eps, kappa=0.9, lam_min=lam_min)
    assert path.end_reason == "lam_min" and path.lam_end < lam_min
    assert len(path) > 20
    gaps = path.column("gap")
    assert np.all(gaps[1:] <= 0.9 * eps + 1e-12)  # every solved breakpoint is κε-approximate
    rng = np.random.default_rng(0)
    hi = 10 * path.lam_inf
    lams = np.concatenate([np.exp(rng.uniform(np.log(lam_min), np.log(hi), 40)), rng.uniform(lam_min, hi, 10),
                           path.lams[1:6], path.column("next_lam")[:5], [lam_min]])
    worst = 0.0
    for lam in lams:
        g = _ref_gap(data, path, snaps, lam)
        assert g <= eps, (lam, g)
        if path.piece_at(lam)[0] == 0:  # λ_∞'s piece: Alg. 6's bound replaces the exact gap
            assert path.gap_at(lam) >= g - 1e-12
        else:  # Proposition 1's prediction from an exact gap is exact
            assert path.gap_at(lam) == pytest.approx(g, abs=1e-9)
        worst = max(worst, g)
    assert worst > 0.5 * eps  # the certificate is not vacuous: breakpoints are spaced to reach ε
    # the path's own (gaplab) batch check agrees with the reference
    for lam in lams[:5]:
        gap, primal, dual = path.duality_gap(model, lam)
        assert gap == pytest.approx(_ref_gap(data, path, snaps, lam), abs=1e-9)
    with pytest.raises(ValueError, match="below the end"):
        path.w_at(path.lam_end * 0.5)


def test_rho_nonpositive_ends_path_cleanly(ocr60):
    data, _, model = ocr60
    eps = 0.1
    pts = list(iter_path(model, eps=eps, kappa=0.9, lam_min=1e-9, solver_config=PAIRWISE))
    last = pts[-1]
    assert last.end == "rho<=0" and last.next_lam == 0.0
    assert all(p.end == "" for p in pts[:-1])
    assert last.gap + last.delta <= eps  # Δ <= τ: every λ < λ_J is covered by w_J
    path = RegPath("eps", {}, pts)
    assert path.lam_end == 0.0 and path.end_reason == "rho<=0"
    for lam in (last.lam, last.lam / 3, 1e-6, 1e-12):
        np.testing.assert_array_equal(path.w_at(lam), pts[-1].w)
        assert path.gap_at(lam) <= eps
    # an independent primal for λ below the last breakpoint (dual: Proposition 1 bound via ℓ)
    lam = last.lam / 10
    w = path.w_at(lam)
    dual = (lam / last.lam) * last.ell - 0.5 * lam * w @ w
    assert ref.primal_objective(data, w, lam) - dual <= eps


def test_unconverged_breakpoint_ends_path(tiny):
    """A breakpoint whose solver misses ε within its budget ends the path; the previous piece
    still covers down to that breakpoint's λ."""
    _, model = tiny
    path = regularization_path(model, eps=0.05, kappa=0.9, lam_min=1e-3, max_passes_per_breakpoint=1.0)
    cert = path.column("certified")
    assert path.end_reason == "not_converged" and not cert[-1] and cert[:-1].all()
    assert path.column("gap")[-1] > 0.05 and math.isnan(path.column("next_lam")[-1])
    assert path.lam_end == path.lams[-1]
    np.testing.assert_array_equal(path.w_at(path.lams[-1]), path.W[-2])
    with pytest.raises(ValueError):
        path.w_at(0.99 * path.lams[-1])


def test_heuristic_path(ocr60):
    _, test, model = ocr60
    path = regularization_path(model, eps=0.1, kappa=0.7, heuristic=True, lam_min=1e-3, true_gaps=True,
                               test_data=test)
    assert path.kind == "heuristic"
    st = path.column("status")[1:]
    assert np.all((st == "converged_heuristic") | (st == "converged"))
    assert np.all(path.column("gap")[1:] <= 0.07 + 1e-12)  # stale sums at the breakpoints
    assert np.all(np.isfinite(path.column("exact_gap")))  # uncounted true gaps (Fig. 7, bottom)
    assert np.all(np.isfinite(path.column("test_error")))
    eps_path = regularization_path(model, eps=0.1, kappa=0.7, lam_min=1e-3)
    assert path.total_passes < eps_path.total_passes  # no exact gap pass at the breakpoints


def test_solver_variants_inside(ocr60):
    """Any solver variant can run at the breakpoints (cache, away steps, uniform sampling)."""
    _, _, model = ocr60
    from gaplab.core import CacheConfig
    for cfg in (SolverConfig(step="pairwise", sampling="gap", cache=CacheConfig(enabled=True)),
                SolverConfig(step="away", sampling="uniform"),
                SolverConfig(step="fw", sampling="permutation")):
        path = regularization_path(model, solver_config=cfg, eps=0.2, kappa=0.9, lam_min=1.0)
        assert path.end_reason in ("lam_min", "rho<=0")
        assert np.all(path.column("gap")[1:] <= 0.18 + 1e-12)


def test_check_factor_delays_the_exact_check(ocr60, monkeypatch):
    """The counted exact gap pass of a breakpoint runs only once the stale gap sum is
    <= check_factor·κε (the authors' 0.8 multiplier); with the factor 1 it runs earlier."""
    _, _, model = ocr60
    orig = Solver.exact_gap
    target = 0.9 * 0.1
    stale_at_check = {}
    for factor in (1.0, 0.5):
        calls = stale_at_check[factor] = []

        def spy(self, *, count=True, store_corners=False, _calls=calls):
            if count and store_corners:  # the path's convergence checks (periodic checks store no corners)
                _calls.append(self.heuristic_gap)
            return orig(self, count=count, store_corners=store_corners)

        monkeypatch.setattr(Solver, "exact_gap", spy)
        path = regularization_path(model, solver_config=SolverConfig(sampling="gap"), eps=0.1, kappa=0.9,
                                   lam_min=1e-3, check_factor=factor)
        monkeypatch.setattr(Solver, "exact_gap", orig)
        assert path.end_reason == "rho<=0" and path.column("certified").all()
        assert len(calls) > 10
    assert max(stale_at_check[0.5]) <= 0.5 * target
    assert max(stale_at_check[1.0]) > 0.5 * target  # the factor changes when the check runs


def test_batch_step_variant(ocr60):
    _, _, model = ocr60
    a = regularization_path(model, eps=0.1, kappa=0.9, lam_min=1.0)
    b = regularization_path(model, eps=0.1, kappa=0.9, lam_min=1.0, batch_step=True)
    assert np.all(b.column("gap")[1:] <= 0.09 + 1e-12)
    assert b.lam_end < 1.0 and a.lam_end < 1.0


def test_generator_is_incremental_and_stoppable(ocr60):
    _, _, model = ocr60
    gen = iter_path(model, eps=0.1, lam_min=1e-3)
    first = next(gen)
    assert first.index == 0 and first.status == "init" and first.passes == 2.0
    second = next(gen)
    assert second.lam == pytest.approx(first.next_lam) and second.rho < 1
    gen.close()
    calls = {"n": 0}

    def stop():
        calls["n"] += 1
        return calls["n"] > 3

    path = regularization_path(model, eps=0.1, lam_min=1e-3, should_stop=stop)
    assert path.end_reason == "stopped" and 1 <= len(path) < 10
    assert path.lam_end == path.column("next_lam")[-1]  # the last computed piece is still valid
    tl = regularization_path(model, eps=0.1, lam_min=1e-3, time_limit=1e-3)
    assert tl.end_reason == "time_limit"
    path = regularization_path(model, eps=0.1, lam_min=1e-3, callback=lambda p: p.index >= 2)
    assert len(path) == 3 and path.end_reason == "stopped"


def test_save_load_roundtrip(tmp_path, ocr60):
    _, test, model = ocr60
    path = regularization_path(model, eps=0.1, lam_min=0.1, test_data=test, meta={"dataset": "ocr60"})
    f = tmp_path / "path.npz"
    path.save(f)
    with np.load(f, allow_pickle=False) as z:
        assert z["W"].shape == (len(path), model.d)
    back = RegPath.load(f)
    assert back.kind == "eps" and back.meta["dataset"] == "ocr60" and len(back) == len(path)
    np.testing.assert_array_equal(back.W, path.W)
    np.testing.assert_array_equal(back.lams, path.lams)
    for c in ("gap", "passes", "cum_time_s", "test_error", "next_lam", "status", "certified", "end"):
        np.testing.assert_array_equal(back.column(c), path.column(c))
    for lam in (path.lam_inf * 3, path.lams[3] * 0.99, 0.1):
        np.testing.assert_array_equal(back.w_at(lam), path.w_at(lam))
    assert back.end_reason == path.end_reason and back.lam_end == path.lam_end
    snap = path.snapshot()
    assert len(snap) == len(path) and snap.W.shape == path.W.shape and snap.lam_end == path.lam_end
    assert back.best().test_error == np.nanmin(path.column("test_error"))
    g = grid_search(model, [1.0, 0.5], eps=0.1)
    g.save(tmp_path / "grid.npz")
    g2 = RegPath.load(tmp_path / "grid.npz")
    np.testing.assert_array_equal(g2.w_at(0.5), g.W[1])
    with pytest.raises(ValueError):
        g2.w_at(0.7)


# ---------------------------------------------------------------------------- grid search
def test_grid_search_warm_start_saves_passes_on_ocr_small(ocr_small_module):
    train, _ = ocr_small_module
    model = ChainModel(train)
    lams = default_grid(8, -4)   # the small λ below 2^-4 add time, not a different outcome
    cold = grid_search(model, lams, eps=0.1, warm_start="none")
    warm = grid_search(model, lams, eps=0.1, warm_start="primal")
    dual = grid_search(model, lams, eps=0.1, warm_start="dual")
    print(f"\nOCR-small grid 2^8..2^-4, eps=0.1: effective passes  none={cold.total_passes:.0f}  "
          f"keep-primal={warm.total_passes:.0f}  keep-dual={dual.total_passes:.0f}")
    for g in (cold, warm, dual):
        assert len(g) == lams.size and g.end_reason == "done"
        assert np.all(g.column("gap") <= 0.1) and g.column("certified").all()
    assert warm.total_passes <= cold.total_passes


def test_grid_points_are_eps_approximate(tiny):
    data, model = tiny
    lams = default_grid(3, -3)
    for mode in ("none", "primal", "dual"):
        g = grid_search(model, lams, eps=0.05, warm_start=mode)
        for j, lam in enumerate(lams):
            assert ref.primal_objective(data, g.W[j], lam) - g.column("dual")[j] <= 0.05 + 1e-12


def test_default_grid():
    g = default_grid()
    assert g.size == 31 and g[0] == 2.0 ** 15 and g[-1] == 2.0 ** -15 and np.all(np.diff(g) < 0)


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kw", [dict(eps=0), dict(eps=-0.1), dict(eps=math.nan), dict(eps=math.inf),
                                dict(kappa=0), dict(kappa=1), dict(kappa=1.5), dict(kappa=-0.2),
                                dict(kappa=math.nan), dict(lam_min=0), dict(lam_min=-1.0),
                                dict(lam_min=math.nan), dict(max_passes_per_breakpoint=0),
                                dict(time_limit=0), dict(check_every=0), dict(max_breakpoints=0),
                                dict(check_factor=0), dict(check_factor=1.5), dict(check_factor=math.nan),
                                dict(check_factor="0.8")])
def test_bad_path_input(tiny, kw):
    _, model = tiny
    with pytest.raises(ValueError):
        PathConfig(**kw)
    with pytest.raises(ValueError):
        iter_path(model, **kw)  # validated eagerly, before the first breakpoint
    with pytest.raises(ValueError):
        regularization_path(model, **kw)


@pytest.mark.parametrize("lams", [[], [1.0, 1.0], [1.0, 2.0], [0.5, 1.0, 0.25], [1.0, 0.0], [1.0, -1.0],
                                  [math.inf, 1.0], [1.0, math.nan], "abc"])
def test_bad_grid(tiny, lams):
    _, model = tiny
    with pytest.raises(ValueError):
        iter_grid(model, lams)
    with pytest.raises(ValueError):
        grid_search(model, lams)


def test_bad_grid_options(tiny):
    _, model = tiny
    with pytest.raises(ValueError, match="warm_start"):
        iter_grid(model, [1.0], warm_start="sideways")
    with pytest.raises(ValueError):
        iter_grid(model, [1.0], eps=0)
    with pytest.raises(ValueError, match="check_factor"):
        iter_grid(model, [1.0], check_factor=0)
    with pytest.raises(ValueError):
        init_reg_path(model, eps=-1)
    with pytest.raises(ValueError):
        init_reg_path(model, eps=0.1, kappa=1.0)
    path = regularization_path(model, eps=0.1, lam_min=1.0)
    with pytest.raises(ValueError):
        path.w_at(0)
    with pytest.raises(ValueError):
        path.w_at(-1.0)


# ---------------------------------------------------------------------------- CLI
def test_cli_path_and_grid(tmp_path, capsys):
    from gaplab.cli import main
    out = tmp_path / "p.npz"
    # lam-min 1000: ~20 breakpoints, each with its test error (6,251 words)
    rc = main(["path", "--dataset", "ocr-small", "--eps", "0.1", "--kappa", "0.9", "--lam-min", "1000",
               "--out", str(out), "--every", "5"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "lambda" in text and "end of path" in text
    p = RegPath.load(out)
    assert p.kind == "eps" and p.meta["dataset"] == "ocr-small" and p.lam_end < 1000
    out2 = tmp_path / "g.npz"
    rc = main(["grid", "--dataset", "ocr-small", "--lams", "8,4,2", "--warm-start", "primal", "--out", str(out2)])
    assert rc == 0
    g = RegPath.load(out2)
    assert g.kind == "grid" and len(g) == 3
    assert main(["path", "--dataset", "ocr-small", "--kappa", "1.5"]) == 2
    assert main(["grid", "--dataset", "ocr-small", "--lams", "1,2"]) == 2
