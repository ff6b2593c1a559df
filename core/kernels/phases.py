"""The phases of one block step, each a small compiled function citing the lines of the paper
it implements (Alg. 1, 3, 4, 5): line search, cache-hit rule, prefetch, score, scan, FW corner
from the cache or the oracle, away corner, candidate directions, apply, log. The drivers that run
them in order are in :mod:`.step`. The lines cited are those the table
:mod:`gaplab.core.reference.citations` gives for each phase (a test checks them against it).
"""
from __future__ import annotations

import warnings

import numpy as np
from numba import njit
from numba.core.errors import NumbaIRAssumptionWarning

from .._prefetch import prefetch
from .atoms import atom_insert_arr, label_hash
from .dispatch import (_m_atom_value, _m_has_partial, _m_label_dot_at, _m_pair_apply, _m_pair_sqnorm,
                       _m_prefetch_block, _m_scores, _m_scores_cached, block_axpy, block_sqnorm, label_add,
                       label_loss)
from .layout import (C_AWAY, C_DROP, C_FW, C_HIT, C_ITER, C_LOG_POS, C_ORACLE, C_PAIR, C_STEP_ORACLE,
                     F_CACHE_F, F_CACHE_NU, KIND_AWAY, KIND_FW, KIND_PAIRWISE, L_ACTIVE, L_BLOCK,
                     L_CORNER_GAP, L_FLAGS, L_GAMMA, L_GAMMA_MAX, L_GAP, L_IMPROVE, L_ITER, L_KIND, S_ELL,
                     STEP_AWAY, STEP_COMBINED, STEP_FW, STEP_PAIRWISE)
from .samplers import set_block_gap_arr

# The phases are inlined into the drivers (njit inline="always"), which trips numba's pedantic
# SSA check on loop accumulators ("variable ... is not in scope"); inlining does not change
# the results.
warnings.filterwarnings("ignore", category=NumbaIRAssumptionWarning)


# One block step (Paper: Alg. 1, 3, 4, 5; and gaplab's combined step) is the sequence of phases below,
# each a small compiled function inlined into the drivers (run_steps: compiled oracle, one fused
# loop; pre_step / post_step: the Python oracle tier, the oracle called from Python between
# them). The phases take plain arrays where they can: handing a state tuple to a helper costs a
# reference-count update per array, a noticeable part of a step's time.


@njit(cache=True, nogil=True, inline="always")
def _line(g, q, lam, n, gmax):
    """Exact line search on the quadratic dual: γ = g λ n² / ‖B δ‖², clipped to [0, gmax];
    returns (γ, dual improvement γ g − γ² q / (2 λ n²)). Paper: the line searches Alg. 1 line 7,
    Alg. 3 line 11, Alg. 4 line 13, Alg. 4 line 19, Alg. 5 line 18, Alg. 9 line 7."""
    if g <= 0.0:
        return 0.0, 0.0
    if q <= 0.0:
        gam = gmax
    else:
        gam = g * lam * n * n / q
        if gam > gmax:
            gam = gmax
    return gam, gam * g - 0.5 * gam * gam * q / (lam * n * n)


@njit(cache=True, nogil=True, inline="always")
def cache_hit_rule(ghat, gap_i, visited, global_gap, F, nu, n):
    """Cache hit criterion (Paper: Alg. 5 line 9): the cache corner's gap g_i^c >=
    max(F·g_i^(k_i), ν/n·g^(k_0)). A block whose gap was never computed (g_i = +inf) never hits;
    before the first gap pass g^(k_0) = +inf, so nothing hits either (Paper: Alg. 5 line 2,
    g^(0) = +inf)."""
    if not visited:
        return False
    thr = max(F * gap_i, nu / n * global_gap)
    return ghat >= thr


@njit(cache=True, nogil=True, inline="always")
def phase_prefetch(M, i, track, sparse, cap, a_alpha, a_hash, a_loss, a_used, a_lab):
    """Phase *prefetch*: start fetching the drawn block's scattered data (its atoms, and what the
    model's ``prefetch_block`` names: token features, Gram matrix) so that the cache misses
    overlap. Hints only: no result changes."""
    if track:
        for q in range(0, min(cap, 16), 8):
            prefetch(a_alpha, i * cap + q)
            prefetch(a_hash, i * cap + q)
        prefetch(a_loss, i * cap)
        prefetch(a_used, i * cap)
    _m_prefetch_block(M, i, sparse)
    if track:
        t_first = M.lab_off[i]
        for q in range(0, min(cap, 16) * (M.lab_off[i + 1] - t_first), 8):  # the first 16 atoms' labels
            prefetch(a_lab, t_first * cap + q)


@njit(cache=True, nogil=True, inline="always")
def phase_score(M, i, w, h, mu, mark, a_lab, a_count, gap_iter, global_gap, cache_on, sparse, cap, L, klist):
    """Phase *score*: the block's score vector h at w (the max oracle's input; Paper: Alg. 1
    line 4, Alg. 2 line 5). A cache hit is possible only on a visited block after the first gap
    pass (Alg. 5); then, when the model can, only the entries the cached labellings (and μ_i) touch are scored,
    bitwise as the full scores (which are computed on a miss). Returns (could_hit, partial)."""
    could_hit = cache_on and a_count[i] > 0 and gap_iter[i] >= 0 and global_gap < np.inf
    partial = could_hit and _m_has_partial(M)
    if partial:
        _m_scores_cached(M, i, w, h, mark, a_lab, M.lab_off[i] * cap, a_count[i], L, cap, mu, not sparse, klist)
    else:
        _m_scores(M, i, w, h)
    return could_hit, partial


@njit(cache=True, nogil=True, inline="always")
def phase_scan_label_space(M, i, h, w, a_lab, a_alpha, a_hash, cnt, could_hit, cap, L, keys, terms):
    """Phase *scan* for label-space steps: one pass over block i's atoms gives the best cached
    labelling (the cache corner, Alg. 5 line 6), the away corner (argmin over the active set of
    ⟨m(y), h⟩; Alg. 3 line 8, Alg. 4 line 8) and ⟨μ_i, h⟩ = Σ_y α_i(y)⟨m(y), h⟩ summed over the
    active atoms in label-hash order (the same order whatever the slots, so a cache that never
    hits leaves the trace unchanged). Returns (⟨μ_i, h⟩, best, cache slot, away slot, away value)."""
    na = 0
    a_best = np.inf
    best = -np.inf
    fw_slot = -1
    a_slot = -1
    lab0 = M.lab_off[i] * cap
    for s in range(cnt):
        val = _m_atom_value(M, i, h, w, a_lab, lab0 + s * L, L)
        if could_hit and val > best:
            best = val
            fw_slot = s
        al = a_alpha[i, s]
        if al > 0.0:
            if val < a_best:
                a_best = val
                a_slot = s
            key = a_hash[i, s]
            term = al * val
            j = na
            while j > 0 and keys[j - 1] > key:
                keys[j] = keys[j - 1]
                terms[j] = terms[j - 1]
                j -= 1
            keys[j] = key
            terms[j] = term
            na += 1
    mu_h = 0.0
    for j in range(na):
        mu_h += terms[j]
    return mu_h, best, fw_slot, a_slot, a_best


@njit(cache=True, nogil=True, inline="always")
def phase_scan_dense(M, i, h, mu, p, a_lab, a_count, could_hit, cap, L):
    """Phase *scan* for statistics-space steps: ⟨μ_i, h⟩ over the block's statistics and, when a
    cache hit is possible, the best cached labelling (the cache corner, Alg. 5 line 6). Returns
    (⟨μ_i, h⟩, best, cache slot)."""
    mu_h = 0.0
    for q in range(p):
        mu_h += mu[q] * h[q]
    best = -np.inf
    fw_slot = -1
    if could_hit:
        lab0 = M.lab_off[i] * cap
        for s in range(a_count[i]):
            val = _m_label_dot_at(M, i, a_lab, lab0 + s * L, h)
            if val > best:
                best = val
                fw_slot = s
    return mu_h, best, fw_slot


@njit(cache=True, nogil=True, inline="always")
def phase_cache_lookup(M, i, k, could_hit, best, mu_h, fw_slot, gap_est, gap_iter, global_gap, cfg_f, n,
                       a_lab, a_used, a_loss, cap, L, ybuf, counters):
    """Phase *FW corner from the cache* (Paper: Alg. 5 lines 6-10): the cache corner is used
    when its gap g_i^c = (⟨m(y^c), h⟩ − ⟨μ_i, h⟩)/n (the cache corner's gap, Alg. 5 line 8)
    passes :func:`cache_hit_rule`; it is copied to ybuf. Returns (hit, slot, its value, its
    loss); on a miss the slot is -1."""
    if could_hit:
        ghat = (best - mu_h) / n
        if cache_hit_rule(ghat, gap_est[i], gap_iter[i] >= 0, global_gap, cfg_f[F_CACHE_F], cfg_f[F_CACHE_NU], n):
            b = M.lab_off[i] * cap + fw_slot * L
            for t in range(L):
                ybuf[t] = a_lab[b + t]
            a_used[i, fw_slot] = k
            counters[C_HIT] += 1
            return True, fw_slot, best, a_loss[i, fw_slot]
    return False, -1, 0.0, 0.0


@njit(cache=True, nogil=True, inline="always")
def phase_fw_corner(M, i, k, L, fw_val, mu_h, track, sampling, p, ybuf, counters, gap_est, gap_iter, unv, unv_pos,
                    tree, weights, scalars, a_lab, a_alpha, a_count, a_hash, a_used, a_loss):
    """Phase *FW corner from the oracle* (Paper: Alg. 1 line 4, Alg. 2 line 5): count the
    max oracle call, store the block gap g_i^(k_i) = (max − ⟨μ_i, h⟩)/n it certifies with k_i = k
    (Alg. 2 line 8, Alg. 5 lines 14-15), and (with atoms) find or insert the FW corner ybuf among
    the block's atoms (into the cache: Alg. 5 line 16). Returns (slot or -1, loss)."""
    n = M.n
    counters[C_ORACLE] += 1
    counters[C_STEP_ORACLE] += 1
    set_block_gap_arr(gap_est, gap_iter, unv, unv_pos, counters, tree, weights, scalars, sampling, p, i,
                      (fw_val - mu_h) / n, k)
    fw_loss = label_loss(M, i, ybuf)
    fw_slot = -1
    if track:
        hsh = label_hash(ybuf, L)
        cap = a_alpha.shape[1]
        lab0 = M.lab_off[i] * cap
        for s in range(a_count[i]):  # the FW corner among the atoms (hash, then labels)
            if a_hash[i, s] == hsh:
                same = True
                for t in range(L):
                    if a_lab[lab0 + s * L + t] != ybuf[t]:
                        same = False
                        break
                if same:
                    fw_slot = s
                    break
        if fw_slot < 0:
            fw_slot = atom_insert_arr(M, i, ybuf, hsh, fw_loss, k, a_lab, a_alpha, a_count, a_hash, a_used, a_loss)
            if fw_slot < 0:  # callers grow the pools before a step (C_GROW); never reached
                raise RuntimeError("atom pool full: grow_atoms must run before the step")
        else:
            a_used[i, fw_slot] = k
    return fw_slot, fw_loss


@njit(cache=True, nogil=True, inline="always")
def phase_away_corner(M, i, h, a_lab, a_alpha, a_count, cap, L, sparse, a_slot, a_val, yaway, last_away):
    """Phase *away corner* (Paper: Alg. 3 line 8, Alg. 4 line 8): argmin over the active set of
    ⟨m(y), h⟩ (already found by the label-space scan), copied to yaway. Returns (slot, value)."""
    if not sparse:
        best_a = np.inf
        lab0 = M.lab_off[i] * cap
        for s in range(a_count[i]):
            if a_alpha[i, s] > 0.0:
                val = _m_label_dot_at(M, i, a_lab, lab0 + s * L, h)
                if val < best_a:
                    best_a = val
                    a_slot = s
        a_val = best_a
    b = M.lab_off[i] * cap + a_slot * L
    for t in range(L):
        yaway[t] = a_lab[b + t]
        last_away[t] = yaway[t]
    return a_slot, a_val


@njit(cache=True, nogil=True, inline="always")
def phase_candidates(M, i, step, sparse, lam, n, p, mu, mu_h, fw_val, a_val, alpha_a, ybuf, yaway, dl, tmp, zbuf,
                     pos):
    """Phase *candidates*: the FW direction m(y_fw) − μ_i (towards the FW corner's w_s, Paper:
    Alg. 1 line 5), the away direction μ_i − m(y_a) (from w_a, with its away gap g_i^A: Alg. 4
    line 9, Alg. 4 line 11) and the pairwise direction m(y_fw) − m(y_a) (Alg. 3 line 10), each
    with its exact line search (Alg. 1 line 7, Alg. 4 line 13, Alg. 4 line 19, Alg. 3 line 11,
    Alg. 5 line 18, Alg. 9 line 7; γ_max = 1, α_a/(1 − α_a), α_a). FW: the FW direction. Away:
    the away direction when its gap is larger (Alg. 4 line 12 takes FW only when g_i^FW > g_i^A;
    here a tie takes FW, as in :func:`gaplab.core.reference.choose_step`). Pairwise: the pairwise
    direction. Combined (gaplab's, not one of the paper's algorithms): the largest dual
    improvement. The chosen direction is left in dl
    (not for a label-space pairwise step, which works on the two labellings).
    Returns (kind, γ, γ_max, improvement, the chosen direction's gap)."""
    kind = KIND_FW
    gam = 0.0
    gmax = 1.0
    g_fw = (fw_val - mu_h) / n
    g_used = g_fw
    best_imp = -1.0
    if step == STEP_FW or step == STEP_AWAY or step == STEP_COMBINED:
        for q in range(p):
            dl[q] = -mu[q]
        label_add(M, i, ybuf, 1.0, dl)
        qn = block_sqnorm(M, i, dl, zbuf)
        gam, best_imp = _line(g_fw, qn, lam, n, 1.0)
    if step == STEP_AWAY or step == STEP_COMBINED:
        g_a = (mu_h - a_val) / n
        # with (numerically) all the mass on the away corner the away direction is zero:
        # μ_i − m(y_a) is round-off only, and γ_max = α_a / (1 − α_a) would be unbounded
        single = alpha_a >= 1.0 - 1e-12
        amax = 0.0 if single else alpha_a / (1.0 - alpha_a)
        for q in range(p):
            tmp[q] = mu[q]
        label_add(M, i, yaway, -1.0, tmp)
        qa = block_sqnorm(M, i, tmp, zbuf)
        if g_a > 0.0 and qa > 0.0 and not single:
            gam_a, imp_a = _line(g_a, qa, lam, n, amax)
        else:
            gam_a, imp_a = 0.0, 0.0
        take = (g_a > g_fw) if step == STEP_AWAY else (imp_a > best_imp)
        if take:
            kind = KIND_AWAY
            gam = gam_a
            gmax = amax
            best_imp = imp_a
            g_used = g_a
            for q in range(p):
                dl[q] = tmp[q]
    if step == STEP_PAIRWISE or step == STEP_COMBINED:
        g_p = (fw_val - a_val) / n
        if sparse:
            qp = _m_pair_sqnorm(M, i, ybuf, yaway, pos)
        else:
            for q in range(p):
                tmp[q] = 0.0
            label_add(M, i, ybuf, 1.0, tmp)
            label_add(M, i, yaway, -1.0, tmp)
            qp = block_sqnorm(M, i, tmp, zbuf)
        gam_p, imp_p = _line(g_p, qp, lam, n, alpha_a)
        if step == STEP_PAIRWISE or imp_p > best_imp:
            kind = KIND_PAIRWISE
            gam = gam_p
            gmax = alpha_a
            best_imp = imp_p
            g_used = g_p
            if not sparse:
                for q in range(p):
                    dl[q] = tmp[q]
    return kind, gam, gmax, best_imp, g_used


@njit(cache=True, nogil=True, inline="always")
def phase_apply(M, i, kind, gam, gmax, sparse, lam, n, p, mu, dl, ybuf, yaway, v, w, lb, ub, has_box, pos,
                ell, scalars, counters, a_alpha, a_loss, a_count, fw_slot, a_slot, fw_loss, track):
    """Phase *apply*: one atomic change of μ_i, w, ℓ_i and the atoms' α for the chosen step
    (Paper: FW, Alg. 1 lines 8-11 and α_i ← (1−γ)α_i + γ e_{y_fw}, Alg. 4 lines 14-17; away,
    Alg. 4 lines 24-27 and the mass moved off y_a, drop step at γ_max, Alg. 4 lines 20-22;
    pairwise, Alg. 3 lines 12-15 and γ moved from y_a to y_fw, drop step, Alg. 3 lines 16-21).
    Returns whether it was a drop step."""
    drop = False
    if gam > 0.0:
        if sparse and kind == KIND_PAIRWISE:
            _m_pair_apply(M, i, ybuf, yaway, gam, mu, -gam / (lam * n), v, w, lb, ub, has_box, pos)
        else:
            for q in range(p):
                mu[q] += gam * dl[q]
            block_axpy(M, i, -gam / (lam * n), dl, v, w, lb, ub, has_box)
    old_ell = ell[i]
    if kind == KIND_FW:
        new_ell = old_ell + gam * (fw_loss / n - old_ell)
        counters[C_FW] += 1
        if track:
            if gam >= 1.0:
                for s in range(a_count[i]):
                    a_alpha[i, s] = 0.0
                a_alpha[i, fw_slot] = 1.0
            elif gam > 0.0:
                for s in range(a_count[i]):
                    a_alpha[i, s] *= (1.0 - gam)
                a_alpha[i, fw_slot] += gam
    elif kind == KIND_AWAY:
        a_loss_v = a_loss[i, a_slot]
        new_ell = old_ell + gam * (old_ell - a_loss_v / n)
        counters[C_AWAY] += 1
        if gam > 0.0:
            for s in range(a_count[i]):
                a_alpha[i, s] *= (1.0 + gam)
            if gam >= gmax:
                a_alpha[i, a_slot] = 0.0
                drop = True
                counters[C_DROP] += 1
            else:
                a_alpha[i, a_slot] -= gam
    else:
        a_loss_v = a_loss[i, a_slot]
        new_ell = old_ell + gam * (fw_loss - a_loss_v) / n
        counters[C_PAIR] += 1
        if gam > 0.0 and fw_slot != a_slot:
            if gam >= gmax:
                a_alpha[i, fw_slot] += a_alpha[i, a_slot]
                a_alpha[i, a_slot] = 0.0
                drop = True
                counters[C_DROP] += 1
            else:
                a_alpha[i, a_slot] -= gam
                a_alpha[i, fw_slot] += gam
    ell[i] = new_ell
    scalars[S_ELL] += new_ell - old_ell
    return drop


@njit(cache=True, nogil=True, inline="always")
def phase_log(log, counters, k, i, kind, flags, gam, gmax, gap_i, g_used, best_imp, track, a_alpha, a_count):
    """Phase *log*: one record of the step in the ring log (see ``L_*``)."""
    r = counters[C_LOG_POS] % log.shape[0]
    log[r, L_ITER] = k
    log[r, L_BLOCK] = i
    log[r, L_KIND] = kind
    log[r, L_FLAGS] = flags
    log[r, L_GAMMA] = gam
    log[r, L_GAMMA_MAX] = gmax
    log[r, L_GAP] = gap_i
    log[r, L_CORNER_GAP] = g_used
    log[r, L_IMPROVE] = best_imp if best_imp > 0.0 else 0.0
    if track:
        na_now = 0
        for q in range(a_count[i]):
            if a_alpha[i, q] > 0.0:
                na_now += 1
        log[r, L_ACTIVE] = na_now
    else:
        log[r, L_ACTIVE] = -1
    counters[C_LOG_POS] += 1
    counters[C_ITER] = k + 1
