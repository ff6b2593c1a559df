"""numba kernels of the solver core: the model-kind registry, atoms (active set and cache),
samplers, the block step of every kind as named phases, exact gap passes and the batch FW step.

Representation (see DESIGN.md, Paper App. G): a block's dual point α_i only enters w through its
*statistics* μ_i = Σ_y α_i(y) m(y), where m(y) is the statistics of a labelling y chosen by the
model (for a chain: one-hot node marginals (T, K) and transition counts (K, K); for the
multiclass model: the one-hot vector of the label). The joint feature map is linear in them,
ψ(x_i, y) = B_i m(y), so

    w = (1/(λn)) Σ_i B_i (m(y_i) − μ_i),        ℓ_i = (1/n) Σ_y α_i(y) L_i(y),

and every quantity of a block step is a cheap function of a "score vector" h_i(w) in statistics
space (⟨m(y), h_i⟩ = ⟨w, ψ(x_i, y)⟩ + L_i(y)), of ‖B_i δ‖² and of an axpy w += c B_i δ.

Models. Each model kind is a namedtuple of arrays plus numba primitives over it, registered
with :func:`register_model_kind` (see ``core/models/chain.py``, ``core/models/multiclass.py``).
The shared code below calls the primitives through compile-time dispatch on the namedtuple's
class (``numba.extending.overload``): every model kind gets its own specialization of the
driver, with no runtime branch on a model kind. The primitives a kind provides:

=================  ==========================================================================
``scores``         h[:p_i] ← loss-augmented scores of block i at w (required)
``label_dot``      ⟨m(y), vec⟩ (required)
``label_add``      vec += c·m(y) (required)
``label_loss``     L_i(y) (required)
``gt_label``       y ← y_i (required)
``sqnorm``         ‖B_i δ‖² (required)
``axpy``           v += c·B_i δ, w = clip(v) on touched coordinates with a box (required)
``oracle``         y ← argmax ⟨m(y), h⟩, returns the max (compiled oracle tier only)
``label_dot_at``   ⟨m(y), vec⟩ with y read in place from an atom pool (optional, speed)
``prefetch_block`` software prefetch of a drawn block's data (optional, speed)
``scores_cached``  scores of only the entries cached labellings use (optional, cache hits)
``atom_value``     ⟨m(y), h⟩ of a cached atom for label-space steps (optional; with the three
``pair_sqnorm``    below, a model gets pairwise steps that work on the two labellings
``pair_apply``     themselves instead of dense statistics directions)
``pair_prefetch``
=================  ==========================================================================

Each primitive, the compiled ``oracle`` included, is compiled once per model kind (and argument
types) without reference counting (numba's ``_nrt=False``) and called from every driver (the
fused step loop, itself compiled without reference counting (:func:`_run_steps_nrt_free`), the
exact gap passes, the pre/post-step kernels, the state and path kernels); LLVM inlines the small
ones. A primitive must not allocate arrays nor return one, and neither may the ``@njit``
functions it calls: numba compiles a callee first reached from a function without reference
counting without it too (an allocation then fails to compile, or leaks if the callee was
compiled elsewhere first). Options written on a primitive's own ``@njit`` (``fastmath``, ...)
are not used: the primitive is compiled from its Python function; put such code in a helper.

All state lives in plain arrays (see gaplab.core.state).
"""
from __future__ import annotations

import inspect
import threading
import warnings
from collections import namedtuple

import numba
import numpy as np
from numba import njit, prange, uint64
from numba.core.errors import NumbaIRAssumptionWarning, TypingError
from numba.extending import overload

from ._prefetch import prefetch
from .config import Sampling, StepKind
from .rng import rng_randint, rng_uniform

# Inlining the phases (njit inline="always") trips numba's pedantic SSA check on loop
# accumulators ("variable ... is not in scope"); the traces are checked bitwise against the
# pre-inlining kernels (scripts/trace_fingerprint.py).
warnings.filterwarnings("ignore", category=NumbaIRAssumptionWarning)

# ============================================================================ model-kind registry

#: primitives every model kind provides
REQUIRED_PRIMITIVES = ("scores", "label_dot", "label_add", "label_loss", "gt_label", "sqnorm", "axpy")
#: optional primitives (compiled oracle; speed-ups; label-space pairwise steps)
OPTIONAL_PRIMITIVES = ("oracle", "label_dot_at", "prefetch_block", "scores_cached", "atom_value", "pair_sqnorm",
                       "pair_apply", "pair_prefetch")
_LABEL_SPACE = ("atom_value", "pair_sqnorm", "pair_apply", "pair_prefetch")
#: fields every model kind's arrays namedtuple has
REQUIRED_FIELDS = ("n", "d", "K", "stat_off", "lab_off", "gt")

_KINDS: dict = {}

#: argument names of each primitive
_SIGNATURES = {
    "scores": ("M", "i", "w", "h"),
    "oracle": ("M", "i", "h", "y", "vit_f", "vit_i"),
    "label_dot": ("M", "i", "y", "vec"),
    "label_dot_at": ("M", "i", "lab", "b", "vec"),
    "label_add": ("M", "i", "y", "coef", "vec"),
    "label_loss": ("M", "i", "y"),
    "gt_label": ("M", "i", "y"),
    "sqnorm": ("M", "i", "dlt", "zbuf"),
    "axpy": ("M", "i", "coef", "dlt", "v", "w", "lb", "ub", "has_box"),
    "prefetch_block": ("M", "i", "sparse"),
    "scores_cached": ("M", "i", "w", "h", "mark", "a_lab", "lab0", "cnt", "L", "cap", "mu", "dense", "klist"),
    "atom_value": ("M", "i", "h", "w", "a_lab", "b", "L"),
    "pair_sqnorm": ("M", "i", "ys", "yv", "pos"),
    "pair_apply": ("M", "i", "ys", "yv", "gam", "mu", "coef", "v", "w", "lb", "ub", "has_box", "pos"),
    "pair_prefetch": ("M", "mu", "ys", "yv", "L"),
}


def register_model_kind(arrays_cls, name: str, **primitives) -> None:
    """Register a model kind: its arrays namedtuple class and its numba primitives.

    Parameters
    ----------
    arrays_cls : namedtuple class
        Its fields include :data:`REQUIRED_FIELDS`: ``n``, ``d``, ``K`` (ints; K sizes the
        oracle's scratch, ``max label length × K``), ``stat_off`` and ``lab_off`` (int64 (n+1):
        offsets of each block's statistics and labelling), ``gt`` (int64, the ground-truth
        labels at ``lab_off``).
    name : str
        Shown in errors.
    **primitives : numba dispatchers
        The required ones (:data:`REQUIRED_PRIMITIVES`) and any optional ones
        (:data:`OPTIONAL_PRIMITIVES`; the four label-space primitives come together). Signatures
        as in ``core/models/chain.py``.

    Raises
    ------
    TypeError, ValueError
        A missing field or primitive, an unknown primitive name, an incomplete label-space set.
    """
    fields = getattr(arrays_cls, "_fields", None)
    if fields is None:
        raise TypeError(f"model kind {name!r}: arrays_cls must be a namedtuple class, got {arrays_cls!r}")
    missing = [f for f in REQUIRED_FIELDS if f not in fields]
    if missing:
        raise ValueError(f"model kind {name!r}: arrays {arrays_cls.__name__} lacks the fields {missing}")
    missing = [p for p in REQUIRED_PRIMITIVES if p not in primitives]
    if missing:
        raise ValueError(f"model kind {name!r}: missing primitives {missing}")
    unknown = [p for p in primitives if p not in REQUIRED_PRIMITIVES + OPTIONAL_PRIMITIVES]
    if unknown:
        raise ValueError(f"model kind {name!r}: unknown primitives {unknown}; known: "
                         f"{REQUIRED_PRIMITIVES + OPTIONAL_PRIMITIVES}")
    for pname, f in primitives.items():
        want = _SIGNATURES[pname]
        py = getattr(f, "py_func", None)
        if py is None:
            raise TypeError(f"model kind {name!r}: primitive {pname!r} must be a numba @njit function")
        got = tuple(inspect.signature(py).parameters)
        if got != want:
            raise ValueError(f"model kind {name!r}: primitive {pname!r} must take the arguments {want} "
                             f"(names too: it is the overload of a stub with these names), got {got}")
    ls = [p for p in _LABEL_SPACE if p in primitives]
    if ls and len(ls) != len(_LABEL_SPACE):
        raise ValueError(f"model kind {name!r}: label-space steps need all of {_LABEL_SPACE}, got {ls}")
    _KINDS[arrays_cls] = dict(primitives, __name__=name)
    _drop_stale_driver_caches(name, primitives)


def _drop_stale_driver_caches(name, primitives) -> None:
    """numba keys the on-disk cache of a compiled function by its own source file only. The
    drivers here (and the kernels of state.py and regpath.py, in the same folder) link the
    model's primitives into their machine code, so after a model's module changes their cached
    machine code is stale. A stamp of the model's source files is kept next to the cache; when
    it changes, the cached drivers are dropped (they recompile on next use)."""
    import hashlib
    import os
    h = hashlib.sha256()
    for f in sorted({inspect.getsourcefile(p.py_func) for p in primitives.values()}):
        try:
            with open(f, "rb") as fh:
                h.update(fh.read())
        except OSError:
            return
    digest = h.hexdigest()
    try:
        cache_dir = _run_steps_nrt_free._cache._cache_path
        stamp = os.path.join(cache_dir, f"gaplab-model-{name}.sha256")
        if os.path.exists(stamp):
            with open(stamp) as fh:
                if fh.read().strip() == digest:
                    return
        if os.path.isdir(cache_dir):
            for fn in os.listdir(cache_dir):
                if fn.startswith(("kernels.", "state.", "regpath.")) and fn.endswith((".nbi", ".nbc")):
                    try:
                        os.remove(os.path.join(cache_dir, fn))
                    except OSError:
                        pass
        os.makedirs(cache_dir, exist_ok=True)
        tmp = f"{stamp}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(digest)
        os.replace(tmp, stamp)
    except (OSError, AttributeError):  # a read-only install or no cache: nothing is cached to go stale
        pass


def model_kind_name(arrays) -> str:
    """The registered name of a model's arrays (TypeError when the kind is not registered)."""
    prims = _KINDS.get(type(arrays))
    if prims is None:
        raise TypeError(f"{type(arrays).__name__} is not a registered model kind (see register_model_kind)")
    return prims["__name__"]


class primitive_errors:
    """Context manager around a first call that compiles a model kind's primitives: a numba
    compile error that came through a primitive gets a note (Python >= 3.11) naming the model
    kind and the rule its primitives break most often (they are compiled without reference
    counting, so neither they nor the @njit functions they reach may allocate arrays)."""

    def __init__(self, M):
        self.M = M

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and isinstance(exc, numba.core.errors.NumbaError) and "_m_" in str(exc) \
                and hasattr(exc, "add_note"):
            name = _KINDS.get(type(self.M), {}).get("__name__", type(self.M).__name__)
            exc.add_note(f"gaplab: a primitive of model kind {name!r} failed to compile (see the stub "
                         "_m_<primitive> above). Primitives, and the @njit functions they call, are compiled "
                         "without reference counting: they must not allocate arrays (np.empty, np.zeros, "
                         "copies, array expressions) nor return arrays; use the work vectors they are given "
                         "(zbuf, vit_f, vit_i) or arrays kept in the model's namedtuple. See README, "
                         "'Adding a model'.")
        return False


def has_compiled_oracle(arrays) -> bool:
    """Whether the model kind of ``arrays`` has a numba max oracle."""
    return "oracle" in _KINDS.get(type(arrays), {})


def _prims(M):
    cls = getattr(M, "instance_class", None)
    prims = _KINDS.get(cls)
    if prims is None:
        raise TypingError(f"{M} is not a registered model kind (see gaplab.core.kernels.register_model_kind)")
    return prims


def _prim(M, name):
    prims = _prims(M)
    f = prims.get(name)
    if f is None:
        raise TypingError(f"model kind {prims['__name__']!r} has no {name!r} primitive")
    return f


# Compile-time dispatch: each stub below resolves, for the namedtuple class of M, to that kind's
# primitive, compiled once per argument types with _nrt=False (no reference counting: a
# primitive allocates nothing) and called; LLVM inlines the small ones. IR-inlining them at every
# call site (overload inline="always") took half of a cold compile (62.9 s -> 31.8 s for a chain
# run; same machine code speed, ab_step 0.93-1.02x; traces bitwise equal). The stubs are only
# callable from compiled code; the njit functions of the next section are their Python-callable
# forms.

#: numba options of the compiled primitives
_PRIM_JIT = {"_nrt": False, "nogil": True}


def _m_scores(M, i, w, h):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return _KINDS[type(M)]["scores"](M, i, w, h)


@overload(_m_scores, jit_options=_PRIM_JIT)
def _ov_scores(M, i, w, h):
    f = _prim(M, "scores")
    return f.py_func


def _m_oracle(M, i, h, y, vit_f, vit_i):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return _KINDS[type(M)]["oracle"](M, i, h, y, vit_f, vit_i)


@overload(_m_oracle, jit_options=_PRIM_JIT)
def _ov_oracle(M, i, h, y, vit_f, vit_i):
    f = _prims(M).get("oracle")
    if f is None:
        def no_oracle(M, i, h, y, vit_f, vit_i):
            if i >= 0:  # (a branch, so the function still types as returning a float)
                raise RuntimeError("this model kind has no compiled max oracle (oracle_tier='python')")
            return 0.0
        return no_oracle
    return f.py_func


def _m_label_dot(M, i, y, vec):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return _KINDS[type(M)]["label_dot"](M, i, y, vec)


@overload(_m_label_dot, jit_options=_PRIM_JIT)
def _ov_label_dot(M, i, y, vec):
    f = _prim(M, "label_dot")
    return f.py_func


def _m_label_dot_at(M, i, lab, b, vec):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    f = _KINDS[type(M)].get("label_dot_at")
    if f is None:
        return _KINDS[type(M)]["label_dot"](M, i, lab[b:b + M.lab_off[i + 1] - M.lab_off[i]], vec)
    return f(M, i, lab, b, vec)


@overload(_m_label_dot_at, jit_options=_PRIM_JIT)
def _ov_label_dot_at(M, i, lab, b, vec):
    f = _prims(M).get("label_dot_at")
    if f is None:
        g = _prim(M, "label_dot")

        def by_slice(M, i, lab, b, vec):
            return g(M, i, lab[b:b + M.lab_off[i + 1] - M.lab_off[i]], vec)
        return by_slice
    return f.py_func


def _m_label_add(M, i, y, coef, vec):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return _KINDS[type(M)]["label_add"](M, i, y, coef, vec)


@overload(_m_label_add, jit_options=_PRIM_JIT)
def _ov_label_add(M, i, y, coef, vec):
    f = _prim(M, "label_add")
    return f.py_func


def _m_label_loss(M, i, y):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return _KINDS[type(M)]["label_loss"](M, i, y)


@overload(_m_label_loss, jit_options=_PRIM_JIT)
def _ov_label_loss(M, i, y):
    f = _prim(M, "label_loss")
    return f.py_func


def _m_gt_label(M, i, y):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return _KINDS[type(M)]["gt_label"](M, i, y)


@overload(_m_gt_label, jit_options=_PRIM_JIT)
def _ov_gt_label(M, i, y):
    f = _prim(M, "gt_label")
    return f.py_func


def _m_sqnorm(M, i, dlt, zbuf):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return _KINDS[type(M)]["sqnorm"](M, i, dlt, zbuf)


@overload(_m_sqnorm, jit_options=_PRIM_JIT)
def _ov_sqnorm(M, i, dlt, zbuf):
    f = _prim(M, "sqnorm")
    return f.py_func


def _m_axpy(M, i, coef, dlt, v, w, lb, ub, has_box):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return _KINDS[type(M)]["axpy"](M, i, coef, dlt, v, w, lb, ub, has_box)


@overload(_m_axpy, jit_options=_PRIM_JIT)
def _ov_axpy(M, i, coef, dlt, v, w, lb, ub, has_box):
    f = _prim(M, "axpy")
    return f.py_func


def _m_prefetch_block(M, i, sparse):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return None  # a hint only


@overload(_m_prefetch_block, jit_options=_PRIM_JIT)
def _ov_prefetch_block(M, i, sparse):
    f = _prims(M).get("prefetch_block")
    if f is None:
        return lambda M, i, sparse: None
    return f.py_func


def _m_has_partial(M):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return "scores_cached" in _KINDS[type(M)]


@overload(_m_has_partial, jit_options=_PRIM_JIT)
def _ov_has_partial(M):
    if "scores_cached" in _prims(M):
        return lambda M: True
    return lambda M: False


def _m_label_space(M):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return "pair_apply" in _KINDS[type(M)]


@overload(_m_label_space, jit_options=_PRIM_JIT)
def _ov_label_space(M):
    if "pair_apply" in _prims(M):
        return lambda M: True
    return lambda M: False


def _m_scores_cached(M, i, w, h, mark, a_lab, lab0, cnt, L, cap, mu, dense, klist):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return _KINDS[type(M)]["scores_cached"](M, i, w, h, mark, a_lab, lab0, cnt, L, cap, mu, dense, klist)


@overload(_m_scores_cached, jit_options=_PRIM_JIT)
def _ov_scores_cached(M, i, w, h, mark, a_lab, lab0, cnt, L, cap, mu, dense, klist):
    f = _prims(M).get("scores_cached")
    if f is None:
        def impl(M, i, w, h, mark, a_lab, lab0, cnt, L, cap, mu, dense, klist):
            raise RuntimeError("no partial scoring for this model kind")
        return impl
    return f.py_func


def _m_atom_value(M, i, h, w, a_lab, b, L):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return _KINDS[type(M)]["atom_value"](M, i, h, w, a_lab, b, L)


@overload(_m_atom_value, jit_options=_PRIM_JIT)
def _ov_atom_value(M, i, h, w, a_lab, b, L):
    f = _prims(M).get("atom_value")
    if f is None:
        def impl(M, i, h, w, a_lab, b, L):
            if L >= 0:  # (a branch, so the function still types as returning a float)
                raise RuntimeError("no label-space steps for this model kind")
            return 0.0
        return impl
    return f.py_func


def _m_pair_sqnorm(M, i, ys, yv, pos):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return _KINDS[type(M)]["pair_sqnorm"](M, i, ys, yv, pos)


@overload(_m_pair_sqnorm, jit_options=_PRIM_JIT)
def _ov_pair_sqnorm(M, i, ys, yv, pos):
    f = _prims(M).get("pair_sqnorm")
    if f is None:
        def impl(M, i, ys, yv, pos):
            if pos.shape[0] >= 0:  # (a branch, so the function still types as returning a float)
                raise RuntimeError("no label-space steps for this model kind")
            return 0.0
        return impl
    return f.py_func


def _m_pair_apply(M, i, ys, yv, gam, mu, coef, v, w, lb, ub, has_box, pos):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return _KINDS[type(M)]["pair_apply"](M, i, ys, yv, gam, mu, coef, v, w, lb, ub, has_box, pos)


@overload(_m_pair_apply, jit_options=_PRIM_JIT)
def _ov_pair_apply(M, i, ys, yv, gam, mu, coef, v, w, lb, ub, has_box, pos):
    f = _prims(M).get("pair_apply")
    if f is None:
        def impl(M, i, ys, yv, gam, mu, coef, v, w, lb, ub, has_box, pos):
            raise RuntimeError("no label-space steps for this model kind")
        return impl
    return f.py_func


def _m_pair_prefetch(M, mu, ys, yv, L):
    """Python form (NUMBA_DISABLE_JIT=1); compiled code resolves it by the overload below."""
    return None  # a hint only


@overload(_m_pair_prefetch, jit_options=_PRIM_JIT)
def _ov_pair_prefetch(M, mu, ys, yv, L):
    f = _prims(M).get("pair_prefetch")
    if f is None:
        return lambda M, mu, ys, yv, L: None
    return f.py_func


# ----------------------------------------------------------------------------- model access
# Python-callable (and compiled-callable) forms of the primitives, for the model classes, the
# regularization path, the tests and the app.


@njit(cache=True, nogil=True)
def block_scores(M, i, w, h):
    """Fill h[:p_i] with the loss-augmented score vector of block i in statistics space:
    ⟨m(y), h⟩ = ⟨w, ψ(x_i, y)⟩ + L_i(y) for every labelling y."""
    _m_scores(M, i, w, h)


@njit(cache=True, nogil=True)
def block_oracle(M, i, h, y, vit_f, vit_i):
    """Max oracle on block i: y ← argmax_y ⟨m(y), h⟩ (loss-augmented decoding when h holds the
    loss); returns the maximum (Paper: Eq. (2)). Compiled oracle tier only."""
    return _m_oracle(M, i, h, y, vit_f, vit_i)


@njit(cache=True, nogil=True, inline="always")
def label_dot(M, i, y, vec):
    """⟨m(y), vec⟩ for a labelling y of block i (y: int array of the block's label length)."""
    return _m_label_dot(M, i, y, vec)


@njit(cache=True, nogil=True, inline="always")
def label_add(M, i, y, coef, vec):
    """vec += coef · m(y)."""
    _m_label_add(M, i, y, coef, vec)


@njit(cache=True, nogil=True, inline="always")
def label_loss(M, i, y):
    """Task loss L_i(y)."""
    return _m_label_loss(M, i, y)


@njit(cache=True, nogil=True, inline="always")
def gt_label(M, i, y):
    """Copy the ground-truth labelling of block i into y."""
    _m_gt_label(M, i, y)


@njit(cache=True, nogil=True, inline="always")
def block_sqnorm(M, i, dlt, zbuf):
    """‖B_i δ‖² for a statistics direction δ of block i (zbuf: a zero work vector of size d,
    left zero)."""
    return _m_sqnorm(M, i, dlt, zbuf)


@njit(cache=True, nogil=True, inline="always")
def block_axpy(M, i, coef, dlt, v, w, lb, ub, has_box):
    """v += coef · B_i δ, and w = clip(v, lb, ub) on the touched coordinates when has_box
    (without a box, w and v are the same array)."""
    _m_axpy(M, i, coef, dlt, v, w, lb, ub, has_box)


@njit(cache=True, nogil=True)
def block_stat_size(M, i):
    return M.stat_off[i + 1] - M.stat_off[i]


@njit(cache=True, nogil=True)
def block_lab_len(M, i):
    return M.lab_off[i + 1] - M.lab_off[i]


@njit(cache=True, nogil=True, inline="always")
def _clip(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@njit(cache=True, nogil=True, inline="always")
def atom_dot(M, S, i, s, vec):
    """⟨m(y), vec⟩ for the labelling y of atom slot s of block i, read in place."""
    return _m_label_dot_at(M, i, S.a_lab, atom_base(M, S, i, s), vec)


# ----------------------------------------------------------------------------- state layout
# counters (int64)
C_ITER = 0          # block steps done (iterations k)
C_ORACLE = 1        # max-oracle calls, gap passes included
C_HIT = 2           # cache hits
C_FW = 3            # FW steps
C_AWAY = 4          # away steps
C_PAIR = 5          # pairwise steps
C_DROP = 6          # drop steps (an away corner's mass reached 0)
C_GAPPASS = 7       # exact gap passes done
C_PERM_POS = 8      # position in the current permutation (permutation sampler)
C_UNVISITED = 9     # number of blocks whose gap was never computed
C_LOG_POS = 10      # number of step records written to the ring log
C_GROW = 11         # 1 when a block's atom pool is full and must grow before the next step
C_LAST_CHECK = 12   # iteration k_0 of the last exact gap pass (-1: none)
C_PURGE = 13        # atoms purged for α <= drop_tol
C_STEP_ORACLE = 14  # oracle calls made by block steps
C_BATCH = 15        # batch FW steps taken
C_DIAG_ORACLE = 16  # diagnostic oracle calls (app: gap after a step), not counted as work
C_SAMPLER_ORACLE = 17  # oracle calls of the idealized exact-gap sampler (reported separately)
N_COUNTERS = 24

# scalars (float64)
S_ELL = 0           # ℓ = Σ ℓ_i
S_GLOBAL_GAP = 1    # g^(k_0): exact duality gap of the last gap pass (inf before any)
S_LAST_PRIMAL = 2   # primal objective at the last gap pass
S_GAP_REF = 3       # gap sampling with p != 1: leaf weights are (g_i / S_GAP_REF)^p (no under/overflow)
N_SCALARS = 8

# int config
I_SAMPLING = 0
I_STEP = 1
I_CACHE = 2
I_CACHE_SIZE = 3
I_TRACK = 4
I_BOX = 5
N_CFG_I = 8
# float config
F_LAM = 0
F_P = 1
F_CACHE_F = 2
F_CACHE_NU = 3
F_DROP_TOL = 4
N_CFG_F = 8

# sampling / step codes: the values of the config enums (named once, in gaplab.core.config)
SAMPLE_UNIFORM = int(Sampling.UNIFORM)
SAMPLE_PERM = int(Sampling.PERMUTATION)
SAMPLE_GAP = int(Sampling.GAP)
SAMPLE_MAXGAP = int(Sampling.MAXGAP)
SAMPLE_WEIGHTS = int(Sampling.WEIGHTS)
SAMPLE_EXACT_GAP = int(Sampling.EXACT_GAP)
STEP_FW = int(StepKind.FW)
STEP_PAIRWISE = int(StepKind.PAIRWISE)
STEP_AWAY = int(StepKind.AWAY)
STEP_COMBINED = int(StepKind.COMBINED)
# step record kinds
KIND_FW, KIND_AWAY, KIND_PAIRWISE, KIND_NONE = 0, 1, 2, 3
FLAG_HIT, FLAG_DROP, FLAG_ORACLE = 1, 2, 4

# log columns (float64 ring log, one row per step)
L_ITER, L_BLOCK, L_KIND, L_FLAGS, L_GAMMA, L_GAMMA_MAX, L_GAP, L_CORNER_GAP, L_IMPROVE, L_ACTIVE = range(10)
N_LOG = 10

StateArrays = namedtuple(
    "StateArrays",
    [
        "w", "v", "lb", "ub",      # primal w = clip(v) (w is v when there is no box)
        "mu", "ell",               # block statistics and block losses ℓ_i
        "gap_est", "gap_iter", "gap_exact",
        "tree", "unv", "unv_pos", "perm", "rng",
        "counters", "scalars",
        "a_lab", "a_alpha", "a_loss", "a_hash", "a_used", "a_count",
        "h", "dlt", "tmp", "ybuf", "yaway", "vit_f", "vit_i", "zbuf",
        "log", "last_fw", "last_away", "batch_lab",
        "weights",                 # fixed sampling weights (curvature / Lipschitz samplers)
        "mark",                    # int8 work mask over a block's statistics (cache-hit scoring)
        "step_i", "step_f",        # a step's locals between the pre- and post-oracle kernels (Python oracle tier)
    ],
)

# ============================================================================ atoms (active set and cache)


@njit(cache=True, nogil=True, inline="always")
def label_hash(y, L):
    hsh = uint64(1469598103934665603)
    for t in range(L):
        hsh ^= uint64(y[t] + 1)
        hsh *= uint64(1099511628211)
    return hsh


@njit(cache=True, nogil=True, inline="always")
def atom_base(M, S, i, s):
    cap = S.a_alpha.shape[1]
    L = M.lab_off[i + 1] - M.lab_off[i]
    return M.lab_off[i] * cap + s * L


@njit(cache=True, nogil=True, inline="always")
def atom_find(M, S, i, y, hsh):
    """Slot of labelling y in block i's atoms, or -1 (hash, then exact comparison)."""
    L = M.lab_off[i + 1] - M.lab_off[i]
    for s in range(S.a_count[i]):
        if S.a_hash[i, s] == hsh:
            b = atom_base(M, S, i, s)
            same = True
            for t in range(L):
                if S.a_lab[b + t] != y[t]:
                    same = False
                    break
            if same:
                return s
    return -1


@njit(cache=True, nogil=True)
def atom_remove(M, S, i, s):
    """Remove slot s of block i (swap with the last slot)."""
    last = S.a_count[i] - 1
    if s != last:
        L = M.lab_off[i + 1] - M.lab_off[i]
        bs = atom_base(M, S, i, s)
        bl = atom_base(M, S, i, last)
        for t in range(L):
            S.a_lab[bs + t] = S.a_lab[bl + t]
        S.a_alpha[i, s] = S.a_alpha[i, last]
        S.a_loss[i, s] = S.a_loss[i, last]
        S.a_hash[i, s] = S.a_hash[i, last]
        S.a_used[i, s] = S.a_used[i, last]
    S.a_alpha[i, last] = 0.0
    S.a_count[i] = last


@njit(cache=True, nogil=True)
def atom_insert(M, S, i, y, hsh, loss, k):
    """Insert labelling y (α = 0) into block i; evicts the least recently used inactive atom
    when the pool is full. Returns the slot, or -1 when every slot holds an active atom
    (the caller must grow the pool first; see C_GROW)."""
    return atom_insert_arr(M, i, y, hsh, loss, k, S.a_lab, S.a_alpha, S.a_count, S.a_hash, S.a_used, S.a_loss)


@njit(cache=True, nogil=True)
def atom_insert_arr(M, i, y, hsh, loss, k, a_lab, a_alpha, a_count, a_hash, a_used, a_loss):
    """:func:`atom_insert` on the atom arrays (a call with the whole state tuple costs a
    reference-count update per array)."""
    cap = a_alpha.shape[1]
    L = M.lab_off[i + 1] - M.lab_off[i]
    if a_count[i] < cap:
        s = a_count[i]
        a_count[i] += 1
    else:
        s = -1
        oldest = np.iinfo(np.int64).max
        for q in range(cap):
            if a_alpha[i, q] == 0.0 and a_used[i, q] < oldest:
                oldest = a_used[i, q]
                s = q
        if s < 0:
            return -1
    b = M.lab_off[i] * cap + s * L
    for t in range(L):
        a_lab[b + t] = y[t]
    a_alpha[i, s] = 0.0
    a_loss[i, s] = loss
    a_hash[i, s] = hsh
    a_used[i, s] = k
    return s


@njit(cache=True, nogil=True, inline="always")
def atoms_trim(M, S, cfg_i, i):
    """Keep the cache within its size: drop inactive atoms (α = 0), least recently used first,
    while the block holds more than cache_size atoms; without a cache drop every inactive atom.
    Active atoms are never dropped. Flags C_GROW when the pool is full of active atoms."""
    limit = cfg_i[I_CACHE_SIZE] if cfg_i[I_CACHE] != 0 else 0
    while S.a_count[i] > limit:
        s = -1
        oldest = np.iinfo(np.int64).max
        for q in range(S.a_count[i]):
            if S.a_alpha[i, q] == 0.0 and S.a_used[i, q] < oldest:
                oldest = S.a_used[i, q]
                s = q
        if s < 0:
            break
        atom_remove(M, S, i, s)
    if pool_full(S, i):
        S.counters[C_GROW] = 1


@njit(cache=True, nogil=True, inline="always")
def pool_full(S, i):
    """Every slot of block i's atom pool holds an active atom (nothing can be inserted)."""
    cap = S.a_alpha.shape[1]
    if S.a_count[i] < cap:
        return False
    for q in range(cap):
        if S.a_alpha[i, q] == 0.0:
            return False
    return True


@njit(cache=True, nogil=True)
def resync_block(M, S, cfg_i, cfg_f, i):
    """Recompute μ_i and ℓ_i from block i's atoms and move w accordingly (exactly), after the
    atoms' α were changed outside a step (purge + renormalization, path rescaling)."""
    n = M.n
    lam = cfg_f[F_LAM]
    so = M.stat_off[i]
    p = M.stat_off[i + 1] - so
    L = M.lab_off[i + 1] - M.lab_off[i]
    for q in range(p):
        S.tmp[q] = 0.0
    ell = 0.0
    for s in range(S.a_count[i]):
        a = S.a_alpha[i, s]
        if a > 0.0:
            b = atom_base(M, S, i, s)
            label_add(M, i, S.a_lab[b:b + L], a, S.tmp)
            ell += a * S.a_loss[i, s]
    for q in range(p):
        S.dlt[q] = S.tmp[q] - S.mu[so + q]
        S.mu[so + q] = S.tmp[q]
    block_axpy(M, i, -1.0 / (lam * n), S.dlt, S.v, S.w, S.lb, S.ub, cfg_i[I_BOX] != 0)
    S.scalars[S_ELL] += ell / n - S.ell[i]
    S.ell[i] = ell / n


@njit(cache=True, nogil=True)
def purge_small(M, S, cfg_i, cfg_f, i):
    """Purge atoms with 0 < α <= drop_tol, renormalize α and resync the block."""
    tol = cfg_f[F_DROP_TOL]
    purged = False
    tot = 0.0
    for s in range(S.a_count[i]):
        a = S.a_alpha[i, s]
        if a > 0.0 and a <= tol:
            S.a_alpha[i, s] = 0.0
            purged = True
            S.counters[C_PURGE] += 1
        else:
            tot += S.a_alpha[i, s]
    if purged:
        for s in range(S.a_count[i]):
            S.a_alpha[i, s] /= tot
        resync_block(M, S, cfg_i, cfg_f, i)


# ============================================================================ samplers


@njit(cache=True, nogil=True, inline="always")
def _leaf_weight(weights, gap_est, scalars, p, i):
    """Sampling weight of block i: the fixed weight, or its gap estimate g_i^p (Paper: Alg. 2
    has p = 1). For p != 1 the weight is (g_i / g_ref)^p with g_ref the largest gap estimate at
    the last rebuild, so that a large p neither underflows (every weight 0: uniform draws) nor
    overflows, and approaches max-gap sampling."""
    if weights.shape[0] > 0:
        return weights[i]
    g = gap_est[i]
    if not (g > 0.0):  # also NaN-safe
        return 0.0
    if p == 1.0:
        return g
    if g == np.inf:
        return np.inf
    return (g / scalars[S_GAP_REF]) ** p  # g_ref > 0: set by tree_rebuild before any leaf is computed


@njit(cache=True, nogil=True, inline="always")
def tree_update_arr(tree, weights, gap_est, scalars, p, i):
    """Set leaf i of the sampling tree to block i's weight and update the sums above it (the
    tree of Alg. 2's gap sampling: a draw and an update are O(log n))."""
    if p != 1.0 and weights.shape[0] == 0 and not (scalars[S_GAP_REF] > 0.0):
        tree_rebuild_arr(tree, weights, gap_est, scalars, p, gap_est.shape[0])  # p != 1: the first update fixes g_ref
        return
    size = tree.shape[0] // 2
    j = size + i
    leaf = _leaf_weight(weights, gap_est, scalars, p, i)
    tree[j] = leaf
    j //= 2
    while j >= 1:
        tree[j] = tree[2 * j] + tree[2 * j + 1]
        j //= 2
    # p != 1: a new largest gap may overflow, the sum of tiny weights underflow: rescale
    if p != 1.0 and weights.shape[0] == 0 and (leaf > 1e200 or not (tree[1] > 1e-200)):
        tree_rebuild_arr(tree, weights, gap_est, scalars, p, gap_est.shape[0])


@njit(cache=True, nogil=True, inline="always")
def tree_update(S, cfg_f, i):
    tree_update_arr(S.tree, S.weights, S.gap_est, S.scalars, cfg_f[F_P], i)


@njit(cache=True, nogil=True)
def tree_rebuild_arr(tree, weights, gap_est, scalars, p, n):
    """Rebuild the whole sampling tree (and, for p != 1, its reference gap g_ref)."""
    size = tree.shape[0] // 2
    ref = 0.0
    for i in range(n):
        g = gap_est[i]
        if g < np.inf and g > ref:
            ref = g
    scalars[S_GAP_REF] = ref if ref > 0.0 else 1.0
    for j in range(size, 2 * size):
        tree[j] = 0.0
    for i in range(n):
        tree[size + i] = _leaf_weight(weights, gap_est, scalars, p, i)
    for j in range(size - 1, 0, -1):
        tree[j] = tree[2 * j] + tree[2 * j + 1]


@njit(cache=True, nogil=True)
def tree_rebuild(S, cfg_f, n):
    tree_rebuild_arr(S.tree, S.weights, S.gap_est, S.scalars, cfg_f[F_P], n)


@njit(cache=True, nogil=True, inline="always")
def mark_visited_arr(unv, unv_pos, counters, i):
    """Remove block i from the list of blocks whose gap was never computed."""
    pos = unv_pos[i]
    if pos >= 0:
        last = counters[C_UNVISITED] - 1
        other = unv[last]
        unv[pos] = other
        unv_pos[other] = pos
        unv[last] = i
        unv_pos[i] = -1
        counters[C_UNVISITED] = last


@njit(cache=True, nogil=True, inline="always")
def mark_visited(S, i):
    mark_visited_arr(S.unv, S.unv_pos, S.counters, i)


@njit(cache=True, nogil=True, inline="always")
def sample_block(M, S, cfg_i, cfg_f):
    """Draw the next block (Paper: Alg. 1 line 3 / Alg. 2 line 4). Gap-based samplers first
    visit every never-visited block (gap estimate +inf) in uniformly random order. The idealized
    sampler of Theorem 2 (exact gap) recomputes every block gap before the draw (oracle calls
    counted apart, C_SAMPLER_ORACLE)."""
    n = M.n
    mode = cfg_i[I_SAMPLING]
    if mode == SAMPLE_EXACT_GAP:
        k = S.counters[C_ITER]
        for j in range(n):
            S.gap_est[j] = _block_gap_at(M, S, j)
            S.gap_iter[j] = k
            mark_visited(S, j)
        S.counters[C_SAMPLER_ORACLE] += n
        tree_rebuild(S, cfg_f, n)
    return _sample_arr(n, mode, S.rng, S.tree, S.gap_est, S.unv, S.counters, S.perm)


@njit(cache=True, nogil=True, inline="always")
def _tree_draw_arr(tree, rng, n):
    """Draw i with probability tree leaf i / total (uniform if the total is 0)."""
    total = tree[1]
    if not (total > 0.0):
        return rng_randint(rng, n)
    u = rng_uniform(rng) * total
    size = tree.shape[0] // 2
    j = 1
    while j < size:
        left = tree[2 * j]
        if u < left:
            j = 2 * j
        else:
            u -= left
            j = 2 * j + 1
    i = j - size
    if i >= n or tree[j] <= 0.0:  # round-off at the right edge: take the last positive leaf
        for q in range(n - 1, -1, -1):
            if tree[size + q] > 0.0:
                return q
    return i


@njit(cache=True, nogil=True, inline="always")
def set_block_gap_arr(gap_est, gap_iter, unv, unv_pos, counters, tree, weights, scalars, sampling, p, i, g, k):
    """Store block i's gap g (computed at iteration k), mark it visited and, under gap sampling,
    update its sampling weight (Paper: Alg. 2 line 8)."""
    gap_est[i] = g
    gap_iter[i] = k
    mark_visited_arr(unv, unv_pos, counters, i)
    if sampling == SAMPLE_GAP or sampling == SAMPLE_EXACT_GAP:
        tree_update_arr(tree, weights, gap_est, scalars, p, i)


@njit(cache=True, nogil=True, inline="always")
def set_block_gap(S, cfg_i, cfg_f, i, g, k):
    set_block_gap_arr(S.gap_est, S.gap_iter, S.unv, S.unv_pos, S.counters, S.tree, S.weights, S.scalars,
                      cfg_i[I_SAMPLING], cfg_f[F_P], i, g, k)


# ============================================================================ block step, in phases
# One block step (Paper: Alg. 1, 3, 4, 5 and their combination) is the sequence of phases below,
# each a small compiled function inlined into the drivers (run_steps: compiled oracle, one fused
# loop; pre_step / post_step: the Python oracle tier, the oracle called from Python between
# them). The phases take plain arrays where they can: handing a state tuple to a helper costs a
# reference-count update per array (measured at 5-9 % of a step).


@njit(cache=True, nogil=True, inline="always")
def _line(g, q, lam, n, gmax):
    """Exact line search on the quadratic dual: γ = g λ n² / ‖B δ‖², clipped to [0, gmax];
    returns (γ, dual improvement γ g − γ² q / (2 λ n²)). Paper: Alg. 1 line 6, Alg. 3 line 7."""
    if g <= 0.0:
        return 0.0, 0.0
    if q <= 0.0:
        gam = gmax
    else:
        gam = g * lam * n * n / q
        if gam > gmax:
            gam = gmax
    return gam, gam * g - 0.5 * gam * gam * q / (lam * n * n)


@njit(cache=True, nogil=True, inline="always")
def cache_hit_rule(ghat, gap_i, visited, global_gap, F, nu, n):
    """Cache hit criterion of Alg. 5: ĝ_i >= max(F·g_i^(k_i), ν/n·g^(k_0)). A block whose gap
    was never computed (g_i = +inf) never hits; before the first gap pass g^(k_0) = +inf, so
    nothing hits either (Paper: Alg. 5 line 2, g^(0) = +inf)."""
    if not visited:
        return False
    thr = max(F * gap_i, nu / n * global_gap)
    return ghat >= thr


@njit(cache=True, nogil=True, inline="always")
def _sample_arr(n, mode, rng, tree, gap_est, unv, counters, perm):
    """Phase *sample* (Paper: Alg. 1 line 3, Alg. 2 line 4): the draw of :func:`sample_block`
    on the arrays it needs. After an exact-gap refresh every block is visited, so that sampler
    draws from the tree here."""
    if mode == SAMPLE_UNIFORM:
        return rng_randint(rng, n)
    if mode == SAMPLE_PERM:
        pos = counters[C_PERM_POS]
        if pos == 0:
            for j in range(n):
                perm[j] = j
            for j in range(n - 1, 0, -1):
                r = rng_randint(rng, j + 1)
                tmp = perm[j]
                perm[j] = perm[r]
                perm[r] = tmp
        i = perm[pos]
        pos += 1
        counters[C_PERM_POS] = 0 if pos == n else pos
        return i
    if mode == SAMPLE_WEIGHTS:
        return _tree_draw_arr(tree, rng, n)
    nu = counters[C_UNVISITED]
    if nu > 0:
        return unv[rng_randint(rng, nu)]
    if mode == SAMPLE_MAXGAP:
        best = -np.inf
        arg = 0
        for j in range(n):
            if gap_est[j] > best:
                best = gap_est[j]
                arg = j
        return arg
    return _tree_draw_arr(tree, rng, n)


@njit(cache=True, nogil=True, inline="always")
def phase_prefetch(M, i, track, sparse, cap, a_alpha, a_hash, a_loss, a_used, a_lab):
    """Phase *prefetch*: start fetching the drawn block's scattered data (its atoms, and what the
    model's ``prefetch_block`` names: token features, Gram matrix) so that the cache misses
    overlap (OCR-large: 6-9 % less time per cached step, 3-6 % per BCFW step). Hints only: no
    result changes."""
    if track:
        for q in range(0, min(cap, 16), 8):
            prefetch(a_alpha, i * cap + q)
            prefetch(a_hash, i * cap + q)
        prefetch(a_loss, i * cap)
        prefetch(a_used, i * cap)
    _m_prefetch_block(M, i, sparse)
    if track:
        t_first = M.lab_off[i]
        for q in range(0, min(cap, 16) * (M.lab_off[i + 1] - t_first), 8):  # the first 16 atoms' labels
            prefetch(a_lab, t_first * cap + q)


@njit(cache=True, nogil=True, inline="always")
def phase_score(M, i, w, h, mu, mark, a_lab, a_count, gap_iter, global_gap, cache_on, sparse, cap, L, klist):
    """Phase *score*: the block's score vector h at w (Paper: Alg. 1 line 4, the oracle's
    input). A cache hit is possible only on a visited block after the first gap pass (Alg. 5);
    then, when the model can, only the entries the cached labellings (and μ_i) touch are scored,
    bitwise as the full scores (which are computed on a miss). Returns (could_hit, partial)."""
    could_hit = cache_on and a_count[i] > 0 and gap_iter[i] >= 0 and global_gap < np.inf
    partial = could_hit and _m_has_partial(M)
    if partial:
        _m_scores_cached(M, i, w, h, mark, a_lab, M.lab_off[i] * cap, a_count[i], L, cap, mu, not sparse, klist)
    else:
        _m_scores(M, i, w, h)
    return could_hit, partial


@njit(cache=True, nogil=True, inline="always")
def phase_scan_label_space(M, i, h, w, a_lab, a_alpha, a_hash, cnt, could_hit, cap, L, keys, terms):
    """Phase *scan* for label-space steps: one pass over block i's atoms gives the best cached
    labelling (the cache corner, Alg. 5 line 3), the away corner (argmin over the active set of
    ⟨m(y), h⟩; Alg. 3 line 4, Alg. 4 line 4) and ⟨μ_i, h⟩ = Σ_y α_i(y)⟨m(y), h⟩ summed over the
    active atoms in label-hash order (the same order whatever the slots, so a cache that never
    hits leaves the trace unchanged). Returns (⟨μ_i, h⟩, best, cache slot, away slot, away value)."""
    na = 0
    a_best = np.inf
    best = -np.inf
    fw_slot = -1
    a_slot = -1
    lab0 = M.lab_off[i] * cap
    for s in range(cnt):
        val = _m_atom_value(M, i, h, w, a_lab, lab0 + s * L, L)
        if could_hit and val > best:
            best = val
            fw_slot = s
        al = a_alpha[i, s]
        if al > 0.0:
            if val < a_best:
                a_best = val
                a_slot = s
            key = a_hash[i, s]
            term = al * val
            j = na
            while j > 0 and keys[j - 1] > key:
                keys[j] = keys[j - 1]
                terms[j] = terms[j - 1]
                j -= 1
            keys[j] = key
            terms[j] = term
            na += 1
    mu_h = 0.0
    for j in range(na):
        mu_h += terms[j]
    return mu_h, best, fw_slot, a_slot, a_best


@njit(cache=True, nogil=True, inline="always")
def phase_scan_dense(M, i, h, mu, p, a_lab, a_count, could_hit, cap, L):
    """Phase *scan* for statistics-space steps: ⟨μ_i, h⟩ over the block's statistics and, when a
    cache hit is possible, the best cached labelling (Alg. 5 line 3). Returns
    (⟨μ_i, h⟩, best, cache slot)."""
    mu_h = 0.0
    for q in range(p):
        mu_h += mu[q] * h[q]
    best = -np.inf
    fw_slot = -1
    if could_hit:
        lab0 = M.lab_off[i] * cap
        for s in range(a_count[i]):
            val = _m_label_dot_at(M, i, a_lab, lab0 + s * L, h)
            if val > best:
                best = val
                fw_slot = s
    return mu_h, best, fw_slot


@njit(cache=True, nogil=True, inline="always")
def phase_cache_lookup(M, i, k, could_hit, best, mu_h, fw_slot, gap_est, gap_iter, global_gap, cfg_f, n,
                       a_lab, a_used, a_loss, cap, L, ybuf, counters):
    """Phase *FW corner from the cache* (Paper: Alg. 5 lines 2-5): the cache corner is used
    when its gap ĝ_i = (⟨m(ŷ), h⟩ − ⟨μ_i, h⟩)/n passes :func:`cache_hit_rule`; it is copied to
    ybuf. Returns (hit, slot, its value, its loss); on a miss the slot is -1."""
    if could_hit:
        ghat = (best - mu_h) / n
        if cache_hit_rule(ghat, gap_est[i], gap_iter[i] >= 0, global_gap, cfg_f[F_CACHE_F], cfg_f[F_CACHE_NU], n):
            b = M.lab_off[i] * cap + fw_slot * L
            for t in range(L):
                ybuf[t] = a_lab[b + t]
            a_used[i, fw_slot] = k
            counters[C_HIT] += 1
            return True, fw_slot, best, a_loss[i, fw_slot]
    return False, -1, 0.0, 0.0


@njit(cache=True, nogil=True, inline="always")
def phase_fw_corner(M, i, k, L, fw_val, mu_h, track, sampling, p, ybuf, counters, gap_est, gap_iter, unv, unv_pos,
                    tree, weights, scalars, a_lab, a_alpha, a_count, a_hash, a_used, a_loss):
    """Phase *FW corner from the oracle* (Paper: Alg. 1 line 4, Alg. 2 line 7): count the
    oracle call, store the block gap g_i = (max − ⟨μ_i, h⟩)/n it certifies, and (with atoms)
    find or insert the FW corner ybuf among the block's atoms. Returns (slot or -1, loss)."""
    n = M.n
    counters[C_ORACLE] += 1
    counters[C_STEP_ORACLE] += 1
    set_block_gap_arr(gap_est, gap_iter, unv, unv_pos, counters, tree, weights, scalars, sampling, p, i,
                      (fw_val - mu_h) / n, k)
    fw_loss = label_loss(M, i, ybuf)
    fw_slot = -1
    if track:
        hsh = label_hash(ybuf, L)
        cap = a_alpha.shape[1]
        lab0 = M.lab_off[i] * cap
        for s in range(a_count[i]):  # the FW corner among the atoms (hash, then labels)
            if a_hash[i, s] == hsh:
                same = True
                for t in range(L):
                    if a_lab[lab0 + s * L + t] != ybuf[t]:
                        same = False
                        break
                if same:
                    fw_slot = s
                    break
        if fw_slot < 0:
            fw_slot = atom_insert_arr(M, i, ybuf, hsh, fw_loss, k, a_lab, a_alpha, a_count, a_hash, a_used, a_loss)
            if fw_slot < 0:  # callers grow the pools before a step (C_GROW); never reached
                raise RuntimeError("atom pool full: grow_atoms must run before the step")
        else:
            a_used[i, fw_slot] = k
    return fw_slot, fw_loss


@njit(cache=True, nogil=True, inline="always")
def _fw_corner(M, S, cfg_i, cfg_f, i, k, L, fw_val, mu_h):
    """:func:`phase_fw_corner` on the state's arrays."""
    return phase_fw_corner(M, i, k, L, fw_val, mu_h, cfg_i[I_TRACK] != 0, cfg_i[I_SAMPLING], cfg_f[F_P], S.ybuf,
                           S.counters, S.gap_est, S.gap_iter, S.unv, S.unv_pos, S.tree, S.weights, S.scalars,
                           S.a_lab, S.a_alpha, S.a_count, S.a_hash, S.a_used, S.a_loss)


@njit(cache=True, nogil=True, inline="always")
def phase_away_corner(M, i, h, a_lab, a_alpha, a_count, cap, L, sparse, a_slot, a_val, yaway, last_away):
    """Phase *away corner* (Paper: Alg. 3 line 4, Alg. 4 line 4): argmin over the active set of
    ⟨m(y), h⟩ (already found by the label-space scan), copied to yaway. Returns (slot, value)."""
    if not sparse:
        best_a = np.inf
        lab0 = M.lab_off[i] * cap
        for s in range(a_count[i]):
            if a_alpha[i, s] > 0.0:
                val = _m_label_dot_at(M, i, a_lab, lab0 + s * L, h)
                if val < best_a:
                    best_a = val
                    a_slot = s
        a_val = best_a
    b = M.lab_off[i] * cap + a_slot * L
    for t in range(L):
        yaway[t] = a_lab[b + t]
        last_away[t] = yaway[t]
    return a_slot, a_val


@njit(cache=True, nogil=True, inline="always")
def phase_candidates(M, i, step, sparse, lam, n, p, mu, mu_h, fw_val, a_val, alpha_a, ybuf, yaway, dl, tmp, zbuf,
                     pos):
    """Phase *candidates*: the FW direction m(y_fw) − μ_i (Paper: Alg. 1 line 5), the away
    direction μ_i − m(y_a) (Alg. 4 line 5) and the pairwise direction m(y_fw) − m(y_a)
    (Alg. 3 line 5), each with its exact line search (Alg. 1 line 6; γ_max = 1, α_a/(1 − α_a),
    α_a). FW: the FW direction. Away: the larger gap of FW and away. Pairwise: the pairwise
    direction. Combined: the largest dual improvement. The chosen direction is left in dl
    (not for a label-space pairwise step, which works on the two labellings).
    Returns (kind, γ, γ_max, improvement, the chosen direction's gap)."""
    kind = KIND_FW
    gam = 0.0
    gmax = 1.0
    g_fw = (fw_val - mu_h) / n
    g_used = g_fw
    best_imp = -1.0
    if step == STEP_FW or step == STEP_AWAY or step == STEP_COMBINED:
        for q in range(p):
            dl[q] = -mu[q]
        label_add(M, i, ybuf, 1.0, dl)
        qn = block_sqnorm(M, i, dl, zbuf)
        gam, best_imp = _line(g_fw, qn, lam, n, 1.0)
    if step == STEP_AWAY or step == STEP_COMBINED:
        g_a = (mu_h - a_val) / n
        # with (numerically) all the mass on the away corner the away direction is zero:
        # μ_i − m(y_a) is round-off only, and γ_max = α_a / (1 − α_a) would be unbounded
        single = alpha_a >= 1.0 - 1e-12
        amax = 0.0 if single else alpha_a / (1.0 - alpha_a)
        for q in range(p):
            tmp[q] = mu[q]
        label_add(M, i, yaway, -1.0, tmp)
        qa = block_sqnorm(M, i, tmp, zbuf)
        if g_a > 0.0 and qa > 0.0 and not single:
            gam_a, imp_a = _line(g_a, qa, lam, n, amax)
        else:
            gam_a, imp_a = 0.0, 0.0
        take = (g_a > g_fw) if step == STEP_AWAY else (imp_a > best_imp)
        if take:
            kind = KIND_AWAY
            gam = gam_a
            gmax = amax
            best_imp = imp_a
            g_used = g_a
            for q in range(p):
                dl[q] = tmp[q]
    if step == STEP_PAIRWISE or step == STEP_COMBINED:
        g_p = (fw_val - a_val) / n
        if sparse:
            qp = _m_pair_sqnorm(M, i, ybuf, yaway, pos)
        else:
            for q in range(p):
                tmp[q] = 0.0
            label_add(M, i, ybuf, 1.0, tmp)
            label_add(M, i, yaway, -1.0, tmp)
            qp = block_sqnorm(M, i, tmp, zbuf)
        gam_p, imp_p = _line(g_p, qp, lam, n, alpha_a)
        if step == STEP_PAIRWISE or imp_p > best_imp:
            kind = KIND_PAIRWISE
            gam = gam_p
            gmax = alpha_a
            best_imp = imp_p
            g_used = g_p
            if not sparse:
                for q in range(p):
                    dl[q] = tmp[q]
    return kind, gam, gmax, best_imp, g_used


@njit(cache=True, nogil=True, inline="always")
def phase_apply(M, i, kind, gam, gmax, sparse, lam, n, p, mu, dl, ybuf, yaway, v, w, lb, ub, has_box, pos,
                ell, scalars, counters, a_alpha, a_loss, a_count, fw_slot, a_slot, fw_loss, track):
    """Phase *apply*: one atomic change of μ_i, w, ℓ_i and the atoms' α for the chosen step
    (Paper: Alg. 1 lines 7-8 (FW, α_i ← (1−γ)α_i + γ e_{y_fw}), Alg. 4 lines 8-12 (away, mass
    moved off y_a, drop step at γ_max), Alg. 3 lines 8-10 (pairwise, γ moved from y_a to y_fw)).
    Returns whether it was a drop step."""
    drop = False
    if gam > 0.0:
        if sparse and kind == KIND_PAIRWISE:
            _m_pair_apply(M, i, ybuf, yaway, gam, mu, -gam / (lam * n), v, w, lb, ub, has_box, pos)
        else:
            for q in range(p):
                mu[q] += gam * dl[q]
            block_axpy(M, i, -gam / (lam * n), dl, v, w, lb, ub, has_box)
    old_ell = ell[i]
    if kind == KIND_FW:
        new_ell = old_ell + gam * (fw_loss / n - old_ell)
        counters[C_FW] += 1
        if track:
            if gam >= 1.0:
                for s in range(a_count[i]):
                    a_alpha[i, s] = 0.0
                a_alpha[i, fw_slot] = 1.0
            elif gam > 0.0:
                for s in range(a_count[i]):
                    a_alpha[i, s] *= (1.0 - gam)
                a_alpha[i, fw_slot] += gam
    elif kind == KIND_AWAY:
        a_loss_v = a_loss[i, a_slot]
        new_ell = old_ell + gam * (old_ell - a_loss_v / n)
        counters[C_AWAY] += 1
        if gam > 0.0:
            for s in range(a_count[i]):
                a_alpha[i, s] *= (1.0 + gam)
            if gam >= gmax:
                a_alpha[i, a_slot] = 0.0
                drop = True
                counters[C_DROP] += 1
            else:
                a_alpha[i, a_slot] -= gam
    else:
        a_loss_v = a_loss[i, a_slot]
        new_ell = old_ell + gam * (fw_loss - a_loss_v) / n
        counters[C_PAIR] += 1
        if gam > 0.0 and fw_slot != a_slot:
            if gam >= gmax:
                a_alpha[i, fw_slot] += a_alpha[i, a_slot]
                a_alpha[i, a_slot] = 0.0
                drop = True
                counters[C_DROP] += 1
            else:
                a_alpha[i, a_slot] -= gam
                a_alpha[i, fw_slot] += gam
    ell[i] = new_ell
    scalars[S_ELL] += new_ell - old_ell
    return drop


@njit(cache=True, nogil=True, inline="always")
def phase_log(log, counters, k, i, kind, flags, gam, gmax, gap_i, g_used, best_imp, track, a_alpha, a_count):
    """Phase *log*: one record of the step in the ring log (see ``L_*``)."""
    r = counters[C_LOG_POS] % log.shape[0]
    log[r, L_ITER] = k
    log[r, L_BLOCK] = i
    log[r, L_KIND] = kind
    log[r, L_FLAGS] = flags
    log[r, L_GAMMA] = gam
    log[r, L_GAMMA_MAX] = gmax
    log[r, L_GAP] = gap_i
    log[r, L_CORNER_GAP] = g_used
    log[r, L_IMPROVE] = best_imp if best_imp > 0.0 else 0.0
    if track:
        na_now = 0
        for q in range(a_count[i]):
            if a_alpha[i, q] > 0.0:
                na_now += 1
        log[r, L_ACTIVE] = na_now
    else:
        log[r, L_ACTIVE] = -1
    counters[C_LOG_POS] += 1
    counters[C_ITER] = k + 1


@njit(cache=True, nogil=True, inline="always")
def _step_after_fw_corner(M, S, cfg_i, cfg_f, i, k, L, flags, fw_slot, fw_val, fw_loss, mu_h, a_slot, a_val,
                          sparse, dpos):
    """The phases after the FW corner is known: away corner, candidates, apply, trim, log."""
    n = M.n
    step = cfg_i[I_STEP]
    track = cfg_i[I_TRACK] != 0
    cap = S.a_alpha.shape[1]
    so = M.stat_off[i]
    p = M.stat_off[i + 1] - so
    mu = S.mu[so:so + p]
    for t in range(L):
        S.last_fw[t] = S.ybuf[t]
    alpha_a = 0.0
    if step != STEP_FW:
        a_slot, a_val = phase_away_corner(M, i, S.h, S.a_lab, S.a_alpha, S.a_count, cap, L, sparse, a_slot, a_val,
                                          S.yaway, S.last_away)
        alpha_a = S.a_alpha[i, a_slot]
    if sparse:
        # the label-space pairwise update touches μ_i only where the two corners differ: prefetch
        # those entries so their misses overlap (15-17 % less time per cached BCPFW step)
        _m_pair_prefetch(M, mu, S.ybuf, S.yaway, L)
    kind, gam, gmax, best_imp, g_used = phase_candidates(
        M, i, step, sparse, cfg_f[F_LAM], n, p, mu, mu_h, fw_val, a_val, alpha_a, S.ybuf, S.yaway, S.dlt, S.tmp,
        S.zbuf, dpos)
    if phase_apply(M, i, kind, gam, gmax, sparse, cfg_f[F_LAM], n, p, mu, S.dlt, S.ybuf, S.yaway, S.v, S.w, S.lb,
                   S.ub, cfg_i[I_BOX] != 0, dpos, S.ell, S.scalars, S.counters, S.a_alpha, S.a_loss, S.a_count,
                   fw_slot, a_slot, fw_loss, track):
        flags |= FLAG_DROP
    if track:  # phase trim: purge tiny atoms, keep the cache within its size (Alg. 5), flag a full pool
        if kind != KIND_PAIRWISE and gam > 0.0 and cfg_f[F_DROP_TOL] > 0.0:
            purge_small(M, S, cfg_i, cfg_f, i)
        a_count = S.a_count
        a_alpha = S.a_alpha
        limit = cfg_i[I_CACHE_SIZE] if cfg_i[I_CACHE] != 0 else 0
        if a_count[i] > limit:
            atoms_trim(M, S, cfg_i, i)
        elif a_count[i] == cap:
            # a full pool must grow before the block's next new labelling: when the cache may
            # hold more (cap <= its size; Alg. 5 keeps up to `size` labellings, inactive ones
            # included) or when every slot is active (the active set needs room)
            full = cap <= limit
            if not full:
                full = True
                for q in range(a_count[i]):
                    if a_alpha[i, q] == 0.0:
                        full = False
                        break
            if full:
                S.counters[C_GROW] = 1
    phase_log(S.log, S.counters, k, i, kind, flags, gam, gmax, S.gap_est[i], g_used, best_imp, track, S.a_alpha,
              S.a_count)


@njit(cache=True, nogil=True, inline="always")
def _step_before_oracle(M, S, cfg_i, cfg_f, i, sparse, keys, terms, klist):
    """The phases before the max oracle: prefetch, score, scan, FW corner from the cache.
    Returns (k, L, could_hit, partial, mu_h, a_slot, a_val, hit, fw_slot, fw_val, fw_loss)."""
    n = M.n
    cap = S.a_alpha.shape[1]
    track = cfg_i[I_TRACK] != 0
    phase_prefetch(M, i, track, sparse, cap, S.a_alpha, S.a_hash, S.a_loss, S.a_used, S.a_lab)
    k = S.counters[C_ITER]
    so = M.stat_off[i]
    p = M.stat_off[i + 1] - so
    L = M.lab_off[i + 1] - M.lab_off[i]
    mu = S.mu[so:so + p]
    could_hit, partial = phase_score(M, i, S.w, S.h, mu, S.mark, S.a_lab, S.a_count, S.gap_iter,
                                     S.scalars[S_GLOBAL_GAP], cfg_i[I_CACHE] != 0, sparse, cap, L, klist)
    a_slot = -1
    a_val = 0.0
    if sparse:
        mu_h, best, fw_slot, a_slot, a_val = phase_scan_label_space(M, i, S.h, S.w, S.a_lab, S.a_alpha, S.a_hash,
                                                                    S.a_count[i], could_hit, cap, L, keys, terms)
    else:
        mu_h, best, fw_slot = phase_scan_dense(M, i, S.h, mu, p, S.a_lab, S.a_count, could_hit, cap, L)
    hit, fw_slot, fw_val, fw_loss = phase_cache_lookup(M, i, k, could_hit, best, mu_h, fw_slot, S.gap_est,
                                                       S.gap_iter, S.scalars[S_GLOBAL_GAP], cfg_f, n, S.a_lab,
                                                       S.a_used, S.a_loss, cap, L, S.ybuf, S.counters)
    return k, L, could_hit, partial, mu_h, a_slot, a_val, hit, fw_slot, fw_val, fw_loss


@njit(cache=True, nogil=True, inline="always")
def _scratch(M, S):
    cap = S.a_alpha.shape[1]
    keys = np.empty(cap, dtype=np.uint64)      # active-set scan: label hashes and α·⟨m(y), h⟩
    terms = np.empty(cap)
    klist = np.empty(M.K, dtype=np.int64)      # partial scoring: the marked labels of a position
    dpos = np.empty(max(S.ybuf.shape[0], 1), dtype=np.int64)  # positions where two labellings differ
    return keys, terms, klist, dpos


@njit(cache=True, nogil=True, inline="always")
def _is_sparse(M, cfg_i):
    """Label-space steps: the model provides them and the step keeps an active set (away,
    pairwise, combined): ⟨μ_i, h⟩ comes from the atoms and a pairwise direction is handled on
    the two labellings, so no step touches all the block's statistics."""
    return cfg_i[I_TRACK] != 0 and _m_label_space(M) and cfg_i[I_STEP] != STEP_FW


def run_steps(M, S, cfg_i, cfg_f, max_steps):
    """Run up to ``max_steps`` block steps with the model's compiled max oracle (Paper: Alg. 1,
    3, 4, 5 and their combination); stop early (before a step) when an atom pool must grow
    (C_GROW). Each step writes one record to the ring log. Returns the number of steps done.

    A Python function: it takes the loop's scratch from :func:`_scratch` (the one place that sizes
    it, also for the Python-tier kernels) and calls the compiled loop. A compiled wrapper cost 5 s
    of a 71 s cold compile (numba optimizes a caller's module with its callees linked in)."""
    keys, terms, klist, dpos = _scratch(M, S)
    return _run_steps_nrt_free(M, S, cfg_i, cfg_f, max_steps, keys, terms, klist, dpos)


@njit(cache=True, nogil=True, _nrt=False)
def _run_steps_nrt_free(M, S, cfg_i, cfg_f, max_steps, keys, terms, klist, dpos):
    """The driver loop of :func:`run_steps`, compiled without reference counting (numba's
    ``_nrt=False``, a private flag; re-check after a numba upgrade). With reference counting,
    handing the model and state tuples to the inlined phases updated the count of each of
    their arrays on every call: 253 increments and 300 decrements per cached BCPFW step on
    OCR-large (counted with a breakpoint on NRT_incref / NRT_decref), about 1 µs of a 5 µs
    step. Here every array is owned by the caller for the whole call, and the driver and the
    models' primitives (compiled with _nrt=False too) allocate nothing (scratch comes from
    :func:`_scratch`; numba refuses to compile an allocation here)."""
    sparse = _is_sparse(M, cfg_i)
    mode = cfg_i[I_SAMPLING]
    done = 0
    while done < max_steps:
        if S.counters[C_GROW] != 0:
            break
        if mode == SAMPLE_EXACT_GAP:
            i = sample_block(M, S, cfg_i, cfg_f)
        else:
            i = _sample_arr(M.n, mode, S.rng, S.tree, S.gap_est, S.unv, S.counters, S.perm)
        k, L, could_hit, partial, mu_h, a_slot, a_val, hit, fw_slot, fw_val, fw_loss = _step_before_oracle(
            M, S, cfg_i, cfg_f, i, sparse, keys, terms, klist)
        if hit:
            flags = FLAG_HIT
        else:
            if partial:  # the entries scored so far are bitwise those of the full scores
                _m_scores(M, i, S.w, S.h)
            fw_val = _m_oracle(M, i, S.h, S.ybuf, S.vit_f, S.vit_i)
            flags = FLAG_ORACLE
            fw_slot, fw_loss = _fw_corner(M, S, cfg_i, cfg_f, i, k, L, fw_val, mu_h)
        _step_after_fw_corner(M, S, cfg_i, cfg_f, i, k, L, flags, fw_slot, fw_val, fw_loss, mu_h, a_slot, a_val,
                              sparse, dpos)
        done += 1
    return done


# Python oracle tier: one block step is pre_step (compiled), the model's max oracle (Python),
# post_step (compiled). The step's locals wait in S.step_i / S.step_f in between.
_SI_BLOCK, _SI_K, _SI_L, _SI_HIT, _SI_FW_SLOT, _SI_A_SLOT = range(6)
_SF_MU_H, _SF_FW_VAL, _SF_FW_LOSS, _SF_A_VAL = range(4)


@njit(cache=True, nogil=True)
def pre_step(M, S, cfg_i, cfg_f):
    """First half of a block step for a model whose max oracle is a Python call: sample, score,
    scan, FW corner from the cache. Returns (block i, whether the oracle must be called); on a
    miss S.h holds the full loss-augmented scores and the caller puts the oracle's labelling of
    block i into S.ybuf, then calls :func:`post_step`. Returns (-1, False) when an atom pool
    must grow first (C_GROW)."""
    if S.counters[C_GROW] != 0:
        return -1, False
    keys, terms, klist, dpos = _scratch(M, S)
    sparse = _is_sparse(M, cfg_i)
    mode = cfg_i[I_SAMPLING]
    if mode == SAMPLE_EXACT_GAP:
        raise RuntimeError("the exact-gap sampler needs a compiled max oracle")
    i = _sample_arr(M.n, mode, S.rng, S.tree, S.gap_est, S.unv, S.counters, S.perm)
    k, L, could_hit, partial, mu_h, a_slot, a_val, hit, fw_slot, fw_val, fw_loss = _step_before_oracle(
        M, S, cfg_i, cfg_f, i, sparse, keys, terms, klist)
    if not hit and partial:
        _m_scores(M, i, S.w, S.h)
    S.step_i[_SI_BLOCK] = i
    S.step_i[_SI_K] = k
    S.step_i[_SI_L] = L
    S.step_i[_SI_HIT] = hit
    S.step_i[_SI_FW_SLOT] = fw_slot
    S.step_i[_SI_A_SLOT] = a_slot
    S.step_f[_SF_MU_H] = mu_h
    S.step_f[_SF_FW_VAL] = fw_val
    S.step_f[_SF_FW_LOSS] = fw_loss
    S.step_f[_SF_A_VAL] = a_val
    return i, not hit


@njit(cache=True, nogil=True)
def post_step(M, S, cfg_i, cfg_f):
    """Second half of a block step (see :func:`pre_step`): after a miss S.ybuf holds the
    oracle's FW corner, whose value ⟨m(y), h⟩ is computed here from the block's scores."""
    keys, terms, klist, dpos = _scratch(M, S)
    sparse = _is_sparse(M, cfg_i)
    i = S.step_i[_SI_BLOCK]
    k = S.step_i[_SI_K]
    L = S.step_i[_SI_L]
    fw_slot = S.step_i[_SI_FW_SLOT]
    a_slot = S.step_i[_SI_A_SLOT]
    mu_h = S.step_f[_SF_MU_H]
    fw_val = S.step_f[_SF_FW_VAL]
    fw_loss = S.step_f[_SF_FW_LOSS]
    a_val = S.step_f[_SF_A_VAL]
    if S.step_i[_SI_HIT] != 0:
        flags = FLAG_HIT
    else:
        fw_val = label_dot(M, i, S.ybuf, S.h)
        flags = FLAG_ORACLE
        fw_slot, fw_loss = _fw_corner(M, S, cfg_i, cfg_f, i, k, L, fw_val, mu_h)
    _step_after_fw_corner(M, S, cfg_i, cfg_f, i, k, L, flags, fw_slot, fw_val, fw_loss, mu_h, a_slot, a_val,
                          sparse, dpos)



# ============================================================================ exact gaps


@njit(cache=True, nogil=True, parallel=True)
def gap_pass_blocks(M, w, mu, nchunk, hmax, lmax, store_labels, g_out, hs_out, d_out, lab_out):
    """The per-block part of an exact gap pass, in parallel over ``nchunk`` contiguous chunks of
    blocks (each with its own scratch): one max-oracle call per block at w. Writes
    g_out[i] = g_i = (max_y ⟨m(y), h_i⟩ − ⟨μ_i, h_i⟩)/n, hs_out[i] = max_y H_i(y; w) (block i's
    structured hinge loss), d_out[i] = δ_i of Alg. 7 line 4 and, with ``store_labels``, the FW
    corners into lab_out (float64 arrays of length n; lab_out int64, indexed by label offsets).
    Paper: Alg. 2 ("update global gap"). Each block's numbers do not depend on the chunking or
    the number of threads, so the pass is deterministic."""
    n = M.n
    for c in prange(nchunk):
        h = np.empty(hmax)
        y = np.empty(lmax, dtype=np.int64)
        ygt = np.empty(lmax, dtype=np.int64)
        vf = np.empty(lmax * M.K)
        vi = np.empty(lmax * M.K, dtype=np.int64)
        for i in range(c * n // nchunk, (c + 1) * n // nchunk):
            so = M.stat_off[i]
            p = M.stat_off[i + 1] - so
            block_scores(M, i, w, h)
            mu_h = 0.0
            for q in range(p):
                mu_h += mu[so + q] * h[q]
            val = block_oracle(M, i, h, y, vf, vi)
            gt_label(M, i, ygt)
            gt_h = label_dot(M, i, ygt, h)
            hs_out[i] = val - (gt_h - label_loss(M, i, ygt))
            d_out[i] = (mu_h - gt_h) / n
            g_out[i] = (val - mu_h) / n
            if store_labels:
                b = M.lab_off[i]
                for t in range(M.lab_off[i + 1] - b):
                    lab_out[b + t] = y[t]


@njit(cache=True, nogil=True)
def gap_pass_finish(M, S, cfg_i, cfg_f, count, g, hs):
    """The serial part of an exact gap pass: the sums in block order (so they are bitwise those
    of a one-thread pass) and, with ``count``, the refresh of every gap estimate (iteration =
    current k), the oracle counter and g^(k_0). Returns (Σ g_i, Σ hs_i)."""
    n = M.n
    k = S.counters[C_ITER]
    total = 0.0
    hsum = 0.0
    for i in range(n):
        total += g[i]
        hsum += hs[i]
        if count:
            S.gap_exact[i] = g[i]
            S.gap_est[i] = g[i]
            S.gap_iter[i] = k
            mark_visited(S, i)
    if count:
        S.counters[C_ORACLE] += n
        S.counters[C_GAPPASS] += 1
        S.counters[C_LAST_CHECK] = k
        S.scalars[S_GLOBAL_GAP] = total
        if cfg_i[I_SAMPLING] == SAMPLE_GAP or cfg_i[I_SAMPLING] == SAMPLE_EXACT_GAP:
            tree_rebuild(S, cfg_f, n)
    return total, hsum


# A parallel kernel must not be entered from two Python threads at once under numba's workqueue
# threading layer (the fallback when no OpenMP or TBB runtime is found); app sessions each run a
# worker thread, so the passes are serialized here.
_GAP_PASS_LOCK = threading.Lock()


def exact_gap_pass(M, S, cfg_i, cfg_f, count, store_labels, delta_out):
    """Exact duality gap: one max-oracle call per block at the current w (Paper: Alg. 2,
    "update global gap"), the blocks spread over numba's threads (``NUMBA_NUM_THREADS``; the
    result does not depend on it). Refreshes every gap estimate (iteration = current k).
    Returns (duality gap Σ g_i, Σ_i max_y H_i(y; w)). With ``count`` the n calls are added to the
    oracle counter and g^(k_0) is updated; ``store_labels`` keeps every FW corner in S.batch_lab
    for a batch FW step. ``delta_out`` (length n, or 0 to skip) receives δ_i = (1/n) Σ_y α_i(y)
    H_i(y; w) = (⟨μ_i, h_i⟩ − ⟨m(y_i), h_i⟩)/n of Alg. 7 line 4 (no extra work: both dots are
    needed here)."""
    n = M.n
    g = np.empty(n)
    hs = np.empty(n)
    d = delta_out if delta_out.shape[0] == n else np.empty(n)
    threads = numba.get_num_threads()
    nchunk = 1 if n < 64 or threads == 1 else min(n, 8 * threads)
    with _GAP_PASS_LOCK:
        gap_pass_blocks(M, S.w, S.mu, nchunk, S.h.shape[0], S.ybuf.shape[0], bool(store_labels), g, hs, d,
                        S.batch_lab)
    return gap_pass_finish(M, S, cfg_i, cfg_f, bool(count), g, hs)


@njit(cache=True, nogil=True)
def block_gap_now(M, S, i):
    """Exact block gap g_i at the current w (one diagnostic oracle call, not counted as work)."""
    S.counters[C_DIAG_ORACLE] += 1
    return _block_gap_at(M, S, i)


@njit(cache=True, nogil=True)
def _block_gap_at(M, S, i):
    so = M.stat_off[i]
    p = M.stat_off[i + 1] - so
    block_scores(M, i, S.w, S.h)
    mu_h = 0.0
    for q in range(p):
        mu_h += S.mu[so + q] * S.h[q]
    val = block_oracle(M, i, S.h, S.yaway, S.vit_f, S.vit_i)
    return (val - mu_h) / M.n


@njit(cache=True, nogil=True)
def batch_fw_step(M, S, cfg_i, cfg_f, gap):
    """Batch FW step towards the FW corners stored by the last exact gap pass (Paper: Alg. 8;
    the authors' do_batch_step). Returns γ, or -1.0 if some atom pool must grow first
    (nothing changed then)."""
    n = M.n
    lam = cfg_f[F_LAM]
    track = cfg_i[I_TRACK] != 0
    has_box = cfg_i[I_BOX] != 0
    if track:
        for i in range(n):
            if pool_full(S, i):
                S.counters[C_GROW] = 1
                return -1.0
    d = S.zbuf.shape[0]
    z = np.zeros(d)
    zero = np.zeros(0)
    for i in range(n):
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        b = M.lab_off[i]
        L = M.lab_off[i + 1] - b
        for q in range(p):
            S.dlt[q] = -S.mu[so + q]
        label_add(M, i, S.batch_lab[b:b + L], 1.0, S.dlt)
        block_axpy(M, i, 1.0, S.dlt, z, z, zero, zero, False)
    qn = 0.0
    for j in range(d):
        qn += z[j] * z[j]
    gam, _ = _line(gap, qn, lam, n, 1.0)
    if gam <= 0.0:
        return 0.0
    k = S.counters[C_ITER]
    for i in range(n):
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        b = M.lab_off[i]
        L = M.lab_off[i + 1] - b
        y = S.batch_lab[b:b + L]
        for q in range(p):
            S.mu[so + q] *= (1.0 - gam)
        label_add(M, i, y, gam, S.mu[so:so + p])
        loss = label_loss(M, i, y)
        old = S.ell[i]
        S.ell[i] = old + gam * (loss / n - old)
        S.scalars[S_ELL] += S.ell[i] - old
        if track:
            hsh = label_hash(y, L)
            s = atom_find(M, S, i, y, hsh)
            if s < 0:
                s = atom_insert(M, S, i, y, hsh, loss, k)
            for q in range(S.a_count[i]):
                S.a_alpha[i, q] *= (1.0 - gam)
            S.a_alpha[i, s] += gam
            atoms_trim(M, S, cfg_i, i)
    c = -gam / (lam * n)
    for j in range(d):
        S.v[j] += c * z[j]
        if has_box:
            S.w[j] = _clip(S.v[j], S.lb[j], S.ub[j])
    S.counters[C_BATCH] += 1
    return gam


@njit(cache=True, nogil=True)
def recompute_primal(M, S, cfg_i, cfg_f):
    """Recompute v = Aα = (1/(λn)) Σ_i B_i (m(y_i) − μ_i) from the block statistics, w = clip(v),
    and ℓ = Σ ℓ_i (from scratch; removes accumulated round-off)."""
    n = M.n
    lam = cfg_f[F_LAM]
    has_box = cfg_i[I_BOX] != 0
    for j in range(S.v.shape[0]):
        S.v[j] = 0.0
    ell = 0.0
    for i in range(n):
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        for q in range(p):
            S.dlt[q] = -S.mu[so + q]
        gt_label(M, i, S.ybuf)
        label_add(M, i, S.ybuf, 1.0, S.dlt)
        block_axpy(M, i, 1.0 / (lam * n), S.dlt, S.v, S.v, S.lb, S.ub, False)
        ell += S.ell[i]
    if has_box:
        for j in range(S.v.shape[0]):
            S.w[j] = _clip(S.v[j], S.lb[j], S.ub[j])
    S.scalars[S_ELL] = ell


@njit(cache=True, nogil=True)
def set_vertices(M, S, cfg_i, cfg_f, labels):
    """Put every block on the corner α_i = e_{y~_i} (labels: concatenated y~_i, like M.gt),
    with atoms {y~_i: 1} when tracked, then recompute w. (Paper: Alg. 6, dual point α^∞.)"""
    n = M.n
    track = cfg_i[I_TRACK] != 0
    for i in range(n):
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        b = M.lab_off[i]
        L = M.lab_off[i + 1] - b
        y = labels[b:b + L]
        for q in range(p):
            S.mu[so + q] = 0.0
        label_add(M, i, y, 1.0, S.mu[so:so + p])
        loss = label_loss(M, i, y)
        S.ell[i] = loss / n
        if track:
            while S.a_count[i] > 0:
                atom_remove(M, S, i, S.a_count[i] - 1)
            s = atom_insert(M, S, i, y, label_hash(y, L), loss, S.counters[C_ITER])
            S.a_alpha[i, s] = 1.0
    recompute_primal(M, S, cfg_i, cfg_f)


@njit(cache=True, nogil=True)
def rescale_to_gt_from(M, S, cfg_i, rho, start):
    """Proposition 1 rescaling: α_i(y) ← ρ α_i(y) for y ≠ y_i, the rest on y_i (μ_i, ℓ_i and
    the atoms; w is unchanged), for blocks start..n-1. Returns the first block whose atom pool
    had no room for the ground-truth atom (that block and the later ones are untouched), or -1
    when all blocks were done."""
    n = M.n
    track = cfg_i[I_TRACK] != 0
    for i in range(start, n):
        so = M.stat_off[i]
        p = M.stat_off[i + 1] - so
        L = M.lab_off[i + 1] - M.lab_off[i]
        gt_label(M, i, S.ybuf)
        if track:
            hsh = label_hash(S.ybuf, L)
            s = atom_find(M, S, i, S.ybuf, hsh)
            if s < 0:
                s = atom_insert(M, S, i, S.ybuf, hsh, label_loss(M, i, S.ybuf), S.counters[C_ITER])
                if s < 0:
                    return i
            for q in range(S.a_count[i]):
                S.a_alpha[i, q] *= rho
            S.a_alpha[i, s] += 1.0 - rho
            atoms_trim(M, S, cfg_i, i)
        for q in range(p):
            S.mu[so + q] *= rho
        label_add(M, i, S.ybuf, 1.0 - rho, S.mu[so:so + p])
        old = S.ell[i]
        S.ell[i] = rho * old
    ell = 0.0
    for i in range(n):
        ell += S.ell[i]
    S.scalars[S_ELL] = ell
    return -1


@njit(cache=True, nogil=True)
def gap_block_given_corner(M, w, mu, i, h, y, ygt):
    """One block of an exact gap pass when the FW corner y came from a Python max oracle:
    (g_i, max_y H_i(y; w), δ_i) as in :func:`gap_pass_blocks`, with max_y ⟨m(y), h⟩ taken as
    ⟨m(y), h⟩ of the given corner."""
    n = M.n
    so = M.stat_off[i]
    p = M.stat_off[i + 1] - so
    block_scores(M, i, w, h)
    mu_h = 0.0
    for q in range(p):
        mu_h += mu[so + q] * h[q]
    val = label_dot(M, i, y, h)
    gt_label(M, i, ygt)
    gt_h = label_dot(M, i, ygt, h)
    return (val - mu_h) / n, val - (gt_h - label_loss(M, i, ygt)), (mu_h - gt_h) / n


def exact_gap_pass_python(M, S, cfg_i, cfg_f, count, store_labels, delta_out, oracle):
    """:func:`exact_gap_pass` for a model whose max oracle is the Python callable
    ``oracle(i, w) -> labelling`` (validated by the caller's wrapper): the n oracle calls run in
    a Python loop, each block's numbers in compiled code."""
    n = M.n
    g = np.empty(n)
    hs = np.empty(n)
    d = delta_out if delta_out.shape[0] == n else np.empty(n)
    h = np.empty(S.h.shape[0])
    ygt = np.empty(S.ybuf.shape[0], dtype=np.int64)
    w = S.w
    for i in range(n):
        y = oracle(i, w)
        g[i], hs[i], d[i] = gap_block_given_corner(M, w, S.mu, i, h, y, ygt)
        if store_labels:
            b = int(M.lab_off[i])
            S.batch_lab[b:b + y.shape[0]] = y
    return gap_pass_finish(M, S, cfg_i, cfg_f, bool(count), g, hs)
