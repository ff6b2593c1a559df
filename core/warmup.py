"""Compile every numba kernel once on tiny problems (the kernels are cached on disk with
``cache=True``, so later starts load machine code instead of compiling).

The models to compile come from the problem registry (:func:`gaplab.core.problems.warmup_plan`):
one tiny instance per distinct model class among the registered problems.

Set ``NUMBA_CACHE_DIR`` to redirect the cache, ``NUMBA_DISABLE_JIT=1`` to disable compiling.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np

from .config import STEP_CHOICES as STEP_KINDS  # every step kind, named once in config

__all__ = ["warmup", "STEP_KINDS", "CompileWatch", "CompileProgress"]


@dataclass(frozen=True)
class CompileProgress:
    """What numba has compiled in this process since a :class:`CompileWatch` was entered.

    Attributes
    ----------
    compiles : int
        Functions (one per signature) whose compile has ended.
    passes : int
        Compiler passes that have ended (typing, lowering, ... of every function, nested ones
        included).
    llvm_locks : int
        Times numba took its LLVM lock (lowering and code generation take it for every piece of
        a function): these go on during the long lowering of a big kernel, where no pass ends.
    function : str
        Qualified name of the innermost function being compiled ("" when none is).
    stage : str
        Name of the compiler pass running on it ("" when none is).
    idle_s : float
        Seconds since the last compile event.
    """

    compiles: int
    passes: int
    llvm_locks: int
    function: str
    stage: str
    idle_s: float

    #: LLVM lock acquisitions counted as one unit of :attr:`work` (about as many as passes in a
    #: compile of the solver's kernels)
    LOCKS_PER_UNIT = 15

    @property
    def work(self) -> float:
        """Compile work done, in units that advance while numba works (passes, and LLVM lock
        acquisitions / ``LOCKS_PER_UNIT``): for a fraction of an expected total, not seconds."""
        return self.passes + self.llvm_locks / self.LOCKS_PER_UNIT


class CompileWatch:
    """Follows numba's compile events (``numba.core.event``: one per function compile and per
    compiler pass) in every thread of this process, so that a long compile can report what it
    is doing. Use as a context manager; :meth:`progress` may be called from any thread.

    The listeners run inside numba's compiler on the compiling thread: they only update a few
    counters under a lock. Loading a kernel from the on-disk cache raises no compile event.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._compiles = 0
        self._passes = 0
        self._locks = 0
        self._stack: dict[int, list] = {}   # thread id -> [qualname, ...] of nested compiles
        self._stage: dict[int, str] = {}
        self._last_thread = None
        self._t_event = time.perf_counter()
        self._listeners = ()

    # -- the listeners (numba.core.event.Listener subclasses, made on entry: numba imported lazily)
    def _on_compile(self, start: bool, data) -> None:
        tid = threading.get_ident()
        with self._lock:
            self._t_event = time.perf_counter()
            self._last_thread = tid
            stack = self._stack.setdefault(tid, [])
            if start:
                disp = (data or {}).get("dispatcher")
                func = getattr(disp, "py_func", None)
                stack.append(getattr(func, "__qualname__", None) or str(disp))
            else:
                self._compiles += 1
                if stack:
                    stack.pop()

    def _on_pass(self, start: bool, data) -> None:
        tid = threading.get_ident()
        with self._lock:
            self._t_event = time.perf_counter()
            self._last_thread = tid
            if start:
                name = str((data or {}).get("name", ""))
                self._stage[tid] = name.split(" [", 1)[0]
            else:
                self._passes += 1

    def _on_llvm_lock(self, start: bool, data) -> None:
        if start:
            return
        with self._lock:
            self._t_event = time.perf_counter()
            self._locks += 1

    def __enter__(self):
        from numba.core import event

        watch = self

        class _Listener(event.Listener):
            def __init__(self, fn):
                self.fn = fn

            def on_start(self, ev):
                self.fn(True, ev.data)

            def on_end(self, ev):
                self.fn(False, ev.data)

        self._listeners = (("numba:compile", _Listener(watch._on_compile)),
                           ("numba:run_pass", _Listener(watch._on_pass)),
                           ("numba:llvm_lock", _Listener(watch._on_llvm_lock)))
        for kind, listener in self._listeners:
            event.register(kind, listener)
        return self

    def __exit__(self, *exc):
        from numba.core import event
        for kind, listener in self._listeners:
            event.unregister(kind, listener)
        self._listeners = ()
        return False

    def progress(self) -> CompileProgress:
        """The counts so far and what the most recently active compiling thread works on."""
        with self._lock:
            tid = self._last_thread
            stack = self._stack.get(tid) or []
            function = stack[-1] if stack else ""
            stage = self._stage.get(tid, "") if function else ""
            return CompileProgress(self._compiles, self._passes, self._locks, function, stage,
                                   time.perf_counter() - self._t_event)


def warmup(progress=None, names=None) -> float:
    """Compile (or load from the cache) the solver kernels of every registered problem's model
    class, for every step kind with and without the cache, box constraints and the
    regularization path (Alg. 6-7).

    Parameters
    ----------
    progress : callable(fraction: float, message: str), optional
        Called as the warm-up advances (the app shows it).
    names : sequence of str, optional
        Only the model classes of these registered problems (default: all).

    Returns
    -------
    float
        Seconds spent.
    """
    from .models import max_oracle
    from .problems import model_box, warmup_plan
    from .regpath import regularization_path
    from .solver import Solver

    t0 = time.perf_counter()
    plan = warmup_plan(names)
    jobs = [(job, step, cache) for job in plan for step in STEP_KINDS for cache in (False, True)]
    for j, (job, step, cache) in enumerate(jobs):
        if progress is not None:
            progress(0.9 * j / max(len(jobs), 1),
                     f"compiling {job.model_class} ({', '.join(job.problems)}) / {step}{' + cache' if cache else ''}")
        m = job.model
        s = Solver(m, lam=0.1, step=step, sampling="gap", cache={"enabled": cache}, gap_check=1,
                   batch_step=cache, max_passes=3, **model_box(m))
        s.run()
        s.block_gap_now(0)
        s.exact_gap(count=False)
        max_oracle(m, 0, s.w)
        m.predict(s.w)
    for job in plan:  # box constraints (Paper: App. H)
        if not model_box(job.model):  # (models with a box of their own compiled it above)
            Solver(job.model, lam=0.1, lb=np.zeros(job.model.d), max_passes=2).run()
    if progress is not None:
        progress(0.95, "compiling the regularization path")
    for job in plan:  # Alg. 6-7 kernels (the path does not support a model's box constraints)
        if model_box(job.model):
            continue
        for step in ("fw", "pairwise"):
            regularization_path(job.model, solver_config={"sampling": "gap", "step": step}, eps=0.3,
                                lam_min=1e-2, max_breakpoints=3)
    if progress is not None:
        progress(1.0, "ready")
    return time.perf_counter() - t0
