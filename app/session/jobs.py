"""Work a browser asks of a session, done in the session's worker thread in bounded pieces, never
on the server's event loop: the Steps of the presenter keys (queued, at most
:data:`MAX_KEY_STEPS` waiting), a jump back by ← presses, and the replay of a URL's steps (in
chunks of ~25 ms, with progress; while the kernels compile, first-pass steps are answered by
the reference solver and the rest wait for the kernels). Every job stops within one chunk when
the session closes or another action halts it.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from .. import kernels
from ..refstep import ReferenceStepper, reference_stepper
from ..urlstate import MAX_URL_STEPS
from .runloop import CHUNK_TARGET_S, SNAPSHOT_PERIOD_S

__all__ = ["MAX_KEY_STEPS", "MAX_REPLAY_STEPS", "SessionJobs"]

#: the most key Steps waiting in a session's queue (more are dropped: a person presses at most
#: ~30 keys a second, and each Step is answered within a chunk)
MAX_KEY_STEPS = 30
#: the most block steps one replay takes (a URL's ``steps`` has the same bound)
MAX_REPLAY_STEPS = MAX_URL_STEPS
_WAIT_S = 0.25      # while the kernels compile, a replay checks this often whether they are ready


class SessionJobs:
    """Key Steps, key jumps back and URL replays in the worker (a part of :class:`Session`)."""

    _back_refused = None     # (earliest, iteration) at the last "not reachable" notice

    def _jobs_init(self):
        self._jobs_lock = threading.Lock()
        self._key_queue = []     # [[action, count], ...] waiting for the key worker
        self._key_job = False    # the worker thread is the key worker

    # ------------------------------------------------------------------ presenter keys
    def key_action(self, action: str, count: int) -> int:
        """Queue ``count`` presses of ``action`` ("step" or "back") for the worker; returns how
        many were accepted (Steps beyond :data:`~gaplab.app.session.jobs.MAX_KEY_STEPS` waiting are dropped; the caller
        says so). ← presses in a row become one jump back. Never blocks on the solver."""
        if action not in ("step", "back"):
            raise ValueError(f"action must be 'step' or 'back', got {action!r}")
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(f"count must be an int >= 1 (presses), got {count!r}")
        if self._closed or not self._ready_quietly(action):
            return 0
        with self._jobs_lock:
            if action == "step":
                waiting = sum(c for a, c in self._key_queue if a == "step")
                take = max(0, min(int(count), MAX_KEY_STEPS - waiting))
            else:
                take = int(count)
            if take:
                if self._key_queue and self._key_queue[-1][0] == action:
                    self._key_queue[-1][1] += take
                else:
                    self._key_queue.append([action, take])
            alive = self._key_job
        if take and not alive:
            if self.running:
                self._halt("paused")
            self._restart_if_stopped()
            with self._jobs_lock:
                self._key_job = True
            self._start_thread(self._key_worker, "keys")
        return take

    def _ready_quietly(self, action: str) -> bool:
        """Like ``_ready`` for a key, without a hand-over in the caller's thread (the worker
        hands over)."""
        if self._status == "loading":
            self.notify(f"{'Step' if action == 'step' else 'Back'}: {self._note or 'the dataset is still loading'}",
                        "warning")
            return False
        if self._solver is None:
            self.notify("No dataset is loaded; choose one.", "warning")
            return False
        return True

    def _key_worker(self):
        try:
            while not self._stop_evt.is_set() and not self._closed:
                with self._jobs_lock:
                    if not self._key_queue:
                        self._key_job = False
                        return
                    item = self._key_queue[0]
                    action = item[0]
                    if action == "step":
                        item[1] -= 1
                        n = 1
                    else:
                        n = item[1]
                        item[1] = 0
                    if item[1] <= 0:
                        self._key_queue.pop(0)
                if action == "step":
                    self._single_step()
                else:
                    self._jump_back(n)
                time.sleep(0)   # let a waiting UI thread take the lock
        except Exception as exc:  # never let a solver error kill the server silently
            self.notify(f"Solver error: {type(exc).__name__}: {exc}", "error")
        finally:
            with self._jobs_lock:
                self._key_job = False
                self._key_queue = []

    def _jump_back(self, k: int) -> None:
        """Back ``k`` steps, or as far as the history reaches (one notice when it stops short)."""
        with self._lock:
            s = self._solver
            first = self._history.earliest
            if s is None:
                return
            it = s.iteration
        if first is None or it - k >= first or it <= first:
            self.go_to(it - k)   # within reach, or refused (one notice per state)
            return
        self.go_to(first)
        self._notify_back_refused(it - k, first)

    def _notify_back_refused(self, iteration: int, first) -> None:
        """Say that step ``iteration`` is not reachable, once per state: holding ← at the start
        of the history gives one notice, not one per press (a Step forgets the last one)."""
        now = self._solver.iteration if self._solver is not None else None
        key = (first, now)
        if key == self._back_refused:
            return
        self._back_refused = key
        self.notify(f"Back: step {iteration} is not reachable (the history starts at step "
                    f"{0 if first is None else first}: the last reset or setting switch, "
                    f"at most {self._history.depth} steps are kept).", "warning")

    # ------------------------------------------------------------------ URL replay
    def replay(self, steps: int) -> bool:
        """Take the session's run to block step ``steps`` (from α⁰: the run must be at or before
        it) in the worker thread, in chunks, with progress in the status line ("replaying step
        k of N"); the last step as a single Step (the anatomy shows it as after a Step). While
        the kernels compile, the reference solver takes the first pass's steps and the rest wait
        for the kernels. Returns False (with a notice) when nothing is loaded; a run at or after
        ``steps`` goes there as :meth:`go_to` does.

        Raises
        ------
        ValueError
            If ``steps`` is not an int in [0, :data:`~gaplab.app.session.jobs.MAX_REPLAY_STEPS`]."""
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) \
                or not 0 <= steps <= MAX_REPLAY_STEPS:
            raise ValueError(f"steps must be an int in [0, {MAX_REPLAY_STEPS:,}] (block steps from α⁰), "
                             f"got {steps!r}")
        steps = int(steps)
        if self._closed or self._status == "loading" or self._solver is None:
            if not self._closed:
                self.notify("Replay: no dataset is loaded yet.", "warning")
            return False
        if self.running:
            self._halt("paused")
        if steps <= self._solver.iteration:
            self.go_to(steps)
            return True
        with self._lock:
            self._note = f"replaying the URL's steps: step {self._solver.iteration:,} of {steps:,}"
            self._set_status("loading")
            self._publish()
        self._start_thread(lambda: self._replay_worker(steps), "replay")
        return True

    def _replay_worker(self, target: int) -> None:
        last_pub = time.perf_counter()
        final = "paused"
        try:
            while not self._stop_evt.is_set() and not self._closed:
                with self._lock:
                    s = self._solver
                    left = target - s.iteration
                if left <= 0:
                    break
                if not kernels.state().ready:
                    if not self._replay_reference(left, target):
                        continue
                else:
                    self._replay_fast(left)
                now = time.perf_counter()
                if now - last_pub >= self.snapshot_period_s:
                    last_pub = now
                    with self._lock:
                        self._note = f"replaying the URL's steps: step {self._solver.iteration:,} of {target:,}"
                        if not self.reference_stepping:
                            self._history.note(self._solver, running=True)
                        self._publish()
                time.sleep(0)   # let a waiting UI thread take the lock
            else:
                final = None    # halted from outside (a new action, a new dataset, the session closed)
        except Exception as exc:  # never let a solver error kill the server silently
            final = "error"
            self.notify(f"Solver error while replaying the URL's steps: {type(exc).__name__}: {exc}", "error")
        with self._lock:
            self._note = ""
            if self._solver is not None and not self._closed:
                self._capture_last_step()
                if final == "paused":
                    self._set_status("paused" if self._solver.iteration else "idle")
                elif final == "error":
                    self._set_status("error")
                self._publish()

    def _replay_reference(self, left: int, target: int) -> bool:
        """One first-pass step by the reference solver while the kernels compile; False when it
        cannot take one (the worker then waits for the kernels: never compiles here)."""
        with self._lock:
            s = self._solver
            if not isinstance(s, ReferenceStepper):
                rs = reference_stepper(s)
                if rs is not None:
                    self._solver = s = rs
            ok = isinstance(s, ReferenceStepper) and s.can_step()
            if ok:
                if left == 1:
                    self._draw_p = (s.iteration, s.sampling_probabilities(), np.array(s.gap_estimates, copy=True))
                s.step()
            else:
                text = (f"waiting for the solver kernels to compile (step {s.iteration:,} of {target:,} taken"
                        + (": the reference solver covers the first pass)" if s.iteration else ")"))
                if self._note != text:
                    self._note = text
                    self._publish()
        if not ok:
            self._stop_evt.wait(_WAIT_S)
        return ok

    def _replay_fast(self, left: int) -> None:
        """A chunk of fast steps (~CHUNK_TARGET_S), or the last step as a single Step."""
        self.hand_over()
        with self._lock:
            s = self._solver
            if left == 1:
                self._history.note(s)
                self._draw_p = (s.iteration, s.sampling_probabilities(), np.array(s.gap_estimates, copy=True))
                s.step()
                return
            k = max(1, min(self._chunk, left - 1))
            t0 = time.perf_counter()
            s.steps(k)
            dt = time.perf_counter() - t0
            if dt > 0:
                self._chunk = int(min(max(k * CHUNK_TARGET_S / dt, 1), 4 * self._chunk + 1, 200_000))
