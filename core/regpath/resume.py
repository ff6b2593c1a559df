"""Resuming a regularization path from the solver state saved with it (a checkpoint, Ctrl-C or a
full disk): the path continues from its last saved breakpoint (Paper: Alg. 7) to the end an
uninterrupted run reaches, breakpoint for breakpoint.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable

from . import store as pst
from .certificate import _check_model
from .collect import _collect
from .config import PathConfig
from .container import RegPath
from .epspath import _induction_points
from .persist import PathFileError
from .points import PathMetric, PathPoint, _as_tests, _metric_meta
from .run import _Clock
from .solverstate import _restore_solver
from .store import PathStoreError
from ..storelock import store_lock

__all__ = ["resume_path"]


def _resumable(path: RegPath, model, bad) -> dict:
    """The saved solver state's info of ``path``, checked: the model's n and d, a regularization
    path (not a grid), unfinished, with a solver state that belongs to its last breakpoint (a
    store's state of an earlier breakpoint drops the later ones: they are recomputed)."""
    streamed = path.store is not None
    n, d = int(model.arrays.n), int(model.arrays.d)
    if path.meta.get("n") != n or path.meta.get("d") != d:
        raise bad(f"it was computed on a model with n={path.meta.get('n')}, d={path.meta.get('d')}; this model has "
                  f"n={n}, d={d}")
    if path.kind == "grid":
        raise bad("it is a grid search (only a regularization path can be resumed)")
    if not len(path):
        raise bad("it holds no breakpoint (start the path again)")
    end = path._rows[-1]["end"]
    if end not in ("", "interrupted"):
        raise bad(f"the path is finished (end: {end!r})")
    if path._resume_arrays is None:
        raise bad("it holds no solver state (save with --checkpoint-every N, or interrupt with Ctrl-C)")
    info = path.meta.pop("resume_state")
    point_k = info.get("point")
    if streamed and isinstance(point_k, int) and 0 <= point_k < len(path) - 1:
        # the state of an earlier breakpoint: recompute the later ones (deterministic) from it
        del path._rows[point_k + 1:], path._W[point_k + 1:], path._files[point_k + 1:]
        if path._rows[-1]["end"] not in ("", "interrupted"):
            raise bad(f"the saved solver state belongs to breakpoint {point_k}, which ends the path")
    elif info.get("point") != len(path) - 1:
        raise bad("the saved solver state does not belong to the last breakpoint")
    return info


def _restored(path: RegPath, model, info: dict, bad):
    """(PathConfig, Solver) of the saved path: its settings and its last breakpoint's solver."""
    arrays = path._resume_arrays
    path._resume_arrays = None
    try:
        cfg = PathConfig(**{k: (float(v) if isinstance(v, str) else v) for k, v in path.meta["path_config"].items()})
        solver = _restore_solver(model, info, arrays, bad)
    except PathFileError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise bad(f"broken saved settings ({type(exc).__name__}: {exc})") from None
    return cfg, solver


def resume_path(file, model, *, test_data=None, should_stop=None,
                callback: Callable[[PathPoint], object] | None = None, checkpoint_every: int = 0,
                checkpoint_file=None, test_metric: PathMetric | None = None) -> RegPath:
    """Continue a regularization path saved with its solver state (an interrupted path, or a
    checkpoint: ``gaplab path --checkpoint-every N``), from its last breakpoint, to the end an
    uninterrupted run reaches (Paper: Alg. 7). The path and solver settings are those saved in
    the file.

    Parameters
    ----------
    file : str or os.PathLike
        The saved path (.npz) or path store (a directory).
    model : ChainModel or MulticlassModel
        The model over the same training set (n and d are checked).
    test_data, should_stop, callback, test_metric :
        As in :func:`~gaplab.core.regpath.epspath.regularization_path`.
    checkpoint_every, checkpoint_file :
        Save the path (with the solver state) every N new breakpoints.

    Returns
    -------
    RegPath
        The saved points followed by the new ones.

    Raises
    ------
    PathFileError
        If the file is not a path file, holds no solver state, is a grid search or a finished
        path, or does not match the model.
    PathStoreError
        The same for a path store.
    Interrupted
        On Ctrl-C, with the points so far (resumable again).
    StoreLockedError
        Another process writes to the store (one writer per store:
        :mod:`gaplab.core.storelock`); its lock is taken before the store is read.
    """
    _check_model(model)
    is_store = Path(os.fspath(file)).is_dir()
    with store_lock(file, what="path store") if is_store else contextlib.nullcontext():
        return _resume(file, model, test_data, should_stop, callback, checkpoint_every, checkpoint_file,
                       test_metric)


def _resume(file, model, test_data, should_stop, callback, checkpoint_every, checkpoint_file, test_metric):
    """:func:`resume_path` with the store's writer lock held."""
    path = RegPath.open(file)
    streamed = path.store is not None

    def bad(problem):
        if streamed:
            return PathStoreError(f"path store {str(file)!r}: cannot resume: {problem}")
        return PathFileError(f"{file}: cannot resume: {problem}")

    if streamed and isinstance(path.meta.get("resume_state"), dict):
        path._resume_arrays = pst.read_resume_arrays(path.store, path.meta["resume_state"])
    info = _resumable(path, model, bad)
    cfg, solver = _restored(path, model, info, bad)
    path._rows[-1]["end"] = ""
    point = path.point(len(path) - 1)
    path.meta.pop("end", None)
    if streamed:
        path._attach_writer(path.store, mode="append")  # lists this path's rows (end reason cleared)
    clock = _Clock(offset=point.cum_time_s)
    tests = _as_tests(test_data, test_metric)
    path.meta = _metric_meta(path.meta, tests.metric)
    points = _induction_points(model, cfg, solver, point, tests, should_stop, True, clock)
    return _collect(path, points, callback, checkpoint_every=checkpoint_every, checkpoint_file=checkpoint_file)
