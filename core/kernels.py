"""numba kernels of the solver core: model access in "statistics space", atoms (active set and
cache), samplers, the block step of every kind, exact gap passes and the batch FW step.

Representation (see DESIGN.md, "On the dimension of SSVM", Paper App. G): a block's dual point
α_i only enters w through its *statistics* μ_i = Σ_y α_i(y) m(y), where m(y) is the indicator
statistics of a labelling y (for a chain: one-hot node marginals (T, K) and transition counts
(K, K); for the multiclass model: the one-hot vector of the label). The joint feature map is
linear in them, ψ(x_i, y) = B_i m(y), so

    w = (1/(λn)) Σ_i B_i (m(y_i) − μ_i),        ℓ_i = (1/n) Σ_y α_i(y) L_i(y),

and every quantity of a block step is a cheap function of a "score vector" h_i(w) in statistics
space (⟨m(y), h_i⟩ = ⟨w, ψ(x_i, y)⟩ + L_i(y)), of ‖B_i δ‖² (via a per-sequence Gram matrix for
chains) and of an axpy w += c B_i δ. Memory is O(tokens·K + n·K²), independent of d, which is
what lets the same kernels run dense OCR (d = 4,082) and sparse CoNLL (d ≈ 1.6M).

All state lives in plain arrays (see gaplab.core.state); the model is a ModelArrays tuple;
one compiled specialization serves every model kind (chain, multiclass) by a runtime branch.
"""
from __future__ import annotations

import threading
from collections import namedtuple

import numba
import numpy as np
from numba import njit, prange, uint64

from ._prefetch import prefetch
from .rng import rng_randint, rng_uniform

# ----------------------------------------------------------------------------- model arrays
MODEL_CHAIN = 0
MODEL_MULTICLASS = 1

ModelArrays = namedtuple(
    "ModelArrays",
    [
        "kind", "n", "d", "K",
        "stat_off",      # int64 (n+1): statistics offsets (chain: T*K + K*K per block; multiclass: |Y_i|)
        "lab_off",       # int64 (n+1): label storage offsets (chain: tokens; multiclass: one slot per block)
        "gt",            # int64: ground-truth labels (chain: per token; multiclass: per block)
        # chain
        "feat_indptr", "feat_indices", "feat_values", "F1",  # token CSR, F1 = n_features + 1 (constant attribute)
        "feat_unit",     # 1 when every stored feature value is 1.0 (binary features: OCR pixels), else 0
        "gram_off", "gram",                                    # per-sequence T x T Gram of augmented features
        "first_off", "last_off", "trans_off",
        # multiclass: rows = labels of each block
        "mc_row_off", "mc_indptr", "mc_indices", "mc_values", "mc_loss",
    ],
)

# ----------------------------------------------------------------------------- state layout
# counters (int64)
C_ITER = 0          # block steps done (iterations k)
C_ORACLE = 1        # max-oracle calls, gap passes included
C_HIT = 2           # cache hits
C_FW = 3            # FW steps
C_AWAY = 4          # away steps
C_PAIR = 5          # pairwise steps
C_DROP = 6          # drop steps (an away corner's mass reached 0)
C_GAPPASS = 7       # exact gap passes done
C_PERM_POS = 8      # position in the current permutation (permutation sampler)
C_UNVISITED = 9     # number of blocks whose gap was never computed
C_LOG_POS = 10      # number of step records written to the ring log
C_GROW = 11         # 1 when a block's atom pool is full and must grow before the next step
C_LAST_CHECK = 12   # iteration k_0 of the last exact gap pass (-1: none)
C_PURGE = 13        # atoms purged for α <= drop_tol
C_STEP_ORACLE = 14  # oracle calls made by block steps
C_BATCH = 15        # batch FW steps taken
C_DIAG_ORACLE = 16  # diagnostic oracle calls (app: gap after a step), not counted as work
C_SAMPLER_ORACLE = 17  # oracle calls of the idealized exact-gap sampler (reported separately)
N_COUNTERS = 24

# scalars (float64)
S_ELL = 0           # ℓ = Σ ℓ_i
S_GLOBAL_GAP = 1    # g^(k_0): exact duality gap of the last gap pass (inf before any)
S_LAST_PRIMAL = 2   # primal objective at the last gap pass
N_SCALARS = 8

# int config
I_SAMPLING = 0
I_STEP = 1
I_CACHE = 2
I_CACHE_SIZE = 3
I_TRACK = 4
I_BOX = 5
N_CFG_I = 8
# float config
F_LAM = 0
F_P = 1
F_CACHE_F = 2
F_CACHE_NU = 3
F_DROP_TOL = 4
N_CFG_F = 8

# sampling / step codes (mirror gaplab.core.config enums)
SAMPLE_UNIFORM, SAMPLE_PERM, SAMPLE_GAP, SAMPLE_MAXGAP, SAMPLE_WEIGHTS, SAMPLE_EXACT_GAP = 0, 1, 2, 3, 4, 5
STEP_FW, STEP_PAIRWISE, STEP_AWAY, STEP_COMBINED = 0, 1, 2, 3
# step record kinds
KIND_FW, KIND_AWAY, KIND_PAIRWISE, KIND_NONE = 0, 1, 2, 3
FLAG_HIT, FLAG_DROP, FLAG_ORACLE = 1, 2, 4

# log columns (float64 ring log, one row per step)
L_ITER, L_BLOCK, L_KIND, L_FLAGS, L_GAMMA, L_GAMMA_MAX, L_GAP, L_CORNER_GAP, L_IMPROVE, L_ACTIVE = range(10)
N_LOG = 10

StateArrays = namedtuple(
    "StateArrays",
    [
        "w", "v", "lb", "ub",      # primal w = clip(v) (w is v when there is no box)
        "mu", "ell",               # block statistics and block losses ℓ_i
        "gap_est", "gap_iter", "gap_exact",
        "tree", "unv", "unv_pos", "perm", "rng",
        "counters", "scalars",
        "a_lab", "a_alpha", "a_loss", "a_hash", "a_used", "a_count",
        "h", "dlt", "tmp", "ybuf", "yaway", "vit_f", "vit_i", "zbuf",
        "log", "last_fw", "last_away", "batch_lab",
        "weights",                 # fixed sampling weights (curvature / Lipschitz samplers)
        "mark",                    # int8 work mask over a block's statistics (cache-hit scoring)
    ],
)

# ============================================================================ model access


@njit(cache=True, nogil=True)
def block_stat_size(M, i):
    return M.stat_off[i + 1] - M.stat_off[i]


@njit(cache=True, nogil=True)
def block_lab_len(M, i):
    return M.lab_off[i + 1] - M.lab_off[i]


@njit(cache=True, nogil=True)
def block_scores(M, i, w, h):
    """Fill h[:p_i] with the loss-augmented score vector of block i in statistics space:
    ⟨m(y), h⟩ = ⟨w, ψ(x_i, y)⟩ + L_i(y) for every labelling y."""
    if M.kind == MODEL_CHAIN:
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
    else:
        r0 = M.mc_row_off[i]
        nl = M.mc_row_off[i + 1] - r0
        for y in range(nl):
            r = r0 + y
            s = M.mc_loss[r]
            for p in range(M.mc_indptr[r], M.mc_indptr[r + 1]):
                s += M.mc_values[p] * w[M.mc_indices[p]]
            h[y] = s


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


@njit(cache=True, nogil=True)
def block_oracle(M, i, h, y, vit_f, vit_i):
    """Max oracle on block i: y ← argmax_y ⟨m(y), h⟩ (loss-augmented decoding when h holds
    the loss); returns the maximum. Chain: Viterbi, O(T K²). Multiclass: enumeration.
    Ties: the lowest label (per position, Viterbi's first maximiser)."""
    if M.kind == MODEL_CHAIN:
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
    else:
        nl = M.mc_row_off[i + 1] - M.mc_row_off[i]
        best = -np.inf
        arg = 0
        for k in range(nl):
            if h[k] > best:
                best = h[k]
                arg = k
        y[0] = arg
        return best


@njit(cache=True, nogil=True, inline="always")
def label_dot(M, i, y, vec):
    """⟨m(y), vec⟩ for a labelling y of block i (y: int array of the block's label length)."""
    if M.kind == MODEL_CHAIN:
        K = M.K
        T = M.lab_off[i + 1] - M.lab_off[i]
        s = 0.0
        for t in range(T):
            s += vec[t * K + y[t]]
        off = T * K
        for t in range(T - 1):
            s += vec[off + y[t] * K + y[t + 1]]
        return s
    else:
        return vec[y[0]]


@njit(cache=True, nogil=True, inline="always")
def atom_dot(M, S, i, s, vec):
    """⟨m(y), vec⟩ for the labelling y of atom slot s of block i, read in place (as
    :func:`label_dot` on the atom's labels)."""
    b = atom_base(M, S, i, s)
    lab = S.a_lab
    if M.kind == MODEL_CHAIN:
        K = M.K
        T = M.lab_off[i + 1] - M.lab_off[i]
        v = 0.0
        for t in range(T):
            v += vec[t * K + lab[b + t]]
        off = T * K
        for t in range(T - 1):
            v += vec[off + lab[b + t] * K + lab[b + t + 1]]
        return v
    else:
        return vec[lab[b]]


@njit(cache=True, nogil=True, inline="always")
def label_add(M, i, y, coef, vec):
    """vec += coef · m(y)."""
    if M.kind == MODEL_CHAIN:
        K = M.K
        T = M.lab_off[i + 1] - M.lab_off[i]
        for t in range(T):
            vec[t * K + y[t]] += coef
        off = T * K
        for t in range(T - 1):
            vec[off + y[t] * K + y[t + 1]] += coef
    else:
        vec[y[0]] += coef


@njit(cache=True, nogil=True, inline="always")
def label_loss(M, i, y):
    """Task loss L_i(y) (chain: normalized Hamming; multiclass: the model's loss table)."""
    if M.kind == MODEL_CHAIN:
        t0 = M.lab_off[i]
        T = M.lab_off[i + 1] - t0
        c = 0
        for t in range(T):
            if y[t] != M.gt[t0 + t]:
                c += 1
        return c / T
    else:
        return M.mc_loss[M.mc_row_off[i] + y[0]]


@njit(cache=True, nogil=True, inline="always")
def gt_label(M, i, y):
    """Copy the ground-truth labelling of block i into y."""
    if M.kind == MODEL_CHAIN:
        t0 = M.lab_off[i]
        for t in range(M.lab_off[i + 1] - t0):
            y[t] = M.gt[t0 + t]
    else:
        y[0] = M.gt[i]


@njit(cache=True, nogil=True, inline="always")
def block_sqnorm(M, i, dlt, zbuf):
    """‖B_i δ‖² for a statistics direction δ of block i (zbuf: a zero work vector of size d,
    left zero)."""
    if M.kind == MODEL_CHAIN:
        K = M.K
        T = M.lab_off[i + 1] - M.lab_off[i]
        g0 = M.gram_off[i]
        s = 0.0
        # δ is sparse in k at each position (a few labels of the active set differ): list them
        kidx = np.empty(T * (K + 1), dtype=np.int64)  # per position: count, then the labels
        for t in range(T):
            c = 0
            for k in range(K):
                if dlt[t * K + k] != 0.0:
                    kidx[t * (K + 1) + 1 + c] = k
                    c += 1
            kidx[t * (K + 1)] = c
        for t in range(T):
            ct = kidx[t * (K + 1)]
            if ct == 0:
                continue
            for u in range(T):
                gtu = M.gram[g0 + t * T + u]
                if gtu != 0.0:
                    acc = 0.0
                    for j in range(ct):
                        k = kidx[t * (K + 1) + 1 + j]
                        acc += dlt[t * K + k] * dlt[u * K + k]
                    s += gtu * acc
        for k in range(K):
            s += dlt[k] * dlt[k] + dlt[(T - 1) * K + k] * dlt[(T - 1) * K + k]
        off = T * K
        for q in range(K * K):
            s += dlt[off + q] * dlt[off + q]
        return s
    else:
        r0 = M.mc_row_off[i]
        nl = M.mc_row_off[i + 1] - r0
        for y in range(nl):
            c = dlt[y]
            if c != 0.0:
                r = r0 + y
                for p in range(M.mc_indptr[r], M.mc_indptr[r + 1]):
                    zbuf[M.mc_indices[p]] += c * M.mc_values[p]
        s = 0.0
        for y in range(nl):
            if dlt[y] != 0.0:
                r = r0 + y
                for p in range(M.mc_indptr[r], M.mc_indptr[r + 1]):
                    j = M.mc_indices[p]
                    s += zbuf[j] * zbuf[j]
                    zbuf[j] = 0.0
        return s


@njit(cache=True, nogil=True, inline="always")
def _clip(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@njit(cache=True, nogil=True, inline="always")
def block_axpy(M, i, coef, dlt, v, w, lb, ub, has_box):
    """v += coef · B_i δ, and w = clip(v, lb, ub) on the touched coordinates when has_box
    (without a box, w and v are the same array)."""
    if M.kind == MODEL_CHAIN:
        K = M.K
        kbuf = np.empty(K, dtype=np.int64)
        t0 = M.lab_off[i]
        T = M.lab_off[i + 1] - t0
        F = M.F1 - 1
        for t in range(T):
            tok = t0 + t
            base = t * K
            # only the labels k with δ[t, k] != 0 move w (few, for FW/away/pairwise directions)
            nk = 0
            for k in range(K):
                if dlt[base + k] != 0.0:
                    kbuf[nk] = k
                    nk += 1
            if nk == 0:
                continue
            for j in range(nk):
                k = kbuf[j]
                v[F * K + k] += coef * dlt[base + k]
            for p in range(M.feat_indptr[tok], M.feat_indptr[tok + 1]):
                row = M.feat_indices[p] * K
                c = coef * M.feat_values[p]
                for j in range(nk):
                    k = kbuf[j]
                    v[row + k] += c * dlt[base + k]
            if has_box:
                for j in range(nk):
                    q = F * K + kbuf[j]
                    w[q] = _clip(v[q], lb[q], ub[q])
                for p in range(M.feat_indptr[tok], M.feat_indptr[tok + 1]):
                    row = M.feat_indices[p] * K
                    for j in range(nk):
                        q = row + kbuf[j]
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
    else:
        r0 = M.mc_row_off[i]
        nl = M.mc_row_off[i + 1] - r0
        for y in range(nl):
            c = coef * dlt[y]
            if c != 0.0:
                r = r0 + y
                for p in range(M.mc_indptr[r], M.mc_indptr[r + 1]):
                    j = M.mc_indices[p]
                    v[j] += c * M.mc_values[p]
                    if has_box:
                        w[j] = _clip(v[j], lb[j], ub[j])


@njit(cache=True, nogil=True, inline="always")
def chain_pair_sqnorm(M, i, ys, yv):
    """‖B_i (m(y_s) − m(y_v))‖² for two labellings of chain block i, in O(T + D²) (D: positions
    where they differ) from the labels and the T×T Gram matrix (the direction of a pairwise step;
    Paper: Alg. 3). Equal to :func:`block_sqnorm` of the dense direction up to the order of the
    floating-point sum."""
    T = M.lab_off[i + 1] - M.lab_off[i]
    return _pair_sqnorm(M.K, T, M.gram, M.gram_off[i], ys, yv, np.empty(max(T, 1), dtype=np.int64))


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
def chain_pair_apply(M, i, ys, yv, gam, mu, coef, v, w, lb, ub, has_box):
    """μ_i += γ (m(y_s) − m(y_v)) and v += coef · B_i (m(y_s) − m(y_v)) (w = clip(v) on the touched
    coordinates when has_box), touching only the entries where the two labellings differ.
    Bitwise the same updates as the dense direction through :func:`block_axpy`."""
    T = M.lab_off[i + 1] - M.lab_off[i]
    _pair_apply(M.K, M.lab_off[i], T, M.F1 - 1, M.feat_indptr, M.feat_indices,
                M.feat_values, M.first_off, M.last_off, M.trans_off, ys, yv, gam, mu, coef, v, w, lb, ub, has_box,
                M.feat_unit != 0, np.empty(max(T, 1), dtype=np.int64))


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
    cap = S.a_alpha.shape[1]
    L = M.lab_off[i + 1] - M.lab_off[i]
    if S.a_count[i] < cap:
        s = S.a_count[i]
        S.a_count[i] += 1
    else:
        s = -1
        oldest = np.iinfo(np.int64).max
        for q in range(cap):
            if S.a_alpha[i, q] == 0.0 and S.a_used[i, q] < oldest:
                oldest = S.a_used[i, q]
                s = q
        if s < 0:
            return -1
    b = atom_base(M, S, i, s)
    for t in range(L):
        S.a_lab[b + t] = y[t]
    S.a_alpha[i, s] = 0.0
    S.a_loss[i, s] = loss
    S.a_hash[i, s] = hsh
    S.a_used[i, s] = k
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


# ============================================================================ samplers


@njit(cache=True, nogil=True)
def _tree_leaf_value(S, cfg_f, i):
    if S.weights.shape[0] > 0:
        return S.weights[i]
    g = S.gap_est[i]
    if not (g > 0.0):  # also NaN-safe
        return 0.0
    p = cfg_f[F_P]
    return g if p == 1.0 else g ** p


@njit(cache=True, nogil=True, inline="always")
def tree_update(S, cfg_f, i):
    size = S.tree.shape[0] // 2
    j = size + i
    S.tree[j] = _tree_leaf_value(S, cfg_f, i)
    j //= 2
    while j >= 1:
        S.tree[j] = S.tree[2 * j] + S.tree[2 * j + 1]
        j //= 2


@njit(cache=True, nogil=True)
def tree_rebuild(S, cfg_f, n):
    size = S.tree.shape[0] // 2
    for j in range(size, 2 * size):
        S.tree[j] = 0.0
    for i in range(n):
        S.tree[size + i] = _tree_leaf_value(S, cfg_f, i)
    for j in range(size - 1, 0, -1):
        S.tree[j] = S.tree[2 * j] + S.tree[2 * j + 1]


@njit(cache=True, nogil=True, inline="always")
def mark_visited(S, i):
    """Remove block i from the list of blocks whose gap was never computed."""
    pos = S.unv_pos[i]
    if pos >= 0:
        last = S.counters[C_UNVISITED] - 1
        other = S.unv[last]
        S.unv[pos] = other
        S.unv_pos[other] = pos
        S.unv[last] = i
        S.unv_pos[i] = -1
        S.counters[C_UNVISITED] = last


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
def set_block_gap(S, cfg_i, cfg_f, i, g, k):
    S.gap_est[i] = g
    S.gap_iter[i] = k
    mark_visited(S, i)
    if cfg_i[I_SAMPLING] == SAMPLE_GAP or cfg_i[I_SAMPLING] == SAMPLE_EXACT_GAP:
        tree_update(S, cfg_f, i)


# ============================================================================ block step


@njit(cache=True, nogil=True, inline="always")
def _line(g, q, lam, n, gmax):
    """Exact line search on the quadratic dual: γ = g λ n² / ‖B δ‖², clipped to [0, gmax];
    returns (γ, dual improvement γ g − γ² q / (2 λ n²))."""
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
    """Cache hit criterion of Alg. 5: ĝ_i >= max(F·g_i^(k_i), ν/n·g^(k_0)). A block whose gap
    was never computed (g_i = +inf) never hits; before the first gap pass g^(k_0) = +inf, so
    nothing hits either (Paper: Alg. 5 line 2, g^(0) = +inf)."""
    if not visited:
        return False
    thr = max(F * gap_i, nu / n * global_gap)
    return ghat >= thr


@njit(cache=True, nogil=True, inline="always")
def _sample_arr(n, mode, rng, tree, gap_est, unv, counters, perm):
    """The draw of :func:`sample_block` on the arrays it needs (passing the state tuple to an
    inlined helper costs a reference-count update per array; this runs once per step). After an
    exact-gap refresh every block is visited, so that sampler draws from the tree here."""
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


@njit(cache=True, nogil=True)
def run_steps(M, S, cfg_i, cfg_f, max_steps):
    """Run up to ``max_steps`` block steps (Paper: Alg. 1, 3, 4, 5 and their combination); stop
    early (before a step) when an atom pool must grow (C_GROW). Each step writes one record to
    the ring log. Returns the number of steps done.

    The step is written out in the loop rather than called: a call hands over the model and
    state tuples, which costs a reference-count update per array (about 100 atomic operations
    per step, measured at 5-9 % of a step)."""
    done = 0
    n = M.n
    mode = cfg_i[I_SAMPLING]
    lam = cfg_f[F_LAM]
    track = cfg_i[I_TRACK] != 0
    has_box = cfg_i[I_BOX] != 0
    step = cfg_i[I_STEP]
    h = S.h
    rng, tree, gap_est, unv, counters, perm = S.rng, S.tree, S.gap_est, S.unv, S.counters, S.perm
    # scratch for the active-set scan (the pool capacity cannot change during this call)
    cap = S.a_alpha.shape[1]  # atom slots per block
    keys = np.empty(cap, dtype=np.uint64)
    terms = np.empty(cap)
    klist = np.empty(M.K, dtype=np.int64)
    pos = np.empty(max(S.ybuf.shape[0], 1), dtype=np.int64)  # differing positions of two labellings
    # Away / pairwise / combined steps on a chain keep an active set: ⟨μ_i, h⟩ = Σ_y α_i(y)⟨m(y), h⟩
    # comes from the atoms (one scan that also finds the cache and away corners) and a pairwise
    # direction is handled in label space, so no step touches all T·K + K² statistics.
    sparse = track and M.kind == MODEL_CHAIN and step != STEP_FW
    while done < max_steps:
        if counters[C_GROW] != 0:
            break
        if mode == SAMPLE_EXACT_GAP:
            i = sample_block(M, S, cfg_i, cfg_f)
        else:
            i = _sample_arr(n, mode, rng, tree, gap_est, unv, counters, perm)

        # ================================================================ one block step on block i
        if M.kind == MODEL_CHAIN:
            # Start fetching the block's scattered data now, so that the cache misses overlap
            # (measured on OCR-large: 6-9 % less time per cached step, 3-6 % per BCFW step).
            # The prefetches are hints only and change no result.
            # first the addresses known from i alone, so that their misses overlap the dependent
            # loads of the label and feature offsets below
            if track:
                for q in range(0, min(cap, 16), 8):
                    prefetch(S.a_alpha, i * cap + q)
                    prefetch(S.a_hash, i * cap + q)
                prefetch(S.a_loss, i * cap)
                prefetch(S.a_used, i * cap)
            t_first = M.lab_off[i]
            f_end = M.feat_indptr[M.lab_off[i + 1]]
            for q in range(M.feat_indptr[t_first], f_end, 8):
                prefetch(M.feat_indices, q)
            if track:
                for q in range(0, min(cap, 16) * (M.lab_off[i + 1] - t_first), 8):  # the first 16 atoms' labels
                    prefetch(S.a_lab, t_first * cap + q)
            if sparse and M.gram.shape[0] > 0:
                g_first = M.gram_off[i]
                for q in range(g_first, M.gram_off[i + 1], 8):
                    prefetch(M.gram, q)
        k = S.counters[C_ITER]
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        L = M.lab_off[i + 1] - M.lab_off[i]
        mu = S.mu[so:so + p]

        # A cache hit is possible only on a visited block after the first gap pass (Alg. 5). Then
        # score just the node entries the cached labellings (and μ_i) touch; the full score vector
        # is computed only on a miss (bitwise the same entries either way).
        could_hit = (cfg_i[I_CACHE] != 0 and S.a_count[i] > 0 and S.gap_iter[i] >= 0
                     and S.scalars[S_GLOBAL_GAP] < np.inf)
        partial = could_hit and M.kind == MODEL_CHAIN
        if partial:
            TK = L * M.K
            for s in range(S.a_count[i]):
                b = atom_base(M, S, i, s)
                for t in range(L):
                    S.mark[uint64(t * M.K + S.a_lab[uint64(b + t)])] = 1
            if not sparse:
                for q in range(TK):
                    if mu[q] != 0.0:
                        S.mark[q] = 1
            _scores_masked(M.K, M.lab_off[i], L, M.F1 - 1, M.feat_indptr, M.feat_indices, M.feat_values, M.gt,
                           M.first_off, M.last_off, M.trans_off, S.w, h, S.mark, not sparse, M.feat_unit != 0, klist)
            for q in range(TK):
                S.mark[q] = 0
        else:
            block_scores(M, i, S.w, h)

        flags = 0
        hit = False
        fw_slot = -1
        fw_val = 0.0
        fw_loss = 0.0
        a_slot = -1
        a_val = 0.0
        best = -np.inf
        if sparse:
            # one scan: best cached labelling, away corner (argmin over the active set) and
            # ⟨μ_i, h⟩ summed over the active atoms in label-hash order (the same order whatever
            # the slots, so a cache that never hits leaves the trace unchanged)
            na = 0
            cnt = S.a_count[i]
            a_best = np.inf
            a_lab = S.a_lab
            a_alpha = S.a_alpha
            a_hash = S.a_hash
            K = M.K
            lab0 = M.lab_off[i] * cap
            w_ = S.w  # transition scores are the weights themselves (h's K×K part is a copy)
            tr_off = M.trans_off
            for s in range(cnt):
                b = lab0 + s * L
                val = 0.0
                for t in range(L):
                    val += h[uint64(t * K + a_lab[uint64(b + t)])]
                for t in range(L - 1):
                    val += w_[uint64(tr_off + a_lab[uint64(b + t)] * K + a_lab[uint64(b + t + 1)])]
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
            a_val = a_best
            mu_h = 0.0
            for j in range(na):
                mu_h += terms[j]
        else:
            mu_h = 0.0
            for q in range(p):
                mu_h += mu[q] * h[q]
            if could_hit:
                for s in range(S.a_count[i]):
                    val = atom_dot(M, S, i, s, h)
                    if val > best:
                        best = val
                        fw_slot = s

        # ---- FW corner: cache corner on a hit, else the max oracle (Paper: Alg. 5)
        if could_hit:
            ghat = (best - mu_h) / n
            if cache_hit_rule(ghat, S.gap_est[i], S.gap_iter[i] >= 0, S.scalars[S_GLOBAL_GAP],
                              cfg_f[F_CACHE_F], cfg_f[F_CACHE_NU], n):
                hit = True
                flags |= FLAG_HIT
                fw_val = best
                fw_loss = S.a_loss[i, fw_slot]
                b = atom_base(M, S, i, fw_slot)
                for t in range(L):
                    S.ybuf[t] = S.a_lab[b + t]
                S.a_used[i, fw_slot] = k
                S.counters[C_HIT] += 1
            else:
                fw_slot = -1
        if not hit:
            if partial:  # the entries scored so far are bitwise those of the full scores
                block_scores(M, i, S.w, h)
            fw_val = block_oracle(M, i, h, S.ybuf, S.vit_f, S.vit_i)
            flags |= FLAG_ORACLE
            S.counters[C_ORACLE] += 1
            S.counters[C_STEP_ORACLE] += 1
            set_block_gap(S, cfg_i, cfg_f, i, (fw_val - mu_h) / n, k)
            fw_loss = label_loss(M, i, S.ybuf)
            if track:
                hsh = label_hash(S.ybuf, L)
                fw_slot = atom_find(M, S, i, S.ybuf, hsh)
                if fw_slot < 0:
                    fw_slot = atom_insert(M, S, i, S.ybuf, hsh, fw_loss, k)
                    if fw_slot < 0:  # callers grow the pools before a step (C_GROW); never reached
                        raise RuntimeError("atom pool full: grow_atoms must run before the step")
                else:
                    S.a_used[i, fw_slot] = k
        for t in range(L):
            S.last_fw[t] = S.ybuf[t]
        g_fw = (fw_val - mu_h) / n

        # ---- away corner: argmin over the active set of H_i (Paper: Alg. 3, 4)
        if step != STEP_FW:
            if not sparse:
                best_a = np.inf
                for s in range(S.a_count[i]):
                    if S.a_alpha[i, s] > 0.0:
                        val = atom_dot(M, S, i, s, h)
                        if val < best_a:
                            best_a = val
                            a_slot = s
                a_val = best_a
            b = atom_base(M, S, i, a_slot)
            for t in range(L):
                S.yaway[t] = S.a_lab[b + t]
                S.last_away[t] = S.yaway[t]

        if sparse:
            # The label-space pairwise update touches μ_i only where the two corners differ. Its
            # loops reach those entries one miss at a time; prefetching them all here lets the
            # misses overlap (measured: 15-17 % less time per cached BCPFW step on OCR-large).
            TKp = L * M.K
            for t in range(L):
                if S.ybuf[t] != S.yaway[t]:
                    prefetch(mu, t * M.K + S.ybuf[t])
                    prefetch(mu, t * M.K + S.yaway[t])
            for t in range(L - 1):
                prefetch(mu, TKp + S.ybuf[t] * M.K + S.ybuf[t + 1])
                prefetch(mu, TKp + S.yaway[t] * M.K + S.yaway[t + 1])
        # ---- candidates
        kind = KIND_FW
        gam = 0.0
        gmax = 1.0
        g_used = g_fw
        best_imp = -1.0
        dl = S.dlt
        if step == STEP_FW or step == STEP_AWAY or step == STEP_COMBINED:
            for q in range(p):
                dl[q] = -mu[q]
            label_add(M, i, S.ybuf, 1.0, dl)
            qn = block_sqnorm(M, i, dl, S.zbuf)
            gam, best_imp = _line(g_fw, qn, lam, n, 1.0)
            kind = KIND_FW
            gmax = 1.0
        if step == STEP_AWAY or step == STEP_COMBINED:
            alpha_a = S.a_alpha[i, a_slot]
            g_a = (mu_h - a_val) / n
            # with (numerically) all the mass on the away corner the away direction is zero:
            # μ_i − m(y_a) is round-off only, and γ_max = α_a / (1 − α_a) would be unbounded
            single = alpha_a >= 1.0 - 1e-12
            amax = 0.0 if single else alpha_a / (1.0 - alpha_a)
            # away direction δ = μ_i − m(y_a)
            for q in range(p):
                S.tmp[q] = mu[q]
            label_add(M, i, S.yaway, -1.0, S.tmp)
            qa = block_sqnorm(M, i, S.tmp, S.zbuf)
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
                    dl[q] = S.tmp[q]
        if step == STEP_PAIRWISE or step == STEP_COMBINED:
            alpha_a = S.a_alpha[i, a_slot]
            g_p = (fw_val - a_val) / n
            if sparse:
                qp = _pair_sqnorm(M.K, L, M.gram, M.gram_off[i], S.ybuf, S.yaway, pos)
            else:
                for q in range(p):
                    S.tmp[q] = 0.0
                label_add(M, i, S.ybuf, 1.0, S.tmp)
                label_add(M, i, S.yaway, -1.0, S.tmp)
                qp = block_sqnorm(M, i, S.tmp, S.zbuf)
            gam_p, imp_p = _line(g_p, qp, lam, n, alpha_a)
            if step == STEP_PAIRWISE or imp_p > best_imp:
                kind = KIND_PAIRWISE
                gam = gam_p
                gmax = alpha_a
                best_imp = imp_p
                g_used = g_p
                if not sparse:
                    for q in range(p):
                        dl[q] = S.tmp[q]

        # ---- apply (one atomic change of μ_i, ℓ_i, w and the atoms)
        if gam > 0.0:
            if sparse and kind == KIND_PAIRWISE:
                _pair_apply(M.K, M.lab_off[i], L, M.F1 - 1, M.feat_indptr, M.feat_indices, M.feat_values, M.first_off,
                            M.last_off, M.trans_off, S.ybuf, S.yaway, gam, mu, -gam / (lam * n), S.v, S.w, S.lb, S.ub,
                            has_box, M.feat_unit != 0, pos)
            else:
                for q in range(p):
                    mu[q] += gam * dl[q]
                block_axpy(M, i, -gam / (lam * n), dl, S.v, S.w, S.lb, S.ub, has_box)
        old_ell = S.ell[i]
        if kind == KIND_FW:
            new_ell = old_ell + gam * (fw_loss / n - old_ell)
            S.counters[C_FW] += 1
            if track:
                if gam >= 1.0:
                    for s in range(S.a_count[i]):
                        S.a_alpha[i, s] = 0.0
                    S.a_alpha[i, fw_slot] = 1.0
                elif gam > 0.0:
                    for s in range(S.a_count[i]):
                        S.a_alpha[i, s] *= (1.0 - gam)
                    S.a_alpha[i, fw_slot] += gam
        elif kind == KIND_AWAY:
            a_loss = S.a_loss[i, a_slot]
            new_ell = old_ell + gam * (old_ell - a_loss / n)
            S.counters[C_AWAY] += 1
            if gam > 0.0:
                for s in range(S.a_count[i]):
                    S.a_alpha[i, s] *= (1.0 + gam)
                if gam >= gmax:
                    S.a_alpha[i, a_slot] = 0.0
                    flags |= FLAG_DROP
                    S.counters[C_DROP] += 1
                else:
                    S.a_alpha[i, a_slot] -= gam
        else:
            a_loss = S.a_loss[i, a_slot]
            new_ell = old_ell + gam * (fw_loss - a_loss) / n
            S.counters[C_PAIR] += 1
            if gam > 0.0 and fw_slot != a_slot:
                if gam >= gmax:
                    S.a_alpha[i, fw_slot] += S.a_alpha[i, a_slot]
                    S.a_alpha[i, a_slot] = 0.0
                    flags |= FLAG_DROP
                    S.counters[C_DROP] += 1
                else:
                    S.a_alpha[i, a_slot] -= gam
                    S.a_alpha[i, fw_slot] += gam
        S.ell[i] = new_ell
        S.scalars[S_ELL] += new_ell - old_ell
        if track:
            if kind != KIND_PAIRWISE and gam > 0.0 and cfg_f[F_DROP_TOL] > 0.0:
                purge_small(M, S, cfg_i, cfg_f, i)
            # atoms_trim, with its common no-op case checked here on plain arrays (handing the state
            # tuple to an inlined helper costs a reference-count update per array)
            a_count = S.a_count
            a_alpha = S.a_alpha
            limit = cfg_i[I_CACHE_SIZE] if cfg_i[I_CACHE] != 0 else 0
            if a_count[i] > limit:
                atoms_trim(M, S, cfg_i, i)
            elif a_count[i] == cap:
                full = True
                for q in range(a_count[i]):
                    if a_alpha[i, q] == 0.0:
                        full = False
                        break
                if full:
                    S.counters[C_GROW] = 1

        # ---- record
        r = S.counters[C_LOG_POS] % S.log.shape[0]
        S.log[r, L_ITER] = k
        S.log[r, L_BLOCK] = i
        S.log[r, L_KIND] = kind
        S.log[r, L_FLAGS] = flags
        S.log[r, L_GAMMA] = gam
        S.log[r, L_GAMMA_MAX] = gmax
        S.log[r, L_GAP] = S.gap_est[i]
        S.log[r, L_CORNER_GAP] = g_used
        S.log[r, L_IMPROVE] = best_imp if best_imp > 0.0 else 0.0
        if track:
            na_now = 0
            a_alpha = S.a_alpha
            for q in range(S.a_count[i]):
                if a_alpha[i, q] > 0.0:
                    na_now += 1
            S.log[r, L_ACTIVE] = na_now
        else:
            S.log[r, L_ACTIVE] = -1
        S.counters[C_LOG_POS] += 1
        S.counters[C_ITER] = k + 1
        done += 1
    return done


# ============================================================================ exact gaps


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
            so = M.stat_off[i]
            p = M.stat_off[i + 1] - so
            block_scores(M, i, w, h)
            mu_h = 0.0
            for q in range(p):
                mu_h += mu[so + q] * h[q]
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
    so = M.stat_off[i]
    p = M.stat_off[i + 1] - so
    block_scores(M, i, S.w, S.h)
    mu_h = 0.0
    for q in range(p):
        mu_h += S.mu[so + q] * S.h[q]
    val = block_oracle(M, i, S.h, S.yaway, S.vit_f, S.vit_i)
    return (val - mu_h) / M.n


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
