"""Compile-time dispatch to a model kind's primitives, and their Python-callable forms.

Each stub ``_m_<primitive>`` resolves, through ``numba.extending.overload`` on the namedtuple class
of M, to that kind's primitive (or to a default when an optional primitive is absent): the shared
kernels get one specialization per model kind, with no runtime branch on the kind. The stubs and
their overloads are made by :func:`_stub` from one table, the primitives' argument names of
:mod:`.registry` and the defaults of :data:`_OPTIONAL_DEFAULTS`. The stubs are callable from
compiled code only (their Python forms serve ``NUMBA_DISABLE_JIT=1``); the ``@njit`` functions of
the second half (:func:`block_scores`, :func:`label_dot`, ...) are the forms the model classes,
the regularization path, the tests and the app call.
"""
from __future__ import annotations

import inspect

from numba import njit
from numba.extending import overload

from .registry import _KINDS, _SIGNATURES, _prim, _prims


# Compile-time dispatch: each stub below resolves, for the namedtuple class of M, to that kind's
# primitive, compiled once per argument types with _nrt=False (no reference counting: a
# primitive allocates nothing) and called; LLVM inlines the small ones. The primitives are called,
# not IR-inlined at every call site (overload inline="always"): that gives the same machine code
# speed and roughly doubles a cold compile. The stubs are only callable from compiled code; the
# njit functions of the next section are their Python-callable forms.

#: numba options of the compiled primitives
_PRIM_JIT = {"_nrt": False, "nogil": True}


# ----------------------------------------------------------------------------- defaults
# What an optional primitive is when a model kind does not provide it: a function of the kind's
# primitives (a dict) that returns the implementation. The compiled and the Python forms use the
# same one. Those that raise keep a branch that returns 0.0 so that they still type as returning
# a float, as the primitive they stand for.

def _no_oracle(prims):
    def no_oracle(M, i, h, y, vit_f, vit_i):
        if i >= 0:
            raise RuntimeError("this model kind has no compiled max oracle (oracle_tier='python')")
        return 0.0
    return no_oracle


def _label_dot_by_slice(prims):
    g = prims["label_dot"]

    def by_slice(M, i, lab, b, vec):
        return g(M, i, lab[b:b + M.lab_off[i + 1] - M.lab_off[i]], vec)
    return by_slice


def _no_prefetch_block(prims):
    return lambda M, i, sparse: None


def _no_scores_cached(prims):
    def impl(M, i, w, h, mark, a_lab, lab0, cnt, L, cap, mu, dense, klist):
        raise RuntimeError("no partial scoring for this model kind")
    return impl


def _no_atom_value(prims):
    def impl(M, i, h, w, a_lab, b, L):
        if L >= 0:
            raise RuntimeError("no label-space steps for this model kind")
        return 0.0
    return impl


def _no_pair_sqnorm(prims):
    def impl(M, i, ys, yv, pos):
        if pos.shape[0] >= 0:
            raise RuntimeError("no label-space steps for this model kind")
        return 0.0
    return impl


def _no_pair_apply(prims):
    def impl(M, i, ys, yv, gam, mu, coef, v, w, lb, ub, has_box, pos):
        raise RuntimeError("no label-space steps for this model kind")
    return impl


def _no_pair_prefetch(prims):
    return lambda M, mu, ys, yv, L: None


#: the default of each optional primitive (a required one has none: a kind without it is refused
#: by register_model_kind, and by the overload with a TypingError)
_OPTIONAL_DEFAULTS = {
    "oracle": _no_oracle, "label_dot_at": _label_dot_by_slice, "prefetch_block": _no_prefetch_block,
    "scores_cached": _no_scores_cached, "atom_value": _no_atom_value, "pair_sqnorm": _no_pair_sqnorm,
    "pair_apply": _no_pair_apply, "pair_prefetch": _no_pair_prefetch,
}
#: hints only: their Python forms do nothing
_HINTS = ("prefetch_block", "pair_prefetch")


def _with_signature(func, name: str, args) -> None:
    """Give ``func`` (a ``*args`` function) the name ``name`` and the argument names ``args``:
    numba checks that an overload and its implementation take the same argument names."""
    func.__signature__ = inspect.Signature(
        [inspect.Parameter(a, inspect.Parameter.POSITIONAL_OR_KEYWORD) for a in args])
    func.__name__ = func.__qualname__ = name
    func.__module__ = __name__


def _implementation(prims, primitive: str):
    """The implementation of ``primitive`` for a kind's primitives: its own, else the default."""
    f = prims.get(primitive)
    if f is not None:
        return f
    return _OPTIONAL_DEFAULTS[primitive](prims)


def _stub(primitive: str):
    """The stub ``_m_<primitive>`` with the primitive's argument names, and its overload: at
    compile time, the kind's primitive (its Python function, compiled with :data:`_PRIM_JIT`)
    or the default of :data:`_OPTIONAL_DEFAULTS`; a required primitive the kind lacks is a
    TypingError naming it."""
    args = _SIGNATURES[primitive]
    hint = primitive in _HINTS

    def stub(*a):
        if hint:
            return None
        return _implementation(_KINDS[type(a[0])], primitive)(*a)

    def resolve(*a):
        M = a[0]
        if primitive not in _OPTIONAL_DEFAULTS:
            return _prim(M, primitive).py_func
        f = _prims(M).get(primitive)
        return f.py_func if f is not None else _OPTIONAL_DEFAULTS[primitive](_prims(M))

    _with_signature(stub, f"_m_{primitive}", args)
    stub.__doc__ = (f"{primitive}{args}: resolved in compiled code by its overload to the model kind's "
                    "primitive; this Python form serves NUMBA_DISABLE_JIT=1.")
    _with_signature(resolve, f"_ov_{primitive}", args)
    overload(stub, jit_options=_PRIM_JIT)(resolve)
    return stub


def _kind_has(name: str, primitive: str):
    """The stub ``_m_<name>(M)``: whether M's kind has ``primitive``, a constant at compile time."""
    def stub(M):
        return primitive in _KINDS[type(M)]

    def resolve(M):
        if primitive in _prims(M):
            return lambda M: True
        return lambda M: False

    stub.__name__ = stub.__qualname__ = f"_m_{name}"
    stub.__doc__ = f"Whether the model kind of M has the {primitive!r} primitive (a compile-time constant)."
    overload(stub, jit_options=_PRIM_JIT)(resolve)
    return stub


_m_scores = _stub("scores")
_m_oracle = _stub("oracle")
_m_label_dot = _stub("label_dot")
_m_label_dot_at = _stub("label_dot_at")
_m_label_add = _stub("label_add")
_m_label_loss = _stub("label_loss")
_m_gt_label = _stub("gt_label")
_m_sqnorm = _stub("sqnorm")
_m_axpy = _stub("axpy")
_m_prefetch_block = _stub("prefetch_block")
_m_scores_cached = _stub("scores_cached")
_m_atom_value = _stub("atom_value")
_m_pair_sqnorm = _stub("pair_sqnorm")
_m_pair_apply = _stub("pair_apply")
_m_pair_prefetch = _stub("pair_prefetch")
#: partial scoring of cache hits
_m_has_partial = _kind_has("has_partial", "scores_cached")
#: label-space pairwise steps
_m_label_space = _kind_has("label_space", "pair_apply")
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


@njit(cache=True, nogil=True, inline="always")
def _clip(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x
