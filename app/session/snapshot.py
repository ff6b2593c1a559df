"""What a session publishes: immutable snapshots of the solver (:class:`Snapshot`), the
anatomy of the last block step (:class:`StepInfo`) and frozen comparison runs
(:class:`RunRecord`). The views draw only these."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from gaplab.core.solver_records import StepRecord

RECENT_STEPS = 200            # steps shown in the cache hit/miss timeline
STATUS_LABELS = {"idle": "ready", "running": "running", "paused": "paused", "stopped": "stopped",
                 "budget": "pass budget reached", "loading": "loading", "error": "error",
                 "closed": "closed"}


def _frozen(a):
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class StepInfo(StepRecord):
    """The anatomy of the last block step (Paper: Alg. 1 lines 3-11, Alg. 3-5): the core's
    :class:`~gaplab.core.solver_records.StepRecord` of the step (its fields, with ``fw_corner``,
    ``away_corner`` as the model's display labellings, tuples) and what the app draws of it.

    ``gap_before`` is the block gap the step's oracle call returned (the record's
    ``block_gap_estimate``: exact at the step's iterate; on a cache hit the stale estimate);
    ``gap_after`` is the block gap at the current w measured with one diagnostic oracle call
    that is not counted. Made by :meth:`from_record`.
    """

    fw_corner: tuple | None = None
    away_corner: tuple | None = None
    gap_after: float = math.nan
    truth: tuple = ()
    image: np.ndarray | None = field(default=None, repr=False)  # uint8 (T, h, w): a picture per position
    tokens: tuple | None = None         # the words of the positions (e.g. a sentence)
    note: str = ""                      # toy: "hard block" / "easy block"
    probability: float = math.nan      # P(i) of the draw (known for a single Step), else NaN
    sampling: str = ""                  # the sampler that drew the block
    gap_prev: float = math.nan          # the block's estimate ĝᵢ before the step (+inf: unvisited)
    unvisited: int = -1                 # blocks with ĝ = +inf when the block was drawn (-1: unknown)
    cache_gap: float = math.nan         # the cache corner's gap g_i^c at the step, for a cache-hit away
                                        # step (its record keeps g_i^A; NaN: not recorded)
    box: bool = False                   # the model has box constraints (w = clip(v), App. H)
    # the model's pictures of the block (its describe_block "panels", gaplab.core.models.display):
    # (key, caption, panel) with key "input", "truth", "fw" or "away" (see pictures.role_panels)
    panels: tuple | None = field(default=None, repr=False)
    picker: dict | None = None          # a choice about the pictures the model offers (display.picker)
    legend: str = ""                    # the model's legend of its pictures (plain text)
    subtitle: str = ""                  # the model's one-line text of the ground truth

    @property
    def gap_before(self) -> float:
        """The block gap the step's oracle call returned (``block_gap_estimate``)."""
        return self.block_gap_estimate

    @classmethod
    def from_record(cls, record: StepRecord, **shown) -> "StepInfo":
        """The anatomy of ``record``'s step: the record's fields, then ``shown`` (the app's
        fields; ``fw_corner``, ``away_corner``: the model's display labellings) over them."""
        return cls(**{**{f.name: getattr(record, f.name) for f in fields(StepRecord)}, **shown})


@dataclass(frozen=True)
class RunRecord:
    """A finished or frozen run kept for comparison (its trace and manual gap checks)."""

    label: str
    dataset: str
    trace: tuple
    manual_checks: tuple
    active_history: tuple
    index: int
    lam: float = math.nan      # the run's λ (runs at different λ solve different problems)


@dataclass(frozen=True)
class Snapshot:
    """Everything the views draw, copied from the solver under the session lock (immutable)."""

    version: int
    session_id: int
    dataset: str
    n: int
    lam: float
    label: str
    status: str
    message_count: int
    iteration: int
    effective_passes: float
    oracle_calls: int
    cache_hits: int
    solver_time_s: float
    steps_per_s: float
    heuristic_gap: float
    dual: float
    exact_gap: float
    exact_primal: float
    exact_dual: float
    exact_passes: float
    exact_test_error: float
    gap_estimates: np.ndarray
    staleness: np.ndarray
    probabilities: np.ndarray
    exact_block_gaps: np.ndarray | None
    exact_block_gaps_iteration: int
    active_set_sizes: np.ndarray | None
    cache_sizes: np.ndarray | None
    trace: tuple
    manual_checks: tuple
    active_history: tuple
    recent_steps: np.ndarray
    last_step: StepInfo | None
    step_counts: dict
    has_test: bool
    tracks_atoms: bool
    chi_cubed: float
    comparison: tuple
    config: dict
    note: str = ""          # what a "loading" status is doing
    origin: str = ""        # where the solver's starting point came from ("" = a fresh start)
    # the problem's headline test metric when it is not the test error (CoNLL: "chunk F1"),
    # evaluated at the w of the last exact gap check's publication, and the pass it was taken at
    test_metric_name: str = "test error"
    test_metric: float = math.nan
    test_metric_passes: float = math.nan
    # settings switched mid-run with α kept: (effective passes, solver time s, iteration, label
    # of the new setting, label of the setting it replaced)
    switches: tuple = ()
    history_from: int = -1      # the earliest iteration "Back" reaches (-1: none)


class StepRate:
    """Block steps per second of the current run, as the status line shows it.

    Measured between two snapshots the worker publishes right after a chunk of steps: the
    steps done between them divided by the time between them (both time stamps are taken after
    a step, so no step is counted at both ends of a window), smoothed exponentially with time
    constant ``TAU_S``. NaN (not shown) until a run has published two such snapshots.
    """

    TAU_S = 1.0

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        """Forget the previous run (called when a run starts and when the solver changes)."""
        self._t = None
        self._it = 0
        self.rate = math.nan

    def sample(self, t: float, iteration: int) -> float:
        """Record that the solver was at ``iteration`` at time ``t`` (s, monotonic) right after
        a chunk of steps; returns the smoothed rate (steps/s)."""
        if self._t is not None and t > self._t and iteration >= self._it:
            dt = t - self._t
            inst = (iteration - self._it) / dt
            if math.isfinite(self.rate):
                self.rate += (1.0 - math.exp(-dt / self.TAU_S)) * (inst - self.rate)
            else:
                self.rate = inst
        self._t, self._it = t, int(iteration)
        return self.rate


def nonuniformity(x) -> float:
    """χ(x) = sqrt(1 + n² Var[p]), p = x/‖x‖₁ (Paper: Theorem 2); NaN if undefined."""
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    x = np.maximum(x, 0.0)
    s = x.sum()
    if x.size == 0 or not s > 0:
        return math.nan
    p = x / s
    return float(math.sqrt(1.0 + x.size ** 2 * p.var()))


def _empty_snapshot(sid, dataset, status, message_count, config) -> Snapshot:
    e = _frozen(np.zeros(0))
    return Snapshot(
        version=0, session_id=sid, dataset=dataset, n=0, lam=math.nan, label="", status=status,
        message_count=message_count, iteration=0, effective_passes=0.0, oracle_calls=0,
        cache_hits=0, solver_time_s=0.0, steps_per_s=0.0, heuristic_gap=math.inf, dual=math.nan,
        exact_gap=math.nan, exact_primal=math.nan, exact_dual=math.nan, exact_passes=math.nan,
        exact_test_error=math.nan, gap_estimates=e, staleness=_frozen(np.zeros(0, np.int64)),
        probabilities=e, exact_block_gaps=None, exact_block_gaps_iteration=-1,
        active_set_sizes=None, cache_sizes=None, trace=(), manual_checks=(), active_history=(),
        recent_steps=_frozen(np.zeros((0, 3))), last_step=None, step_counts={}, has_test=False,
        tracks_atoms=False, chi_cubed=math.nan, comparison=(), config=config)
