"""Exact gaps: the exact duality gap pass (one max-oracle call per block at w, in parallel over
chunks of blocks, summed in block order), its Python-oracle form, and one block's exact gap.
Paper: Alg. 2 ("update global gap"); δ_i of Alg. 7 line 4.
"""
from __future__ import annotations

import threading

import numba
import numpy as np
from numba import njit, prange

from .dispatch import block_oracle, block_scores, gt_label, label_dot, label_loss
from .layout import C_DIAG_ORACLE, C_GAPPASS, C_ITER, C_LAST_CHECK, C_ORACLE, I_SAMPLING, S_GLOBAL_GAP, \
    SAMPLE_EXACT_GAP, SAMPLE_GAP
from .samplers import mark_visited, tree_rebuild


@njit(cache=True, nogil=True, inline="always")
def _score_block(M, i, w, mu, h):
    """Fill h with block i's loss-augmented score vector at w (:func:`block_scores`) and return
    ⟨μ_i, h⟩; a block gap is then (max_y ⟨m(y), h⟩ − ⟨μ_i, h⟩)/n. mu: all blocks' statistics."""
    so = M.stat_off[i]
    p = M.stat_off[i + 1] - so
    block_scores(M, i, w, h)
    mu_h = 0.0
    for q in range(p):
        mu_h += mu[so + q] * h[q]
    return mu_h


@njit(cache=True, nogil=True, parallel=True)
def gap_pass_blocks(M, w, mu, nchunk, hmax, lmax, store_labels, g_out, hs_out, d_out, lab_out):
    """The per-block part of an exact gap pass, in parallel over ``nchunk`` contiguous chunks of
    blocks (each with its own scratch): one max-oracle call per block at w. Writes
    g_out[i] = g_i = (max_y ⟨m(y), h_i⟩ − ⟨μ_i, h_i⟩)/n, hs_out[i] = max_y H_i(y; w) (block i's
    structured hinge loss), d_out[i] = δ_i of Alg. 7 line 4 and, with ``store_labels``, the FW
    corners into lab_out (float64 arrays of length n; lab_out int64, indexed by label offsets).
    Paper: Alg. 2 ("update global gap"). Each block's numbers do not depend on the chunking or
    the number of threads, so the pass is deterministic."""
    n = M.n
    for c in prange(nchunk):
        h = np.empty(hmax)
        y = np.empty(lmax, dtype=np.int64)
        ygt = np.empty(lmax, dtype=np.int64)
        vf = np.empty(lmax * M.K)
        vi = np.empty(lmax * M.K, dtype=np.int64)
        for i in range(c * n // nchunk, (c + 1) * n // nchunk):
            mu_h = _score_block(M, i, w, mu, h)
            val = block_oracle(M, i, h, y, vf, vi)
            gt_label(M, i, ygt)
            gt_h = label_dot(M, i, ygt, h)
            hs_out[i] = val - (gt_h - label_loss(M, i, ygt))
            d_out[i] = (mu_h - gt_h) / n
            g_out[i] = (val - mu_h) / n
            if store_labels:
                b = M.lab_off[i]
                for t in range(M.lab_off[i + 1] - b):
                    lab_out[b + t] = y[t]


@njit(cache=True, nogil=True)
def gap_pass_finish(M, S, cfg_i, cfg_f, count, g, hs):
    """The serial part of an exact gap pass: the sums in block order (so they are bitwise those
    of a one-thread pass) and, with ``count``, the refresh of every gap estimate (iteration =
    current k), the oracle counter and g^(k_0). Returns (Σ g_i, Σ hs_i)."""
    n = M.n
    k = S.counters[C_ITER]
    total = 0.0
    hsum = 0.0
    for i in range(n):
        total += g[i]
        hsum += hs[i]
        if count:
            S.gap_exact[i] = g[i]
            S.gap_est[i] = g[i]
            S.gap_iter[i] = k
            mark_visited(S, i)
    if count:
        S.counters[C_ORACLE] += n
        S.counters[C_GAPPASS] += 1
        S.counters[C_LAST_CHECK] = k
        S.scalars[S_GLOBAL_GAP] = total
        if cfg_i[I_SAMPLING] == SAMPLE_GAP or cfg_i[I_SAMPLING] == SAMPLE_EXACT_GAP:
            tree_rebuild(S, cfg_f, n)
    return total, hsum


# A parallel kernel must not be entered from two Python threads at once under numba's workqueue
# threading layer (the fallback when no OpenMP or TBB runtime is found); app sessions each run a
# worker thread, so the passes are serialized here.
_GAP_PASS_LOCK = threading.Lock()


def exact_gap_pass(M, S, cfg_i, cfg_f, count, store_labels, delta_out):
    """Exact duality gap: one max-oracle call per block at the current w (Paper: Alg. 2,
    "update global gap"), the blocks spread over numba's threads (``NUMBA_NUM_THREADS``; the
    result does not depend on it). Refreshes every gap estimate (iteration = current k).
    Returns (duality gap Σ g_i, Σ_i max_y H_i(y; w)). With ``count`` the n calls are added to the
    oracle counter and g^(k_0) is updated; ``store_labels`` keeps every FW corner in S.batch_lab
    for a batch FW step. ``delta_out`` (length n, or 0 to skip) receives δ_i = (1/n) Σ_y α_i(y)
    H_i(y; w) = (⟨μ_i, h_i⟩ − ⟨m(y_i), h_i⟩)/n of Alg. 7 line 4 (no extra work: both dots are
    needed here)."""
    n = M.n
    g = np.empty(n)
    hs = np.empty(n)
    d = delta_out if delta_out.shape[0] == n else np.empty(n)
    threads = numba.get_num_threads()
    nchunk = 1 if n < 64 or threads == 1 else min(n, 8 * threads)
    with _GAP_PASS_LOCK:
        gap_pass_blocks(M, S.w, S.mu, nchunk, S.h.shape[0], S.ybuf.shape[0], bool(store_labels), g, hs, d,
                        S.batch_lab)
    return gap_pass_finish(M, S, cfg_i, cfg_f, bool(count), g, hs)


@njit(cache=True, nogil=True)
def block_gap_now(M, S, i):
    """Exact block gap g_i at the current w (one diagnostic oracle call, not counted as work)."""
    S.counters[C_DIAG_ORACLE] += 1
    return _block_gap_at(M, S, i)


@njit(cache=True, nogil=True)
def _block_gap_at(M, S, i):
    mu_h = _score_block(M, i, S.w, S.mu, S.h)
    val = block_oracle(M, i, S.h, S.yaway, S.vit_f, S.vit_i)
    return (val - mu_h) / M.n


@njit(cache=True, nogil=True)
def gap_block_given_corner(M, w, mu, i, h, y, ygt):
    """One block of an exact gap pass when the FW corner y came from a Python max oracle:
    (g_i, max_y H_i(y; w), δ_i) as in :func:`gap_pass_blocks`, with max_y ⟨m(y), h⟩ taken as
    ⟨m(y), h⟩ of the given corner."""
    n = M.n
    mu_h = _score_block(M, i, w, mu, h)
    val = label_dot(M, i, y, h)
    gt_label(M, i, ygt)
    gt_h = label_dot(M, i, ygt, h)
    return (val - mu_h) / n, val - (gt_h - label_loss(M, i, ygt)), (mu_h - gt_h) / n


def exact_gap_pass_python(M, S, cfg_i, cfg_f, count, store_labels, delta_out, oracle):
    """:func:`exact_gap_pass` for a model whose max oracle is the Python callable
    ``oracle(i, w) -> labelling`` (validated by the caller's wrapper): the n oracle calls run in
    a Python loop, each block's numbers in compiled code."""
    n = M.n
    g = np.empty(n)
    hs = np.empty(n)
    d = delta_out if delta_out.shape[0] == n else np.empty(n)
    h = np.empty(S.h.shape[0])
    ygt = np.empty(S.ybuf.shape[0], dtype=np.int64)
    w = S.w
    for i in range(n):
        y = oracle(i, w)
        g[i], hs[i], d[i] = gap_block_given_corner(M, w, S.mu, i, h, y, ygt)
        if store_labels:
            b = int(M.lab_off[i])
            S.batch_lab[b:b + y.shape[0]] = y
    return gap_pass_finish(M, S, cfg_i, cfg_f, bool(count), g, hs)
