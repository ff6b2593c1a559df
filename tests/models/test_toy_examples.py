"""Tests of gaplab.toy_examples: the App. C hard/easy problem, the samplers compared on it,
χ and the ℓ1/ℓ2 lemma of App. E, and smoke tests of the Fig. 1 studies and the CLIs."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gaplab.core import Solver, max_oracle
from gaplab.toy_examples import (compare_samplers, curvature_constants, hard_block_gap, hard_steps_needed,
                                 improvement_factor, l1_l2_lemma, lipschitz_constants, make_hard_easy,
                                 nonuniformity, oracle_calls_to_eps, predicted_oracle_calls,
                                 predicted_speedup, theorem2_constant)
from gaplab.toy_examples.theorem2 import toy_factor


def _primal(model, lam, w):
    """λ/2‖w‖² + (1/n) Σ_i max_y H_i(y; w) (φ(x_i, 0) = 0 here, so max H_i = the oracle value)."""
    n = model.n
    return 0.5 * lam * float(w @ w) + sum(max_oracle(model, i, w)[1] for i in range(n)) / n


def _eps_for(n, t):
    """An ε needing exactly t hard steps (between the gaps after t − 1 and t steps)."""
    return 0.5 * (hard_block_gap(t, n, 10 ** 9) + hard_block_gap(t - 1, n, 10 ** 9))


# ============================================================================ App. C facts

@pytest.mark.parametrize("n,K", [(20, 50), (7, 3), (2, 2)])
def test_curvature_constants_are_all_one_over_n(n, K):
    model, lam, _ = make_hard_easy(n, K)
    assert lam == 1.0 / n
    C = curvature_constants(model, lam)
    np.testing.assert_allclose(C, np.full(n, 1.0 / n), rtol=1e-12)
    # λ·max‖φ(k) − φ(l)‖² at λ = 1/n, from the feature list as well
    _, _, info = make_hard_easy(n, K)
    np.testing.assert_allclose(curvature_constants(info["features"], lam), C)


def test_lipschitz_constants_of_app_c():
    n, K = 20, 50
    model, lam, _ = make_hard_easy(n, K)
    L = lipschitz_constants(model, lam)
    assert L[0] == pytest.approx(1.0 / (2 * n))          # hard block: λ/2
    np.testing.assert_allclose(L[1:], K / n)              # easy blocks: λ(|Y_i| − 1)


def test_one_visit_to_any_easy_object_zeroes_every_easy_gap():
    n, K = 12, 9
    model, lam, _ = make_hard_easy(n, K)
    for j in (1, 5, n - 1):
        wts = np.zeros(n)
        wts[j] = 1.0
        s = Solver(model, lam=lam, sampling="weights", sampling_weights=wts, gap_check=math.inf, max_passes=10)
        before = s.copy().exact_gap(count=True).block_gaps
        np.testing.assert_allclose(before, 1.0 / n)
        rec = s.step()
        assert rec.block == j and rec.gamma == pytest.approx(1.0)
        g = s.copy().exact_gap(count=True).block_gaps
        np.testing.assert_allclose(g[1:], 0.0, atol=1e-15)
        assert g[0] == pytest.approx(1.0 / n)             # the hard block is decoupled
    # and in random runs: from the first easy visit on, every easy gap stays 0
    for seed in range(3):
        s = Solver(model, lam=lam, sampling="uniform", seed=seed, gap_check=math.inf, max_passes=100)
        seen_easy = False
        for _ in range(60):
            seen_easy |= s.step().block != 0
            if seen_easy:
                np.testing.assert_allclose(s.copy().exact_gap(count=True).block_gaps[1:], 0.0, atol=1e-15)


def test_hard_block_gap_after_t_steps():
    n, K = 10, 6
    model, lam, _ = make_hard_easy(n, K)
    wts = np.zeros(n)
    wts[0] = 1.0
    s = Solver(model, lam=lam, sampling="weights", sampling_weights=wts, gap_check=math.inf, max_passes=100)
    for t in range(0, K + 2):
        g = s.copy().exact_gap(count=True).block_gaps[0]
        assert g == pytest.approx(hard_block_gap(t, n, K), abs=1e-15)
        s.step()


@pytest.mark.parametrize("sampling", ["gap", "uniform", "exact_gap"])
def test_solver_reaches_the_optimum(sampling):
    n, K = 8, 5
    model, lam, info = make_hard_easy(n, K)
    w_star = info["w_star"]
    np.testing.assert_allclose(w_star[:K], 1.0 / (K * math.sqrt(2)))
    assert w_star[K] == 1.0
    # w* is optimal: its primal value equals the dual optimum (3/2 − 1/(4K))/n
    assert _primal(model, lam, w_star) == pytest.approx(info["optimal_value"], rel=1e-12)
    # the paper's printed w* = e_{K+1} + (1/K)Σ e_k (without the 1/√2) is not optimal
    w_paper = w_star.copy()
    w_paper[:K] = 1.0 / K
    assert _primal(model, lam, w_paper) > info["optimal_value"] + 1e-6
    r = oracle_calls_to_eps(model, lam, 1e-13, sampling, seed=3, max_calls=50_000)
    assert r["reached"]
    np.testing.assert_allclose(r["w"], w_star, atol=1e-12)
    s = Solver(model, lam=lam, sampling=sampling, seed=3, gap_check=math.inf, max_passes=1e4)
    s.steps(r["steps"])
    assert s.dual_objective() == pytest.approx(info["optimal_value"], rel=1e-12)


def test_hard_steps_needed_matches_gap_formula():
    n, K = 20, 50
    for eps in (0.06, 0.05, 0.02, 0.0025, 1e-3, 1e-4, 1e-9):
        t = hard_steps_needed(n, K, eps)
        assert hard_block_gap(t, n, K) <= eps * (1 + 1e-9)
        if t > 0:
            assert hard_block_gap(t - 1, n, K) > eps
    assert predicted_speedup(20, 50, 1e-4) == 20
    assert predicted_speedup(200, 50, 1e-4) == 50
    assert predicted_speedup(100, 500, 1e-3) == pytest.approx(10)


# ============================================================================ the samplers

@pytest.mark.parametrize("t", [5, 25, 50])
def test_gap_sampling_needs_n_plus_t_where_uniform_needs_n_t(t):
    """Observed constant: gap calls = n + t (c = 1) with gap_check = inf or when no gap pass
    fires before ε; with gap_check = 10 every 10n steps add n calls (c <= 1.1)."""
    n, K = 20, 50
    eps = _eps_for(n, t) if t < K else 1e-9
    assert hard_steps_needed(n, K, eps) == t
    problem = make_hard_easy(n, K)
    uni, gap_inf, gap10 = [], [], []
    for seed in range(5):
        r = compare_samplers(n, K, eps, seed, math.inf, samplers=("uniform", "gap", "exact_gap"),
                             problem=problem, keep_curves=False)
        uni.append(r["uniform"]["oracle_calls"])
        gap_inf.append(r["gap"]["oracle_calls"])
        # exact gap sampling: one easy step and the t hard steps, nothing else
        assert r["exact_gap"]["oracle_calls"] == t + 1
        assert r["exact_gap"]["sampler_oracle_calls"] == n * (t + 1)
        assert r["gap"]["hard_labels_visited"] == t
        gap10.append(compare_samplers(n, K, eps, seed, 10, samplers=("gap",), problem=problem,
                                      keep_curves=False)["gap"]["oracle_calls"])
    assert all(n + t - 1 <= g <= n + t for g in gap_inf)         # c = 1
    assert all(g <= n + 1.1 * t for g in gap10)                   # c <= 1.1 with gap_check = 10
    assert np.mean(uni) == pytest.approx(n * t, rel=0.25)        # uniform ≈ n·t
    pred = predicted_oracle_calls(n, K, eps, math.inf)
    assert pred["gap"] == n + t and pred["uniform"] == n * t


def test_gap_check_one_costs_a_pass_per_pass():
    n, K = 20, 50
    r = compare_samplers(n, K, 1e-9, 0, 1, samplers=("gap",), keep_curves=False)
    steps = r["gap"]["steps"]
    assert r["gap"]["oracle_calls"] == steps + n * (steps // n)
    assert r["gap"]["gap_passes"] == steps // n
    assert r["measured"]["gap_constant_c"] == pytest.approx(2.0, abs=0.3)


def test_speedup_grows_with_n_as_app_c_predicts():
    K, eps = 50, 1e-9  # t = K
    ratios = []
    for n in (5, 10, 20, 40):
        problem = make_hard_easy(n, K)
        rs = [compare_samplers(n, K, eps, s, math.inf, samplers=("uniform", "gap"), problem=problem,
                               keep_curves=False) for s in range(3)]
        ratio = np.mean([r["uniform"]["oracle_calls"] for r in rs]) / np.mean([r["gap"]["oracle_calls"] for r in rs])
        ratios.append(ratio)
        assert ratio == pytest.approx(n * K / (n + K), rel=0.25)  # ≈ min(n, t) up to a factor 2
    assert all(a < b for a, b in zip(ratios, ratios[1:]))


def test_curvature_sampling_equals_uniform_and_lipschitz_is_slower():
    n, K = 10, 10
    eps = _eps_for(n, 5)
    r = compare_samplers(n, K, eps, 1, keep_curves=False)
    assert r["curvature"]["oracle_calls"] == r["uniform"]["oracle_calls"]  # equal weights = same draws
    assert r["lipschitz"]["reached"]
    assert r["lipschitz"]["oracle_calls"] > 5 * r["uniform"]["oracle_calls"]
    assert r["gap"]["oracle_calls"] < r["uniform"]["oracle_calls"]


def test_chunked_search_equals_single_step_search():
    n, K = 10, 20
    model, lam, _ = make_hard_easy(n, K)
    eps = _eps_for(n, 15)
    for sampling in ("uniform", "gap"):
        a = oracle_calls_to_eps(model, lam, eps, sampling, seed=4, gap_check=2)
        b = oracle_calls_to_eps(model, lam, eps, sampling, seed=4, gap_check=2, check_every=1)
        s = Solver(model, lam=lam, sampling=sampling, seed=4, gap_check=2, max_passes=1e6)
        while s.exact_gap(count=False).gap > eps:  # brute force
            s.steps(1)
        assert a["oracle_calls"] == b["oracle_calls"] == s.oracle_calls
        assert a["steps"] == b["steps"] == s.iteration


def test_budget_censors_and_results_are_deterministic():
    r = compare_samplers(10, 100, 1e-6, 0, samplers=("lipschitz", "gap"), max_calls={"lipschitz": 500},
                         keep_curves=False)
    assert not r["lipschitz"]["reached"] and r["lipschitz"]["oracle_calls"] is None
    assert r["lipschitz"]["censored_at"] >= 500
    r1 = compare_samplers(10, 20, 1e-4, 7, keep_curves=False)
    r2 = compare_samplers(10, 20, 1e-4, 7, keep_curves=False)
    for s in r1["sampler_names"]:
        assert r1[s]["oracle_calls"] == r2[s]["oracle_calls"]


# ============================================================================ χ, App. E

def test_nonuniformity_extremes():
    for n in (1, 2, 7, 100):
        assert nonuniformity(np.full(n, 3.5)) == pytest.approx(1.0)
        x = np.zeros(n)
        x[n // 2] = 2.0
        assert nonuniformity(x) == pytest.approx(math.sqrt(n))


def test_l1_l2_lemma_on_random_vectors():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        x = rng.exponential(size=n) * (rng.random(n) < 0.7)
        if x.sum() == 0:
            x[0] = 1.0
        lhs, rhs = l1_l2_lemma(x)
        assert lhs == pytest.approx(rhs, rel=1e-12)
        chi = nonuniformity(x)
        assert 1.0 - 1e-12 <= chi <= math.sqrt(n) + 1e-12
        assert chi == pytest.approx(math.sqrt(n) * np.linalg.norm(x) / x.sum(), rel=1e-12)


def test_theorem2_factor():
    n = 16
    C = np.ones(n)
    g = np.zeros(n)
    g[3] = 1.0
    assert improvement_factor(g, C) == pytest.approx(n ** 1.5)    # best case of App. E
    assert theorem2_constant(g, C) == pytest.approx(n ** -1.5)
    assert improvement_factor(C, g) == pytest.approx(n ** -0.5)   # worst case
    assert improvement_factor(np.ones(n), np.ones(n)) == pytest.approx(1.0)
    t = toy_factor(20, 50)
    assert t["chi_C"] == pytest.approx(1.0) and t["factor"] == pytest.approx(20 ** 1.5)


@pytest.mark.parametrize("bad", [[-1.0, 2.0], [0.0, 0.0], [np.nan, 1.0], [], [[1.0, 2.0]]])
def test_nonuniformity_bad_input(bad):
    with pytest.raises(ValueError):
        nonuniformity(bad)


# ============================================================================ bad input

@pytest.mark.parametrize("n,K", [(1, 5), (0, 5), (-3, 5), (5, 0), (5, -1), (2.5, 3), (5, 1.5)])
def test_bad_sizes(n, K):
    with pytest.raises(ValueError):
        make_hard_easy(n, K)
    with pytest.raises(ValueError):
        compare_samplers(n, K, 1e-3)


@pytest.mark.parametrize("eps", [0.0, -1e-3, float("nan"), float("inf")])
def test_bad_eps(eps):
    with pytest.raises(ValueError):
        compare_samplers(5, 5, eps)
    with pytest.raises(ValueError):
        hard_steps_needed(5, 5, eps)
    model, lam, _ = make_hard_easy(5, 5)
    with pytest.raises(ValueError):
        oracle_calls_to_eps(model, lam, eps)


def test_bad_sampler_name():
    with pytest.raises(ValueError):
        compare_samplers(5, 5, 1e-3, samplers=("uniform", "lipschitz_l1"))


# ============================================================================ CLIs & Fig. 1

def test_hard_easy_cli(tmp_path, capsys):
    from gaplab.toy_examples.hard_easy import main
    out = tmp_path / "summary.json"
    assert main(["--n", "10", "--K", "20", "--eps", "1e-3", "--seed", "1", "--out", str(out),
                 "--out-dir", str(tmp_path)]) == 0
    data = json.loads(out.read_text())
    for s in ("uniform", "curvature", "lipschitz", "gap", "exact_gap"):
        assert "oracle_calls" in data[s]
    assert data["gap"]["oracle_calls"] < data["uniform"]["oracle_calls"]
    assert (tmp_path / "hard_easy.png").stat().st_size > 10_000
    assert main(["--n", "1", "--K", "5", "--out", str(out)]) == 2
    assert main(["--n", "5", "--K", "0", "--out", str(out)]) == 2
    assert main(["--n", "5", "--K", "5", "--eps", "0", "--out", str(out)]) == 2
    assert "error" in capsys.readouterr().err


def test_sweep_cli(tmp_path):
    from gaplab.toy_examples.sweep import main
    assert main(["--ns", "5,10", "--Ks", "5", "--eps", "1e-3", "--seeds", "0", "--out-dir", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "sweep.json").read_text())
    assert len(data["rows"]) == 2 and data["rows"][0]["measured_speedup"] > 1
    assert (tmp_path / "sweep.png").exists() and (tmp_path / "sweep_table.md").exists()


def test_staleness_cli(tmp_path):
    from gaplab.toy_examples.staleness import main
    assert main(["--passes", "4", "--gap-checks", "1,inf", "--out-dir", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "staleness.json").read_text())
    labels = [r["label"] for r in data["runs"]]
    assert labels == ["Uniform", "Gap 1", "Gap Inf"]
    gap1 = data["runs"][1]
    # a gap pass after every pass: heuristic = exact right after it, and every pass costs 2
    assert all(r == pytest.approx(1.0) for r in gap1["ratio"])
    assert gap1["effective_passes"][:2] == [2.0, 4.0]
    assert (tmp_path / "staleness.png").exists()


def test_theorem2_cli(tmp_path):
    from gaplab.toy_examples.theorem2 import main
    assert main(["--passes", "2", "--out-dir", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "theorem2.json").read_text())
    n = data["settings"]["n"]
    for r in data["runs"]:
        assert 1.0 <= r["chi_C"] <= math.sqrt(n)
        assert all(n ** -0.5 <= f <= n ** 1.5 for f in r["factor"])
    assert (tmp_path / "theorem2.png").exists()
