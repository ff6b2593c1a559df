"""Validated solver settings and the enums of the field's terms (no magic integers).

Paper: Sec. 3 (gap sampling, pairwise/away steps, caching), Sec. 3.1 and App. D (gap checks).
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, replace

from . import validate

__all__ = ["Sampling", "StepKind", "Status", "CacheConfig", "SolverConfig", "Setting", "settings_schema",
           "check_run_ends", "config_from_settings", "config_kwargs", "SAMPLING_CHOICES", "STEP_CHOICES", "GAP_CHECK_PRESETS"]


class Sampling(enum.IntEnum):
    """How the next block is chosen.

    ::

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
    ORACLE_NOT_EXACT = 8   # exact duality gap < -tolerance: the max oracle is not exact (core.certify)


def check_run_ends(max_passes: float, time_limit: float, gap_threshold: float, gap_check: float,
                   stop_on_heuristic_gap: bool = False) -> None:
    """Refuse the settings of a run that nothing would ever stop (no callback counted).

    Raises
    ------
    ValueError
        When ``max_passes`` and ``time_limit`` are both inf and either ``gap_threshold`` is 0 or
        ``gap_check`` is inf without ``stop_on_heuristic_gap`` (no exact duality gap is computed
        before the end of such a run, so no threshold is ever met).
    """
    if not (math.isinf(max_passes) and math.isinf(time_limit)):
        return
    if gap_threshold == 0:
        raise ValueError("the run would never stop: max_passes and time_limit are inf and gap_threshold is 0; "
                         "set one of them")
    if math.isinf(gap_check) and not stop_on_heuristic_gap:
        raise ValueError(f"the run would never stop: gap_check=inf computes no exact duality gap before the end, "
                         f"so gap_threshold={gap_threshold:g} is never met, and max_passes and time_limit are inf; "
                         "set max_passes or time_limit, a finite gap_check, or stop on the heuristic (stale) gap "
                         "(stop_on_heuristic_gap=True)")


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


#: samplers a user picks by name (CLI, app, estimator), named once from :class:`Sampling`. WEIGHTS
#: needs an array of weights and EXACT_GAP is the idealized sampler of Theorem 2 (n extra oracle
#: calls per step): both stay available in Python (``SolverConfig(sampling=...)``).
SAMPLING_CHOICES = tuple(m.name.lower() for m in Sampling if m not in (Sampling.WEIGHTS, Sampling.EXACT_GAP))

#: block step kinds by name, from :class:`StepKind` (``fw``, ``pairwise``, ``away``, ``combined``)
STEP_CHOICES = tuple(m.name.lower() for m in StepKind)

#: the gap-check choices of Fig. 1 ("Gap 1, 5, 10, 100, Inf"), offered by the app's menu
GAP_CHECK_PRESETS = {"every pass": 1, "every 5 passes": 5, "every 10 passes": 10,
                     "every 20 passes": 20, "every 100 passes": 100, "never (Gap Inf)": math.inf}


def _meta(help: str, *, key: str | None = None, flag: str | None = None, group: str = "method",
          app: str | None | bool = True, label: str | None = None, doc: str | None = None,
          positive: bool = False, choices: tuple | None = None, presets: dict | None = None,
          ui_bounds: tuple | None = None, ui_step: float | None = None, expose: bool = True) -> dict:
    """Field metadata read by :func:`settings_schema` (one place for a setting's user-facing
    description; see :class:`Setting` for the meaning of each entry)."""
    return {"gaplab": dict(help=help, key=key, flag=flag, group=group, app=app, label=label, doc=doc,
                           positive=positive, choices=choices, presets=presets, ui_bounds=ui_bounds,
                           ui_step=ui_step, expose=expose)}


#: the λ range the float64 solver handles: w = (1/(λn)) Σ_i ψ-differences, so ‖w‖² grows like
#: 1/λ² and overflows (NaN primal, dual and gap) long before 1/λ does; λ·n must stay finite too
LAM_MIN, LAM_MAX = 1e-100, 1e100


def _check_lam(value):
    v = validate.positive("lam", value)
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


#: largest cache size per block: the atom pools hold size + 1 int64-indexed slots, and no block
#: meets more labellings than this in any run that fits in memory
MAX_CACHE_SIZE = 2 ** 31


@dataclass(frozen=True)
class CacheConfig:
    """Oracle cache of Alg. 5 (Paper: Sec. 3.3).

    A cache hit happens when the cache corner's gap g_i^c >= max(F * g_i^(k_i), nu / n * g^(k_0)).

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
        only when more than ``size`` of them are active. The atom pools start at
        min(size, 16) + 1 slots per block and grow (doubling, capped at size + 1) when a block
        fills its pool; at size + 1 slots the labels take 8·(size + 1)·(total sequence length)
        bytes (OCR-large, size 100: 38 MB).
    """

    enabled: bool = field(default=False, metadata=_meta(
        "use the oracle cache (Alg. 5)", key="cache", flag="--cache", label="Oracle cache (Alg. 5)"))
    factor: float = field(default=0.25, metadata=_meta(
        "F of the cache hit rule", label="F (local)", positive=True, ui_bounds=(1e-4, 100.0), ui_step=0.05))
    nu: float = field(default=0.01, metadata=_meta(
        "nu of the cache hit rule", label="ν (global)", positive=True, ui_bounds=(1e-5, 1e4), ui_step=0.01))
    size: int = field(default=100, metadata=_meta(
        "max cached labellings per block", label="Cache size per block", ui_bounds=(1, 10_000)))

    def __post_init__(self):
        if not isinstance(self.enabled, bool):
            raise TypeError(f"cache enabled must be bool, got {type(self.enabled).__name__}")
        validate.positive("cache factor F", self.factor)
        validate.positive("cache nu", self.nu)
        if isinstance(self.size, bool) or not isinstance(self.size, int) or not 1 <= self.size <= MAX_CACHE_SIZE:
            raise ValueError(f"cache size must be an int in [1, {MAX_CACHE_SIZE}] (labellings per block), "
                             f"got {self.size!r}")


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
        ``Solver.run`` with ``inf`` needs a budget (``max_passes`` or ``time_limit``),
        ``stop_on_heuristic_gap`` or a callback that ends it: without an exact gap the threshold
        is never met (see :func:`check_run_ends`).
    gap_threshold : float
        Stop when the exact duality gap is <= this (>= 0; 0 disables).
    stop_on_heuristic_gap : bool
        Also stop when the heuristic gap (sum of stale estimates) is <= gap_threshold. Off by
        default: runs stop only on an exact, fresh gap.
    max_passes : float
        Budget in effective passes (oracle calls / n), gap passes included.
    time_limit : float
        Budget in seconds of solver time (numba's compilation not counted; inf for none).
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

    lam: float = field(default=0.01, metadata=_meta(
        "regularization lambda", group="lam", label="λ (regularization)", positive=True,
        ui_bounds=(1e-9, 1e9), ui_step=0.001, doc="Regularization λ of the SSVM (Paper: Eq. (1))"))
    sampling: Sampling = field(default=Sampling.GAP, metadata=_meta(
        "block sampler", label="Sampling", choices=SAMPLING_CHOICES,
        doc="How the next block is chosen (Paper: Alg. 1, 2)"))
    gap_power: float = field(default=1.0, metadata=_meta(
        "p of gap^p sampling", label="p (P(i) ∝ ĝᵢᵖ)", positive=True, ui_bounds=(0.1, 10.0), ui_step=0.1,
        doc="Exponent of gap sampling"))
    step: StepKind = field(default=StepKind.FW, metadata=_meta(
        "block step kind", app="step_kind", label="Step kind", choices=STEP_CHOICES,
        doc="FW (Alg. 1), pairwise (Alg. 3), away (Alg. 4); combined: gaplab's own, the largest dual "
            "improvement of the three, not one of the paper's algorithms"))
    cache: CacheConfig = field(default_factory=CacheConfig)
    gap_check: float = field(default=10, metadata=_meta(
        "exact gap pass every N passes (inf: never)", label="Exact gap check", presets=GAP_CHECK_PRESETS,
        doc="An exact gap pass (n oracle calls) every so many passes"))
    gap_threshold: float = field(default=0.0, metadata=_meta(
        "stop at this exact duality gap", group="budget", app=None))
    stop_on_heuristic_gap: bool = field(default=False, metadata=_meta(
        "also stop on the heuristic (stale) gap", expose=False))
    max_passes: float = field(default=100.0, metadata=_meta(
        "budget in effective passes", group="budget", label="Pass budget", positive=True,
        ui_bounds=(0.01, 1e6), ui_step=10, doc="Run stops after this many effective passes (oracle calls / n)"))
    time_limit: float = field(default=math.inf, metadata=_meta(
        "budget in seconds", group="budget", app=None, positive=True))
    seed: int = field(default=0, metadata=_meta(
        "seed of the solver's RNG", label="Seed", ui_bounds=(0, 2**31 - 1)))
    batch_step: bool = field(default=False, metadata=_meta(
        "batch FW step after each gap check", app=None))
    track_active_set: bool | None = field(default=None, metadata=_meta("", expose=False))
    drop_tol: float = field(default=1e-12, metadata=_meta("", expose=False))

    def __post_init__(self):
        object.__setattr__(self, "lam", _check_lam(self.lam))
        object.__setattr__(self, "sampling", Sampling.parse(self.sampling))
        object.__setattr__(self, "step", StepKind.parse(self.step))
        object.__setattr__(self, "gap_power", validate.positive("gap_power (p)", self.gap_power))
        object.__setattr__(self, "gap_check", validate.number("gap_check", self.gap_check, lo=1, lo_open=False,
                                                              allow_inf=True, integer=True))
        if not isinstance(self.cache, CacheConfig):
            raise TypeError(f"cache must be a CacheConfig, got {type(self.cache).__name__}")
        object.__setattr__(self, "gap_threshold",
                           validate.nonnegative("gap_threshold", self.gap_threshold, allow_inf=True))
        object.__setattr__(self, "max_passes", validate.positive("max_passes", self.max_passes, allow_inf=True))
        object.__setattr__(self, "time_limit", validate.positive("time_limit", self.time_limit, allow_inf=True))
        object.__setattr__(self, "seed", _check_seed(self.seed))
        if math.isinf(self.max_passes) and math.isinf(self.time_limit) and self.gap_threshold == 0:
            raise ValueError("set at least one of max_passes, time_limit or gap_threshold: the run would never stop")
        if not isinstance(self.stop_on_heuristic_gap, bool):
            raise TypeError(f"stop_on_heuristic_gap must be True or False, got {self.stop_on_heuristic_gap!r}")
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


# ----------------------------------------------------------------------------- settings schema
@dataclass(frozen=True)
class Setting:
    """One user-facing solver setting, generated from the field metadata of :class:`SolverConfig`
    and :class:`CacheConfig`. The CLI options (``gaplab train/path/grid``), the app's ``param``
    parameters and the parameters of :class:`gaplab.core.estimator.SSVM` are all made from these.

    Attributes
    ----------
    key : str
        Flat name: the argparse ``dest``, the estimator's parameter (``cache_factor``).
    path : tuple of str
        Where the value lives in the config: ``("cache", "factor")`` is ``SolverConfig.cache.factor``.
    type : type
        ``float``, ``int``, ``bool`` or ``str`` (enum fields: their lower-case member names).
    default : object
        The dataclass default (enums as their lower-case names).
    help : str
        One line for ``--help``.
    flag : str
        CLI flag (``--cache-factor``).
    group : str
        ``"method"`` (how the solver steps; shared by train/path/grid and rebuilt on change in the
        app), ``"lam"`` (λ; train only: path/grid sweep it) or ``"budget"`` (when a run stops; train
        only: path/grid have per-point budgets; the app changes it without a reset).
    app : str or None
        Name of the app's parameter (None: not offered by the app).
    label, doc : str
        Widget label and tooltip of the app.
    positive : bool
        The value must be > 0 (checked by the CLI parser too, so ``--lam -1`` is a usage error).
    choices : tuple of str or None
        Allowed names (enum fields).
    presets : dict or None
        Named values offered by the app's menu instead of a number box (gap checks of Fig. 1).
    ui_bounds : (lo, hi) or None
        Range of the app's number box.
    ui_step : float or None
        Increment of the app's number box.
    """

    key: str
    path: tuple
    type: type
    default: object
    help: str
    flag: str
    group: str
    app: str | None
    label: str
    doc: str | None
    positive: bool
    choices: tuple | None
    presets: dict | None
    ui_bounds: tuple | None
    ui_step: float | None


def _field_type(f, default):
    if isinstance(default, enum.Enum):
        return str
    name = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    return {"bool": bool, "int": int}.get(name, float)


def _schema_of(cls, prefix: tuple, key_prefix: str) -> list:
    from dataclasses import MISSING, fields
    out = []
    for f in fields(cls):
        meta = f.metadata.get("gaplab")
        if meta is None:
            if f.default_factory is not MISSING and f.default_factory is CacheConfig:
                out += _schema_of(CacheConfig, prefix + (f.name,), f.name + "_")
            continue
        if not meta["expose"]:
            continue
        default = f.default
        typ = _field_type(f, default)
        if isinstance(default, enum.Enum):
            default = default.name.lower()
        key = meta["key"] or key_prefix + f.name
        app = meta["app"]
        app = key if app is True else (app or None)
        out.append(Setting(
            key=key, path=prefix + (f.name,), type=typ, default=default, help=meta["help"],
            flag=meta["flag"] or "--" + key.replace("_", "-"), group=meta["group"], app=app,
            label=meta["label"] or key, doc=meta["doc"], positive=meta["positive"],
            choices=tuple(meta["choices"]) if meta["choices"] is not None else None,
            presets=dict(meta["presets"]) if meta["presets"] is not None else None,
            ui_bounds=meta["ui_bounds"], ui_step=meta["ui_step"]))
    return out


_SCHEMA: tuple | None = None


def settings_schema(group: str | tuple | None = None) -> tuple:
    """The user-facing solver settings (:class:`Setting`), in :class:`SolverConfig` field order
    (the cache fields where ``cache`` is). ``group`` filters by :attr:`Setting.group`
    (``"method"``, ``"lam"``, ``"budget"`` or a tuple of them)."""
    global _SCHEMA
    if _SCHEMA is None:
        _SCHEMA = tuple(_schema_of(SolverConfig, (), ""))
    if group is None:
        return _SCHEMA
    groups = (group,) if isinstance(group, str) else tuple(group)
    return tuple(s for s in _SCHEMA if s.group in groups)


def config_kwargs(values: dict, **fixed) -> dict:
    """Keyword arguments of :class:`SolverConfig` (with a built :class:`CacheConfig`) from flat
    setting values; see :func:`config_from_settings`."""
    values = {**values, **fixed}
    by_key = {s.key: s for s in settings_schema()}
    unknown = [k for k in values if k not in by_key]
    if unknown:
        raise ValueError(f"unknown setting(s) {', '.join(map(repr, unknown))}; expected: {', '.join(by_key)}")
    top, cache = {}, {}
    for k, v in values.items():
        path = by_key[k].path
        if len(path) == 2 and path[0] == "cache":
            cache[path[1]] = v
        else:
            top[path[0]] = v
    return {**top, "cache": CacheConfig(**cache)}


def config_from_settings(values: dict, **fixed) -> SolverConfig:
    """A validated :class:`SolverConfig` from flat setting values (``{"lam": 0.1, "cache": True,
    "cache_factor": 0.5, ...}``, keys of :func:`settings_schema`); keys not given keep the
    dataclass defaults. ``fixed`` are further flat values (they win over ``values``).

    Raises
    ------
    ValueError
        An unknown key (the message lists the valid ones) or an invalid value (from the config).
    """
    return SolverConfig(**config_kwargs(values, **fixed))
