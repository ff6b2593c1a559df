"""The model-kind registry: which primitives and fields a model kind provides, their argument
names, :func:`register_model_kind`, and the look-ups the dispatch stubs use at compile time.

A model kind is a namedtuple of arrays plus numba primitives over it, registered with
:func:`register_model_kind` (see ``core/models/chain_primitives.py``, ``core/models/multiclass.py``). The
shared kernels call the primitives through compile-time dispatch on the namedtuple's class
(:mod:`.dispatch`): every model kind gets its own specialization of the drivers, with no runtime
branch on a model kind. The primitives a kind provides:

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
fused step loop, itself compiled without reference counting, the exact gap passes, the
pre/post-step kernels, the state and path kernels); LLVM inlines the small ones. A primitive
must not allocate arrays nor return one, and neither may the ``@njit`` functions it calls: numba
compiles a callee first reached from a function without reference counting without it too (an
allocation then fails to compile, or leaks if the callee was compiled elsewhere first). Options
written on a primitive's own ``@njit`` (``fastmath``, ...) are not used: the primitive is
compiled from its Python function; put such code in a helper.
"""
from __future__ import annotations

import inspect

import numba
from numba.core.errors import TypingError


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
        as in ``core/models/chain_primitives.py``.

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


def _linked_sources() -> list:
    """Source files whose compiled functions link a model's primitives into their machine code:
    every module of this package, ``core/state.py`` and the regularization path's kernels."""
    import glob
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    core = os.path.dirname(here)
    files = sorted(glob.glob(os.path.join(here, "*.py")))
    files += [os.path.join(core, "state.py")]
    files += sorted(glob.glob(os.path.join(core, "regpath", "*.py")))
    return [f for f in files if os.path.exists(f)]


def _model_sources(primitives) -> list:
    """Source files of a model kind's primitives and of every @njit function they call,
    transitively (found through the global names their code uses), sorted."""
    files, seen = set(), set()
    todo = list(primitives.values())
    while todo:
        py = getattr(todo.pop(), "py_func", None)
        if py is None or id(py) in seen:
            continue
        seen.add(id(py))
        src = inspect.getsourcefile(py)
        if src:
            files.add(src)
        todo.extend(py.__globals__.get(n) for n in py.__code__.co_names)
    return sorted(files)


def _drop_stale_driver_caches(name, primitives) -> None:
    """numba keys the on-disk cache of a compiled function by its own source file only. The
    drivers of this package (and the kernels of state.py and of the regularization path) link
    the model's primitives, and the phases of the other modules here, into their machine code,
    and the primitives link the @njit functions they call (in other files too, e.g. the pose
    oracle's distance transforms), so after any of those source files changes the cached
    machine code is stale. A stamp of those source files is kept next to the cache; when it
    changes, the cached drivers and the model's own cached functions are dropped (they
    recompile on next use)."""
    import hashlib
    import os
    from .step import _run_steps_nrt_free
    own = _linked_sources()
    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    model_files = _model_sources(primitives)
    for f in model_files + [f for f in own if os.path.dirname(f) == here]:
        try:
            with open(f, "rb") as fh:
                h.update(fh.read())
        except OSError:
            return
    digest = h.hexdigest()
    try:
        locator = _run_steps_nrt_free._cache._impl.locator
        cache_dir = locator.get_cache_path()
        stamp = os.path.join(cache_dir, f"gaplab-model-{name}.sha256")
        if os.path.exists(stamp):
            with open(stamp) as fh:
                if fh.read().strip() == digest:
                    return
        py_func = _run_steps_nrt_free.py_func
        for src in own + [f for f in model_files if f not in own]:  # each file's cache folder, as numba locates it
            loc = type(locator).from_function(py_func, src)
            folder = loc.get_cache_path() if loc is not None else None
            if not folder or not os.path.isdir(folder):
                continue
            stem = os.path.splitext(os.path.basename(src))[0] + "."
            for fn in os.listdir(folder):
                if fn.startswith(stem) and fn.endswith((".nbi", ".nbc")):
                    try:
                        os.remove(os.path.join(folder, fn))
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
