"""The app's sidebar and its buttons: :class:`ControlsMixin` (held by
:class:`gaplab.app.main.GapLabApp`) makes the settings' widgets (generated from the session's
``param`` parameters), the run buttons, the exports, the projector bar's copies of the sampler,
step kind, exact gaps and comparison buttons, the alert and the note on missing data, and
handles the buttons' and the presenter keys' actions.

The module's tables say how a setting is shown: its widget class and looks, its row in the
sidebar, the lesson page that explains it and what its tooltip adds about the paper; and what
each button's tooltip says.
"""
from __future__ import annotations

import math
import time

import panel as pn
import param

from . import classroom, kernels
from .animate import MAX_FRAMES
from .export import trace_csv, trace_json
from .keys import KEY_HELP
from .session.jobs import MAX_KEY_STEPS
from .lessons import LESSONS as LESSON_PAGES
from .safe_html import esc
from .settings import missing_problems
from .ticks import locked, next_tick
from .widget_guard import guard_links

__all__ = ["ControlsMixin", "LESSON_OF", "SETTING_NOTES", "TOOLTIPS"]

_W = 138   # px: a setting's widget

#: widget class of a parameter type (the session's parameters are generated from the schema)
_WIDGET_CLASS = {param.Selector: pn.widgets.Select, param.Boolean: pn.widgets.Checkbox,
                 param.Integer: pn.widgets.IntInput, param.Number: pn.widgets.FloatInput}

#: looks of particular widgets (number formats, the checkbox's alignment with its neighbour)
_WIDGET_KW = {"lam": dict(format="0.[000000]"), "cache": dict(margin=(28, 10, 5, 10)),
              "cache_nu": dict(step=0.005, format="0.[00000]"),
              # "every 10 passes" in a notebook's UI font needs about 110 px inside the box
              "gap_check": dict(width=150)}

#: sidebar rows of the known settings (pairs); problem options follow the first row, settings
#: not listed here get rows of their own after them
_LAYOUT = (("dataset", "lam"), ("sampling", "gap_power"), ("step_kind", "gap_check"),
           ("cache", "cache_size"), ("cache_factor", "cache_nu"), ("seed", "max_passes"))

LESSON_TITLES = [lesson.title.split("·", 1)[-1].strip() for lesson in LESSON_PAGES]

#: the lesson page (1-based) that explains a setting (named in the setting's tooltip)
LESSON_OF = {"dataset": 1, "lam": 1, "sampling": 4, "gap_power": 4, "gap_check": 4, "step_kind": 5,
             "cache": 6, "cache_factor": 6, "cache_nu": 6, "cache_size": 6}

#: what a setting's tooltip adds about the paper (before the lesson page it names)
SETTING_NOTES = {
    "gap_power": "The paper uses p = 1 only (Alg. 2: P(i) ∝ ĝᵢ), and Theorem 2 covers p = 1 with exact "
                 "gaps; p ≠ 1 is an experiment of this app, with no guarantee.",
}

#: tooltips of the buttons (what each does; Pause vs Stop)
TOOLTIPS = {
    "step": "One block step: draw a block with the chosen sampler, call its max oracle (or use the "
            "cache), then take the chosen step kind: a FW step moves the block towards the FW corner, "
            "a pairwise step moves mass from the away corner to it, an away step moves mass away "
            "from the away corner (γ = 0: nothing moves). Pauses a run. (Lessons, pages 2 and 5)",
    "step_n": "N block steps at the chosen speed, then pause.",
    "run": "Run until the pass budget at the chosen speed. While running this button is Pause: "
           "the run stops but stays resumable (Run continues it).",
    "stop": "End the run. It stays on screen, but the next Run, Step or Step ×N starts a new run "
            "from α⁰ with the current settings (Add run to comparison first to keep its curves).",
    "reset": "Restart from α⁰ now, same settings and seed: the same run again.",
    "back": "Back one block step (←): the state after the previous step, exactly (replayed "
            "from a checkpoint; the last 200 steps since the last reset or setting switch). "
            + KEY_HELP,
    "exact": "One exact gap pass: n counted oracle calls give the duality gap, the primal and "
             "every block gap g_i (red dashes on the Step tab). (Lessons, page 3)",
    "compare": "Freeze the current run's curves (labelled with its settings and seed) on the "
               "Convergence and Cache plots.",
}



def _missing_html() -> str:
    """A short note on the registered problems whose data is not installed (not offered in the
    picker), with where the loader looked and how to get the data on hover."""
    miss = missing_problems()
    if not miss:
        return ""
    items = "; ".join(f"<span title='{esc(hint)}' style='text-decoration:underline dotted'>"
                      f"{esc(name)}</span>" for name, hint in miss.items())
    return (f"Not installed, so not offered: {items}. Hover the name for where the loader looked "
            "and how to get the files (e.g. $GAPLAB_DATA, or a checksummed download from Python), "
            "then restart the app.")



class ControlsMixin:
    """The sidebar, its buttons and their actions, for :class:`gaplab.app.main.GapLabApp`."""

    def _w(self, pname, cls, **kw):
        """The widget of the session's parameter ``pname`` (class ``cls``, keywords ``kw``)."""
        kw.setdefault("width", _W)
        kw.setdefault("css_classes", [f"gaplab-w-{pname}"])  # stable hooks for browser tests
        return cls.from_param(self.session.param[pname], **kw)

    def _controls(self):
        """The sidebar: the settings, the run buttons, the exports and the alert (and the
        projector bar's copies, placed by ``set_projector``)."""
        self._setting_widgets()
        self._buttons()
        self._export_widgets()
        self._projector_copies()
        run = self._bar_actions()   # the run buttons and their copies in the projector bar
        for b, fn in run + [(self._bar_copies[b], fn) for b, fn in run] + [
                (self.b_exact, self.on_exact), (self.b_compare, self.on_compare),
                (self.b_exact_p, self.on_exact), (self.b_compare_p, self.on_compare),
                (self.b_clear, self.on_clear)]:
            b.on_click(lambda e, fn=fn: locked(self._timed, fn))   # with the document's lock (ticks.py)
        self.alert = pn.pane.Alert("", alert_type="info", visible=False, width=290, margin=(5, 10),
                                   styles={"overflow-wrap": "anywhere", "word-break": "break-word"})
        self.missing = pn.pane.HTML(_missing_html(), width=300, margin=(0, 10),
                                    css_classes=["gaplab-missing"], visible=bool(missing_problems()),
                                    styles={"font-size": "12px", "color": "#666", "overflow-wrap": "anywhere"})
        self.s.param.watch(lambda e: self._sync_visibility(), ["sampling", "cache", "dataset"])
        self._sync_visibility()
        self.settings_box = self._settings_box()
        self._speed_note = pn.pane.HTML(
            "<span style='font-size:11.5px;color:#666'>Pause keeps the run; Stop ends it "
            "(the next Run starts anew)</span>", width=150, margin=(18, 5, 0, 0))
        self.run_box = pn.Column(*self._run_rows())
        return pn.Column(self.settings_box, self.run_box, self.alert, width=330)

    def _setting_widgets(self):
        """``self.widgets``: one per setting (with its tooltip naming its lesson page) and N."""
        s, w = self.session, self._w
        # one widget per parameter of the session's settings (generated from SolverConfig and
        # the problem registry): a new setting or problem option gets a widget without an edit here
        self.widgets = {}
        for pname in ("dataset",) + s.CONFIG_SETTINGS + tuple(s._options_of()):
            if pname not in s.param:
                continue
            p = s.param[pname]
            cls = _WIDGET_CLASS.get(type(p), pn.widgets.FloatInput)
            kw = dict(_WIDGET_KW.get(pname, {}))
            if getattr(p, "step", None) is not None and cls is pn.widgets.FloatInput:
                kw.setdefault("step", p.step)
            self.widgets[pname] = w(pname, cls, **kw)
        self.widgets["n_steps"] = w("n_steps", pn.widgets.IntInput, width=80, label="N")
        for pname, page in LESSON_OF.items():   # tooltips say where the lessons explain a setting
            wdg = self.widgets.get(pname)
            if wdg is not None and "description" in wdg.param:
                base = (wdg.description or "").rstrip(" .")
                text = " ".join(t for t in (base + "." if base else "", SETTING_NOTES.get(pname, "")) if t)
                wdg.description = (f"{text} — explained in the Lessons tab, page {page}: "
                                   f"“{LESSON_TITLES[page - 1]}”.").lstrip(" —")

    def _buttons(self):
        """The run buttons, the speed and keep-α, exact gaps and the comparison."""
        wd, w, W = self.widgets, self._w, _W
        classroom.restrict_dataset_widget(wd["dataset"], self.limits)
        bw = 86
        self.widgets["speed"] = w("speed", pn.widgets.Select, width=W)
        B = pn.widgets.Button
        self.b_step = B(label="Step", color="primary", width=bw, description=TOOLTIPS["step"])
        self.b_step_n = B(label="Step ×N", color="primary", width=bw, description=TOOLTIPS["step_n"])
        self.b_run = B(label="▶ Run", color="success", width=bw, description=TOOLTIPS["run"])
        self.b_stop = B(label="■ Stop", color="danger", width=bw, description=TOOLTIPS["stop"])
        self.b_reset = B(label="↺ Reset", color="warning", width=bw, description=TOOLTIPS["reset"])
        self.b_back = B(label="◀ Back", width=bw, description=TOOLTIPS["back"], css_classes=["gaplab-back"])
        self.widgets["keep_alpha"] = w("keep_alpha", pn.widgets.Checkbox, width=200, margin=(12, 10, 5, 10))
        self.b_exact = B(label="Compute exact gaps (n oracle calls)", width=290, description=TOOLTIPS["exact"])
        self.b_compare = B(label="Add run to comparison", width=190, description=TOOLTIPS["compare"])
        self.b_clear = B(label="Clear", width=90, description="Remove every comparison run.")

    def _export_widgets(self):
        """Trace CSV and JSON, and the GIF of the last N steps."""
        self.d_csv = pn.widgets.FileDownload(callback=lambda: trace_csv(self.session.snapshot),
                                             filename="gaplab_trace.csv", label="Trace CSV", width=140,
                                             color="light", css_classes=["gaplab-export-csv"],
                                             description="Download the current run's trace (one row per "
                                                         "pass and per gap check) with its config and seed.")
        self.d_json = pn.widgets.FileDownload(callback=lambda: trace_json(self.session.snapshot),
                                              filename="gaplab_trace.json", label="Trace JSON", width=140,
                                              color="light", css_classes=["gaplab-export-json"],
                                              description="Download the current run (config, seed, trace, "
                                                          "manual gap checks, comparison runs) as JSON.")
        self._gif_busy = False
        self.gif_steps = pn.widgets.IntInput(value=20, start=2, end=MAX_FRAMES, width=70, margin=(5, 5),
                                             css_classes=["gaplab-gif-steps"],
                                             description="How many of the last block steps the GIF shows.")
        self.d_gif = pn.widgets.FileDownload(callback=self._gif, filename="gaplab_last_steps.gif",
                                             label="GIF of the last N steps", width=210, color="light",
                                             css_classes=["gaplab-export-gif"],
                                             description="Download an animation of the last N block steps "
                                                         "(anatomy and per-block gap bars), made on the server.")
        # offered when the last N steps reach back past a setting switch (shown by _gif)
        self.d_gif_across = pn.widgets.FileDownload(
            callback=self._gif_across, filename="gaplab_steps_across_switch.gif",
            label="Make the GIF across the switch", width=250, color="light", visible=False,
            css_classes=["gaplab-export-gif-across"],
            description="The last N steps including those before the setting switch (replayed under "
                        "the settings they ran under); each frame's caption says before or after the switch.")

    def _projector_copies(self):
        """The projector bar's own widgets (a widget is shown in one place), guarded."""
        s, w, B = self.session, self._w, pn.widgets.Button
        # projector bar's own copies (a widget is shown in one place): the sampler and the step kind
        # (bound to the same session parameters as the sidebar's: switching keeps α as set
        # there), exact gaps and the comparison, so the lecture never leaves projector mode
        self.p_widgets = {pname: w(pname, pn.widgets.Select, width=150, css_classes=[f"gaplab-p-{pname}"])
                          for pname in ("sampling", "step_kind") if pname in s.param}
        # the run buttons, N and the speed: copies too (the bar is in the page, hidden, before
        # the switch: gaplab.app.projector), with the same actions; refresh keeps their state
        self.bar_widgets = {"n_steps": w("n_steps", pn.widgets.IntInput, width=80, label="N",
                                         css_classes=["gaplab-p-n_steps"]),
                            "speed": w("speed", pn.widgets.Select, width=_W, css_classes=["gaplab-p-speed"])}
        for name in ("back", "step", "step_n", "run", "stop", "reset"):
            b = getattr(self, f"b_{name}")
            self._bar_copies[b] = B(label=b.label, button_type=b.button_type, width=b.width,
                                    description=b.description, css_classes=[f"gaplab-p-{name}"])
        # a page can send any value to a widget: each setting's own bounds and choices hold on the
        # server, a refused value is said and the widget shows the value in force (widget_guard)
        guard_links(s, {**self.widgets, **self.p_widgets}, s.notify)
        guard_links(s, self.bar_widgets, s.notify)
        self.b_exact_p = B(label="Exact gaps", width=130, description=TOOLTIPS["exact"],
                           css_classes=["gaplab-p-exact"])
        self.b_compare_p = B(label="Add to comparison", width=190, description=TOOLTIPS["compare"],
                             css_classes=["gaplab-p-compare"])
        self._bar_copies[self.b_exact] = self.b_exact_p   # disabled with it (refresh)

    def _bar_actions(self):
        return [(self.b_step, self.on_step_click), (self.b_step_n, self.on_step_n), (self.b_run, self.on_run),
                (self.b_stop, self.on_stop), (self.b_reset, self.on_reset), (self.b_back, self.on_back)]

    def _settings_box(self):
        """The settings' rows (``_LAYOUT``, problem options after the first row) under a title."""
        wd = self.widgets
        placed = [n for row in _LAYOUT for n in row]
        rest = [n for n in wd if n not in placed and n not in ("n_steps", "speed", "keep_alpha")]   # problem options, new settings
        rows = [pn.Row(*(wd[n] for n in row if n in wd)) for row in _LAYOUT[:1]] + [self.missing]
        rows += [pn.Row(*(wd[n] for n in rest[k:k + 2])) for k in range(0, len(rest), 2)]
        rows += [pn.Row(*(wd[n] for n in row if n in wd)) for row in _LAYOUT[1:]]
        return pn.Column(pn.pane.HTML("<b>Settings</b>", margin=(5, 10, 0, 10)), *rows,
                         # an <hr> pane, not pn.layout.Divider: Divider's model skips Panel's
                         # stylesheet patching, and in a session the server re-creates
                         # (page slower to connect than the unused-session lifetime) its
                         # CSS link stays on cdn.holoviz.org (fails offline)
                         pn.pane.HTML("<hr style='border:0;border-top:1px solid #ddd;margin:0'>",
                                      sizing_mode="stretch_width", margin=(5, 10)))

    def _run_rows(self):
        wd = self.widgets
        return [pn.Row(self.b_step, self.b_step_n, wd["n_steps"]),
                pn.Row(self.b_run, self.b_stop, self.b_reset),
                pn.Row(self.b_back, wd["keep_alpha"]),
                pn.Row(wd["speed"], self._speed_note),
                pn.Row(self.b_exact),
                pn.Row(self.b_compare, self.b_clear),
                pn.Row(self.d_csv, self.d_json),
                pn.Row(self.d_gif, self.gif_steps), pn.Row(self.d_gif_across)]

    @property
    def s(self):
        return self.session

    # ------------------------------------------------------------------ actions (buttons)
    def _timed(self, fn):
        """Run a button's action and record its server-side time (action + snapshot + view
        updates + Bokeh patch), kept in ``action_ms`` for diagnostics and benchmarks."""
        t0 = time.perf_counter()
        fn()
        self.action_ms.append((fn.__name__, 1e3 * (time.perf_counter() - t0)))

    def _choose(self, name: str, value: int):
        """The anatomy's picker (a model's choice about its pictures, e.g. a pose part)."""
        try:
            self.session.set_display_option(name, value)
        except ValueError as exc:
            self.session.notify(str(exc), "warning")
        next_tick(self.refresh)   # the picker's handler

    def on_step(self):
        """One block step in the caller's thread, drawn (notebooks, tests), except for a
        classroom's student, whose Step is queued for the session's worker; the Step button takes
        it in the worker too (:meth:`on_step_click`)."""
        if self.limits.student and self.limits.loop_share is not None:
            # a classroom's student: the Step is taken in the session's worker (queued like a
            # key press), so the event loop stays free for the lecturer's page; during a Run it
            # is refused (pausing waits for the worker's chunk, on the event loop)
            if self.session.status == "running":
                if not getattr(self, "_told_running", False):   # once per run, not per click
                    self._told_running = True
                    self.session.notify("Step: a Run is going; pause it (❚❚ Pause) to step.", "info")
                return
            self._told_running = False
            if not self.session.key_action("step", 1) and not self.session.closed:
                self.session.notify(f"Step: {MAX_KEY_STEPS} Steps are waiting already.", "warning")
            self._after_action()
            return
        self.session.step()
        self._after_action()

    #: a Step click waits this long (s) for its step before the periodic refresh is left to draw it
    STEP_CLICK_WAIT_S = 0.05

    def on_step_click(self):
        """The Step button: one block step queued for the session's worker, as the Step key's
        (the same single step: k clicks give the trace of a k-step run with the same seed), so
        the server's event loop never steps. A step done within :attr:`STEP_CLICK_WAIT_S` is
        drawn at once (its patch goes with the reply to the click); a longer one (a slow max
        oracle) is drawn by the periodic refresh while the event loop answers other work. A
        classroom's student takes :meth:`on_step`'s student path (refused during a Run)."""
        if self.limits.student and self.limits.loop_share is not None:
            self.on_step()
            return
        self.on_key("step")
        if self.session.wait_idle(self.STEP_CLICK_WAIT_S):
            self.refresh()

    def on_step_n(self):
        n = self._budget(int(self.session.n_steps), "Step ×N")
        self.session.step_n(n)
        self._after_action()

    def on_run(self):
        s = self.session
        if self.limits.student and not s.running and s.solver is not None:
            # a student's Run takes at most the server's steps per request (then pauses)
            left = int(math.floor(s.max_passes * s.solver.n - s.solver.oracle_calls))
            if left > self.limits.steps(left):
                s.step_n(self._budget(left, "Run"))
                self._after_action()
                return
        s.toggle_run()
        self._after_action()

    def _budget(self, n: int, what: str) -> int:
        """``n`` block steps cut to this session's budget per request (told when cut)."""
        m = self.limits.steps(n)
        if m < n:
            self.session.notify(f"{what}: this server takes at most {m:,} block steps per request "
                                f"from a student's page; taking {m:,}.", "info")
        return m

    def _guard_paths(self, view, method: str, what: str) -> None:
        classroom.guard_store_paths(view, self.limits, self.session.notify, method=method, what=what)

    def on_stop(self):
        self.session.stop()
        self.refresh()

    def on_reset(self):
        self.session.reset()
        self.refresh()

    def on_back(self):
        self.session.back()
        self.refresh()

    def on_key(self, action: str | None, count: int = 1):
        """``count`` presses of a presenter key (gaplab.app.keys, capped there): the same as its
        button; Steps and ← go to the session's worker (queued, ← presses as one jump back), so
        the server's event loop never steps. Solver keys do nothing while their buttons are
        disabled (loading, compiling)."""
        if action == "projector":
            self.set_projector(not self.projector)
            return
        if action not in ("step", "step_n", "back", "run") or self.session.status == "loading":
            return
        if not kernels.state().ready and not (action == "step" and self.session.reference_can_step()):
            return
        t0 = time.perf_counter()
        if action in ("step", "back"):
            took = self.session.key_action(action, max(1, int(count)))
            if took < count:
                self._keys_dropped(count - took)
        elif action == "step_n":
            self.on_step_n()
        else:
            self.on_run()
        self.action_ms.append((f"key {action}", 1e3 * (time.perf_counter() - t0)))

    def _keys_dropped(self, n: int):
        """Say (at most once every few seconds) that key presses beyond the caps were dropped."""
        now = time.perf_counter()
        if now - getattr(self, "_dropped_said", -1e9) < 5.0:
            return
        self._dropped_said = now
        self.session.notify(f"Keys: {n:,} presses dropped (more than a person can press at once; "
                            "Steps wait in a short queue).", "warning")

    def on_exact(self):
        self.session.compute_exact_gaps()
        self.refresh()

    def on_compare(self):
        self.session.add_to_comparison()
        self.refresh()

    def on_clear(self):
        self.session.clear_comparison()
        self.refresh()
