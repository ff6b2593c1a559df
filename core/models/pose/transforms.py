"""Generalized distance transforms (max form) of the pose model's max oracle: the message of a
child part to its parent is max over the child's cells of its table minus a separable quadratic
deformation penalty, one 2-D transform per (edge, child type).

Two transforms attain the same maxima:

* the upper envelope of parabolas (Felzenszwalb and Huttenlocher 2005), :func:`_dt1d` and
  :func:`_dt2d`: O(G²) per 2-D transform, but its hull pops depend on the noisy scores
  (branches the processor mispredicts);
* a direct (brute-force) separable transform, :func:`_direct2d`: O(G³), but branch-free sweeps
  over whole contiguous tables that vectorize, hence faster on small grids. The oracle uses it
  for G <= :data:`DIRECT_MAX_G` (the measured crossover: benchmarks/results/bench_pose.json).

:func:`distance_transform_1d` and :func:`distance_transform_2d` are the checked Python entry
points (tests, teaching). Nothing here allocates except those two.

Paper: App. I (the LSP model's max oracle); Felzenszwalb and Huttenlocher (2005).
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["DIRECT_MAX_G", "distance_transform_1d", "distance_transform_2d"]

_NEG = -np.inf

#: the oracle's transforms are direct (O(G³), vectorized) when G <= DIRECT_MAX_G, envelope
#: (O(G²), branchy) above: the grid side where whole oracle calls forced to one transform
#: cross over (benchmarks/bench_pose.py --both-transforms; benchmarks/results/README.md).
DIRECT_MAX_G = 72


# ---------------------------------------------------------------------------- envelope transform
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
    of S four contiguous entries."""
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

