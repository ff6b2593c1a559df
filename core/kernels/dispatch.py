"""Compile-time dispatch to a model kind's primitives, and their Python-callable forms.

Each stub ``_m_<primitive>`` resolves, through ``numba.extending.overload`` on the namedtuple class
of M, to that kind's primitive (or to a default when an optional primitive is absent): the shared
kernels get one specialization per model kind, with no runtime branch on the kind. The stubs are
callable from compiled code only (their Python bodies serve ``NUMBA_DISABLE_JIT=1``); the ``@njit``
functions of the second half (:func:`block_scores`, :func:`label_dot`, ...) are the forms the model
classes, the regularization path, the tests and the app call.
"""
from __future__ import annotations

from numba import njit
from numba.extending import overload

from .registry import _KINDS, _prim, _prims


# Compile-time dispatch: each stub below resolves, for the namedtuple class of M, to that kind's
# primitive, compiled once per argument types with _nrt=False (no reference counting: a
# primitive allocates nothing) and called; LLVM inlines the small ones. The primitives are called,
# not IR-inlined at every call site (overload inline="always"): that gives the same machine code
# speed and roughly doubles a cold compile. The stubs are only callable from compiled code; the
# njit functions of the next section are their Python-callable forms.

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


@njit(cache=True, nogil=True, inline="always")
def _clip(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x
