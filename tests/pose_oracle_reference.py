"""The pose max oracle as it was before the speed-up of issue 18's last gaps (commit 4c5fd20):
the parabola-envelope distance transform with a division per push and a strided arg-max
composition pass, per-cell loss with two divisions. Kept as a slow, independent reference
for tests/test_pose_tree.py (the new oracle must return the same labelling and value).
Not used by the package."""
import numpy as np
from numba import njit

from gaplab.core.models.pose_tree import _node_loss, pose_label_dot, pose_score_map

_NEG = -np.inf


@njit(cache=True)
def old_scratch_f(M):
    GG = M.G * M.G
    return (M.N + 1) * M.T * GG + GG + 2 * M.G + 1


@njit(cache=True)
def old_scratch_i(M):
    GG = M.G * M.G
    return (M.N + 1) * M.T * GG + GG + M.G


@njit(cache=True, nogil=True)
def old_dt1d(src, s0, sstep, n, a, b, shift, dst, d0, dstep, arg, a0, astep, v, z):
    """dst[d0 + j·dstep] = max_x src[s0 + x·sstep] − a (x − c_j)² − b (x − c_j), c_j = j + shift,
    for j, x in [0, n); arg[a0 + j·astep] = the maximising x (a >= 0). Felzenszwalb and
    Huttenlocher (2005): upper envelope of the parabolas (lines e_x + 2a·x·c in c, with
    e_x = f_x − a x² − b x), O(n). v (int64, n), z (float64, 2n + 1): work (z[n+1:] holds e)."""
    if a == 0.0:  # linear: the maximiser does not depend on c_j
        best = _NEG
        bx = 0
        for x in range(n):
            val = src[s0 + x * sstep] - b * x
            if val > best:
                best = val
                bx = x
        fb = src[s0 + bx * sstep]
        for j in range(n):
            c = j + shift
            dst[d0 + j * dstep] = fb - b * (bx - c)
            arg[a0 + j * astep] = bx
        return
    e0 = n + 1
    for x in range(n):
        z[e0 + x] = src[s0 + x * sstep] - (a * x + b) * x
    k = 0
    v[0] = 0
    z[0] = _NEG
    z[1] = np.inf
    ta = 2.0 * a
    for q in range(1, n):
        eq = z[e0 + q]
        p = v[k]
        num = z[e0 + p] - eq
        den = ta * (q - p)
        # pop while the intersection c = num / den (den > 0) lies left of the breakpoint z[k]
        while k > 0 and num <= z[k] * den:
            k -= 1
            p = v[k]
            num = z[e0 + p] - eq
            den = ta * (q - p)
        s = num / den
        if k == 0 and s <= z[0]:  # only when s = -inf: q's parabola is above everywhere
            v[0] = q
            z[1] = np.inf
        else:
            k += 1
            v[k] = q
            z[k] = s
            z[k + 1] = np.inf
    k = 0
    for j in range(n):
        c = j + shift
        while z[k + 1] < c:
            k += 1
        x = v[k]
        dd = x - c
        dst[d0 + j * dstep] = src[s0 + x * sstep] - (a * dd + b) * dd
        arg[a0 + j * astep] = x


@njit(cache=True, nogil=True)
def old_dt2d(src, s0, G, ax, bx, ay, by, rx, ry, dst, d0, arg, a0, tmp, targ, v, z):
    """dst[d0 + yp·G + xp] = max_{xq, yq} src[s0 + yq·G + xq] − ax·ddx² − bx·ddx − ay·ddy² −
    by·ddy with (ddx, ddy) = (xq − xp − rx, yq − yp − ry); arg = the maximising cell index.
    tmp (float64, G²), targ (int64, G²), v, z: work."""
    for yq in range(G):  # along x, every row; written transposed: tmp[xp·G + yq]
        old_dt1d(src, s0 + yq * G, 1, G, ax, bx, rx, tmp, yq, G, targ, yq, G, v, z)
    for xp in range(G):  # along y, every column (a contiguous row of tmp)
        old_dt1d(tmp, xp * G, 1, G, ay, by, ry, dst, d0 + xp, G, arg, a0 + xp, G, v, z)
        for yp in range(G):
            yq = arg[a0 + yp * G + xp]
            arg[a0 + yp * G + xp] = yq * G + targ[xp * G + yq]


@njit(cache=True, nogil=True)
def old_pose_oracle(M, i, h, y, vit_f, vit_i):
    """y ← argmax_y ⟨m(y), h⟩ on block i (loss-augmented decoding when h = (w, 1), plain
    decoding when h[d] = 0) by max-sum on the tree with generalized distance transforms;
    returns ⟨m(y), h⟩ of the returned y. Needs h's quadratic deformation weights >= 0
    (ValueError otherwise). vit_f: float64 scratch of length >= old_scratch_f(M); vit_i: int64 scratch
    of length >= old_scratch_i(M)."""
    if vit_f.shape[0] < old_scratch_f(M) or vit_i.shape[0] < old_scratch_i(M):
        raise ValueError("old_pose_oracle: scratch too small")
    scratch_f = vit_f
    scratch_i = vit_i
    G = M.G
    GG = G * G
    N = M.N
    T = M.T
    d = M.d
    lc = h[d]
    TG = T * GG
    # scratch layout
    o_D = N * TG
    o_tmp = o_D + TG
    o_z = o_tmp + GG
    o_A = N * TG
    o_targ = o_A + TG
    o_v = o_targ + GG
    for q in range(N):
        par = M.parent[q]
        if par >= 0:
            for t in range(M.ntype[q]):
                o = M.def_off[q] + 4 * t
                if not (h[o + 1] >= 0.0 and h[o + 3] >= 0.0):
                    raise ValueError("old_pose_oracle: a quadratic deformation weight is negative (or NaN); "
                                     "the generalized distance transform needs them >= 0 "
                                     "(use PoseModel.bounds())")
    # node tables: unary + loss, copied to every type
    for p in range(N):
        base = p * TG
        pose_score_map(M, i, p, scratch_f[o_tmp:o_tmp + GG])
        wu = h[p]
        if lc != 0.0:
            for c in range(GG):
                scratch_f[base + c] = wu * scratch_f[o_tmp + c] + lc * _node_loss(M, i, p, c)
        else:
            for c in range(GG):
                scratch_f[base + c] = wu * scratch_f[o_tmp + c]
        for t in range(1, M.ntype[p]):
            for c in range(GG):
                scratch_f[base + t * GG + c] = scratch_f[base + c]
    # messages, leaves first
    inv_u = 1.0 / M.unit
    for k in range(N - 1, 0, -1):
        q = M.order[k]
        par = M.parent[q]
        Tq = M.ntype[q]
        Tp = M.ntype[par]
        for t in range(Tq):
            o = M.def_off[q] + 4 * t
            ab = (q * T + t) * 2
            # penalty in cells: u-units features (dx/u, (dx/u)²) -> a = w/u², b = w/u
            old_dt2d(scratch_f, q * TG + t * GG, G,
                  h[o + 1] * inv_u * inv_u, h[o] * inv_u, h[o + 3] * inv_u * inv_u, h[o + 2] * inv_u,
                  M.anchors[ab], M.anchors[ab + 1],
                  scratch_f, o_D + t * GG, scratch_i, o_A + t * GG,
                  scratch_f[o_tmp:o_tmp + GG], scratch_i[o_targ:o_targ + GG],
                  scratch_i[o_v:o_v + G], scratch_f[o_z:o_z + 2 * G + 1])
        po = M.pair_off[q]
        bv = scratch_f[o_tmp:o_tmp + GG]      # best value over the child's types (reuses tmp)
        bt = scratch_i[o_targ:o_targ + GG]    # its type
        D0 = scratch_f[o_D:o_D + GG]
        for tp in range(Tp):
            acc = scratch_f[par * TG + tp * GG:par * TG + (tp + 1) * GG]
            bp = scratch_i[q * TG + tp * GG:q * TG + (tp + 1) * GG]
            wp0 = h[po + tp]
            for c in range(GG):
                bv[c] = D0[c] + wp0
                bt[c] = 0
            for t in range(1, Tq):
                wpt = h[po + t * Tp + tp]
                Dt = scratch_f[o_D + t * GG:o_D + (t + 1) * GG]
                for c in range(GG):  # branch-free select: vectorizes (G = 64: 8 -> 0.5-4 ms a call)
                    val = Dt[c] + wpt
                    old = bv[c]
                    bv[c] = val if val > old else old
                    bt[c] = t if val > old else bt[c]
            for c in range(GG):
                acc[c] += bv[c]
                b = bt[c]
                bp[c] = scratch_i[o_A + b * GG + c] * T + b
    # root
    r = M.order[0]
    best = _NEG
    bc = 0
    btr = 0
    for t in range(M.ntype[r]):
        for c in range(GG):
            val = scratch_f[r * TG + t * GG + c]
            if val > best:
                best = val
                bc = c
                btr = t
    y[2 * r] = bc
    y[2 * r + 1] = btr
    for k in range(1, N):
        q = M.order[k]
        par = M.parent[q]
        code = scratch_i[q * TG + y[2 * par + 1] * GG + y[2 * par]]
        y[2 * q] = code // T
        y[2 * q + 1] = code % T
    return pose_label_dot(M, i, y, h)

