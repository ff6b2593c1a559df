"""What the solver reports: one block step (:class:`StepRecord`, decoded from the kernels' ring
log), an exact gap pass (:class:`ExactGap`), the outcome of a run (:class:`Result`), and the
solver's trace of pass / gap check / batch records with its thinning (:class:`TraceRecords`,
a base of :class:`~gaplab.core.solver.Solver`)."""
from __future__ import annotations

import bisect
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from . import kernels as kr
from . import validate
from .config import Status, StepKind

__all__ = ["StepRecord", "ExactGap", "Result", "TraceRecords"]

_KIND_NAMES = {kr.KIND_FW: "fw", kr.KIND_AWAY: "away", kr.KIND_PAIRWISE: "pairwise", kr.KIND_NONE: "none"}


@dataclass(frozen=True)
class StepRecord:
    """What one block step did (Paper: Alg. 1, 3, 4, 5).

    Attributes
    ----------
    iteration : int
        Iteration k of the step (block steps done before it).
    block : int
        The block (training example) i that was updated.
    kind : str
        "fw", "away" or "pairwise".
    cache_hit : bool
        The FW corner came from the cache (no oracle call).
    drop : bool
        The away corner's mass reached 0 (drop step).
    oracle_called : bool
        A max-oracle call was made (cache miss or no cache).
    gamma, gamma_max : float
        Step size and its upper bound (1 for FW, α_a for pairwise, α_a/(1-α_a) for away).
    block_gap_estimate : float
        The block's gap estimate after the step's oracle call (exact at the step's iterate when
        the oracle was called; unchanged and stale on a cache hit).
    direction_gap : float
        ⟨-∇_i f, d⟩ of the chosen direction d (the FW gap for a FW step).
    improvement : float
        Decrease of the dual objective f (>= 0).
    active_set_size : int
        Number of atoms with α > 0 on the block after the step (-1 when not tracked).
    fw_corner, away_corner : ndarray of int64 or None
        The labellings of the FW corner and of the away corner (None for a FW step).
    """

    iteration: int
    block: int
    kind: str
    cache_hit: bool
    drop: bool
    oracle_called: bool
    gamma: float
    gamma_max: float
    block_gap_estimate: float
    direction_gap: float
    improvement: float
    active_set_size: int
    fw_corner: np.ndarray | None = None
    away_corner: np.ndarray | None = None


@dataclass(frozen=True)
class ExactGap:
    """Result of an exact gap pass (n oracle calls at the current w).

    Attributes
    ----------
    gap : float
        Duality gap g(α) = Σ_i g_i = primal − dual (Paper: Eq. (5)-(7)).
    primal, dual : float
        Primal objective λ/2‖w‖² + (1/n)Σ_i max_y H_i(y; w) and dual objective (maximization form).
    block_gaps : ndarray of float64, shape (n,)
        Exact block gaps g_i (Paper: Eq. (6)-(7)); NaN for an uncounted pass.
    block_deltas : ndarray of float64, shape (n,)
        δ_i = (1/n) Σ_y α_i(y) H_i(y; w) at the same point, Σ_i δ_i = ℓ − λ‖w‖² (Paper: Alg. 7,
        line 4; what a regularization path step adds to the gap, Proposition 1). Computed for
        free from the scores of the pass.
    """

    gap: float
    primal: float
    dual: float
    block_gaps: np.ndarray
    block_deltas: np.ndarray


@dataclass
class Result:
    """Outcome of :meth:`Solver.run`.

    Attributes
    ----------
    status : Status
    primal, dual, exact_gap : float
        At the last exact gap pass (fresh at the end of the run when ``final_gap_check``).
    heuristic_gap : float
        Sum of the (stale) block gap estimates at the end.
    effective_passes : float
        Oracle calls / n (gap passes included).
    oracle_calls, cache_hits, steps : int
    wall_time_s : float
        Seconds spent in the solver (block steps and gap passes; test-error evaluation and
        numba's compilation excluded). The trace's ``wall_time_s`` is on the same clock.
    step_counts : dict
        Counts of "fw", "away", "pairwise", "drop", "cache_hit", "purge", "batch" steps.
    w : ndarray of float64, shape (d,)
    trace : list of dict
        One record per pass over the data and per gap check (see :meth:`Solver.trace`).
    compile_time_s : float
        Seconds numba spent compiling the solver's kernels (or loading them from its on-disk
        cache) during the solver's calls, apart from ``wall_time_s``.
    not_exact : dict or None
        With status ``oracle_not_exact``: :meth:`~gaplab.core.certify.OracleNotExact.to_dict`
        (the worst block, the labelling that beats the oracle's, ``message``), else None.
    """

    status: Status
    primal: float
    dual: float
    exact_gap: float
    heuristic_gap: float
    effective_passes: float
    oracle_calls: int
    cache_hits: int
    steps: int
    wall_time_s: float
    step_counts: dict
    w: np.ndarray
    trace: list = field(default_factory=list)
    compile_time_s: float = 0.0
    not_exact: dict | None = None

    def to_dict(self, include_w: bool = False) -> dict:
        out = {k: v for k, v in asdict(self).items() if k not in ("w", "status")}
        out["status"] = self.status.name.lower()
        if include_w:
            out["w"] = self.w.tolist()
        return out


class TraceRecords:
    """The trace and step records of a :class:`~gaplab.core.solver.Solver` (a base class of
    it): one record per pass ("pass"), per gap check ("gap_check") and per batch step
    ("batch"), numbered in the order they are made, the older half thinned beyond
    ``trace_limit``; the block steps decoded from the kernels' ring log."""

    def _record(self, kind, exact: ExactGap | None = None, test_error=math.nan, extra=None):
        c = self.S.counters
        rec = {
            "kind": kind,
            "iteration": int(c[kr.C_ITER]),
            "effective_passes": self.effective_passes,
            "oracle_calls": int(c[kr.C_ORACLE]),
            "wall_time_s": self.wall_time,
            "heuristic_gap": self.heuristic_gap,
            "exact_gap": exact.gap if exact else math.nan,
            "primal": exact.primal if exact else math.nan,
            "dual": self.dual_objective(),
            "cache_hits": int(c[kr.C_HIT]),
            "test_error": test_error,
        }
        rec.update(self.step_counts())
        if extra:
            rec.update(extra)
        self._trace.append(rec)
        self._trace_ids.append(self._n_records)
        self._n_records += 1
        if len(self._trace) > self._trace_limit:
            self._thin_trace()
        return rec

    def _thin_trace(self):
        """Drop every second record of the older half of the trace (the first record kept)."""
        old = len(self._trace) - self._trace_limit // 2
        keep = [j for j in range(len(self._trace)) if j >= old or j % 2 == 0]
        self._trace = [self._trace[j] for j in keep]
        self._trace_ids = [self._trace_ids[j] for j in keep]

    def _records_since(self, since: int) -> list:
        return self._trace[bisect.bisect_left(self._trace_ids, since):]


    def last_steps(self, m: int) -> list[StepRecord]:
        """The last m step records (at most the ring log's size)."""
        S = self.S
        total = int(S.counters[kr.C_LOG_POS])
        cap = S.log.shape[0]
        m = min(m, total, cap)
        out = []
        for j in range(total - m, total):
            r = S.log[j % cap]
            flags = int(r[kr.L_FLAGS])
            kind = _KIND_NAMES[int(r[kr.L_KIND])]
            is_last = j == total - 1
            i = int(r[kr.L_BLOCK])
            L = int(self._M.lab_off[i + 1] - self._M.lab_off[i])
            out.append(StepRecord(
                iteration=int(r[kr.L_ITER]), block=i, kind=kind,
                cache_hit=bool(flags & kr.FLAG_HIT), drop=bool(flags & kr.FLAG_DROP),
                oracle_called=bool(flags & kr.FLAG_ORACLE), gamma=float(r[kr.L_GAMMA]),
                gamma_max=float(r[kr.L_GAMMA_MAX]), block_gap_estimate=float(r[kr.L_GAP]),
                direction_gap=float(r[kr.L_CORNER_GAP]), improvement=float(r[kr.L_IMPROVE]),
                active_set_size=int(r[kr.L_ACTIVE]),
                fw_corner=S.last_fw[:L].copy() if is_last else None,
                away_corner=S.last_away[:L].copy() if (is_last and self.config.step != StepKind.FW) else None,
            ))
        return out


    def result(self) -> Result:
        ex = self._last_exact
        return Result(
            status=self.status,
            primal=ex.primal if ex else math.nan,
            dual=self.dual_objective(),
            exact_gap=ex.gap if ex else math.nan,
            heuristic_gap=self.heuristic_gap,
            effective_passes=self.effective_passes,
            oracle_calls=self.oracle_calls,
            cache_hits=int(self.S.counters[kr.C_HIT]),
            steps=self.iteration,
            wall_time_s=self.wall_time,
            step_counts=self.step_counts(),
            w=self.w,
            trace=[dict(r) for r in self._trace],
            compile_time_s=self.compile_time,
            not_exact=(dict(self.not_exact.to_dict(), message=self.not_exact.message())
                       if getattr(self, "not_exact", None) is not None and self.status == Status.ORACLE_NOT_EXACT
                       else None),
        )

    def trace(self, since: int = 0) -> list[dict]:
        """Trace records ``since`` onwards (copies): one per pass ("pass"), per gap check
        ("gap_check") and per batch step ("batch"), with iteration, effective_passes,
        oracle_calls, wall_time_s, heuristic_gap, exact_gap (NaN unless computed), primal
        (idem), dual, cache_hits, step counts and test_error (at gap checks when test data is
        given). Records are numbered in the order they are made and ``since`` is such a number,
        so ``trace(since=n_trace_records)`` taken earlier gives the new ones. Past ``trace_limit``
        records, older ones are thinned (see :class:`Solver`), never the newest half."""
        since = validate.int_at_least("since", since, 0)
        return [dict(r) for r in self._records_since(int(since))]

    @property
    def n_trace_records(self) -> int:
        """Records made so far (kept or thinned)."""
        return self._n_records

    @property
    def trace_records_dropped(self) -> int:
        """Records dropped by thinning (0 unless the trace outgrew ``trace_limit``)."""
        return self._n_records - len(self._trace)
