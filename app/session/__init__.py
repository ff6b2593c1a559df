"""One user's lab session: the settings (a ``param.Parameterized``), one solver, one worker
thread, and immutable snapshots of what the solver did (no Panel import: testable headless).

Threading model
---------------
* Every solver mutation (a Step, a chunk of a run, an exact gap pass, a reset) happens while
  holding ``Session._lock``.
* While a run is going, the worker thread calls ``solver.steps(k)`` in chunks of ~25 ms (the
  numba kernels release the GIL) and publishes a new :class:`Snapshot` at most every 100 ms.
* The UI never waits on a running solver: it reads ``Session.snapshot`` (a reference to an
  immutable object). Actions that change the solver (Step, Reset, new settings) first stop the
  worker (it checks a flag between chunks, so this takes at most one chunk).
* At most one background thread exists per session for the session's solver (a run, a dataset
  load, or loading a model picked on the regularization path). The regularization path
  (:class:`~gaplab.app.pathlab.PathLab`, ``Session.path``) has a second worker with its own stop
  flag; it builds its own solvers and never touches the session's.

Everything shown by the app is computed here from the core (``gaplab.core.Solver``) or from the
toy examples; views only draw snapshots.

Modules, one concern each:

* :mod:`~gaplab.app.session.control` — :class:`Session`: settings, loading, (re)building the
  solver, keeping α across a switch, going back, loading a model from the path;
* :mod:`~gaplab.app.session.runloop` — Step, Step ×N, Run, Pause, Stop and the worker thread;
* :mod:`~gaplab.app.session.jobs` — what a browser asks of the worker in bounded pieces: key
  Steps (queued, capped), jumps back by keys, a URL's steps replayed in chunks with progress;
* :mod:`~gaplab.app.session.publish` — the snapshots a session publishes;
* :mod:`~gaplab.app.session.snapshot` — :class:`Snapshot`, :class:`StepInfo`, :class:`RunRecord`,
  :class:`~gaplab.app.session.snapshot.StepRate` (the steps/s of a run);
* :mod:`~gaplab.app.session.tracekeep` — the run's trace records kept for plotting (bounded);
* :mod:`~gaplab.app.session.pictures` — the anatomy's pictures, as the models describe them;
* :mod:`~gaplab.app.session.problems` — the problems shared by the sessions of a process.

Every name the app and the tests import from ``gaplab.app.session`` is available here.
"""
from __future__ import annotations

# re-exported: every name of the former single module gaplab.app.session (other app modules and
# the tests import them from here)
from .control import Session, SessionSettings, _session_ids
from .pictures import ROLE_COLORS, display_items, role_panels, takes_keyword
from .problems import (DATASETS, GAP_CHECK_CHOICES, PROBLEM_CACHE_SIZE, PROBLEMS, LoadStopped, Problem,
                       ProblemCache, load_problem)
from .runloop import CHUNK_TARGET_S, MAX_COMPARISON_RUNS, PASS_FRAME_S, SNAPSHOT_PERIOD_S, SPEED_CHOICES
from .snapshot import (RECENT_STEPS, STATUS_LABELS, RunRecord, Snapshot, StepInfo, _empty_snapshot, _frozen,
                       nonuniformity)

__all__ = ["Session", "Snapshot", "StepInfo", "RunRecord", "Problem", "load_problem",
           "DATASETS", "GAP_CHECK_CHOICES"]
