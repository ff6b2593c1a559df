"""What the regularization-path lab publishes (Paper: Sec. 4, Alg. 6-7): the immutable
:class:`PathSnapshot` that :mod:`gaplab.app.path_tab` draws, the path columns it carries, the
end reasons of a path and the problem's headline test metric. Read by the views and by the lab
(:mod:`gaplab.app.pathlab`); no thread, no Panel import.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gaplab.core.regpath import RegPath

__all__ = ["PathSnapshot", "COLUMNS", "END_REASONS", "cols_end", "end_message", "end_words", "problem_metric"]

#: the columns of the path drawn by the views
COLUMNS = ("lam", "rho", "gap", "exact_gap", "next_lam", "delta", "passes", "cum_passes", "cum_time_s",
           "test_error", "test_metric", "certified")

END_REASONS = {
    "rho<=0": "ρ ≤ 0: the last w is ε-approximate for every smaller λ",
    "lam_min": "λ_min reached",
    "not_converged": "a breakpoint did not reach κε within its pass budget",
    "oracle_not_exact": "the max oracle is not exact (an exact gap below 0 certifies nothing)",
    "time_limit": "time limit",
    "stopped": "stopped",
    "max_breakpoints": "breakpoint cap reached",
    "stalled": "stalled (gap ≥ ε at a breakpoint)",
}
#: the end reasons that read differently on a heuristic path (App. K: stale gaps, no certificate)
HEURISTIC_END_REASONS = {
    "rho<=0": "ρ ≤ 0 on the stale gap estimates: the path ends there, but a heuristic path certifies "
              "nothing (App. K), so the last w is not known to be ε-approximate for smaller λ",
}


def end_words(end: str, kind: str = "eps") -> str:
    """The end reason ``end`` of a path of ``kind`` ("eps" or "heuristic") in words."""
    if kind == "heuristic" and end in HEURISTIC_END_REASONS:
        return HEURISTIC_END_REASONS[end]
    return END_REASONS.get(end, end)


def frozen(a):
    """A read-only copy of ``a`` (a snapshot's columns cannot be changed by a view)."""
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class PathSnapshot:
    """What the path views draw (immutable; columns are read-only arrays)."""

    version: int
    status: str                 # "idle", "running", "grid", "done", "stopped", "error"
    dataset: str
    kind: str                   # "eps" or "heuristic"
    eps: float
    kappa: float
    lam_min: float
    solver_label: str
    cols: dict                  # COLUMNS -> arrays, one entry per breakpoint
    n_points: int
    end: str                    # end reason of the path ("" while computing)
    lam_end: float              # the path covers [lam_end, ∞)
    grid: dict                  # lam, cum_passes, cum_time_s, test_error, test_metric, exact_gap (rows so far)
    elapsed_s: float
    checkpoints: tuple          # breakpoint indices with a stored solver
    picked: float               # λ last loaded into the session (NaN: none)
    picked_piece: int
    message: str = ""
    max_breakpoints: int = 0
    settings: dict = field(default_factory=dict)
    store: str = ""             # the path store the breakpoints are in ("" before any)
    opened: bool = False        # the path was opened from a saved store (no solver checkpoints)
    w_info: dict = field(default_factory=dict)  # last w_at(λ) read from the store: lam, piece, nnz, ...
    metric: dict = field(default_factory=dict)  # the headline test metric recorded per breakpoint
    #                                             (column test_metric): name, higher_is_better; {}: none
    pending_load: dict = field(default_factory=dict)  # picked λ whose dual point was not loaded (the
    #                                             replay would be long): lam, piece, base, replay, est_s

    @property
    def shown_metric(self) -> tuple[str, str, bool]:
        """(column, name, higher_is_better) of the test metric the views plot against λ: the
        problem's headline metric recorded in the rows (CoNLL: "chunk F1") when there is one with
        a finite value, else the test error (OCR; and a store written before the column)."""
        name = self.metric.get("name") if self.metric else None
        if name and (not self.n_points or np.isfinite(self.cols["test_metric"]).any()):
            return "test_metric", str(name), bool(self.metric.get("higher_is_better", True))
        return "test_error", "test error", False

    @property
    def lam_range(self) -> tuple[float, float]:
        """(lo, hi): the λ a pick can load, [λ_end, λ_0] (NaN, NaN when empty). While the path is
        computed, λ_end is the lower end of the last breakpoint's certified piece; when the path
        covers every smaller λ (ρ <= 0), the range goes down to min(λ_min, λ_J/10)."""
        if not self.n_points:
            return math.nan, math.nan
        lams = self.cols["lam"]
        hi = float(lams[0])
        lo = self.lam_end
        if not (math.isfinite(lo) and lo > 0):
            lo = min(self.lam_min, float(lams[-1]) / 10.0) if lo == 0 else float(lams[-1])
        return min(lo, hi), hi


def cols_end(path: RegPath) -> str:
    """The end reason of a path's last point ("" while it goes on)."""
    return str(path.column("end")[-1]) if len(path) else ""


def empty_cols() -> dict:
    """The :data:`COLUMNS` of a path with no breakpoint (read-only, length 0)."""
    return {c: frozen(np.zeros(0, dtype=bool if c == "certified" else np.float64)) for c in COLUMNS}


def end_message(path: RegPath) -> str:
    """One line on how a path ended: its breakpoints, its λ range and :data:`END_REASONS`."""
    if not len(path):
        return "Stopped before the first breakpoint."
    end = path.end_reason
    return (f"{len(path)} breakpoints, λ from {path.lams[0]:.4g} down to {path.lams[-1]:.4g}; "
            f"end: {end_words(end, getattr(path, 'kind', 'eps'))}.")


def problem_metric(problem):
    """The problem's headline test metric as a PathMetric (CoNLL: chunk F1), or None (OCR: its
    metric is the test error, recorded anyway)."""
    spec = getattr(problem, "spec", None)
    return None if spec is None else spec.path_metric(problem.model, problem.test)
