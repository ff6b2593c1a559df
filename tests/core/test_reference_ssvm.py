"""Self-consistency checks of the independent reference implementation (tests/reference_ssvm.py)."""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reference_ssvm as ref  # noqa: E402


def _all_values(x, y_gt, w, K, loss_augmented):
    """Objective value of every labeling, in itertools.product order."""
    T = x.shape[0]
    labs = ref.all_labelings(T, K)
    vals = np.array([ref.score(x, y, w, K) for y in labs])
    if loss_augmented:
        vals = vals + np.array([ref.hamming(y_gt, y) for y in labs])
    return labs, vals


# ------------------------------------------------------------------- the model
def test_feature_dim_ocr():
    assert ref.feature_dim(26, 128) == 4082


def test_joint_feature_layout_by_hand():
    K, F = 3, 2
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y = np.array([2, 0, 2])
    psi = ref.joint_feature(x, y, K)
    assert psi.shape == (ref.feature_dim(K, F),) == (3 * 3 + 3 + 3 + 9,)
    E = np.zeros((F + 1, K))  # rows: feature 0, feature 1, constant 1
    E[:, 2] = [1 + 5, 2 + 6, 2]
    E[:, 0] = [3, 4, 1]
    first = [0, 0, 1]
    last = [0, 0, 1]
    P = np.zeros((K, K))
    P[2, 0] = 1  # y0=2 -> y1=0
    P[0, 2] = 1  # y1=0 -> y2=2
    expected = np.concatenate([E.ravel(), first, last, P.ravel()])
    np.testing.assert_array_equal(psi, expected)
    # split_weights returns the matching views
    Ew, fw, lw, Pw = ref.split_weights(psi, K, F)
    np.testing.assert_array_equal(Ew, E)
    np.testing.assert_array_equal(fw, first)
    np.testing.assert_array_equal(lw, last)
    np.testing.assert_array_equal(Pw, P)


def test_joint_feature_single_token():
    psi = ref.joint_feature(np.array([[0.5]]), np.array([1]), 2)
    # E (2x2) = [[0, .5], [0, 1]], first = last = e_1, no transitions
    np.testing.assert_array_equal(psi, [0, 0.5, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0])


def test_hamming():
    assert ref.hamming([0, 1, 2, 3], [0, 1, 2, 3]) == 0.0
    assert ref.hamming([0, 1, 2, 3], [1, 1, 0, 3]) == 0.5
    assert ref.hamming([4], [2]) == 1.0


# ------------------------------------------------------------------- decoding
@pytest.mark.parametrize("loss_augmented", [True, False])
def test_brute_force_equals_viterbi(loss_augmented):
    rng = np.random.default_rng(12345 + loss_augmented)
    n_unique = 0
    for case in range(200):
        K = int(rng.integers(1, 5))
        T = int(rng.integers(1, 6))
        F = int(rng.integers(1, 4))
        x = rng.standard_normal((T, F))
        y_gt = rng.integers(0, K, size=T)
        w = rng.standard_normal(ref.feature_dim(K, F)) * (0.3 if case % 2 else 1.0)
        if case % 10 == 0:  # many ties: w = 0 (value is the loss only)
            w = np.zeros_like(w)
        yb, vb = ref.brute_force_decode(x, y_gt, w, K, loss_augmented)
        yv, vv = ref.viterbi_decode(x, y_gt, w, K, loss_augmented)
        assert abs(vb - vv) <= 1e-12 * max(1.0, abs(vb)), (case, vb, vv)
        # the Viterbi labeling attains its reported value
        v_check = ref.score(x, yv, w, K) + (ref.hamming(y_gt, yv) if loss_augmented else 0.0)
        assert abs(v_check - vv) <= 1e-12 * max(1.0, abs(vv))
        # labelings agree when the maximiser is unique
        labs, vals = _all_values(x, y_gt, w, K, loss_augmented)
        order = np.sort(vals)[::-1]
        assert abs(order[0] - vb) <= 1e-12 * max(1.0, abs(vb))
        if vals.size == 1 or order[0] - order[1] > 1e-9:
            n_unique += 1
            np.testing.assert_array_equal(yb, yv)
    assert n_unique >= 150  # the random cases are mostly tie-free


def test_brute_force_tie_breaking_is_first_in_enumeration():
    K, T, F = 3, 3, 2
    x = np.ones((T, F))
    w = np.zeros(ref.feature_dim(K, F))
    # all K^T labelings tie at value 0 -> the first one, (0, 0, 0)
    y, v = ref.brute_force_decode(x, None, w, K, loss_augmented=False)
    np.testing.assert_array_equal(y, [0, 0, 0])
    assert v == 0.0
    # loss only: every labeling differing everywhere from y_gt = (0, 1, 0) ties at 1;
    # the first such one in product order is (1, 0, 1)
    y, v = ref.brute_force_decode(x, np.array([0, 1, 0]), w, K, loss_augmented=True)
    np.testing.assert_array_equal(y, [1, 0, 1])
    assert v == 1.0
    assert list(map(tuple, ref.all_labelings(2, 2))) == list(itertools.product(range(2), repeat=2))


def test_max_oracle_is_nonnegative_and_zero_at_w0():
    data = ref.make_random_chain_data(4, (1, 4), 3, 2, seed=3)
    w0 = np.zeros(ref.feature_dim(3, 2))
    # at w = 0 the max oracle is max_y L = 1 for every sequence (K >= 2)
    assert ref.primal_objective(data, w0, 0.5) == pytest.approx(1.0, abs=1e-15)
    rng = np.random.default_rng(0)
    w = rng.standard_normal(w0.size)
    for i in range(data.n):
        x, y = data.dense_features(i), data.labels[data.tokens(i)]
        assert ref.max_oracle_value(x, y, w, 3)[1] >= -1e-12


# ---------------------------------------------------------------- tiny dual QP
TINY = [
    # (n, T_range, K, F, seed, lam)
    (3, (1, 2), 2, 3, 2, 1.0),
    (4, (1, 3), 3, 2, 0, 0.1),
    (5, (1, 3), 3, 2, 1, 0.01),
    (6, (2, 3), 2, 4, 7, 0.3),
]


@pytest.mark.parametrize("n,T_range,K,F,seed,lam", TINY)
def test_solve_dual_qp_is_optimal_and_consistent(n, T_range, K, F, seed, lam):
    data = ref.make_random_chain_data(n, T_range, K, F, seed=seed)
    alphas, w, primal, dual, gap = ref.solve_dual_qp(data, lam)
    assert 0.0 <= gap < 1e-8 or abs(gap) < 1e-12
    assert gap == pytest.approx(primal - dual, abs=1e-15)
    labelings = [ref.all_labelings(int(T), K) for T in data.lengths]
    for a, labs in zip(alphas, labelings):
        assert a.shape == (labs.shape[0],)
        assert a.min() >= 0.0 and a.sum() == pytest.approx(1.0, abs=1e-12)
    # w = A alpha, the Viterbi primal and the dual from alpha agree with the QP's numbers
    np.testing.assert_allclose(ref.w_from_alpha(data, alphas, labelings, lam), w, atol=1e-12)
    assert ref.primal_objective(data, w, lam) == pytest.approx(primal, abs=1e-12)
    assert ref.dual_objective_from_alpha(data, alphas, labelings, lam) == pytest.approx(dual, abs=1e-12)
    # optimality: perturbing w can only increase the primal
    rng = np.random.default_rng(seed)
    for _ in range(5):
        w2 = w + 1e-3 * rng.standard_normal(w.size)
        assert ref.primal_objective(data, w2, lam) >= primal - 1e-12


# ------------------------------------------------------------------------ BCFW
@pytest.mark.parametrize("n,T_range,K,F,seed,lam", TINY)
def test_dense_bcfw_weak_duality_and_monotone_dual(n, T_range, K, F, seed, lam):
    data = ref.make_random_chain_data(n, T_range, K, F, seed=seed)
    _, _, p_star, d_star, _ = ref.solve_dual_qp(data, lam)
    w, gaps, st = ref.dense_bcfw(data, lam, 60, seed=seed, return_state=True)
    gaps = np.array(gaps)
    assert gaps.size == 60
    assert np.all(gaps >= -1e-12)
    assert np.all(np.array(st["primals"]) >= p_star - 1e-12)
    assert np.all(np.array(st["duals"]) <= d_star + 1e-12)
    assert np.all(np.diff(st["duals"]) >= -1e-12)  # exact line search: f never increases
    assert gaps[-1] < gaps[0]
    # the returned w is the sum of the per-block w_i, and ell the sum of ell_i
    np.testing.assert_allclose(st["w_i"].sum(axis=0), w, atol=1e-14)
    assert ref.primal_objective(data, w, lam) == pytest.approx(st["primal"], abs=1e-12)


def test_dense_bcfw_converges_to_qp_optimum():
    # a tiny problem on which BCFW converges linearly (checked: gap 1e-10 in < 200 passes)
    lam = 1.0
    data = ref.make_random_chain_data(3, (1, 2), 2, 3, seed=2)
    _, w_star, p_star, _, _ = ref.solve_dual_qp(data, lam)
    w, gaps = ref.dense_bcfw(data, lam, 1000, seed=0, gap_tol=1e-10)
    assert gaps[-1] <= 1e-10
    p = ref.primal_objective(data, w, lam)
    assert abs(p - p_star) < 1e-6
    assert p >= p_star - 1e-12
    # lam-strong convexity of the primal: lam/2 ||w - w*||^2 <= P(w) - P* <= gap
    assert np.linalg.norm(w - w_star) <= np.sqrt(2 * max(gaps[-1], 1e-16) / lam) + 1e-9


def test_dense_bcfw_is_reproducible():
    data = ref.make_random_chain_data(4, (1, 3), 3, 2, seed=5)
    w1, g1 = ref.dense_bcfw(data, 0.1, 5, seed=11)
    w2, g2 = ref.dense_bcfw(data, 0.1, 5, seed=11)
    np.testing.assert_array_equal(w1, w2)
    assert g1 == g2


# ------------------------------------------------------------------------ data
def test_make_random_chain_data():
    data = ref.make_random_chain_data(7, (2, 4), 3, 5, seed=1)
    assert data.n == 7 and data.n_labels == 3 and data.n_features == 5
    assert np.all((data.lengths >= 2) & (data.lengths <= 4))
    assert data.dense_features(0).shape == (data.lengths[0], 5)
    again = ref.make_random_chain_data(7, (2, 4), 3, 5, seed=1)
    np.testing.assert_array_equal(again.feat_values, data.feat_values)
    np.testing.assert_array_equal(again.labels, data.labels)
    assert ref.hamming_error(data, np.zeros(ref.feature_dim(3, 5))) >= 0.0
