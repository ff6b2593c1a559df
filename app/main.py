"""The gaplab app: ``build_app()`` returns one independent app (its own :class:`Session`,
solver, worker thread and plots) that displays in ``panel serve`` and in Jupyter alike.

Layout (made for a 1400×900 projector): a header with the run's status line, a sidebar with
the settings (widgets generated from the Session's param parameters) and the buttons, and tabs:
Step (anatomy of the last step, per-block gaps), Convergence, Cache & active sets, Regularization
path, Toy example and Lessons.
"""
from __future__ import annotations

import gc

import collections
import io
import threading
import time
from urllib.parse import urlsplit

import panel as pn
import param
from panel.io import hold

from . import kernels, startup
from .animate import MAX_FRAMES, last_steps_gif
from .export import figure_export_buttons, trace_csv, trace_json
from .keys import KEY_HELP, KeyboardShortcuts
from . import urlstate
from .lessons import LESSONS as LESSON_PAGES, LessonPanel
from .path_tab import PathView
from .safe_html import esc, md_esc
from .ticks import handler, locked, next_tick
from .session import Session
from .settings import missing_problems
from .toy_tab import ToyLab, ToyView
from .views import fig_fonts
from .views.frame import Frame
from .styles import TABS_CSS, WRAP_CSS, designed_for_projector, projector_sizes
from .views import (AnatomyView, BlockGapsView, CacheView, GapView, PrimalDualView, StatusView,
                    TestErrorView)

__all__ = ["GapLabApp", "build_app", "REFRESH_MS"]

# tab indices (in TAB_NAMES order)
STEP, CONVERGENCE, CACHE, PATH, TOY, LESSONS, SWEEPS, RACE = range(8)

REFRESH_MS = 100   # the UI pulls a snapshot at most 10 times per second; while a run goes, a
#                    frame (every visible view and the status line drawing one snapshot) comes at
#                    the pace of the slowest visible view (its RUNNING_MIN_INTERVAL_S; views/frame.py)

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


PROJECTOR_BARS = 120

#: a stretched column no wider than its container: Bokeh gives it its children's widths as a
#: minimum, and rows that wrap (the path tab's controls) would then never wrap
_FIT_CSS = ":host { min-width: 0 !important; }"

MAIN_MIN_WIDTH = 800   # px: the tabs' column is never narrower (it goes below the sidebar); the
#                        per-block plots and their colour bar and toolbar need about 780 px
ANATOMY_INPUT_MIN_WIDTH = 360   # px: the anatomy's input and corners; the table goes below them

BLOCKS_HEIGHT = 560   # px taken by the Step tab's per-block gap plots (their place while unmade)

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


def _served() -> bool:
    """True inside a Bokeh server session (``gaplab app``, ``panel serve``), False in a notebook
    or a plain Python process."""
    doc = pn.state.curdoc
    return doc is not None and getattr(doc, "session_context", None) is not None


def _notifications():
    """Panel's toast area of this document when served (see :func:`_extension`), else None."""
    return pn.state.notifications if _served() else None


def _extension():
    """Load Panel's extensions for this document (called by every app).

    Served: MathJax and the toast notifications. In a notebook only MathJax, and only when the
    notebook has not loaded it already (``pn.extension("mathjax")`` in an earlier line): a second
    call writes all of Panel's JavaScript into the cell's output again, and the toasts' library
    (notyf) comes from a CDN there (offline: "Notyf is not defined" at the first toast); the
    sidebar's alert shows the same messages."""
    if _served():
        pn.extension("mathjax", notifications=True)
    elif not (pn.extension._loaded and "mathjax" in pn.extension._loaded_extensions):
        pn.extension("mathjax")


def _pin_local_resources() -> None:
    """Make this served document resolve Panel's stylesheets to the app's own server.

    Panel sets the document's ``dist_url`` only when it renders the HTML page; a component whose
    Bokeh model is made before that (the periodic refresh can fire between session creation and
    the page render) or outside the page's roots gets ``cdn.holoviz.org`` URLs instead. In a
    classroom without internet those requests fail (CI saw 52 "Failed to load resource" errors
    in one page). Setting the same value Panel would set, before any component is built, keeps
    every stylesheet local. No effect in a notebook or when Panel is told to use its CDN.
    """
    from panel.io.resources import LOCAL_DIST, use_cdn
    if not _served() or use_cdn():
        return
    rel = pn.state.rel_path
    # the same value panel.io.server.server_html_page_for_session computes for resources="server"
    pn.state.curdoc._template_variables.setdefault("dist_url", f"{rel}/{LOCAL_DIST}" if rel else LOCAL_DIST)


class GapLabApp(pn.viewable.Viewer):
    """One app instance = one session. ``close()`` stops the worker and frees the solver.

    Parameters
    ----------
    session : Session, optional
        An existing session to show (default: a new one on OCR-small, gap sampling, λ = 0.01).
    periodic : bool
        Pull snapshots with a periodic callback every ``REFRESH_MS`` (off in headless tests,
        which call :meth:`refresh` themselves).
    warm : bool, optional
        Compile the solver kernels in a background thread of this process (once per process;
        ``gaplab app`` starts it with the server). Until it ends, the buttons that run the
        solver are disabled and the page shows the progress. The served entry points
        (``gaplab app``, ``app/panel_app.py``) turn it on; off by default so that a notebook's
        kernel does not spend minutes of CPU on model kinds it may never use (there the first
        Step compiles what it needs).

    In a notebook the app changes none of its Bokeh models until the page has opened the comm of
    its display (:meth:`_notebook_comms_open`), then sends its whole state once.
    """

    def __init__(self, session: Session | None = None, *, periodic: bool = True, warm: bool = False,
                 url: urlstate.UrlRequest | None = None, **params):
        super().__init__(**params)
        # a bookmarked state (gaplab.app.urlstate): applied once the dataset is loaded; until then
        # the page's URL is left as opened
        self._url_pending = url if url is not None and not (url.empty and not url.notices) else None
        self._url_written = ("", 0.0)
        self._frame = Frame()   # the snapshot on screen (gaplab.app.views.frame)
        self._loc = pn.state.location if _served() else None   # this page's URL (served only)
        _pin_local_resources()   # before any component is built
        _extension()
        if warm:
            kernels.start(log=False)
            if _served():
                kernels.yield_to_page(10.0)   # the background compile waits for this page (onload)
        self._kkey = None
        self._unloaded_force = 0.0
        self._comm_waited = False
        # a notebook: the event loop of the kernel's thread that runs this app's periodic refresh
        # (see _route_page_messages); served, Bokeh's document lock orders everything
        self._loop, self._loop_thread = (None, None) if _served() else _running_loop()
        self._t_made = time.perf_counter()
        self.session = session if session is not None else Session()
        self.toy = ToyLab()
        self._msg_seen = 0
        self._closed = False
        self.action_ms = collections.deque(maxlen=200)
        self._cb = None
        # ---- views of the tabs
        self.status = StatusView()
        self.anatomy = AnatomyView(on_choice=self._choose)
        # in a narrow output area the anatomy's table goes below the input and its corners
        # (side by side the input pane shrank to one word per line and hid the word images)
        self.anatomy.word.min_width = ANATOMY_INPUT_MIN_WIDTH
        self.anatomy.panel[1].stylesheets = [WRAP_CSS]
        # Served, the per-block gap plots (two figures: 40 % of the app's build time and a
        # quarter of its Bokeh models) are made when the page has loaded (_on_page_load), so
        # that the page is up and its buttons answer sooner; a spacer of their height keeps the
        # page from jumping. In a notebook or headless they are made now.
        served = _served()
        self._blocks = None if served else self._new_blocks()
        self._blocks_spacer = pn.Spacer(height=BLOCKS_HEIGHT, sizing_mode="stretch_width") if served else None
        # projector mode's Step tab: the anatomy stacked left, the block gaps right (both above
        # the fold at 1280×720); the bars are bins of ⌈n/120⌉ blocks (max ĝ, summed P), so a
        # bar is ≥ 6 px wide for any n
        self.projector = False
        self.anatomy_p = self.blocks_p = None   # made after the page loads (_projector_ahead) or at the first switch
        self._built = {0}   # tabs whose views exist (the others are built when first shown)
        # a tab is built by one thread at a time: a notebook's periodic refresh and a tab click
        # from the page may both ask for it; the second waits for the whole tab
        self._tab_lock = threading.RLock()
        self._layout = self._build()
        self._apply_url()
        self.refresh(force=True)
        if periodic:
            self._cb = pn.state.add_periodic_callback(self._tick, period=REFRESH_MS)
        doc = pn.state.curdoc
        self._page_loaded = True
        if doc is not None and getattr(doc, "session_context", None) is not None:
            # served: free the worker and the solver when Bokeh destroys this browser session
            pn.state.on_session_destroyed(self._on_destroyed)
            # Changes made between the page's render and its websocket connection may never
            # reach the browser; views send only changed columns, so wait for the page, then
            # resend everything once.
            self._page_loaded = False
            pn.state.onload(self._on_page_load)

    # ------------------------------------------------------------------ building
    def _lesson_view(self, key):
        """A live view of a lesson page (made when the page is first shown), in projector sizes
        before it is shown when projector mode is on (see ``_ensure_tab``)."""
        view = self._new_lesson_view(key)
        if self.projector:
            self._apply_big(view.panel, True)
        return view

    def _new_lesson_view(self, key):
        if key == "anatomy":
            return AnatomyView(stacked=True, on_choice=self._choose)
        if key == "blocks":
            return BlockGapsView(height=300, prob_height=160)
        if key == "gap":
            return GapView("passes", height=320)
        if key == "primal_dual":
            return PrimalDualView(height=320)
        if key == "cache":
            return CacheView(height=210, stacked=True)
        if key == "toy":
            return _ToyAdapter(ToyView(self.toy, self.session, compact=True))
        if key == "path":
            return PathView(self.session.path, self.session, compact=True, name="lesson_path")
        if key == "simplex":   # a block's simplex (its own three-label problem)
            from .simplex import SimplexView
            return SimplexView(height=330)
        raise KeyError(key)

    def _lesson_page(self):
        if hasattr(self, "_lessons"):
            self._lessons.set_width(620 if self.projector else 480)
        if self.projector and hasattr(self, "_lessons"):
            self._apply_big(self._boxes[LESSONS], True)
        if LESSONS in self._built and hasattr(self, "_lessons") and self.tabs.active == LESSONS:
            next_tick(self.refresh, force=True)   # a lesson button's handler

    def _controls(self):
        s = self.session
        W = 138

        def w(pname, cls, **kw):
            kw.setdefault("width", W)
            kw.setdefault("css_classes", [f"gaplab-w-{pname}"])  # stable hooks for browser tests
            return cls.from_param(s.param[pname], **kw)

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
        wd = self.widgets
        _explain_invalid_lam(wd["lam"], s)
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
        self.gif_steps = pn.widgets.IntInput(value=20, start=2, end=MAX_FRAMES, width=70, margin=(5, 5),
                                             css_classes=["gaplab-gif-steps"],
                                             description="How many of the last block steps the GIF shows.")
        self.d_gif = pn.widgets.FileDownload(callback=self._gif, filename="gaplab_last_steps.gif",
                                             label="GIF of the last N steps", width=210, color="light",
                                             css_classes=["gaplab-export-gif"],
                                             description="Download an animation of the last N block steps "
                                                         "(anatomy and per-block gap bars), made on the server.")
        # projector bar's own copies (a widget is shown in one place): the sampler and the step kind
        # (bound to the same session parameters as the sidebar's: switching keeps α as set
        # there), exact gaps and the comparison, so the lecture never leaves projector mode
        self.p_widgets = {pname: w(pname, pn.widgets.Select, width=150, css_classes=[f"gaplab-p-{pname}"])
                          for pname in ("sampling", "step_kind") if pname in s.param}
        self.b_exact_p = B(label="Exact gaps", width=130, description=TOOLTIPS["exact"],
                           css_classes=["gaplab-p-exact"])
        self.b_compare_p = B(label="Add to comparison", width=190, description=TOOLTIPS["compare"],
                             css_classes=["gaplab-p-compare"])
        for b, fn in [(self.b_step, self.on_step), (self.b_step_n, self.on_step_n),
                      (self.b_run, self.on_run), (self.b_stop, self.on_stop), (self.b_reset, self.on_reset),
                      (self.b_back, self.on_back),
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
        placed = [n for row in _LAYOUT for n in row]
        rest = [n for n in wd if n not in placed and n not in ("n_steps", "speed", "keep_alpha")]   # problem options, new settings
        rows = [pn.Row(*(wd[n] for n in row if n in wd)) for row in _LAYOUT[:1]] + [self.missing]
        rows += [pn.Row(*(wd[n] for n in rest[k:k + 2])) for k in range(0, len(rest), 2)]
        rows += [pn.Row(*(wd[n] for n in row if n in wd)) for row in _LAYOUT[1:]]
        self.settings_box = pn.Column(pn.pane.HTML("<b>Settings</b>", margin=(5, 10, 0, 10)), *rows,
                                      # an <hr> pane, not pn.layout.Divider: Divider's model skips Panel's
                                      # stylesheet patching, and in a session the server re-creates
                                      # (page slower to connect than the unused-session lifetime) its
                                      # CSS link stays on cdn.holoviz.org (fails offline)
                                      pn.pane.HTML("<hr style='border:0;border-top:1px solid #ddd;margin:0'>",
                                                   sizing_mode="stretch_width", margin=(5, 10)))
        self._speed_note = pn.pane.HTML(
            "<span style='font-size:11.5px;color:#666'>Pause keeps the run; Stop ends it "
            "(the next Run starts anew)</span>", width=150, margin=(18, 5, 0, 0))
        self.run_box = pn.Column(*self._run_rows())
        return pn.Column(self.settings_box, self.run_box, self.alert, width=330)

    def _run_rows(self):
        wd = self.widgets
        return [pn.Row(self.b_step, self.b_step_n, wd["n_steps"]),
                pn.Row(self.b_run, self.b_stop, self.b_reset),
                pn.Row(self.b_back, wd["keep_alpha"]),
                pn.Row(wd["speed"], self._speed_note),
                pn.Row(self.b_exact),
                pn.Row(self.b_compare, self.b_clear),
                pn.Row(self.d_csv, self.d_json),
                pn.Row(self.d_gif, self.gif_steps)]

    @property
    def s(self):
        return self.session

    def _gif(self):
        """The GIF of the last N steps (gaplab.app.animate); an empty file and a warning when
        there is no step to show."""
        try:
            return last_steps_gif(self.session, steps=int(self.gif_steps.value or 20))
        except ValueError as exc:
            self.session.notify(f"GIF: {exc}", "warning")
            return io.BytesIO(b"")

    def _sync_visibility(self):
        s, wd = self.session, self.widgets
        for name, widget in wd.items():
            widget.visible = (s.param[name].precedence or 0) >= 0

    def _projector_views(self):
        """Projector mode's Step tab views (made once, sized for projector mode, drawn with the
        current snapshot so that they come to the page with their data: a view drawn after it
        joins the page showed a blank anatomy and empty −1…1 plots for seconds)."""
        if self.anatomy_p is None:
            a = AnatomyView(stacked=True, compact=True, on_choice=self._choose)
            # the narration right under the input and the corners (above the fold at 1280×720),
            # the table of numbers after it
            a.panel.objects = [a.picker, a.word, a.sentence, a.table]
            # the bar of run buttons and the one of mid-run switches take two rows: shorter gap
            # bars keep the sampling plot above the fold at 1280×720
            blocks = BlockGapsView(height=188, prob_height=145, name="block_gaps_projector",
                                   max_bars=PROJECTOR_BARS)
            blocks.info.height = 82
            designed_for_projector(a.word, a.sentence, a.table, blocks.info)
            for view in (a, blocks):   # sized before they are shown (see _ensure_tab)
                self._apply_big(view.panel, True)
            self.anatomy_p, self.blocks_p = a, blocks
        snap = self._frame.snap if self._frame.snap is not None else self.session.snapshot
        for view in (self.anatomy_p, self.blocks_p):
            view.update(snap, force=True)
        return self.anatomy_p, self.blocks_p

    def set_projector(self, on: bool):
        """Projector mode: text and controls ≥ 18 px, no settings sidebar (the run buttons move
        to a bar above the tabs), the Step tab laid out for 1280×720 with the sampling plot above
        the fold, per-block bars binned to stay ≥ 6 px wide. One message to the page: sizes and
        stylesheets change, views already made are reused (none is rebuilt)."""
        on = bool(on)
        if on == self.projector:
            return
        with hold():
            self._set_projector(on)

    def _set_projector(self, on: bool):
        self.projector = on
        if on:
            self._projector_views()
        if self.w_projector.value != on:
            self.w_projector.value = on
        wd = self.widgets
        # first row: the run buttons and the projector toggle (the header is hidden); second row:
        # the speed and what a lecture switches mid-run (the sampler, the step kind), exact gaps
        # and the comparison
        bar = [self.b_back, self.b_step, self.b_step_n, wd["n_steps"], self.b_run, self.b_stop, self.b_reset,
               pn.Spacer(sizing_mode="stretch_width"), self.w_projector]
        bar2 = [wd["speed"]] + list(self.p_widgets.values()) + [pn.Column(pn.Spacer(height=20), pn.Row(
            self.b_exact_p, self.b_compare_p, margin=0), margin=0)]
        # the normal views are sized while out of the page (sizes first, then the layout; the
        # projector views stay in projector sizes)
        if on:
            self._sizes(on)
            self.header.objects = [self._title, self.subtitle]
            rows = pn.Column(pn.Row(*bar, margin=0, sizing_mode="stretch_width"), pn.Row(*bar2, margin=0),
                             margin=0, sizing_mode="stretch_width")
            self._apply_big(rows, True)   # the bar's own widgets (not in the layout until now)
            self.run_box.objects = []
            self.topbar.objects = [rows]
            self._step_tab.objects = [pn.Row(self.anatomy_p.panel, self.blocks_p.panel, sizing_mode="stretch_width")]
        else:
            self.topbar.objects = []
            self.header.objects = [self._title, self.subtitle, self.w_projector]
            self.run_box.objects = self._run_rows()
            self._step_tab.objects = self._step_objects()
            self._sizes(on)
        self.topbar.visible = on
        self.header.visible = not on
        self.sidebar.visible = not on
        self.subtitle.visible = not on
        if hasattr(self, "_lessons"):
            self._lessons.set_width(620 if on else 480)
        self._kkey = None   # the compile banner in this mode's wording
        self.refresh(force=True)

    def _sizes(self, on: bool):
        self._apply_big(self._layout, on)
        for extra in (self.anatomy, self._blocks, self.sidebar):
            if extra is not None:
                self._apply_big(extra.panel if hasattr(extra, "panel") else extra, on)

    @staticmethod
    def _apply_big(layout, on: bool):
        """Projector sizes on or off for every widget, figure and text pane in ``layout``
        (:func:`gaplab.app.styles.projector_sizes`)."""
        projector_sizes(layout, on)
        fig_fonts(layout, on)

    def _build(self):
        self.subtitle = pn.pane.HTML(
            "<span style='font-size:13px;color:#dfe8f0'>Block-coordinate Frank-Wolfe for structured "
            "SVMs — gap sampling, pairwise &amp; away steps, caching (Osokin et al., ICML 2016)</span>",
            margin=(12, 10, 0, 0), sizing_mode="stretch_width", min_width=200)
        self.w_projector = pn.widgets.Toggle(label="Projector mode", value=False, width=170, height=36,
                                             margin=(8, 10), stylesheets=[".bk-btn {font-size: 16px;}"],
                                             css_classes=["gaplab-projector-toggle"])
        self.w_projector.param.watch(handler(lambda e: self.set_projector(e.new)), "value")
        title = pn.pane.HTML("<span style='font-size:20px;font-weight:600;color:white'>gaplab · Minding the gaps</span>",
                             margin=(8, 14))
        self.keys = KeyboardShortcuts(width=0, height=0, margin=0)
        self.keys.param.watch(lambda e: self.on_key(KeyboardShortcuts.action_of(e.new)), "press")
        # a narrow output area (JupyterLab with its file browser open): the subtitle wraps, the
        # header's items go onto a second row rather than past the right edge
        header = pn.Row(title, self.subtitle, self.w_projector,
                        styles={"background": "#1f3b57", "border-radius": "4px"},
                        sizing_mode="stretch_width", margin=(5, 10), stylesheets=[WRAP_CSS])
        # projector mode hides the header (its toggle joins the bar of run buttons: 60 px more
        # for the Step tab at 1280×720); the keys stay outside it, always on the page
        self.header, self._title = header, title
        self.topbar = pn.Row(visible=False, sizing_mode="stretch_width", css_classes=["gaplab-topbar"])
        step_tab = pn.Column(*self._step_objects(), sizing_mode="stretch_width")
        self._step_tab = step_tab
        # a tab's box no wider than the tabs (its minimum is its contents', which may wrap)
        self._boxes = [step_tab] + [pn.Column(sizing_mode="stretch_width", stylesheets=[_FIT_CSS])
                                    for _ in self.TAB_NAMES[1:]]
        self.tabs = pn.Tabs(*zip(self.TAB_NAMES, self._boxes), dynamic=True, sizing_mode="stretch_width",
                            stylesheets=[TABS_CSS])
        self.tabs.param.watch(handler(self._on_tab), "active")
        self.banner = pn.pane.HTML("", visible=False, sizing_mode="stretch_width", margin=(0, 10),
                                   css_classes=["gaplab-compiling"])
        main = pn.Column(self.banner, self.topbar, self.status.panel, self.tabs, sizing_mode="stretch_width",
                         min_width=MAIN_MIN_WIDTH)
        self.sidebar = self._controls()
        # narrower than the sidebar and MAIN_MIN_WIDTH: the tabs go below the settings
        main.styles = {"flex": "1 1 0"}
        return pn.Column(self.keys, header, pn.FlexBox(self.sidebar, main, flex_wrap="wrap", align_items="flex-start",
                                            sizing_mode="stretch_width"),
                         sizing_mode="stretch_width")

    def __panel__(self):
        return self._layout

    @staticmethod
    def _new_blocks():
        return BlockGapsView(height=290, prob_height=150, name="block_gaps")

    @property
    def blocks(self) -> BlockGapsView:
        """The Step tab's per-block gap plots (made on first use, see ``__init__``)."""
        if self._blocks is None:
            self._blocks = self._new_blocks()
            if self.projector:
                self._apply_big(self._blocks.panel, True)
            else:
                self._step_tab.objects = self._step_objects()
        return self._blocks

    def _step_objects(self):
        """The Step tab's contents in normal mode."""
        if self._blocks is None:
            return [self.anatomy.panel, self._blocks_spacer]
        return [self.anatomy.panel, self._blocks.panel]

    TAB_NAMES = ("Step", "Convergence", "Cache & active sets", "Regularization path", "Toy example", "Lessons",
                 "Sweeps", "Race")

    def _on_tab(self, event):
        new = event.new not in self._built
        self._ensure_tab(event.new)   # a new tab's views come to the page drawn (_build_tab)
        if self.projector:
            self._apply_big(self._boxes[event.new], True)
        # a tab shown again is redrawn in full (the page may hold older columns); a new one
        # only if a newer snapshot came meanwhile
        self.refresh(force=not new)

    def _ensure_tab(self, tab: int):
        """Create a tab's views the first time it is shown (a faster first page). Another thread
        asking meanwhile waits for the whole tab; a build that raised is tried again next time."""
        with self._tab_lock:
            if tab in self._built:   # built, or being built further up this thread's stack
                return
            self._built.add(tab)
            try:
                self._build_tab(tab)
            except BaseException:
                self._built.discard(tab)
                raise

    def _build_tab(self, tab: int):
        if tab == CONVERGENCE:
            self._gap_passes = GapView("passes", height=320, name="gap_passes")
            self._gap_time = GapView("time", height=320)
            self._primal_dual = PrimalDualView(height=300)
            self._test_error = TestErrorView(height=300)
            # runs at different λ on one gap axis: relative gaps on request (default: the gap)
            self.w_normalise = pn.widgets.Checkbox(label="normalised (gap / primal)", value=False,
                                                   css_classes=["gaplab-w-normalise"], margin=(5, 10))
            self.w_normalise.param.watch(handler(lambda e: self.set_normalised(e.new)), "value")
            objs = [
                self.w_normalise,
                pn.Row(self._gap_passes.panel, self._gap_time.panel, sizing_mode="stretch_width"),
                pn.Row(self._primal_dual.panel, self._test_error.panel, sizing_mode="stretch_width")]
        elif tab == CACHE:
            self._cache = CacheView(height=290)
            objs = [self._cache.panel]
        elif tab == PATH:
            self._path_view = PathView(self.session.path, self.session, name="path")
            objs = [self._path_view.panel]
        elif tab == TOY:
            self._toy_view = ToyView(self.toy, self.session)
            objs = [self._toy_view.panel]
        elif tab == LESSONS:
            self._lessons = LessonPanel(self.session, self._lesson_view, on_page=self._lesson_page)
            objs = [self._lessons.panel]
        elif tab == SWEEPS:  # a stored sweep's figures (gaplab.app.sweeps_tab)
            from .sweeps_tab import SweepsView
            self._sweeps_view = SweepsView()
            objs = [self._sweeps_view.panel]
        elif tab == RACE:  # uniform vs gap sampling in lockstep (gaplab.app.race)
            from .race import RaceView
            self._race_view = RaceView()
            objs = [self._race_view.panel]
        if self.projector:
            # projector sizes before the views are shown: a stylesheet set on a model in the
            # tick that creates it did not reach the page
            for obj in objs:
                self._apply_big(obj, True)
        # the new views draw the snapshot on screen before they join the page, so the message
        # that adds their figures carries the data. Drawn after, the data came in a second
        # message: Panel sends the new figures when ``objects`` is set, as they are then
        # (empty), and on a loaded machine the page showed them blank for seconds
        snap = self._frame.snap if self._frame.snap is not None else self.session.snapshot
        for view in self._views_of(tab):
            view.update(snap, force=True)
        self._boxes[tab].objects = objs

    def set_normalised(self, on: bool):
        """Convergence tab: the gap plots draw gap / primal (``on``) or the duality gap."""
        for v in (self.gap_passes, self.gap_time):
            v.set_normalised(on)
        if self.w_normalise.value != bool(on):
            self.w_normalise.value = bool(on)
        self.refresh(force=True)

    def _tab_attr(self, tab, name):
        self._ensure_tab(tab)
        return getattr(self, name)

    gap_passes = property(lambda self: self._tab_attr(CONVERGENCE, "_gap_passes"))
    gap_time = property(lambda self: self._tab_attr(CONVERGENCE, "_gap_time"))
    primal_dual = property(lambda self: self._tab_attr(CONVERGENCE, "_primal_dual"))
    test_error = property(lambda self: self._tab_attr(CONVERGENCE, "_test_error"))
    cache = property(lambda self: self._tab_attr(CACHE, "_cache"))
    path_view = property(lambda self: self._tab_attr(PATH, "_path_view"))
    toy_view = property(lambda self: self._tab_attr(TOY, "_toy_view"))
    lessons = property(lambda self: self._tab_attr(LESSONS, "_lessons"))
    sweeps_view = property(lambda self: self._tab_attr(SWEEPS, "_sweeps_view"))
    race_view = property(lambda self: self._tab_attr(RACE, "_race_view"))

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
        self.session.step()
        self.refresh()

    def on_step_n(self):
        self.session.step_n()
        self.refresh()

    def on_run(self):
        self.session.toggle_run()
        self.refresh()

    def on_stop(self):
        self.session.stop()
        self.refresh()

    def on_reset(self):
        self.session.reset()
        self.refresh()

    # ------------------------------------------------------------------ bookmarkable states
    def open_url(self, query) -> urlstate.UrlRequest:
        """Show the state a URL query describes (``"?dataset=toy&steps=20&tab=lessons&lesson=3"``):
        settings, seed, step count, tab and lesson page; bad values are ignored with an escaped
        notice. Blocks until the dataset is loaded and the steps are taken."""
        req = urlstate.parse_query(query, self.session)
        settings = {k: v for k, v in req.settings.items() if k != "lam" and getattr(self.session, k) != v}
        if settings:
            self.session.param.update(**settings)
        self.session.wait_idle(120)
        if self.session.solver is not None:
            self.session.reset()   # a URL describes a run from α⁰ (not the current α continued)
        self._url_pending = req if not (req.empty and not req.notices) else None
        self._apply_url()
        self.refresh(force=True)
        return req

    def _apply_url(self):
        """Apply a pending URL request once the session's dataset is loaded (λ, steps, tab,
        lesson page), then show its notices (escaped by urlstate) after what the steps said."""
        req = self._url_pending
        if req is None or self.session.status == "loading" or self.session.running:
            return
        self._url_pending = None
        urlstate.restore(self.session, urlstate.UrlRequest(settings=req.settings, steps=req.steps))
        tab = req.tab if req.tab is not None else (LESSONS if req.lesson is not None else None)
        if tab is not None:
            self.tabs.active = tab
        if req.lesson is not None:
            self.lessons.go(req.lesson - 1)
        if req.race:
            self.race_view.configure(**req.race)
        for text in req.notices:
            self.session.notify(text, "warning")

    def url_query(self) -> dict:
        """The URL query of what the page shows now (:func:`gaplab.app.urlstate.query_of`)."""
        lesson = self._lessons.page + 1 if LESSONS in self._built and hasattr(self, "_lessons") else None
        race = self._race_view.settings() if RACE in self._built and hasattr(self, "_race_view") else None
        return urlstate.query_of(self.session, tab=self.tabs.active, lesson=lesson, race=race)

    def _write_url(self):
        """Served: keep the page's URL (``pn.state.location``) on the state shown, at most once a
        second and never while a run goes (each change is a browser history entry). The
        browser reports the URL it shows (``href``); a write made before the page was listening
        is made again until the two agree."""
        loc = self._loc
        if self._url_pending is not None or loc is None or self.session.running:
            return
        now = time.perf_counter()
        if now - self._url_written[1] < 1.0:
            return
        q = urlstate.query_string(self.url_query())
        shown = urlsplit(loc.href or "").query
        if ("?" + shown if shown else "") == q:
            return
        self._url_written = (q, now)
        if loc.search != q:
            loc.search = q
        else:
            loc.param.trigger("search")

    def on_back(self):
        self.session.back()
        self.refresh()

    def on_key(self, action: str | None):
        """A presenter key (gaplab.app.keys): the same as its button; solver keys do nothing
        while their buttons are disabled (loading, compiling)."""
        if action == "projector":
            self.set_projector(not self.projector)
            return
        fn = {"step": self.on_step, "step_n": self.on_step_n, "back": self.on_back, "run": self.on_run}.get(action)
        if fn is None or self.session.status == "loading":
            return
        if not kernels.state().ready and not (action == "step" and self.session.reference_can_step()):
            return
        self._timed(fn)

    def on_exact(self):
        self.session.compute_exact_gaps()
        self.refresh()

    def on_compare(self):
        self.session.add_to_comparison()
        self.refresh()

    def on_clear(self):
        self.session.clear_comparison()
        self.refresh()

    # ------------------------------------------------------------------ refresh
    def visible_views(self):
        """The views drawn in the active tab (others are brought up to date when shown)."""
        tab = self.tabs.active
        if tab == STEP:
            if self.projector:
                return [self.anatomy_p, self.blocks_p]
            return [self.anatomy] if self._blocks is None else [self.anatomy, self._blocks]
        return self._views_of(tab)

    def _views_of(self, tab: int):
        """The views drawn in tab ``tab`` other than the Step tab (built if need be)."""
        if tab == CONVERGENCE:
            return [self.gap_passes, self.gap_time, self.primal_dual, self.test_error]
        if tab == CACHE:
            return [self.cache]
        if tab == PATH:
            return [self.path_view]
        if tab == TOY:
            return [_ToyAdapter(self.toy_view)]
        if tab == SWEEPS:
            return []
        if tab == RACE:
            return [self.race_view]
        return self.lessons.views()

    def _on_page_load(self):
        self._page_loaded = True
        kernels.page_loaded()
        self.blocks   # noqa: B018 - made now (see __init__), inside this session's document
        self.refresh(force=True)
        # projector mode's views made ahead (not shown): the switch then only changes sizes
        next_tick(self._projector_ahead)

    def _projector_ahead(self):
        if not self._closed and self.anatomy_p is None:
            self._projector_views()

    def _notebook_comms_open(self) -> bool:
        """False while a notebook display of the app still waits for the page to open its comm.

        In Jupyter, Panel sends model changes over a comm that the page opens once it has
        rendered the cell's output; changes made before that are queued, each retried on its
        own timer, and so may reach the page out of order: a patch that names a stylesheet or
        a glyph defined in a later patch fails in BokehJS ("reference ... isn't known") and the
        page never shows the change (the app stayed on "loading"). So the app changes nothing
        until every display's comm is open. Served pages have no comm: always True."""
        from panel.io.state import state
        for ref in list(self._layout._models):
            view = state._views.get(ref)
            comm = view[3] if view is not None else None
            if comm is not None and getattr(comm, "_comm", True) is None:
                return False
        return True

    def _route_page_messages(self) -> None:
        """In a notebook, handle the page's messages to this app (clicks, values, tab changes)
        in the thread of the kernel's event loop, where the periodic refresh runs.

        JupyterLab 4 with ipykernel 7 delivers comm messages in a subshell thread, so a Step's
        handler drew the views there while the periodic refresh drew them in the main thread.
        Each Bokeh message goes over the comm as several comm messages (header, metadata,
        content, then each buffer); sent from two threads at once their parts interleaved, and
        BokehJS dropped the patches it could not assemble ("Expected text fragment but received
        binary fragment", "buffer for id=... not found"): the page kept the status line or the
        anatomy of the step before, and a paused solver sends nothing newer. With every change
        of the app's models made in one thread the parts stay in order. A message that arrives
        while a cell runs is handled after the cell, as the periodic refresh is."""
        if self._loop is None:
            return
        # each display of the layout: (the comm Panel sends on, the comm the page sends on)
        for _send, comm in list(getattr(self._layout, "_comms", {}).values()):
            inner = getattr(comm, "_on_msg", None)
            if inner is None or getattr(inner, "_gaplab_routed", False):
                continue

            def on_msg(msg, _inner=inner, _loop=self._loop, _thread=self._loop_thread):
                if threading.get_ident() == _thread or _loop.is_closed():
                    _inner(msg)
                else:
                    _loop.call_soon_threadsafe(_inner, msg)
            on_msg._gaplab_routed = True
            comm._on_msg = on_msg

    def _tick(self):
        if self._closed:
            return
        self._route_page_messages()
        if not self._notebook_comms_open():
            self._comm_waited = True
            return
        force = False
        if self._comm_waited:   # the page has just connected: send the state it has not seen
            self._comm_waited = False
            force = True
        if not self._page_loaded:
            # Served: until the page says it has loaded, resend everything once a second
            # (changes made before its websocket connected may be lost).
            now = time.perf_counter()
            if now - self._unloaded_force < 1.0:
                return
            self._unloaded_force = now
            force = True
            if self._blocks is None and now - self._t_made > 5.0:   # no onload: make them anyway
                self.blocks  # noqa: B018
        try:
            self._apply_url()
            self.refresh(force=force)
            self._write_url()
        except Exception as exc:  # a drawing bug must not kill the periodic callback
            self.session.notify(f"Display error: {type(exc).__name__}: {exc}", "error")

    def refresh(self, force: bool = False):
        """Pull the latest snapshot and update the visible views in place."""
        if self._closed:
            return
        snap = self.session.snapshot
        running = snap.status == "running"
        label = "❚❚ Pause" if running else "▶ Run"
        if self.b_run.label != label:
            self.b_run.label = label
        ks = kernels.state()
        if ks.ready and self.session.reference_stepping:
            self.session.hand_over()   # the kernels are ready: the fast solver replays the Steps
            snap = self.session.snapshot
        busy = snap.status == "loading" or not ks.ready
        # while the kernels compile, a Step may be answered by the reference solver (refstep)
        step_ok = snap.status != "loading" and (ks.ready or self.session.reference_can_step())
        for b in (self.b_step, self.b_step_n, self.b_run, self.b_exact, self.b_reset, self.b_back):
            off = (not step_ok) if b is self.b_step else (
                busy or (b is self.b_exact and not ks.exact_gaps_ready))   # (runs in this thread)
            if b.disabled != off:
                b.disabled = off
        reference = self.session.reference_stepping
        kkey = startup.progress_key(ks) + (reference,)
        if kkey != self._kkey:
            self._kkey = kkey
            self.status.compiling = None if ks.ready else ks
            self._draw_banner(ks, reference)
            force_status = True
        else:
            force_status = False
        with hold():  # one websocket message per refresh: all views change together
            # one frame: every visible view and the status line draw the same snapshot (while a
            # run goes, at the pace of the slowest visible view: one set of numbers on screen)
            self._frame.draw(snap, self.visible_views(), self.status, running=running,
                             force=force, force_status=force_status)
            self._show_messages()

    def _draw_banner(self, ks, reference=False):
        html = startup.banner_html(ks, reference=reference, projector=self.projector)
        self.banner.object = html
        self.banner.visible = bool(html)

    def _show_messages(self):
        msgs = self.session.messages(self._msg_seen)
        if not msgs:
            return
        self._msg_seen += len(msgs)
        level, text = msgs[-1]
        self.alert.alert_type = {"error": "danger", "warning": "warning", "success": "success"}.get(level, "info")
        # messages are text (often an exception's message naming a path or a file's content):
        # the alert is a Markdown pane, the toasts are HTML
        self.alert.object = md_esc(text)
        self.alert.visible = True
        notes = _notifications()
        if notes is not None:
            for level, text in msgs:
                try:
                    getattr(notes, level if level in ("info", "success", "warning", "error") else "info")(
                        esc(text), duration=4000 if level != "error" else 8000)
                except Exception:  # pragma: no cover - no notification area in this context
                    break

    # ------------------------------------------------------------------ lifetime
    def _on_destroyed(self, session_context):
        self.close()
        # a closed page's Bokeh document, views and solver form reference cycles: collect them
        # now, not at some later allocation, so a long-running server's memory follows its
        # open pages
        gc.collect()

    def close(self):
        """Stop the periodic callback and the worker; drop the solver (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._cb is not None:
            try:
                self._cb.stop()
            except Exception:  # pragma: no cover
                pass
        self.session.close()
        self.toy.close()


class _ToyAdapter:
    """Lets the toy view be refreshed like the snapshot views."""

    def __init__(self, view):
        self.view = view
        self.panel = view.panel

    def update(self, snap, force=False):
        return self.view.update(force=force)


def _running_loop():
    """The running asyncio event loop of this thread and the thread's id, or (None, None)."""
    import asyncio
    try:
        return asyncio.get_running_loop(), threading.get_ident()
    except RuntimeError:
        return None, None


def _explain_invalid_lam(widget, session) -> None:
    """Say why a λ typed into the box is refused. The widget's link to the session raises on a
    value outside the parameter's bounds and the box reverts silently; the link is wrapped so that
    the refusal is reported as an error message (the box still reverts)."""
    lo, hi = session.param["lam"].bounds
    links = [wt for wt in widget.param.watchers.get("value", {}).get("value", [])
             if getattr(wt.fn, "__name__", "") == "link_widget"]  # panel's widget -> parameter link
    for wt in links:
        def safe(*args, _fn=wt.fn, **kwargs):
            try:
                return _fn(*args, **kwargs)
            except (ValueError, TypeError):
                v = args[0].new if args else None
                session.notify(f"λ must be a number in [{lo:g}, {hi:g}]; got {v!r}. Kept λ = {session.lam:g}.",
                               "error")
        widget.param.unwatch(wt)
        widget.param.watch(safe, wt.parameter_names, onlychanged=wt.onlychanged, queued=wt.queued,
                           precedence=max(wt.precedence, 0))


def build_app(**session_params) -> GapLabApp:
    """A new, independent app (default: OCR-small, BCFW + gap sampling, λ = 0.01).

    ``periodic`` (default True) pulls snapshots 10 times per second; ``warm`` (default False;
    ``gaplab app`` and ``app/panel_app.py`` pass True) compiles the solver kernels in the
    background first (buttons disabled meanwhile). Other keywords are :class:`Session` settings."""
    periodic = session_params.pop("periodic", True)
    warm = session_params.pop("warm", False)   # the served entry points pass True
    url = None
    loc = pn.state.location if _served() else None
    if loc is not None and loc.search:   # a bookmarked state: its settings make the session
        url = urlstate.parse_query(loc.search, Session)
        session_params = {**{k: v for k, v in url.settings.items() if k != "lam"}, **session_params}
    return GapLabApp(Session(**session_params), periodic=periodic, warm=warm, url=url)
