"""The chain kind's flat arrays (:class:`ChainArrays`) and numba primitives, registered with the
solver's kernels here (see :func:`gaplab.core.kernels.register_model_kind`): loss-augmented
scores, Viterbi, ⟨m(y), h⟩ and m(y) added to a vector, the loss, ‖B_i δ‖² from the Gram
matrix, the sparse update of w, prefetching, the scoring of cached labellings, and (from
:mod:`gaplab.core.models.chain_pairwise`) the label-space pairwise step; plus the array check,
the per-sequence Gram matrices and the batch decoding that
:class:`~gaplab.core.models.chain.ChainModel` uses.

Statistics of sequence i (length T): T·K node marginals then K² transition counts; ψ as in
:mod:`gaplab.core.models.chain`.

Paper: App. I (OCR, CoNLL chain model), Eq. (2) (max oracle: Viterbi).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit, uint64

from .._prefetch import prefetch
from ..kernels import _clip, register_model_kind
from . import protocol as _p
from .chain_pairwise import chain_pair_apply, chain_pair_prefetch, chain_pair_sqnorm

__all__ = ["ChainArrays", "chain_scores", "chain_oracle", "chain_label_dot", "chain_label_add",
           "chain_label_loss", "chain_gt_label", "chain_sqnorm", "chain_axpy"]


ChainArrays = namedtuple(
    "ChainArrays",
    [
        "n", "d", "K",
        "stat_off",      # int64 (n+1): statistics offsets (T*K node marginals + K*K transitions per block)
        "lab_off",       # int64 (n+1): token offsets (a labelling is one label per token)
        "gt",            # int64 (tokens,): ground-truth labels
        "feat_indptr", "feat_indices", "feat_values", "F1",  # token CSR, F1 = n_features + 1 (constant attribute)
        "feat_unit",     # 1 when every stored feature value is 1.0 (binary features: OCR pixels), else 0
        "gram_off", "gram",                                    # per-sequence T x T Gram of augmented features
        "first_off", "last_off", "trans_off",                  # offsets in w of the first/last-label biases, transitions
    ],
)


@njit(cache=True, nogil=True)
def chain_scores(M, i, w, h):
    """Loss-augmented scores of sequence i: h[t·K + k] = ⟨w_emission[:, k], x̃_t⟩ (+ first/last
    biases) + [k ≠ y_t]/T, and h[T·K + a·K + b] = w_transition[a, b]."""
    K = M.K
    t0 = M.lab_off[i]
    T = M.lab_off[i + 1] - t0
    F = M.F1 - 1
    invT = 1.0 / T
    for t in range(T):
        tok = t0 + t
        base = t * K
        cst = F * K
        for k in range(K):
            h[base + k] = w[cst + k]
        for p in range(M.feat_indptr[tok], M.feat_indptr[tok + 1]):
            j = M.feat_indices[p]
            val = M.feat_values[p]
            row = j * K
            for k in range(K):
                h[base + k] += val * w[row + k]
        g = M.gt[tok]
        for k in range(K):
            if k != g:
                h[base + k] += invT
    for k in range(K):
        h[k] += w[M.first_off + k]
        h[(T - 1) * K + k] += w[M.last_off + k]
    off = T * K
    for q in range(K * K):
        h[off + q] = w[M.trans_off + q]


@njit(cache=True, nogil=True, inline="always")
def _scores_masked(K, t0, T, F, feat_indptr, feat_indices, feat_values, gt, first_off, last_off, trans_off,
                   w, h, mark, dense, unit, klist):
    """As :func:`block_scores` for a chain, but only the node entries with mark[q] != 0 are
    computed. With ``dense`` (h is then read as a whole vector) the other node entries are set
    to 0 and the transition part is copied; without it they are left as they are (the
    label-space scan reads only marked entries, and transition scores from w). With ``unit``
    (every feature value is 1.0) the values are not read: 1.0·x is x exactly, so the sums are the
    same. Each computed entry takes the same floating-point operations in the same order as in
    block_scores, so it is bitwise equal. ``klist``: int64 scratch of length K. Used to score
    cached labellings without the full O(T·nnz·K) score matrix."""
    invT = 1.0 / T
    cst = F * K
    for t in range(T):
        tok = t0 + t
        base = t * K
        g = gt[tok]
        # list the marked labels without a branch per label (a few of K are marked, at random
        # places: a test per label is a mispredicted branch)
        nk = 0
        for k in range(K):
            klist[nk] = k
            nk += mark[base + k] != 0
        if dense:
            for k in range(K):
                h[base + k] = 0.0
        p0 = feat_indptr[tok]
        p1 = feat_indptr[tok + 1]
        for j in range(nk):
            k = klist[j]
            acc = w[cst + k]
            # uint64 indices (here, in the atom scan and in the label-space update): numba adds
            # the negative-index wraparound to every signed index; these never are negative, and
            # dropping it makes a cache-hit step faster
            if unit:  # binary features: no value loads
                for p in range(p0, p1):
                    acc += w[uint64(feat_indices[p] * K + k)]
            else:
                for p in range(p0, p1):
                    acc += feat_values[p] * w[uint64(feat_indices[p] * K + k)]
            if k != g:
                acc += invT
            h[base + k] = acc
    if dense:
        for k in range(K):
            if mark[k] != 0:
                h[k] += w[first_off + k]
            if mark[(T - 1) * K + k] != 0:
                h[(T - 1) * K + k] += w[last_off + k]
    else:  # only marked entries are read: add to all, without a branch per label
        for k in range(K):
            h[k] += w[first_off + k]
        for k in range(K):
            h[(T - 1) * K + k] += w[last_off + k]
    if dense:
        off = T * K
        for q in range(K * K):
            h[off + q] = w[trans_off + q]


@njit(cache=True, nogil=True, inline="always")
def chain_scores_cached(M, i, w, h, mark, a_lab, lab0, cnt, L, cap, mu, dense, klist):
    """Scores of only the node entries that the block's cached labellings use (and, with
    ``dense``, the nonzero entries of μ_i): :func:`_scores_masked` with the marks set here and
    cleared after (the cache-hit path of Alg. 5)."""
    K = M.K
    TK = L * K
    for s in range(cnt):
        b = lab0 + s * L
        for t in range(L):
            mark[uint64(t * K + a_lab[uint64(b + t)])] = 1
    if dense:
        for q in range(TK):
            if mu[q] != 0.0:
                mark[q] = 1
    _scores_masked(K, M.lab_off[i], L, M.F1 - 1, M.feat_indptr, M.feat_indices, M.feat_values, M.gt,
                   M.first_off, M.last_off, M.trans_off, w, h, mark, dense, M.feat_unit != 0, klist)
    for q in range(TK):
        mark[q] = 0


@njit(cache=True, nogil=True)
def chain_oracle(M, i, h, y, vit_f, vit_i):
    """Viterbi on the score vector h: y ← argmax_y ⟨m(y), h⟩, returns the maximum; O(T K²).
    Ties: the lowest label (per position, Viterbi's first maximiser)."""
    K = M.K
    T = M.lab_off[i + 1] - M.lab_off[i]
    TK = T * K
    for k in range(K):
        vit_f[k] = h[k]
    for t in range(1, T):
        for b in range(K):
            best = -np.inf
            arg = 0
            for a in range(K):
                val = vit_f[(t - 1) * K + a] + h[TK + a * K + b]
                if val > best:
                    best = val
                    arg = a
            vit_f[t * K + b] = best + h[t * K + b]
            vit_i[t * K + b] = arg
    best = -np.inf
    arg = 0
    for k in range(K):
        val = vit_f[(T - 1) * K + k]
        if val > best:
            best = val
            arg = k
    y[T - 1] = arg
    for t in range(T - 1, 0, -1):
        y[t - 1] = vit_i[t * K + y[t]]
    return best


@njit(cache=True, nogil=True, inline="always")
def chain_label_dot(M, i, y, vec):
    """⟨m(y), vec⟩: node entries then transitions."""
    K = M.K
    T = M.lab_off[i + 1] - M.lab_off[i]
    s = 0.0
    for t in range(T):
        s += vec[t * K + y[t]]
    off = T * K
    for t in range(T - 1):
        s += vec[off + y[t] * K + y[t + 1]]
    return s


@njit(cache=True, nogil=True, inline="always")
def chain_label_dot_at(M, i, lab, b, vec):
    """:func:`chain_label_dot` of the labelling lab[b:b+T] read in place."""
    K = M.K
    T = M.lab_off[i + 1] - M.lab_off[i]
    v = 0.0
    for t in range(T):
        v += vec[t * K + lab[b + t]]
    off = T * K
    for t in range(T - 1):
        v += vec[off + lab[b + t] * K + lab[b + t + 1]]
    return v


@njit(cache=True, nogil=True, inline="always")
def chain_label_add(M, i, y, coef, vec):
    """vec += coef · m(y)."""
    K = M.K
    T = M.lab_off[i + 1] - M.lab_off[i]
    for t in range(T):
        vec[t * K + y[t]] += coef
    off = T * K
    for t in range(T - 1):
        vec[off + y[t] * K + y[t + 1]] += coef


@njit(cache=True, nogil=True, inline="always")
def chain_label_loss(M, i, y):
    """Normalized Hamming loss."""
    t0 = M.lab_off[i]
    T = M.lab_off[i + 1] - t0
    c = 0
    for t in range(T):
        if y[t] != M.gt[t0 + t]:
            c += 1
    return c / T


@njit(cache=True, nogil=True, inline="always")
def chain_gt_label(M, i, y):
    t0 = M.lab_off[i]
    for t in range(M.lab_off[i + 1] - t0):
        y[t] = M.gt[t0 + t]


@njit(cache=True, nogil=True, inline="always")
def chain_sqnorm(M, i, dlt, zbuf):
    """‖B_i δ‖² from the T×T Gram matrix of the augmented token features (node part) plus the
    first/last-label and transition parts; δ is sparse in k at each position. zbuf (float64,
    zero on entry, left zero) holds one position's labels with δ[t, k] != 0 (as exact floats):
    primitives are compiled without reference counting and so cannot allocate."""
    K = M.K
    T = M.lab_off[i + 1] - M.lab_off[i]
    g0 = M.gram_off[i]
    s = 0.0
    for t in range(T):
        ct = 0
        for k in range(K):
            if dlt[t * K + k] != 0.0:
                zbuf[ct] = k
                ct += 1
        if ct == 0:
            continue
        for u in range(T):
            gtu = M.gram[g0 + t * T + u]
            if gtu != 0.0:
                acc = 0.0
                for j in range(ct):
                    k = int(zbuf[j])
                    acc += dlt[t * K + k] * dlt[u * K + k]
                s += gtu * acc
        for j in range(ct):
            zbuf[j] = 0.0
    for k in range(K):
        s += dlt[k] * dlt[k] + dlt[(T - 1) * K + k] * dlt[(T - 1) * K + k]
    off = T * K
    for q in range(K * K):
        s += dlt[off + q] * dlt[off + q]
    return s


@njit(cache=True, nogil=True, inline="always")
def chain_axpy(M, i, coef, dlt, v, w, lb, ub, has_box):
    """v += coef · B_i δ over the labels with δ[t, k] != 0, w = clip(v) on touched coordinates
    (label-major at each position: a primitive cannot allocate a label list; each entry of
    v gets the same single update as feature-major order)."""
    K = M.K
    t0 = M.lab_off[i]
    T = M.lab_off[i + 1] - t0
    F = M.F1 - 1
    for t in range(T):
        tok = t0 + t
        base = t * K
        p0 = M.feat_indptr[tok]
        p1 = M.feat_indptr[tok + 1]
        for k in range(K):
            dk = dlt[base + k]
            if dk == 0.0:  # only the labels with δ[t, k] != 0 move w
                continue
            v[F * K + k] += coef * dk
            for p in range(p0, p1):
                v[M.feat_indices[p] * K + k] += (coef * M.feat_values[p]) * dk
            if has_box:
                q = F * K + k
                w[q] = _clip(v[q], lb[q], ub[q])
                for p in range(p0, p1):
                    q = M.feat_indices[p] * K + k
                    w[q] = _clip(v[q], lb[q], ub[q])
    for k in range(K):
        v[M.first_off + k] += coef * dlt[k]
        v[M.last_off + k] += coef * dlt[(T - 1) * K + k]
    off = T * K
    for q in range(K * K):
        v[M.trans_off + q] += coef * dlt[off + q]
    if has_box:
        for k in range(K):
            j = M.first_off + k
            w[j] = _clip(v[j], lb[j], ub[j])
            j = M.last_off + k
            w[j] = _clip(v[j], lb[j], ub[j])
        for q in range(K * K):
            j = M.trans_off + q
            w[j] = _clip(v[j], lb[j], ub[j])


@njit(cache=True, nogil=True, inline="always")
def chain_prefetch_block(M, i, sparse):
    """Prefetch the drawn sequence's token feature indices and, for label-space steps, its Gram
    matrix (hints only)."""
    t_first = M.lab_off[i]
    f_end = M.feat_indptr[M.lab_off[i + 1]]
    for q in range(M.feat_indptr[t_first], f_end, 8):
        prefetch(M.feat_indices, q)
    if sparse and M.gram.shape[0] > 0:
        for q in range(M.gram_off[i], M.gram_off[i + 1], 8):
            prefetch(M.gram, q)


@njit(cache=True, nogil=True, inline="always")
def chain_atom_value(M, i, h, w, a_lab, b, L):
    """⟨m(y), h⟩ of the cached labelling a_lab[b:b+L], node scores from h and transition scores
    from w itself (h's K×K part is a copy of them, which the partial scoring does not write)."""
    K = M.K
    tr_off = M.trans_off
    val = 0.0
    for t in range(L):
        val += h[uint64(t * K + a_lab[uint64(b + t)])]
    for t in range(L - 1):
        val += w[uint64(tr_off + a_lab[uint64(b + t)] * K + a_lab[uint64(b + t + 1)])]
    return val


register_model_kind(
    ChainArrays, "chain",
    scores=chain_scores, oracle=chain_oracle, label_dot=chain_label_dot, label_dot_at=chain_label_dot_at,
    label_add=chain_label_add, label_loss=chain_label_loss, gt_label=chain_gt_label, sqnorm=chain_sqnorm,
    axpy=chain_axpy, prefetch_block=chain_prefetch_block, scores_cached=chain_scores_cached,
    atom_value=chain_atom_value, pair_sqnorm=chain_pair_sqnorm, pair_apply=chain_pair_apply,
    pair_prefetch=chain_pair_prefetch,
)


def _check_chain_arrays(M, fail):
    """What the chain kernels index with: token offsets, CSR features, Gram blocks, w offsets."""
    n, K, F1 = int(M.n), int(M.K), M.F1
    if not _p._int(F1) or F1 < 1:
        fail(f"F1 must be an int >= 1, got {F1!r}")
    T = np.diff(M.lab_off)
    tokens = int(M.lab_off[-1])
    if not np.array_equal(np.diff(M.stat_off), T * K + K * K):
        fail("stat_off must give T_i·K + K² statistics to block i")
    _p.array(M, "gt", fail, lo=0, hi=K)
    indptr = _p.offsets(M, "feat_indptr", tokens + 1, fail)
    _p.array(M, "feat_indices", fail, dtype=np.int64, shape=(int(indptr[-1]),), lo=0, hi=F1 - 1)
    _p.array(M, "feat_values", fail, dtype=np.float64, shape=(int(indptr[-1]),))
    gram_off = _p.offsets(M, "gram_off", n + 1, fail)
    if not np.array_equal(np.diff(gram_off), T * T):
        fail("gram_off must give a T_i × T_i Gram block to block i")
    _p.array(M, "gram", fail, dtype=np.float64, shape=(int(gram_off[-1]),))
    want = (K * F1, K * F1 + K, K * F1 + 2 * K, K * F1 + 2 * K + K * K)
    got = (M.first_off, M.last_off, M.trans_off, M.d)
    if got != want:
        fail(f"(first_off, last_off, trans_off, d) must be {want} for K = {K}, F1 = {F1}, got {got}")


_p.register_arrays_check(ChainArrays, _check_chain_arrays)


@njit(cache=True, nogil=True)
def _chain_gram(seq_off, indptr, indices, values, F, gram_off, gram):
    mark = np.zeros(F)
    for i in range(seq_off.shape[0] - 1):
        t0 = seq_off[i]
        T = seq_off[i + 1] - t0
        g0 = gram_off[i]
        for t in range(T):
            a = t0 + t
            for p in range(indptr[a], indptr[a + 1]):
                mark[indices[p]] += values[p]
            for u in range(t, T):
                b = t0 + u
                s = 1.0  # constant attribute
                for p in range(indptr[b], indptr[b + 1]):
                    s += mark[indices[p]] * values[p]
                gram[g0 + t * T + u] = s
                gram[g0 + u * T + t] = s
            for p in range(indptr[a], indptr[a + 1]):
                mark[indices[p]] = 0.0


@njit(cache=True, nogil=True)
def _predict(M, w, out, h, y, vit_f, vit_i):
    K = M.K
    for i in range(M.n):
        t0 = M.lab_off[i]
        T = M.lab_off[i + 1] - t0
        chain_scores(M, i, w, h)
        for t in range(T):  # remove the loss term: plain decoding
            g = M.gt[t0 + t]
            for k in range(K):
                if k != g:
                    h[t * K + k] -= 1.0 / T
        chain_oracle(M, i, h, y, vit_f, vit_i)
        for t in range(T):
            out[t0 + t] = y[t]
