"""The pose max oracle before the current one's speed-up (commit 46249a5: the
hull-based distance transform with a branch-free candidate filter, arg-max composed on the fly,
back-pointers per (node, parent type, parent cell), x pass then y pass). Kept as an independent
reference for tests/models/test_pose_tree.py (the new oracle must attain the same maximal value) and
timed by benchmarks/bench_pose.py --reference on the same calls. Not used by the package.
(The reference before it, commit 4c5fd20's oracle, is in the git history of this file.)"""
import numpy as np
from numba import njit

from gaplab.core.datasets.lsp_scoremaps import pose_score_map
from gaplab.core.models.pose.primitives import pose_label_dot

_NEG = -np.inf


@njit(cache=True)
def old_scratch_f(M):
    GG = M.G * M.G
    return (M.N + 1) * M.T * GG + GG + 2 * M.G + 2


@njit(cache=True)
def old_scratch_i(M):
    GG = M.G * M.G
    return (M.N + 1) * M.T * GG + GG + M.G


@njit(cache=True, nogil=True, inline="always")
def old_dt1d(src, s0, n, a, b, shift, dst, d0, dstep, arg, a0, astep, sub, sub0, G, hv, he, z):
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
def old_dt2d(src, s0, G, ax, bx, ay, by, rx, ry, dst, d0, arg, a0, tmp, targ, hv, he, z):
    """dst[d0 + yp·G + xp] = max_{xq, yq} src[s0 + yq·G + xq] − ax·ddx² − bx·ddx − ay·ddy² −
    by·ddy with (ddx, ddy) = (xq − xp − rx, yq − yp − ry); arg = the maximising cell index.
    Two passes of :func:`_dt1d`, each reading contiguous rows: along x on every row of src,
    written transposed into tmp (tmp[xp·G + yq], its arg-max xq into targ), then along y on
    every row of tmp, written back in place (the arg-max composed on the fly: yq·G + xq).
    tmp (float64, G²), targ (int64, G²), hv (int64, G), he (float64, G), z (float64, G + 2):
    work."""
    for yq in range(G):
        old_dt1d(src, s0 + yq * G, G, ax, bx, rx, tmp, yq, G, targ, yq, G, targ, -1, G, hv, he, z)
    for xp in range(G):
        old_dt1d(tmp, xp * G, G, ay, by, ry, dst, d0 + xp, G, arg, a0 + xp, G, targ, xp * G, G, hv, he, z)


@njit(cache=True, nogil=True)
def old_pose_oracle(M, i, h, y, vit_f, vit_i):
    """y ← argmax_y ⟨m(y), h⟩ on block i (loss-augmented decoding when h = (w, 1), plain
    decoding when h[d] = 0) by max-sum on the tree with generalized distance transforms;
    returns ⟨m(y), h⟩ of the returned y. Needs h's quadratic deformation weights >= 0
    (ValueError otherwise). vit_f: float64 scratch of length >= old_scratch_f(M); vit_i:
    int64 scratch of length >= old_scratch_i(M). Allocates nothing.

    Per call: N score maps (generated), one 2-D transform per (edge, child type), then per
    (edge, parent type) one pass over the child types' transforms adding the pair weights;
    O(N·T·G² + N·T²·G²)."""
    if vit_f.shape[0] < old_scratch_f(M) or vit_i.shape[0] < old_scratch_i(M):
        raise ValueError("old_pose_oracle: scratch too small")
    sf = vit_f
    si = vit_i
    G = M.G
    GG = G * G
    N = M.N
    T = M.T
    d = M.d
    lc = h[d]
    TG = T * GG
    # scratch layout. float64: node tables S (N·T·G²) | transforms D (T·G²) | tmp (G²) | he (G)
    # | z (G + 2); int64: back-pointers (N·T·G²) | arg-max A (T·G²) | targ (G²) | hv (G)
    o_D = N * TG
    o_tmp = o_D + TG
    o_he = o_tmp + GG
    o_z = o_he + G
    o_A = N * TG
    o_targ = o_A + TG
    o_hv = o_targ + GG
    for q in range(N):
        par = M.parent[q]
        if par >= 0:
            for t in range(M.ntype[q]):
                o = M.def_off[q] + 4 * t
                if not (h[o + 1] >= 0.0 and h[o + 3] >= 0.0):
                    raise ValueError("old_pose_oracle: a quadratic deformation weight is negative (or NaN); "
                                     "the generalized distance transform needs them >= 0 "
                                     "(use PoseModel.bounds())")
    tmp = sf[o_tmp:o_tmp + GG]
    targ = si[o_targ:o_targ + GG]
    hv = si[o_hv:o_hv + G]
    he = sf[o_he:o_he + G]
    z = sf[o_z:o_z + G + 2]
    # node tables: w_U,p φ_p + lc·loss_p, the same in every type's layer
    for p in range(N):
        base = p * TG
        Sp = sf[base:base + GG]
        pose_score_map(M, i, p, Sp)
        wu = h[p]
        if lc != 0.0:
            g = M.gt[M.lab_off[i] + 2 * p]
            gx = float(g % G)
            gy = float(g // G)
            s2 = M.scale2[i]
            for yy in range(G):
                dy = float(yy) - gy
                dy2 = dy * dy
                row = yy * G
                for xx in range(G):  # as _node_loss, term by term
                    dx = float(xx) - gx
                    r = (dx * dx + dy2) / s2
                    Sp[row + xx] = wu * Sp[row + xx] + lc * ((1.0 if r > 1.0 else r) / N)
        else:
            for c in range(GG):
                Sp[c] = wu * Sp[c]
        for t in range(1, M.ntype[p]):
            o = base + t * GG
            for c in range(GG):  # a loop, not a slice assignment (no overlap copy)
                sf[o + c] = Sp[c]
    # messages, leaves first
    inv_u = 1.0 / M.unit
    for k in range(N - 1, 0, -1):
        q = M.order[k]
        par = M.parent[q]
        Tq = M.ntype[q]
        Tp = M.ntype[par]
        for t in range(Tq):  # one transform per child type
            o = M.def_off[q] + 4 * t
            ab = (q * T + t) * 2
            # penalty in cells: u-units features (dx/u, (dx/u)²) -> a = w/u², b = w/u
            old_dt2d(sf, q * TG + t * GG, G,
                  h[o + 1] * inv_u * inv_u, h[o] * inv_u, h[o + 3] * inv_u * inv_u, h[o + 2] * inv_u,
                  M.anchors[ab], M.anchors[ab + 1],
                  sf, o_D + t * GG, si, o_A + t * GG, tmp, targ, hv, he, z)
        for t in range(Tq):  # arg-max cell -> back-pointer code (cell·T + type), once per type
            At = si[o_A + t * GG:o_A + (t + 1) * GG]
            for c in range(GG):
                At[c] = At[c] * T + t
        po = M.pair_off[q]
        bv = tmp     # best value over the child's types (reuses tmp)
        for tp in range(Tp):  # max over the child's types with the pair weight w(t, tp)
            acc = sf[par * TG + tp * GG:par * TG + (tp + 1) * GG]
            bp = si[q * TG + tp * GG:q * TG + (tp + 1) * GG]  # child's (cell·T + type)
            wp0 = h[po + tp]
            for c in range(GG):
                bv[c] = sf[o_D + c] + wp0
                bp[c] = si[o_A + c]
            for t in range(1, Tq):
                wpt = h[po + t * Tp + tp]
                Dt = sf[o_D + t * GG:o_D + (t + 1) * GG]
                At = si[o_A + t * GG:o_A + (t + 1) * GG]
                for c in range(GG):  # branch-free selects on contiguous rows: vectorizes
                    val = Dt[c] + wpt
                    better = val > bv[c]
                    bv[c] = val if better else bv[c]
                    bp[c] = At[c] if better else bp[c]
            for c in range(GG):
                acc[c] += bv[c]
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
        code = si[q * TG + y[2 * par + 1] * GG + y[2 * par]]
        y[2 * q] = code // T
        y[2 * q + 1] = code % T
    return pose_label_dot(M, i, y, h)
