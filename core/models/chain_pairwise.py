"""The chain kind's label-space pairwise primitives: a pairwise (or away) step between two
labellings ys and yv of one sequence works on the two labellings themselves, not on dense
statistics: ‖B(m(ys) − m(yv))‖² in O(T + D²) from the sequence's Gram matrix (D: the
positions where they differ) and an update of μ_i, v and w that touches only those positions
and transitions. Registered with the other chain primitives in
:mod:`gaplab.core.models.chain_primitives`.

Paper: Alg. 3 (pairwise step), Alg. 4 (away step), App. H (box: w = clip(v)).
"""
from __future__ import annotations

from numba import njit, uint64

from .._prefetch import prefetch
from ..kernels import _clip

__all__ = ["chain_pair_prefetch", "chain_pair_sqnorm", "chain_pair_apply"]


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
