"""Multiclass model with enumerated labels and explicit per-label features (toy problems).

Block i has labels 0..``|Y_i|``-1; label y has the feature vector ψ(x_i, y) ∈ R^d (a sparse row)
and the task loss L_i(y); gt[i] is the correct label (with L_i(gt) = 0). The max oracle
enumerates the labels. Paper: App. C (the hard/easy toy example) uses this model.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..kernels import _clip, register_model_kind
from . import protocol as _p
from .protocol import StructuredModel, check_labelling

__all__ = ["MulticlassModel", "MulticlassArrays"]

_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)

# ============================================================================ arrays and primitives

MulticlassArrays = namedtuple(
    "MulticlassArrays",
    [
        "n", "d", "K",
        "stat_off",      # int64 (n+1): statistics offsets = label-row offsets (one entry per label of a block)
        "lab_off",       # int64 (n+1): arange(n+1) (a labelling is one label)
        "gt",            # int64 (n,): the correct label of each block
        "mc_indptr", "mc_indices", "mc_values",  # CSR of the label rows ψ(x_i, y), rows at stat_off
        "mc_loss",       # float64: L_i(y) for every label row
    ],
)


@njit(cache=True, nogil=True)
def mc_scores(M, i, w, h):
    """h[y] = L_i(y) + ⟨w, ψ(x_i, y)⟩ for every label y of block i."""
    r0 = M.stat_off[i]
    nl = M.stat_off[i + 1] - r0
    for y in range(nl):
        r = r0 + y
        s = M.mc_loss[r]
        for p in range(M.mc_indptr[r], M.mc_indptr[r + 1]):
            s += M.mc_values[p] * w[M.mc_indices[p]]
        h[y] = s


@njit(cache=True, nogil=True)
def mc_oracle(M, i, h, y, vit_f, vit_i):
    """Enumeration: y[0] ← argmax_y h[y] (ties: the lowest label); returns the maximum."""
    nl = M.stat_off[i + 1] - M.stat_off[i]
    best = -np.inf
    arg = 0
    for k in range(nl):
        if h[k] > best:
            best = h[k]
            arg = k
    y[0] = arg
    return best


@njit(cache=True, nogil=True, inline="always")
def mc_label_dot(M, i, y, vec):
    return vec[y[0]]


@njit(cache=True, nogil=True, inline="always")
def mc_label_add(M, i, y, coef, vec):
    vec[y[0]] += coef


@njit(cache=True, nogil=True, inline="always")
def mc_label_loss(M, i, y):
    return M.mc_loss[M.stat_off[i] + y[0]]


@njit(cache=True, nogil=True, inline="always")
def mc_gt_label(M, i, y):
    y[0] = M.gt[i]


@njit(cache=True, nogil=True, inline="always")
def mc_sqnorm(M, i, dlt, zbuf):
    """‖Σ_y δ[y] ψ(x_i, y)‖², accumulated in zbuf (left zero)."""
    r0 = M.stat_off[i]
    nl = M.stat_off[i + 1] - r0
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
def mc_axpy(M, i, coef, dlt, v, w, lb, ub, has_box):
    r0 = M.stat_off[i]
    nl = M.stat_off[i + 1] - r0
    for y in range(nl):
        c = coef * dlt[y]
        if c != 0.0:
            r = r0 + y
            for p in range(M.mc_indptr[r], M.mc_indptr[r + 1]):
                j = M.mc_indices[p]
                v[j] += c * M.mc_values[p]
                if has_box:
                    w[j] = _clip(v[j], lb[j], ub[j])


register_model_kind(
    MulticlassArrays, "multiclass",
    scores=mc_scores, oracle=mc_oracle, label_dot=mc_label_dot, label_add=mc_label_add,
    label_loss=mc_label_loss, gt_label=mc_gt_label, sqnorm=mc_sqnorm, axpy=mc_axpy,
)


def _check_mc_arrays(M, fail):
    """What the multiclass kernels index with: label rows, their CSR features and losses."""
    n, d = int(M.n), int(M.d)
    if not np.array_equal(M.lab_off, np.arange(n + 1)):
        fail("lab_off must be arange(n + 1) (a labelling is one label)")
    rows = np.diff(M.stat_off)
    if rows.max() > M.K:
        fail(f"K must be at least the largest number of labels of a block, {int(rows.max())}; got {M.K}")
    _p.array(M, "gt", fail, lo=0, hi=rows)
    R = int(M.stat_off[-1])
    indptr = _p.offsets(M, "mc_indptr", R + 1, fail)
    _p.array(M, "mc_indices", fail, dtype=np.int64, shape=(int(indptr[-1]),), lo=0, hi=d)
    _p.array(M, "mc_values", fail, dtype=np.float64, shape=(int(indptr[-1]),))
    _p.array(M, "mc_loss", fail, dtype=np.float64, shape=(R,))


_p.register_arrays_check(MulticlassArrays, _check_mc_arrays)



class MulticlassModel(StructuredModel):
    """Enumerated-label SSVM model.

    Parameters
    ----------
    features : list of ndarray
        ``features[i]`` is a float array of shape (``|Y_i|``, d): ψ(x_i, y) for every label y.
    losses : list of ndarray
        ``losses[i]`` has shape (``|Y_i|``,), non-negative, with ``losses[i][gt[i]] == 0``.
    gt : array of int, shape (n,)
        Correct label of each block.

    Raises
    ------
    ValueError
        On inconsistent shapes, non-finite values, a negative loss, a non-zero loss of the
        correct label or a label out of range.
    """

    kind = "multiclass"
    name = "multiclass"

    def __init__(self, features, losses, gt, label_names=None):
        n = len(features)
        if n < 1:
            raise ValueError("features must hold at least one block")
        if len(losses) != n:
            raise ValueError(f"losses must have {n} entries, got {len(losses)}")
        gt = np.asarray(gt, dtype=np.int64).ravel()
        if gt.shape != (n,):
            raise ValueError(f"gt must have shape ({n},), got {gt.shape}")
        d = None
        rows_indptr, rows_idx, rows_val, loss_all, row_off = [0], [], [], [], [0]
        for i, (Phi, Li) in enumerate(zip(features, losses)):
            Phi = np.asarray(Phi, dtype=np.float64)
            Li = np.asarray(Li, dtype=np.float64).ravel()
            if Phi.ndim != 2 or Phi.shape[0] < 1:
                raise ValueError(f"features[{i}] must have shape (n_labels, d), got {Phi.shape}")
            if d is None:
                d = Phi.shape[1]
            elif Phi.shape[1] != d:
                raise ValueError(f"features[{i}] has d={Phi.shape[1]}, expected {d}")
            if not np.all(np.isfinite(Phi)):
                raise ValueError(f"features[{i}] contains NaN or inf")
            if Li.shape != (Phi.shape[0],):
                raise ValueError(f"losses[{i}] must have shape ({Phi.shape[0]},), got {Li.shape}")
            if not np.all(np.isfinite(Li)) or np.any(Li < 0):
                raise ValueError(f"losses[{i}] must be finite and >= 0")
            if not 0 <= gt[i] < Phi.shape[0]:
                raise ValueError(f"gt[{i}] = {gt[i]} is outside [0, {Phi.shape[0]})")
            if Li[gt[i]] != 0:
                raise ValueError(f"losses[{i}][gt[{i}]] must be 0, got {Li[gt[i]]}")
            r, c = np.nonzero(Phi)  # row-major order: CSR of this block's label rows
            rows_idx.append(c)
            rows_val.append(Phi[r, c])
            counts = np.bincount(r, minlength=Phi.shape[0])
            rows_indptr.extend((rows_indptr[-1] + np.cumsum(counts)).tolist())
            loss_all.append(Li)
            row_off.append(row_off[-1] + Phi.shape[0])
        self.n = n
        self.d = int(d)
        self.gt = gt
        self.n_labels_per_block = np.diff(row_off)
        self.K = int(self.n_labels_per_block.max())
        self.max_len = 1
        self.label_names = label_names
        row_off = np.asarray(row_off, dtype=np.int64)
        self.arrays = MulticlassArrays(  # the model's own arrays, read-only (see freeze_arrays)
            n, self.d, self.K, row_off, np.arange(n + 1, dtype=np.int64), gt.copy(),
            np.asarray(rows_indptr, dtype=np.int64),
            np.concatenate(rows_idx).astype(np.int64) if rows_idx else _EMPTY_I,
            np.concatenate(rows_val) if rows_val else _EMPTY_F,
            np.concatenate(loss_all),
        )
        self.arrays = _p.freeze_arrays(self.arrays)
        self._features = [np.asarray(f, dtype=np.float64) for f in features]
        self._losses = [np.asarray(x, dtype=np.float64) for x in losses]

    @property
    def stat_sizes(self) -> np.ndarray:
        return np.diff(self.arrays.stat_off)

    def label_len(self, i: int) -> int:
        return 1

    def joint_feature(self, i: int, y) -> np.ndarray:
        y = int(np.asarray(y).ravel()[0])
        return self._features[i][y].copy()

    def loss(self, i: int, y) -> float:
        return float(self._losses[i][int(np.asarray(y).ravel()[0])])

    def ground_truth(self, i: int) -> np.ndarray:
        """The correct label of block i, int64 of shape (1,)."""
        return np.array([self.gt[i]], dtype=np.int64)

    def n_labels(self, i: int) -> int:
        """``|Y_i|``, the number of labels of block i."""
        return int(self.n_labels_per_block[i])

    def max_oracle(self, i: int, w) -> np.ndarray:
        """argmax_y L_i(y) + ⟨w, ψ(x_i, y)⟩ by enumeration (ties: lowest label), shape (1,)."""
        from . import max_oracle
        return max_oracle(self, i, w)[0]

    def decode(self, i: int, w) -> np.ndarray:
        """argmax_y ⟨w, ψ(x_i, y)⟩ by enumeration, int64 of shape (1,)."""
        from . import max_oracle
        return max_oracle(self, i, w, loss_augmented=False)[0]

    def describe_block(self, i: int, y) -> dict:
        y = check_labelling(self, i, y)
        return {"kind": "label", "text": self.describe_label(i, y), "labels": y}

    def predict(self, w: np.ndarray, data=None) -> np.ndarray:
        """argmax_y ⟨w, ψ(x_i, y)⟩ per block (training blocks only), int64 of shape (n,)."""
        if data is not None:
            raise ValueError("MulticlassModel predicts on its own blocks only (data must be None)")
        w = np.asarray(w, dtype=np.float64)
        return np.array([int(np.argmax(F @ w)) for F in self._features], dtype=np.int64)

    def error(self, w: np.ndarray, data=None) -> float:
        return float(np.mean(self.predict(w, data) != self.gt))

    def _subtract_loss(self, i, h):
        """Remove the loss term from a score vector of block i (decoding)."""
        M = self.arrays
        r0, r1 = int(M.stat_off[i]), int(M.stat_off[i + 1])
        h[: r1 - r0] -= M.mc_loss[r0:r1]

    def describe_label(self, i: int, y) -> str:
        y = int(np.asarray(y).ravel()[0])
        return str(self.label_names[y]) if self.label_names is not None else str(y)
