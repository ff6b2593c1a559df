"""Kernels that move every block at once: the batch FW step (Paper: Alg. 8), the recomputation of
w and ℓ from the block statistics, the vertex start α^∞ of the regularization path (Alg. 6) and
the rescaling of Proposition 1.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .atoms import atom_find, atom_insert, atom_remove, atoms_trim, label_hash, pool_full
from .dispatch import _clip, block_axpy, gt_label, label_add, label_loss
from .layout import C_BATCH, C_GROW, C_ITER, F_LAM, I_BOX, I_TRACK, S_ELL
from .phases import _line


@njit(cache=True, nogil=True)
def batch_fw_step(M, S, cfg_i, cfg_f, gap):
    """Batch FW step towards the FW corners stored by the last exact gap pass (Paper: Alg. 8;
    the authors' do_batch_step). Returns γ, or -1.0 if some atom pool must grow first
    (nothing changed then)."""
    n = M.n
    lam = cfg_f[F_LAM]
    track = cfg_i[I_TRACK] != 0
    has_box = cfg_i[I_BOX] != 0
    if track:
        for i in range(n):
            if pool_full(S, i):
                S.counters[C_GROW] = 1
                return -1.0
    d = S.zbuf.shape[0]
    z = np.zeros(d)
    zero = np.zeros(0)
    for i in range(n):
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        b = M.lab_off[i]
        L = M.lab_off[i + 1] - b
        for q in range(p):
            S.dlt[q] = -S.mu[so + q]
        label_add(M, i, S.batch_lab[b:b + L], 1.0, S.dlt)
        block_axpy(M, i, 1.0, S.dlt, z, z, zero, zero, False)
    qn = 0.0
    for j in range(d):
        qn += z[j] * z[j]
    gam, _ = _line(gap, qn, lam, n, 1.0)
    if gam <= 0.0:
        return 0.0
    k = S.counters[C_ITER]
    for i in range(n):
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        b = M.lab_off[i]
        L = M.lab_off[i + 1] - b
        y = S.batch_lab[b:b + L]
        for q in range(p):
            S.mu[so + q] *= (1.0 - gam)
        label_add(M, i, y, gam, S.mu[so:so + p])
        loss = label_loss(M, i, y)
        old = S.ell[i]
        S.ell[i] = old + gam * (loss / n - old)
        S.scalars[S_ELL] += S.ell[i] - old
        if track:
            hsh = label_hash(y, L)
            s = atom_find(M, S, i, y, hsh)
            if s < 0:
                s = atom_insert(M, S, i, y, hsh, loss, k)
            for q in range(S.a_count[i]):
                S.a_alpha[i, q] *= (1.0 - gam)
            S.a_alpha[i, s] += gam
            atoms_trim(M, S, cfg_i, i)
    c = -gam / (lam * n)
    for j in range(d):
        S.v[j] += c * z[j]
        if has_box:
            S.w[j] = _clip(S.v[j], S.lb[j], S.ub[j])
    S.counters[C_BATCH] += 1
    return gam


@njit(cache=True, nogil=True)
def recompute_primal(M, S, cfg_i, cfg_f):
    """Recompute v = Aα = (1/(λn)) Σ_i B_i (m(y_i) − μ_i) from the block statistics, w = clip(v),
    and ℓ = Σ ℓ_i (from scratch; removes accumulated round-off)."""
    n = M.n
    lam = cfg_f[F_LAM]
    has_box = cfg_i[I_BOX] != 0
    for j in range(S.v.shape[0]):
        S.v[j] = 0.0
    ell = 0.0
    for i in range(n):
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        for q in range(p):
            S.dlt[q] = -S.mu[so + q]
        gt_label(M, i, S.ybuf)
        label_add(M, i, S.ybuf, 1.0, S.dlt)
        block_axpy(M, i, 1.0 / (lam * n), S.dlt, S.v, S.v, S.lb, S.ub, False)
        ell += S.ell[i]
    if has_box:
        for j in range(S.v.shape[0]):
            S.w[j] = _clip(S.v[j], S.lb[j], S.ub[j])
    S.scalars[S_ELL] = ell


@njit(cache=True, nogil=True)
def set_vertices(M, S, cfg_i, cfg_f, labels):
    """Put every block on the corner α_i = e_{y~_i} (labels: concatenated y~_i, like M.gt),
    with atoms {y~_i: 1} when tracked, then recompute w. (Paper: Alg. 6, dual point α^∞.)"""
    n = M.n
    track = cfg_i[I_TRACK] != 0
    for i in range(n):
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        b = M.lab_off[i]
        L = M.lab_off[i + 1] - b
        y = labels[b:b + L]
        for q in range(p):
            S.mu[so + q] = 0.0
        label_add(M, i, y, 1.0, S.mu[so:so + p])
        loss = label_loss(M, i, y)
        S.ell[i] = loss / n
        if track:
            while S.a_count[i] > 0:
                atom_remove(M, S, i, S.a_count[i] - 1)
            s = atom_insert(M, S, i, y, label_hash(y, L), loss, S.counters[C_ITER])
            S.a_alpha[i, s] = 1.0
    recompute_primal(M, S, cfg_i, cfg_f)


@njit(cache=True, nogil=True)
def rescale_to_gt_from(M, S, cfg_i, rho, start):
    """Proposition 1 rescaling: α_i(y) ← ρ α_i(y) for y ≠ y_i, the rest on y_i (μ_i, ℓ_i and
    the atoms; w is unchanged), for blocks start..n-1. Returns the first block whose atom pool
    had no room for the ground-truth atom (that block and the later ones are untouched), or -1
    when all blocks were done."""
    n = M.n
    track = cfg_i[I_TRACK] != 0
    for i in range(start, n):
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        L = M.lab_off[i + 1] - M.lab_off[i]
        gt_label(M, i, S.ybuf)
        if track:
            hsh = label_hash(S.ybuf, L)
            s = atom_find(M, S, i, S.ybuf, hsh)
            if s < 0:
                s = atom_insert(M, S, i, S.ybuf, hsh, label_loss(M, i, S.ybuf), S.counters[C_ITER])
                if s < 0:
                    return i
            for q in range(S.a_count[i]):
                S.a_alpha[i, q] *= rho
            S.a_alpha[i, s] += 1.0 - rho
            atoms_trim(M, S, cfg_i, i)
        for q in range(p):
            S.mu[so + q] *= rho
        label_add(M, i, S.ybuf, 1.0 - rho, S.mu[so:so + p])
        old = S.ell[i]
        S.ell[i] = rho * old
    ell = 0.0
    for i in range(n):
        ell += S.ell[i]
    S.scalars[S_ELL] = ell
    return -1
