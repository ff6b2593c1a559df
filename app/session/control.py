"""The session's control: its settings (a ``param.Parameterized``), loading a data set,
(re)building the solver when a setting changes, keeping α across a switch, going back, and
loading a model picked on the regularization path. :class:`Session` is made of this, the run
loop (:mod:`~gaplab.app.session.runloop`) and the snapshots it publishes
(:mod:`~gaplab.app.session.publish`)."""
from __future__ import annotations

import copy
import itertools
import math
import threading

import numpy as np
import param

from gaplab.core import Solver, SolverConfig
from gaplab.core.config import config_kwargs
from gaplab.core.problems import Problem, get_problem

from ..history import History
from ..settings import app_settings, dataset_parameter, option_parameters, solver_parameters, sync_registry
from ..wording import load_words
from .jobs import SessionJobs
from .problems import LoadStopped, load_problem
from .publish import SessionPublisher
from .runloop import SPEED_CHOICES, SessionRunLoop
from .snapshot import RunRecord, Snapshot, StepInfo, StepRate, _empty_snapshot
from .tracekeep import TraceKeeper

_session_ids = itertools.count(1)  # only hands out ids; no session state lives at module level


# ----------------------------------------------------------------------------- session
#: the settings a session is made of: the dataset picker (the registered problems), the solver
#: settings (λ, sampling, step kind, cache, gap checks, seed, pass budget: generated from
#: SolverConfig's field metadata) and the loader options of the problems (toy_n, toy_K)
SessionSettings = type("SessionSettings", (param.Parameterized,), {
    "dataset": dataset_parameter("ocr-small"), **solver_parameters(),
    **{k: v[2] for k, v in option_parameters().items()}})



class Session(SessionJobs, SessionRunLoop, SessionPublisher, SessionSettings):
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

    #: folders a path typed into the page (a path store, a sweep store) must resolve under
    #: (classroom mode sets them per session); None: any folder but the system ones
    #: (:func:`gaplab.app.typed_paths.check_typed_path`). Not a parameter: no widget sets it.
    typed_path_roots = None

    #: settings whose change rebuilds the solver (λ and the method settings; not the pass budget)
    SOLVER_SETTINGS = tuple(s.app for s in app_settings(("lam", "method")))

    #: every app setting that goes into the SolverConfig (SOLVER_SETTINGS and the pass budget)
    CONFIG_SETTINGS = tuple(s.app for s in app_settings())

    def __init__(self, *, load: bool = True, **params):
        sync_registry(type(self))  # problems registered after import appear in the picker
        super().__init__(**params)
        self.session_id = next(_session_ids)
        self._lock = threading.RLock()
        self._jobs_init()
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
        self._display_option = None   # (name, value): the reader's picker choice (None: the model's default)
        self._display_error = None    # the last reason the model's pictures were not drawn
        self._trace = TraceKeeper()   # the run's trace records kept for plotting (bounded)
        self._last_check = None
        self._manual: list = []
        self._active_hist: list = []
        self._last_step: StepInfo | None = None
        self._comparison: list[RunRecord] = []
        self._run_counter = 0
        self._rate = StepRate()   # steps per second of the current run (Snapshot.steps_per_s)
        self._note = ""
        self._origin = ""
        self._draw_p = None    # (iteration, P of the next draw) captured by a single Step
        self._drawn = {}       # what single Steps saw of their draws, by iteration (publish._draw_seen)
        self._metric_cache = None   # (key of the gap check, headline test metric, its pass)
        self._history = History()   # checkpoints for Back (gaplab.app.history)
        self._switches: list = []   # settings switched with α kept (see Snapshot.switches)
        self._before_switch = None  # (History before the last switch with α kept, its step, label)
        self._snapshot = _empty_snapshot(self.session_id, self.dataset, "loading", 0, {})
        #: the server's say on a dataset (gaplab.app.classroom): ``guard(name)`` is None when this
        #: session may open it, else the reason shown (a refused choice is reverted)
        self.dataset_guard = None
        #: called in each worker thread as it starts (the classroom server lowers a student
        #: session's worker priority there)
        self.on_worker_start = None
        from ..pathlab import PathLab
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
        refusal = self.dataset_guard(self.dataset) if "dataset" in names and self.dataset_guard else None
        if refusal:
            self.notify(refusal, "warning")
            self._revert({"dataset": self._applied.get("dataset", self.param.dataset.default)})
            return
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
            self._note = load_words("", 0, 0, 0.0)
            self._set_status("loading")
            self._publish()

        def job():
            try:
                problem = load_problem(name, progress=self._load_progress,
                                       should_stop=lambda: self._stop_evt.is_set() or self._closed, **options)
            except LoadStopped:   # another dataset was chosen, or the session closed
                return
            except Exception as exc:  # shown to the user, never a server traceback
                self._load_failed(name, exc)
                return
            if not self._stop_evt.is_set() and not self._closed:
                self._install(problem, cfg)

        self._start_thread(job, "load")

    def _load_progress(self, stage: str, done: int, total: int, seconds: float):
        """A dataset load in progress (told twice a second from the load job): the status
        note says what it does, images done / total and the seconds so far."""
        with self._lock:
            if self._status != "loading" or self._closed:
                return
            self._note = load_words(stage, done, total, seconds)
            self._publish()

    def _load_failed(self, name, exc):
        self.notify(f"Could not load dataset {name!r}: {exc}. Choose another dataset.", "error")
        with self._lock:
            self._problem = None
            self._solver = None
            self._applied = {}
            self._set_status("error")
            self._publish()

    @staticmethod
    def _new_solver(problem: Problem, cfg: SolverConfig) -> Solver:
        """An unstepped fast Solver of ``problem`` with the settings ``cfg``."""
        from gaplab.core.problems import model_box
        return Solver(problem.model, cfg, test_data=problem.test, **model_box(problem.model))

    def _install(self, problem: Problem, cfg: SolverConfig, solver: Solver | None = None,
                 origin: str = ""):
        with self._lock:
            if self._closed:
                return
            if solver is None:
                solver = self._new_solver(problem, cfg)
            self._origin = origin
            self._note = ""
            if problem is not self._problem:
                self._display_option = None   # a picker choice belongs to its model
            self._problem = problem
            self._solver = solver
            self._applied = self._current_values()
            self._trace.clear()
            self._last_check = None
            self._manual = []
            self._active_hist = []
            self._last_step = None
            self._rate.reset()
            self._chunk = 64
            self._switches = []
            self._history.clear()
            self._before_switch = None
            self._drawn = {}
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
        from ..switch import CONTINUE_SETTINGS, can_continue, continue_with, describe_change
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
            mark = (new.effective_passes, new.wall_time, new.iteration, label, describe_change(cfg, s.config))
            if warm:
                self._trace.clear()
                self._last_check = None
                self._manual = []
                self._active_hist = []
                self._origin = f"α at λ = {s.lam:g}"
                self._rate.reset()
            self._solver = new
            self._applied = self._current_values()
            self._switches = prev + [mark]
            # the steps before the switch stay replayable (a GIF across it), the last switch's only
            self._before_switch = None if warm else (copy.copy(self._history), s.iteration, label)
            self._history.clear()
            self._drawn = {}
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
        if self.running and self._thread is not threading.current_thread():   # (a key job goes on)
            self._halt("paused")
        iteration = int(iteration)
        with self._lock:
            s = self._solver
            first = self._history.earliest
            if iteration < 0 or first is None or iteration < first:
                self._notify_back_refused(iteration, first)
                return self._snapshot
            if iteration == s.iteration:
                return self._snapshot

            def seen(sv):   # what a single Step records before its draw
                self._draw_p = (sv.iteration, sv.sampling_probabilities(), np.array(sv.gap_estimates, copy=True))

            new = self._history.reach(iteration, on_last=seen)
            self._history.note(new, force=True)   # the next Back replays from here, not from afar
            self._solver = new
            self._trace.restart(new.trace(), new.n_trace_records)
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
            self._rate.reset()
            self._publish()
        return self._snapshot

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

    def solver_before_switch(self, iteration: int) -> Solver:
        """An independent copy of this run's solver after block step ``iteration``, a step
        before the run's last setting switch with α kept (replayed under the settings of before
        the switch); the session's state is not changed. Raises ValueError if there is no such
        switch or its steps before ``iteration`` are not kept (see :meth:`before_switch`)."""
        with self._lock:
            before = self._before_switch
            if before is None:
                raise ValueError("the run has no setting switch whose earlier steps are kept")
            hist, at, _label = before
            if isinstance(iteration, bool) or not isinstance(iteration, (int, np.integer)) \
                    or not 0 <= iteration <= at:
                raise ValueError(f"iteration must be an int in [0, {at}] (the switch's step), got {iteration!r}")
            return hist.reach(int(iteration))

    def before_switch(self) -> tuple | None:
        """(earliest step kept, the switch's step, what it changed) of the run's last setting
        switch with α kept, whose earlier steps stay replayable; None without one."""
        b = self._before_switch
        return None if b is None or b[0].earliest is None else (int(b[0].earliest), int(b[1]), b[2])

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
