"""One point of a path or grid (:class:`PathPoint`), its columns, and the test data and headline
test metric recorded at every point (:class:`PathMetric`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Callable

import numpy as np

from ..solver import Solver

__all__ = ["PathPoint", "PathMetric"]


@dataclass(frozen=True)
class PathMetric:
    """A problem's headline test metric, recorded at every breakpoint next to the test error
    (column ``test_metric``; its name in the path's ``meta["test_metric"]``).

    Attributes
    ----------
    name : str
        E.g. ``"chunk F1"`` (CoNLL-2000: conlleval's chunk-level F1).
    fn : callable(w) -> float
        Its value at w (float64 (d,)) on the test set, a fraction in [0, 1] (or NaN).
    higher_is_better : bool
        True for F1 and accuracies, False for errors.
    """

    name: str
    fn: Callable[[np.ndarray], float]
    higher_is_better: bool = True

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"PathMetric name must be a non-empty string, got {self.name!r}")
        if not callable(self.fn):
            raise TypeError(f"PathMetric fn must be callable(w) -> float, got {type(self.fn).__name__}")

    def describe(self) -> dict:
        """JSON-ready name and direction (stored in the path's metadata)."""
        return {"name": self.name, "higher_is_better": bool(self.higher_is_better)}


class _Tests:
    """Test data and the optional headline metric of the diagnostics (outside the timed work)."""

    __slots__ = ("data", "metric")

    def __init__(self, data=None, metric: PathMetric | None = None):
        if metric is not None and not isinstance(metric, PathMetric):
            raise TypeError(f"test_metric must be a PathMetric (name, fn(w) -> float), got {type(metric).__name__}")
        self.data, self.metric = data, metric


def _as_tests(test_data, test_metric) -> _Tests:
    return test_data if isinstance(test_data, _Tests) else _Tests(test_data, test_metric)


def _metric_meta(meta: dict, test_metric: PathMetric | None) -> dict:
    """``meta`` with the metric's name and direction under ``"test_metric"`` (when one is given)."""
    if test_metric is not None:
        meta = dict(meta)
        meta["test_metric"] = test_metric.describe()
    return meta


@dataclass
class PathPoint:
    """One breakpoint of a path (or one grid point), as soon as it is computed.

    Attributes
    ----------
    index : int
    lam : float
        λ_j.
    w : ndarray (d,)
        w_j (ε-path: κε-approximate at λ_j).
    rho : float
        λ_j / λ_{j-1} (NaN for the first point).
    gap : float
        The gap the algorithm used: exact for the ε-path and grid search, the stale sum for the
        heuristic path, Alg. 6's bound κε at λ_∞.
    exact_gap, primal, dual : float
        Exact duality gap, primal and dual objectives at λ_j (NaN where not computed).
    ell : float
        ℓ = Σ_i ℓ_i of the dual point (dual objective = ℓ − λ/2‖w‖²).
    delta : float
        Δ = ℓ − λ‖w‖² (Proposition 1).
    next_lam : float
        ρ_{j+1}λ_j: w_j is ε-approximate on [next_lam, λ_j] (0: for all λ below λ_j; NaN: grid
        points, or the point is not certified).
    passes, oracle_calls : float, int
        Effective passes / max-oracle calls spent on this point (Alg. 6 counts 2 passes).
    time_s, solver_time_s : float
        Wall time of this point's work (warm start, rescaling, solver; test error excluded) and
        the solver's share of it.
    cum_passes, cum_time_s : float
        Cumulative from the start of the path / grid search.
    test_error : float
        Test error of w_j (NaN without test data).
    test_metric : float
        The problem's headline test metric of w_j when one is given (:class:`PathMetric`, e.g.
        CoNLL's chunk F1; its name in the path's ``meta["test_metric"]``), else NaN. Paths and
        stores written before it existed read back with NaN.
    status : str
        "init" (λ_∞), "converged" (exact gap <= target), "converged_heuristic", "max_passes",
        "time_limit", "stopped", "oracle_not_exact" (an exact gap below −tolerance: the max oracle
        is not exact, :mod:`~gaplab.core.certify`; never certified).
    certified : bool
        The point was accepted: gap <= ε at λ_j. A certificate only where ``gap`` is the exact
        duality gap (ε-path, grid); on the heuristic path ``gap`` is the stale sum Σ_i ĝ_i
        (status "converged_heuristic"), which certifies nothing: its true gap can exceed ε
        (Paper: App. K). :meth:`~gaplab.core.regpath.container.RegPath.summary` counts the two apart.
    end : str
        Why the path ends at this point ("" if it goes on): "rho<=0", "lam_min", "not_converged",
        "oracle_not_exact",
        "time_limit", "stopped", "max_breakpoints", "stalled".
    solver : Solver or None
        The live solver at this point (only with ``keep_solver=True``; not saved). Read it before
        asking for the next point or copy it.
    """

    index: int
    lam: float
    w: np.ndarray
    rho: float = math.nan
    gap: float = math.nan
    exact_gap: float = math.nan
    primal: float = math.nan
    dual: float = math.nan
    ell: float = math.nan
    delta: float = math.nan
    next_lam: float = math.nan
    passes: float = 0.0
    oracle_calls: int = 0
    time_s: float = 0.0
    solver_time_s: float = 0.0
    cum_passes: float = 0.0
    cum_time_s: float = 0.0
    test_error: float = math.nan
    test_metric: float = math.nan
    status: str = ""
    certified: bool = False
    end: str = ""
    solver: Solver | None = field(default=None, repr=False, compare=False)

    def row(self) -> dict:
        """The scalar fields as a dict (JSON-friendly up to NaN)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("w", "solver")}


# the columns of a path (one entry per point), by type: what a saved path holds besides W
_FLOAT_COLS = ("lam", "rho", "gap", "exact_gap", "primal", "dual", "ell", "delta", "next_lam", "passes",
               "time_s", "solver_time_s", "cum_passes", "cum_time_s", "test_error", "test_metric")
#: columns added after the format was first written: NaN when an older file or store lacks them
_OPTIONAL_COLS = ("test_metric",)
_INT_COLS = ("index", "oracle_calls")
_BOOL_COLS = ("certified",)
_STR_COLS = ("status", "end")
