"""The regularization-path lab of one session (Paper: Sec. 4, Proposition 1, Alg. 6-7, App. K):
trace a path live, compare it with a warm-started grid search, pick a λ and load its model into
the session's solver. No Panel import (testable headless); :mod:`gaplab.app.path_tab` draws it.

Threading
---------
A :class:`PathLab` has its own worker thread (``gaplab-path-<session id>``) and stop flag, next
to the session's worker: the path builds its own solvers on the session's model and never
touches the session's solver. The worker consumes :func:`gaplab.core.regpath.iter_path` (then,
optionally, :func:`~gaplab.core.regpath.iter_grid`), appends every breakpoint to a
:class:`~gaplab.core.regpath.RegPath` as soon as it is computed and publishes an immutable
:class:`PathSnapshot` (at most every 100 ms, and at the end). Stop sets the flag that the core
polls after every solver pass and between breakpoints.

Picking a λ: which dual point, and how memory stays bounded
-----------------------------------------------------------
A primal w alone is not a dual point: the solver needs the α_j the breakpoint was computed
from (its gap estimates, the Proposition-1 certificate, the atoms of pairwise/away steps). One
solver state per breakpoint costs 5 MB on OCR-small, 45 MB on OCR-large and 195 MB on CoNLL
(a path has ~200 breakpoints at ε = 0.1), so the lab keeps **checkpoints**: copies of the
breakpoint solvers at indices j ≡ 0 mod s plus the latest one, within
:data:`CHECKPOINT_BUDGET_BYTES`; when the budget would be exceeded, the stride s doubles and
every other checkpoint is dropped (an even spread over the path at any time).

A pick (:meth:`PathLab.pick`) first reads w_at(λ) from the path's store (below; one breakpoint
file, tens of ms even on CoNLL) and publishes its test error and test metric
(:attr:`PathSnapshot.w_info`). Loading the dual point into the session's solver follows at once
when the replay from the nearest checkpoint is short (the breakpoints' own solve times sum to at
most :data:`REPLAY_AUTO_S`: always on OCR, where every few breakpoints have a checkpoint);
otherwise (a late λ on CoNLL, where one 195 MB checkpoint fits the budget and the replay takes
minutes) the pick stops there and :attr:`PathSnapshot.pending_load` offers the load, which the
tab shows as a button.

To load λ's dual point: j = the path's piece containing λ. From the closest
checkpoint j' <= j the lab *replays* the induction steps j'+1..j exactly as ``iter_path`` did
them (Proposition-1 warm start, then the same solver run to κε; the solver state holds its RNG,
so the replay is deterministic and is checked against the stored w_j), then warm-starts at λ:
Proposition 1 (``prop1_warm_start``: w kept, α rescaled towards the ground truth, gap estimates
moved by (1 − ρ)δ_i) for λ in [λ_{j+1}, λ_j], or the dual warm start (α kept, w scaled by λ_0/λ)
above λ_0 = λ_∞. Either way the loaded solver's w is exactly ``RegPath.w_at(λ)``. The work runs
in the session's worker thread (status "loading"), never in the UI thread; a counted exact gap
pass then shows the model's duality gap and test error.

The path's weights W (J × d float64) are not kept in memory: every breakpoint is streamed to an
on-disk path store (:mod:`gaplab.core.regpath.store`, a temporary directory owned by the lab and
removed on reset/close) as soon as it is computed, so a CoNLL path (d = 7.4 M) keeps all its
breakpoints; the plots use the rows only (no weights), and ``w_at(λ)`` reads the one breakpoint
file it needs. The grid search keeps its rows only.

Opening a saved path store (:meth:`PathLab.open_store`, e.g. one written by
``gaplab path --store DIR``) shows its rows on the current dataset (n and d checked); a pick on
such a path, which has no solver checkpoints, reads ``w_at(λ)`` from the store and reports its
test error (:attr:`PathSnapshot.w_info`) instead of loading a solver.
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

from gaplab.core.regpath import (HEURISTIC_KAPPA, PathConfig, PathFileError, PathStoreError, RegPath, induction_step,
                                 path_defaults, prop1_warm_start)

from .pathlab_snapshot import COLUMNS, PathSnapshot, cols_end, empty_cols, end_message, frozen, problem_metric
from .pathlab_worker import MAX_BREAKPOINTS, MAX_PASSES_PER_BREAKPOINT, PathWorker

__all__ = ["PathLab", "REPLAY_AUTO_S"]

_PATH_DEFAULTS = path_defaults()  # ε, κ and λ_min start at PathConfig's defaults
#: a pick loads the dual point into the session's solver by itself only when replaying from the
#: nearest checkpoint is expected to take at most this long (the breakpoints' own solve times);
#: otherwise it shows w_at(λ) read from the store at once and offers the load as a button
REPLAY_AUTO_S = 2.0


class PathLab(PathWorker, param.Parameterized):
    """Settings, worker and results of the regularization path of one :class:`Session`.

    The solver run at every breakpoint is the session's (sampling, p, step kind, cache, gap
    check, seed) at the time of Start; the path's own settings are below.
    """

    eps = param.Number(default=_PATH_DEFAULTS["eps"], bounds=(1e-4, 10.0), label="ε (path accuracy)",
                       doc="Every λ on the path gets a w with duality gap <= ε (Paper: Sec. 4)")
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

    # ------------------------------------------------------------------ the on-disk store
    def open_store(self, directory) -> bool:
        """Show a saved path store (``gaplab path --store DIR``) computed on the session's
        dataset: its rows at once, ``w_at(λ)`` read on demand by :meth:`pick`. Returns False with
        a notification naming the problem (not a store, another dataset or d, broken file)."""
        s = self.session
        if self.running:
            s.notify("The path is being computed; Stop it first.", "warning")
            return False
        problem = s.problem
        if s.closed or problem is None:
            s.notify("Open path store: no dataset is loaded yet.", "warning")
            return False
        try:
            path = RegPath.open(str(directory).strip(), model=problem.model)
            if path.kind == "grid":
                raise PathStoreError(f"path store {str(directory)!r} holds a grid search, not a path")
            if not len(path):
                raise PathStoreError(f"path store {str(directory)!r} holds no breakpoint")
            pc = path.meta.get("path_config") or {}
            cfg = PathConfig(**{k: (float(v) if isinstance(v, str) else v) for k, v in pc.items()})
        except (PathStoreError, PathFileError, FileNotFoundError, ValueError, TypeError) as exc:
            s.notify(f"Open path store: {exc}", "error")
            return False
        with self._lock:
            self._reset_state()
            self._problem, self._cfg, self._path = problem, cfg, path
            self._opened = True
            self._status = "done"
            self._label = "as saved in the store"
            self._message = f"opened {directory}: " + end_message(path)
            self._publish_locked()
        return True

    def w_at(self, lam: float) -> np.ndarray:
        """The path's w at λ, read from its store (only the breakpoint of λ's piece)."""
        with self._lock:
            path = None if self._path is None else self._path.snapshot()
        if path is None or not len(path):
            raise ValueError("no path yet")
        return path.w_at(float(lam))

    def _pick_from_store(self, lam: float, path: RegPath, problem) -> bool:
        """Read w_at(λ) from the store in a thread; publish its piece, nnz, read time, test error
        and test metric (no solver is loaded: an opened store has no dual point to warm-start
        from)."""
        s = self.session
        try:
            j, _scale = path.piece_at(lam)
        except ValueError as exc:
            s.notify(f"Pick: {exc}.", "warning")
            return False
        with self._lock:
            self._pending = {}
        self._read_w_at(lam, j, path, problem)
        return True

    def _read_w_at(self, lam: float, j: int, path: RegPath, problem) -> None:
        """In a thread: w_at(λ) from the path's store (one breakpoint file) and its test numbers,
        published as :attr:`PathSnapshot.w_info` (tens of ms on CoNLL: no solver involved)."""
        s = self.session
        with self._lock:
            self._pick_seq += 1
            seq = self._pick_seq
        t_pick = time.perf_counter()

        def job():
            try:
                t0 = time.perf_counter()
                w = path.w_at(lam)
                read_s = time.perf_counter() - t0
                # w_at(λ) is w_j (or, above λ_0, a positive multiple with the same predictions):
                # its test numbers are the ones recorded in breakpoint j's row; computed only
                # when the row lacks them (a store written without test data or metric)
                te = float(path.column("test_error")[j])
                if not math.isfinite(te) and problem.test is not None:
                    te = float(problem.model.error(w, problem.test))
                metric = problem_metric(problem)
                tm = float(path.column("test_metric")[j]) if metric is not None else math.nan
                if metric is not None and not math.isfinite(tm):
                    tm = float(metric.fn(w))
            except (PathStoreError, ValueError, OSError) as exc:
                s.notify(f"Pick: {exc}", "error")
                return
            info = {"lam": lam, "piece": j, "nnz": int(np.count_nonzero(w)), "d": int(w.size),
                    "read_s": read_s, "test_error": te, "norm": float(np.linalg.norm(w)),
                    "test_metric": tm, "metric": metric.name if metric is not None else "",
                    "total_s": time.perf_counter() - t_pick}
            with self._lock:
                if (self._path is not None and self._path.store == path.store and self._problem is problem
                        and self._pick_seq == seq):   # a later pick's numbers are not overwritten
                    self._picked, self._picked_piece, self._w_info = lam, j, info
                    self._publish_locked()

        threading.Thread(target=job, name="gaplab-path-w-at", daemon=True).start()

    # ------------------------------------------------------------------ picking a λ
    def pick(self, lam: float, load: bool | None = None) -> bool:
        """Pick ``lam`` on the path: w_at(λ) is read from the path's store at once (its test
        numbers in :attr:`PathSnapshot.w_info`) and the path's model at λ (its dual point) is
        loaded into the session's solver, in the session's worker thread. Returns False with a
        notification if it cannot. See the module docstring.

        Parameters
        ----------
        lam : float
            λ > 0 within the path's range.
        load : bool or None
            Load the dual point into the solver: None (default) when the replay from the nearest
            checkpoint is expected to take at most :data:`REPLAY_AUTO_S` seconds (else the pick
            shows w_at(λ) only and :attr:`PathSnapshot.pending_load` offers the load); True:
            always; False: never. An opened store has no dual point: never.
        """
        s = self.session
        with self._lock:
            path = None if self._path is None else self._path.snapshot()
            cks = dict(self._ck)
            problem, cfg = self._problem, self._cfg
            settings = dict(self._settings)
        try:
            lam = float(lam)
        except (TypeError, ValueError):
            s.notify(f"Pick: λ must be a number, got {lam!r}.", "warning")
            return False
        if path is None or not len(path):
            s.notify("Pick: compute a path first (Start path).", "warning")
            return False
        if problem is None or s.problem is not problem:
            s.notify("Pick: the path was computed on another dataset; start a new path.", "warning")
            return False
        if not (math.isfinite(lam) and lam > 0):
            s.notify(f"Pick: λ must be > 0, got {lam!r}.", "warning")
            return False
        if not cks:   # an opened store: no solver checkpoints, read w_at(λ) from the store
            return self._pick_from_store(lam, path, problem)
        try:
            j, _scale = path.piece_at(lam)
        except ValueError as exc:
            s.notify(f"Pick: {exc}.", "warning")
            return False
        rows = path.rows()
        base_j = max(k for k in cks if k <= j)   # checkpoint 0 is never dropped
        replay = j - base_j
        est_s = float(sum(rows[k]["time_s"] for k in range(base_j + 1, j + 1)))
        if path.store is not None:   # the numbers of w(λ) at once, from the store
            self._read_w_at(lam, j, path, problem)
        if load is None:
            load = est_s <= REPLAY_AUTO_S or path.store is None
        if not load:
            with self._lock:
                if self._problem is problem:
                    self._picked, self._picked_piece = lam, j
                    self._pending = {"lam": lam, "piece": j, "base": base_j, "replay": replay, "est_s": est_s}
                    self._publish_locked()
            return True
        with self._lock:
            if self._pending:
                self._pending = {}
                self._publish_locked()
        base = cks[base_j]
        exact = path.kind == "eps"
        w_j = path.point(j).w   # one row (path.W would stack all J weight vectors)

        def make(should_stop):
            with self._pick_lock:
                sol = base
                for k in range(base_j + 1, j + 1):  # replay the induction steps base_j+1..j
                    if should_stop():
                        return None
                    sol = _replay_step(sol, rows[k - 1], cfg, exact)
                if j > base_j and not np.allclose(sol.w, w_j, rtol=1e-9, atol=1e-12):
                    s.notify(f"Pick: the replay of breakpoints {base_j + 1}..{j} differs from the "
                             "stored path (max |Δw| = "
                             f"{np.max(np.abs(sol.w - w_j)):.2e}).", "warning")
                if lam >= rows[j]["lam"]:   # j = 0 and λ >= λ_0: α_∞ kept, w = (λ_0/λ)·w_0
                    new = sol.warm_start(lam, keep="dual")
                else:                        # Proposition 1: w_j kept, α_j rescaled (ρ = λ/λ_j)
                    new = prop1_warm_start(sol, lam, gap=rows[j]["gap"] if exact else math.nan)
            with self._lock:
                if self._problem is problem:
                    self._picked, self._picked_piece = lam, j
                    self._publish_locked()
            return new

        note = (f"Loaded the path's model at λ = {lam:.4g} (breakpoint {j}: λ_{j} = {rows[j]['lam']:.4g}"
                + (f", replayed {replay} breakpoint(s) from the checkpoint at {base_j}" if replay else "")
                + ").")
        return s.load_model(make, lam=lam, settings=settings,
                            busy=f"loading the path's model at λ = {lam:.4g}"
                                 + (f" (replaying {replay} breakpoint(s))" if replay else "") + "…",
                            note=note, origin=f"path, λ={lam:.4g}")


def _replay_step(solver, prev_row: dict, cfg: PathConfig, exact: bool):
    """One induction step of Alg. 7 exactly as ``iter_path`` takes it (no time limit, no stop
    flag: the path's points were not stopped either)."""
    new, _res, _status = induction_step(solver, float(prev_row["next_lam"]), cfg,
                                        gap=prev_row["gap"] if exact else math.nan)
    return new
