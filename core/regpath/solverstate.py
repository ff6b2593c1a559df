"""The solver state saved with a path (single-file ``.npz`` or a store's ``resume_state`` file)
so that :func:`~gaplab.core.regpath.resume.resume_path` continues it exactly: the state arrays with the
RNG, counters, the last exact gap pass and the configuration, and their restoring (no pickle).
"""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from .. import jsonsafe
from .. import kernels as kr
from ..config import CacheConfig, SolverConfig, Status
from ..solver import ExactGap, Solver
from .run import _model_box, _new_solver

#: prefix of the solver's arrays in a saved path (``solver_state__w``, ...)
_STATE_PREFIX = "solver_state__"
_STATE_FIELDS = tuple(kr.StateArrays._fields)


def _solver_state(solver: Solver):
    """(JSON info, arrays) of everything a solver needs to continue exactly (state arrays with
    the RNG, counters, the last exact gap pass, the configuration); the arrays' names carry
    :data:`_STATE_PREFIX`."""
    info = {
        "config": jsonsafe.encode(asdict(solver.config)),
        "wall_time": float(solver.wall_time),
        "passes_since_check": int(solver.passes_since_check),
        "last_exact_iter": int(solver._last_exact_iter),
        "corners_valid": bool(getattr(solver, "_corners_valid", False)),
        "status": solver.status.name,
        "has_box": bool(solver.S.lb.size),
    }
    arrays = {_STATE_PREFIX + k: np.asarray(v) for k, v in solver.S._asdict().items()}
    ex = solver._last_exact
    if ex is not None:
        info["last_exact"] = {"gap": ex.gap, "primal": ex.primal, "dual": ex.dual}
        arrays[_STATE_PREFIX + "_exact_block_gaps"] = ex.block_gaps
        arrays[_STATE_PREFIX + "_exact_block_deltas"] = ex.block_deltas
    return info, arrays


def _config_from_json(d: dict) -> SolverConfig:
    """The SolverConfig saved by :func:`_solver_state` (numbers spelled "inf"/"nan" read back)."""
    d = dict(d)

    def num(v):
        return float(v) if isinstance(v, str) else v

    for k in ("lam", "gap_power", "gap_check", "gap_threshold", "max_passes", "time_limit", "drop_tol"):
        if k in d:
            d[k] = num(d[k])
    if isinstance(d.get("cache"), dict):
        d["cache"] = CacheConfig(**{k: num(v) if k in ("factor", "nu") else v for k, v in d["cache"].items()})
    return SolverConfig(**d)


def _checked_state_arrays(arrays: dict, ref: dict, box: bool, bad) -> dict:
    """The saved state arrays (names without the prefix) checked against a fresh solver's
    ``ref``: same dtypes and dimensions, the model's shapes and box; ``bad(problem)`` makes the
    error raised."""
    state = {}
    for k in _STATE_FIELDS:
        a = arrays[k]
        if a.dtype != ref[k].dtype or a.ndim != ref[k].ndim:
            raise bad(f"saved solver array {k!r} has dtype {a.dtype} / {a.ndim}-D, expected {ref[k].dtype} / "
                      f"{ref[k].ndim}-D")
        state[k] = np.ascontiguousarray(a)
    for k in ("w", "mu", "gap_est", "ell", "counters", "scalars", "rng"):
        if state[k].shape != ref[k].shape:
            raise bad(f"saved solver array {k!r} has shape {state[k].shape}, expected {ref[k].shape} for this "
                      "model (another data set?)")
    if box:
        for k in ("v", "lb", "ub"):
            if state[k].shape != ref[k].shape:
                raise bad(f"saved solver array {k!r} has shape {state[k].shape}, expected {ref[k].shape}")
        if not (np.array_equal(state["lb"], ref["lb"]) and np.array_equal(state["ub"], ref["ub"])):
            raise bad("the saved solver's box constraints differ from the model's bounds()")
    else:
        state["v"] = state["w"]  # no box: w is v (one array)
    return state


def _restore_solver(model, info: dict, arrays: dict, bad) -> Solver:
    """A solver over ``model`` in the saved state (see :func:`_solver_state`; ``arrays`` named
    without the prefix). ``bad(problem)`` makes the error raised for a state that does not fit
    the model."""
    box = _model_box(model)
    if bool(info.get("has_box")) != bool(box):
        raise bad("the saved solver's box constraints do not match the model's bounds() (another model?)")
    solver = _new_solver(model, _config_from_json(info["config"]))
    state = _checked_state_arrays(arrays, solver.S._asdict(), bool(box), bad)
    solver.S = kr.StateArrays(**state)
    solver.wall_time = float(info["wall_time"])
    solver.passes_since_check = int(info["passes_since_check"])
    solver._last_exact_iter = int(info["last_exact_iter"])
    solver._corners_valid = bool(info["corners_valid"])
    solver.status = Status[info["status"]]
    le = info.get("last_exact")
    if le is not None:
        solver._last_exact = ExactGap(gap=float(le["gap"]), primal=float(le["primal"]), dual=float(le["dual"]),
                                      block_gaps=np.array(arrays["_exact_block_gaps"], dtype=np.float64),
                                      block_deltas=np.array(arrays["_exact_block_deltas"], dtype=np.float64))
    return solver
