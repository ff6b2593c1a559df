"""Collecting the points of a path or grid generator into a :class:`~gaplab.core.regpath.container.RegPath`:
the callback, checkpoints of the solver state, Ctrl-C (the finished points are kept and stay
resumable) and a failed store write (the store lists exactly the breakpoints written before).
"""
from __future__ import annotations

import contextlib

from ..interrupt import Interrupted, held_sigint


def _record(path, p, first_is_lam_inf: bool) -> None:
    """Append point ``p`` to ``path`` (a store-backed path writes it now, atomically) and keep its
    solver as the path's only one: all recorded, or none."""
    with held_sigint():
        if first_is_lam_inf and p.index == 0:
            path.meta["lam_inf"] = p.lam
        path.append(p)
        path.resume_solver = p.solver
        p.solver = None  # the path keeps the last solver only
    path._reserve_state_space()


def _after_point(path, p, count: int, callback, checkpoint_every: int, checkpoint_file, streamed: bool) -> bool:
    """The callback (True: stop; the point is marked "stopped"), then a checkpoint every
    ``checkpoint_every`` points; returns whether to stop."""
    stop = callback is not None and callback(p) is True
    if stop and not p.end:
        path._rows[-1]["end"] = p.end = "stopped"
        path._sync_store()
    if checkpoint_every and count % checkpoint_every == 0 and not path._rows[-1]["end"]:
        if streamed:
            path.save_resume_state()
        elif checkpoint_file is not None:
            path.save(checkpoint_file)
    if streamed:
        p.w = None  # nothing of w stays in memory once it is on disk
    return stop


def _interrupted(path, streamed: bool) -> Interrupted:
    """After Ctrl-C: the last point's end reason becomes "interrupted", a store keeps the solver
    state (the store is the output: keep it resumable); returns the exception to raise."""
    if path._rows and not path._rows[-1]["end"]:
        path._rows[-1]["end"] = "interrupted"
    elif not path._rows:
        path.meta["end"] = "interrupted"
    if streamed:
        path._sync_store()
        path.save_resume_state()
        path._close_writer()
    return Interrupted(f"{'grid search' if path.kind == 'grid' else 'regularization path'} interrupted "
                       f"after {len(path)} points", partial=path)


def _write_failed(path, streamed: bool) -> None:
    """After a failed write (disk full, ...): the store lists exactly the breakpoints written
    before; keep it resumable from the last of them: the space reserved for its solver state is
    freed and the state written there."""
    if streamed and path._writer is not None and path._rows and not path._rows[-1]["end"]:
        path._writer.free_reserve()
        with contextlib.suppress(OSError):
            path.save_resume_state()
    path._close_writer()


def _finish(path, streamed: bool) -> None:
    """A finished path drops its solver state; one abandoned mid-way keeps it resumable."""
    if path._rows and path._rows[-1]["end"]:
        path.resume_solver = None  # finished: nothing to resume
        if streamed:
            path._writer.drop_resume_state()
    elif streamed and path.resume_solver is not None:
        path.save_resume_state()  # abandoned mid-way (generator ended): keep it resumable
    path._close_writer()


def _collect(path, points, callback, first_is_lam_inf=False, checkpoint_every: int = 0,
             checkpoint_file=None):
    """Append every point of a path/grid generator to ``path``; ``callback(point)`` returning
    True stops (the point is marked "stopped").

    Every ``checkpoint_every`` points the path so far is saved to ``checkpoint_file`` with the
    solver state of its last point (atomically; resumable with
    :func:`~gaplab.core.regpath.resume.resume_path`). On Ctrl-C (KeyboardInterrupt, also from the
    callback) the finished points are kept, the last one gets the end reason "interrupted"
    (``path.resume_solver`` holds its solver) and :class:`~gaplab.core.interrupt.Interrupted` is raised with
    ``partial=path``."""
    count = 0
    streamed = path._writer is not None
    try:
        for p in points:
            _record(path, p, first_is_lam_inf)
            count += 1
            if _after_point(path, p, count, callback, checkpoint_every, checkpoint_file, streamed):
                break
    except KeyboardInterrupt:
        raise _interrupted(path, streamed) from None
    except OSError:
        _write_failed(path, streamed)
        raise
    except BaseException:
        path._close_writer()
        raise
    try:
        _finish(path, streamed)
    finally:
        path._close_writer()  # also when the last write fails: the lock and the space reserve go
    return path
