"""The session's run loop: Step, Step ×N, Run, Pause, Stop, the exact gap pass and the
comparison runs, and the worker thread that steps the solver in chunks and publishes snapshots
(see the threading model in :mod:`gaplab.app.session`)."""
from __future__ import annotations

import math
import threading
import time

import numpy as np

from .. import kernels
from ..refstep import ReferenceStepper, reference_stepper, supports
from .snapshot import RunRecord, Snapshot, _empty_snapshot

SNAPSHOT_PERIOD_S = 0.1       # the worker publishes at most 10 snapshots per second
CHUNK_TARGET_S = 0.025        # a worker chunk of block steps takes about this long
MAX_COMPARISON_RUNS = 8
#: the speed control (Run and Step ×N): block steps per second, or one pass (n steps) per frame
SPEED_CHOICES = {"unlimited": math.inf, "1 step/s": 1.0, "2 steps/s": 2.0, "5 steps/s": 5.0,
                 "10 steps/s": 10.0, "20 steps/s": 20.0, "50 steps/s": 50.0, "100 steps/s": 100.0,
                 "1,000 steps/s": 1000.0, "one pass per frame": "pass"}
PASS_FRAME_S = 0.25           # "one pass per frame": a pass of n steps, then this pause


class SessionRunLoop:
    """Stepping, the worker thread and the session's lifetime (a part of :class:`Session`)."""

    #: the worker publishes a snapshot at most this often, s (a classroom's student session: its
    #: page's refresh period, see gaplab.app.classroom.guard_session)
    snapshot_period_s = SNAPSHOT_PERIOD_S

    # ------------------------------------------------------------------ stepping
    def _ready(self, action: str) -> bool:
        if self._closed:
            return False
        if self._status == "loading":
            self.notify(f"{action}: the dataset is still loading.", "warning")
            return False
        if self._solver is None:
            self.notify(f"{action}: no dataset is loaded; choose one.", "warning")
            return False
        if action != "Step":
            self.hand_over()   # everything but a Step needs the fast solver
        return True

    # ------------------------------------------------------------------ reference stepping
    @property
    def reference_stepping(self) -> bool:
        """The Steps are answered by the reference solver while the kernels compile
        (:mod:`gaplab.app.refstep`)."""
        return isinstance(self._solver, ReferenceStepper)

    def reference_can_step(self) -> bool:
        """While the kernels compile, the reference solver can answer a Step now (a chain model
        with FW steps, uniform or gap sampling, no cache, no box, in the first pass), so that
        it does not wait for the compile."""
        with self._lock:
            s = self._solver
            if isinstance(s, ReferenceStepper):
                return s.can_step()
            return s is not None and supports(s)

    def hand_over(self) -> bool:
        """If the reference solver has been answering the Steps: replay its steps on a fresh
        fast Solver from the same seed (compiling the kernels if they are not ready) and go on
        with it, so that state and trace are bitwise the fast solver's. True if it did."""
        with self._lock:
            rs = self._solver
            if not isinstance(rs, ReferenceStepper):
                return False
            fast = rs.handover(self._new_solver(self._problem, rs.config))
            self._solver = fast
            self._history.note(fast, force=True)   # Back replays from α⁰'s checkpoint (a fast Solver)
            self._publish()
        return True

    def _step_solver(self):
        """The solver that answers this Step: the reference solver while the kernels compile
        (when it can), else the fast one (handed over first)."""
        s = self._solver
        if kernels.state().ready:
            self.hand_over()
        elif isinstance(s, ReferenceStepper):
            if not s.can_step():
                self.hand_over()
        else:
            rs = reference_stepper(s)
            if rs is not None:
                self._solver = rs
        return self._solver

    def step(self) -> Snapshot:
        """One block step (pauses a run first)."""
        if not self._ready("Step"):
            return self._snapshot
        if self.running:
            self._halt("paused")
        self._restart_if_stopped()
        self._single_step()
        return self._snapshot

    def _single_step(self) -> None:
        """One block step as Step takes it (the anatomy records its draw), in the caller's thread."""
        with self._lock:
            self._back_refused = None   # a new state: a Back refused again is said again
            s = self._step_solver()
            if not isinstance(s, ReferenceStepper):
                self._history.note(s)
            self._draw_p = (s.iteration, s.sampling_probabilities(), np.array(s.gap_estimates, copy=True))
            s.step()
            self._capture_last_step()
            if self._status in ("idle", "stopped", "budget"):
                self._set_status("paused" if self._solver.iteration else "idle")
            self._publish()

    def step_n(self, n: int | None = None) -> None:
        """N block steps in the worker thread (``n`` defaults to the ``n_steps`` setting)."""
        n = self.n_steps if n is None else n
        lo, hi = type(self).param.n_steps.bounds
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not lo <= n <= hi:
            # the parameter's bounds hold for the setting; a value from elsewhere is checked here
            self.notify(f"Step ×N: N must be an integer in [{lo:,}, {hi:,}], got {n!r}.", "warning")
            return
        n = int(n)
        if not self._ready("Step ×N"):
            return
        if self.running:
            self._halt("paused")
        self._restart_if_stopped()
        self._start_run(target_steps=n)

    def run(self) -> None:
        """Start (or resume) a run in the worker thread until the pass budget or Stop."""
        if not self._ready("Run"):
            return
        if self.running:
            if self._status == "running":
                return
            self._halt("paused")   # key Steps in the worker: Run takes over
        self._restart_if_stopped()
        if self._solver.effective_passes >= self.max_passes:
            self.set_status_budget()
            self.notify(f"Pass budget of {self.max_passes:g} reached; raise it to continue.", "warning")
            return
        self._start_run(target_steps=None)

    def toggle_run(self) -> None:
        if self.running and self._status == "running":
            self.pause()
        else:
            self.run()

    def pause(self) -> None:
        """Pause the run (within one chunk, ~25 ms): the solver keeps its state and the next
        Run, Step or Step ×N continues it."""
        if self.running and self._status != "loading":
            self._halt("paused")

    def stop(self) -> None:
        """End the run (within one chunk, ~25 ms). The stopped run stays on screen; the next
        Run, Step or Step ×N starts a new run from α⁰ with the current settings (keep the
        stopped run's curves with :meth:`add_to_comparison` first). Use :meth:`pause` to resume."""
        if self._status == "loading":
            return
        self._halt("stopped" if (self._solver is not None and self._solver.iteration) else "idle")

    def _restart_if_stopped(self):
        """After Stop, a new run starts from α⁰ (same settings and seed)."""
        if self._status != "stopped" or self._solver is None:
            return
        try:
            cfg = self.solver_config()
        except (ValueError, TypeError):
            return
        self._install(self._problem, cfg)
        self.notify("Stop had ended the previous run: a new run starts from α⁰ "
                    "(Pause keeps a run resumable).", "info")

    def set_status_budget(self):
        with self._lock:
            self._set_status("budget")
            self._publish()

    def compute_exact_gaps(self):
        """One exact gap pass (n oracle calls, counted): the duality gap, primal, dual and every
        block gap at the current iterate (Paper: Eq. (5)-(7))."""
        if not self._ready("Compute exact gaps"):
            return None
        if self.running:
            self._halt("paused")
        with self._lock:
            s = self._solver
            ex = s.exact_gap(count=True)
            test_err = s.test_error() if self._problem.test is not None else math.nan
            rec = {"kind": "gap_check", "manual": True, "iteration": s.iteration,
                   "effective_passes": s.effective_passes, "oracle_calls": s.oracle_calls,
                   "wall_time_s": s.wall_time, "heuristic_gap": s.heuristic_gap,
                   "exact_gap": ex.gap, "primal": ex.primal, "dual": ex.dual,
                   "cache_hits": int(s.step_counts()["cache_hit"]), "test_error": test_err}
            self._manual.append(rec)
            self._history.note(s, force=True)   # a counted pass changed the state (not a step)
            self._publish()
        return ex

    def add_to_comparison(self) -> RunRecord | None:
        """Freeze the current run's trace as a labelled comparison curve."""
        snap = self._snapshot
        if not snap.trace and not snap.manual_checks:
            self.notify("Nothing to compare yet: run at least one pass first.", "warning")
            return None
        with self._lock:
            self._run_counter += 1
            rec = RunRecord(label=f"#{self._run_counter} {snap.label}", dataset=snap.dataset,
                            trace=snap.trace, manual_checks=snap.manual_checks,
                            active_history=snap.active_history, index=self._run_counter, lam=snap.lam)
            self._comparison.append(rec)
            if len(self._comparison) > MAX_COMPARISON_RUNS:
                dropped = self._comparison.pop(0)
                self.notify(f"Dropped the oldest comparison run ({dropped.label}).", "info")
            self._publish()
        self.notify(f"Added {rec.label} to the comparison.", "success")
        return rec

    def clear_comparison(self) -> None:
        with self._lock:
            self._comparison.clear()
            self._publish()

    # ------------------------------------------------------------------ worker
    def _start_thread(self, target, name):
        self._join()
        self._stop_evt.clear()
        hook = getattr(self, "on_worker_start", None)

        def run():
            if hook is not None:
                try:
                    hook()
                except Exception:  # pragma: no cover - a priority the OS refuses: run as is
                    pass
            target()
        t = threading.Thread(target=run, name=f"gaplab-session-{self.session_id}-{name}", daemon=True)
        self._thread = t
        t.start()

    def _join(self, timeout: float = 30.0):
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)
        self._thread = None if (t is None or not t.is_alive()) else t

    def _halt(self, status: str):
        """Stop the background thread (flag checked between chunks) and set ``status``."""
        t = self._thread
        if t is not None and t.is_alive():
            self._stop_evt.set()
            self._join()
        with self._lock:
            if self._solver is not None or status != "idle":
                self._set_status(status)
            self._publish()

    def _start_run(self, target_steps: int | None):
        with self._lock:
            self._history.note(self._solver)
            self._set_status("running")
            self._rate.reset()   # measured anew from this run's first two snapshots
            self._publish()
        self._start_thread(lambda: self._worker(target_steps), "run")

    def _pace(self):
        """(steps per chunk limit, seconds per step) of the speed setting: (None, 0) unlimited;
        one pass per frame: (n, PASS_FRAME_S / n)."""
        sp = self.speed
        if sp == "pass":
            n = max(self._solver.n, 1)
            return n, PASS_FRAME_S / n
        sp = float(sp)
        if not math.isfinite(sp) or sp <= 0:
            return None, 0.0
        # about 40 chunks per second at most (so slow motion stays smooth and Pause prompt)
        return max(1, int(sp / 40)), 1.0 / sp

    def _worker(self, target_steps: int | None):
        last_pub = time.perf_counter()
        done = 0
        final = "paused"
        t_start = time.perf_counter()
        limit, dt_step = self._pace()
        try:
            while not self._stop_evt.is_set():
                if dt_step > 0:  # slow motion: wait for the step's time slot (Pause/Stop interrupt)
                    wait = t_start + done * dt_step - time.perf_counter()
                    if wait > 0 and self._stop_evt.wait(wait):
                        break
                with self._lock:
                    s = self._solver
                    if target_steps is None:
                        left = int(math.floor(self.max_passes * s.n - s.oracle_calls))
                        if left <= 0:
                            final = "budget"
                            self.notify(f"Pass budget of {self.max_passes:g} passes reached.", "success")
                            break
                    else:
                        left = target_steps - done
                        if left <= 0:
                            final = "paused"
                            break
                    k = max(1, min(self._chunk if limit is None else limit, left))
                    t0 = time.perf_counter()
                    s.steps(k)
                    dt = time.perf_counter() - t0
                    done += k
                    # adapt the chunk so that one takes ~CHUNK_TARGET_S (bounded growth)
                    if dt > 0:
                        want = k * CHUNK_TARGET_S / dt
                        self._chunk = int(min(max(want, 1), 4 * self._chunk + 1, 200_000))
                    now = time.perf_counter()
                    if now - last_pub >= self.snapshot_period_s or (dt_step > 0 and k * dt_step >= SNAPSHOT_PERIOD_S):
                        self._history.note(s, running=True)
                        self._rate.sample(now, s.iteration)   # taken right after a chunk
                        self._capture_last_step()
                        self._publish()
                        last_pub = now
                time.sleep(0)  # let a waiting UI thread take the lock
            else:
                final = None  # stopped from outside: _halt sets the status
        except Exception as exc:  # never let a solver error kill the server silently
            final = "error"
            self.notify(f"Solver error: {type(exc).__name__}: {exc}", "error")
        with self._lock:
            if self._solver is not None:
                self._capture_last_step()
            if final is not None:
                self._set_status(final)
            self._publish()

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Stop the worker and drop the solver (called when the browser session ends)."""
        if self._closed:
            return
        self._closed = True
        self._stop_evt.set()
        self.path.close()
        self._join(timeout=10.0)
        with self._lock:
            self._solver = None
            self._problem = None
            self._trace.clear()
            self._manual = []
            self._comparison = []
            self._history.clear()   # its checkpoints are solver copies
            self._switches = []
            self._before_switch = None
            self._status = "closed"
            self._snapshot = _empty_snapshot(self.session_id, self.dataset, "closed", 0, {})

    @property
    def closed(self) -> bool:
        return self._closed

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until no background thread is running (tests, notebooks)."""
        t = self._thread
        if t is not None:
            t.join(timeout)
            return not t.is_alive()
        return True
