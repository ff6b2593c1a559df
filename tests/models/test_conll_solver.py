"""The solver on sparse chain data (CoNLL-style features)."""
import numpy as np
import pytest

import reference_ssvm as ref
from conftest import SHARED, random_chain_data
from gaplab.core import ChainModel, Solver, max_oracle
from gaplab.core.datasets.base import SequenceData

CONLL = SHARED / "data" / "conll2000"


def sparse_chain_data(n=5, T_range=(1, 5), K=4, F=60, seed=0):
    """Random sparse indicator features, like CoNLL's (a few attributes per token)."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        T = int(rng.integers(T_range[0], T_range[1] + 1))
        x = np.zeros((T, F))
        for t in range(T):
            x[t, rng.choice(F, size=4, replace=False)] = 1.0
        X.append(x)
        Y.append(rng.integers(0, K, size=T))
    return SequenceData.from_dense(X, Y, [f"L{k}" for k in range(K)], name="sparse")


@pytest.mark.parametrize("loss_augmented", [True, False])
def test_brute_force_equals_viterbi_on_sparse_chains(loss_augmented):
    rng = np.random.default_rng(1)
    for trial in range(40):
        K = int(rng.integers(2, 5))
        data = sparse_chain_data(n=2, T_range=(1, 5), K=K, F=40, seed=trial)
        model = ChainModel(data)
        w = rng.normal(size=model.d)
        for i in range(data.n):
            x = data.dense_features(i)
            yb, vb = ref.brute_force_decode(x, model.ground_truth(i), w, K, loss_augmented=loss_augmented)
            y, v = max_oracle(model, i, w, loss_augmented=loss_augmented)
            assert v == pytest.approx(vb, abs=1e-10)
            assert float(w @ model.joint_feature(i, y)) + (ref.hamming(model.ground_truth(i), y) if loss_augmented else 0) \
                == pytest.approx(vb, abs=1e-10)


def dense_bcfw_following(data, lam, blocks):
    """Textbook BCFW (Alg. 1) with dense per-block w_i ∈ R^d, visiting ``blocks`` in order.
    Returns the step sizes, block gaps and final w."""
    K = data.n_labels
    n = data.n
    X = [data.dense_features(i) for i in range(n)]
    Y = [data.labels[data.tokens(i)] for i in range(n)]
    d = ref.feature_dim(K, data.n_features)
    w = np.zeros(d)
    wi = np.zeros((n, d))
    li = np.zeros(n)
    gammas, gaps = [], []
    for i in blocks:
        ys, _ = ref.viterbi_decode(X[i], Y[i], w, K, loss_augmented=True)
        ws = (ref.joint_feature(X[i], Y[i], K) - ref.joint_feature(X[i], ys, K)) / (lam * n)
        ls = ref.hamming(Y[i], ys) / n
        g = lam * (wi[i] - ws) @ w - li[i] + ls
        q = lam * np.sum((wi[i] - ws) ** 2)
        gam = 1.0 if q <= 0 else min(max(g / q, 0.0), 1.0)
        new = (1 - gam) * wi[i] + gam * ws
        w += new - wi[i]
        wi[i] = new
        li[i] = (1 - gam) * li[i] + gam * ls
        gammas.append(gam)
        gaps.append(g)
    return np.array(gammas), np.array(gaps), w


def test_sparse_core_and_dense_textbook_bcfw_give_the_same_trace():
    data = sparse_chain_data(n=8, T_range=(2, 6), K=3, F=50, seed=4)
    s = Solver(ChainModel(data), lam=0.02, sampling="uniform", gap_check=float("inf"), max_passes=1e9,
               log_size=400)
    s.steps(400)
    recs = s.last_steps(400)
    blocks = [r.block for r in recs]
    gammas, gaps, w = dense_bcfw_following(data, 0.02, blocks)
    assert np.allclose([r.gamma for r in recs], gammas, atol=1e-9)
    assert np.allclose([r.block_gap_estimate for r in recs], gaps, atol=1e-12)
    assert np.allclose(s.w, w, atol=1e-10)


def test_storage_with_explicit_zeros_gives_identical_trace():
    """Sparse storage and the same features stored densely (explicit zeros) are the same problem."""
    sp = sparse_chain_data(n=6, T_range=(1, 5), K=3, F=20, seed=2)
    rows = sp.n_tokens
    dense_vals = np.zeros((rows, sp.n_features))
    for t in range(rows):
        a, b = sp.feat_indptr[t], sp.feat_indptr[t + 1]
        dense_vals[t, sp.feat_indices[a:b]] = sp.feat_values[a:b]
    dn = SequenceData(seq_offsets=sp.seq_offsets, feat_indptr=np.arange(rows + 1) * sp.n_features,
                      feat_indices=np.tile(np.arange(sp.n_features), rows), feat_values=dense_vals.ravel(),
                      labels=sp.labels, n_features=sp.n_features, label_names=sp.label_names)
    a = Solver(ChainModel(sp), lam=0.05, step="combined", max_passes=20, gap_check=3).run()
    b = Solver(ChainModel(dn), lam=0.05, step="combined", max_passes=20, gap_check=3).run()
    assert [r["iteration"] for r in a.trace] == [r["iteration"] for r in b.trace]
    assert np.allclose([r["dual"] for r in a.trace], [r["dual"] for r in b.trace], rtol=1e-12)
    assert np.allclose(a.w, b.w, atol=1e-12)


@pytest.mark.skipif(not CONLL.exists(), reason=f"CoNLL-2000 data not found at {CONLL}")
def test_step_kind_invariants_on_conll_subset():
    from gaplab.core.datasets.conll import load_conll2000
    from solver_checks import check_invariants, check_log

    train, test = load_conll2000(data_home=CONLL)
    sub = train.subset(range(40)).compact()  # only the attributes of these 40 sentences
    model = ChainModel(sub)
    assert model.d == sub.n_labels * (sub.n_features + 1) + 2 * sub.n_labels + sub.n_labels ** 2
    for kind in ["fw", "pairwise", "away", "combined"]:
        s = Solver(model, lam=1.0 / 40, step=kind, sampling="gap", cache={"enabled": kind != "fw"},
                   track_active_set=True, gap_check=2, max_passes=1e9, log_size=1000)
        s.steps(1000)
        check_log(s, 1000)
        check_invariants(s)
        ex = s.exact_gap(count=False)
        assert ex.primal - ex.dual == pytest.approx(ex.gap, abs=1e-10)
    # the full model predicts on the test set (unseen attributes were dropped by the loader)
    full = ChainModel(train.subset(range(40)))
    err = full.error(Solver(full, lam=0.025, max_passes=2).run().w, test.subset(range(20)))
    assert 0.0 <= err <= 1.0
