"""Independent, deliberately simple reference implementation of the SSVM chain model.

Written from the paper only (Osokin et al., "Minding the Gaps for Block Frank-Wolfe
Optimization of Structured SVMs", ICML 2016, Sec. 2 and App. I) to cross-check the
fast numba core.  Plain numpy / scipy, no numba, and nothing from ``gaplab.core``
except the data container :class:`gaplab.core.datasets.base.SequenceData`.

The solver algorithms themselves (every step kind, the cache, box constraints, batch steps) have
their readable reference in the package, :mod:`gaplab.core.reference`, which works on any model
through the model interface; this file stays as the *independent* implementation of the chain
model (its own ψ, Viterbi, brute force and exact QP), which that reference cannot be since it
uses the model's own ``joint_feature`` and ``max_oracle``.

The chain model (the paper's OCR model)
---------------------------------------
``K`` labels; token input ``x_t`` in R^F is augmented with a constant 1, giving
``xa_t = [x_t, 1]`` in R^(F+1).  The joint feature map ``psi(x, y)`` in R^d,
``d = K*(F+1) + K + K + K*K``, is laid out in this order:

* emission block ``E`` of shape (F+1, K), row-major (index ``j*K + k``):
  ``sum_t xa_t[j] * [y_t == k]``  (row ``F`` is the per-label "model bias");
* first-label bias (K): ``[y_0 == k]``;
* last-label bias (K): ``[y_{T-1} == k]``;
* transitions (K, K), row-major (index ``a*K + b``): ``#{t : y_t == a, y_{t+1} == b}``.

Loss: normalised Hamming ``L(y_gt, y) = (1/T) sum_t [y_t != y_gt_t]``.
Max oracle (Eq. 2): ``H_i(y; w) = L_i(y) - <w, psi(x_i, y_i) - psi(x_i, y)>``.
Primal (Eq. 1): ``lam/2 ||w||^2 + (1/n) sum_i max_y H_i(y; w)``.
Dual (Eq. 3, the *negative* of f): ``D(alpha) = b^T alpha - lam/2 ||A alpha||^2`` with
columns ``A_(i,y) = psi_diff_i(y) / (lam n)`` and ``b_(i,y) = L_i(y) / n``; ``w = A alpha``.
Duality gap (Eq. 4) ``= primal(A alpha) - D(alpha) >= 0``.
"""
from __future__ import annotations

import itertools

import numpy as np

from gaplab.core.datasets.base import SequenceData

__all__ = [
    "feature_dim",
    "augment",
    "split_weights",
    "joint_feature",
    "hamming",
    "score",
    "all_labelings",
    "brute_force_decode",
    "viterbi_decode",
    "max_oracle_value",
    "primal_objective",
    "w_from_alpha",
    "dual_objective_from_alpha",
    "solve_dual_qp",
    "dense_bcfw",
    "hamming_error",
    "make_random_chain_data",
]


# --------------------------------------------------------------------------- model
def feature_dim(K: int, F: int) -> int:
    """d = K*(F+1) + K + K + K*K."""
    return K * (F + 1) + 2 * K + K * K


def augment(x: np.ndarray) -> np.ndarray:
    """Append the constant attribute 1: (T, F) -> (T, F+1)."""
    x = np.asarray(x, dtype=np.float64)
    return np.hstack([x, np.ones((x.shape[0], 1))])


def split_weights(w: np.ndarray, K: int, F: int):
    """Views of ``w``: emission (F+1, K), first (K,), last (K,), transitions (K, K)."""
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (feature_dim(K, F),):
        raise ValueError(f"w must have shape ({feature_dim(K, F)},), got {w.shape}")
    ne = K * (F + 1)
    E = w[:ne].reshape(F + 1, K)
    first = w[ne:ne + K]
    last = w[ne + K:ne + 2 * K]
    P = w[ne + 2 * K:].reshape(K, K)
    return E, first, last, P


def joint_feature(x_dense: np.ndarray, y: np.ndarray, K: int) -> np.ndarray:
    """psi(x, y) of shape (d,) for a dense input ``x_dense`` (T, F) and labels ``y`` (T,)."""
    x = np.asarray(x_dense, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64).ravel()
    T, F = x.shape
    if y.shape != (T,):
        raise ValueError(f"y must have shape ({T},), got {y.shape}")
    if T < 1:
        raise ValueError("empty sequence")
    xa = augment(x)
    onehot = np.zeros((T, K))
    onehot[np.arange(T), y] = 1.0
    emission = xa.T @ onehot  # (F+1, K): sum_t xa_t[j] [y_t == k]
    first = np.zeros(K)
    first[y[0]] = 1.0
    last = np.zeros(K)
    last[y[-1]] = 1.0
    trans = np.zeros((K, K))
    np.add.at(trans, (y[:-1], y[1:]), 1.0)
    return np.concatenate([emission.ravel(), first, last, trans.ravel()])


def hamming(y_gt, y) -> float:
    """Normalised Hamming loss (1/T) sum_t [y_t != y_gt_t]."""
    y_gt = np.asarray(y_gt).ravel()
    y = np.asarray(y).ravel()
    if y_gt.shape != y.shape:
        raise ValueError(f"shape mismatch {y_gt.shape} vs {y.shape}")
    return float(np.mean(y_gt != y))


def score(x, y, w, K) -> float:
    """<w, psi(x, y)>."""
    return float(np.dot(w, joint_feature(x, y, K)))


# ----------------------------------------------------------------------- decoding
def all_labelings(T: int, K: int) -> np.ndarray:
    """All K^T labelings, shape (K^T, T), in ``itertools.product(range(K), repeat=T)`` order."""
    return np.array(list(itertools.product(range(K), repeat=T)), dtype=np.int64).reshape(K ** T, T)


def brute_force_decode(x, y_gt, w, K, loss_augmented=True):
    """Exhaustive argmax over all K^T labelings (meant for T <= 5, K <= 4).

    Maximises ``L(y_gt, y) + <w, psi(x, y)>`` (or ``<w, psi(x, y)>`` when
    ``loss_augmented=False``; ``y_gt`` may then be None).

    Tie-breaking: labelings are visited in ``itertools.product(range(K), repeat=T)``
    order (lexicographic, y_0 most significant) and a candidate replaces the incumbent
    only if strictly better, so the *first* maximiser in that order is returned.

    Returns (y_best (T,) int64, value float).
    """
    x = np.asarray(x, dtype=np.float64)
    T = x.shape[0]
    best_y, best_v = None, -np.inf
    for lab in itertools.product(range(K), repeat=T):
        y = np.array(lab, dtype=np.int64)
        v = score(x, y, w, K)
        if loss_augmented:
            v += hamming(y_gt, y)
        if v > best_v:
            best_y, best_v = y, v
    return best_y, float(best_v)


def _unaries(xa, y_gt, E, first, last, loss_augmented):
    """Unary scores U (T, K) = xa @ E + first-bias at t=0 + last-bias at t=T-1 (+ loss)."""
    T = xa.shape[0]
    U = xa @ E
    U[0] += first
    U[T - 1] += last
    if loss_augmented:
        y_gt = np.asarray(y_gt, dtype=np.int64).ravel()
        U += 1.0 / T
        U[np.arange(T), y_gt] -= 1.0 / T  # (1/T)[k != y_gt_t]
    return U


def _viterbi(U, P):
    """Max-sum on a chain with unaries U (T, K) and pairwise P (K, K); returns (y, value).

    Ties are broken by ``np.argmax`` (smallest label) at every step; this is *not*
    necessarily the same maximiser as :func:`brute_force_decode` when several exist.
    """
    T, K = U.shape
    V = U[0].copy()
    back = np.zeros((T, K), dtype=np.int64)
    for t in range(1, T):
        M = V[:, None] + P  # M[a, b]: best score ending with y_{t-1}=a, y_t=b
        back[t] = np.argmax(M, axis=0)
        V = M[back[t], np.arange(K)] + U[t]
    y = np.empty(T, dtype=np.int64)
    y[T - 1] = int(np.argmax(V))
    value = float(V[y[T - 1]])
    for t in range(T - 1, 0, -1):
        y[t - 1] = back[t, y[t]]
    return y, value


def viterbi_decode(x, y_gt, w, K, loss_augmented=True):
    """Exact argmax of ``L(y_gt, y) + <w, psi(x, y)>`` (or ``<w, psi>``) by Viterbi.

    Returns (y (T,) int64, value float); value has the same meaning as in
    :func:`brute_force_decode`.
    """
    x = np.asarray(x, dtype=np.float64)
    E, first, last, P = split_weights(w, K, x.shape[1])
    U = _unaries(augment(x), y_gt, E, first, last, loss_augmented)
    return _viterbi(U, P)


def max_oracle_value(x, y_gt, w, K):
    """max_y H_i(y; w) = max_y [L(y) + <w, psi(y)>] - <w, psi(y_gt)> >= 0; returns (y*, H*)."""
    y, v = viterbi_decode(x, y_gt, w, K, loss_augmented=True)
    return y, v - score(x, y_gt, w, K)


# ------------------------------------------------------------------- objectives
def _dense_seqs(data: SequenceData):
    X = [data.dense_features(i) for i in range(data.n)]
    Y = [data.labels[data.tokens(i)].copy() for i in range(data.n)]
    return X, Y


def primal_objective(data: SequenceData, w, lam) -> float:
    """lam/2 ||w||^2 + (1/n) sum_i max_y H_i(y; w), the max computed by Viterbi."""
    w = np.asarray(w, dtype=np.float64)
    K = data.n_labels
    X, Y = _dense_seqs(data)
    hinge = sum(max_oracle_value(x, y, w, K)[1] for x, y in zip(X, Y))
    return float(0.5 * lam * w @ w + hinge / data.n)


def w_from_alpha(data: SequenceData, alphas, labelings, lam) -> np.ndarray:
    """w = A alpha = sum_{i,y} alpha_i(y) psi_diff_i(y) / (lam n).

    ``alphas[i]`` (m_i,) are the weights of the labelings ``labelings[i]`` (m_i, T_i).
    """
    K, n = data.n_labels, data.n
    X, Y = _dense_seqs(data)
    w = np.zeros(feature_dim(K, data.n_features))
    for x, y, a, labs in zip(X, Y, alphas, labelings):
        psi_gt = joint_feature(x, y, K)
        for ai, lab in zip(a, labs):
            if ai != 0.0:
                w += ai * (psi_gt - joint_feature(x, lab, K))
    return w / (lam * n)


def dual_objective_from_alpha(data: SequenceData, alphas, labelings, lam) -> float:
    """D(alpha) = b^T alpha - lam/2 ||A alpha||^2 (the negative of f in Eq. 3).

    ``alphas[i]`` (m_i,) must lie on the simplex; ``labelings[i]`` (m_i, T_i) lists the
    labelings they weight (labelings absent from the list have alpha 0).
    """
    Y = _dense_seqs(data)[1]
    n = data.n
    for i, a in enumerate(alphas):
        a = np.asarray(a, dtype=np.float64)
        if np.any(a < -1e-12) or abs(a.sum() - 1.0) > 1e-9:
            raise ValueError(f"alphas[{i}] is not on the simplex (sum={a.sum()}, min={a.min()})")
    w = w_from_alpha(data, alphas, labelings, lam)
    ell = sum(
        float(np.dot(a, [hamming(y, lab) for lab in labs])) for a, labs, y in zip(alphas, labelings, Y)
    ) / n
    return float(ell - 0.5 * lam * w @ w)


# ------------------------------------------------------------ exact tiny dual QP
def _project_simplex(v):
    """Euclidean projection of v onto the probability simplex (sort-based)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    idx = np.arange(1, v.size + 1)
    rho = np.nonzero(u - css / idx > 0)[0][-1]
    theta = css[rho] / (rho + 1.0)
    return np.maximum(v - theta, 0.0)


def solve_dual_qp(data: SequenceData, lam, max_iter=200_000, tol=1e-12):
    """Solve the dual QP (Eq. 3) of a *tiny* problem exactly (n <= 6, T <= 3, K <= 3).

    Enumerates all labelings of every sequence, builds A (columns psi_diff/(lam n)) and
    b (L/n), and minimises ``f(alpha) = lam/2 ||A alpha||^2 - b^T alpha`` over the product
    of simplices with accelerated projected gradient (FISTA, step 1/L, adaptive restart),
    periodically *polished* by solving the KKT equalities on the current support:
    ``lam (A^T A alpha)_S - b_S = nu_i`` (equal gradients on each block's support) and
    ``sum alpha_i = 1``.  The FW gap of a polished point is ~1e-15.  Convergence is
    certified by the exact duality gap ``primal(A alpha) - D(alpha)`` where the primal
    uses an exhaustive max over all labelings; a RuntimeError is raised if it is not
    below 1e-8.

    Returns (alphas, w, primal, dual, gap): ``alphas[i]`` of shape (K^T_i,) indexed in
    :func:`all_labelings` order; ``dual`` is ``D(alpha) = -f(alpha)``.
    """
    K, n = data.n_labels, data.n
    X, Y = _dense_seqs(data)
    if n > 6 or max(len(y) for y in Y) > 3 or K > 3:
        raise ValueError("solve_dual_qp is meant for tiny problems: n <= 6, T <= 3, K <= 3")
    cols, bs, block_of, labelings = [], [], [], []
    for i, (x, y) in enumerate(zip(X, Y)):
        labs = all_labelings(len(y), K)
        labelings.append(labs)
        psi_gt = joint_feature(x, y, K)
        for lab in labs:
            cols.append((psi_gt - joint_feature(x, lab, K)) / (lam * n))
            bs.append(hamming(y, lab) / n)
            block_of.append(i)
    A = np.array(cols).T  # (d, m)
    b = np.array(bs)
    block_of = np.array(block_of)
    slices = [np.flatnonzero(block_of == i) for i in range(n)]
    m = b.size
    Q = lam * A.T @ A

    def grad(a):
        return Q @ a - b

    def fval(a):
        return 0.5 * a @ Q @ a - b @ a

    def fw_gap(a):
        g = grad(a)
        return float(sum(a[s] @ g[s] - g[s].min() for s in slices))

    def project(v):
        out = np.empty_like(v)
        for s in slices:
            out[s] = _project_simplex(v[s])
        return out

    def polish(a):
        S = np.flatnonzero(a > 1e-10)
        nS = S.size
        M = np.zeros((nS + n, nS + n))
        rhs = np.zeros(nS + n)
        M[:nS, :nS] = Q[np.ix_(S, S)]
        M[np.arange(nS), nS + block_of[S]] = -1.0
        M[nS + block_of[S], np.arange(nS)] = 1.0
        rhs[:nS] = b[S]
        rhs[nS:] = 1.0
        sol = np.linalg.lstsq(M, rhs, rcond=None)[0]
        if np.any(sol[:nS] < -1e-12):
            return None
        out = np.zeros(m)
        out[S] = np.maximum(sol[:nS], 0.0)
        for s in slices:
            out[s] /= out[s].sum()
        return out

    # start at alpha_i = e_{y_i} (w = 0)
    alpha = np.zeros(m)
    for i, (y, labs) in enumerate(zip(Y, labelings)):
        alpha[slices[i][np.flatnonzero((labs == y).all(axis=1))[0]]] = 1.0
    L = max(np.linalg.eigvalsh(Q)[-1], 1e-300)
    best, best_gap = alpha.copy(), fw_gap(alpha)
    z, t = alpha.copy(), 1.0
    for it in range(1, max_iter + 1):
        new = project(z - grad(z) / L)
        if (z - new) @ (new - alpha) > 0:  # gradient-based adaptive restart
            t, z = 1.0, alpha.copy()
            new = project(z - grad(z) / L)
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        z = new + ((t - 1.0) / t_new) * (new - alpha)
        alpha, t = new, t_new
        if it % 200 == 0:
            for cand in (alpha, polish(alpha)):
                if cand is not None:
                    g = fw_gap(cand)
                    if g < best_gap:
                        best, best_gap = cand.copy(), g
            if best_gap <= tol:
                break
    alpha = best

    w = A @ alpha
    dual = float(-fval(alpha))
    # primal with an exhaustive max over all labelings (independent of Viterbi)
    H = b - lam * (A.T @ w)  # H_i(y; w) / n for every column (i, y)
    primal = float(0.5 * lam * w @ w + sum(H[s].max() for s in slices))
    gap = primal - dual
    if not gap < 1e-8:
        raise RuntimeError(f"solve_dual_qp did not converge: duality gap {gap:.3e}")
    alphas = [alpha[s].copy() for s in slices]
    return alphas, w, primal, dual, gap


# ------------------------------------------------------------------------ BCFW
class _Prepared:
    """Per-sequence dense inputs and ground-truth features, precomputed once."""

    def __init__(self, data: SequenceData):
        self.K, self.F, self.n = data.n_labels, data.n_features, data.n
        self.d = feature_dim(self.K, self.F)
        X, Y = _dense_seqs(data)
        self.XA = [augment(x) for x in X]
        self.Y = Y
        self.psi_gt = np.array([joint_feature(x, y, self.K) for x, y in zip(X, Y)])

    def psi(self, i, y):
        """joint_feature from the pre-augmented input (same layout as joint_feature)."""
        K, xa = self.K, self.XA[i]
        T = xa.shape[0]
        onehot = np.zeros((T, K))
        onehot[np.arange(T), y] = 1.0
        trans = np.zeros((K, K))
        np.add.at(trans, (y[:-1], y[1:]), 1.0)
        first, last = np.zeros(K), np.zeros(K)
        first[y[0]] = 1.0
        last[y[-1]] = 1.0
        return np.concatenate([(xa.T @ onehot).ravel(), first, last, trans.ravel()])

    def decode(self, i, w, loss_augmented=True):
        E, first, last, P = split_weights(w, self.K, self.F)
        U = _unaries(self.XA[i], self.Y[i], E, first, last, loss_augmented)
        return _viterbi(U, P)

    def hinge_sum(self, w):
        """sum_i max_y H_i(y; w)."""
        total = 0.0
        for i in range(self.n):
            _, v = self.decode(i, w, True)
            total += v - float(w @ self.psi_gt[i])
        return total


def dense_bcfw(data: SequenceData, lam, n_passes, seed=0, gap_tol=None, return_state=False,
               callback=None):
    """Textbook BCFW (Alg. 1 of the paper) with dense per-block w_i (n x d).

    Each pass makes n block steps with blocks drawn uniformly with replacement
    (``rng = np.random.default_rng(seed)``; per pass ``rng.integers(0, n, size=n)``),
    the max oracle is :func:`viterbi_decode`, the step size is the exact line search of
    line 7 clipped to [0, 1] (if ``||w_i - w_s|| = 0`` the step is 1 when the block gap
    is positive, else 0).  After every pass the *exact* duality gap
    ``primal(w) - (ell - lam/2 ||w||^2)`` is computed with a full Viterbi pass.

    Stops after ``n_passes`` passes or as soon as the gap is ``<= gap_tol`` (if given).
    ``callback(pass_index, w, gap)`` is called after each pass if given.

    Returns ``(w, gaps)``; with ``return_state=True`` returns ``(w, gaps, state)`` where
    ``state`` holds ``w_i``, ``ell_i``, ``ell``, ``primal``, ``dual``, ``passes``,
    ``primals``, ``duals``.
    """
    prep = _Prepared(data)
    n, d = prep.n, prep.d
    rng = np.random.default_rng(seed)
    w_i = np.zeros((n, d))
    ell_i = np.zeros(n)
    w = np.zeros(d)
    ell = 0.0
    gaps, primals, duals = [], [], []
    passes = 0
    for p in range(n_passes):
        for i in rng.integers(0, n, size=n):
            y_star, _ = prep.decode(i, w, True)
            w_s = (prep.psi_gt[i] - prep.psi(i, y_star)) / (lam * n)
            ell_s = hamming(prep.Y[i], y_star) / n
            diff = w_i[i] - w_s
            g_i = lam * diff @ w - ell_i[i] + ell_s
            denom = lam * diff @ diff
            if denom > 0:
                gamma = min(max(g_i / denom, 0.0), 1.0)
            else:
                gamma = 1.0 if g_i > 0 else 0.0
            new_wi = (1.0 - gamma) * w_i[i] + gamma * w_s
            new_li = (1.0 - gamma) * ell_i[i] + gamma * ell_s
            w += new_wi - w_i[i]
            ell += new_li - ell_i[i]
            w_i[i] = new_wi
            ell_i[i] = new_li
        passes = p + 1
        # recompute the sums exactly to avoid drift, then the exact gap
        w = w_i.sum(axis=0)
        ell = float(ell_i.sum())
        primal = 0.5 * lam * w @ w + prep.hinge_sum(w) / n
        dual = ell - 0.5 * lam * w @ w
        gaps.append(float(primal - dual))
        primals.append(float(primal))
        duals.append(float(dual))
        if callback is not None:
            callback(p, w, gaps[-1])
        if gap_tol is not None and gaps[-1] <= gap_tol:
            break
    if not return_state:
        return w, gaps
    state = dict(
        w_i=w_i, ell_i=ell_i, ell=ell, passes=passes,
        primal=primals[-1] if primals else float("nan"),
        dual=duals[-1] if duals else float("nan"),
        primals=primals, duals=duals,
    )
    return w, gaps, state


def hamming_error(data: SequenceData, w) -> float:
    """Fraction of wrongly predicted tokens (letters) with plain (not loss-augmented) decoding."""
    prep = _Prepared(data)
    wrong = 0
    for i in range(prep.n):
        y, _ = prep.decode(i, np.asarray(w, dtype=np.float64), loss_augmented=False)
        wrong += int(np.sum(y != prep.Y[i]))
    return wrong / data.n_tokens


# ------------------------------------------------------------------------ data
def make_random_chain_data(n, T_range, K, F, seed=0, name="random-chain") -> SequenceData:
    """n random sequences, lengths uniform in ``T_range = (T_min, T_max)`` (inclusive),
    standard-normal dense features (T, F) and uniform random labels in [0, K)."""
    rng = np.random.default_rng(seed)
    t_min, t_max = T_range
    X, Y = [], []
    for _ in range(n):
        T = int(rng.integers(t_min, t_max + 1))
        X.append(rng.standard_normal((T, F)))
        Y.append(rng.integers(0, K, size=T))
    return SequenceData.from_dense(X, Y, tuple(f"l{k}" for k in range(K)), name=name)
