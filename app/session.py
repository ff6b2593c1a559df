"""One user's lab session: the settings (a ``param.Parameterized``), one solver, one worker
thread, and immutable snapshots of what the solver did (no Panel import: testable headless).

Threading model
---------------
* Every solver mutation (a Step, a chunk of a run, an exact gap pass, a reset) happens while
  holding ``Session._lock``.
* While a run is going, the worker thread calls ``solver.steps(k)`` in chunks of ~25 ms (the
  numba kernels release the GIL) and publishes a new :class:`Snapshot` at most every 100 ms.
* The UI never waits on a running solver: it reads ``Session.snapshot`` (a reference to an
  immutable object). Actions that change the solver (Step, Reset, new settings) first stop the
  worker (it checks a flag between chunks, so this takes at most one chunk).
* At most one background thread exists per session for the session's solver (a run, a dataset
  load, or loading a model picked on the regularization path). The regularization path
  (:class:`~gaplab.app.pathlab.PathLab`, ``Session.path``) has a second worker with its own stop
  flag; it builds its own solvers and never touches the session's.

Everything shown by the app is computed here from the core (``gaplab.core.Solver``) or from the
toy examples; views only draw snapshots.
"""
from __future__ import annotations

import functools
import itertools
import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import param

from gaplab.core import Solver, SolverConfig
from gaplab.core.config import GAP_CHECK_PRESETS, config_kwargs
from gaplab.core.problems import Problem, get_problem, problem_names

from .history import History
from .settings import (app_settings, dataset_parameter, option_parameters,
                       solver_parameters, sync_registry)

__all__ = ["Session", "Snapshot", "StepInfo", "RunRecord", "Problem", "load_problem",
           "DATASETS", "GAP_CHECK_CHOICES"]

#: datasets offered by the app when this module was imported (the registry's names; the picker
#: itself re-reads the registry whenever a Session is made)
DATASETS = problem_names()

#: the gap-check choices of Fig. 1 ("Gap 1, 5, 10, 100, Inf"): the presets of SolverConfig.gap_check
GAP_CHECK_CHOICES = GAP_CHECK_PRESETS

SNAPSHOT_PERIOD_S = 0.1       # the worker publishes at most 10 snapshots per second
CHUNK_TARGET_S = 0.025        # a worker chunk of block steps takes about this long
MAX_COMPARISON_RUNS = 8
RECENT_STEPS = 200            # steps shown in the cache hit/miss timeline
#: the speed control (Run and Step ×N): block steps per second, or one pass (n steps) per frame
SPEED_CHOICES = {"unlimited": math.inf, "1 step/s": 1.0, "2 steps/s": 2.0, "5 steps/s": 5.0,
                 "10 steps/s": 10.0, "20 steps/s": 20.0, "50 steps/s": 50.0, "100 steps/s": 100.0,
                 "1,000 steps/s": 1000.0, "one pass per frame": "pass"}
PASS_FRAME_S = 0.25           # "one pass per frame": a pass of n steps, then this pause
STATUS_LABELS = {"idle": "ready", "running": "running", "paused": "paused", "stopped": "stopped",
                 "budget": "pass budget reached", "loading": "loading", "error": "error",
                 "closed": "closed"}

_session_ids = itertools.count(1)  # only hands out ids; no session state lives at module level


# ----------------------------------------------------------------------------- problems
PROBLEM_CACHE_SIZE = 4   # data sets a server process keeps loaded for all its sessions


@functools.lru_cache(maxsize=PROBLEM_CACHE_SIZE)
def _load_problem_cached(name: str, options: tuple) -> Problem:
    # A read-only cache of models: two sessions on OCR-large share the feature arrays (the
    # solver states, which the sessions mutate, are never shared).
    return get_problem(name).load(**dict(options))


def load_problem(name: str, **options) -> Problem:
    """The :class:`~gaplab.core.problems.Problem` of a registered name (cached per name and
    loader options; ValueError listing the registered problems for an unknown name).

    What the sessions of one process share: each data set and its model (read-only arrays) is
    loaded once and kept for every session, at most ``PROBLEM_CACHE_SIZE`` of them (the least
    recently used is dropped first), so a server that has shown CoNLL, horse and LSP keeps them
    after their sessions close. Everything a session changes (solver, α, traces, its worker
    thread, its Bokeh document) is its own and freed when the session is destroyed."""
    spec = get_problem(name)
    return _load_problem_cached(name, tuple(sorted(spec.parse_options(options).items())))


# ----------------------------------------------------------------------------- snapshots
def _frozen(a):
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class StepInfo:
    """The anatomy of the last block step (Paper: Alg. 1 lines 3-11, Alg. 3-5).

    ``gap_before`` is the block gap the step's oracle call returned (exact at the step's iterate;
    on a cache hit it is the stale estimate); ``gap_after`` is the block gap at the current w
    measured with one diagnostic oracle call that is not counted.
    """

    iteration: int
    block: int
    kind: str
    cache_hit: bool
    drop: bool
    oracle_called: bool
    gamma: float
    gamma_max: float
    gap_before: float
    direction_gap: float
    gap_after: float
    improvement: float
    active_set_size: int
    truth: tuple
    fw_corner: tuple
    away_corner: tuple | None
    image: np.ndarray | None = field(default=None, repr=False)  # OCR: uint8 (T, 16, 8) letter images
    tokens: tuple | None = None         # CoNLL: the words of the sentence
    note: str = ""                      # toy: "hard block" / "easy block"
    probability: float = math.nan      # P(i) of the draw (known for a single Step), else NaN
    sampling: str = ""                  # the sampler that drew the block
    gap_prev: float = math.nan          # the block's estimate ĝᵢ before the step (+inf: unvisited)
    unvisited: int = -1                 # blocks with ĝ = +inf when the block was drawn (-1: unknown)
    box: bool = False                   # the model has box constraints (w = clip(v), App. H)
    # segmentation (describe_block kind "mask"): uint8 (H, W, 3) RGB overlays of the photo with
    # superpixel borders, the ground truth, the FW and the away corner (see _mask_overlays)
    overlays: tuple | None = field(default=None, repr=False)
    # pose (describe_block kind "pose"): what the anatomy draws (see _pose_panels): the score map
    # of one part and the skeletons of the ground truth, the FW corner and the away corner
    pose: dict | None = field(default=None, repr=False)


def _takes_part(model) -> bool:
    """True if ``model.describe_block`` takes a ``part`` argument (the pose model)."""
    import inspect
    try:
        return "part" in inspect.signature(model.describe_block).parameters
    except (TypeError, ValueError):
        return False


def _pose_panels(truth, fw, away, part_names, fw_name="FW corner") -> dict | None:
    """For a pose block (``describe_block`` kind "pose"): ``G``, ``part`` (index), ``part_name``,
    ``part_names`` (every node's name, for the part picker), ``score_map`` (float64 (G, G), read
    only), ``edges`` (int64 (N − 1, 2) child-parent pairs) and ``skeletons``: (name, key, cells
    int64 (N, 2) as (x, y), loss) for the ground truth, the FW corner and the away corner (the
    away corner only when the step had one; ``fw_name`` names the FW corner: "cache corner" on a
    cache hit). None for other models."""
    if truth is None or "pose" not in truth:
        return None
    d = truth["pose"]
    sk = []
    for name, key, desc in (("ground truth", "truth", truth), (fw_name, "fw", fw), ("away corner", "away", away)):
        if desc is None or "pose" not in desc:
            continue
        sk.append((name, key, _frozen(np.asarray(desc["pose"]["skeleton"], dtype=np.int64)),
                   float(desc["pose"]["loss"])))
    N = len(sk[0][2])
    names = tuple(str(x) for x in part_names) if part_names is not None and len(part_names) == N \
        else tuple(str(p) for p in range(N))
    return {"G": int(d["G"]), "part": int(d["part"]), "part_name": str(d["part_name"]), "part_names": names,
            "score_map": _frozen(np.asarray(d["score_map"], dtype=np.float64)),
            "edges": _frozen(np.asarray(d["edges"], dtype=np.int64)), "skeletons": tuple(sk)}


_OVERLAY_COLORS = {"truth": (255, 200, 0), "fw": (0, 170, 255), "away": (255, 60, 160)}
#: the loss heat ramp: (t, RGB) stops, t = ω_p [y_p ≠ g_p] / max_p ω_p (light yellow → dark red)
_HEAT_STOPS = ((0.0, (255, 245, 140)), (0.5, (255, 140, 0)), (1.0, (170, 0, 0)))


def loss_heat(per, weight) -> np.ndarray:
    """RGB heat colours (float64 (V, 3)) of per-superpixel loss contributions ``per`` (float (V,),
    ω_p [y_p ≠ g_p]) on the scale of the image's largest loss weight ``max(weight)`` (ω_p: what
    superpixel p costs when wrong), and a mask (bool (V,)) of the superpixels that add loss."""
    per = np.asarray(per, dtype=np.float64)
    top = float(np.max(weight)) if np.size(weight) else 0.0
    t = np.clip(per / top, 0.0, 1.0) if top > 0 else np.zeros_like(per)
    ts = np.array([p for p, _ in _HEAT_STOPS])
    cols = np.array([c for _, c in _HEAT_STOPS], dtype=np.float64)
    rgb = np.stack([np.interp(t, ts, cols[:, k]) for k in range(3)], axis=1)
    return rgb, per > 0


def _mask_overlays(truth, fw, away, fw_name="FW corner") -> tuple | None:
    """For a segmentation block (``describe_block`` kind "mask"): (name, uint8 (H, W, 3)) pairs:
    the photo with its superpixel borders, then the ground truth, the FW corner and the away
    corner as coloured overlays (foreground tinted, wrong superpixels darkened), then the FW
    corner's per-superpixel loss as a heat map over the grey photo (each wrong superpixel filled
    with the colour of ω_p [y_p ≠ g_p] on the scale 0 … max_p ω_p, see :func:`loss_heat`; the
    name gives the sum, L_i(y*), and the scale; ``fw_name`` names the FW corner: "cache corner" on
    a cache hit). None otherwise."""
    if truth is None or "mask" not in truth:
        return None
    d = truth["mask"]
    photo = d.get("photo")
    base = (np.asarray(photo, dtype=np.float64) if photo is not None
            else np.full(d["superpixels"].shape + (3,), 128.0))
    gt = np.asarray(d["truth"], dtype=bool)
    first = base.copy()
    first[np.asarray(d["boundaries"], dtype=bool)] = (255, 255, 0)
    out = [("photo and superpixels", first)]
    for name, key, desc in (("ground truth", "truth", truth), (fw_name, "fw", fw), ("away corner", "away", away)):
        if desc is None or "mask" not in desc:
            continue
        m = np.asarray(desc["mask"]["mask"], dtype=bool)
        img = 0.55 * base
        img[m] = 0.45 * base[m] + 0.55 * np.array(_OVERLAY_COLORS[key], dtype=np.float64)
        if key != "truth":
            wrong = m != gt
            img[wrong] *= 0.5
            name = f"{name} (loss {float(np.sum(desc['mask']['loss_per_superpixel'])):.3f})"
        out.append((name, img))
    fd = fw.get("mask") if fw is not None else None
    if fd is not None and fd.get("loss_per_superpixel") is not None and fd.get("loss_weight") is not None:
        per = np.asarray(fd["loss_per_superpixel"], dtype=np.float64)
        rgb, wrong = loss_heat(per, fd["loss_weight"])
        seg = np.asarray(d["superpixels"])
        grey = base.mean(axis=2, keepdims=True) * np.ones(3)
        img = 0.35 * grey + 60.0
        px = wrong[seg]
        img[px] = rgb[seg[px]]
        img[np.asarray(d["boundaries"], dtype=bool) & px] *= 0.6
        out.append((f"{fw_name} loss per superpixel (Σ {per.sum():.3f}; red {float(np.max(fd['loss_weight'])):.3f})",
                    img))
    return tuple((name, _frozen(np.clip(img, 0, 255).astype(np.uint8))) for name, img in out)


@dataclass(frozen=True)
class RunRecord:
    """A finished or frozen run kept for comparison (its trace and manual gap checks)."""

    label: str
    dataset: str
    trace: tuple
    manual_checks: tuple
    active_history: tuple
    index: int


@dataclass(frozen=True)
class Snapshot:
    """Everything the views draw, copied from the solver under the session lock (immutable)."""

    version: int
    session_id: int
    dataset: str
    n: int
    lam: float
    label: str
    status: str
    message_count: int
    iteration: int
    effective_passes: float
    oracle_calls: int
    cache_hits: int
    solver_time_s: float
    steps_per_s: float
    heuristic_gap: float
    dual: float
    exact_gap: float
    exact_primal: float
    exact_dual: float
    exact_passes: float
    exact_test_error: float
    gap_estimates: np.ndarray
    staleness: np.ndarray
    probabilities: np.ndarray
    exact_block_gaps: np.ndarray | None
    exact_block_gaps_iteration: int
    active_set_sizes: np.ndarray | None
    cache_sizes: np.ndarray | None
    trace: tuple
    manual_checks: tuple
    active_history: tuple
    recent_steps: np.ndarray
    last_step: StepInfo | None
    step_counts: dict
    has_test: bool
    tracks_atoms: bool
    chi_cubed: float
    comparison: tuple
    config: dict
    note: str = ""          # what a "loading" status is doing
    origin: str = ""        # where the solver's starting point came from ("" = a fresh start)
    # the problem's headline test metric when it is not the test error (CoNLL: "chunk F1"),
    # evaluated at the w of the last exact gap check's publication, and the pass it was taken at
    test_metric_name: str = "test error"
    test_metric: float = math.nan
    test_metric_passes: float = math.nan
    # settings switched mid-run with α kept: (effective passes, solver time s, iteration, label)
    switches: tuple = ()
    history_from: int = -1      # the earliest iteration "Back" reaches (-1: none)


def nonuniformity(x) -> float:
    """χ(x) = sqrt(1 + n² Var[p]), p = x/‖x‖₁ (Paper: Theorem 2); NaN if undefined."""
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    x = np.maximum(x, 0.0)
    s = x.sum()
    if x.size == 0 or not s > 0:
        return math.nan
    p = x / s
    return float(math.sqrt(1.0 + x.size ** 2 * p.var()))


def _empty_snapshot(sid, dataset, status, message_count, config) -> Snapshot:
    e = _frozen(np.zeros(0))
    return Snapshot(
        version=0, session_id=sid, dataset=dataset, n=0, lam=math.nan, label="", status=status,
        message_count=message_count, iteration=0, effective_passes=0.0, oracle_calls=0,
        cache_hits=0, solver_time_s=0.0, steps_per_s=0.0, heuristic_gap=math.inf, dual=math.nan,
        exact_gap=math.nan, exact_primal=math.nan, exact_dual=math.nan, exact_passes=math.nan,
        exact_test_error=math.nan, gap_estimates=e, staleness=_frozen(np.zeros(0, np.int64)),
        probabilities=e, exact_block_gaps=None, exact_block_gaps_iteration=-1,
        active_set_sizes=None, cache_sizes=None, trace=(), manual_checks=(), active_history=(),
        recent_steps=_frozen(np.zeros((0, 3))), last_step=None, step_counts={}, has_test=False,
        tracks_atoms=False, chi_cubed=math.nan, comparison=(), config=config)


def _trace_since(solver: Solver, start: int) -> list:
    # the core's records are only appended: fetch the new ones
    return solver.trace(since=start)


# ----------------------------------------------------------------------------- session
#: the settings a session is made of: the dataset picker (the registered problems), the solver
#: settings (λ, sampling, step kind, cache, gap checks, seed, pass budget: generated from
#: SolverConfig's field metadata) and the loader options of the problems (toy_n, toy_K)
SessionSettings = type("SessionSettings", (param.Parameterized,), {
    "dataset": dataset_parameter("ocr-small"), **solver_parameters(),
    **{k: v[2] for k, v in option_parameters().items()}})


class Session(SessionSettings):
    """Settings, solver and worker of one app session (one browser tab or one notebook).

    Changing a solver setting stops a run and rebuilds the solver with the new settings (the
    trace of the old run can be kept with :meth:`add_to_comparison` first). Buttons are the
    ``param.Action`` parameters; methods with the same names can be called directly.
    """

    n_steps = param.Integer(default=100, bounds=(1, 10_000_000), label="N (for Step ×N)",
                            doc="Block steps taken by Step ×N (in the worker thread, at the chosen speed).")
    speed = param.Selector(default=math.inf, objects=SPEED_CHOICES, label="Speed",
                           doc="How fast Run and Step ×N go: block steps per second (slow motion: "
                               "watch the gaps, staleness and sampling probabilities move), "
                               "unlimited, or one pass (n steps) per frame.")

    step_action = param.Action(lambda self: self.step(), label="Step")
    step_n_action = param.Action(lambda self: self.step_n(), label="Step ×N")
    run_action = param.Action(lambda self: self.toggle_run(), label="Run / Pause")
    stop_action = param.Action(lambda self: self.stop(), label="Stop")
    reset_action = param.Action(lambda self: self.reset(), label="Reset")
    exact_action = param.Action(lambda self: self.compute_exact_gaps(), label="Compute exact gaps")
    compare_action = param.Action(lambda self: self.add_to_comparison(), label="Add run to comparison")
    back_action = param.Action(lambda self: self.back(), label="◀ Back")
    keep_alpha = param.Boolean(default=True, label="Keep α when a setting changes",
                               doc="On (default): a new sampler, step kind, cache setting, gap-check "
                                   "period or λ continues the run from the current α (a new λ: a "
                                   "warm start); the switch is marked on the convergence curves. "
                                   "Off: every change restarts from α⁰. Reset restarts from α⁰.")
    clear_action = param.Action(lambda self: self.clear_comparison(), label="Clear comparison")

    #: settings whose change rebuilds the solver (λ and the method settings; not the pass budget)
    SOLVER_SETTINGS = tuple(s.app for s in app_settings(("lam", "method")))

    #: every app setting that goes into the SolverConfig (SOLVER_SETTINGS and the pass budget)
    CONFIG_SETTINGS = tuple(s.app for s in app_settings())

    def __init__(self, *, load: bool = True, **params):
        sync_registry(type(self))  # problems registered after import appear in the picker
        super().__init__(**params)
        self.session_id = next(_session_ids)
        self._lock = threading.RLock()
        self._msg_lock = threading.Lock()
        self._stop_evt = threading.Event()
        self._thread: threading.Thread | None = None
        self._messages: list[tuple[str, str]] = []
        self._problem: Problem | None = None
        self._solver: Solver | None = None
        self._applied: dict = {}
        self._reverting = False
        self._closed = False
        self._status = "idle"
        self._version = 0
        self._chunk = 64
        self._pose_part = None   # the part whose score map the pose anatomy draws (None: the model's default)
        self._trace: list = []
        self._last_check = None
        self._manual: list = []
        self._active_hist: list = []
        self._last_step: StepInfo | None = None
        self._comparison: list[RunRecord] = []
        self._run_counter = 0
        self._rate = (0.0, 0, 0.0)  # (time, iteration, steps per second)
        self._note = ""
        self._origin = ""
        self._draw_p = None    # (iteration, P of the next draw) captured by a single Step
        self._metric_cache = None   # (key of the gap check, headline test metric, its pass)
        self._history = History()   # checkpoints for Back (gaplab.app.history)
        self._switches: list = []   # settings switched with α kept (see Snapshot.switches)
        self._snapshot = _empty_snapshot(self.session_id, self.dataset, "loading", 0, {})
        from .pathlab import PathLab
        self.path = PathLab(self)   # the regularization path of this session (own worker)
        self._update_precedence()
        self.param.watch(self._on_change, list(self.SOLVER_SETTINGS) + ["dataset"] + list(self._options_of()))
        # a batched update (param.update of several of them) calls back with one event each
        self.param.watch(lambda *events: self._update_precedence(), ["sampling", "cache", "dataset"])
        if load:
            self._rebuild(load_dataset=True)

    # ------------------------------------------------------------------ public state
    @property
    def snapshot(self) -> Snapshot:
        """The latest immutable snapshot (never blocks)."""
        return self._snapshot

    @property
    def status(self) -> str:
        return self._status

    @property
    def problem(self) -> Problem | None:
        return self._problem

    @property
    def running(self) -> bool:
        t = self._thread
        return t is not None and t.is_alive()

    @property
    def solver(self) -> Solver | None:
        """The live solver (read it only while the session is not running)."""
        return self._solver

    def messages(self, start: int = 0) -> list[tuple[str, str]]:
        """Notifications so far as (level, text), level in {"info", "success", "warning", "error"}."""
        with self._msg_lock:
            return list(self._messages[start:])

    def solver_config(self) -> SolverConfig:
        """The :class:`SolverConfig` the current settings describe (raises ValueError if invalid)."""
        return SolverConfig(**config_kwargs({s.key: getattr(self, s.app) for s in app_settings()}))

    def _options_of(self, dataset: str | None = None) -> dict:
        """``{parameter name: option name}`` of the loader options of ``dataset`` (default: every
        registered problem's)."""
        return {name: opt for name, (prob, opt, _p) in option_parameters().items()
                if dataset is None or prob == dataset}

    def problem_options(self, dataset: str | None = None) -> dict:
        """The loader options of ``dataset`` (default: the chosen one) from their parameters."""
        dataset = self.dataset if dataset is None else dataset
        return {opt: getattr(self, name) for name, opt in self._options_of(dataset).items() if name in self.param}

    def run_label(self) -> str:
        samp = self.sampling if self.sampling != "gap" else (
            "gap" if self.gap_power == 1 else f"gap^{self.gap_power:g}")
        gc = self.gap_check
        gcs = "∞" if math.isinf(gc) else f"{int(gc)}"
        cache = f" +cache(F={self.cache_factor:g},ν={self.cache_nu:g})" if self.cache else ""
        return f"{samp} · {self.step_kind}{cache} · check {gcs} · λ={self.lam:g} · seed {self.seed}"

    # ------------------------------------------------------------------ notifications
    def notify(self, text: str, level: str = "info") -> None:
        with self._msg_lock:
            self._messages.append((level, text))

    # ------------------------------------------------------------------ settings
    def _update_precedence(self):
        self.param.gap_power.precedence = 1 if self.sampling == "gap" else -1
        for name in ("cache_factor", "cache_nu", "cache_size"):
            self.param[name].precedence = 1 if self.cache else -1
        for name, (prob, _opt, _p) in option_parameters().items():
            if name in self.param:
                self.param[name].precedence = 1 if self.dataset == prob else -1

    def _on_change(self, *events):
        if self._reverting or self._closed:
            return
        names = {e.name for e in events}
        data_change = "dataset" in names or bool(names & set(self._options_of(self.dataset)))
        settings = sorted(names & set(self.SOLVER_SETTINGS))
        if data_change:
            self.path.reset()  # a path belongs to its dataset's model
            self._rebuild(load_dataset=True)
        elif settings:
            self._rebuild(load_dataset=False, reason=", ".join(settings))

    def _revert(self, values: dict):
        self._reverting = True
        try:
            self.param.update(**{k: v for k, v in values.items() if getattr(self, k) != v})
        finally:
            self._reverting = False
            self._update_precedence()

    def _current_values(self) -> dict:
        return {k: getattr(self, k) for k in self.SOLVER_SETTINGS + ("dataset",) + tuple(self._options_of())
                if k in self.param}

    # ------------------------------------------------------------------ (re)building
    def _rebuild(self, *, load_dataset: bool, reason: str = ""):
        """Stop any run and make a fresh solver from the current settings (UI thread)."""
        stopped = self._status == "stopped"   # Stop ended the run: nothing to continue
        self._halt("idle")
        try:
            cfg = self.solver_config()
        except (ValueError, TypeError) as exc:
            self.notify(f"Invalid setting ({exc}); kept the previous settings.", "error")
            if self._applied:
                self._revert(self._applied)
            return
        if load_dataset or self._problem is None or self._problem.name != self.dataset:
            self._start_load()
            return
        if reason and not stopped and self._continue(cfg, reason):
            return
        self._install(self._problem, cfg)
        if reason:
            self.notify(f"Settings changed ({reason}): the solver was reset to α⁰.", "info")

    def _set_lam_quietly(self, lam: float):
        if abs(self.lam - lam) > 1e-15:
            self._reverting = True
            try:
                self.lam = lam
            finally:
                self._reverting = False
            self.notify(f"λ set to {lam:g} for the {self.dataset} dataset.", "info")

    def _start_load(self):
        """Load the chosen problem: a ``quick`` one (the toy problem) synchronously, others in the
        worker thread. Parameter changes happen here, in the caller's (UI) thread. λ switches to
        the new problem's default λ when that differs from the previous problem's."""
        name = self.dataset
        old = self._problem
        try:
            spec = get_problem(name)
            options = self.problem_options(name)
            new_lam = spec.lam(**options)
        except Exception as exc:  # shown to the user, never a server traceback
            self._load_failed(name, exc)
            return
        prev_lam = old.default_lam if old is not None else self.param.lam.default
        if new_lam != prev_lam:
            self._set_lam_quietly(new_lam)
        if spec.quick:
            try:
                problem = load_problem(name, **options)
            except Exception as exc:  # shown to the user, never a server traceback
                self._load_failed(name, exc)
                return
            self._install(problem, self.solver_config())
            return
        cfg = self.solver_config()
        with self._lock:
            # the old dataset's solver is dropped now (memory; the views show the loading state)
            self._solver = None
            self._problem = None
            self._last_step = None
            self._note = "reading the data and building the model (a few seconds)…"
            self._set_status("loading")
            self._publish()

        def job():
            try:
                problem = load_problem(name, **options)
            except Exception as exc:  # shown to the user, never a server traceback
                self._load_failed(name, exc)
                return
            if not self._stop_evt.is_set() and not self._closed:
                self._install(problem, cfg)

        self._start_thread(job, "load")

    def _load_failed(self, name, exc):
        self.notify(f"Could not load dataset {name!r}: {exc}. Choose another dataset.", "error")
        with self._lock:
            self._problem = None
            self._solver = None
            self._applied = {}
            self._set_status("error")
            self._publish()

    def _install(self, problem: Problem, cfg: SolverConfig, solver: Solver | None = None,
                 origin: str = ""):
        with self._lock:
            if self._closed:
                return
            if solver is None:
                from gaplab.core.problems import model_box
                solver = Solver(problem.model, cfg, test_data=problem.test, **model_box(problem.model))
            self._origin = origin
            self._note = ""
            if self._pose_part is not None and self._pose_part >= getattr(getattr(problem.model, "arrays", None), "N", 0):
                self._pose_part = None   # the chosen part does not exist in the new model
            self._problem = problem
            self._solver = solver
            self._applied = self._current_values()
            self._trace = []
            self._last_check = None
            self._manual = []
            self._active_hist = []
            self._last_step = None
            self._rate = (time.perf_counter(), 0, 0.0)
            self._chunk = 64
            self._switches = []
            self._history.clear()
            self._history.note(solver, force=True)
            self._set_status("idle")
            self._publish()

    def reset(self) -> Snapshot:
        """Stop and restore the initial state (same settings, same seed: the same run again)."""
        if self._status == "loading":
            self.notify("Still loading the dataset.", "warning")
            return self._snapshot
        self._halt("idle")
        if self._problem is None:
            self._rebuild(load_dataset=True)
            return self._snapshot
        try:
            cfg = self.solver_config()
        except ValueError as exc:
            self.notify(f"Invalid setting ({exc}).", "error")
            return self._snapshot
        self._install(self._problem, cfg)
        return self._snapshot

    # ------------------------------------------------------------------ keep α, go back
    def _continue(self, cfg: SolverConfig, reason: str) -> bool:
        """Continue the current run under ``cfg`` from the current α (see
        :mod:`gaplab.app.switch`) when ``keep_alpha`` is on and the run has begun; mark the switch
        on the curves. False when the caller must restart from α⁰ (told why)."""
        from .switch import CONTINUE_SETTINGS, can_continue, continue_with, describe_change
        s = self._solver
        if not self.keep_alpha or s is None or self._problem is None or s.iteration == 0:
            return False
        names = [r.strip() for r in reason.split(",")]
        other = [n for n in names if n not in CONTINUE_SETTINGS]
        why = f"{', '.join(other)} starts a new run" if other else can_continue(s, cfg)
        if why:
            self.notify(f"Settings changed ({reason}): restarted from α⁰ ({why}).", "info")
            return False
        with self._lock:
            label = describe_change(s.config, cfg)
            try:
                new = continue_with(s, cfg)
            except (ValueError, TypeError) as exc:
                self.notify(f"Settings changed ({reason}): restarted from α⁰ ({exc}).", "warning")
                return False
            warm = new.iteration != s.iteration   # a new λ: a warm start, counters from zero
            prev = self._switches if not warm else []
            mark = (new.effective_passes, new.wall_time, new.iteration, label)
            if warm:
                self._trace = []
                self._last_check = None
                self._manual = []
                self._active_hist = []
                self._origin = f"α at λ = {s.lam:g}"
                self._rate = (time.perf_counter(), 0, 0.0)
            self._solver = new
            self._applied = self._current_values()
            self._switches = prev + [mark]
            self._history.clear()
            self._history.note(new, force=True)
            if warm:   # the new solver's step log starts empty
                self._last_step = None
            # else the anatomy keeps the last step as it was taken (drawn by the old sampler)
            self._set_status("paused")
            self._publish()
        how = ("a warm start: same α, w scaled by λ_old/λ_new; passes counted anew" if warm
               else "same α, w and counters")
        self.notify(f"Settings changed ({reason}): continuing from the current α ({how}). "
                    "Reset restarts from α⁰.", "info")
        return True

    def back(self, k: int = 1) -> Snapshot:
        """Go back ``k`` block steps (pauses a run): the state after step ``iteration − k``,
        exactly (a checkpoint replayed; see :mod:`gaplab.app.history`). Steps before the last
        reset or setting switch, or more than the history's depth back, are not reachable: told
        with a warning, nothing changes."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be an int >= 1 (block steps back), got {k!r}")
        if not self._ready("Back"):
            return self._snapshot
        if self.running:
            self._halt("paused")
        return self.go_to(self._solver.iteration - int(k))

    def go_to(self, iteration: int) -> Snapshot:
        """Show the state after block step ``iteration`` of this run (earlier or later: later
        steps are taken, earlier ones replayed from a checkpoint)."""
        if isinstance(iteration, bool) or not isinstance(iteration, (int, np.integer)):
            raise TypeError(f"iteration must be an int, got {type(iteration).__name__}")
        if not self._ready("Back"):
            return self._snapshot
        if self.running:
            self._halt("paused")
        iteration = int(iteration)
        with self._lock:
            s = self._solver
            first = self._history.earliest
            if iteration < 0 or first is None or iteration < first:
                self.notify(f"Back: step {iteration} is not reachable (the history starts at step "
                            f"{0 if first is None else first}: the last reset or setting switch, "
                            f"at most {self._history.depth} steps are kept).", "warning")
                return self._snapshot
            if iteration == s.iteration:
                return self._snapshot

            def seen(sv):   # what a single Step records before its draw
                self._draw_p = (sv.iteration, sv.sampling_probabilities(), np.array(sv.gap_estimates, copy=True))

            new = self._history.reach(iteration, on_last=seen)
            self._history.note(new, force=True)   # the next Back replays from here, not from afar
            self._solver = new
            self._trace = list(new.trace())
            self._last_check = next((r for r in reversed(self._trace) if r["kind"] == "gap_check"), None)
            self._manual = [r for r in self._manual if r["oracle_calls"] <= new.oracle_calls]
            self._active_hist = [h for h in self._active_hist if h[0] <= new.effective_passes]
            self._switches = [m for m in self._switches if m[2] <= new.iteration]
            if new.iteration:
                self._capture_last_step()
            else:
                self._last_step = None
                self._draw_p = None
            self._set_status("paused" if new.iteration else "idle")
            self._rate = (time.perf_counter(), new.iteration, 0.0)
            self._publish()
        return self._snapshot

    def load_model(self, make, *, lam: float, settings: dict, busy: str = "", note: str = "",
                   origin: str = "") -> bool:
        """Replace the solver by ``make(should_stop)`` (a :class:`Solver` on this session's problem,
        or None if it gave up), computed in the worker thread; used to inspect a model picked on
        the regularization path. ``settings`` (solver settings) and ``lam`` are applied to the
        parameters first, without a rebuild, so the sidebar shows the loaded solver's settings.
        Once installed, a counted exact gap pass shows the model's gap and test error."""
        if not self._ready("Load model"):
            return False
        self._halt("idle")
        problem = self._problem
        changes = {k: v for k, v in dict(settings, lam=float(lam)).items() if getattr(self, k) != v}
        if changes:
            self._reverting = True
            try:
                self.param.update(**changes)
            finally:
                self._reverting = False
                self._update_precedence()
        try:
            cfg = self.solver_config()
        except (ValueError, TypeError) as exc:
            self.notify(f"Load model: invalid setting ({exc}).", "error")
            return False
        with self._lock:
            self._note = busy
            self._set_status("loading")
            self._publish()

        def job():
            try:
                solver = make(self._stop_evt.is_set)
            except Exception as exc:  # shown to the user, never a server traceback
                solver = None
                self.notify(f"Could not load the model: {type(exc).__name__}: {exc}", "error")
            if self._closed:
                return
            if solver is None:  # interrupted or failed: a fresh solver with the current settings
                self._install(problem, cfg)
                return
            # the solver keeps its dual point; its run settings become the session's
            probe = solver.config.replace(max_passes=cfg.max_passes, gap_threshold=cfg.gap_threshold,
                                          time_limit=cfg.time_limit,
                                          stop_on_heuristic_gap=cfg.stop_on_heuristic_gap)
            if probe == cfg:
                solver.config = cfg
            solver.test_data = problem.test
            self._install(problem, cfg, solver=solver, origin=origin)
            with self._lock:
                s = self._solver
                if s is not solver:
                    return
                ex = s.exact_gap(count=True)
                test_err = s.test_error() if problem.test is not None else math.nan
                self._manual.append({"kind": "gap_check", "manual": True, "iteration": s.iteration,
                                     "effective_passes": s.effective_passes, "oracle_calls": s.oracle_calls,
                                     "wall_time_s": s.wall_time, "heuristic_gap": s.heuristic_gap,
                                     "exact_gap": ex.gap, "primal": ex.primal, "dual": ex.dual,
                                     "cache_hits": int(s.step_counts()["cache_hit"]), "test_error": test_err})
                self._publish()
            if note:
                self.notify(note + f" Exact gap {ex.gap:.3g}"
                            + (f", test error {100 * test_err:.2f}%." if math.isfinite(test_err) else "."),
                            "success")

        self._start_thread(job, "load-model")
        return True

    # ------------------------------------------------------------------ stepping
    def _ready(self, action: str) -> bool:
        if self._closed:
            return False
        if self._status == "loading":
            self.notify(f"{action}: the dataset is still loading.", "warning")
            return False
        if self._solver is None:
            self.notify(f"{action}: no dataset is loaded; choose one.", "warning")
            return False
        return True

    def step(self) -> Snapshot:
        """One block step (pauses a run first)."""
        if not self._ready("Step"):
            return self._snapshot
        if self.running:
            self._halt("paused")
        self._restart_if_stopped()
        with self._lock:
            s = self._solver
            self._history.note(s)
            self._draw_p = (s.iteration, s.sampling_probabilities(), np.array(s.gap_estimates, copy=True))
            s.step()
            self._capture_last_step()
            if self._status in ("idle", "stopped", "budget"):
                self._set_status("paused" if self._solver.iteration else "idle")
            self._publish()
        return self._snapshot

    def step_n(self, n: int | None = None) -> None:
        """N block steps in the worker thread (``n`` defaults to the ``n_steps`` setting)."""
        n = int(self.n_steps if n is None else n)
        if n < 1:
            self.notify("N must be at least 1.", "warning")
            return
        if not self._ready("Step ×N"):
            return
        if self.running:
            self._halt("paused")
        self._restart_if_stopped()
        self._start_run(target_steps=n)

    def run(self) -> None:
        """Start (or resume) a run in the worker thread until the pass budget or Stop."""
        if not self._ready("Run"):
            return
        if self.running:
            return
        self._restart_if_stopped()
        if self._solver.effective_passes >= self.max_passes:
            self.set_status_budget()
            self.notify(f"Pass budget of {self.max_passes:g} reached; raise it to continue.", "warning")
            return
        self._start_run(target_steps=None)

    def toggle_run(self) -> None:
        if self.running and self._status == "running":
            self.pause()
        else:
            self.run()

    def pause(self) -> None:
        """Pause the run (within one chunk, ~25 ms): the solver keeps its state and the next
        Run, Step or Step ×N continues it."""
        if self.running and self._status != "loading":
            self._halt("paused")

    def stop(self) -> None:
        """End the run (within one chunk, ~25 ms). The stopped run stays on screen; the next
        Run, Step or Step ×N starts a new run from α⁰ with the current settings (keep the
        stopped run's curves with :meth:`add_to_comparison` first). Use :meth:`pause` to resume."""
        if self._status == "loading":
            return
        self._halt("stopped" if (self._solver is not None and self._solver.iteration) else "idle")

    def _restart_if_stopped(self):
        """After Stop, a new run starts from α⁰ (same settings and seed)."""
        if self._status != "stopped" or self._solver is None:
            return
        try:
            cfg = self.solver_config()
        except (ValueError, TypeError):
            return
        self._install(self._problem, cfg)
        self.notify("Stop had ended the previous run: a new run starts from α⁰ "
                    "(Pause keeps a run resumable).", "info")

    def set_status_budget(self):
        with self._lock:
            self._set_status("budget")
            self._publish()

    def compute_exact_gaps(self):
        """One exact gap pass (n oracle calls, counted): the duality gap, primal, dual and every
        block gap at the current iterate (Paper: Eq. (5)-(7))."""
        if not self._ready("Compute exact gaps"):
            return None
        if self.running:
            self._halt("paused")
        with self._lock:
            s = self._solver
            ex = s.exact_gap(count=True)
            test_err = s.test_error() if self._problem.test is not None else math.nan
            rec = {"kind": "gap_check", "manual": True, "iteration": s.iteration,
                   "effective_passes": s.effective_passes, "oracle_calls": s.oracle_calls,
                   "wall_time_s": s.wall_time, "heuristic_gap": s.heuristic_gap,
                   "exact_gap": ex.gap, "primal": ex.primal, "dual": ex.dual,
                   "cache_hits": int(s.step_counts()["cache_hit"]), "test_error": test_err}
            self._manual.append(rec)
            self._history.note(s, force=True)   # a counted pass changed the state (not a step)
            self._publish()
        return ex

    def add_to_comparison(self) -> RunRecord | None:
        """Freeze the current run's trace as a labelled comparison curve."""
        snap = self._snapshot
        if not snap.trace and not snap.manual_checks:
            self.notify("Nothing to compare yet: run at least one pass first.", "warning")
            return None
        with self._lock:
            self._run_counter += 1
            rec = RunRecord(label=f"#{self._run_counter} {snap.label}", dataset=snap.dataset,
                            trace=snap.trace, manual_checks=snap.manual_checks,
                            active_history=snap.active_history, index=self._run_counter)
            self._comparison.append(rec)
            if len(self._comparison) > MAX_COMPARISON_RUNS:
                dropped = self._comparison.pop(0)
                self.notify(f"Dropped the oldest comparison run ({dropped.label}).", "info")
            self._publish()
        self.notify(f"Added {rec.label} to the comparison.", "success")
        return rec

    def clear_comparison(self) -> None:
        with self._lock:
            self._comparison.clear()
            self._publish()

    # ------------------------------------------------------------------ worker
    def _start_thread(self, target, name):
        self._join()
        self._stop_evt.clear()
        t = threading.Thread(target=target, name=f"gaplab-session-{self.session_id}-{name}", daemon=True)
        self._thread = t
        t.start()

    def _join(self, timeout: float = 30.0):
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)
        self._thread = None if (t is None or not t.is_alive()) else t

    def _halt(self, status: str):
        """Stop the background thread (flag checked between chunks) and set ``status``."""
        t = self._thread
        if t is not None and t.is_alive():
            self._stop_evt.set()
            self._join()
        with self._lock:
            if self._solver is not None or status != "idle":
                self._set_status(status)
            self._publish()

    def _start_run(self, target_steps: int | None):
        with self._lock:
            self._history.note(self._solver)
            self._set_status("running")
            self._rate = (time.perf_counter(), self._solver.iteration, self._rate[2])
            self._publish()
        self._start_thread(lambda: self._worker(target_steps), "run")

    def _pace(self):
        """(steps per chunk limit, seconds per step) of the speed setting: (None, 0) unlimited;
        one pass per frame: (n, PASS_FRAME_S / n)."""
        sp = self.speed
        if sp == "pass":
            n = max(self._solver.n, 1)
            return n, PASS_FRAME_S / n
        sp = float(sp)
        if not math.isfinite(sp) or sp <= 0:
            return None, 0.0
        # about 40 chunks per second at most (so slow motion stays smooth and Pause prompt)
        return max(1, int(sp / 40)), 1.0 / sp

    def _worker(self, target_steps: int | None):
        last_pub = time.perf_counter()
        done = 0
        final = "paused"
        t_start = time.perf_counter()
        limit, dt_step = self._pace()
        try:
            while not self._stop_evt.is_set():
                if dt_step > 0:  # slow motion: wait for the step's time slot (Pause/Stop interrupt)
                    wait = t_start + done * dt_step - time.perf_counter()
                    if wait > 0 and self._stop_evt.wait(wait):
                        break
                with self._lock:
                    s = self._solver
                    if target_steps is None:
                        left = int(math.floor(self.max_passes * s.n - s.oracle_calls))
                        if left <= 0:
                            final = "budget"
                            self.notify(f"Pass budget of {self.max_passes:g} passes reached.", "success")
                            break
                    else:
                        left = target_steps - done
                        if left <= 0:
                            final = "paused"
                            break
                    k = max(1, min(self._chunk if limit is None else limit, left))
                    t0 = time.perf_counter()
                    s.steps(k)
                    dt = time.perf_counter() - t0
                    done += k
                    # adapt the chunk so that one takes ~CHUNK_TARGET_S (bounded growth)
                    if dt > 0:
                        want = k * CHUNK_TARGET_S / dt
                        self._chunk = int(min(max(want, 1), 4 * self._chunk + 1, 200_000))
                    now = time.perf_counter()
                    if now - last_pub >= SNAPSHOT_PERIOD_S or (dt_step > 0 and k * dt_step >= SNAPSHOT_PERIOD_S):
                        self._history.note(s, running=True)
                        self._capture_last_step()
                        self._publish()
                        last_pub = now
                time.sleep(0)  # let a waiting UI thread take the lock
            else:
                final = None  # stopped from outside: _halt sets the status
        except Exception as exc:  # never let a solver error kill the server silently
            final = "error"
            self.notify(f"Solver error: {type(exc).__name__}: {exc}", "error")
        with self._lock:
            if self._solver is not None:
                self._capture_last_step()
            if final is not None:
                self._set_status(final)
            self._publish()

    # ------------------------------------------------------------------ snapshots
    def solver_at(self, iteration: int) -> Solver:
        """An independent copy of this run's solver after block step ``iteration`` (replayed
        from the history's checkpoints, as Back does); the session's own state is not changed.
        Raises ValueError if no run is loaded, or ``iteration`` is later than the current step
        or earlier than the history reaches."""
        with self._lock:
            s = self._solver
            if s is None:
                raise ValueError("no run is loaded")
            if isinstance(iteration, bool) or not isinstance(iteration, (int, np.integer)) \
                    or not 0 <= iteration <= s.iteration:
                raise ValueError(f"iteration must be an int in [0, {s.iteration}] (the current step), "
                                 f"got {iteration!r}")
            return self._history.reach(int(iteration))

    def _set_status(self, status):
        self._status = status

    def _capture_last_step(self):
        s = self._solver
        recs = s.last_steps(1)
        if not recs:
            self._last_step = None
            return
        r = recs[-1]
        model = s.model
        i = r.block
        names = self._label_names()
        part = self._pose_part
        truth = self._describe(model, i, model.ground_truth(i), names, part)
        fw = self._describe(model, i, r.fw_corner, names, part)
        away = self._describe(model, i, r.away_corner, names, part)
        image = truth.get("image")
        words = truth.get("words")
        note = truth.get("note") or (self._problem.block_note(i) if self._problem is not None else "")
        # on a cache hit the step's corner is the cache corner y^c (Alg. 5), not a max-oracle answer
        fw_name = "cache corner" if r.cache_hit else "FW corner"
        prob = gprev = math.nan
        unvisited = -1
        if self._draw_p is not None and self._draw_p[0] == r.iteration:
            prob = float(self._draw_p[1][i])
            gprev = float(self._draw_p[2][i])
            unvisited = int(np.count_nonzero(np.isposinf(self._draw_p[2])))
        self._draw_p = None
        self._last_step = StepInfo(
            iteration=r.iteration, block=i, kind=r.kind, cache_hit=r.cache_hit, drop=r.drop,
            oracle_called=r.oracle_called, gamma=r.gamma, gamma_max=r.gamma_max,
            gap_before=r.block_gap_estimate, direction_gap=r.direction_gap,
            gap_after=s.block_gap_now(i), improvement=r.improvement,
            active_set_size=r.active_set_size, truth=truth["labels"], fw_corner=fw["labels"],
            away_corner=away["labels"] if away else None,
            overlays=_mask_overlays(truth, fw, away, fw_name),
            pose=_pose_panels(truth, fw, away, getattr(getattr(model, "data", None), "node_names", None), fw_name),
            image=_frozen(image) if image is not None else None,
            tokens=tuple(words) if words is not None and not isinstance(words, str) else None, note=note,
            probability=prob, sampling=str(self.sampling), gap_prev=gprev, unvisited=unvisited,
            box=bool(np.size(getattr(s.S, "lb", ()))))

    def set_pose_part(self, part) -> None:
        """Choose the part whose score map the pose anatomy draws (an int node index, or None
        for the model's default); the last step is described again with it."""
        if part is not None:
            if isinstance(part, bool) or not isinstance(part, (int, np.integer)) or part < 0:
                raise ValueError(f"part must be None or an int >= 0 (a node of the pose tree), got {part!r}")
            part = int(part)
        with self._lock:
            s = self._solver
            n_parts = getattr(getattr(s, "model", None), "arrays", None)
            n_parts = getattr(n_parts, "N", None)
            if part is not None and n_parts is not None and part >= n_parts:
                raise ValueError(f"part must lie in [0, {n_parts}) for this pose model, got {part}")
            if part == self._pose_part:
                return
            self._pose_part = part
            if s is not None and self._last_step is not None and self._last_step.pose is not None:
                self._capture_last_step()
                self._publish()

    @staticmethod
    def _describe(model, i, y, names, part=None) -> dict | None:
        """What the anatomy shows of labelling y of block i, from ``model.describe_block(i, y)``:
        ``labels`` (one display string per position: the model's ``label_text`` if it gives it,
        else the label names of its data), ``image``, ``words``, ``note``. Entries the model does
        not give yet are taken from the training data's extras (``images``, ``words``)."""
        if y is None:
            return None
        if part is not None and _takes_part(model):
            d = dict(model.describe_block(i, y, part=part))
        else:
            d = dict(model.describe_block(i, y))
        if d.get("label_text") is not None:
            labels = tuple(str(t) for t in d["label_text"])
        else:
            ys = np.asarray(d.get("labels", y)).ravel()
            labels = tuple(names[int(k)] if names is not None else str(int(k)) for k in ys)
        out = {"labels": labels, "image": d.get("image"), "words": d.get("words"), "note": d.get("note", "")}
        if d.get("kind") == "mask":
            out["mask"] = d
        if d.get("kind") == "pose":
            out["pose"] = d
        data = getattr(model, "data", None)
        extras = getattr(data, "extras", None) or {}
        if out["image"] is None and extras.get("images") is not None:
            out["image"] = extras["images"][data.tokens(i)]
        if out["words"] is None and extras.get("words") is not None:
            out["words"] = extras["words"][i]
        return out

    def _label_names(self):
        model = self._solver.model
        data = getattr(model, "data", None)
        if getattr(data, "label_names", None) is not None:
            return data.label_names
        return getattr(model, "label_names", None)

    def _headline_metric(self, last) -> dict:
        """The problem's headline test metric (e.g. CoNLL's chunk F1) when it is not the test
        error: evaluated once per exact gap check, at the w current when the check is first
        published (the pass it was taken at is kept with it). Call with the lock held."""
        spec = getattr(self._problem, "spec", None)
        name = getattr(spec, "metric", "test error")
        if last is None or name == "test error" or self._problem.test is None:
            return {}
        key = (id(self._solver), last["oracle_calls"])
        cached = self._metric_cache
        if cached is None or cached[0] != key:
            s = self._solver
            try:
                value = spec.test_metric(self._problem.model, s.w, self._problem.test)[0]
            except Exception as exc:  # a metric that fails must not stop the solver's worker
                self.notify(f"Could not compute the {name}: {type(exc).__name__}: {exc}", "warning")
                value = math.nan
            cached = self._metric_cache = (key, float(value), float(s.effective_passes))
        return {"test_metric_name": name, "test_metric": cached[1], "test_metric_passes": cached[2]}

    def _publish(self):
        """Make a new immutable snapshot (call with the lock held)."""
        self._version += 1
        s = self._solver
        cfg = {k: getattr(self, k) for k in self.CONFIG_SETTINGS + ("dataset", "speed")}
        with self._msg_lock:
            mcount = len(self._messages)
        if s is None or self._problem is None:
            snap = _empty_snapshot(self.session_id, self.dataset, self._status, mcount, cfg)
            self._snapshot = Snapshot(**{**snap.__dict__, "version": self._version,
                                         "comparison": tuple(self._comparison),
                                         "note": self._note if self._status == "loading" else ""})
            return
        new = _trace_since(s, len(self._trace))
        self._trace.extend(new)
        for r in new:
            if r["kind"] == "gap_check":
                self._last_check = r
        n = s.n
        now = time.perf_counter()
        t_prev, it_prev, rate = self._rate
        if self._status == "running" and now - t_prev >= 0.25:
            rate = (s.iteration - it_prev) / (now - t_prev)
            self._rate = (now, s.iteration, rate)
        elif self._status != "running":
            self._rate = (now, s.iteration, rate)
        track = bool(s.track)
        active = _frozen(s.active_set_sizes()) if track else None
        caches = _frozen(s.cache_sizes()) if track else None
        if track:   # from α⁰ (pass 0) on: the active-set plot starts where the run starts
            hist_pt = (s.effective_passes, float(active.mean()), int(active.max()), float(caches.mean()))
            if not self._active_hist or self._active_hist[-1][0] != hist_pt[0]:
                self._active_hist.append(hist_pt)
        # last exact check: periodic (trace) or manual, whichever is later
        checks = [r for r in (self._last_check, self._manual[-1] if self._manual else None) if r]
        last = max(checks, key=lambda r: r["oracle_calls"]) if checks else None
        exact_blocks = _frozen(s.exact_block_gaps[0]) if last is not None else None
        gaps = s.gap_estimates
        recent = s.last_steps(RECENT_STEPS)
        rs = np.array([(r.iteration, r.cache_hit, r.oracle_called) for r in recent], dtype=np.float64)
        rs = rs.reshape(-1, 3)
        self._snapshot = Snapshot(
            version=self._version, session_id=self.session_id, dataset=self._problem.name, n=n,
            lam=s.lam, label=self.run_label() + (f" · from {self._origin}" if self._origin else ""),
            status=self._status, message_count=mcount,
            iteration=s.iteration, effective_passes=s.effective_passes,
            oracle_calls=s.oracle_calls, cache_hits=int(s.step_counts()["cache_hit"]),
            solver_time_s=s.wall_time, steps_per_s=float(rate), heuristic_gap=s.heuristic_gap,
            dual=s.dual_objective(),
            exact_gap=last["exact_gap"] if last else math.nan,
            exact_primal=last["primal"] if last else math.nan,
            exact_dual=last["dual"] if last else math.nan,
            exact_passes=last["effective_passes"] if last else math.nan,
            exact_test_error=last.get("test_error", math.nan) if last else math.nan,
            gap_estimates=_frozen(gaps), staleness=_frozen(s.staleness),
            probabilities=_frozen(s.sampling_probabilities()), exact_block_gaps=exact_blocks,
            exact_block_gaps_iteration=int(last["iteration"]) if last else -1,
            active_set_sizes=active, cache_sizes=caches, trace=tuple(self._trace),
            manual_checks=tuple(self._manual), active_history=tuple(self._active_hist),
            recent_steps=_frozen(rs), last_step=self._last_step, step_counts=s.step_counts(),
            has_test=self._problem.test is not None, tracks_atoms=track,
            chi_cubed=nonuniformity(gaps) ** 3, comparison=tuple(self._comparison), config=cfg,
            note=self._note if self._status == "loading" else "", origin=self._origin,
            switches=tuple(self._switches),
            history_from=-1 if self._history.earliest is None else int(self._history.earliest),
            **self._headline_metric(last))

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Stop the worker and drop the solver (called when the browser session ends)."""
        if self._closed:
            return
        self._closed = True
        self._stop_evt.set()
        self.path.close()
        self._join(timeout=10.0)
        with self._lock:
            self._solver = None
            self._problem = None
            self._trace = []
            self._manual = []
            self._comparison = []
            self._history.clear()   # its checkpoints are solver copies
            self._switches = []
            self._status = "closed"
            self._snapshot = _empty_snapshot(self.session_id, self.dataset, "closed", 0, {})

    @property
    def closed(self) -> bool:
        return self._closed

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until no background thread is running (tests, notebooks)."""
        t = self._thread
        if t is not None:
            t.join(timeout)
            return not t.is_alive()
        return True
