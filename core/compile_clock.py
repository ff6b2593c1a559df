"""Seconds spent in numba's compiler (compiling kernels or loading them from the on-disk
cache), per thread: the solver keeps them out of its own time, and :func:`watch_compiles` lets
a display say "compiling" meanwhile."""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable

import numba.core.event

__all__ = ["COMPILE_CLOCK", "watch_compiles"]


class _CompileClock(numba.core.event.Listener):
    """Seconds each thread spends in numba's global compiler lock: compiling a kernel for new
    argument types, or loading its machine code from the on-disk cache (a call of a kernel
    already compiled for its argument types does not take the lock). The solver subtracts
    this time from its own (``wall_time_s``) and reports it as ``compile_time_s``: on a cold
    cache the first pass and the first gap check are mostly compilation, which is not the
    method's cost. Per thread, because the app runs several solvers in worker threads;
    nested (reentrant) lock holds count once."""

    def __init__(self):
        self._local = threading.local()

    def _state(self):
        st = self._local
        if not hasattr(st, "depth"):
            st.depth, st.t0, st.total, st.watchers = 0, 0.0, 0.0, []
        return st

    def on_start(self, event):
        st = self._state()
        if st.depth == 0:
            st.t0 = time.perf_counter()
            self._notify(st, True)
        st.depth += 1

    def on_end(self, event):
        st = self._state()
        st.depth = max(st.depth - 1, 0)
        if st.depth == 0:
            st.total += time.perf_counter() - st.t0
            self._notify(st, False)

    @staticmethod
    def _notify(st, active):
        for fn in list(st.watchers):
            try:
                fn(active)
            except Exception:  # noqa: BLE001 - a failing display must not fail numba's compile
                pass

    def total(self) -> float:
        """Seconds this thread has spent in the compiler lock (finished holds)."""
        return self._state().total


COMPILE_CLOCK = _CompileClock()
numba.core.event.register("numba:compiler_lock", COMPILE_CLOCK)


@contextlib.contextmanager
def watch_compiles(callback: Callable[[bool], None]):
    """Within the block, ``callback(True)`` when this thread starts compiling (or loading
    compiled kernels from the cache) and ``callback(False)`` when it is done: the CLI's progress
    bar says "compiling" meanwhile."""
    st = COMPILE_CLOCK._state()
    st.watchers.append(callback)
    try:
        yield
    finally:
        st.watchers.remove(callback)
