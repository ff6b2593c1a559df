"""One run of a sweep, executed in a worker process (:func:`execute_run`): load its problem
(kept per worker), warm the compiled kernels up on 3 examples, run the Solver, the path or the
grid, and return the trace rows and a summary.
"""
from __future__ import annotations

import math
import os
import signal
import socket
import time
from pathlib import Path

import numpy as np

from .spec import METRICS, TEST_KINDS, DatasetRef, _canonical, load_dataset, parse_dataset

__all__ = ["execute_run", "TRACE_COLUMNS", "WALL_CLOCK_COLUMNS"]

TRACE_COLUMNS = ("kind", "iteration", "effective_passes", "oracle_calls", "wall_time_s", "heuristic_gap",
                 "exact_gap", "primal", "dual", "cache_hits", "test_error")
WALL_CLOCK_COLUMNS = ("wall_time_s", "time_s", "solver_time_s", "cum_time_s")

# ============================================================================ one run (on a worker)
_MODELS: dict = {}


def _problem(cfg):
    """The loaded problem of a run's dataset (registry), kept per worker process (one dataset at a
    time). Configs from before the registry (no ``problem`` field) name it in ``dataset``."""
    ref = (DatasetRef(cfg["dataset"], cfg["problem"], dict(cfg.get("options") or {}), cfg.get("first"))
           if "problem" in cfg else parse_dataset(cfg["dataset"]))
    key = (ref.key, ref.problem, _canonical(ref.options), ref.first, cfg.get("data_home"))
    if key not in _MODELS:
        problem = load_dataset(ref, cfg.get("data_home"), cfg.get("verify", True))
        _MODELS.clear()
        _MODELS[key] = problem
    return _MODELS[key]


_WARM: set = set()


def _small_model(problem):
    """A 3-example instance of the problem's model (the same model class and array types, so numba
    loads the same compiled kernels): its first 3 training examples, else the problem's own
    ``warmup`` instance; None if it has neither."""
    train = getattr(problem.model, "data", None)
    spec = problem.spec
    if train is not None and hasattr(train, "subset") and spec is not None and spec.model_factory is not None:
        return spec.model_factory(train.subset(np.arange(min(3, problem.n))))
    if spec is not None and spec.warmup is not None:
        return spec.warmup()
    return None


def _warm_up(problem, scfg):
    """Run the solver of this config once on 3 examples, so that the first timed run of a worker
    process does not pay for loading numba's compiled kernels (times stay comparable)."""
    key = (type(problem.model).__name__, scfg.step, scfg.cache.enabled, scfg.sampling, scfg.batch_step)
    if key in _WARM:
        return
    from ..problems import model_box
    from ..solver import Solver
    small = _small_model(problem)
    if small is not None:
        Solver(small, scfg.replace(max_passes=2.0, time_limit=math.inf, gap_check=1),
               **model_box(small)).run(final_gap_check=True)
    _WARM.add(key)


def _warm_up_path(problem, scfg, cfg):
    """As :func:`_warm_up` for path and grid runs (their own kernels): the same method on 3
    examples, at most 5 breakpoints / grid points."""
    key = (type(problem.model).__name__, cfg["kind"], scfg.step, scfg.cache.enabled, scfg.sampling,
           cfg.get("heuristic"), cfg.get("true_gaps"))
    if key in _WARM:
        return
    from ..regpath import grid_search, regularization_path
    small = _small_model(problem)
    if small is None:
        pass
    elif cfg["kind"] == "path":
        regularization_path(small, solver_config=scfg, eps=cfg["eps"], kappa=cfg["kappa"], heuristic=cfg["heuristic"],
                            true_gaps=cfg["true_gaps"], max_breakpoints=5)
    else:
        grid_search(small, [4.0, 2.0, 1.0, 0.5, 0.25], eps=cfg["eps"], warm_start=cfg["warm_start"], solver_config=scfg)
    _WARM.add(key)


def _solver_config(cfg, lam, **extra):
    from ..config import CacheConfig, SolverConfig
    return SolverConfig(lam=lam, sampling=cfg["sampling"], step=cfg["step"], gap_power=cfg["gap_power"],
                        cache=CacheConfig(**cfg["cache"]), gap_check=cfg["gap_check"], seed=cfg["seed"],
                        **extra)


def _columns(rows: list[dict], names) -> dict:
    return {c: [r.get(c) for r in rows] for c in names}


def execute_run(cfg: dict, imports=()) -> dict:
    """Run one config (in a worker process) and return its rows and summary.

    ``imports``: modules that register problems (module names or absolute .py paths, see
    :func:`gaplab.core.problems.import_problems`), imported first: a worker process does not
    share the imports of the process that started the sweep.

    Returns
    -------
    dict with ``rows`` (column name -> list: the trace of a solve run, one row per pass and gap
    check; the points of a path/grid run), ``summary`` (final numbers), ``lam`` (the resolved λ),
    ``host``, ``pid``, ``elapsed_s`` (wall seconds of the whole task: loading, warm-up, run) and
    ``cpu_s`` (CPU seconds of the worker process during the solver run or path, warm-up excluded;
    with one thread per worker that is the run's own CPU time plus the worker's small overhead).
    """
    t0 = time.perf_counter()
    if imports:
        from ..problems import import_problems
        for target in imports:
            import_problems(target)
    kind = cfg["kind"]
    if kind == "_test_raise":
        raise RuntimeError(cfg["message"])
    if kind == "_test_kill_once":
        marker = Path(cfg["marker"])
        if not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
    problem = _problem(cfg)
    model, test = problem.model, problem.test
    test_data = test if cfg.get("test_error") else None
    if kind in ("solve",) + TEST_KINDS:
        from ..problems import model_box
        from ..solver import Solver
        lam = 1.0 / model.n if cfg["lam"] == "1/n" else float(cfg["lam"])
        scfg = _solver_config(cfg, lam, max_passes=cfg["max_passes"], time_limit=cfg["time_limit"],
                              gap_threshold=cfg["gap_threshold"], batch_step=cfg["batch_step"])
        _warm_up(problem, scfg)
        c0 = time.process_time()
        result = Solver(model, scfg, test_data=test_data, **model_box(model)).run(final_gap_check=True)
        cpu_s = time.process_time() - c0
        keep = [c for c in TRACE_COLUMNS if c not in METRICS or c in cfg.get("metrics", METRICS)]
        rows = [{c: r.get(c) for c in keep} for r in result.trace]
        summary = {"status": result.status.name.lower(), "exact_gap": result.exact_gap, "primal": result.primal,
                   "dual": result.dual, "effective_passes": result.effective_passes,
                   "oracle_calls": result.oracle_calls, "cache_hits": result.cache_hits,
                   "wall_time_s": result.wall_time_s}
        cols = _columns(rows, keep)
    else:
        from ..regpath import default_grid, grid_search, regularization_path
        scfg = _solver_config(cfg, 1.0)
        _warm_up_path(problem, scfg, cfg)  # the path and the grid use the model's box (model_box)
        c0 = time.process_time()
        if kind == "path":
            path = regularization_path(model, solver_config=scfg, eps=cfg["eps"], kappa=cfg["kappa"],
                                       lam_min=cfg["lam_min"], heuristic=cfg["heuristic"],
                                       true_gaps=cfg["true_gaps"], time_limit=cfg["time_limit"],
                                       max_passes_per_breakpoint=cfg["max_passes_per_breakpoint"],
                                       check_factor=cfg["check_factor"], test_data=test_data)
        else:
            path = grid_search(model, default_grid(cfg["grid_hi"], cfg["grid_lo"]), eps=cfg["eps"],
                               warm_start=cfg["warm_start"], solver_config=scfg, test_data=test_data,
                               max_passes_per_point=cfg["max_passes_per_point"], time_limit=cfg["time_limit"],
                               check_factor=cfg["check_factor"])
        cpu_s = time.process_time() - c0
        rows = path.rows()
        names = list(rows[0]) if rows else ["index", "lam"]
        cols = _columns(rows, names)
        lam = math.nan
        summary = {"status": path.end_reason or "done", "points": len(path), "total_passes": path.total_passes,
                   "total_time_s": path.total_time_s, "lam_end": path.lam_end}
    return {"rows": cols, "summary": summary, "lam": lam, "host": socket.gethostname(), "pid": os.getpid(),
            "elapsed_s": time.perf_counter() - t0, "cpu_s": cpu_s}
