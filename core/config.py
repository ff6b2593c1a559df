"""Validated solver settings and the enums of the field's terms (no magic integers).

Paper: Sec. 3 (gap sampling, pairwise/away steps, caching), App. B (gap checks).
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, replace

__all__ = ["Sampling", "StepKind", "Status", "CacheConfig", "SolverConfig"]


class Sampling(enum.IntEnum):
    """How the next block is chosen.

    UNIFORM      i ~ U{0..n-1} (Paper: Alg. 1)
    PERMUTATION  a new random permutation every n block steps
    GAP          P(i) proportional to the gap estimate g_i**p (Paper: Alg. 2, p = 1)
    MAXGAP       the block with the largest gap estimate (ties: lowest index)
    WEIGHTS      P(i) proportional to fixed weights given to the solver (``sampling_weights``:
                 curvature- or Lipschitz-proportional baselines of App. C)
    EXACT_GAP    idealized sampler of Theorem 2: every block gap is recomputed before each
                 draw (n extra oracle calls per step, counted separately as sampler oracle calls)
    """

    UNIFORM = 0
    PERMUTATION = 1
    GAP = 2
    MAXGAP = 3
    WEIGHTS = 4
    EXACT_GAP = 5

    @classmethod
    def parse(cls, value) -> "Sampling":
        return _parse_enum(cls, value, "sampling", {"perm": "PERMUTATION", "gap_sampling": "GAP",
                                                     "max_gap": "MAXGAP", "max": "MAXGAP",
                                                     "exact": "EXACT_GAP", "fixed": "WEIGHTS"})


class StepKind(enum.IntEnum):
    """Block step type (the authors' ``stepType`` 0-3).

    FW        Frank-Wolfe step towards the FW corner (Paper: Alg. 1)
    PAIRWISE  mass moves from the away corner to the FW corner (Paper: Alg. 3, BCPFW)
    AWAY      FW step or away step, whichever has the larger gap (Paper: Alg. 4, BCAFW)
    COMBINED  FW, away and pairwise candidates; the largest dual improvement wins
    """

    FW = 0
    PAIRWISE = 1
    AWAY = 2
    COMBINED = 3

    @classmethod
    def parse(cls, value) -> "StepKind":
        return _parse_enum(cls, value, "step", {"frank_wolfe": "FW", "bcfw": "FW", "bcpfw": "PAIRWISE",
                                                 "bcafw": "AWAY", "pfw": "PAIRWISE", "afw": "AWAY"})


class Status(enum.IntEnum):
    """Why a run stopped."""

    RUNNING = 0
    CONVERGED = 1          # exact duality gap <= gap_threshold
    CONVERGED_HEURISTIC = 2  # stale (heuristic) gap <= threshold, only if the user asked for it
    MAX_PASSES = 3
    TIME_LIMIT = 4
    STOPPED = 5            # by a callback or the user
    STEPS_DONE = 6         # Solver.steps(k) finished its k steps
    INTERRUPTED = 7        # Ctrl-C (SIGINT) during Solver.run; the state is intact


def _parse_enum(cls, value, argname, aliases):
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        key = value.strip().lower().replace("-", "_")
        key = aliases.get(key, key).upper()
        if key in cls.__members__:
            return cls[key]
    elif isinstance(value, int) and not isinstance(value, bool) and value in set(m.value for m in cls):
        return cls(value)
    names = ", ".join(m.name.lower() for m in cls)
    raise ValueError(f"unknown {argname} {value!r}; expected one of: {names}")


def _check_positive(name, value, *, allow_inf=False, integer=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    v = float(value)
    if math.isnan(v) or v <= 0 or (math.isinf(v) and not allow_inf):
        rng = "(0, inf]" if allow_inf else "(0, inf)"
        raise ValueError(f"{name} must be in {rng}, got {value!r}")
    if integer and not math.isinf(v) and v != int(v):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return v


#: the λ range the float64 solver handles: w = (1/(λn)) Σ_i ψ-differences, so ‖w‖² grows like
#: 1/λ² and overflows (NaN primal, dual and gap) long before 1/λ does; λ·n must stay finite too
LAM_MIN, LAM_MAX = 1e-100, 1e100


def _check_lam(value):
    v = _check_positive("lam", value)
    if not (LAM_MIN <= v <= LAM_MAX):
        raise ValueError(
            f"lam must be in [{LAM_MIN:g}, {LAM_MAX:g}], got {value!r}: outside it 1/λ, λ·n or the objective "
            "λ/2‖w‖² (with ‖w‖ ~ 1/λ) is not finite in float64 (or w is 0 for every data set)")
    return v


def _check_seed(value):
    import numpy as np  # numpy integer seeds (e.g. from a Generator) are accepted

    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"seed must be a non-negative int, got {type(value).__name__} {value!r}")
    v = int(value)
    if not 0 <= v < 2 ** 64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {value!r} (larger seeds would alias smaller ones)")
    return v


@dataclass(frozen=True)
class CacheConfig:
    """Oracle cache of Alg. 5 (Paper: Sec. 3.3).

    A cache hit happens when the cache corner's gap ĝ_i >= max(F * g_i^(k_i), nu / n * g^(k_0)).

    Parameters
    ----------
    enabled : bool
        Use the cache (the authors' ``useCache``).
    factor : float
        F > 0, the local (per-block) part of the hit criterion (``cacheFactor``, default 0.25).
    nu : float
        nu > 0, the global part (``cacheNu``, default 0.01).
    size : int
        Maximum number of cached labelings per block (``maxCacheSize``, default 100). Atoms with
        alpha > 0 (the active set) are never evicted, so a block holds more than ``size`` atoms
        only when more than ``size`` of them are active.
    """

    enabled: bool = False
    factor: float = 0.25
    nu: float = 0.01
    size: int = 100

    def __post_init__(self):
        if not isinstance(self.enabled, bool):
            raise TypeError(f"cache enabled must be bool, got {type(self.enabled).__name__}")
        _check_positive("cache factor F", self.factor)
        _check_positive("cache nu", self.nu)
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"cache size must be an int >= 1, got {self.size!r}")


@dataclass(frozen=True)
class SolverConfig:
    """Settings of a BCFW-family run. Every field is validated at construction.

    Parameters
    ----------
    lam : float
        Regularization λ in [1e-100, 1e100] (Paper: Eq. (1)); outside it the objective is not
        finite in float64.
    sampling : Sampling or str
        Block sampler: ``uniform``, ``permutation``, ``gap``, ``maxgap``.
    gap_power : float
        Exponent p > 0 of gap sampling, P(i) ∝ g_i^p (Paper: Alg. 2 has p = 1).
    step : StepKind or str
        ``fw``, ``pairwise``, ``away`` or ``combined``.
    cache : CacheConfig
        Oracle cache settings (Paper: Alg. 5).
    gap_check : int or inf
        An exact gap pass (n oracle calls) every ``gap_check`` passes over the data (n block
        steps each); ``inf`` disables periodic checks (the "Gap Inf" run of Fig. 1).
    gap_threshold : float
        Stop when the exact duality gap is <= this (>= 0; 0 disables).
    stop_on_heuristic_gap : bool
        Also stop when the heuristic gap (sum of stale estimates) is <= gap_threshold. Off by
        default: runs stop only on an exact, fresh gap.
    max_passes : float
        Budget in effective passes (oracle calls / n), gap passes included.
    time_limit : float
        Budget in seconds (inf for none).
    seed : int
        Seed of the solver's own RNG (kept in the solver state), in [0, 2**64) (Python or numpy
        integer).
    batch_step : bool
        After each exact gap pass, take a batch FW step with the oracle answers of that pass
        (the authors' ``do_batch_step``; Paper: App. H, Alg. 8).
    track_active_set : bool or None
        Keep per-block atoms (labelings with their α). None: on when the step kind or the cache
        needs them (pairwise, away, combined or cache on), off for plain BCFW.
    drop_tol : float
        Atoms whose α falls to or below this are purged and the block renormalized.
    """

    lam: float = 0.01
    sampling: Sampling = Sampling.GAP
    gap_power: float = 1.0
    step: StepKind = StepKind.FW
    cache: CacheConfig = field(default_factory=CacheConfig)
    gap_check: float = 10
    gap_threshold: float = 0.0
    stop_on_heuristic_gap: bool = False
    max_passes: float = 100.0
    time_limit: float = math.inf
    seed: int = 0
    batch_step: bool = False
    track_active_set: bool | None = None
    drop_tol: float = 1e-12

    def __post_init__(self):
        object.__setattr__(self, "lam", _check_lam(self.lam))
        object.__setattr__(self, "sampling", Sampling.parse(self.sampling))
        object.__setattr__(self, "step", StepKind.parse(self.step))
        object.__setattr__(self, "gap_power", _check_positive("gap_power (p)", self.gap_power))
        object.__setattr__(self, "gap_check",
                           _check_positive("gap_check", self.gap_check, allow_inf=True, integer=True))
        if self.gap_check < 1:
            raise ValueError(f"gap_check must be >= 1 (or inf), got {self.gap_check!r}")
        if not isinstance(self.cache, CacheConfig):
            raise TypeError(f"cache must be a CacheConfig, got {type(self.cache).__name__}")
        gt = float(self.gap_threshold)
        if math.isnan(gt) or gt < 0:
            raise ValueError(f"gap_threshold must be >= 0, got {self.gap_threshold!r}")
        object.__setattr__(self, "gap_threshold", gt)
        object.__setattr__(self, "max_passes", _check_positive("max_passes", self.max_passes, allow_inf=True))
        object.__setattr__(self, "time_limit", _check_positive("time_limit", self.time_limit, allow_inf=True))
        object.__setattr__(self, "seed", _check_seed(self.seed))
        if math.isinf(self.max_passes) and math.isinf(self.time_limit) and self.gap_threshold == 0:
            raise ValueError("set at least one of max_passes, time_limit or gap_threshold: the run would never stop")
        dt = float(self.drop_tol)
        if math.isnan(dt) or dt < 0 or dt >= 1e-3:
            raise ValueError(f"drop_tol must be in [0, 1e-3), got {self.drop_tol!r}")
        if self.track_active_set is not None and not isinstance(self.track_active_set, bool):
            raise TypeError("track_active_set must be True, False or None")

    @property
    def needs_atoms(self) -> bool:
        """Whether the run keeps per-block atoms (labelings with α)."""
        if self.track_active_set is not None:
            if not self.track_active_set and (self.step != StepKind.FW or self.cache.enabled):
                raise ValueError("track_active_set=False is impossible with pairwise/away/combined steps or a cache")
            return self.track_active_set
        return self.step != StepKind.FW or self.cache.enabled

    def replace(self, **changes) -> "SolverConfig":
        """A validated copy with some fields changed."""
        return replace(self, **changes)
