"""Settings of the regularization path and of the grid search, and their defaults: the one
place the command line, the sweep spec and the app read them from (:func:`path_defaults`).

Names of the authors' options: ``regularization_path`` -> :func:`~gaplab.core.regpath.epspath.regularization_path`,
``regularization_path_eps`` -> ``eps``, ``regularization_path_a`` -> ``kappa``,
``regularization_path_min_lambda`` -> ``lam_min``, ``lambda_values`` -> ``lams`` of
:func:`~gaplab.core.regpath.grid.grid_search`, ``warm_start_type`` -> ``warm_start``.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np

from .. import jsonsafe, validate
from ..config import LAM_MIN, SolverConfig

__all__ = ["PathConfig", "HEURISTIC_KAPPA", "path_defaults", "default_grid"]


@dataclass(frozen=True)
class PathConfig:
    """Settings of a regularization path (Paper: Alg. 7, App. K).

    Parameters
    ----------
    eps : float
        ε > 0: every λ >= λ_end gets an ε-approximate w (the authors' regularization_path_eps).
    kappa : float
        κ in (0, 1): the solver runs to κε at each breakpoint (regularization_path_a). The paper
        uses 0.9 for the ε-approximate path and 0.7 for the heuristic path.
    lam_min : float
        λ_min > 0: the path stops once it covers λ_min (regularization_path_min_lambda).
    heuristic : bool
        Heuristic path: stop the solver on the stale gap sum, no exact gap pass.
    max_passes_per_breakpoint : float
        Solver budget at one breakpoint (effective passes, gap passes included).
    time_limit : float
        Budget of the whole path in seconds (inf: none); the path stops when it is used up.
    max_breakpoints : int
        Safety cap on the number of breakpoints.
    true_gaps : bool
        Also compute the exact gap at every breakpoint where the algorithm does not need it (the
        heuristic path, λ_∞) as an uncounted, untimed diagnostic (Fig. 7, bottom).
    verify_heuristic_gap : bool
        ε-path: run an exact gap pass when the stale gap sum falls below κε (authors'
        true_gap_when_converged). Off: only the periodic gap checks can stop the solver.
    check_every : float
        Effective passes of solver work between two looks at the stale gap sum (1: once per
        pass, as the authors' solver).
    check_factor : float
        In (0, 1]. ε-path: the counted exact gap pass runs only once the stale gap sum is
        <= check_factor·κε. Stale estimates were measured before each block's step, and at
        small λ they underestimate the gap, so an exact pass run as soon as the stale sum
        reaches κε often fails and costs a pass for nothing. Default 0.8, the authors'
        quit_passes_heuristic_gap_eps_multiplyer. The heuristic path still stops at κε
        (Paper: App. K).
    batch_step : bool
        ε-path: take a batch FW step at each new breakpoint with the oracle answers of the last
        exact gap pass (free: w is unchanged by the rescaling; see
        :func:`~gaplab.core.regpath.certificate.prop1_warm_start`).
    """

    eps: float = 0.1
    kappa: float = 0.9
    lam_min: float = 2.0 ** -15
    heuristic: bool = False
    max_passes_per_breakpoint: float = 1000.0
    time_limit: float = math.inf
    max_breakpoints: int = 100_000
    true_gaps: bool = False
    verify_heuristic_gap: bool = True
    check_every: float = 1.0
    check_factor: float = 0.8
    batch_step: bool = False

    def __post_init__(self):
        object.__setattr__(self, "eps", validate.positive("eps", self.eps))
        object.__setattr__(self, "kappa", validate.number("kappa", self.kappa, lo=0.0, hi=1.0, hi_open=True))
        object.__setattr__(self, "lam_min", validate.number("lam_min", self.lam_min, lo=LAM_MIN, lo_open=False))
        for name in ("heuristic", "true_gaps", "verify_heuristic_gap", "batch_step"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        object.__setattr__(self, "max_passes_per_breakpoint",
                           validate.positive("max_passes_per_breakpoint", self.max_passes_per_breakpoint,
                                             allow_inf=True))
        object.__setattr__(self, "time_limit", validate.positive("time_limit", self.time_limit, allow_inf=True))
        object.__setattr__(self, "check_every", validate.number("check_every", self.check_every, lo=0.0, hi=1e6))
        object.__setattr__(self, "check_factor", validate.number("check_factor", self.check_factor, lo=0.0, hi=1.0))
        object.__setattr__(self, "max_breakpoints", validate.int_at_least("max_breakpoints", self.max_breakpoints, 1))

    def replace(self, **changes) -> "PathConfig":
        from dataclasses import replace
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return jsonsafe.encode(asdict(self))


#: κ of the heuristic path (Paper: App. K); the ε-path's κ is PathConfig's default
HEURISTIC_KAPPA = 0.7


def path_defaults() -> dict:
    """PathConfig's field defaults by name: the one place the command line, the sweep spec and the
    app read the path's defaults from."""
    return {f.name: f.default for f in fields(PathConfig)}


#: PathConfig's defaults, also those of the grid search's matching arguments
_DEFAULTS = path_defaults()


def default_grid(hi: int = 15, lo: int = -15) -> np.ndarray:
    """The paper's grid 2^hi, 2^(hi-1), ..., 2^lo (31 values by default), decreasing (Paper: App. K)."""
    if lo > hi:
        raise ValueError(f"default_grid needs lo <= hi, got hi={hi}, lo={lo}")
    return 2.0 ** np.arange(hi, lo - 1, -1, dtype=np.float64)


def _path_config(config, overrides) -> PathConfig:
    """``config`` (default PathConfig()) with the keyword ``overrides`` replacing single fields."""
    if config is None:
        config = PathConfig(**overrides)
    elif isinstance(config, PathConfig):
        if overrides:
            config = config.replace(**overrides)
    else:
        raise TypeError(f"config must be a PathConfig, got {type(config).__name__}")
    return config


def _solver_config_dict(cfg: SolverConfig) -> dict:
    """The solver settings as JSON-ready metadata (λ is the path's, not a setting)."""
    d = asdict(cfg)
    d.pop("lam", None)
    return jsonsafe.encode(d)


def _as_solver_config(solver_config) -> SolverConfig:
    """The solver settings used at every breakpoint / grid point; the path owns the stopping
    rule, so ``stop_on_heuristic_gap`` is switched off."""
    if solver_config is None:
        solver_config = SolverConfig(sampling="gap")
    elif isinstance(solver_config, dict):
        solver_config = SolverConfig(**solver_config)
    elif not isinstance(solver_config, SolverConfig):
        raise TypeError(f"solver_config must be a SolverConfig, got {type(solver_config).__name__}")
    return solver_config.replace(stop_on_heuristic_gap=False)
