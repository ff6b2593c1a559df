"""The pose model's max oracle (:func:`pose_oracle`) and plain decoding (:func:`pose_decode`).

Max oracle
    Max-sum on the tree, leaves first. Node q's table S_q(l, t) (T_q × G²) is w_U,q φ_q(l) +
    h[d]·loss_q(l) plus the messages of its children. Its message to the parent p is
    M(l_p, t_p) = max_{t_q} [w_pair(t_q, t_p) + max_{l_q} S_q(l_q, t_q) − def_{q,t_q}(l_q − l_p)],
    the inner max a separable 2-D generalized distance transform per child type
    (:mod:`~gaplab.core.models.pose.transforms`), then per parent type one branch-free pass
    over the child's types adding the pair weight (values only). For G <=
    :data:`~gaplab.core.models.pose.transforms.DIRECT_MAX_G` the transform is the direct one;
    node tables then alternate row- and column-major with the depth, so one transpose per
    transform suffices. Above it, the upper envelope of parabolas. No back-pointers are kept:
    while back-tracking, each of the N − 1 answer cells is recomputed from the child's table
    with the message's own arithmetic (:func:`_backtrack_child`, O(T·G²) per node); ties go
    to the smallest type, then the smallest cell (row-major). Nothing is allocated. The N
    score maps are regenerated every call (they depend on the image only, but keeping them
    would cost 26·G² float64 per image).

Scratch (sizes in :class:`~gaplab.core.models.pose.arrays.PoseArrays` fields ``scr_f``, ``scr_i``; T = max types, GG = G²)
    float64 ``scr_f = (N + 1)·T·GG + 2·GG + 5G + 2``: the node tables, the per-type transforms
    of one child, two G² work tables (a transpose, a first pass), the penalties, the
    envelope's values and breakpoints, a back-tracking row. int64 ``scr_i = 2·GG + G + N``:
    the envelope's arg-max and first-pass arg-max (written, unused) and parabola list, and a
    flag per node (its table's other layers written yet). LSP at G = 128: T = 4, 1.80 M
    float64 (14 MB) and 33 K int64; T = 6, 2.69 M float64 (21 MB). The solver hands a compiled
    oracle scratch of length (label length) × M.K, so ``K`` is not G² here but
    ceil(max(scr_f, scr_i) / 2N); the solver allocates it once per state and once per thread
    chunk of an exact gap pass (nothing is shared between threads; ``PoseArrays`` holds only
    the sizes).

Paper: App. I (LSP model), Eq. (2) (max oracle); Felzenszwalb and Huttenlocher (2005).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ...datasets.lsp_scoremaps import pose_score_map
from .primitives import pose_label_dot, pose_scores
from .transforms import _direct2d, _dt2d, _max_sub, _max_sub4, _transpose

__all__ = ["pose_oracle", "pose_decode"]

_NEG = -np.inf


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
