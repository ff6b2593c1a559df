"""One solve at a breakpoint or grid point: the solver over the model (with its box), the
stopping rule (the authors' "true gap when converged"), the diagnostics kept out of the path's
cost and the clock of the path's own time.

The solver's stopping rule at a breakpoint: after each chunk of block steps, when the stale gap
sum falls to the target an exact gap pass (counted) confirms it; the periodic gap checks
(``SolverConfig.gap_check``) also stop it. Every breakpoint therefore costs at least one pass of
block steps and one exact gap pass (Paper: Alg. 7 line 22, App. K).
"""
from __future__ import annotations

import time

import numpy as np

from .. import certify
from ..config import Status
from ..solver import Solver

_STATUS_NAMES = {s: s.name.lower() for s in Status}
_STATUS_OF_NAME = {"converged": Status.CONVERGED, "converged_heuristic": Status.CONVERGED_HEURISTIC,
                   "max_passes": Status.MAX_PASSES, "time_limit": Status.TIME_LIMIT, "stopped": Status.STOPPED,
                   "oracle_not_exact": Status.ORACLE_NOT_EXACT}


def _model_box(model) -> dict:
    """The model's own box constraints as Solver keyword arguments (empty: no box)."""
    from ..problems import model_box
    return model_box(model)


def _new_solver(model, config, **kw) -> Solver:
    """A Solver over ``model`` with the model's own box constraints (``model.bounds()``)."""
    return Solver(model, config, **_model_box(model), **kw)


def _buffers(M):
    """Scratch arrays of the path's kernels for the model arrays ``M``: two score vectors
    (largest block's statistics), two labellings (longest block) and the max oracle's
    float/int work arrays."""
    max_lab = int(np.diff(M.lab_off).max())
    max_stat = int(np.diff(M.stat_off).max())
    return (np.zeros(max_stat), np.zeros(max_stat), np.zeros(max_lab, dtype=np.int64),
            np.zeros(max_lab, dtype=np.int64), np.zeros(max_lab * M.K), np.zeros(max_lab * M.K, dtype=np.int64))


def _solve(solver: Solver, target: float, *, heuristic: bool, verify: bool, max_passes: float,
           time_limit: float, should_stop, check_every: float = 1.0, check_factor: float = 1.0):
    """Run ``solver`` until its gap is <= target; returns (result, status name).

    The solver advances in chunks of ``check_every`` effective passes (``Solver.run`` with a
    growing pass budget). After each chunk the stale gap sum is compared with the target:
    heuristic mode stops once it is <= target; exact mode, once it is <= check_factor·target,
    runs a counted exact gap pass (the authors' "true gap when converged") and stops if the
    exact gap is <= target (an exact gap below −tolerance ends it as "oracle_not_exact": the max
    oracle is not exact, :mod:`~gaplab.core.certify`). A failed check doubles the work required before the next one (so
    failed checks cost at most as much as the solver work). The solver's periodic gap checks
    (``gap_check``) also stop it. Exact mode ends with an exact gap of the final iterate (as
    ``run(final_gap_check=True)``)."""
    n = solver.n
    t_begin = time.perf_counter()
    chunk = max(check_every, 1.0 / n)
    next_check_calls = 0
    backoff = max(1, int(round(check_every * n)))
    fresh = False
    status = None
    while status is None:
        if solver.effective_passes >= max_passes:
            status = "max_passes"
            break
        remaining = time_limit - (time.perf_counter() - t_begin)
        if remaining <= 0:
            status = "time_limit"
            break
        budget = min(max_passes, solver.effective_passes + chunk)
        res = solver.run(max_passes=budget, time_limit=remaining, gap_threshold=target,
                         final_gap_check=False, should_stop=should_stop)
        if res.status == Status.CONVERGED:  # a periodic exact gap check
            status, fresh = "converged", True
            break
        if res.status in (Status.TIME_LIMIT, Status.STOPPED, Status.ORACLE_NOT_EXACT):
            status = _STATUS_NAMES[res.status]
            break
        stale = solver.heuristic_gap
        if heuristic and stale <= target:
            status = "converged_heuristic"
            break
        if not heuristic and stale <= check_factor * target:
            if verify and solver.oracle_calls >= next_check_calls:
                ex = solver.exact_gap(count=True, store_corners=True)
                if certify.is_impossible_gap(ex.gap, ex.primal, ex.dual):
                    status = "oracle_not_exact"  # a negative gap certifies nothing
                    break
                if ex.gap <= target:
                    status, fresh = "converged", True
                    break
                next_check_calls = solver.oracle_calls + backoff
                backoff *= 2
        if res.status == Status.MAX_PASSES and budget >= max_passes:  # the point's budget is spent (one
            status = "max_passes"  # below a single oracle call makes no step, so this is the only end)
    if not heuristic and not fresh:
        solver.exact_gap(count=True, store_corners=True)
    ex = solver.fresh_exact_gap
    if not heuristic and ex is not None and certify.is_impossible_gap(ex.gap, ex.primal, ex.dual):
        status = "oracle_not_exact"  # never "converged": the point is not certified
    if status == "oracle_not_exact":
        solver.not_exact = certify.diagnose(solver, ex or solver.exact_gap(count=True, store_corners=True))
    solver.status = _STATUS_OF_NAME[status]
    return solver.result(), status


class _Clock:
    """Seconds the path has used: wall time since the start minus the excluded diagnostics, plus
    ``offset`` (the time of the saved part of a resumed path)."""

    def __init__(self, offset: float = 0.0):
        self.t_start = time.perf_counter()
        self.excluded = 0.0
        self.offset = float(offset)

    def used(self) -> float:
        return time.perf_counter() - self.t_start - self.excluded + self.offset


def _diagnostics(point, solver, model, tests, true_gap: bool) -> float:
    """The extras of a point that are not part of the method's cost: the exact gap where the
    method did not compute one (uncounted pass; Fig. 7), the test error and the headline test
    metric (``tests``: the path's test data and :class:`~gaplab.core.regpath.points.PathMetric`).
    Returns their seconds, which the caller excludes from the path's time.

    The path and the grid call it through this module (``run._diagnostics``), so that one
    wrapper (``benchmarks/horse_path.py`` times the diagnostics) sees every call."""
    t1 = time.perf_counter()
    if true_gap:
        ex = solver.exact_gap(count=False)
        point.exact_gap, point.primal = ex.gap, ex.primal
    if tests.data is not None:
        point.test_error = model.error(point.w, tests.data)
    if tests.metric is not None:
        point.test_metric = float(tests.metric.fn(point.w))
    return time.perf_counter() - t1
