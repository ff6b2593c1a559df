"""Block samplers (Paper: Alg. 1 line 3, Alg. 2 line 4): uniform, permutation, fixed weights,
gap sampling through a sum tree over g_i^p (draw and update in O(log n)), max-gap, and the
bookkeeping of never-visited blocks and stored block gaps (Alg. 2 line 8).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..rng import rng_randint, rng_uniform
from .layout import (C_PERM_POS, C_UNVISITED, F_P, S_GAP_REF, SAMPLE_EXACT_GAP, SAMPLE_GAP, SAMPLE_MAXGAP,
                     SAMPLE_PERM, SAMPLE_UNIFORM, SAMPLE_WEIGHTS)


@njit(cache=True, nogil=True, inline="always")
def _leaf_weight(weights, gap_est, scalars, p, i):
    """Sampling weight of block i: the fixed weight, or its gap estimate g_i^p (Paper: Alg. 2
    has p = 1). For p != 1 the weight is (g_i / g_ref)^p with g_ref the largest gap estimate at
    the last rebuild, so that a large p neither underflows (every weight 0: uniform draws) nor
    overflows, and approaches max-gap sampling."""
    if weights.shape[0] > 0:
        return weights[i]
    g = gap_est[i]
    if not (g > 0.0):  # also NaN-safe
        return 0.0
    if p == 1.0:
        return g
    if g == np.inf:
        return np.inf
    return (g / scalars[S_GAP_REF]) ** p  # g_ref > 0: set by tree_rebuild before any leaf is computed


@njit(cache=True, nogil=True, inline="always")
def tree_update_arr(tree, weights, gap_est, scalars, p, i):
    """Set leaf i of the sampling tree to block i's weight and update the sums above it (the
    tree of Alg. 2's gap sampling: a draw and an update are O(log n))."""
    if p != 1.0 and weights.shape[0] == 0 and not (scalars[S_GAP_REF] > 0.0):
        tree_rebuild_arr(tree, weights, gap_est, scalars, p, gap_est.shape[0])  # p != 1: the first update fixes g_ref
        return
    size = tree.shape[0] // 2
    j = size + i
    leaf = _leaf_weight(weights, gap_est, scalars, p, i)
    tree[j] = leaf
    j //= 2
    while j >= 1:
        tree[j] = tree[2 * j] + tree[2 * j + 1]
        j //= 2
    # p != 1: a new largest gap may overflow, the sum of tiny weights underflow: rescale
    if p != 1.0 and weights.shape[0] == 0 and (leaf > 1e200 or not (tree[1] > 1e-200)):
        tree_rebuild_arr(tree, weights, gap_est, scalars, p, gap_est.shape[0])


@njit(cache=True, nogil=True)
def tree_rebuild_arr(tree, weights, gap_est, scalars, p, n):
    """Rebuild the whole sampling tree (and, for p != 1, its reference gap g_ref)."""
    size = tree.shape[0] // 2
    ref = 0.0
    for i in range(n):
        g = gap_est[i]
        if g < np.inf and g > ref:
            ref = g
    scalars[S_GAP_REF] = ref if ref > 0.0 else 1.0
    for j in range(size, 2 * size):
        tree[j] = 0.0
    for i in range(n):
        tree[size + i] = _leaf_weight(weights, gap_est, scalars, p, i)
    for j in range(size - 1, 0, -1):
        tree[j] = tree[2 * j] + tree[2 * j + 1]


@njit(cache=True, nogil=True)
def tree_rebuild(S, cfg_f, n):
    tree_rebuild_arr(S.tree, S.weights, S.gap_est, S.scalars, cfg_f[F_P], n)


@njit(cache=True, nogil=True, inline="always")
def mark_visited_arr(unv, unv_pos, counters, i):
    """Remove block i from the list of blocks whose gap was never computed."""
    pos = unv_pos[i]
    if pos >= 0:
        last = counters[C_UNVISITED] - 1
        other = unv[last]
        unv[pos] = other
        unv_pos[other] = pos
        unv[last] = i
        unv_pos[i] = -1
        counters[C_UNVISITED] = last


@njit(cache=True, nogil=True, inline="always")
def mark_visited(S, i):
    mark_visited_arr(S.unv, S.unv_pos, S.counters, i)


@njit(cache=True, nogil=True, inline="always")
def _tree_draw_arr(tree, rng, n):
    """Draw i with probability tree leaf i / total (uniform if the total is 0)."""
    total = tree[1]
    if not (total > 0.0):
        return rng_randint(rng, n)
    u = rng_uniform(rng) * total
    size = tree.shape[0] // 2
    j = 1
    while j < size:
        left = tree[2 * j]
        if u < left:
            j = 2 * j
        else:
            u -= left
            j = 2 * j + 1
    i = j - size
    if i >= n or tree[j] <= 0.0:  # round-off at the right edge: take the last positive leaf
        for q in range(n - 1, -1, -1):
            if tree[size + q] > 0.0:
                return q
    return i


@njit(cache=True, nogil=True, inline="always")
def set_block_gap_arr(gap_est, gap_iter, unv, unv_pos, counters, tree, weights, scalars, sampling, p, i, g, k):
    """Store block i's gap g (computed at iteration k), mark it visited and, under gap sampling,
    update its sampling weight (Paper: Alg. 2 line 8)."""
    gap_est[i] = g
    gap_iter[i] = k
    mark_visited_arr(unv, unv_pos, counters, i)
    if sampling == SAMPLE_GAP or sampling == SAMPLE_EXACT_GAP:
        tree_update_arr(tree, weights, gap_est, scalars, p, i)


@njit(cache=True, nogil=True, inline="always")
def _sample_arr(n, mode, rng, tree, gap_est, unv, counters, perm):
    """Phase *sample* (Paper: Alg. 1 line 3, Alg. 2 line 4): the draw of :func:`sample_block`
    on the arrays it needs. After an exact-gap refresh every block is visited, so that sampler
    draws from the tree here."""
    if mode == SAMPLE_UNIFORM:
        return rng_randint(rng, n)
    if mode == SAMPLE_PERM:
        pos = counters[C_PERM_POS]
        if pos == 0:
            for j in range(n):
                perm[j] = j
            for j in range(n - 1, 0, -1):
                r = rng_randint(rng, j + 1)
                tmp = perm[j]
                perm[j] = perm[r]
                perm[r] = tmp
        i = perm[pos]
        pos += 1
        counters[C_PERM_POS] = 0 if pos == n else pos
        return i
    if mode == SAMPLE_WEIGHTS:
        return _tree_draw_arr(tree, rng, n)
    nu = counters[C_UNVISITED]
    if nu > 0:
        return unv[rng_randint(rng, nu)]
    if mode == SAMPLE_MAXGAP:
        best = -np.inf
        arg = 0
        for j in range(n):
            if gap_est[j] > best:
                best = gap_est[j]
                arg = j
        return arg
    return _tree_draw_arr(tree, rng, n)
