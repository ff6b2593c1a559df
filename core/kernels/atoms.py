"""Atoms: the labellings of a block kept with their weights α_i(y), the active set of away and
pairwise steps and the cache of Alg. 5 in one pool per block (find, insert with LRU eviction of
inactive atoms, remove, trim to the cache size, purge tiny weights, resync μ_i and ℓ_i from the
atoms). Paper: Alg. 3-5; App. G.
"""
from __future__ import annotations

import numpy as np
from numba import njit, uint64

from .dispatch import block_axpy, label_add
from .layout import C_GROW, C_PURGE, F_DROP_TOL, F_LAM, I_BOX, I_CACHE, I_CACHE_SIZE, S_ELL


@njit(cache=True, nogil=True, inline="always")
def label_hash(y, L):
    hsh = uint64(1469598103934665603)
    for t in range(L):
        hsh ^= uint64(y[t] + 1)
        hsh *= uint64(1099511628211)
    return hsh


@njit(cache=True, nogil=True, inline="always")
def atom_base(M, S, i, s):
    cap = S.a_alpha.shape[1]
    L = M.lab_off[i + 1] - M.lab_off[i]
    return M.lab_off[i] * cap + s * L


@njit(cache=True, nogil=True, inline="always")
def atom_find(M, S, i, y, hsh):
    """Slot of labelling y in block i's atoms, or -1 (hash, then exact comparison)."""
    L = M.lab_off[i + 1] - M.lab_off[i]
    for s in range(S.a_count[i]):
        if S.a_hash[i, s] == hsh:
            b = atom_base(M, S, i, s)
            same = True
            for t in range(L):
                if S.a_lab[b + t] != y[t]:
                    same = False
                    break
            if same:
                return s
    return -1


@njit(cache=True, nogil=True)
def atom_remove(M, S, i, s):
    """Remove slot s of block i (swap with the last slot)."""
    last = S.a_count[i] - 1
    if s != last:
        L = M.lab_off[i + 1] - M.lab_off[i]
        bs = atom_base(M, S, i, s)
        bl = atom_base(M, S, i, last)
        for t in range(L):
            S.a_lab[bs + t] = S.a_lab[bl + t]
        S.a_alpha[i, s] = S.a_alpha[i, last]
        S.a_loss[i, s] = S.a_loss[i, last]
        S.a_hash[i, s] = S.a_hash[i, last]
        S.a_used[i, s] = S.a_used[i, last]
    S.a_alpha[i, last] = 0.0
    S.a_count[i] = last


@njit(cache=True, nogil=True)
def atom_insert(M, S, i, y, hsh, loss, k):
    """Insert labelling y (α = 0) into block i; evicts the least recently used inactive atom
    when the pool is full. Returns the slot, or -1 when every slot holds an active atom
    (the caller must grow the pool first; see C_GROW)."""
    return atom_insert_arr(M, i, y, hsh, loss, k, S.a_lab, S.a_alpha, S.a_count, S.a_hash, S.a_used, S.a_loss)


@njit(cache=True, nogil=True)
def atom_insert_arr(M, i, y, hsh, loss, k, a_lab, a_alpha, a_count, a_hash, a_used, a_loss):
    """:func:`atom_insert` on the atom arrays (a call with the whole state tuple costs a
    reference-count update per array)."""
    cap = a_alpha.shape[1]
    L = M.lab_off[i + 1] - M.lab_off[i]
    if a_count[i] < cap:
        s = a_count[i]
        a_count[i] += 1
    else:
        s = -1
        oldest = np.iinfo(np.int64).max
        for q in range(cap):
            if a_alpha[i, q] == 0.0 and a_used[i, q] < oldest:
                oldest = a_used[i, q]
                s = q
        if s < 0:
            return -1
    b = M.lab_off[i] * cap + s * L
    for t in range(L):
        a_lab[b + t] = y[t]
    a_alpha[i, s] = 0.0
    a_loss[i, s] = loss
    a_hash[i, s] = hsh
    a_used[i, s] = k
    return s


@njit(cache=True, nogil=True, inline="always")
def atoms_trim(M, S, cfg_i, i):
    """Keep the cache within its size: drop inactive atoms (α = 0), least recently used first,
    while the block holds more than cache_size atoms; without a cache drop every inactive atom.
    Active atoms are never dropped. Flags C_GROW when the pool is full of active atoms."""
    limit = cfg_i[I_CACHE_SIZE] if cfg_i[I_CACHE] != 0 else 0
    while S.a_count[i] > limit:
        s = -1
        oldest = np.iinfo(np.int64).max
        for q in range(S.a_count[i]):
            if S.a_alpha[i, q] == 0.0 and S.a_used[i, q] < oldest:
                oldest = S.a_used[i, q]
                s = q
        if s < 0:
            break
        atom_remove(M, S, i, s)
    if pool_full(S, i):
        S.counters[C_GROW] = 1


@njit(cache=True, nogil=True, inline="always")
def pool_full(S, i):
    """Every slot of block i's atom pool holds an active atom (nothing can be inserted)."""
    cap = S.a_alpha.shape[1]
    if S.a_count[i] < cap:
        return False
    for q in range(cap):
        if S.a_alpha[i, q] == 0.0:
            return False
    return True


@njit(cache=True, nogil=True)
def resync_block(M, S, cfg_i, cfg_f, i):
    """Recompute μ_i and ℓ_i from block i's atoms and move w accordingly (exactly), after the
    atoms' α were changed outside a step (purge + renormalization, path rescaling)."""
    n = M.n
    lam = cfg_f[F_LAM]
    so = M.stat_off[i]
    p = M.stat_off[i + 1] - so
    L = M.lab_off[i + 1] - M.lab_off[i]
    for q in range(p):
        S.tmp[q] = 0.0
    ell = 0.0
    for s in range(S.a_count[i]):
        a = S.a_alpha[i, s]
        if a > 0.0:
            b = atom_base(M, S, i, s)
            label_add(M, i, S.a_lab[b:b + L], a, S.tmp)
            ell += a * S.a_loss[i, s]
    for q in range(p):
        S.dlt[q] = S.tmp[q] - S.mu[so + q]
        S.mu[so + q] = S.tmp[q]
    block_axpy(M, i, -1.0 / (lam * n), S.dlt, S.v, S.w, S.lb, S.ub, cfg_i[I_BOX] != 0)
    S.scalars[S_ELL] += ell / n - S.ell[i]
    S.ell[i] = ell / n


@njit(cache=True, nogil=True)
def purge_small(M, S, cfg_i, cfg_f, i):
    """Purge atoms with 0 < α <= drop_tol, renormalize α and resync the block."""
    tol = cfg_f[F_DROP_TOL]
    purged = False
    tot = 0.0
    for s in range(S.a_count[i]):
        a = S.a_alpha[i, s]
        if a > 0.0 and a <= tol:
            S.a_alpha[i, s] = 0.0
            purged = True
            S.counters[C_PURGE] += 1
        else:
            tot += S.a_alpha[i, s]
    if purged:
        for s in range(S.a_count[i]):
            S.a_alpha[i, s] /= tot
        resync_block(M, S, cfg_i, cfg_f, i)
