"""Picking a λ on the regularization path (Paper: Sec. 4, Proposition 1, Alg. 7): w_at(λ) read
from the path's store, the dual point at λ replayed from a solver checkpoint and loaded into the
session's solver, and opening a saved path store. :class:`PathPicker` is a mixin of
:class:`gaplab.app.pathlab.PathLab`; it uses the lab's lock, state and session.

Picking a λ: which dual point
-----------------------------
A pick (:meth:`PathPicker.pick`) first reads w_at(λ) from the path's store (one breakpoint
file, tens of ms even on CoNLL) and publishes its test error and test metric
(:attr:`~gaplab.app.pathlab_snapshot.PathSnapshot.w_info`). Loading the dual point into the
session's solver follows at once when the replay from the nearest checkpoint
(:mod:`gaplab.app.pathlab_worker`) is short (the breakpoints' own solve times sum to at most
:data:`REPLAY_AUTO_S`: always on OCR, where every few breakpoints have a checkpoint); otherwise
(a late λ on CoNLL, where one 195 MB checkpoint fits the budget and the replay takes minutes) the
pick stops there and :attr:`~gaplab.app.pathlab_snapshot.PathSnapshot.pending_load` offers the
load, which the tab shows as a button.

To load λ's dual point: j = the path's piece containing λ. From the closest
checkpoint j' <= j the lab *replays* the induction steps j'+1..j exactly as ``iter_path`` did
them (Proposition-1 warm start, then the same solver run to κε; the solver state holds its RNG,
so the replay is deterministic and is checked against the stored w_j), then warm-starts at λ:
Proposition 1 (``prop1_warm_start``: w kept, α rescaled towards the ground truth, gap estimates
moved by (1 − ρ)δ_i) for λ in [λ_{j+1}, λ_j], or the dual warm start (α kept, w scaled by λ_0/λ)
above λ_0 = λ_∞. Either way the loaded solver's w is exactly ``RegPath.w_at(λ)``. The work runs
in the session's worker thread (status "loading"), never in the UI thread; a counted exact gap
pass then shows the model's duality gap and test error.

Opening a saved path store (:meth:`PathPicker.open_store`, e.g. one written by
``gaplab path --store DIR``) shows its rows on the current dataset (n and d checked); a pick on
such a path, which has no solver checkpoints, reads ``w_at(λ)`` from the store and reports its
test error (:attr:`~gaplab.app.pathlab_snapshot.PathSnapshot.w_info`) instead of loading a solver.
"""
from __future__ import annotations

import math
import threading
import time

import numpy as np

from gaplab.core.regpath import PathConfig, PathFileError, PathStoreError, RegPath, induction_step, prop1_warm_start

from .pathlab_snapshot import end_message, problem_metric

__all__ = ["PathPicker", "REPLAY_AUTO_S"]

#: a pick loads the dual point into the session's solver by itself only when replaying from the
#: nearest checkpoint is expected to take at most this long (the breakpoints' own solve times);
#: otherwise it shows w_at(λ) read from the store at once and offers the load as a button
REPLAY_AUTO_S = 2.0


class PathPicker:
    """Picking a λ on the path of a :class:`~gaplab.app.pathlab.PathLab`, and opening a saved
    store (a mixin: the lab's ``_lock``, ``_pick_lock``, ``_pick_seq``, ``_path``, ``_ck``,
    ``_problem``, ``_cfg``, ``_settings``, ``_picked``, ``_picked_piece``, ``_w_info`` and
    ``_pending`` are its state)."""

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
        from .typed_paths import check_typed_path
        try:
            # a typed path is client input: a regular file or a folder (never a FIFO or a device),
            # under the session's roots when it has any (classroom mode)
            where = check_typed_path(str(directory), getattr(s, "typed_path_roots", None))
            path = RegPath.open(where, model=problem.model)
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
        published as :attr:`~gaplab.app.pathlab_snapshot.PathSnapshot.w_info` (tens of ms on
        CoNLL: no solver involved)."""
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
        numbers in :attr:`~gaplab.app.pathlab_snapshot.PathSnapshot.w_info`) and the path's
        model at λ (its dual point) is loaded into the session's solver, in the session's worker
        thread. Returns False with a notification if it cannot. See the module docstring.

        Parameters
        ----------
        lam : float
            λ > 0 within the path's range.
        load : bool or None
            Load the dual point into the solver: None (default) when the replay from the nearest
            checkpoint is expected to take at most :data:`REPLAY_AUTO_S` seconds (else the pick
            shows w_at(λ) only and
            :attr:`~gaplab.app.pathlab_snapshot.PathSnapshot.pending_load` offers the load);
            True: always; False: never. An opened store has no dual point: never.
        """
        s = self.session
        with self._lock:
            path = None if self._path is None else self._path.snapshot()
            cks = dict(self._ck)
            problem, cfg = self._problem, self._cfg
            settings = dict(self._settings)
        lam = self._checked_lam(lam, path, problem)
        if lam is None:
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
        return self._load_dual_point(lam, j, base_j, cks[base_j], path, rows, problem, cfg, settings)

    def _checked_lam(self, lam, path: RegPath | None, problem) -> float | None:
        """``lam`` as a float when a pick can take it, else None after a notification saying why
        (not a number, no path yet, the path of another dataset, λ <= 0)."""
        s = self.session
        try:
            lam = float(lam)
        except (TypeError, ValueError):
            s.notify(f"Pick: λ must be a number, got {lam!r}.", "warning")
            return None
        if path is None or not len(path):
            s.notify("Pick: compute a path first (Start path).", "warning")
            return None
        if problem is None or s.problem is not problem:
            s.notify("Pick: the path was computed on another dataset; start a new path.", "warning")
            return None
        if not (math.isfinite(lam) and lam > 0):
            s.notify(f"Pick: λ must be > 0, got {lam!r}.", "warning")
            return None
        return lam

    def _load_dual_point(self, lam: float, j: int, base_j: int, base, path: RegPath, rows: list, problem,
                         cfg: PathConfig, settings: dict) -> bool:
        """Load the path's model at λ into the session's solver, in the session's worker thread:
        replay breakpoints base_j+1..j from the checkpoint ``base``, then warm-start at λ."""
        s = self.session
        replay = j - base_j
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
