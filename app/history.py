"""Go back: undo block steps of the session's solver (to re-show a step a student asks
about).

The solver is deterministic: the same state (α, w, gap estimates, RNG state, counters) stepped k
times gives the same state whether as k single steps or as whole passes. So the history keeps a
few *checkpoints* (independent copies of the solver, :meth:`gaplab.core.Solver.copy`) and reaches
any earlier step t by copying the last checkpoint at or before t and replaying the steps between
them. Checkpoints are taken at most every ``spacing`` steps while stepping by hand and at most
every ``min_interval_s`` seconds of a run, so a replay is short (at most ``spacing`` steps after a
Step, or about ``min_interval_s`` of solver work after a run), and at least ``depth`` steps back
are always reachable (within the current run: the session clears the history when it replaces
the solver, at a reset or a setting switch). No Panel import.
"""
from __future__ import annotations

import time

from gaplab.core import Solver

__all__ = ["History", "HISTORY_DEPTH"]

#: how many block steps back are always reachable
HISTORY_DEPTH = 200


class History:
    """Checkpoints of one run (cleared when the solver is replaced).

    Parameters
    ----------
    depth : int
        Steps back that stay reachable (>= 1).
    spacing : int
        Steps between two checkpoints taken by :meth:`note` (>= 1).
    min_interval_s : float
        Seconds between two checkpoints taken during a run (:meth:`note` with ``running=True``;
        at least 20 times the last copy's duration, so copying costs at most ~5 % of a run).
    max_bytes : int
        Memory the checkpoints may take (bytes of solver state); beyond it every other
        checkpoint between the first and the last is dropped (replays get longer, memory stays
        bounded).
    """

    def __init__(self, depth: int = HISTORY_DEPTH, spacing: int = 25, min_interval_s: float = 0.5,
                 max_bytes: int = 256 * 2 ** 20):
        for name, v in (("depth", depth), ("spacing", spacing)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        if not min_interval_s >= 0:
            raise ValueError(f"min_interval_s must be >= 0 seconds, got {min_interval_s!r}")
        self.depth, self.spacing, self.min_interval_s = depth, spacing, float(min_interval_s)
        self.max_bytes = int(max_bytes)
        self._ckpts: list[tuple[int, Solver]] = []   # (iteration, independent copy), ascending
        self._t_last = 0.0
        self._t_copy = 0.0   # seconds the last copy took

    def clear(self) -> None:
        self._ckpts = []

    @property
    def checkpoints(self) -> tuple:
        """The iterations of the checkpoints held (ascending)."""
        return tuple(it for it, _ in self._ckpts)

    @property
    def earliest(self) -> int | None:
        """The earliest iteration reachable (None: no checkpoint yet)."""
        return self._ckpts[0][0] if self._ckpts else None

    def note(self, solver: Solver, *, running: bool = False, force: bool = False) -> bool:
        """Take a checkpoint of ``solver``'s current state if one is due (call before a Step,
        at a run's publications and after anything that changes the state other than a step,
        e.g. a counted exact gap pass, with ``force=True``). Returns True if one was taken."""
        it = solver.iteration
        now = time.perf_counter()
        if not force and self._ckpts:
            last = self._ckpts[-1][0]
            if it == last:
                return False
            if it - last < self.spacing:
                return False
            if running and now - self._t_last < max(self.min_interval_s, 20 * self._t_copy):
                return False
        # a checkpoint replaces those at or after its iteration (they belong to a future that a
        # "back" has abandoned, or to the same step before a state change such as an exact gap pass)
        self._ckpts = [c for c in self._ckpts if c[0] < it]
        self._ckpts.append((it, solver.copy()))
        self._t_last = time.perf_counter()
        self._t_copy = self._t_last - now
        self._prune(it)
        return True

    def _prune(self, current: int) -> None:
        # keep the last checkpoint at or before current - depth and every later one
        keep_from = 0
        for k, (it, _) in enumerate(self._ckpts):
            if it <= current - self.depth:
                keep_from = k
        self._ckpts = self._ckpts[keep_from:]
        size = self._ckpts[-1][1].memory_bytes() if self._ckpts else 0
        while len(self._ckpts) > 2 and size * len(self._ckpts) > self.max_bytes:
            inner = self._ckpts[1:-1]
            self._ckpts = [self._ckpts[0]] + inner[1::2] + [self._ckpts[-1]]

    def reach(self, target: int, *, on_last=None) -> Solver:
        """An independent solver at iteration ``target`` (a checkpoint's copy stepped forward).

        ``on_last(solver)`` is called just before the last replayed step (to record what the
        step's draw saw, as a single Step does). Raises ValueError if ``target`` is earlier than
        every checkpoint (the history does not reach it)."""
        if isinstance(target, bool) or not isinstance(target, int) or target < 0:
            raise ValueError(f"target must be an int >= 0 (an iteration), got {target!r}")
        base = [c for c in self._ckpts if c[0] <= target]
        if not base:
            first = self.earliest
            raise ValueError(f"the history does not reach iteration {target} (earliest kept: "
                             f"{'none' if first is None else first})")
        it, ck = base[-1]
        s = ck.copy()
        todo = target - it
        if todo > 1:
            s.steps(todo - 1)
        if todo >= 1:
            if on_last is not None:
                on_last(s)
            s.steps(1)
        return s
