"""The block-step drivers: the phases of :mod:`.phases` in the order of the paper's algorithms.

- :func:`run_steps` / :func:`_run_steps_nrt_free`: the fused loop for a model with a compiled
  max oracle (sample → before the oracle → oracle or cache hit → FW corner → after it).
- :func:`pre_step` / :func:`post_step`: the same step in two halves for a Python max oracle,
  called from Python between them.

Paper: Alg. 1 (BCFW), Alg. 2 (gap sampling), Alg. 3 (pairwise), Alg. 4 (away), Alg. 5 (cache).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .atoms import atoms_trim, purge_small
from .dispatch import _m_label_space, _m_oracle, _m_pair_prefetch, _m_scores, label_dot
from .gaps import _block_gap_at
from .layout import (C_GROW, C_ITER, C_SAMPLER_ORACLE, F_DROP_TOL, F_LAM, F_P, FLAG_DROP, FLAG_HIT,
                     FLAG_ORACLE, I_BOX, I_CACHE, I_CACHE_SIZE, I_SAMPLING, I_STEP, I_TRACK, KIND_PAIRWISE,
                     S_GLOBAL_GAP, SAMPLE_EXACT_GAP, STEP_FW)
from .phases import (phase_apply, phase_away_corner, phase_cache_lookup, phase_candidates, phase_fw_corner,
                     phase_log, phase_prefetch, phase_scan_dense, phase_scan_label_space, phase_score)
from .samplers import _sample_arr, mark_visited, tree_rebuild


@njit(cache=True, nogil=True, inline="always")
def sample_block(M, S, cfg_i, cfg_f):
    """Draw the next block (Paper: Alg. 1 line 3 / Alg. 2 line 4). Gap-based samplers first
    visit every never-visited block (gap estimate +inf) in uniformly random order. The idealized
    sampler of Theorem 2 (exact gap) recomputes every block gap before the draw (oracle calls
    counted apart, C_SAMPLER_ORACLE)."""
    n = M.n
    mode = cfg_i[I_SAMPLING]
    if mode == SAMPLE_EXACT_GAP:
        k = S.counters[C_ITER]
        for j in range(n):
            S.gap_est[j] = _block_gap_at(M, S, j)
            S.gap_iter[j] = k
            mark_visited(S, j)
        S.counters[C_SAMPLER_ORACLE] += n
        tree_rebuild(S, cfg_f, n)
    return _sample_arr(n, mode, S.rng, S.tree, S.gap_est, S.unv, S.counters, S.perm)


@njit(cache=True, nogil=True, inline="always")
def _fw_corner(M, S, cfg_i, cfg_f, i, k, L, fw_val, mu_h):
    """:func:`phase_fw_corner` on the state's arrays."""
    return phase_fw_corner(M, i, k, L, fw_val, mu_h, cfg_i[I_TRACK] != 0, cfg_i[I_SAMPLING], cfg_f[F_P], S.ybuf,
                           S.counters, S.gap_est, S.gap_iter, S.unv, S.unv_pos, S.tree, S.weights, S.scalars,
                           S.a_lab, S.a_alpha, S.a_count, S.a_hash, S.a_used, S.a_loss)


@njit(cache=True, nogil=True, inline="always")
def _step_after_fw_corner(M, S, cfg_i, cfg_f, i, k, L, flags, fw_slot, fw_val, fw_loss, mu_h, a_slot, a_val,
                          sparse, dpos):
    """The phases after the FW corner is known: away corner, candidates, apply, trim, log."""
    n = M.n
    step = cfg_i[I_STEP]
    track = cfg_i[I_TRACK] != 0
    cap = S.a_alpha.shape[1]
    so = M.stat_off[i]
    p = M.stat_off[i + 1] - so
    mu = S.mu[so:so + p]
    for t in range(L):
        S.last_fw[t] = S.ybuf[t]
    alpha_a = 0.0
    if step != STEP_FW:
        a_slot, a_val = phase_away_corner(M, i, S.h, S.a_lab, S.a_alpha, S.a_count, cap, L, sparse, a_slot, a_val,
                                          S.yaway, S.last_away)
        alpha_a = S.a_alpha[i, a_slot]
    if sparse:
        # the label-space pairwise update touches μ_i only where the two corners differ: prefetch
        # those entries so their misses overlap
        _m_pair_prefetch(M, mu, S.ybuf, S.yaway, L)
    kind, gam, gmax, best_imp, g_used = phase_candidates(
        M, i, step, sparse, cfg_f[F_LAM], n, p, mu, mu_h, fw_val, a_val, alpha_a, S.ybuf, S.yaway, S.dlt, S.tmp,
        S.zbuf, dpos)
    if phase_apply(M, i, kind, gam, gmax, sparse, cfg_f[F_LAM], n, p, mu, S.dlt, S.ybuf, S.yaway, S.v, S.w, S.lb,
                   S.ub, cfg_i[I_BOX] != 0, dpos, S.ell, S.scalars, S.counters, S.a_alpha, S.a_loss, S.a_count,
                   fw_slot, a_slot, fw_loss, track):
        flags |= FLAG_DROP
    if track:  # phase trim: purge tiny atoms, keep the cache within its size (Alg. 5), flag a full pool
        if kind != KIND_PAIRWISE and gam > 0.0 and cfg_f[F_DROP_TOL] > 0.0:
            purge_small(M, S, cfg_i, cfg_f, i)
        a_count = S.a_count
        a_alpha = S.a_alpha
        limit = cfg_i[I_CACHE_SIZE] if cfg_i[I_CACHE] != 0 else 0
        if a_count[i] > limit:
            atoms_trim(M, S, cfg_i, i)
        elif a_count[i] == cap:
            # a full pool must grow before the block's next new labelling: when the cache may
            # hold more (cap <= its size; Alg. 5 keeps up to `size` labellings, inactive ones
            # included) or when every slot is active (the active set needs room)
            full = cap <= limit
            if not full:
                full = True
                for q in range(a_count[i]):
                    if a_alpha[i, q] == 0.0:
                        full = False
                        break
            if full:
                S.counters[C_GROW] = 1
    phase_log(S.log, S.counters, k, i, kind, flags, gam, gmax, S.gap_est[i], g_used, best_imp, track, S.a_alpha,
              S.a_count)


@njit(cache=True, nogil=True, inline="always")
def _step_before_oracle(M, S, cfg_i, cfg_f, i, sparse, keys, terms, klist):
    """The phases before the max oracle: prefetch, score, scan, FW corner from the cache.
    Returns (k, L, could_hit, partial, mu_h, a_slot, a_val, hit, fw_slot, fw_val, fw_loss)."""
    n = M.n
    cap = S.a_alpha.shape[1]
    track = cfg_i[I_TRACK] != 0
    phase_prefetch(M, i, track, sparse, cap, S.a_alpha, S.a_hash, S.a_loss, S.a_used, S.a_lab)
    k = S.counters[C_ITER]
    so = M.stat_off[i]
    p = M.stat_off[i + 1] - so
    L = M.lab_off[i + 1] - M.lab_off[i]
    mu = S.mu[so:so + p]
    could_hit, partial = phase_score(M, i, S.w, S.h, mu, S.mark, S.a_lab, S.a_count, S.gap_iter,
                                     S.scalars[S_GLOBAL_GAP], cfg_i[I_CACHE] != 0, sparse, cap, L, klist)
    a_slot = -1
    a_val = 0.0
    if sparse:
        mu_h, best, fw_slot, a_slot, a_val = phase_scan_label_space(M, i, S.h, S.w, S.a_lab, S.a_alpha, S.a_hash,
                                                                    S.a_count[i], could_hit, cap, L, keys, terms)
    else:
        mu_h, best, fw_slot = phase_scan_dense(M, i, S.h, mu, p, S.a_lab, S.a_count, could_hit, cap, L)
    hit, fw_slot, fw_val, fw_loss = phase_cache_lookup(M, i, k, could_hit, best, mu_h, fw_slot, S.gap_est,
                                                       S.gap_iter, S.scalars[S_GLOBAL_GAP], cfg_f, n, S.a_lab,
                                                       S.a_used, S.a_loss, cap, L, S.ybuf, S.counters)
    return k, L, could_hit, partial, mu_h, a_slot, a_val, hit, fw_slot, fw_val, fw_loss


@njit(cache=True, nogil=True, inline="always")
def _scratch(M, S):
    cap = S.a_alpha.shape[1]
    keys = np.empty(cap, dtype=np.uint64)      # active-set scan: label hashes and α·⟨m(y), h⟩
    terms = np.empty(cap)
    klist = np.empty(M.K, dtype=np.int64)      # partial scoring: the marked labels of a position
    dpos = np.empty(max(S.ybuf.shape[0], 1), dtype=np.int64)  # positions where two labellings differ
    return keys, terms, klist, dpos


@njit(cache=True, nogil=True, inline="always")
def _is_sparse(M, cfg_i):
    """Label-space steps: the model provides them and the step keeps an active set (away,
    pairwise, combined): ⟨μ_i, h⟩ comes from the atoms and a pairwise direction is handled on
    the two labellings, so no step touches all the block's statistics."""
    return cfg_i[I_TRACK] != 0 and _m_label_space(M) and cfg_i[I_STEP] != STEP_FW


def run_steps(M, S, cfg_i, cfg_f, max_steps):
    """Run up to ``max_steps`` block steps with the model's compiled max oracle (Paper: Alg. 1,
    3, 4, 5 and their combination); stop early (before a step) when an atom pool must grow
    (C_GROW). Each step writes one record to the ring log. Returns the number of steps done.

    A Python function: it takes the loop's scratch from :func:`_scratch` (the one place that sizes
    it, also for the Python-tier kernels) and calls the compiled loop. It is not compiled itself: a compiled
    wrapper would add to the cold compile (numba optimizes a caller's module with its callees
    linked in)."""
    keys, terms, klist, dpos = _scratch(M, S)
    return _run_steps_nrt_free(M, S, cfg_i, cfg_f, max_steps, keys, terms, klist, dpos)


@njit(cache=True, nogil=True, _nrt=False)
def _run_steps_nrt_free(M, S, cfg_i, cfg_f, max_steps, keys, terms, klist, dpos):
    """The driver loop of :func:`run_steps`, compiled without reference counting (numba's
    ``_nrt=False``, a private flag; re-check after a numba upgrade). With reference counting,
    handing the model and state tuples to the inlined phases updates the count of each of
    their arrays on every call, hundreds of updates per step. Here every array is owned by the caller for the whole call, and the driver and the
    models' primitives (compiled with _nrt=False too) allocate nothing (scratch comes from
    :func:`_scratch`; numba refuses to compile an allocation here)."""
    sparse = _is_sparse(M, cfg_i)
    mode = cfg_i[I_SAMPLING]
    done = 0
    while done < max_steps:
        if S.counters[C_GROW] != 0:
            break
        if mode == SAMPLE_EXACT_GAP:
            i = sample_block(M, S, cfg_i, cfg_f)
        else:
            i = _sample_arr(M.n, mode, S.rng, S.tree, S.gap_est, S.unv, S.counters, S.perm)
        k, L, could_hit, partial, mu_h, a_slot, a_val, hit, fw_slot, fw_val, fw_loss = _step_before_oracle(
            M, S, cfg_i, cfg_f, i, sparse, keys, terms, klist)
        if hit:
            flags = FLAG_HIT
        else:
            if partial:  # the entries scored so far are bitwise those of the full scores
                _m_scores(M, i, S.w, S.h)
            fw_val = _m_oracle(M, i, S.h, S.ybuf, S.vit_f, S.vit_i)
            flags = FLAG_ORACLE
            fw_slot, fw_loss = _fw_corner(M, S, cfg_i, cfg_f, i, k, L, fw_val, mu_h)
        _step_after_fw_corner(M, S, cfg_i, cfg_f, i, k, L, flags, fw_slot, fw_val, fw_loss, mu_h, a_slot, a_val,
                              sparse, dpos)
        done += 1
    return done


# Python oracle tier: one block step is pre_step (compiled), the model's max oracle (Python),
# post_step (compiled). The step's locals wait in S.step_i / S.step_f in between.
_SI_BLOCK, _SI_K, _SI_L, _SI_HIT, _SI_FW_SLOT, _SI_A_SLOT = range(6)
_SF_MU_H, _SF_FW_VAL, _SF_FW_LOSS, _SF_A_VAL = range(4)


@njit(cache=True, nogil=True)
def pre_step(M, S, cfg_i, cfg_f):
    """First half of a block step for a model whose max oracle is a Python call: sample, score,
    scan, FW corner from the cache. Returns (block i, whether the oracle must be called); on a
    miss S.h holds the full loss-augmented scores and the caller puts the oracle's labelling of
    block i into S.ybuf, then calls :func:`post_step`. Returns (-1, False) when an atom pool
    must grow first (C_GROW)."""
    if S.counters[C_GROW] != 0:
        return -1, False
    keys, terms, klist, dpos = _scratch(M, S)
    sparse = _is_sparse(M, cfg_i)
    mode = cfg_i[I_SAMPLING]
    if mode == SAMPLE_EXACT_GAP:
        raise RuntimeError("the exact-gap sampler needs a compiled max oracle")
    i = _sample_arr(M.n, mode, S.rng, S.tree, S.gap_est, S.unv, S.counters, S.perm)
    k, L, could_hit, partial, mu_h, a_slot, a_val, hit, fw_slot, fw_val, fw_loss = _step_before_oracle(
        M, S, cfg_i, cfg_f, i, sparse, keys, terms, klist)
    if not hit and partial:
        _m_scores(M, i, S.w, S.h)
    S.step_i[_SI_BLOCK] = i
    S.step_i[_SI_K] = k
    S.step_i[_SI_L] = L
    S.step_i[_SI_HIT] = hit
    S.step_i[_SI_FW_SLOT] = fw_slot
    S.step_i[_SI_A_SLOT] = a_slot
    S.step_f[_SF_MU_H] = mu_h
    S.step_f[_SF_FW_VAL] = fw_val
    S.step_f[_SF_FW_LOSS] = fw_loss
    S.step_f[_SF_A_VAL] = a_val
    return i, not hit


@njit(cache=True, nogil=True)
def post_step(M, S, cfg_i, cfg_f):
    """Second half of a block step (see :func:`pre_step`): after a miss S.ybuf holds the
    oracle's FW corner, whose value ⟨m(y), h⟩ is computed here from the block's scores."""
    keys, terms, klist, dpos = _scratch(M, S)
    sparse = _is_sparse(M, cfg_i)
    i = S.step_i[_SI_BLOCK]
    k = S.step_i[_SI_K]
    L = S.step_i[_SI_L]
    fw_slot = S.step_i[_SI_FW_SLOT]
    a_slot = S.step_i[_SI_A_SLOT]
    mu_h = S.step_f[_SF_MU_H]
    fw_val = S.step_f[_SF_FW_VAL]
    fw_loss = S.step_f[_SF_FW_LOSS]
    a_val = S.step_f[_SF_A_VAL]
    if S.step_i[_SI_HIT] != 0:
        flags = FLAG_HIT
    else:
        fw_val = label_dot(M, i, S.ybuf, S.h)
        flags = FLAG_ORACLE
        fw_slot, fw_loss = _fw_corner(M, S, cfg_i, cfg_f, i, k, L, fw_val, mu_h)
    _step_after_fw_corner(M, S, cfg_i, cfg_f, i, k, L, flags, fw_slot, fw_val, fw_loss, mu_h, a_slot, a_val,
                          sparse, dpos)
