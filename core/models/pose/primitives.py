"""The pose kind's statistics-space primitives, the numba functions the solver's kernels call for
every block (see :func:`gaplab.core.kernels.register_model_kind`): the score vector h = (w, 1),
⟨m(y), h⟩, m(y) added to a vector, the loss, the ground truth; ‖B_i δ‖² and the update of w
are the dense kind's (:mod:`gaplab.core.models.dense`: B_i = [I_d 0] in both).
m(y) = (ψ(x_i, y), L_i(y)) as in :mod:`gaplab.core.models.pose.model`; the unary features
come from the generated score maps (:func:`~gaplab.core.datasets.lsp_scoremaps.pose_unary_value`).

Paper: App. I (LSP model), Eq. (2).
"""
from __future__ import annotations

from numba import njit

from ...datasets.lsp_scoremaps import pose_unary_value
from ..dense import dense_axpy, dense_sqnorm

__all__ = ["pose_scores", "pose_label_dot", "pose_label_add", "pose_label_loss", "pose_gt_label",
           "pose_sqnorm", "pose_axpy"]


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


# B_i = [I_d 0], as the dense kind's: ‖B_i δ‖² and v += c·B_i δ are its primitives (one loop over
# the d entries of δ; δ's loss entry does not reach w).
pose_sqnorm = dense_sqnorm
pose_axpy = dense_axpy
