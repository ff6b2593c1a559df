"""Binary superpixel segmentation with a Potts model and a graph-cut max oracle (HorseSeg).

Model (Paper: App. I, "HorseSeg"). Image i has superpixels p ∈ V_i with unary features
x_p ∈ R^{d_u} and adjacent pairs pq ∈ E_i with non-negative pairwise features x_pq ∈ R^{d_p};
a labelling y ∈ {0, 1}^{V_i} (1 = foreground, "horse"); w = (w_U, w_P) ∈ R^{d_u + d_p}.

    ⟨w, ψ(x_i, y)⟩ = Σ_p ⟨w_U, x_p⟩ ([y_p = 1] − [y_p = 0]) − Σ_pq ⟨w_P, x_pq⟩ [y_p ≠ y_q]

The paper writes the pairwise term with a + sign and maximises L − ⟨w, ψ⟩ in the oracle; our
oracle maximises L + ⟨w, ψ⟩ (the convention of :mod:`gaplab.core.models.protocol`), so ψ here is
the paper's ψ with the sign flipped, the same SSVM (‖w‖² does not see the sign). With w_P >= 0
(the box constraint of :meth:`SegmentationModel.bounds`, Paper: App. H) and x_pq >= 0 every cut
costs, the energy −⟨w, ψ⟩ − L is submodular and the max oracle is a min cut (PyMaxflow, the
Boykov-Kolmogorov algorithm).

Loss (the authors' class-balanced, area-weighted Hamming loss): with a_p the area of superpixel
p, g_p its ground-truth label and A_c the ground-truth area of class c (sum of a_p over g_p = c),

    L_i(y) = Σ_p ω_p [y_p ≠ g_p],   ω_p = a_p / (2 A_{g_p}),

i.e. (missed horse area / horse area + false horse area / background area) / 2 ∈ [0, 1]. A class
absent from the image contributes nothing.

Statistics space (what the solver stores per block; p_i = V_i + E_i entries):

    m(y) = (s_p = 2 y_p − 1 for p ∈ V_i,  c_pq = [y_p ≠ y_q] for pq ∈ E_i)

so ψ(x_i, y) = B_i m(y) with B_i = [X_U^T, 0; 0, −X_P^T] (linear, no constant). The loss is
affine in m(y): [y_p ≠ g_p] = (1 − s_p ĝ_p)/2 with ĝ_p = 2 g_p − 1, hence

    L_i(y) = loss_const_i − Σ_p (ω_p ĝ_p / 2) s_p,   loss_const_i = Σ_p ω_p / 2

(= 1/2 when both classes occur in the image). :func:`seg_scores` puts the linear part into h and
sets the constant aside: ⟨m(y), h⟩ = ⟨w, ψ(x_i, y)⟩ + L_i(y) − loss_const_i; ``loss_const`` is
kept in :class:`SegArrays` for whoever needs the loss value itself (:func:`seg_label_loss` returns
the exact loss).

Storage: unary features float32 (V, d_u) and pairwise features float32 (E, d_p) as in
:class:`~gaplab.core.datasets.segmentation.SegmentationData`; every primitive reads them into
float64 accumulators.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..datasets.segmentation import SegmentationData
from . import protocol as _p
from .protocol import StructuredModel, check_labelling

__all__ = [
    "SegArrays", "SegmentationModel", "build_seg_arrays",
    "seg_scores", "seg_label_dot", "seg_label_add", "seg_label_loss", "seg_gt_label",
    "seg_sqnorm", "seg_axpy", "seg_potentials", "graph_cut",
]

#: The flat arrays of a segmentation model that the numba primitives read.
SegArrays = namedtuple("SegArrays", [
    "n",           # int: blocks (images)
    "d",           # int: d_u + d_p
    "K",           # int: 2 labels
    "d_u",         # int: unary features per superpixel; w[:d_u] = w_U
    "d_p",         # int: pairwise features per edge; w[d_u:] = w_P
    "stat_off",    # int64 (n+1): statistics offsets, p_i = V_i + E_i
    "lab_off",     # int64 (n+1): superpixel (= labelling) offsets, L_i = V_i
    "gt",          # int64 (V,): ground-truth label per superpixel
    "edge_off",    # int64 (n+1): edge offsets
    "eu",          # int64 (E,): first superpixel of each edge (local to its image)
    "ev",          # int64 (E,): second superpixel of each edge (local)
    "xu",          # float32 (V, d_u): unary features
    "xp",          # float32 (E, d_p): pairwise features (>= 0)
    "lw",          # float64 (V,): loss weight ω_p = a_p / (2 A_{g_p})
    "loss_const",  # float64 (n,): Σ_p ω_p / 2, the constant part of the loss set aside
])


def build_seg_arrays(data: SegmentationData) -> SegArrays:
    """The :class:`SegArrays` of a data set (loss weights from the superpixel areas)."""
    if not isinstance(data, SegmentationData):
        raise TypeError(f"data must be a SegmentationData, got {type(data).__name__}")
    n = data.n
    V, E = data.n_superpixels, data.n_edges
    img = np.repeat(np.arange(n), V)
    gt = data.gt
    area = data.area.astype(np.float64)
    A1 = np.bincount(img, weights=area * (gt == 1), minlength=n)
    A0 = np.bincount(img, weights=area * (gt == 0), minlength=n)
    Ag = np.where(gt == 1, A1[img], A0[img])
    lw = area / (2.0 * Ag)  # Ag >= area > 0 for the class the superpixel is in
    loss_const = np.bincount(img, weights=lw, minlength=n) / 2.0
    return _p.freeze_arrays(SegArrays(  # the model's own arrays (the data's are read-only), read-only
        n, data.d_u + data.d_p, 2, data.d_u, data.d_p,
        np.concatenate([[0], np.cumsum(V + E)]).astype(np.int64),
        data.sp_off.copy(), gt.copy(), data.edge_off.copy(),
        np.ascontiguousarray(data.edges[:, 0]), np.ascontiguousarray(data.edges[:, 1]),
        data.xu, data.xp, lw, loss_const))


def _check_seg_arrays(M, fail):
    """What the segmentation kernels index with: superpixel and edge offsets, local edge ends,
    feature rows, loss weights."""
    n = int(M.n)
    if M.K != 2 or M.d != M.d_u + M.d_p:
        fail(f"K must be 2 and d = d_u + d_p, got K = {M.K}, d = {M.d}, d_u = {M.d_u}, d_p = {M.d_p}")
    V = np.diff(M.lab_off)
    edge_off = _p.offsets(M, "edge_off", n + 1, fail)
    E = np.diff(edge_off)
    if not np.array_equal(np.diff(M.stat_off), V + E):
        fail("stat_off must give V_i + E_i statistics to block i")
    nv, ne = int(M.lab_off[-1]), int(edge_off[-1])
    _p.array(M, "gt", fail, lo=0, hi=2)
    Vi = np.repeat(V, E)  # each edge's image size: its ends are local superpixel indices
    _p.array(M, "eu", fail, dtype=np.int64, shape=(ne,), lo=0, hi=Vi)
    _p.array(M, "ev", fail, dtype=np.int64, shape=(ne,), lo=0, hi=Vi)
    _p.array(M, "xu", fail, shape=(nv, M.d_u))
    _p.array(M, "xp", fail, shape=(ne, M.d_p))
    _p.array(M, "lw", fail, dtype=np.float64, shape=(nv,))
    _p.array(M, "loss_const", fail, dtype=np.float64, shape=(n,))


_p.register_arrays_check(SegArrays, _check_seg_arrays)


# --------------------------------------------------------------------------- numba primitives
@njit(cache=True, nogil=True, fastmath=True)
def _dot_row(X, r, w, off, m):
    """Σ_j X[r, j] w[off + j] for j < m, float32 values into a float64 sum. fastmath lets LLVM
    vectorise the reduction (a sequential sum does not vectorise); the result is
    deterministic for a given build, and only the order of the additions differs."""
    s = 0.0
    for j in range(m):
        s += np.float64(X[r, j]) * w[off + j]
    return s


@njit(cache=True, nogil=True, fastmath=True)
def _sumsq_and_zero(z, lo, hi):
    """Σ_{lo <= j < hi} z[j]², then z[lo:hi] = 0."""
    s = 0.0
    for j in range(lo, hi):
        s += z[j] * z[j]
    for j in range(lo, hi):
        z[j] = 0.0
    return s


@njit(cache=True, nogil=True)
def seg_potentials(M, i, w, h, with_loss):
    """h[:V_i] = ⟨w_U, x_p⟩ (− ω_p ĝ_p / 2 with the loss), h[V_i:p_i] = −⟨w_P, x_pq⟩."""
    a = M.lab_off[i]
    V = M.lab_off[i + 1] - a
    e0 = M.edge_off[i]
    E = M.edge_off[i + 1] - e0
    du = M.d_u
    for p in range(V):
        s = _dot_row(M.xu, a + p, w, 0, du)
        if with_loss:
            s -= 0.5 * M.lw[a + p] * (2.0 * M.gt[a + p] - 1.0)
        h[p] = s
    for e in range(E):
        h[V + e] = -_dot_row(M.xp, e0 + e, w, du, M.d_p)


@njit(cache=True, nogil=True)
def seg_scores(M, i, w, h):
    """Fill h[:p_i] with the loss-augmented score vector of block i in statistics space:
    ⟨m(y), h⟩ = ⟨w, ψ(x_i, y)⟩ + L_i(y) − loss_const[i] for every labelling y (Paper: Eq. (2)).
    O(V_i d_u + E_i d_p)."""
    seg_potentials(M, i, w, h, True)


@njit(cache=True, nogil=True)
def seg_label_dot(M, i, y, vec):
    """⟨m(y), vec⟩ for a labelling y (int64, (V_i,)) and a block-local vector vec[:p_i]."""
    V = M.lab_off[i + 1] - M.lab_off[i]
    e0 = M.edge_off[i]
    E = M.edge_off[i + 1] - e0
    s = 0.0
    for p in range(V):
        if y[p] != 0:
            s += vec[p]
        else:
            s -= vec[p]
    for e in range(E):
        if y[M.eu[e0 + e]] != y[M.ev[e0 + e]]:
            s += vec[V + e]
    return s


@njit(cache=True, nogil=True)
def seg_label_add(M, i, y, coef, vec):
    """vec[:p_i] += coef · m(y)."""
    V = M.lab_off[i + 1] - M.lab_off[i]
    e0 = M.edge_off[i]
    E = M.edge_off[i + 1] - e0
    for p in range(V):
        if y[p] != 0:
            vec[p] += coef
        else:
            vec[p] -= coef
    for e in range(E):
        if y[M.eu[e0 + e]] != y[M.ev[e0 + e]]:
            vec[V + e] += coef


@njit(cache=True, nogil=True)
def seg_label_loss(M, i, y):
    """L_i(y) = Σ_p ω_p [y_p ≠ g_p], the class-balanced, area-weighted Hamming loss."""
    a = M.lab_off[i]
    V = M.lab_off[i + 1] - a
    s = 0.0
    for p in range(V):
        if y[p] != M.gt[a + p]:
            s += M.lw[a + p]
    return s


@njit(cache=True, nogil=True)
def seg_gt_label(M, i, y):
    """y[:V_i] = the ground-truth labelling of block i."""
    a = M.lab_off[i]
    for p in range(M.lab_off[i + 1] - a):
        y[p] = M.gt[a + p]


@njit(cache=True, nogil=True)
def seg_sqnorm(M, i, dlt, zbuf):
    """‖B_i δ‖² for a block-local statistics direction δ = dlt[:p_i]; zbuf: float64 (d,) zero
    work vector, left zero. O(nnz(δ)·d) (the differing superpixels and edges only)."""
    a = M.lab_off[i]
    V = M.lab_off[i + 1] - a
    e0 = M.edge_off[i]
    E = M.edge_off[i + 1] - e0
    du = M.d_u
    dp = M.d_p
    s = 0.0
    touched = False
    for p in range(V):
        c = dlt[p]
        if c != 0.0:
            touched = True
            for j in range(du):
                zbuf[j] += c * np.float64(M.xu[a + p, j])
    if touched:
        s += _sumsq_and_zero(zbuf, 0, du)
    touched = False
    for e in range(E):
        c = dlt[V + e]
        if c != 0.0:
            touched = True
            for k in range(dp):
                zbuf[du + k] += c * np.float64(M.xp[e0 + e, k])
    if touched:
        s += _sumsq_and_zero(zbuf, du, du + dp)
    return s


@njit(cache=True, nogil=True)
def seg_axpy(M, i, coef, dlt, v, w, lb, ub, has_box):
    """v += coef · B_i δ for δ = dlt[:p_i]; with has_box, w[j] = clip(v[j], lb[j], ub[j]) on
    every touched coordinate j (all of w_U when a superpixel entry of δ is non-zero, all of w_P
    when an edge entry is); without a box w is not written (it is v). Paper: App. H."""
    a = M.lab_off[i]
    V = M.lab_off[i + 1] - a
    e0 = M.edge_off[i]
    E = M.edge_off[i + 1] - e0
    du = M.d_u
    dp = M.d_p
    touched = False
    for p in range(V):
        c = coef * dlt[p]
        if c != 0.0:
            touched = True
            for j in range(du):
                v[j] += c * np.float64(M.xu[a + p, j])
    if has_box and touched:
        for j in range(du):
            x = v[j]
            w[j] = lb[j] if x < lb[j] else (ub[j] if x > ub[j] else x)
    touched = False
    for e in range(E):
        c = coef * dlt[V + e]
        if c != 0.0:
            touched = True
            for k in range(dp):
                v[du + k] -= c * np.float64(M.xp[e0 + e, k])
    if has_box and touched:
        for k in range(dp):
            j = du + k
            x = v[j]
            w[j] = lb[j] if x < lb[j] else (ub[j] if x > ub[j] else x)


# --------------------------------------------------------------------------- graph cut
def graph_cut(unary, eu, ev, pair):
    """Maximise Σ_p unary[p] s_p − Σ_e pair[e] [y_{eu[e]} ≠ y_{ev[e]}] over y ∈ {0,1}^V,
    s_p = 2 y_p − 1, by min-cut/max-flow (PyMaxflow; vectorised graph construction).

    Parameters
    ----------
    unary : float64 (V,)
        The score of s_p (label 1 scores +unary[p], label 0 scores −unary[p]).
    eu, ev : int64 (E,)
        Edge end points in [0, V).
    pair : float64 (E,)
        Cut costs, all >= 0 (submodularity).

    Returns
    -------
    y : int64 (V,)
        A maximiser (ties broken by the max-flow algorithm).

    Raises
    ------
    ValueError
        If a cut cost is negative or not finite (the energy would not be submodular).
    """
    import maxflow

    unary = np.asarray(unary, dtype=np.float64)
    pair = np.asarray(pair, dtype=np.float64)
    V = unary.shape[0]
    if pair.size and not (pair.min() >= 0.0):  # also catches NaN
        k = int(np.flatnonzero(~(pair >= 0.0))[0])
        raise ValueError(f"graph_cut: cut cost pair[{k}] = {pair[k]} is negative or NaN; a graph cut "
                         "needs non-negative pairwise potentials (submodular energy)")
    if not np.all(np.isfinite(unary)):
        raise ValueError("graph_cut: unary potentials must be finite")
    g = maxflow.Graph[float](V, max(int(pair.size), 1))
    ids = np.asarray(g.add_nodes(V))  # PyMaxflow >= 1.3 returns the node ids as an array
    # energy to minimise: cost(y_p = 1) − cost(y_p = 0) = −2 unary[p]; sink segment = label 1
    # costs the source capacity.
    u = -2.0 * unary
    g.add_grid_tedges(ids, np.maximum(u, 0.0), np.maximum(-u, 0.0))
    if pair.size:
        g.add_edges(eu, ev, pair, pair)
    g.maxflow()
    return g.get_grid_segments(ids).astype(np.int64)


# --------------------------------------------------------------------------- the model
class SegmentationModel(StructuredModel):
    """Binary superpixel segmentation SSVM with Potts pairwise terms (Paper: App. I, HorseSeg).

    Parameters
    ----------
    data : SegmentationData
        Training images (one block each).

    Attributes
    ----------
    n, d : int
        Images and d = d_u + d_p (w = (w_U, w_P)).
    arrays : SegArrays
        The flat arrays of the numba primitives (``seg_*`` in this module).
    oracle_tier : "python"
        The max oracle is a PyMaxflow graph cut called from Python.

    Notes
    -----
    See the module docstring for ψ, the loss, the statistics m(y) and the sign convention.
    """

    oracle_tier = "python"
    kind = "segmentation"

    def __init__(self, data: SegmentationData):
        if not isinstance(data, SegmentationData):
            raise TypeError(f"data must be a SegmentationData, got {type(data).__name__}")
        self.data = data
        self.arrays = build_seg_arrays(data)
        self.n = data.n
        self.d_u, self.d_p = data.d_u, data.d_p
        self.d = self.d_u + self.d_p
        self.name = getattr(data, "name", None) or "segmentation"
        self._h = np.empty(int(np.max(np.diff(self.arrays.stat_off))))

    # ---------------------------------------------------------------- helpers
    @property
    def stat_sizes(self) -> np.ndarray:
        return np.diff(self.arrays.stat_off)

    def _check_i(self, i) -> int:
        if not 0 <= int(i) < self.n:
            raise IndexError(f"block index {i} out of range [0, {self.n})")
        return int(i)

    def _check_w(self, w, what="max_oracle") -> np.ndarray:
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.d,):
            raise ValueError(f"{what}: w must have shape ({self.d},) = d_u {self.d_u} + d_p "
                             f"{self.d_p}, got {w.shape}")
        wp = w[self.d_u:]
        if not (wp.min() >= 0.0):
            k = int(np.flatnonzero(~(wp >= 0.0))[0])
            raise ValueError(
                f"{what}: pairwise weight w[{self.d_u + k}] (w_P[{k}]) = {wp[k]} is negative; the "
                f"graph cut needs w_P >= 0 (a submodular energy). Train with the box constraints "
                f"of bounds() (Paper: App. H).")
        return w

    def _cut(self, i, w, with_loss):
        i = self._check_i(i)
        w = self._check_w(w, "max_oracle" if with_loss else "decode")
        M = self.arrays
        a, b = M.lab_off[i], M.lab_off[i + 1]
        e0, e1 = M.edge_off[i], M.edge_off[i + 1]
        V = b - a
        h = self._h
        seg_potentials(M, i, w, h, with_loss)
        return graph_cut(h[:V], M.eu[e0:e1], M.ev[e0:e1], -h[V:V + e1 - e0])

    # ---------------------------------------------------------------- protocol
    def label_len(self, i: int) -> int:
        """V_i, the number of superpixels of image i."""
        i = self._check_i(i)
        return int(self.arrays.lab_off[i + 1] - self.arrays.lab_off[i])

    def n_labels(self, i: int) -> int:
        """2 (background, foreground)."""
        return 2

    def ground_truth(self, i: int) -> np.ndarray:
        """The superpixel ground truth of image i (majority label), int64 of shape (V_i,)."""
        i = self._check_i(i)
        M = self.arrays
        return M.gt[M.lab_off[i]:M.lab_off[i + 1]].copy()

    def loss(self, i: int, y) -> float:
        """Class-balanced, area-weighted Hamming loss L_i(y) ∈ [0, 1]."""
        y = check_labelling(self, self._check_i(i), y)
        return float(seg_label_loss(self.arrays, i, y))

    def loss_per_superpixel(self, i: int, y) -> np.ndarray:
        """The contribution of every superpixel of image i to L_i(y): ω_p [y_p ≠ g_p] with
        ω_p = a_p / (2 A_{g_p}) (area over twice its ground-truth class's area), float64 of shape
        (V_i,); sums to :meth:`loss` (the class-balanced, area-weighted Hamming loss of the
        authors' code; Paper: App. I). A wrong superpixel of the smaller class costs more per
        pixel."""
        y = check_labelling(self, self._check_i(i), y)
        M = self.arrays
        a, b = M.lab_off[i], M.lab_off[i + 1]
        return M.lw[a:b] * (y != M.gt[a:b])

    def joint_feature(self, i: int, y) -> np.ndarray:
        """Dense ψ(x_i, y) = (Σ_p (2 y_p − 1) x_p, −Σ_pq [y_p ≠ y_q] x_pq), float64 of shape (d,)."""
        y = check_labelling(self, self._check_i(i), y)
        M = self.arrays
        a, b = M.lab_off[i], M.lab_off[i + 1]
        e0, e1 = M.edge_off[i], M.edge_off[i + 1]
        s = 2.0 * y - 1.0
        cut = (y[M.eu[e0:e1]] != y[M.ev[e0:e1]]).astype(np.float64)
        return np.concatenate([s @ M.xu[a:b].astype(np.float64),
                               -(cut @ M.xp[e0:e1].astype(np.float64))])

    def statistics(self, i: int, y) -> np.ndarray:
        """m(y) = (2 y_p − 1, [y_p ≠ y_q]), float64 of shape (p_i,) (dense, for tests)."""
        y = check_labelling(self, self._check_i(i), y)
        out = np.zeros(int(self.stat_sizes[i]))
        seg_label_add(self.arrays, i, y, 1.0, out)
        return out

    def max_oracle(self, i: int, w) -> np.ndarray:
        """Loss-augmented decoding argmax_y L_i(y) + ⟨w, ψ(x_i, y)⟩ by min-cut/max-flow
        (PyMaxflow), int64 of shape (V_i,) (Paper: Eq. (2), App. I).

        Raises
        ------
        ValueError
            If w has the wrong shape or a pairwise weight w_P is negative.
        """
        return self._cut(i, w, True)

    def decode(self, i: int, w) -> np.ndarray:
        """Prediction argmax_y ⟨w, ψ(x_i, y)⟩ by graph cut, int64 of shape (V_i,)."""
        return self._cut(i, w, False)

    def bounds(self):
        """(lb, ub), float64 of shape (d,): lb = 0 on w_P (so every energy is submodular),
        −inf on w_U; ub = +inf (Paper: App. H, App. I)."""
        lb = np.full(self.d, -np.inf)
        lb[self.d_u:] = 0.0
        return lb, np.full(self.d, np.inf)

    def describe_block(self, i: int, y) -> dict:
        """What the app draws: ``photo`` (uint8 (H, W, 3) or None), ``superpixels`` (int32
        (H, W)), ``boundaries`` (bool (H, W), superpixel borders), ``mask`` (bool (H, W), the
        pixels labelled foreground by y), ``truth`` (bool (H, W), the ground-truth pixel mask),
        ``labels`` (y), ``loss_per_superpixel`` (float64 (V_i,): ω_p [y_p ≠ g_p], summing to
        L_i(y); :meth:`loss_per_superpixel`), ``loss_weight`` (float64 (V_i,): ω_p, what each
        superpixel would cost if wrong, the scale of a loss heat map), a one-line ``text`` and
        the app's pictures (:mod:`gaplab.core.models.display`): ``panels`` (the photo with its
        superpixel borders, the labelling as a region over the photo with its wrong pixels,
        and, when y has a loss, its per-superpixel loss as a heat map) and their ``legend``."""
        from skimage.segmentation import find_boundaries

        from .display import image_panel, region_heat_map

        i = self._check_i(i)
        y = check_labelling(self, i, y)
        data = self.data
        seg = data.segment_map(i)
        M = self.arrays
        a, b = M.lab_off[i], M.lab_off[i + 1]
        per = self.loss_per_superpixel(i, y)
        area = data.area[a:b]
        frac = float(area[y == 1].sum() / area.sum())
        name = data.image_names[i] if data.image_names else f"image {i}"
        photo, truth, mask = data.photo(i), data.mask_map(i), data.labels_to_mask(i, y)
        borders = find_boundaries(seg, mode="inner")
        lw = M.lw[a:b].copy()
        base = np.asarray(photo, dtype=np.float64) if photo is not None else np.full(seg.shape + (3,), 128.0)
        first = base.copy()
        first[borders] = (255, 255, 0)
        wrong_y = bool(np.any(y != self.ground_truth(i)))
        panels = [image_panel(first.astype(np.uint8), "photo and superpixels", input=True),
                  image_panel(base.astype(np.uint8), "{who}" + (f" (loss {per.sum():.3f})" if wrong_y else ""),
                              region=mask, wrong=mask != truth)]
        if per.sum() > 0:   # the loss heat map: each wrong superpixel coloured by ω_p [y_p ≠ g_p]
            top = float(np.max(lw)) if lw.size else 0.0
            panels.append(image_panel(region_heat_map(base, seg, per, top, borders),
                                      f"{{who}} loss per superpixel (Σ {per.sum():.3f}; red {top:.3f})"))
        return {
            "kind": "mask",
            "text": (f"{name}: {int(y.sum())} of {b - a} superpixels foreground "
                     f"({100 * frac:.1f}% of the pixels), loss {per.sum():.3f}"),
            "labels": y, "photo": photo, "superpixels": seg, "boundaries": borders, "mask": mask,
            "truth": truth, "loss_per_superpixel": per, "loss_weight": lw, "panels": panels,
            "legend": ("darkened: wrong label (adds loss). Loss heat map: what each wrong superpixel adds to "
                       "the labelling's loss, ω_p = area / (2 · area of its true class), light yellow → dark "
                       "red (the image's largest ω_p); they sum to the loss"),
        }

    # ---------------------------------------------------------------- data-set level
    def _other(self, data):
        if data is None or data is self.data:
            return self
        if not isinstance(data, SegmentationData):
            raise TypeError(f"data must be a SegmentationData, got {type(data).__name__}")
        if (data.d_u, data.d_p) != (self.d_u, self.d_p):
            raise ValueError(f"data has d_u={data.d_u}, d_p={data.d_p}; the model expects "
                             f"d_u={self.d_u}, d_p={self.d_p}")
        return SegmentationModel(data)

    def predict(self, w: np.ndarray, data: SegmentationData | None = None) -> np.ndarray:
        """Graph-cut prediction of every image of ``data`` (default: the training set):
        int64 superpixel labels of shape (V,), images concatenated."""
        m = self._other(data)
        w = self._check_w(w, "predict")
        return np.concatenate([m.decode(i, w) for i in range(m.n)])

    def error(self, w: np.ndarray, data: SegmentationData | None = None) -> float:
        """Mean task loss (class-balanced Hamming, per image) of the prediction on ``data``."""
        m = self._other(data)
        y = self.predict(w, m.data)
        M = m.arrays
        return float(np.mean([seg_label_loss(M, i, y[M.lab_off[i]:M.lab_off[i + 1]])
                              for i in range(m.n)]))

    def evaluate(self, w: np.ndarray, data: SegmentationData | None = None) -> dict:
        """Pixel-level scores of the prediction on ``data`` against the pixel masks:
        ``pixel_accuracy`` (correct pixels / pixels, all images pooled), ``iou`` (foreground
        Jaccard, pooled), ``mean_iou`` (per-image foreground Jaccard, averaged) and ``loss``
        (mean task loss)."""
        m = self._other(data)
        y = self.predict(w, m.data)
        d = m.data
        correct = inter = union = 0
        ious, losses = [], []
        for i in range(d.n):
            yi = y[d.sp_off[i]:d.sp_off[i + 1]]
            pred = d.labels_to_mask(i, yi)
            truth = d.mask_map(i)
            correct += int(np.sum(pred == truth))
            it, un = int(np.sum(pred & truth)), int(np.sum(pred | truth))
            inter += it
            union += un
            ious.append(it / un if un else 1.0)
            losses.append(seg_label_loss(m.arrays, i, yi))
        return {"pixel_accuracy": correct / d.mask.size, "iou": inter / union if union else 1.0,
                "mean_iou": float(np.mean(ious)), "loss": float(np.mean(losses))}


# --------------------------------------------------------------------------- solver registration
# The statistics-space scores leave out the constant loss_const_i of the loss (⟨m(y), h⟩ =
# ⟨w, ψ⟩ + L_i(y) − loss_const_i). The solver only uses differences of ⟨m(y), h⟩ between
# labellings (block gaps, step sizes, cache rule; Σ_y α_i(y) = 1, so ⟨μ_i, h⟩ carries the same
# constant), and the exact gap pass's structured hinge term val − (⟨m(y_i), h⟩ − L_i(y_i)) is a
# difference too, because seg_label_loss returns the exact loss (L_i(y_i) = 0). Checked by
# tests/models/test_segmentation_solver.py against an independent primal − dual.
def _register():
    from .. import kernels as kr
    kr.register_model_kind(SegArrays, "segmentation", scores=seg_scores, label_dot=seg_label_dot,
                           label_add=seg_label_add, label_loss=seg_label_loss, gt_label=seg_gt_label,
                           sqnorm=seg_sqnorm, axpy=seg_axpy)


_register()
