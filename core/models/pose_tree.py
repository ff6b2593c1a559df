"""Pose estimation on a tree of parts with mixture types (Paper: App. I, LSP; Chen and Yuille,
NIPS 2014; Yang and Ramanan's flexible mixtures of parts), with a loss-augmented max oracle by
max-sum on the tree and generalized distance transforms (Felzenszwalb and Huttenlocher 2005).

Labelling
    y of block (image) i is int64 of shape (2N,): ``y[2p]`` the position index ``row·G + col``
    of node p (0 <= . < G²), ``y[2p+1]`` its mixture type (0 <= . < T_p; T_root = 1).
    N = 26 for LSP (see :mod:`gaplab.core.datasets.lsp` for the tree).

Joint feature map ψ(x_i, y) ∈ R^d (layout; offsets in :class:`PoseArrays`)
    * unary, N entries: ψ_U,p = φ_p(l_p), the generated part-score map of node p of image i at
      the node's position (weight w_U,p: one per node, as the paper);
    * type pairs, Σ_q T_q·T_parent(q) entries: indicator [t_q = a, t_parent(q) = b] for each edge
      (q, parent(q)) (the pairwise type weights: co-occurrence of mixture types);
    * deformation, Σ_q 4·T_q entries: for the child q's type t, with the displacement
      (dx, dy) = (l_q − l_parent(q) − r_q^t)/u (u = G/2 cells, :data:`DEFORM_UNIT`: the
      features do not grow with G and stay O(1), as the unary scores do; loss-augmented
      corners put parts far apart while the quadratic weights are near 0, and with u = one
      32-grid cell their dx² features reach 10³, ‖ψ‖² ~ 10⁵, and BCFW's steps have
      γ ~ λn/‖ψ‖² ~ 10⁻⁶: measured, the relative gap stayed above 0.9 after 30 passes (n = 50,
      G = 16, λ = 0.01); with u = G/2 and λ = 0.1 it reached 0.075 in 40 passes), the features −(dx, dx², dy, dy²) in slot t and 0 in the other types' slots.
      The minus sign makes the term a penalty: ⟨w_P,q,t, ψ⟩ = −(b_x dx + a_x dx² + b_y dy +
      a_y dy²), concave in the displacement when the quadratic weights a_x, a_y are >= 0,
      which is what the distance transform needs; :meth:`PoseModel.bounds` keeps them >= 0
      (Paper: App. H).

    LSP with T = 4 types (the loader's default): d = 26 + (3·4 + 22·16) + 25·16 = 790;
    with T = 6: d = 26 + (3·6 + 22·36) + 25·24 = 1,436.

Loss
    L_i(y) = (1/N) Σ_p min(1, ‖l_p − l*_p‖² / s_i²) over all N nodes (the paper's ``1/|V| Σ_{p∈V}``;
    min, as the authors' code; the text's max is a typo), s_i the left-shoulder to right-hip
    distance of the ground truth (grid units). L_i(y_i) = 0 and L_i <= 1.

Statistics space (what the solver stores per block)
    m(y) = (ψ(x_i, y), L_i(y)) ∈ R^{d+1}, so p_i = d + 1 and ψ = B_i m(y) with B_i = [I_d 0].
    The score vector is h = (w, 1): ⟨m(y), h⟩ = ⟨w, ψ⟩ + L_i(y) (c_i = 0). The other choice,
    one-hot positions per node (p_i >= 26·G²), would make the solver's per-block statistics
    μ (n × p_i float64) 1,000 × 26 × 128² × 8 B = 3.4 GB at G = 128 (0.85 GB at G = 64), and
    its atoms as many again; with p_i = d + 1 (791 for T = 4, 1,437 for T = 6) μ takes 6.3 MB
    (11.5 MB) at every G.
    The oracle reads h as (w, loss coefficient): h[d] = 0 is plain decoding.

Max oracle (:func:`pose_oracle`)
    Max-sum on the tree, leaves first. Node q's table S_q(l, t) (T_q × G²) is w_U,q φ_q(l) +
    h[d]·loss_q(l) plus the messages of its children. Its message to the parent p is
    M(l_p, t_p) = max_{t_q} [w_pair(t_q, t_p) + max_{l_q} S_q(l_q, t_q) − def_{q,t_q}(l_q − l_p)],
    the inner max a separable 2-D generalized distance transform per child type, then per
    parent type one branch-free pass over the child's types adding the pair weight (values
    only). Two transforms, the same maxima: for G <= :data:`DIRECT_MAX_G` (72) a direct one,
    O(G³) but branch-free sweeps over whole contiguous tables that vectorize
    (:func:`_direct2d`; node tables alternate row- and column-major with the depth, so one
    transpose per transform), above it the upper envelope of parabolas, O(G²) but branchy
    (Felzenszwalb and Huttenlocher 2005; :func:`_dt2d`). No back-pointers are kept: while
    back-tracking, each of the N − 1 answer cells is recomputed from the child's table with
    the message's own arithmetic (:func:`_backtrack_child`, O(T·G²) per node); ties go to the
    smallest type, then the smallest cell (row-major). Nothing is allocated. Measured
    (benchmarks/bench_pose.py --reference --both-transforms, LSP, T = 4, CPU-time medians
    over 20 images × 3 calls, 2-core machine shared with other jobs, load average ≈ 1; see
    benchmarks/results/bench_pose.json): 0.81 / 5.4 / 26 ms at G = 32 / 64 / 128, against
    2.2 / 7.9 / 31 ms for the previous oracle (envelope transform, back-pointers;
    tests/pose_oracle_reference.py) timed on the same calls (×2.7 / 1.5 / 1.2; the same
    values and labellings in 60 of 60 calls at each G). Forced to one transform: direct
    0.83 / 5.6 / 39 ms, envelope 1.85 / 6.5 / 26 ms. At G = 32 about 75 % of a call are the
    100 transforms (25 edges × 4 types, ~6 µs each: G³ = 32 K subtractions and maxima per
    pass, near the machine's vector floating-point throughput; the envelope takes ~18 µs,
    its hull pops depending on the noisy scores being mispredicted branches), the rest the
    26 generated score maps (~0.05 ms, regenerated every call: they depend on the image
    only, but caching them would cost 26·G² float64 per image), the loss term (~0.03 ms),
    the type maxima (~0.04 ms) and the back-tracking.

Differences from the paper's model
    The paper (after Chen and Yuille) has a type t_pq ∈ {1..13} per *arc* (both orientations of
    every edge) and a CNN score φ^P_pq(I, l_p, t_pq) of each type, weighted by w_T,pq. Without
    images there is no type evidence, so here a type belongs to each non-root *node* (its
    displacement cluster relative to its parent, as in Yang and Ramanan) and the "pairwise type
    weights" are biases of the (child type, parent type) pairs; the unary and deformation terms
    are as in the paper.

Scratch (sizes in :class:`PoseArrays` fields ``scr_f``, ``scr_i``; T = max types, GG = G²)
    float64 ``scr_f = (N + 1)·T·GG + 2·GG + 5G + 2``: the node tables, the per-type transforms
    of one child, two G² work tables (a transpose, a first pass), the penalties, the
    envelope's values and breakpoints, a back-tracking row. int64 ``scr_i = 2·GG + G + N``:
    the envelope's arg-max and first-pass arg-max (written, unused) and parabola list, and a
    flag per node (its table's other layers written yet). LSP at G = 128: T = 4, 1.80 M
    float64 (14 MB) and 33 K int64; T = 6, 2.69 M float64 (21 MB). The solver hands a compiled
    oracle scratch of length (label length) × M.K, so ``K`` is not G² here but
    ceil(max(scr_f, scr_i) / 2N); the solver allocates it once per state and once per thread
    chunk of an exact gap pass (nothing is shared between threads; :class:`PoseArrays` holds
    only the sizes).

Paper: App. I (LSP model), App. H (box constraints), Eq. (2) (max oracle).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit, uint64

from ..kernels import register_model_kind
from . import protocol as _p
from .protocol import StructuredModel, check_labelling

__all__ = [
    "PoseArrays", "PoseModel", "build_pose_arrays", "pose_scores", "pose_oracle", "pose_decode",
    "pose_label_dot", "pose_label_add", "pose_label_loss", "pose_gt_label", "pose_sqnorm",
    "pose_axpy", "pose_score_map", "pose_unary_value", "distance_transform_1d",
    "distance_transform_2d",
]

PoseArrays = namedtuple(
    "PoseArrays",
    [
        "n", "d", "K",       # blocks (images), dim of w, oracle scratch per label entry (see below)
        "stat_off",          # int64 (n+1): block i's statistics m(y) = (ψ, L) at [i(d+1), (i+1)(d+1))
        "lab_off",           # int64 (n+1): labelling of block i: 2N entries (position, type) per node
        "gt",                # int64 (2N·n): ground-truth labellings
        "G", "N", "T",       # grid side, nodes, max types
        "parent",            # int64 (N,): parent node (-1 root)
        "nchild",            # int64 (N,): children of each node (0: a leaf)
        "depth",             # int64 (N,): depth in the tree (root 0)
        "order",             # int64 (N,): breadth-first order from the root
        "ntype",             # int64 (N,): types of each node (root: 1)
        "anchors",           # float64 (N·T·2,): r_q^t (grid units), [q, t, (x, y)]
        "pair_off",          # int64 (N,): start of edge (q, parent)'s type-pair weights (T_q × T_parent)
        "def_off",           # int64 (N,): start of node q's deformation weights (T_q × 4)
        "unit",              # float: deformation unit u (cells)
        "scale2",            # float64 (n,): s_i²
        "img_id",            # int64 (n,): image identity in the noise hash
        "seed",              # int: score-map seed
        "noise",             # float: noise standard deviation
        "sigma",             # float: bump width (cells)
        "bump_pos",          # float64 (n·N·3·2,): bump centres (x, y)
        "bump_amp",          # float64 (n·N·3,): bump amplitudes
        "scr_f", "scr_i",    # oracle scratch sizes (float64, int64)
        "direct_max_G",      # int: the oracle's transforms are direct when G <= this, envelope above
    ],
)

#: deformation unit u as a fraction of the grid side G (displacements are measured in G/2 cells)
DEFORM_UNIT = 0.5

_GOLD = uint64(0x9E3779B97F4A7C15)
_NEG = -np.inf


# ============================================================================ score maps
@njit(cache=True, nogil=True, inline="always")
def _mix(z):
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    return z ^ (z >> uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _map_key(M, i, p):
    a = _mix(uint64(M.seed) * _GOLD + uint64(0x5DEECE66D))
    b = _mix(uint64(M.img_id[i]) * uint64(0xD1B54A32D192ED03) + uint64(p) + uint64(1))
    return _mix(a ^ b)


@njit(cache=True, nogil=True, inline="always")
def _noise(key, cell):
    z = _mix(key + uint64(cell + 1) * _GOLD)
    s = float(z & uint64(0xFFFF)) + float((z >> uint64(16)) & uint64(0xFFFF)) \
        + float((z >> uint64(32)) & uint64(0xFFFF)) + float(z >> uint64(48))
    return ((s + 2.0) / 65536.0 - 2.0) * 1.7320508075688772  # Irwin-Hall(4), mean 0, variance 1


@njit(cache=True, nogil=True, inline="always")
def _bump(M, i, p, k, x, y):
    """Bump k of node p's map at cell (x, y) (0 outside its window of radius 4σ)."""
    b = (i * M.N + p) * 3 + k
    amp = M.bump_amp[b]
    if amp == 0.0:
        return 0.0
    dx = x - M.bump_pos[2 * b]
    dy = y - M.bump_pos[2 * b + 1]
    r2 = dx * dx + dy * dy
    s = M.sigma
    if r2 > 16.0 * s * s:
        return 0.0
    return amp * np.exp(-r2 / (2.0 * s * s))


@njit(cache=True, nogil=True)
def pose_unary_value(M, i, p, cell):
    """φ_p(cell) of image i: the generated part-score map of node p at one cell (index
    row·G + col); bit-identical to :func:`pose_score_map` at that cell."""
    G = M.G
    x = cell % G
    y = cell // G
    v = M.noise * _noise(_map_key(M, i, p), cell)
    for k in range(3):
        v += _bump(M, i, p, k, x, y)
    return v


@njit(cache=True, nogil=True)
def pose_score_map(M, i, p, out):
    """Fill out[:G²] with node p's part-score map φ_p of image i (row-major, float64)."""
    G = M.G
    key = _map_key(M, i, p)
    nz = M.noise
    for c in range(G * G):
        out[c] = nz * _noise(key, c)
    s = M.sigma
    rad = 4.0 * s
    for k in range(3):
        b = (i * M.N + p) * 3 + k
        if M.bump_amp[b] == 0.0:
            continue
        cx = M.bump_pos[2 * b]
        cy = M.bump_pos[2 * b + 1]
        x0 = max(0, int(np.floor(cx - rad)))
        x1 = min(G - 1, int(np.ceil(cx + rad)))
        y0 = max(0, int(np.floor(cy - rad)))
        y1 = min(G - 1, int(np.ceil(cy + rad)))
        for y in range(y0, y1 + 1):
            for x in range(x0, x1 + 1):
                out[y * G + x] += _bump(M, i, p, k, x, y)


# ============================================================================ distance transform
@njit(cache=True, nogil=True, inline="always")
def _dt1d(src, s0, n, a, b, shift, dst, d0, dstep, arg, a0, astep, sub, sub0, G, hv, he, z):
    """dst[d0 + j·dstep] = max_x src[s0 + x] − a (x − c_j)² − b (x − c_j), c_j = j + shift,
    for j, x in [0, n) (src contiguous); arg[a0 + j·astep] = the maximising x, or, when
    sub0 >= 0, x·G + sub[sub0 + x] (the 2-D transform composes its two passes' arg-max so).
    a >= 0. Felzenszwalb and Huttenlocher (2005): the upper envelope of the parabolas, i.e.
    the upper hull of the points (x, e_x), e_x = f_x − a x² − b x: a branch-free filter
    keeps the candidates (points above the chords of their near neighbours), the hull is
    built over them with a division-free test (a parabola p is dropped when its intersection
    with the new one, q, lies left of or at its intersection with the previous one, r), then
    the K breakpoints of the hull z_k = (e_{k−1} − e_k) / (2a (x_k − x_{k−1})) (K divisions,
    not n) and one sweep over c_j. Same hull, breakpoints and tie rule (the leftmost
    maximiser at a breakpoint) as the textbook algorithm. O(n), no allocation. hv (int64,
    n), he (float64, n), z (float64, n + 2): work."""
    if a == 0.0:  # linear: the maximiser does not depend on c_j
        best = _NEG
        bx = 0
        for x in range(n):
            val = src[s0 + x] - b * x
            if val > best:
                best = val
                bx = x
        fb = src[s0 + bx]
        code = bx * G + sub[sub0 + bx] if sub0 >= 0 else bx
        for j in range(n):
            c = j + shift
            dst[d0 + j * dstep] = fb - b * (bx - c)
            arg[a0 + j * astep] = code
        return
    # candidates: a hull vertex x lies strictly above every chord (u, v) with u < x < v (a
    # supporting line at x passes above them); x is dropped unless it is above the chords of
    # (x−1, x+1), (x−2, x+2), (x−1, x+2) and (x−2, x+1) (the pop test below drops points on a
    # chord too). The test has no branch (hv, he written always, m advanced by it): on noisy
    # score maps most points go, and with them most of the hard-to-predict pops of the hull.
    for x in range(n):
        he[x] = src[s0 + x] - (a * x + b) * x
    em2 = _NEG  # e_{x−2}, e_{x−1}, e_x, e_{x+1}, e_{x+2}; −inf outside [0, n)
    em1 = _NEG
    e0 = he[0]
    e1 = he[1] if n > 1 else _NEG
    m = 0
    for x in range(n):
        e2 = he[x + 2] if x + 2 < n else _NEG
        keep = ((2.0 * e0 > em1 + e1) & (2.0 * e0 > em2 + e2)
                & (3.0 * e0 > 2.0 * em1 + e2) & (3.0 * e0 > em2 + 2.0 * e1))
        hv[m] = x   # m <= x: he[x + 1], he[x + 2] are still unread values
        he[m] = e0
        m += 1 if keep else 0
        em2 = em1
        em1 = e0
        e0 = e1
        e1 = e2
    k = 0
    for idx in range(1, m):  # upper hull over the candidates, in place (k < idx)
        q = hv[idx]
        eq = he[idx]
        while k > 0:
            p = hv[k]
            ep = he[k]
            # (e_p − e_q)/(q − p) <= (e_r − e_p)/(p − r): q's parabola passes p's before r's does
            if (ep - eq) * (p - hv[k - 1]) <= (he[k - 1] - ep) * (q - p):
                k -= 1
            else:
                break
        k += 1
        hv[k] = q
        he[k] = eq
    K = k
    ta = 2.0 * a
    for k in range(1, K + 1):
        z[k] = (he[k - 1] - he[k]) / (ta * (hv[k] - hv[k - 1]))
    z[K + 1] = np.inf
    k = 0
    x = hv[0]
    code = x * G + sub[sub0 + x] if sub0 >= 0 else x
    zn = z[1]
    for j in range(n):
        c = j + shift
        if zn < c:
            while z[k + 1] < c:
                k += 1
            zn = z[k + 1]
            x = hv[k]
            code = x * G + sub[sub0 + x] if sub0 >= 0 else x
        dd = x - c
        dst[d0 + j * dstep] = src[s0 + x] - (a * dd + b) * dd
        arg[a0 + j * astep] = code


@njit(cache=True, nogil=True)
def _dt2d(src, s0, G, ax, bx, ay, by, rx, ry, dst, d0, arg, a0, tmp, targ, hv, he, z):
    """dst[d0 + yp·G + xp] = max_{xq, yq} src[s0 + yq·G + xq] − ax·ddx² − bx·ddx − ay·ddy² −
    by·ddy with (ddx, ddy) = (xq − xp − rx, yq − yp − ry); arg = the maximising cell index.
    Two passes of :func:`_dt1d`, each reading contiguous rows: along x on every row of src,
    written transposed into tmp (tmp[xp·G + yq], its arg-max xq into targ), then along y on
    every row of tmp, written back in place (the arg-max composed on the fly: yq·G + xq).
    tmp (float64, G²), targ (int64, G²), hv (int64, G), he (float64, G), z (float64, G + 2):
    work."""
    for yq in range(G):
        _dt1d(src, s0 + yq * G, G, ax, bx, rx, tmp, yq, G, targ, yq, G, targ, -1, G, hv, he, z)
    for xp in range(G):
        _dt1d(tmp, xp * G, G, ay, by, ry, dst, d0 + xp, G, arg, a0 + xp, G, targ, xp * G, G, hv, he, z)


# ---------------------------------------------------------------------------- direct transform
# For G up to DIRECT_MAX_G the oracle uses a direct (brute-force) separable transform: O(G³)
# per 2-D transform instead of the envelope's O(G²), but branch-free sweeps over whole
# contiguous tables that LLVM vectorizes (AVX-512 here): ~5-6 µs a transform at G = 32 in the
# oracle, against ~18 µs for the envelope, whose hull pops depend on the noisy scores and so
# are mispredicted branches.

#: the oracle's transforms are direct (O(G³), vectorized) when G <= DIRECT_MAX_G, envelope
#: (O(G²), branchy) above. Measured, whole oracle calls forced to one transform (LSP, T = 4,
#: CPU-time medians, this 2-core AVX-512 machine shared with other jobs), direct / envelope:
#: 0.83 / 1.85 ms at G = 32, 5.6 / 6.5 ms at G = 64 (benchmarks/results/bench_pose.json),
#: 10.7 / 10.1 ms at G = 80, 17.7 / 14.3 ms at G = 96, 39 / 25 ms at G = 128.
DIRECT_MAX_G = 72


@njit(cache=True, nogil=True)
def _pen_table(a, b, r, G, pen):
    """pen[k + G − 1] = (a·dd + b)·dd, dd = k − r, for the offsets k = source − output in
    (−G, G): the penalty of a displacement k (cells) along one axis."""
    for k in range(-(G - 1), G):
        dd = k - r
        pen[k + G - 1] = (a * dd + b) * dd


@njit(cache=True, nogil=True, inline="always")
def _max_sub(D, S, p, n):
    """D[c] = max(D[c], S[c] − p) for c < n (vectorized: contiguous, branch-free select)."""
    for c in range(n):
        v = S[c] - p
        cur = D[c]
        D[c] = v if v > cur else cur


@njit(cache=True, nogil=True, inline="always")
def _max_sub4(D, S0, S1, S2, S3, p0, p1, p2, p3, n):
    """D[c] = max(D[c], S0[c] − p0, S1[c] − p1, S2[c] − p2, S3[c] − p3) for c < n: four
    offsets per sweep (one load and store of D for four candidates)."""
    for c in range(n):
        v0 = S0[c] - p0
        v1 = S1[c] - p1
        v2 = S2[c] - p2
        v3 = S3[c] - p3
        m01 = v0 if v0 > v1 else v1
        m23 = v2 if v2 > v3 else v3
        m = m01 if m01 > m23 else m23
        cur = D[c]
        D[c] = m if m > cur else cur


@njit(cache=True, nogil=True)
def _direct_rows(S, G, pen, D):
    """D[yp·G + x] = max_yq S[yq·G + x] − pen[yq − yp + G − 1] (S, D: G² contiguous, distinct):
    the 1-D transform along the row index of every column at once, by offsets k = yq − yp:
    each offset is one sweep over (G − |k|)·G contiguous entries (four offsets per sweep).
    G³ subtractions and maxima, no branch on the data."""
    GG = G * G
    p = pen[G - 1]
    for c in range(GG):
        D[c] = S[c] - p
    k = 1
    while k + 3 < G:
        # k + j (j = 0..3) > 0: yq = yp + k + j, yp < G − k − j; all four for yp < G − k − 3
        n = (G - k - 3) * G
        _max_sub4(D[:n], S[k * G:k * G + n], S[(k + 1) * G:(k + 1) * G + n],
                  S[(k + 2) * G:(k + 2) * G + n], S[(k + 3) * G:(k + 3) * G + n],
                  pen[G - 1 + k], pen[G + k], pen[G + 1 + k], pen[G + 2 + k], n)
        for j in range(3):
            kk = k + j
            hi = (G - kk) * G
            _max_sub(D[n:hi], S[kk * G + n:kk * G + hi], pen[G - 1 + kk], hi - n)
        # −(k + j): yq = yp − k − j, yp >= k + j; all four for yp >= k + 3
        lo = (k + 3) * G
        m = GG - lo
        _max_sub4(D[lo:], S[lo - k * G:lo - k * G + m], S[lo - (k + 1) * G:lo - (k + 1) * G + m],
                  S[lo - (k + 2) * G:lo - (k + 2) * G + m], S[:m],
                  pen[G - 1 - k], pen[G - 2 - k], pen[G - 3 - k], pen[G - 4 - k], m)
        for j in range(3):
            kk = k + j
            lo2 = kk * G
            _max_sub(D[lo2:lo], S[:lo - lo2], pen[G - 1 - kk], lo - lo2)
        k += 4
    while k < G:
        n = (G - k) * G
        _max_sub(D[:n], S[k * G:k * G + n], pen[G - 1 + k], n)
        _max_sub(D[k * G:], S[:n], pen[G - 1 - k], n)
        k += 1


@njit(cache=True, nogil=True)
def _transpose(S, G, D):
    """D[x·G + y] = S[y·G + x] (G × G, distinct arrays): four rows of D at a time, each read
    of S four contiguous entries (measured 4× faster than the plain double loop at G = 32)."""
    x0 = 0
    while x0 + 4 <= G:
        d0 = D[x0 * G:(x0 + 1) * G]
        d1 = D[(x0 + 1) * G:(x0 + 2) * G]
        d2 = D[(x0 + 2) * G:(x0 + 3) * G]
        d3 = D[(x0 + 3) * G:(x0 + 4) * G]
        for yy in range(G):
            s = S[yy * G + x0:yy * G + x0 + 4]
            d0[yy] = s[0]
            d1[yy] = s[1]
            d2[yy] = s[2]
            d3[yy] = s[3]
        x0 += 4
    for xx in range(x0, G):
        for yy in range(G):
            D[xx * G + yy] = S[yy * G + xx]


@njit(cache=True, nogil=True)
def _direct2d(S, G, a1, b1, r1, a2, b2, r2, D, Y, tmp, pen):
    """The separable 2-D transform of a G × G table S whose rows run along axis 2 (S[u·G + v],
    u on axis 1), written TRANSPOSED: D[v'·G + u'] = max_{u, v} (S[u·G + v] − pen_1(u − u'))
    − pen_2(v − v'), pen_j(k) = (a_j·dd + b_j)·dd with dd = k − r_j (cells). For a table in
    row-major layout (u = y, v = x) pass the y weights first: D comes out column-major; for a
    column-major table (u = x, v = y) the x weights first: D comes out row-major. The oracle
    alternates the layouts with the depth in the tree, so a child's message lands in its
    parent's layout and one transpose a transform suffices. Y[u'·G + v] = max_u S[u·G + v] −
    pen_1(u − u'): the first pass (work). S, D, Y, tmp: G² contiguous,
    distinct; pen: 2G. The arithmetic, term by term, is the one :func:`_backtrack_child`
    repeats, so the back-tracked labelling attains exactly the values the messages carried."""
    _pen_table(a1, b1, r1, G, pen)
    _direct_rows(S, G, pen, Y)
    _transpose(Y, G, tmp)
    _pen_table(a2, b2, r2, G, pen)
    _direct_rows(tmp, G, pen, D)


def _check_quad(name, val):
    if not np.isfinite(val) or val < 0:
        raise ValueError(f"{name} (the quadratic deformation weight given to the distance "
                         f"transform) must be finite and >= 0, got {float(val)!r}")


def distance_transform_1d(f, a: float, b: float = 0.0, shift: float = 0.0):
    """Generalized distance transform (max form) of a 1-D score array.

    out[j] = max_x f[x] − a (x − j − shift)² − b (x − j − shift), x, j ∈ [0, n).

    Parameters
    ----------
    f : array (n,) float
        Scores (finite).
    a : float >= 0
        Quadratic penalty (a negative value raises ValueError: the transform needs a concave
        penalty).
    b, shift : float
        Linear penalty and offset of the centre.

    Returns
    -------
    out : ndarray float64 (n,), arg : ndarray int64 (n,)
    """
    f = np.ascontiguousarray(f, dtype=np.float64)
    if f.ndim != 1 or f.size < 1 or not np.isfinite(f).all():
        raise ValueError(f"f must be a finite 1-D array of length >= 1, got shape {f.shape}")
    _check_quad("a", a)
    n = f.size
    out = np.empty(n)
    arg = np.empty(n, dtype=np.int64)
    _dt1d(f, 0, n, float(a), float(b), float(shift), out, 0, 1, arg, 0, 1, arg, -1, n,
          np.empty(n, np.int64), np.empty(n), np.empty(n + 2))
    return out, arg


def distance_transform_2d(f, ax: float, bx: float, ay: float, by: float, rx: float = 0.0,
                          ry: float = 0.0):
    """Separable 2-D generalized distance transform (max form) of a G×G score map.

    out[yp, xp] = max_{yq, xq} f[yq, xq] − ax·dx² − bx·dx − ay·dy² − by·dy, with
    (dx, dy) = (xq − xp − rx, yq − yp − ry). O(G²) (Felzenszwalb and Huttenlocher 2005).

    Returns
    -------
    out : ndarray float64 (G, G), arg : ndarray int64 (G, G) (maximising cell yq·G + xq)
    """
    f = np.ascontiguousarray(f, dtype=np.float64)
    if f.ndim != 2 or f.shape[0] != f.shape[1] or f.shape[0] < 2:
        raise ValueError(f"f must be a square G×G map with G >= 2, got shape {f.shape}")
    if not np.isfinite(f).all():
        raise ValueError("f must be finite")
    _check_quad("ax", ax)
    _check_quad("ay", ay)
    G = f.shape[0]
    out = np.empty(G * G)
    arg = np.empty(G * G, dtype=np.int64)
    _dt2d(f.ravel(), 0, G, float(ax), float(bx), float(ay), float(by), float(rx), float(ry),
          out, 0, arg, 0, np.empty(G * G), np.empty(G * G, np.int64), np.empty(G, np.int64),
          np.empty(G), np.empty(G + 2))
    return out.reshape(G, G), arg.reshape(G, G)


# ============================================================================ primitives
@njit(cache=True, nogil=True, inline="always")
def _node_loss(M, i, p, cell):
    g = M.gt[M.lab_off[i] + 2 * p]
    G = M.G
    dx = float(cell % G - g % G)
    dy = float(cell // G - g // G)
    r = (dx * dx + dy * dy) / M.scale2[i]
    return (1.0 if r > 1.0 else r) / M.N


@njit(cache=True, nogil=True)
def pose_scores(M, i, w, h):
    """Fill h[:d+1] with the loss-augmented score vector of block i in statistics space:
    h = (w, 1), so ⟨m(y), h⟩ = ⟨w, ψ(x_i, y)⟩ + L_i(y) (c_i = 0)."""
    for j in range(M.d):
        h[j] = w[j]
    h[M.d] = 1.0


@njit(cache=True, nogil=True, inline="always")
def _def_feats(M, q, tq, cq, cp):
    """Displacement (dx, dy) in units u of child cell cq from parent cell cp for type tq."""
    G = M.G
    ab = (q * M.T + tq) * 2
    dx = (float(cq % G - cp % G) - M.anchors[ab]) / M.unit
    dy = (float(cq // G - cp // G) - M.anchors[ab + 1]) / M.unit
    return dx, dy


@njit(cache=True, nogil=True)
def pose_label_dot(M, i, y, vec):
    """⟨m(y), vec⟩ = Σ_j ψ_j(x_i, y)·vec[j] + L_i(y)·vec[d] for a labelling y of block i."""
    N = M.N
    s = 0.0
    loss = 0.0
    for p in range(N):
        c = y[2 * p]
        s += vec[p] * pose_unary_value(M, i, p, c)
        loss += _node_loss(M, i, p, c)
        par = M.parent[p]
        if par >= 0:
            tq = y[2 * p + 1]
            s += vec[M.pair_off[p] + tq * M.ntype[par] + y[2 * par + 1]]
            dx, dy = _def_feats(M, p, tq, c, y[2 * par])
            o = M.def_off[p] + 4 * tq
            s -= vec[o] * dx + vec[o + 1] * dx * dx + vec[o + 2] * dy + vec[o + 3] * dy * dy
    return s + loss * vec[M.d]


@njit(cache=True, nogil=True)
def pose_label_add(M, i, y, coef, vec):
    """vec[:d+1] += coef · m(y) (m(y) = (ψ(x_i, y), L_i(y)))."""
    N = M.N
    loss = 0.0
    for p in range(N):
        c = y[2 * p]
        vec[p] += coef * pose_unary_value(M, i, p, c)
        loss += _node_loss(M, i, p, c)
        par = M.parent[p]
        if par >= 0:
            tq = y[2 * p + 1]
            vec[M.pair_off[p] + tq * M.ntype[par] + y[2 * par + 1]] += coef
            dx, dy = _def_feats(M, p, tq, c, y[2 * par])
            o = M.def_off[p] + 4 * tq
            vec[o] -= coef * dx
            vec[o + 1] -= coef * (dx * dx)
            vec[o + 2] -= coef * dy
            vec[o + 3] -= coef * (dy * dy)
    vec[M.d] += coef * loss


@njit(cache=True, nogil=True)
def pose_label_loss(M, i, y):
    """L_i(y) = (1/N) Σ_p min(1, ‖l_p − l*_p‖²/s_i²)."""
    loss = 0.0
    for p in range(M.N):
        loss += _node_loss(M, i, p, y[2 * p])
    return loss


@njit(cache=True, nogil=True)
def pose_gt_label(M, i, y):
    """Copy the ground-truth labelling of block i into y[:2N]."""
    t0 = M.lab_off[i]
    for t in range(M.lab_off[i + 1] - t0):
        y[t] = M.gt[t0 + t]


@njit(cache=True, nogil=True)
def pose_sqnorm(M, i, dlt, zbuf):
    """‖B_i δ‖² = ‖δ[:d]‖² (B_i = [I_d 0]; zbuf unused and left zero)."""
    s = 0.0
    for j in range(M.d):
        s += dlt[j] * dlt[j]
    return s


@njit(cache=True, nogil=True)
def pose_axpy(M, i, coef, dlt, v, w, lb, ub, has_box):
    """v += coef · B_i δ (= coef · δ[:d]); with has_box, w[j] = clip(v[j], lb[j], ub[j]) on the
    touched coordinates (δ[j] != 0)."""
    for j in range(M.d):
        c = dlt[j]
        if c != 0.0:
            v[j] += coef * c
            if has_box:
                x = v[j]
                if x < lb[j]:
                    x = lb[j]
                elif x > ub[j]:
                    x = ub[j]
                w[j] = x


@njit(cache=True, nogil=True, inline="always")
def _message_add(out, base, D, h, o, Tp, Tq, GG, tmp):
    """out[c] = base[c] + max_t (D[t·GG + c] + h[o + t·Tp]) over the child's types t < Tq (the
    pair weights w(t, tp) at h[o + t·Tp]); out and base may be the same array. Four types per
    pass (fewer types repeat the last one), branch-free: vectorizes."""
    j1 = min(1, Tq - 1)
    j2 = min(2, Tq - 1)
    j3 = min(3, Tq - 1)
    w0 = h[o]
    w1 = h[o + j1 * Tp]
    w2 = h[o + j2 * Tp]
    w3 = h[o + j3 * Tp]
    D0 = D[:GG]
    D1 = D[j1 * GG:(j1 + 1) * GG]
    D2 = D[j2 * GG:(j2 + 1) * GG]
    D3 = D[j3 * GG:(j3 + 1) * GG]
    if Tq <= 4:
        for c in range(GG):
            v0 = D0[c] + w0
            v1 = D1[c] + w1
            v2 = D2[c] + w2
            v3 = D3[c] + w3
            m01 = v0 if v0 > v1 else v1
            m23 = v2 if v2 > v3 else v3
            out[c] = base[c] + (m01 if m01 > m23 else m23)
        return
    for c in range(GG):
        v0 = D0[c] + w0
        v1 = D1[c] + w1
        v2 = D2[c] + w2
        v3 = D3[c] + w3
        m01 = v0 if v0 > v1 else v1
        m23 = v2 if v2 > v3 else v3
        tmp[c] = m01 if m01 > m23 else m23
    for t in range(4, Tq):
        _max_sub(tmp, D[t * GG:(t + 1) * GG], -h[o + t * Tp], GG)
    for c in range(GG):
        out[c] = base[c] + tmp[c]


@njit(cache=True, nogil=True, inline="always")
def _child_pens(M, q, t, h, xp, yp, pen):
    """pen[yq] = pen_y(yq − yp), pen[G + xq] = pen_x(xq − xp) of child q's type t (cells;
    the arithmetic of :func:`_pen_table` for those offsets)."""
    G = M.G
    inv_u = 1.0 / M.unit
    o = M.def_off[q] + 4 * t
    ab = (q * M.T + t) * 2
    ay = h[o + 3] * inv_u * inv_u
    by = h[o + 2] * inv_u
    ry = M.anchors[ab + 1]
    ax = h[o + 1] * inv_u * inv_u
    bx = h[o] * inv_u
    rx = M.anchors[ab]
    for k in range(G):
        dd = (k - yp) - ry
        pen[k] = (ay * dd + by) * dd
        dd = (k - xp) - rx
        pen[G + k] = (ax * dd + bx) * dd


@njit(cache=True, nogil=True, inline="always")
def _first_pass_line(St, G, pen, o1, cm):
    """cm[v] = max_u St[u·G + v] − pen[o1 + u]: a transform's first pass at one output
    coordinate (four rows per sweep)."""
    p0 = pen[o1]
    for v in range(G):
        cm[v] = St[v] - p0
    u = 1
    while u + 3 < G:
        _max_sub4(cm, St[u * G:(u + 1) * G], St[(u + 1) * G:(u + 2) * G], St[(u + 2) * G:(u + 3) * G],
                  St[(u + 3) * G:(u + 4) * G], pen[o1 + u], pen[o1 + u + 1], pen[o1 + u + 2],
                  pen[o1 + u + 3], G)
        u += 4
    while u < G:
        _max_sub(cm, St[u * G:(u + 1) * G], pen[o1 + u], G)
        u += 1


@njit(cache=True, nogil=True)
def _backtrack_child(M, q, h, S, colmajor, cp, tp, pen, cm):
    """The best (cell, type) of child q when its parent sits at cell cp (row-major index)
    with type tp: the argmax over (t, cell) of the terms of the message the parent received,
    ((S_t[yq, xq] − pen_y(yq − yp)) − pen_x(xq − xp)) + w(t, tp) for a row-major child,
    ((S_t[xq, yq] − pen_x(xq − xp)) − pen_y(yq − yp)) + w(t, tp) for a column-major one
    (``colmajor``), in the same order and arithmetic as :func:`_direct2d` (so, on the direct
    path, the maximum is the message's value bit for bit; the envelope rounds its penalties
    otherwise, within an ulp or so). The first pass at the parent's coordinate is recomputed
    (maxima along axis 1: the same values, a maximum is exact), O(T_q·G²), vectorized along
    rows. Ties go to the smallest type, then the smallest cell index (row-major: smallest y,
    then smallest x). S: q's node tables (T·G², layer t = type t; a leaf's types share layer
    0), in q's layout. pen (2G), cm (G): work. Returns cell·T + type (row-major cell)."""
    G = M.G
    GG = G * G
    xp = cp % G
    yp = cp // G
    Tp = M.ntype[M.parent[q]]
    leaf = M.nchild[q] == 0
    # penalties (_child_pens): pen_y at pen[:G], pen_x at pen[G:]; axis 1 (the rows' index)
    # is y for a row-major table, x for a column-major one
    o1 = G if colmajor else 0
    o2 = G - o1
    best = _NEG
    bt = 0
    for t in range(M.ntype[q]):
        _child_pens(M, q, t, h, xp, yp, pen)
        _first_pass_line(S[(0 if leaf else t) * GG:(1 if leaf else t + 1) * GG], G, pen, o1, cm)
        wp = h[M.pair_off[q] + t * Tp + tp]
        for v in range(G):
            val = (cm[v] - pen[o2 + v]) + wp
            if val > best:
                best = val
                bt = t
    # the first cell (row-major) of type bt that attains the maximum, candidates as above; a
    # cell's value is at most its line's (cm[v] − pen_2) + w (rounding is monotone), so only
    # cells on a line that attains the maximum are checked
    lay = 0 if leaf else bt
    _child_pens(M, q, bt, h, xp, yp, pen)
    _first_pass_line(S[lay * GG:(lay + 1) * GG], G, pen, o1, cm)
    wp = h[M.pair_off[q] + bt * Tp + tp]
    for yq in range(G):
        py = pen[yq]
        if colmajor and (cm[yq] - py) + wp != best:
            continue
        for xq in range(G):
            if colmajor:
                val = ((S[lay * GG + xq * G + yq] - pen[G + xq]) - py) + wp
            elif (cm[xq] - pen[G + xq]) + wp != best:
                continue
            else:
                val = ((S[lay * GG + yq * G + xq] - py) - pen[G + xq]) + wp
            if val == best:
                return (yq * G + xq) * M.T + bt
    return -1  # not reached: the maximum is one of the candidates


@njit(cache=True, nogil=True)
def _node_table(M, i, p, wu, lc, out):
    """out[:G²] = wu·φ_p + lc·loss_p of image i, row-major: the loss term as
    :func:`_node_loss`, term by term, inside the disc ‖l − l*_p‖² <= s_i² (plus a margin);
    outside it min(1, ·) is 1 exactly (the squared distance is an exact integer > s_i², so
    its quotient by s_i² rounds to >= 1), so lc·(1/N) there, without a division."""
    G = M.G
    N = M.N
    pose_score_map(M, i, p, out)
    if lc == 0.0:
        for c in range(G * G):
            out[c] = wu * out[c]
        return
    g = M.gt[M.lab_off[i] + 2 * p]
    gx = float(g % G)
    gy = float(g // G)
    s2 = M.scale2[i]
    far = lc * (1.0 / N)
    for yy in range(G):
        dy = float(yy) - gy
        dy2 = dy * dy
        row = out[yy * G:(yy + 1) * G]
        x0 = G
        x1 = G
        if dy2 <= s2:
            rad = int(np.sqrt(s2 - dy2)) + 2
            x0 = min(G, max(0, g % G - rad))
            x1 = min(G, g % G + rad + 1)
        for xx in range(x0):
            row[xx] = wu * row[xx] + far
        for xx in range(x0, x1):
            dx = float(xx) - gx
            r = (dx * dx + dy2) / s2
            row[xx] = wu * row[xx] + lc * ((1.0 if r > 1.0 else r) / N)
        for xx in range(x1, G):
            row[xx] = wu * row[xx] + far


@njit(cache=True, nogil=True)
def pose_oracle(M, i, h, y, vit_f, vit_i):
    """y ← argmax_y ⟨m(y), h⟩ on block i (loss-augmented decoding when h = (w, 1), plain
    decoding when h[d] = 0) by max-sum on the tree with generalized distance transforms;
    returns ⟨m(y), h⟩ of the returned y. Needs h's quadratic deformation weights >= 0
    (ValueError otherwise). vit_f: float64 scratch of length >= M.scr_f; vit_i: int64 scratch
    of length >= M.scr_i (see the module docstring; the solver passes its own per-thread
    scratch of length 2N·M.K, which M.K makes large enough). Allocates nothing.

    Per call: N score maps (generated), one 2-D transform per (edge, child type) (direct for
    G <= M.direct_max_G, envelope above), then per (edge, parent type) one pass over the
    child types' transforms adding the pair weights, keeping values only; the arg-max is
    recomputed for the N − 1 cells of the answer while back-tracking
    (:func:`_backtrack_child`). O(N·T·G³) (direct) or O(N·T·G²) (envelope) + O(N·T²·G²)."""
    if vit_f.shape[0] < M.scr_f or vit_i.shape[0] < M.scr_i:
        raise ValueError("pose_oracle: scratch too small (need M.scr_f float64 and M.scr_i int64 entries)")
    sf = vit_f
    si = vit_i
    G = M.G
    GG = G * G
    N = M.N
    T = M.T
    d = M.d
    lc = h[d]
    TG = T * GG
    direct = G <= M.direct_max_G
    # scratch layout. float64: node tables S (N·T·G²) | transforms D (T·G²) | tmp (G²) |
    # pen (2G) | he (G) | z (G + 2) | cm (G) | fp (G², a direct transform's first pass);
    # int64: arg (G²) | targ (G²) | hv (G) |
    # first (N: 0 until the node's first child's message)
    o_D = N * TG
    o_tmp = o_D + TG
    o_pen = o_tmp + GG
    o_he = o_pen + 2 * G
    o_z = o_he + G
    o_cm = o_z + G + 2
    o_fp = o_cm + G
    for q in range(N):
        par = M.parent[q]
        if par >= 0:
            for t in range(M.ntype[q]):
                o = M.def_off[q] + 4 * t
                if not (h[o + 1] >= 0.0 and h[o + 3] >= 0.0):
                    raise ValueError("pose_oracle: a quadratic deformation weight is negative (or NaN); "
                                     "the generalized distance transform needs them >= 0 "
                                     "(use PoseModel.bounds())")
    tmp = sf[o_tmp:o_tmp + GG]
    pen = sf[o_pen:o_pen + 2 * G]
    he = sf[o_he:o_he + G]
    z = sf[o_z:o_z + G + 2]
    cm = sf[o_cm:o_cm + G]
    fp = sf[o_fp:o_fp + GG]
    arg = si[0:GG]
    targ = si[GG:2 * GG]
    hv = si[2 * GG:2 * GG + G]
    o_first = 2 * GG + G
    # node tables: w_U,p φ_p + lc·loss_p in layer 0 (a leaf's types share it; a parent's other
    # layers are written by its first child's message); column-major at odd depths on the
    # direct path (see _direct2d)
    for p in range(N):
        base = p * TG
        Sp = sf[base:base + GG]
        colmajor = direct and M.depth[p] % 2 == 1
        out = tmp if colmajor else Sp
        _node_table(M, i, p, h[p], lc, out)
        if colmajor:
            _transpose(tmp, G, Sp)
        si[o_first + p] = 0
    # messages, leaves first
    inv_u = 1.0 / M.unit
    for k in range(N - 1, 0, -1):
        q = M.order[k]
        par = M.parent[q]
        Tq = M.ntype[q]
        Tp = M.ntype[par]
        leaf = M.nchild[q] == 0
        for t in range(Tq):  # one transform per child type
            o = M.def_off[q] + 4 * t
            ab = (q * T + t) * 2
            s0 = q * TG + (0 if leaf else t * GG)
            # penalty in cells: u-units features (dx/u, (dx/u)²) -> a = w/u², b = w/u
            ax = h[o + 1] * inv_u * inv_u
            bx = h[o] * inv_u
            ay = h[o + 3] * inv_u * inv_u
            by = h[o + 2] * inv_u
            if direct:  # the message comes out in the parent's layout
                Dt = sf[o_D + t * GG:o_D + (t + 1) * GG]
                if M.depth[q] % 2 == 1:  # column-major child: x first
                    _direct2d(sf[s0:s0 + GG], G, ax, bx, M.anchors[ab], ay, by, M.anchors[ab + 1],
                              Dt, fp, tmp, pen)
                else:
                    _direct2d(sf[s0:s0 + GG], G, ay, by, M.anchors[ab + 1], ax, bx, M.anchors[ab],
                              Dt, fp, tmp, pen)
            else:
                _dt2d(sf, s0, G, ax, bx, ay, by, M.anchors[ab], M.anchors[ab + 1],
                      sf, o_D + t * GG, arg, 0, tmp, targ, hv, he, z)
        # the message per parent type, max over the child's types with the pair weight
        # w(t, tp), added to the parent's layer tp; the parent's first child writes layers
        # tp >= 1 as layer 0 (its base table) + message, so no layer is copied (last types
        # first: layer 0 is read before it is added to)
        first = si[o_first + par] == 0
        si[o_first + par] = 1
        for tp in range(Tp - 1, -1, -1):
            out = sf[par * TG + tp * GG:par * TG + (tp + 1) * GG]
            base = sf[par * TG:par * TG + GG] if first else out
            _message_add(out, base, sf[o_D:o_D + Tq * GG], h, M.pair_off[q] + tp, Tp, Tq, GG, tmp)
    # root
    r = M.order[0]
    best = _NEG
    bc = 0
    btr = 0
    for t in range(M.ntype[r]):
        for c in range(GG):
            val = sf[r * TG + t * GG + c]
            if val > best:
                best = val
                bc = c
                btr = t
    y[2 * r] = bc
    y[2 * r + 1] = btr
    for k in range(1, N):
        q = M.order[k]
        par = M.parent[q]
        code = _backtrack_child(M, q, h, sf[q * TG:(q + 1) * TG], direct and M.depth[q] % 2 == 1,
                                y[2 * par], y[2 * par + 1], pen, cm)
        if code < 0:  # only with NaN or inf in h: no cell attains the maximum
            raise ValueError("pose_oracle: no maximising cell (the scores h hold NaN or inf)")
        y[2 * q] = code // T
        y[2 * q + 1] = code % T
    return pose_label_dot(M, i, y, h)


@njit(cache=True, nogil=True)
def pose_decode(M, i, w, h, y, scratch_f, scratch_i):
    """Plain decoding argmax_y ⟨w, ψ(x_i, y)⟩ through :func:`pose_oracle` (h = (w, 0));
    h: float64 work of length d + 1. Returns the maximum."""
    pose_scores(M, i, w, h)
    h[M.d] = 0.0
    return pose_oracle(M, i, h, y, scratch_f, scratch_i)


# ============================================================================ building
def _scratch_sizes(N: int, T: int, G: int):
    """(scr_f, scr_i): the oracle's float64 and int64 scratch (see :func:`pose_oracle`)."""
    GG = G * G
    return (N + 1) * T * GG + 2 * GG + 5 * G + 2, 2 * GG + G + N


def _scratch_K(N: int, T: int, G: int) -> int:
    """M.K for the pose kind: the solver gives a compiled oracle scratch of length
    (label length 2N) × M.K (float64 and int64; per thread in the exact gap pass), so M.K =
    ceil(max(scr_f, scr_i) / 2N) makes that scratch hold the oracle's tables (LSP, T = 4:
    K = 34,671 at G = 128, i.e. 14 MB of float64 and 14 MB of int64 per scratch: the solver
    sizes both alike)."""
    return int(-(-max(_scratch_sizes(N, T, G)) // (2 * N)))


_TRANSFORMS = ("auto", "direct", "envelope")


def build_pose_arrays(data, deform_unit: float = None, transform: str = "auto") -> PoseArrays:
    """The flat arrays of :class:`PoseArrays` for a :class:`~gaplab.core.datasets.lsp.PoseData`;
    ``deform_unit``: u as a fraction of G (default :data:`DEFORM_UNIT`); ``transform``: the
    oracle's distance transform, "auto" (direct for G <= :data:`DIRECT_MAX_G`, envelope
    above), "direct" or "envelope" (the same maxima; for tests and benchmarks)."""
    # every array below is the model's own writable copy: PoseData's are read-only, and a
    # change to the data after the model is built must not reach the kernels
    frac = DEFORM_UNIT if deform_unit is None else float(deform_unit)
    if not (np.isfinite(frac) and frac > 0):
        raise ValueError(f"deform_unit must be a finite number > 0 (a fraction of G), got {deform_unit!r}")
    if transform not in _TRANSFORMS:
        raise ValueError(f"transform must be one of {_TRANSFORMS}, got {transform!r}")
    parent = np.array(data.parent, dtype=np.int64, order="C", copy=True)
    N = parent.shape[0]
    roots = np.flatnonzero(parent < 0)
    if roots.size != 1:
        raise ValueError(f"parent must define a tree with exactly one root, got {roots.size} roots")
    children = [[] for _ in range(N)]
    for q in range(N):
        if parent[q] >= 0:
            if not 0 <= parent[q] < N:
                raise ValueError(f"parent[{q}] = {parent[q]} is outside [-1, {N})")
            children[parent[q]].append(q)
    order = [int(roots[0])]
    for k in range(N):
        if k >= len(order):
            raise ValueError("parent has a cycle: not every node is reachable from the root")
        order.extend(children[order[k]])
    order = np.asarray(order, dtype=np.int64)
    depth = np.zeros(N, dtype=np.int64)
    for q in order[1:]:
        depth[q] = depth[parent[q]] + 1
    ntype = np.array(data.n_types, dtype=np.int64, order="C", copy=True)
    anchors = np.array(data.anchors, dtype=np.float64, copy=True)
    T = anchors.shape[1]
    if ntype.shape != (N,) or ntype.min() < 1 or ntype.max() > T or ntype[roots[0]] != 1:
        raise ValueError(f"n_types must be (N,) = ({N},) in [1, {T}] with 1 for the root, got {ntype}")
    pair_off = np.full(N, -1, dtype=np.int64)
    def_off = np.full(N, -1, dtype=np.int64)
    off = N
    for q in range(N):
        if parent[q] >= 0:
            pair_off[q] = off
            off += ntype[q] * ntype[parent[q]]
    for q in range(N):
        if parent[q] >= 0:
            def_off[q] = off
            off += 4 * ntype[q]
    d = off
    G = int(data.G)
    n = data.n
    y = np.empty((n, N, 2), dtype=np.int64)
    y[:, :, 0] = data.pos[:, :, 1] * G + data.pos[:, :, 0]
    y[:, :, 1] = data.types
    if np.any(data.pos < 0) or np.any(data.pos >= G):  # checked again: the data's arrays could be unlocked
        raise ValueError(f"pos must lie in [0, G) = [0, {G}) for every node")
    if np.any(data.types < 0) or np.any(data.types >= ntype[None, :]):
        raise ValueError("types must lie in [0, n_types[p]) for every node")
    direct_max = {"auto": DIRECT_MAX_G, "direct": G, "envelope": 0}[transform]
    scr_f, scr_i = _scratch_sizes(N, T, G)
    return _p.freeze_arrays(PoseArrays(  # read-only: the kernels trust these offsets and sizes
        n=n, d=int(d), K=_scratch_K(N, T, G),
        stat_off=np.arange(n + 1, dtype=np.int64) * (d + 1),
        lab_off=np.arange(n + 1, dtype=np.int64) * (2 * N),
        gt=np.ascontiguousarray(y.reshape(-1)),
        G=G, N=N, T=int(T), parent=parent, nchild=np.bincount(parent[parent >= 0], minlength=N).astype(np.int64),
        depth=depth,
        order=order, ntype=ntype,
        anchors=np.array(anchors.reshape(-1), copy=True), pair_off=pair_off, def_off=def_off,
        unit=G * frac, scale2=np.ascontiguousarray(np.asarray(data.scale, np.float64) ** 2),
        img_id=np.array(data.img_id, dtype=np.int64, copy=True), seed=int(data.seed),
        noise=float(data.spec.noise), sigma=float(data.spec.sigma * G / 32.0),
        bump_pos=np.array(data.bump_pos.reshape(-1), dtype=np.float64, copy=True),
        bump_amp=np.array(data.bump_amp.reshape(-1), dtype=np.float64, copy=True),
        scr_f=int(scr_f), scr_i=int(scr_i), direct_max_G=int(direct_max),
    ))


def _check_pose_arrays(M, fail):
    """What the pose kernels index with: the tree, the per-node type counts, the weight offsets,
    the labelling (grid position, type) of every node, the score-map tables and scratch sizes."""
    n, d, N, T, G = int(M.n), int(M.d), M.N, M.T, M.G
    for f in ("N", "T", "G"):
        if not _p._int(getattr(M, f)) or getattr(M, f) < 1:
            fail(f"{f} must be an int >= 1, got {getattr(M, f)!r}")
    if not np.array_equal(M.stat_off, np.arange(n + 1) * (d + 1)):
        fail("stat_off must be arange(n + 1)·(d + 1)")
    if not np.array_equal(M.lab_off, np.arange(n + 1) * (2 * N)):
        fail("lab_off must be arange(n + 1)·2N")
    parent = _p.array(M, "parent", fail, dtype=np.int64, shape=(N,), lo=-1, hi=N)
    ntype = _p.array(M, "ntype", fail, dtype=np.int64, shape=(N,), lo=1, hi=T + 1)
    order = _p.array(M, "order", fail, dtype=np.int64, shape=(N,))
    if not np.array_equal(np.sort(order), np.arange(N)) or parent[order[0]] != -1:
        fail("order must be a permutation of the nodes starting at the root")
    _p.array(M, "depth", fail, dtype=np.int64, shape=(N,), lo=0, hi=N)
    if not np.array_equal(M.nchild, np.bincount(parent[parent >= 0], minlength=N)):
        fail("nchild must count the children of each node")
    gt = M.gt.reshape(n, N, 2)
    if gt.size and (gt[:, :, 0].min() < 0 or gt[:, :, 0].max() >= G * G):
        fail(f"gt positions must lie in [0, G²) = [0, {G * G})")
    if gt.size and (gt[:, :, 1].min() < 0 or np.any(gt[:, :, 1] >= ntype[None, :])):
        fail("gt types must lie in [0, ntype[q]) for every node q")
    _p.array(M, "anchors", fail, dtype=np.float64, shape=(N * T * 2,))
    child = parent >= 0
    pair_end = np.where(child, M.pair_off + ntype * ntype[np.maximum(parent, 0)], 0)
    def_end = np.where(child, M.def_off + 4 * ntype, 0)
    for f, end in (("pair_off", pair_end), ("def_off", def_end)):
        a = _p.array(M, f, fail, dtype=np.int64, shape=(N,))
        if np.any(a[child] < N) or np.any(end > d):
            fail(f"{f} of every non-root node must lie in [N, d) with its weights inside w (d = {d})")
    _p.array(M, "scale2", fail, dtype=np.float64, shape=(n,))
    _p.array(M, "img_id", fail, dtype=np.int64, shape=(n,))
    _p.array(M, "bump_pos", fail, dtype=np.float64, shape=(n * N * 3 * 2,))
    _p.array(M, "bump_amp", fail, dtype=np.float64, shape=(n * N * 3,))
    if (M.scr_f, M.scr_i) != tuple(int(v) for v in _scratch_sizes(N, T, G)) or M.K != _scratch_K(N, T, G):
        fail("the scratch sizes scr_f, scr_i and K must match N, T and G")


_p.register_arrays_check(PoseArrays, _check_pose_arrays)


class PoseModel(StructuredModel):
    """The tree-structured pose SSVM over a :class:`~gaplab.core.datasets.lsp.PoseData`
    (one dual block per image; see the module docstring for ψ, the loss and the oracle).

    Parameters
    ----------
    data : PoseData
        Training images (poses and generated score maps).
    deform_unit : float, optional
        The deformation unit u as a fraction of G (default :data:`DEFORM_UNIT`); it scales the
        deformation features (dx/u, (dx/u)², ...) and so the conditioning of the dual.
    transform : {"auto", "direct", "envelope"}, optional
        The max oracle's distance transform (see :func:`build_pose_arrays`); every choice
        attains the same maximum (default "auto": the faster one for G).
    """

    kind = "pose"
    oracle_tier = "compiled"

    def __init__(self, data, deform_unit: float = None, transform: str = "auto"):
        from ..datasets.lsp import PoseData

        if not isinstance(data, PoseData):
            raise TypeError(f"data must be a PoseData, got {type(data).__name__}")
        self.data = data
        self.deform_unit = DEFORM_UNIT if deform_unit is None else float(deform_unit)
        self.transform = transform
        self.arrays = build_pose_arrays(data, self.deform_unit, transform)
        self.n = self.arrays.n
        self.d = self.arrays.d
        self.G = self.arrays.G
        self.name = data.name

    # ------------------------------------------------------------------ interface
    def label_len(self, i: int) -> int:
        return 2 * self.arrays.N

    def n_labels(self, i: int) -> int:
        """Entries are position indices (< G²) and types (< T)."""
        return max(self.G * self.G, self.arrays.T)

    def random_labelling(self, i: int, rng) -> np.ndarray:
        """Positions uniform in [0, G²) and types uniform in [0, ntype) per part, int64 (2N,)
        (for :func:`~gaplab.core.models.protocol.check_model`)."""
        M = self.arrays
        y = np.empty(2 * M.N, np.int64)
        y[0::2] = rng.integers(0, M.G * M.G, size=M.N)
        y[1::2] = rng.integers(0, M.ntype, size=M.N)
        return y

    def all_labellings(self, i: int, limit: int):
        """None: (G² · types)^N labellings are never enumerated."""
        return None

    def ground_truth(self, i: int) -> np.ndarray:
        i = self._check_i(i)
        M = self.arrays
        return M.gt[M.lab_off[i]:M.lab_off[i + 1]].copy()

    def _check_i(self, i):
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.n:
            raise IndexError(f"block i must be an int in [0, {self.n}), got {i!r}")
        return int(i)

    def _check_y(self, i, y):
        y = check_labelling(self, i, y)
        types = y[1::2]
        bad = types >= self.arrays.ntype
        if bad.any():
            p = int(np.flatnonzero(bad)[0])
            raise ValueError(f"model {self.name!r}, block {i}: node {p} has type {types[p]} outside "
                             f"[0, {self.arrays.ntype[p]})")
        GG = self.G * self.G
        if (y[0::2] >= GG).any():
            p = int(np.flatnonzero(y[0::2] >= GG)[0])
            raise ValueError(f"model {self.name!r}, block {i}: node {p} has position {y[2 * p]} "
                             f"outside [0, G²) = [0, {GG})")
        return y

    def _check_w(self, w):
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.d,):
            raise ValueError(f"w must have shape ({self.d},), got {w.shape}")
        if not np.isfinite(w).all():
            raise ValueError("w must be finite")
        q = self.quadratic_index()
        neg = w[q] < 0
        if neg.any():
            j = int(q[np.flatnonzero(neg)[0]])
            raise ValueError(f"w[{j}] = {float(w[j])!r} is a quadratic deformation weight and must be >= 0 "
                             f"for the distance transform (use bounds(): lb = 0 there)")
        return w

    def quadratic_index(self) -> np.ndarray:
        """Indices of w's quadratic deformation weights (the dx², dy² coefficients), int64."""
        M = self.arrays
        out = []
        for q in range(M.N):
            if M.parent[q] >= 0:
                for t in range(M.ntype[q]):
                    o = M.def_off[q] + 4 * t
                    out += [o + 1, o + 3]
        return np.asarray(out, dtype=np.int64)

    def bounds(self):
        """lb = 0 on the quadratic deformation weights (so the distance transform applies;
        Paper: App. H, App. I), −inf elsewhere; ub = +inf. Float64 arrays of shape (d,)."""
        lb = np.full(self.d, -np.inf)
        lb[self.quadratic_index()] = 0.0
        return lb, np.full(self.d, np.inf)

    def loss(self, i: int, y) -> float:
        """L_i(y) = (1/N) Σ_p min(1, ‖l_p − l*_p‖²/s_i²) (numpy; Paper: App. I)."""
        i = self._check_i(i)
        y = self._check_y(i, y)
        G = self.G
        gt = self.ground_truth(i)[0::2]
        c = y[0::2]
        d2 = (c % G - gt % G) ** 2 + (c // G - gt // G) ** 2
        return float(np.mean(np.minimum(1.0, d2 / self.arrays.scale2[i])))

    def score_map(self, i: int, p: int) -> np.ndarray:
        """Node p's generated part-score map φ_p of image i, float64 (G, G) (row = y)."""
        i = self._check_i(i)
        if not 0 <= int(p) < self.arrays.N:
            raise IndexError(f"part p must lie in [0, {self.arrays.N}), got {p!r}")
        out = np.empty(self.G * self.G)
        pose_score_map(self.arrays, i, int(p), out)
        return out.reshape(self.G, self.G)

    def joint_feature(self, i: int, y) -> np.ndarray:
        """Dense ψ(x_i, y), float64 of shape (d,) (numpy, from the whole score maps; for tests
        and display)."""
        i = self._check_i(i)
        y = self._check_y(i, y)
        M = self.arrays
        G, T = self.G, M.T
        psi = np.zeros(self.d)
        A = M.anchors.reshape(M.N, T, 2)
        for p in range(M.N):
            c = int(y[2 * p])
            psi[p] = self.score_map(i, p).ravel()[c]
            par = int(M.parent[p])
            if par < 0:
                continue
            t, cp = int(y[2 * p + 1]), int(y[2 * par])
            psi[M.pair_off[p] + t * M.ntype[par] + y[2 * par + 1]] = 1.0
            dx = ((c % G - cp % G) - A[p, t, 0]) / M.unit
            dy = ((c // G - cp // G) - A[p, t, 1]) / M.unit
            psi[M.def_off[p] + 4 * t: M.def_off[p] + 4 * t + 4] = [-dx, -dx * dx, -dy, -dy * dy]
        return psi

    def scratch(self):
        """Fresh oracle scratch arrays (float64 (scr_f,), int64 (scr_i,))."""
        return np.empty(self.arrays.scr_f), np.empty(self.arrays.scr_i, dtype=np.int64)

    def _subtract_loss(self, i, h):
        """Remove the loss term from a score vector of block i (plain decoding: h[d] = 0)."""
        h[self.d] = 0.0

    def _oracle(self, i, w, loss_augmented):
        i = self._check_i(i)
        w = self._check_w(w)
        M = self.arrays
        h = np.empty(self.d + 1)
        pose_scores(M, i, w, h)
        if not loss_augmented:
            h[self.d] = 0.0
        y = np.empty(2 * M.N, dtype=np.int64)
        sf, si = self.scratch()
        val = pose_oracle(M, i, h, y, sf, si)
        return y, float(val)

    def max_oracle(self, i: int, w) -> np.ndarray:
        """Loss-augmented decoding argmax_y L_i(y) + ⟨w, ψ(x_i, y)⟩ of image i (Paper: Eq. (2)),
        int64 (2N,). w's quadratic deformation weights must be >= 0 (ValueError)."""
        return self._oracle(i, w, True)[0]

    def decode(self, i: int, w) -> np.ndarray:
        """Plain decoding argmax_y ⟨w, ψ(x_i, y)⟩ of training image i, int64 (2N,)."""
        return self._oracle(i, w, False)[0]

    def describe_block(self, i: int, y, part: int | None = None) -> dict:
        """What the app draws: the score map of one part (default node 6, LSP's right wrist, or
        node 0 on trees of at most 6 nodes) and
        the skeleton of y.

        Returns a dict with ``kind`` = ``"pose"``, ``text``, ``G``, ``part`` (index),
        ``part_name``, ``score_map`` (float64 (G, G)), ``skeleton`` (int64 (N, 2) cells (x, y)),
        ``types`` (int64 (N,)), ``edges`` (int64 (N − 1, 2) child-parent pairs), ``loss``,
        ``label_text`` (2N strings, one per labelling entry: "node (x,y)", "type t"; the app's
        anatomy lists them) and the app's picture (:mod:`gaplab.core.models.display`): a panel
        with the score map (grey, bright = high) and the skeleton (points at the cells' centres,
        one segment per tree edge, the part ringed), a ``picker`` of the part and a ``legend``.
        """
        from gaplab.core.models.display import image_panel, picker
        i = self._check_i(i)
        y = self._check_y(i, y)
        M = self.arrays
        if part is None:
            part = 6 if M.N > 6 else 0
        if not 0 <= int(part) < M.N:
            raise IndexError(f"part must lie in [0, {M.N}), got {part!r}")
        c = y[0::2]
        sk = np.stack([c % self.G, c // self.G], 1)
        names = self.data.node_names or tuple(str(p) for p in range(M.N))
        edges = np.array([(q, M.parent[q]) for q in range(M.N) if M.parent[q] >= 0], dtype=np.int64)
        loss = self.loss(i, y)
        text = []
        for p in range(M.N):
            text += [f"{names[p]} ({int(sk[p, 0])},{int(sk[p, 1])})", f"type {int(y[2 * p + 1])}"]
        smap = self.score_map(i, part)
        lo, hi = float(smap.min()), float(smap.max())
        grey = (np.zeros(smap.shape, np.uint8) if hi <= lo
                else np.round(255 * (smap - lo) / (hi - lo)).astype(np.uint8))
        wrong_y = bool(np.any(y != self.ground_truth(i)))
        panel = image_panel(grey, "{who}" + (f" (loss {loss:.3f})" if wrong_y else ""), points=sk + 0.5,
                            segments=edges, mark=int(part), pixelated=True)
        return {"kind": "pose", "text": f"image {int(self.data.img_id[i])}, loss {loss:.3f}",
                "label_text": tuple(text),
                "G": self.G, "part": int(part), "part_name": names[int(part)],
                "score_map": smap, "skeleton": sk, "types": y[1::2].copy(),
                "edges": edges, "loss": loss, "panels": [panel],
                "picker": picker("part", "score map of part", names, int(part)),
                "legend": (f"{M.N} parts on a {self.G}×{self.G} grid; ring: the part whose score map is "
                           f"shown ({names[int(part)]}; bright: high score)")}

    # ------------------------------------------------------------------ data-set level
    def predict(self, w, data=None) -> np.ndarray:
        """Plain decoding of every image of ``data`` (default: the training set): int64
        (n, 2N)."""
        from ..datasets.lsp import PoseData

        w = self._check_w(w)
        data = self.data if data is None else data
        if not isinstance(data, PoseData):
            raise TypeError(f"data must be a PoseData, got {type(data).__name__}")
        M = self.arrays if data is self.data else build_pose_arrays(data, self.deform_unit, self.transform)
        if M.d != self.d or M.G != self.G:
            raise ValueError(f"data has d = {M.d}, G = {M.G}; the model expects d = {self.d}, G = {self.G}")
        out = np.empty((M.n, 2 * M.N), dtype=np.int64)
        h = np.empty(self.d + 1)
        sf, si = np.empty(M.scr_f), np.empty(M.scr_i, dtype=np.int64)
        for k in range(M.n):
            pose_decode(M, k, w, h, out[k], sf, si)
        return out

    def error(self, w, data=None) -> float:
        """Mean task loss of the plain decoding over ``data`` (default: training set)."""
        data = self.data if data is None else data
        Y = self.predict(w, data)
        M = self.arrays if data is self.data else build_pose_arrays(data, self.deform_unit, self.transform)
        return float(np.mean([pose_label_loss(M, k, Y[k]) for k in range(M.n)]))


# ============================================================================ registration

register_model_kind(
    PoseArrays, "pose",
    scores=pose_scores, oracle=pose_oracle, label_dot=pose_label_dot, label_add=pose_label_add,
    label_loss=pose_label_loss, gt_label=pose_gt_label, sqnorm=pose_sqnorm, axpy=pose_axpy,
)
