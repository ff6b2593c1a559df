"""Grid search over λ (Paper: App. K): a decreasing grid (default 2^15, 2^14, ..., 2^-15), each λ
solved to exact gap <= ε, from scratch (``warm_start="none"``), keeping w and rescaling α by
Proposition 1 (``"primal"``, the paper's choice) or keeping α and rescaling w (``"dual"``).
"""
from __future__ import annotations

import math
import time
from typing import Callable, Iterator

import numpy as np

from .. import validate
from ..config import LAM_MAX, LAM_MIN, SolverConfig
from . import run
from .certificate import _check_model, _ell_delta, prop1_warm_start
from .collect import _collect
from .config import _DEFAULTS, PathConfig, _as_solver_config, _solver_config_dict, default_grid
from .container import RegPath
from .points import PathMetric, PathPoint, _as_tests, _metric_meta
from .run import _new_solver, _solve

__all__ = ["iter_grid", "grid_search"]

_WARM = {"none": "none", "no": "none", "cold": "none", "primal": "primal", "keep-primal": "primal",
         "keep_primal": "primal", "dual": "dual", "keep-dual": "dual", "keep_dual": "dual"}


def _check_grid(lams) -> np.ndarray:
    """The grid as float64 (J,) (default: :func:`~gaplab.core.regpath.config.default_grid`).

    Raises
    ------
    ValueError
        For an empty grid, a λ that is not finite, not > 0 or outside the solver's λ range, or
        a grid that is not strictly decreasing.
    """
    if lams is None:
        return default_grid()
    try:
        arr = np.asarray(lams, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"lams must be a sequence of numbers, got {lams!r}") from None
    if arr.size == 0:
        raise ValueError("the λ grid is empty")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError("every λ of the grid must be finite and > 0")
    if np.any(arr < LAM_MIN) or np.any(arr > LAM_MAX):
        raise ValueError(f"every λ of the grid must lie in [{LAM_MIN:g}, {LAM_MAX:g}] (SolverConfig.lam)")
    if arr.size > 1 and not np.all(np.diff(arr) < 0):
        raise ValueError("the λ grid must be strictly decreasing (largest λ first)")
    return arr


def iter_grid(model, lams=None, *, eps: float = _DEFAULTS["eps"], warm_start: str = "primal",
              solver_config: SolverConfig | None = None, test_data=None,
              max_passes_per_point: float = _DEFAULTS["max_passes_per_breakpoint"],
              time_limit: float = _DEFAULTS["time_limit"],
              verify_heuristic_gap: bool = _DEFAULTS["verify_heuristic_gap"],
              check_every: float = _DEFAULTS["check_every"], check_factor: float = _DEFAULTS["check_factor"],
              batch_step: bool = _DEFAULTS["batch_step"], should_stop: Callable[[], bool] | None = None,
              keep_solver: bool = False, test_metric: PathMetric | None = None) -> Iterator[PathPoint]:
    """Grid search: solve to exact gap <= ε at each λ of a decreasing grid (default 2^15..2^-15),
    yielding each point as it is computed (Paper: App. K).

    warm_start : "none" (fresh solver: w = 0, α on the ground truth), "primal" (keep w, rescale α
    by Proposition 1, gap estimates moved accordingly; the paper's choice) or "dual" (keep α,
    w ← (λ_old/λ) w; gap estimates left stale). ``check_every`` and ``check_factor`` as in
    :class:`~gaplab.core.regpath.config.PathConfig` (the exact gap pass runs once the stale sum is
    <= check_factor·ε). ``test_data`` and ``test_metric`` as in
    :func:`~gaplab.core.regpath.epspath.iter_path`.

    Raises
    ------
    TypeError, ValueError
        For a model that is not a gaplab model, a bad grid (see :func:`_check_grid`), an unknown
        ``warm_start`` or bad settings.
    """
    _check_model(model)
    tests = _as_tests(test_data, test_metric)
    lams = _check_grid(lams)
    eps = validate.positive("eps", eps)
    key = str(warm_start).strip().lower() if warm_start is not None else "none"
    if key not in _WARM:
        raise ValueError(f"warm_start must be 'none', 'primal' or 'dual', got {warm_start!r}")
    mode = _WARM[key]
    max_passes_per_point = validate.positive("max_passes_per_point", max_passes_per_point)
    time_limit = validate.positive("time_limit", time_limit, allow_inf=True)
    checked = PathConfig(check_every=check_every, check_factor=check_factor)
    scfg = _as_solver_config(solver_config)
    return _grid_points(model, lams, eps, mode, scfg, tests, max_passes_per_point, float(time_limit),
                        verify_heuristic_gap, checked.check_every, checked.check_factor, batch_step, should_stop,
                        keep_solver)


def _grid_solver(model, solver, mode: str, lam: float, scfg, eps, max_passes_per_point, prev_gap, batch_step):
    """The solver at grid point ``lam``: fresh (first point, or ``mode`` "none"), warm-started by
    Proposition 1 ("primal") or keeping α with w rescaled ("dual")."""
    if solver is None or mode == "none":
        return _new_solver(model, scfg.replace(lam=lam, gap_threshold=eps, max_passes=max_passes_per_point,
                                               time_limit=math.inf))
    if mode == "primal":
        return prop1_warm_start(solver, lam, gap=prev_gap, batch_step=batch_step)
    return solver.warm_start(lam, keep="dual")


def _grid_end(point: PathPoint, last: bool, status: str, used_s: float, time_limit: float, should_stop) -> None:
    """Why the grid search ends at ``point`` ("" if it goes on)."""
    if last:
        point.end = "done"
    elif status in ("time_limit", "stopped"):
        point.end = status
    elif used_s >= time_limit:
        point.end = "time_limit"
    elif should_stop is not None and should_stop():
        point.end = "stopped"


def _grid_points(model, lams, eps, mode, scfg, tests, max_passes_per_point, time_limit,
                 verify_heuristic_gap, check_every, check_factor, batch_step, should_stop, keep_solver):
    t_start = time.perf_counter()
    excluded = 0.0
    cum_passes = cum_time = 0.0
    solver = None
    prev_gap = math.nan
    for j, lam in enumerate(lams):
        used = time.perf_counter() - t_start - excluded
        if used >= time_limit or (should_stop is not None and should_stop()):
            return
        t0 = time.perf_counter()
        solver = _grid_solver(model, solver, mode, float(lam), scfg, eps, max_passes_per_point, prev_gap,
                              batch_step)
        res, status = _solve(solver, eps, heuristic=False, verify=verify_heuristic_gap,
                             max_passes=max_passes_per_point, time_limit=time_limit - used,
                             should_stop=should_stop, check_every=check_every, check_factor=check_factor)
        elapsed = time.perf_counter() - t0
        prev_gap = res.exact_gap
        point = PathPoint(index=j, lam=float(lam), w=res.w, rho=float(lam / lams[j - 1]) if j else math.nan,
                          gap=res.exact_gap, exact_gap=res.exact_gap, primal=res.primal, dual=res.dual,
                          passes=res.effective_passes, oracle_calls=res.oracle_calls, time_s=elapsed,
                          solver_time_s=res.wall_time_s, status=status)
        point.ell, point.delta = _ell_delta(solver)
        point.certified = bool(res.exact_gap <= eps) and status != "oracle_not_exact"  # never on a negative gap
        cum_passes += point.passes
        cum_time += point.time_s
        point.cum_passes, point.cum_time_s = cum_passes, cum_time
        excluded += run._diagnostics(point, solver, model, tests, False)
        _grid_end(point, j == len(lams) - 1, status, time.perf_counter() - t_start - excluded, time_limit,
                  should_stop)
        if keep_solver:
            point.solver = solver
        yield point


def grid_search(model, lams=None, *, eps: float = _DEFAULTS["eps"], warm_start: str = "primal",
                solver_config: SolverConfig | None = None, test_data=None,
                max_passes_per_point: float = _DEFAULTS["max_passes_per_breakpoint"],
                time_limit: float = _DEFAULTS["time_limit"],
                verify_heuristic_gap: bool = _DEFAULTS["verify_heuristic_gap"],
                check_every: float = _DEFAULTS["check_every"], check_factor: float = _DEFAULTS["check_factor"],
                batch_step: bool = _DEFAULTS["batch_step"], should_stop=None,
                callback: Callable[[PathPoint], object] | None = None, meta: dict | None = None,
                store=None, overwrite: bool = False, store_compress: bool = False,
                test_metric: PathMetric | None = None) -> RegPath:
    """Grid search as a :class:`~gaplab.core.regpath.container.RegPath` of kind "grid" (see
    :func:`iter_grid`; Paper: App. K); ``store``: stream the points to an on-disk store, as
    :func:`~gaplab.core.regpath.epspath.regularization_path`; ``test_metric``: record a headline test
    metric at every point (:class:`~gaplab.core.regpath.points.PathMetric`)."""
    lams_arr = _check_grid(lams)
    scfg = _as_solver_config(solver_config)
    m = {"n": int(model.arrays.n), "d": int(model.arrays.d), "eps": float(eps), "warm_start": str(warm_start),
         "grid": lams_arr.tolist(), "check_every": float(check_every), "check_factor": float(check_factor),
         "batch_step": bool(batch_step),
         "solver_config": _solver_config_dict(scfg)}
    m.update(meta or {})
    path = RegPath("grid", _metric_meta(m, test_metric))
    if store is not None:
        path._attach_writer(store, overwrite=overwrite, compress_values=store_compress)
    points = iter_grid(model, lams_arr, eps=eps, warm_start=warm_start, solver_config=scfg, test_data=test_data,
                       max_passes_per_point=max_passes_per_point, time_limit=time_limit,
                       verify_heuristic_gap=verify_heuristic_gap, check_every=check_every,
                       check_factor=check_factor, batch_step=batch_step, should_stop=should_stop,
                       test_metric=test_metric)
    return _collect(path, points, callback)
