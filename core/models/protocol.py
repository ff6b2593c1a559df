"""The structured model interface every solver, the reference solver and the app work on.

A structured SVM model (Paper: Sec. 2, Eq. (1)-(3)) is a training set of n examples (the dual
blocks), a joint feature map ψ(x_i, y) ∈ R^d, a task loss L_i(y) >= 0 with L_i(y_i) = 0 and a
max oracle (loss-augmented decoding) argmax_y L_i(y) + ⟨w, ψ(x_i, y)⟩ (Paper: Eq. (2)).

A labelling y of block i is an int64 array of shape (L_i,) (``label_len(i)``): one label per
token of a chain, a single entry for a multiclass example, one label per superpixel for a
segmentation. Each entry lies in [0, ``n_labels(i)``).

Two oracle tiers run on the one :class:`~gaplab.core.Solver`:

* **compiled** (``oracle_tier = "compiled"``): the model's ``arrays`` is a namedtuple registered
  with :func:`gaplab.core.kernels.register_model_kind` together with numba primitives (scores,
  max oracle, label dot/add, loss, ‖B δ‖², axpy). The whole block step runs in one compiled
  loop (chain: Viterbi; multiclass: enumeration).
* **python** (``oracle_tier = "python"``): as above, but the max oracle is the Python method
  :meth:`StructuredModel.max_oracle` (any callable: PyMaxflow's graph cut, a hand-written
  Viterbi). The solver calls it between compiled pre-step and post-step kernels.

Paper: Eq. (1)-(3) (the SSVM and its dual), App. H (box constraints through ``bounds``).
"""
from __future__ import annotations

import abc

import numpy as np

__all__ = ["StructuredModel", "REQUIRED", "check_model", "check_labelling"]

#: What every model must provide (attributes and methods), in the order they are checked.
REQUIRED = ("n", "d", "arrays", "ground_truth", "label_len", "n_labels", "loss", "joint_feature",
            "max_oracle", "decode", "bounds", "describe_block")


class StructuredModel(abc.ABC):
    """Abstract structured SVM model: one dual block per training example.

    Attributes
    ----------
    n : int
        Number of training examples (dual blocks).
    d : int
        Dimension of w and of ψ(x_i, y).
    arrays : namedtuple
        The flat arrays the numba kernels read, of a kind registered with
        :func:`gaplab.core.kernels.register_model_kind` (statistics offsets, label offsets, ...).
    oracle_tier : str
        ``"compiled"`` (the kernels call the registered numba oracle) or ``"python"`` (the solver
        calls :meth:`max_oracle` from Python between compiled pre/post step kernels).
    name : str
        Short name shown in the app and in errors.
    """

    oracle_tier = "compiled"
    name = "model"

    n: int
    d: int

    @abc.abstractmethod
    def ground_truth(self, i: int) -> np.ndarray:
        """The correct labelling y_i of block i, int64 of shape (L_i,)."""

    @abc.abstractmethod
    def label_len(self, i: int) -> int:
        """L_i, the length of a labelling of block i."""

    @abc.abstractmethod
    def n_labels(self, i: int) -> int:
        """Number of labels each entry of a labelling of block i may take."""

    @abc.abstractmethod
    def loss(self, i: int, y) -> float:
        """Task loss L_i(y) >= 0, with L_i(y_i) = 0 (Paper: Eq. (1))."""

    @abc.abstractmethod
    def joint_feature(self, i: int, y) -> np.ndarray:
        """Dense ψ(x_i, y), float64 of shape (d,) (O(d): for tests, the reference solver and
        display; the kernels never call it)."""

    @abc.abstractmethod
    def max_oracle(self, i: int, w) -> np.ndarray:
        """Loss-augmented decoding argmax_y L_i(y) + ⟨w, ψ(x_i, y)⟩ (Paper: Eq. (2)); w is
        float64 of shape (d,); returns the labelling, int64 of shape (L_i,)."""

    @abc.abstractmethod
    def decode(self, i: int, w) -> np.ndarray:
        """Prediction argmax_y ⟨w, ψ(x_i, y)⟩ for training example i, int64 of shape (L_i,)."""

    def bounds(self):
        """Box constraints on w that the model needs (Paper: App. H), as (lb, ub) float64 arrays
        of shape (d,), or None. Segmentation: w_pairwise >= 0 keeps the graph cut submodular."""
        return None

    def describe_block(self, i: int, y) -> dict:
        """What the app draws for block i and labelling y: a dict with at least ``"text"`` (a
        short string: letters for OCR, chunks for CoNLL) and ``"kind"`` (``"sequence"``,
        ``"label"``, ``"mask"``, ...), plus model-specific entries (an image, a mask)."""
        return {"kind": "labels", "text": " ".join(str(int(v)) for v in np.asarray(y).ravel())}


def check_model(model) -> None:
    """Raise TypeError naming the model and what it lacks when it does not provide the
    interface of :class:`StructuredModel` (attributes in :data:`REQUIRED`, a known
    ``oracle_tier``)."""
    name = getattr(model, "name", None) or type(model).__name__
    missing = [a for a in REQUIRED if not hasattr(model, a)]
    if missing:
        raise TypeError(f"model {name!r} ({type(model).__name__}) does not provide the StructuredModel "
                        f"interface: missing {', '.join(missing)}")
    not_callable = [a for a in REQUIRED[2:] if a != "arrays" and not callable(getattr(model, a))]
    if not_callable:
        raise TypeError(f"model {name!r}: {', '.join(not_callable)} must be methods")
    tier = getattr(model, "oracle_tier", "compiled")
    if tier not in ("compiled", "python"):
        raise ValueError(f"model {name!r}: oracle_tier must be 'compiled' or 'python', got {tier!r}")


def check_labelling(model, i: int, y, what: str = "labelling") -> np.ndarray:
    """Validate a labelling of block i (from an oracle or a user): an integer array of shape
    (L_i,) with entries in [0, n_labels(i)). Returns it as a contiguous int64 array; raises
    TypeError / ValueError naming the model, the block and what was received. A model with its
    own ``check_labelling(i, y, what)`` method (the encoded labellings of
    :class:`~gaplab.core.models.dense.PythonModel`) is checked by it."""
    own = getattr(type(model), "check_labelling", None)
    if callable(own):
        return model.check_labelling(i, y, what)
    name = getattr(model, "name", None) or type(model).__name__
    arr = np.asarray(y)
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "b"):
        raise TypeError(f"model {name!r}, block {i}: the {what} must be an integer array, got dtype {arr.dtype}")
    L = int(model.label_len(i))
    if arr.shape != (L,):
        raise ValueError(f"model {name!r}, block {i}: the {what} must have shape ({L},), got {arr.shape}")
    K = int(model.n_labels(i))
    if L and (arr.min() < 0 or arr.max() >= K):
        bad = int(arr[(arr < 0) | (arr >= K)][0])
        raise ValueError(f"model {name!r}, block {i}: the {what} has label {bad} outside [0, {K})")
    return np.ascontiguousarray(arr, dtype=np.int64)
