"""The regularization-path lab of one session (Paper: Sec. 4, Proposition 1, Alg. 6-7, App. K):
trace a path live, compare it with a warm-started grid search, pick a λ and load its model into
the session's solver. No Panel import (testable headless); :mod:`gaplab.app.path_tab` draws it.

This module holds :class:`PathLab`: the path's settings (``param``), the lab's state, its life
cycle (Start, Stop, reset when the dataset changes, close) and the snapshots it publishes. The
lab's other concerns are in the modules next to it, one each:

- :mod:`gaplab.app.pathlab_snapshot`: :class:`~gaplab.app.pathlab_snapshot.PathSnapshot`, what
  the views draw, with the path's columns and end reasons;
- :mod:`gaplab.app.pathlab_worker`: the lab's worker thread (the path, then the grid search) and
  the solver checkpoints it keeps within a memory budget
  (:class:`~gaplab.app.pathlab_worker.PathWorker`);
- :mod:`gaplab.app.pathlab_pick`: picking a λ (w_at(λ) read from the path's on-disk store, the
  dual point replayed from a checkpoint and loaded into the session's solver) and opening a saved
  path store (:class:`~gaplab.app.pathlab_pick.PathPicker`).

A :class:`PathLab` has its own worker thread and stop flag, next to the session's worker: the
path builds its own solvers on the session's model and never touches the session's solver.
"""
from __future__ import annotations

import math
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import param

from gaplab.core.regpath import HEURISTIC_KAPPA, PathConfig, RegPath, path_defaults

from .pathlab_pick import PathPicker
from .pathlab_snapshot import COLUMNS, PathSnapshot, cols_end, empty_cols, frozen, problem_metric
from .pathlab_worker import MAX_BREAKPOINTS, MAX_PASSES_PER_BREAKPOINT, PathWorker

__all__ = ["PathLab"]

_PATH_DEFAULTS = path_defaults()  # ε, κ and λ_min start at PathConfig's defaults


class PathLab(PathWorker, PathPicker, param.Parameterized):
    """Settings, worker and results of the regularization path of one :class:`Session`.

    The solver run at every breakpoint is the session's (sampling, p, step kind, cache, gap
    check, seed) at the time of Start; the path's own settings are below.
    """

    eps = param.Number(default=_PATH_DEFAULTS["eps"], bounds=(1e-4, 10.0), label="ε (path accuracy)",
                       doc="Every λ on an ε-approximate path gets a w with duality gap <= ε (Paper: Sec. 4); "
                           "a heuristic path aims at ε but certifies nothing (App. K)")
    kappa = param.Number(default=_PATH_DEFAULTS["kappa"], bounds=(0.05, 0.99), step=0.05, label="κ (solve to κε)",
                         doc=f"The solver runs to κε at each breakpoint ({_PATH_DEFAULTS['kappa']:g}; "
                             f"heuristic path {HEURISTIC_KAPPA:g})")
    heuristic = param.Boolean(default=False, label="Heuristic path (App. K)",
                              doc=f"Stop on the stale gap estimates (no exact gap pass); κ = {HEURISTIC_KAPPA:g}")
    lam_min = param.Number(default=_PATH_DEFAULTS["lam_min"], bounds=(1e-9, 1e6), label="λ_min",
                           doc="The path stops once it covers λ_min")
    grid = param.Boolean(default=False, label="Compare: warm-started grid 2^k",
                         doc="After the path, a grid search over λ = 2^k (keep-primal warm starts)")
    start_action = param.Action(lambda self: self.start(), label="Start path")
    stop_action = param.Action(lambda self: self.stop(), label="Stop path")

    def __init__(self, session, **params):
        super().__init__(**params)
        self.session = session
        self._lock = threading.Lock()
        self._pick_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._version = 0
        self._pick_seq = 0     # bumped by every read of w_at(λ): only the latest one is published
        self._gen = 0          # bumped by start/reset/close: a stale worker publishes nothing
        self._reset_state()
        self.param.watch(self._on_heuristic, "heuristic")
        self._snapshot = self._make_snapshot()

    def _reset_state(self):
        self._gen += 1
        self._path: RegPath | None = None
        self._grid_rows: list[dict] = []
        self._ck: dict[int, object] = {}
        self._stride = 1
        self._status = "idle"
        self._problem = None
        self._cfg: PathConfig | None = None
        self._scfg = None
        self._settings: dict = {}
        self._label = ""
        self._t0 = time.perf_counter()
        self._elapsed = 0.0
        self._message = ""
        self._picked = math.nan
        self._picked_piece = -1
        self._opened = False
        self._w_info: dict = {}
        self._pending: dict = {}
        self._metric = None   # PathMetric of the problem (None: its metric is the test error)
        tmp, self._store_tmp = getattr(self, "_store_tmp", None), None
        if tmp is not None:  # the previous path's store (its worker was stopped or abandoned)
            shutil.rmtree(tmp, ignore_errors=True)

    def _on_heuristic(self, event):
        self.kappa = HEURISTIC_KAPPA if event.new else _PATH_DEFAULTS["kappa"]

    # ------------------------------------------------------------------ state
    @property
    def snapshot(self) -> PathSnapshot:
        return self._snapshot

    @property
    def running(self) -> bool:
        t = self._thread
        return t is not None and t.is_alive()

    @property
    def path(self) -> RegPath | None:
        """A consistent copy of the path computed so far (None before any Start)."""
        with self._lock:
            return None if self._path is None else self._path.snapshot()

    def wait(self, timeout: float = 60.0) -> bool:
        t = self._thread
        if t is not None:
            t.join(timeout)
            return not t.is_alive()
        return True

    # ------------------------------------------------------------------ start / stop
    def start(self) -> bool:
        """Start a new path on the session's dataset with the session's solver settings."""
        s = self.session
        if self.running:
            s.notify("The path is already being computed; Stop it first.", "warning")
            return False
        if s.closed or s.status == "loading" or s.problem is None:
            s.notify("Path: no dataset is loaded yet.", "warning")
            return False
        problem = s.problem
        try:
            scfg = s.solver_config()
            d = int(problem.model.arrays.d)
            max_bp = MAX_BREAKPOINTS  # W is on disk: no memory bound on the number of breakpoints
            cfg = PathConfig(eps=float(self.eps), kappa=float(self.kappa), lam_min=float(self.lam_min),
                             heuristic=bool(self.heuristic), true_gaps=bool(self.heuristic),
                             max_passes_per_breakpoint=MAX_PASSES_PER_BREAKPOINT, max_breakpoints=max_bp)
        except (ValueError, TypeError) as exc:
            s.notify(f"Path: invalid setting ({exc}).", "error")
            return False
        metric = problem_metric(problem)
        if s.running:
            s.pause()  # two solvers on two shared cores would halve both
        self._stop.clear()
        with self._lock:
            self._reset_state()
            self._problem = problem
            self._cfg, self._scfg = cfg, scfg
            self._settings = {k: getattr(s, k) for k in s.SOLVER_SETTINGS if k != "lam"}
            self._label = s.run_label().rsplit(" · λ=", 1)[0]
            self._metric = metric
            meta = {"dataset": problem.name, "path_config": cfg.to_dict(), "n": int(problem.model.arrays.n), "d": d}
            if metric is not None:
                meta["test_metric"] = metric.describe()
            self._path = RegPath("heuristic" if cfg.heuristic else "eps", meta)
            self._store_tmp = tempfile.mkdtemp(prefix="gaplab-path-")
            self._path.attach_store(Path(self._store_tmp) / "path")
            self._status = "running"
            self._t0 = time.perf_counter()
            self._message = (f"computing the {'heuristic' if cfg.heuristic else 'ε-approximate'} path on "
                             f"{problem.name} (ε = {cfg.eps:g}, κ = {cfg.kappa:g})…")
            self._publish_locked()
            gen = self._gen
        grid = bool(self.grid)
        t = threading.Thread(target=self._worker, args=(gen, problem, cfg, scfg, grid, metric),
                             name=f"gaplab-path-{s.session_id}", daemon=True)
        self._thread = t
        t.start()
        return True

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the path (the core polls the flag after every solver pass): the points computed
        so far stay, and can be picked."""
        t = self._thread
        if t is not None and t.is_alive():
            self._stop.set()
            t.join(timeout)

    def reset(self) -> None:
        """Stop and forget the path (the session's dataset changed)."""
        self.stop()
        with self._lock:
            had = self._path is not None
            self._reset_state()
            if had:
                self._message = "The dataset changed: start a new path."
            self._publish_locked()

    def close(self) -> None:
        self.stop()
        with self._lock:
            self._reset_state()
            self._status = "closed"
            self._publish_locked()

    # ------------------------------------------------------------------ snapshots
    def _publish_locked(self):
        self._version += 1
        self._snapshot = self._make_snapshot()

    def _make_snapshot(self) -> PathSnapshot:
        # the worker appends outside the lock: read a consistent prefix of the path
        path = self._path.snapshot() if self._path is not None else None
        cols = empty_cols()
        n_points, end, lam_end = 0, "", math.nan
        if path is not None and len(path):
            cols = {c: frozen(path.column(c)) for c in COLUMNS}
            n_points = len(path)
            end = str(cols_end(path))
            lam_end = path.lam_end
        if self._status in ("running", "grid"):
            self._elapsed = time.perf_counter() - self._t0
        if self._status in ("stopped", "done", "grid", "error") and n_points and not end:
            end = "stopped"
        grid = {k: frozen(np.array([r[k] for r in self._grid_rows], dtype=np.float64))
                for k in ("lam", "cum_passes", "cum_time_s", "test_error", "test_metric", "exact_gap")}
        cfg = self._cfg
        return PathSnapshot(
            version=self._version, status=self._status,
            dataset=self._problem.name if self._problem is not None else "",
            kind=path.kind if path is not None else "", eps=cfg.eps if cfg else math.nan,
            kappa=cfg.kappa if cfg else math.nan, lam_min=cfg.lam_min if cfg else math.nan,
            solver_label=self._label, cols=cols, n_points=n_points, end=end, lam_end=lam_end, grid=grid,
            elapsed_s=self._elapsed, checkpoints=tuple(sorted(self._ck)), picked=self._picked,
            picked_piece=self._picked_piece, message=self._message,
            max_breakpoints=cfg.max_breakpoints if cfg else 0, settings=dict(self._settings),
            store=str(path.store) if path is not None and path.store is not None else "",
            opened=self._opened, w_info=dict(self._w_info),
            metric=dict(path.meta.get("test_metric") or {}) if path is not None else {},
            pending_load=dict(self._pending))
