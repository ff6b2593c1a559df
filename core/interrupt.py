"""Ctrl-C that keeps what is done.

:func:`deferred_sigint` is used by :meth:`Solver.run`: while a run is going, the first SIGINT
only sets a flag, which the run reads between chunks of block steps (at most one pass and its
gap check). The run then stops with the solver state intact (a later ``run()`` continues from
there) and raises :class:`Interrupted`, a ``KeyboardInterrupt`` that carries the result so far.
A second SIGINT raises ``KeyboardInterrupt`` at once, as usual.

The deferral is only installed in the main thread and only when SIGINT has Python's default
handler (a custom handler of the caller is left alone; worker threads never see SIGINT).

:func:`held_sigint` makes a short store write (a file and the in-memory record of it) one
step that Ctrl-C cannot split: a SIGINT that arrives inside the block is raised as
``KeyboardInterrupt`` when the block ends, after the write and its record agree.
"""
from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["Interrupted", "deferred_sigint", "held_sigint"]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped a run; ``partial`` holds what was done.

    Attributes
    ----------
    partial : Result or RegPath or None
        :class:`gaplab.core.solver.Result` (status ``interrupted``) for :meth:`Solver.run`,
        the finished points (:class:`gaplab.core.regpath.RegPath`, end reason ``interrupted``)
        for a regularization path or a grid search.
    """

    def __init__(self, message: str = "interrupted", partial=None):
        super().__init__(message)
        self.partial = partial


class _Flag:
    __slots__ = ("count",)

    def __init__(self):
        self.count = 0

    def is_set(self) -> bool:
        return self.count > 0


_active: _Flag | None = None


@contextlib.contextmanager
def deferred_sigint():
    """Within the block, the first SIGINT sets the yielded flag (``flag.is_set()``) instead of
    raising KeyboardInterrupt; a second one raises. Nested uses share the outer flag. Outside the
    main thread, or when SIGINT has a non-default handler, the flag never gets set and SIGINT
    behaves as before."""
    global _active
    if _active is not None:
        yield _active
        return
    flag = _Flag()
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield flag
        return

    def handler(signum, frame):
        flag.count += 1
        if flag.count > 1:
            raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main interpreter
        yield flag
        return
    _active = flag
    try:
        yield flag
    finally:
        _active = None
        signal.signal(signal.SIGINT, signal.default_int_handler)


@contextlib.contextmanager
def held_sigint():
    """Within the block a SIGINT is held: it raises ``KeyboardInterrupt`` as the block ends
    (normally, not on an exception, which propagates instead), so the block's write and its
    bookkeeping are never split. Nested blocks, worker threads and a non-default SIGINT handler
    (e.g. :func:`deferred_sigint`, which only sets a flag) leave SIGINT as it is."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    got = []

    def handler(signum, frame):
        got.append(signum)

    try:
        signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main interpreter
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if got:
        raise KeyboardInterrupt
