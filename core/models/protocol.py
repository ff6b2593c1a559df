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

__all__ = ["StructuredModel", "REQUIRED", "ModelCheckError", "check_interface", "check_model", "check_labelling",
           "freeze_arrays", "register_arrays_check", "check_arrays", "ArraysError"]

#: What every model must provide (attributes and methods), in the order they are checked.
REQUIRED = ("n", "d", "arrays", "ground_truth", "label_len", "n_labels", "loss", "joint_feature",
            "max_oracle", "decode", "bounds", "describe_block", "predict", "error")


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

    def random_labelling(self, i: int, rng) -> np.ndarray:
        """A labelling of block i drawn at random (for :func:`check_model`), int64 of shape
        (L_i,); default: every entry uniform in [0, n_labels(i)). ``rng``: a numpy Generator."""
        return rng.integers(0, int(self.n_labels(i)), size=int(self.label_len(i))).astype(np.int64)

    def all_labellings(self, i: int, limit: int):
        """Every labelling of block i when there are at most ``limit`` of them (for
        :func:`check_model`), else None; default: all of [0, n_labels(i))^L_i."""
        return _product_labellings(int(self.n_labels(i)), int(self.label_len(i)), limit)

    def predict(self, w, data=None):
        """Plain decoding argmax_y ⟨w, ψ(x, y)⟩ of every example of ``data`` (default: the
        training set)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement predict")

    def error(self, w, data=None) -> float:
        """Mean task loss of :meth:`predict` on ``data`` (default: the training set)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement error")

    def describe_block(self, i: int, y) -> dict:
        """What the app draws for block i and labelling y: a dict with at least ``"text"`` (a
        short string: letters for OCR, chunks for CoNLL) and ``"kind"`` (a name for people; the
        app never branches on it), plus the display contract of :mod:`gaplab.core.models.display`,
        which the app draws without knowing the model:

        * ``"labels"`` (int array (L_i,)) or ``"label_text"`` (L_i strings): one token per
          position, drawn as the rows of the ground truth and the corners (label texts in IOB2,
          ``B-X``/``I-X``/``O``, are drawn as chunks);
        * ``"words"`` (L_i strings) or ``"image"`` (uint8 (L_i, h, w), dark ink on white): the
          input of each position, drawn above the rows;
        * ``"panels"``: pictures of y (:func:`~gaplab.core.models.display.image_panel`), with
          ``"legend"`` (plain text under them) and ``"picker"``
          (:func:`~gaplab.core.models.display.picker`) when the reader can choose what they show;
        * ``"note"``: a short remark on the block (e.g. "hard block").

        A new model with a picture needs no change in the app: it returns panels."""
        return {"kind": "labels", "text": " ".join(str(int(v)) for v in np.asarray(y).ravel())}


def _product_labellings(K: int, L: int, limit: int):
    if K < 1 or K ** L > limit:
        return None
    import itertools
    return [np.array(t, dtype=np.int64) for t in itertools.product(range(K), repeat=L)]


class ModelCheckError(ValueError):
    """A model's primitives, oracles or loss disagree with its own ``joint_feature`` and ``loss``
    (raised by :func:`check_model`, naming the model, the block and the numbers; ``report``: the
    :class:`~gaplab.core.models.check.ModelCheckReport` so far when the max oracle was beaten)."""

    report = None


def check_interface(model) -> None:
    """Raise TypeError naming the model and what it lacks when it does not provide the
    interface of :class:`StructuredModel` (attributes in :data:`REQUIRED`, a known
    ``oracle_tier``). Cheap: the Solver and the problem registry call it on every model."""
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
    :class:`~gaplab.core.models.plain.PythonModel`) is checked by it."""
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


# ============================================================================ the kernels' arrays
# A model's ``arrays`` are read by compiled kernels that do not check bounds: an offset or a size
# that does not match the others makes them read or write outside an array (a crash, or a wrong
# result without a word). So the arrays are read-only once built (freeze_arrays), and the
# offsets and index arrays are checked again when a Solver is built (check_arrays), in O(n + the
# number of stored indices), vectorized: an array unlocked by the user (setflags) or a namedtuple
# replaced by hand is caught there.

class ArraysError(ValueError):
    """A model's ``arrays`` are inconsistent (an offset, size or index the kernels rely on)."""


_ARRAY_CHECKS: dict = {}


def _can_unlock(a: np.ndarray) -> bool:
    """Whether ``a.setflags(write=True)`` would succeed (an array owning its memory, or a view of
    one that is writable or can be unlocked): tried, then undone."""
    if a.flags.writeable:
        return True
    try:
        a.setflags(write=True)
    except ValueError:
        return False
    a.setflags(write=False)
    return True


def locked_array(a: np.ndarray) -> np.ndarray:
    """A read-only copy of ``a`` that nobody can make writable: a view of an immutable ``bytes``
    buffer, so ``setflags(write=True)`` raises ValueError on it (and on its base). An array that
    cannot be unlocked already (a read-only memory map, such a view) is returned as it is."""
    if not _can_unlock(a):
        return a
    out = np.frombuffer(np.ascontiguousarray(a).tobytes(), dtype=a.dtype).reshape(a.shape)
    out.setflags(write=False)
    return out


def freeze_arrays(arrays):
    """A model's ``arrays`` namedtuple with every ndarray field read-only for good
    (:func:`locked_array`): the compiled kernels index with these offsets without bounds checks,
    and a write after a Solver is built would make them read or write outside an array (a crash).
    Returns a new namedtuple (copies of the arrays that could be unlocked); the caller's arrays
    are left as they are."""
    return type(arrays)(*(locked_array(a) if isinstance(a, np.ndarray) else a for a in arrays))


def register_arrays_check(arrays_cls, check) -> None:
    """Register ``check(M, fail)`` for a model kind's arrays namedtuple class: it raises through
    ``fail(message)`` when a kind-specific offset, size or index is inconsistent. Called by
    :func:`check_arrays` after the checks every kind shares."""
    _ARRAY_CHECKS[arrays_cls] = check


def _int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def offsets(M, field, size, fail, *, total=None):
    """Check that ``M.<field>`` is an int64 array of shape (size,) starting at 0 and
    non-decreasing (ending at ``total`` when given); return it."""
    a = getattr(M, field)
    if not isinstance(a, np.ndarray) or a.dtype != np.int64 or a.shape != (size,):
        fail(f"{field} must be an int64 array of shape ({size},), got "
             f"{getattr(a, 'dtype', type(a).__name__)} {getattr(a, 'shape', '')}")
    if size and a[0] != 0:
        fail(f"{field}[0] must be 0, got {int(a[0])}")
    if size > 1:
        dec = np.flatnonzero(a[1:] < a[:-1])
        if dec.size:
            j = int(dec[0])
            fail(f"{field} must be non-decreasing, got {field}[{j + 1}] = {int(a[j + 1])} < "
                 f"{field}[{j}] = {int(a[j])}")
    if total is not None and size and a[-1] != total:
        fail(f"{field}[-1] must be {total}, got {int(a[-1])}")
    return a


def array(M, field, fail, *, dtype=None, shape=None, lo=None, hi=None):
    """Check dtype, shape and (for index arrays) that every entry lies in [lo, hi); return it.
    ``hi`` may be an array of per-entry bounds."""
    a = getattr(M, field)
    if not isinstance(a, np.ndarray):
        fail(f"{field} must be an ndarray, got {type(a).__name__}")
    if dtype is not None and a.dtype != dtype:
        fail(f"{field} must have dtype {np.dtype(dtype)}, got {a.dtype}")
    if shape is not None and a.shape != tuple(shape):
        fail(f"{field} must have shape {tuple(shape)}, got {a.shape}")
    if a.size and lo is not None and a.min() < lo:
        fail(f"{field} has an entry {a.min()} below {lo}")
    if a.size and hi is not None:
        bad = np.flatnonzero((a >= hi).ravel())
        if bad.size:
            j = int(bad[0])
            bound = hi if np.ndim(hi) == 0 else np.broadcast_to(hi, a.shape).ravel()[j]
            fail(f"{field}[{j}] = {a.ravel()[j]} is not below {bound}")
    return a


def check_arrays(model) -> None:
    """Check the offsets, sizes and index arrays of ``model.arrays`` that the compiled kernels
    index with (cheap: O(n + stored indices), vectorized).

    Raises
    ------
    ArraysError (a ValueError)
        Naming the model, the field and what is wrong (e.g. ``stat_off`` changed after the
        model was built).
    """
    M = model.arrays
    name = getattr(model, "name", None) or type(model).__name__

    def fail(msg):
        raise ArraysError(f"model {name!r}: its arrays are inconsistent: {msg} (a model's arrays must "
                          "not be changed after it is built; build a new model instead)")

    for f in ("n", "d", "K"):
        v = getattr(M, f)
        if not _int(v) or v < 1:
            fail(f"{f} must be an int >= 1, got {v!r}")
    n = int(M.n)
    stat_off = offsets(M, "stat_off", n + 1, fail)
    lab_off = offsets(M, "lab_off", n + 1, fail)
    if n and (np.diff(stat_off).min() < 1 or np.diff(lab_off).min() < 1):
        fail("every block needs at least one statistic and one label (stat_off and lab_off strictly increasing)")
    array(M, "gt", fail, dtype=np.int64, shape=(int(lab_off[-1]),))
    check = _ARRAY_CHECKS.get(type(M))
    if check is not None:
        check(M, fail)


from .check import check_model  # noqa: E402  (check.py builds on this module's contract)
