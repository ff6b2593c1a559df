"""The regularization-path lab's worker thread (Paper: Sec. 4, Alg. 6-7, App. K): it traces the
path, then optionally the warm-started grid search 2^k, and keeps the solver checkpoints a pick
of λ starts from. :class:`PathWorker` is a mixin of :class:`gaplab.app.pathlab.PathLab`; it uses
the lab's lock, state and session.

Threading
---------
A :class:`~gaplab.app.pathlab.PathLab` has its own worker thread (``gaplab-path-<session id>``)
and stop flag, next to the session's worker: the path builds its own solvers on the session's
model and never touches the session's solver. The worker consumes
:func:`gaplab.core.regpath.iter_path` (then, optionally, :func:`~gaplab.core.regpath.iter_grid`),
appends every breakpoint to a :class:`~gaplab.core.regpath.RegPath` as soon as it is computed and
publishes an immutable :class:`~gaplab.app.pathlab_snapshot.PathSnapshot` (at most every
:data:`PUBLISH_PERIOD_S`, and at the end). Stop sets the flag that the core polls after every
solver pass and between breakpoints.

Checkpoints: how memory stays bounded
-------------------------------------
A primal w alone is not a dual point: the solver needs the α_j the breakpoint was computed
from (its gap estimates, the Proposition-1 certificate, the atoms of pairwise/away steps). One
solver state per breakpoint costs 5 MB on OCR-small, 45 MB on OCR-large and 195 MB on CoNLL
(a path has ~200 breakpoints at ε = 0.1), so the worker keeps **checkpoints**: copies of the
breakpoint solvers at indices j ≡ 0 mod s plus the latest one, within
:data:`CHECKPOINT_BUDGET_BYTES`; when the budget would be exceeded, the stride s doubles and
every other checkpoint is dropped (an even spread over the path at any time).
:mod:`gaplab.app.pathlab_pick` replays a λ's dual point from the nearest one.

The path's weights W (J × d float64) are not kept in memory: every breakpoint is streamed to an
on-disk path store (:mod:`gaplab.core.regpath.store`, a temporary directory owned by the lab and
removed on reset/close) as soon as it is computed, so a CoNLL path (d = 7.4 M) keeps all its
breakpoints; the plots use the rows only (no weights), and ``w_at(λ)`` reads the one breakpoint
file it needs. The grid search keeps its rows only.
"""
from __future__ import annotations

import math
import time

import numpy as np

from gaplab.core.regpath import iter_grid, iter_path

from .pathlab_snapshot import end_message

__all__ = ["PathWorker", "CHECKPOINT_BUDGET_BYTES", "grid_lams"]

CHECKPOINT_BUDGET_BYTES = 256 * 2**20   # solver copies kept for picking λ (per session)
MAX_BREAKPOINTS = 2000
MAX_PASSES_PER_BREAKPOINT = 200.0
PUBLISH_PERIOD_S = 0.1


def grid_lams(lam_hi: float, lam_lo: float) -> np.ndarray:
    """The paper's grid 2^k restricted to [lam_lo, lam_hi], decreasing (at least one value)."""
    hi = math.floor(math.log2(lam_hi))
    lo = math.ceil(math.log2(max(lam_lo, 1e-300)))
    if lo > hi:
        return np.array([2.0 ** hi])
    return 2.0 ** np.arange(hi, lo - 1, -1, dtype=np.float64)


class PathWorker:
    """The worker thread of a :class:`~gaplab.app.pathlab.PathLab` (a mixin: the lab's
    ``_lock``, ``_gen``, ``_stop``, ``_path``, ``_grid_rows``, ``_ck``, ``_stride``, ``_status``
    and ``_message`` are its state; :meth:`~gaplab.app.pathlab.PathLab.start` starts
    :meth:`_worker`)."""

    def _worker(self, gen, problem, cfg, scfg, grid, metric=None):
        try:
            self._worker_body(gen, problem, cfg, scfg, grid, metric)
        finally:
            with self._lock:
                path = self._path if self._gen == gen else None
            if path is not None:
                path.close_store()

    def _worker_body(self, gen, problem, cfg, scfg, grid, metric=None):
        last_pub = 0.0

        def stop():
            return self._stop.is_set() or self._gen != gen

        try:
            for p in iter_path(problem.model, cfg, scfg, test_data=problem.test, test_metric=metric,
                               should_stop=stop, keep_solver=True):
                live, p.solver = p.solver, None
                ck = live.copy()  # the generator warm-starts the next breakpoint from `live`
                with self._lock:
                    if self._gen != gen:
                        return
                    path = self._path
                # written to the store outside the lock (fsync); readers (snapshot) take a
                # consistent prefix, and only the row stays in memory
                path.append(p)
                p.w = None
                with self._lock:
                    if self._gen != gen:
                        return
                    self._checkpoint(p.index, ck)
                    now = time.perf_counter()
                    if now - last_pub >= PUBLISH_PERIOD_S or p.end:
                        self._publish_locked()
                        last_pub = now
                del live, ck
            with self._lock:
                if self._gen != gen:
                    return
                path = self._path
                end = path.end_reason if len(path) else "stopped"
                stopped = self._stop.is_set() or end == "stopped"
                self._message = end_message(path)
                self._status = "grid" if (grid and not stopped and len(path)) else (
                    "stopped" if stopped else "done")
                self._publish_locked()
            if self._status == "grid":
                self._run_grid(gen, problem, cfg, scfg, stop, metric)
        except Exception as exc:  # never kill the server: report it in the tab and as a notification
            with self._lock:
                if self._gen != gen:
                    return
                self._status = "error"
                self._message = f"Path error: {type(exc).__name__}: {exc}"
                self._publish_locked()
            self.session.notify(self._message, "error")
            return
        with self._lock:
            if self._gen != gen:
                return
            if self._status in ("running", "grid"):
                self._status = "stopped" if self._stop.is_set() else "done"
            self._publish_locked()

    def _run_grid(self, gen, problem, cfg, scfg, stop, metric=None):
        with self._lock:
            if self._gen != gen:
                return
            path = self._path.snapshot()
        lo = path.lam_end if math.isfinite(path.lam_end) and path.lam_end > 0 else cfg.lam_min
        lams = grid_lams(path.lam_inf, max(lo, cfg.lam_min))
        last_pub = 0.0
        for g in iter_grid(problem.model, lams, eps=cfg.eps, warm_start="primal", solver_config=scfg,
                           test_data=problem.test, max_passes_per_point=MAX_PASSES_PER_BREAKPOINT,
                           should_stop=stop, test_metric=metric):
            with self._lock:
                if self._gen != gen:
                    return
                self._grid_rows.append(g.row())
                now = time.perf_counter()
                if now - last_pub >= PUBLISH_PERIOD_S or g.end:
                    self._publish_locked()
                    last_pub = now

    def _checkpoint(self, j: int, solver) -> None:
        """Keep ``solver`` (a copy of breakpoint j's) within CHECKPOINT_BUDGET_BYTES: indices that
        are multiples of the stride, plus the latest (call with the lock held)."""
        self._ck[j] = solver
        size = max(int(solver.memory_bytes()), 1)
        cap = max(1, CHECKPOINT_BUDGET_BYTES // size)
        for k in [k for k in self._ck if k != j and k % self._stride]:
            del self._ck[k]
        while sum(1 for k in self._ck if k % self._stride == 0) > cap:
            self._stride *= 2
            for k in [k for k in self._ck if k != j and k % self._stride]:
                del self._ck[k]
