"""Chain (sequence labelling) model: the paper's OCR and CoNLL model (Paper: App. I).

Joint feature map ψ(x, y) ∈ R^d, d = K·(F+1) + K + K + K², laid out as
  emission E (F+1, K) row-major: Σ_t x̃_t[j]·[y_t = k], x̃_t = (x_t, 1) (the constant attribute
  carries the per-label bias), first-label bias (K), last-label bias (K), transitions (K, K).

OCR: F = 128, K = 26, d = 4,082. Loss: normalized Hamming. Max oracle: Viterbi.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit, uint64

from .._prefetch import prefetch
from ..datasets.base import SequenceData
from ..kernels import _clip, register_model_kind
from . import protocol as _p
from .protocol import StructuredModel, check_labelling

__all__ = ["ChainModel", "ChainArrays", "check_chain_size"]

_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)


# ============================================================================ arrays and primitives
# The chain kind: its arrays and its numba primitives, registered with the solver's kernels at
# the end of this section (see gaplab.core.kernels.register_model_kind).

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
        # places: testing each one mispredicted; OCR-large, random blocks: 1.69 -> 1.42 us per block)
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
            # dropping it takes 9 % off a cache-hit step (A/B on OCR-large, same trajectory)
            if unit:  # binary features: no value loads (OCR-large: 1.24 -> 1.04 us per block scored)
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


@njit(cache=True, nogil=True, inline="always")
def chain_pair_prefetch(M, mu, ys, yv, L):
    """Prefetch the entries of μ_i that a label-space pairwise update between ys and yv touches."""
    K = M.K
    TKp = L * K
    for t in range(L):
        if ys[t] != yv[t]:
            prefetch(mu, t * K + ys[t])
            prefetch(mu, t * K + yv[t])
    for t in range(L - 1):
        prefetch(mu, TKp + ys[t] * K + ys[t + 1])
        prefetch(mu, TKp + yv[t] * K + yv[t + 1])


@njit(cache=True, nogil=True, inline="always")
def chain_pair_sqnorm(M, i, ys, yv, pos):
    """‖B_i (m(y_s) − m(y_v))‖² for two labellings of chain block i, in O(T + D²) (D: positions
    where they differ) from the labels and the T×T Gram matrix (the direction of a pairwise step;
    Paper: Alg. 3). Equal to :func:`chain_sqnorm` of the dense direction up to the order of the
    floating-point sum. ``pos``: int64 scratch of length >= T."""
    T = M.lab_off[i + 1] - M.lab_off[i]
    return _pair_sqnorm(M.K, T, M.gram, M.gram_off[i], ys, yv, pos)


@njit(cache=True, nogil=True, inline="always")
def chain_pair_apply(M, i, ys, yv, gam, mu, coef, v, w, lb, ub, has_box, pos):
    """μ_i += γ (m(y_s) − m(y_v)) and v += coef · B_i (m(y_s) − m(y_v)) (w = clip(v) on the touched
    coordinates when has_box), touching only the entries where the two labellings differ.
    Bitwise the same updates as the dense direction through :func:`chain_axpy`."""
    T = M.lab_off[i + 1] - M.lab_off[i]
    _pair_apply(M.K, M.lab_off[i], T, M.F1 - 1, M.feat_indptr, M.feat_indices, M.feat_values, M.first_off,
                M.last_off, M.trans_off, ys, yv, gam, mu, coef, v, w, lb, ub, has_box, M.feat_unit != 0, pos)


@njit(cache=True, nogil=True, inline="always")
def _differ_labels(ys, yv, T, pos):
    """List in pos the positions t < T where the labels of ys and yv differ; return their number
    (branch-free appends: the positions are few and at random places)."""
    nd = 0
    for t in range(T):
        pos[nd] = t
        nd += ys[t] != yv[t]
    return nd


@njit(cache=True, nogil=True, inline="always")
def _differ_transitions(ys, yv, T, pos):
    """List in pos the positions t < T − 1 where the transitions (y_t, y_t+1) of ys and yv
    differ; return their number."""
    nd = 0
    for t in range(T - 1):
        pos[nd] = t
        nd += (ys[t] != yv[t]) | (ys[t + 1] != yv[t + 1])
    return nd


@njit(cache=True, nogil=True, inline="always")
def _pair_sqnorm(K, T, gram, g0, ys, yv, pos):
    """See :func:`chain_pair_sqnorm`; ``pos``: int64 scratch of length >= T. Only the positions
    where the labellings differ contribute (elsewhere m(y_s) − m(y_v) is 0), so the sums run over
    their list: the same terms in the same order as a scan of all positions."""
    node = 0.0
    nd = _differ_labels(ys, yv, T, pos)
    for x in range(nd):
        t = pos[x]
        a = ys[t]
        b = yv[t]
        for z in range(nd):
            u = pos[z]
            c = ys[u]
            e = yv[u]
            m = (a == c) - (a == e) - (b == c) + (b == e)
            if m != 0:
                node += gram[uint64(g0 + t * T + u)] * m
    cnt = 0
    if ys[0] != yv[0]:
        cnt += 2  # first-position features
    if ys[T - 1] != yv[T - 1]:
        cnt += 2  # last-position features
    nt = _differ_transitions(ys, yv, T, pos)  # transitions (integer counts: the order does not matter)
    for x in range(nt):
        t = pos[x]
        ps = ys[t] * K + ys[t + 1]
        pv = yv[t] * K + yv[t + 1]
        for z in range(nt):
            u = pos[z]
            qs = ys[u] * K + ys[u + 1]
            qv = yv[u] * K + yv[u + 1]
            cnt += (ps == qs) - (ps == qv) - (pv == qs) + (pv == qv)
    return node + cnt


@njit(cache=True, nogil=True, inline="always")
def _pair_apply(K, t0, T, F, feat_indptr, feat_indices, feat_values, first_off, last_off, trans_off,
                ys, yv, gam, mu, coef, v, w, lb, ub, has_box, unit, pos):
    for t in range(T):
        a = ys[t]
        b = yv[t]
        if a == b:
            continue
        base = t * K
        mu[base + a] += gam
        mu[base + b] += gam * -1.0
        v[F * K + a] += coef
        v[F * K + b] += coef * -1.0
        tok = t0 + t
        if unit:  # binary features: coef · 1.0 is coef exactly
            for p in range(feat_indptr[tok], feat_indptr[tok + 1]):
                row = feat_indices[p] * K
                v[uint64(row + a)] += coef
                v[uint64(row + b)] += coef * -1.0
        else:
            for p in range(feat_indptr[tok], feat_indptr[tok + 1]):
                row = feat_indices[p] * K
                c = coef * feat_values[p]
                v[uint64(row + a)] += c
                v[uint64(row + b)] += c * -1.0
        if has_box:
            for q in (F * K + a, F * K + b):
                w[q] = _clip(v[q], lb[q], ub[q])
            for p in range(feat_indptr[tok], feat_indptr[tok + 1]):
                row = feat_indices[p] * K
                w[row + a] = _clip(v[row + a], lb[row + a], ub[row + a])
                w[row + b] = _clip(v[row + b], lb[row + b], ub[row + b])
    for end, off in ((0, first_off), (T - 1, last_off)):
        a = ys[end]
        b = yv[end]
        if a != b:
            v[off + a] += coef
            v[off + b] += coef * -1.0
            if has_box:
                w[off + a] = _clip(v[off + a], lb[off + a], ub[off + a])
                w[off + b] = _clip(v[off + b], lb[off + b], ub[off + b])
    TK = T * K
    # each distinct transition once, with its net count over both labellings. A transition at a
    # position where the two labellings agree adds +1 and −1 to the same pair, so only the
    # positions where they differ (listed in pos) can give a nonzero net: candidate c is the
    # s-pair at pos[c] (c < nt) or the v-pair at pos[c − nt], taken unless an earlier candidate is
    # the same pair. Distinct pairs are distinct entries, so the updates are those of the dense
    # direction whatever their order.
    nt = _differ_transitions(ys, yv, T, pos)
    for c in range(2 * nt):
        u0 = pos[c] if c < nt else pos[c - nt]
        q = ys[u0] * K + ys[u0 + 1] if c < nt else yv[u0] * K + yv[u0 + 1]
        seen = False
        for c2 in range(c):
            u2 = pos[c2] if c2 < nt else pos[c2 - nt]
            q2 = ys[u2] * K + ys[u2 + 1] if c2 < nt else yv[u2] * K + yv[u2 + 1]
            if q2 == q:
                seen = True
                break
        if seen:
            continue
        net = 0
        for z in range(nt):
            u = pos[z]
            if ys[u] * K + ys[u + 1] == q:
                net += 1
            if yv[u] * K + yv[u + 1] == q:
                net -= 1
        if net != 0:
            mu[TK + q] += gam * net
            j = trans_off + q
            v[j] += coef * net
            if has_box:
                w[j] = _clip(v[j], lb[j], ub[j])

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


def chain_state_bytes(n: int, tokens: int, K: int, n_features: int) -> int:
    """A lower bound of the bytes a solver over a chain model with K labels needs: the block
    statistics μ (T_i·K node marginals and K² transitions per sequence) and six vectors of
    dimension d = K·(F+1) + 2K + K² (w, v, the scratch of a step). Python ints: no overflow."""
    d = K * (n_features + 1) + 2 * K + K * K
    return 8 * (tokens * K + n * K * K) + 8 * 6 * d


def memory_limit_bytes() -> int:
    """The memory this process may use: the smaller of the machine's physical memory and the
    address-space limit (``ulimit -v``, RLIMIT_AS) when one is set."""
    import os
    limit = None
    try:
        limit = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        pass
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            limit = soft if limit is None else min(limit, soft)
    except (ImportError, ValueError, OSError):
        pass
    return int(limit) if limit else 2 ** 62


def check_chain_size(n: int, tokens: int, K: int, n_features: int, what: str = "K") -> None:
    """Refuse a number of labels K whose statistics cannot fit in memory, before anything of
    that size is allocated.

    Raises
    ------
    ValueError
        Saying how much memory K labels need, how much the process may use and the largest K
        that fits for these sequences.
    """
    need = chain_state_bytes(n, tokens, K, n_features)
    have = memory_limit_bytes()
    if need <= have:
        return
    lo, hi = 1, K  # the largest K that fits (bisection on the monotone bound)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if chain_state_bytes(n, tokens, mid, n_features) <= have:
            lo = mid
        else:
            hi = mid - 1
    raise ValueError(
        f"{what} = {K} labels is more than a chain model can hold here: its solver keeps K² transition "
        f"statistics per sequence, at least {need / 2 ** 30:.3g} GiB for these {n} sequences, and this "
        f"process may use {have / 2 ** 30:.3g} GiB; at most K = {lo} labels fit (labels are numbered "
        "0..K-1: renumber sparse label values first)")


class ChainModel(StructuredModel):
    """The chain SSVM model over a :class:`SequenceData` training set.

    Parameters
    ----------
    data : SequenceData
        Training sequences (one block of the dual per sequence).

    Attributes
    ----------
    d : int
        Dimension of w: K·(F+1) + 2K + K².
    arrays : ChainArrays
        The flat arrays the numba kernels read (read-only; checked again when a Solver is built).
    """

    kind = "chain"
    oracle_tier = "compiled"

    def __init__(self, data: SequenceData):
        if not isinstance(data, SequenceData):
            raise TypeError(f"data must be a SequenceData, got {type(data).__name__}")
        self.data = data
        self.K = K = data.n_labels
        self.F = F = data.n_features
        self.F1 = F + 1
        self.first_off = K * self.F1
        self.last_off = self.first_off + K
        self.trans_off = self.last_off + K
        check_chain_size(data.n, data.n_tokens, K, F)  # before the Gram blocks and any solver state
        self.d = self.trans_off + K * K
        self.n = data.n
        lens = data.lengths
        self.max_len = int(lens.max())
        self.arrays = self._build(data, with_gram=True)
        self.name = getattr(data, "name", None) or "chain"

    def _build(self, data: SequenceData, with_gram: bool) -> ChainArrays:
        K = self.K
        lens = data.lengths
        stat_off = np.concatenate([[0], np.cumsum(lens * K + K * K)]).astype(np.int64)
        if with_gram:
            gram_off = np.concatenate([[0], np.cumsum(lens * lens)]).astype(np.int64)
            gram = np.zeros(int(gram_off[-1]))
            _chain_gram(data.seq_offsets, data.feat_indptr, data.feat_indices, data.feat_values,
                        self.F, gram_off, gram)
        else:
            gram_off, gram = np.zeros(data.n + 1, dtype=np.int64), _EMPTY_F
        return _p.freeze_arrays(ChainArrays(  # read-only: the kernels trust these offsets
            data.n, self.d, K, stat_off, data.seq_offsets, data.labels,
            data.feat_indptr, data.feat_indices, data.feat_values, self.F1,
            int(bool(np.all(data.feat_values == 1.0))),
            gram_off, gram, self.first_off, self.last_off, self.trans_off,
        ))

    # ---------------------------------------------------------------- helpers
    @property
    def stat_sizes(self) -> np.ndarray:
        return np.diff(self.arrays.stat_off)

    def label_len(self, i: int) -> int:
        return int(self.data.lengths[i])

    def joint_feature(self, i: int, y) -> np.ndarray:
        """Dense ψ(x_i, y), float64 of shape (d,) (for tests and display; O(d))."""
        y = np.asarray(y, dtype=np.int64)
        X = self.data.dense_features(i)
        T = X.shape[0]
        if y.shape != (T,):
            raise ValueError(f"y must have shape ({T},), got {y.shape}")
        K = self.K
        psi = np.zeros(self.d)
        E = psi[: self.first_off].reshape(self.F1, K)
        for t in range(T):
            E[: self.F, y[t]] += X[t]
            E[self.F, y[t]] += 1.0
        psi[self.first_off + y[0]] += 1
        psi[self.last_off + y[-1]] += 1
        for t in range(T - 1):
            psi[self.trans_off + y[t] * K + y[t + 1]] += 1
        return psi

    def loss(self, i: int, y) -> float:
        """Normalized Hamming loss L_i(y)."""
        gt = self.data.labels[self.data.tokens(i)]
        y = np.asarray(y)
        return float(np.mean(gt != y))

    def ground_truth(self, i: int) -> np.ndarray:
        """The correct labels of sequence i, int64 of shape (T_i,)."""
        return self.data.labels[self.data.tokens(i)].copy()

    def n_labels(self, i: int) -> int:
        """K, the number of labels of every position."""
        return self.K

    def max_oracle(self, i: int, w) -> np.ndarray:
        """Loss-augmented Viterbi decoding of sequence i at w, int64 of shape (T_i,)
        (Paper: Eq. (2))."""
        from . import max_oracle
        return max_oracle(self, i, w)[0]

    def decode(self, i: int, w) -> np.ndarray:
        """Plain Viterbi decoding argmax_y ⟨w, ψ(x_i, y)⟩ of sequence i, int64 of shape (T_i,)."""
        from . import max_oracle
        return max_oracle(self, i, w, loss_augmented=False)[0]

    def describe_block(self, i: int, y) -> dict:
        """The sequence's labels as text (letters for OCR, chunk tags for CoNLL), the words
        (``words``: the data's words, or its extras' word of the sequence) and the letter images
        (``image``: uint8 (T_i, h, w), dark ink on white, from the data's extras ``images``) when
        the data has them (the display contract: :mod:`gaplab.core.models.display`)."""
        y = check_labelling(self, i, y)
        out = {"kind": "sequence", "text": self.describe_label(i, y), "labels": y}
        words = getattr(self.data, "words", None)
        if words is not None:
            out["words"] = words[i] if not hasattr(words, "shape") else None
        extras = getattr(self.data, "extras", None) or {}
        if out.get("words") is None and extras.get("words") is not None:
            out["words"] = extras["words"][i]
        if extras.get("images") is not None:   # 0/1 letter images (1: ink)
            ink = np.asarray(extras["images"][self.data.tokens(i)], dtype=np.int64)
            out["image"] = np.clip(255 - 255 * ink, 0, 255).astype(np.uint8)
        return out

    def predict(self, w: np.ndarray, data: SequenceData | None = None) -> np.ndarray:
        """Plain decoding argmax_y ⟨w, ψ(x, y)⟩ of every token of ``data`` (default: the
        training set). Returns int64 labels of shape (n_tokens,)."""
        data = self.data if data is None else data
        self._check_compatible(data)
        w = self._check_w(w)
        M = self.arrays if data is self.data else self._build(data, with_gram=False)
        out = np.empty(data.n_tokens, dtype=np.int64)
        T = int(data.lengths.max())
        _predict(M, w, out, np.empty(T * self.K + self.K * self.K), np.empty(T, np.int64),
                 np.empty(T * self.K), np.empty(T * self.K, np.int64))
        return out

    def error(self, w: np.ndarray, data: SequenceData | None = None) -> float:
        """Test error: fraction of wrongly labelled tokens (letters for OCR)."""
        data = self.data if data is None else data
        return float(np.mean(self.predict(w, data) != data.labels))

    def _check_compatible(self, data):
        if not isinstance(data, SequenceData):
            raise TypeError(f"data must be a SequenceData, got {type(data).__name__}")
        if data.n_features != self.F or data.n_labels != self.K:
            raise ValueError(
                f"data has {data.n_features} features and {data.n_labels} labels; the model expects "
                f"{self.F} and {self.K}"
            )

    def _check_w(self, w):
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.d,):
            raise ValueError(f"w must have shape ({self.d},), got {w.shape}")
        return w

    def _subtract_loss(self, i, h):
        """Remove the loss term 1/T·[k != y_t] from a score vector of sequence i (decoding)."""
        M = self.arrays
        t0, t1 = int(M.lab_off[i]), int(M.lab_off[i + 1])
        T = t1 - t0
        K = M.K
        U = h[: T * K].reshape(T, K)
        U -= 1.0 / T
        U[np.arange(T), M.gt[t0:t1]] += 1.0 / T

    def describe_label(self, i: int, y) -> str:
        names = self.data.label_names
        sep = "" if all(len(s) == 1 for s in names) else " "
        return sep.join(names[int(k)] for k in y)
