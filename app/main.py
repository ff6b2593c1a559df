"""The gaplab app: ``build_app()`` returns one independent app (its own :class:`Session`,
solver, worker thread and plots) that displays in ``panel serve`` and in Jupyter alike.

Layout (made for a 1400×900 projector): a header with the run's status line, a sidebar with
the settings (widgets generated from the Session's param parameters) and the buttons, and tabs:
Step (anatomy of the last step, per-block gaps), Convergence, Cache & active sets, Regularization
path, Toy example and Lessons.

This module holds the app object with its tabs and header; the app's other concerns are mixins
of :class:`GapLabApp` in their own modules: ``controls`` (the sidebar and the buttons' actions),
``projector`` (projector mode and its switch), ``page_url`` (a page's URL state) and ``refresh``
(the periodic tick, drawing the snapshot, messages, a notebook page's messages). Their names stay importable from here.
"""
from __future__ import annotations

import gc

import collections
import io
import threading
import time

import panel as pn
from panel.io import hold

from . import classroom, kernels
from .animate import across_switch_gif, across_switch_span, gif_span, last_steps_gif
from .export import figure_export_buttons
from .keys import KeyboardShortcuts
from .widget_guard import guard_links
from . import urlstate
from .lessons import LESSONS as LESSON_PAGES, LessonPanel  # noqa: F401 (LESSON_PAGES: importable from here)
from .path_tab import PathView
from .ticks import handler, next_tick
from .session import Session
from .toy_tab import ToyLab, ToyView
from .views.frame import Frame
from .styles import MODE_VARS, NORMAL_ONLY_CSS, PROJECTOR_ONLY_CSS, TABS_CSS, WRAP_CSS, both_modes_text_css
from .views import (AnatomyView, BlockGapsView, CacheView, GapView, PrimalDualView, StatusView,
                    TestErrorView)
# the app's concerns (each a mixin of GapLabApp) and the names they define, kept importable
# from here
from .controls import (_LAYOUT, _WIDGET_CLASS, _WIDGET_KW, LESSON_OF, LESSON_TITLES,  # noqa: F401
                       SETTING_NOTES, TOOLTIPS, ControlsMixin, _missing_html)  # noqa: F401
from .page_url import UrlMixin
from .projector import PROJECTOR_BARS, ProjectorMixin
from .refresh import (RefreshMixin, _extension, _notifications, _pin_local_resources,  # noqa: F401
                      _running_loop, _served)  # noqa: F401
from .tabs import CACHE, CONVERGENCE, LESSONS, PATH, RACE, STEP, SWEEPS, TOY

__all__ = ["GapLabApp", "build_app", "REFRESH_MS"]


REFRESH_MS = 100   # the UI pulls a snapshot at most 10 times per second; while a run goes, a
#                    frame (every visible view and the status line drawing one snapshot) comes at
#                    the pace of the slowest visible view (its RUNNING_MIN_INTERVAL_S; views/frame.py)


#: a stretched column no wider than its container: Bokeh gives it its children's widths as a
#: minimum, and rows that wrap (the path tab's controls) would then never wrap
_FIT_CSS = ":host { min-width: 0 !important; }"

MAIN_MIN_WIDTH = 800   # px: the tabs' column is never narrower (it goes below the sidebar); the
#                        per-block plots and their colour bar and toolbar need about 780 px
ANATOMY_INPUT_MIN_WIDTH = 360   # px: the anatomy's input and corners; the table goes below them

BLOCKS_HEIGHT = 560   # px taken by the Step tab's per-block gap plots (their place while unmade)


class GapLabApp(ControlsMixin, UrlMixin, RefreshMixin, ProjectorMixin, pn.viewable.Viewer):
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
                 url: urlstate.UrlRequest | None = None, limits: classroom.SessionLimits | None = None,
                 student_url: str | None = None, **params):
        super().__init__(**params)
        # what the server lets this session do (gaplab.app.classroom; default: everything)
        self.limits = limits if limits is not None else classroom.ClassroomPolicy().limits(None)
        self._student_url = student_url if self.limits.lecturer else None
        # a bookmarked state (gaplab.app.urlstate): applied once the dataset is loaded; until then
        # the page's URL is left as opened
        self._url_pending = url if url is not None and not (url.empty and not url.notices) else None
        self._url_written = ("", 0.0)
        self._frame = Frame(ack=True)   # the snapshot on screen (gaplab.app.views.frame)
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
        classroom.guard_session(self.session, self.limits)
        self.toy = ToyLab()
        self._msg_seen = 0
        self._persistent = set()   # message texts whose toast stays until dismissed (refused URL values)
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
        # projector mode's Step tab views and bar: made after the page loads (_projector_ahead)
        # or at the first switch (gaplab.app.projector)
        self._projector_init()
        self._built = {0}   # tabs whose views exist (the others are built when first shown)
        # a tab is built by one thread at a time: a notebook's periodic refresh and a tab click
        # from the page may both ask for it; the second waits for the whole tab
        self._tab_lock = threading.RLock()
        self._layout = self._build()
        self._apply_url()
        self.refresh(force=True)
        if periodic:
            self._cb = pn.state.add_periodic_callback(self._tick, period=self.limits.refresh_ms or REFRESH_MS)
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
            return _ToyAdapter(self._guarded(self.toy, ToyView(self.toy, self.session, compact=True)))
        if key == "path":
            view = self._guarded(self.session.path, PathView(self.session.path, self.session, compact=True,
                                                             name="lesson_path"))
            self._guard_paths(view, "open_store", "Open path store")
            return view
        if key == "simplex":   # a block's simplex (its own three-label problem)
            from .simplex import SimplexView
            return SimplexView(height=330)
        raise KeyError(key)

    def _guarded(self, lab, view):
        """``view`` with its settings' widgets guarded (a refused value is said; widget_guard)."""
        guard_links(lab, getattr(view, "widgets", {}), self.session.notify)
        return view

    def _lesson_page(self):
        if hasattr(self, "_lessons"):
            self._lessons.set_width(620 if self.projector else 480)
        self._lesson_sizes()
        if LESSONS in self._built and hasattr(self, "_lessons") and self.tabs.active == LESSONS:
            next_tick(self.refresh, force=True)   # a lesson button's handler

    async def _gif(self):
        """The GIF of the last N steps (gaplab.app.animate), drawn in a worker thread (seconds of
        matplotlib: the server's event loop keeps answering), bins as the page shows them; a
        notice says why it has fewer frames than N and, when a setting switch cut it, the button
        "Make the GIF across the switch" shows. An empty file and a warning when there is no
        step to show or N (a value from the browser) is out of range, or a GIF is being made."""
        steps, snap = self.gif_steps.value, self.session.snapshot
        try:
            first, why = gif_span(snap, steps)
        except ValueError as exc:
            self.session.notify(f"GIF: {exc}", "warning")
            return io.BytesIO(b"")
        data = await self._gif_made(last_steps_gif, steps)
        if why and data.getvalue():
            try:
                across_switch_span(self.session, steps)
                offer = True
            except ValueError:
                offer = False
            self.d_gif_across.visible = offer
            self.session.notify(f"GIF: {snap.iteration - first} frames, not {steps}: {why}."
                                + (" Or click “Make the GIF across the switch”: it replays the steps before "
                                   "the switch too, marked in each frame's caption." if offer else ""), "info")
        return data

    async def _gif_across(self):
        """The GIF of the last N steps across the last setting switch (gaplab.app.animate), in a
        worker thread; a warning and an empty file when there is no such switch any more."""
        try:
            across_switch_span(self.session, self.gif_steps.value)
        except ValueError as exc:
            self.d_gif_across.visible = False
            self.session.notify(f"GIF across the switch: {exc}.", "warning")
            return io.BytesIO(b"")
        return await self._gif_made(across_switch_gif, self.gif_steps.value)

    async def _gif_made(self, make, steps) -> io.BytesIO:
        """``make(session, steps, max_bars=...)`` in a worker thread, one GIF at a time."""
        import asyncio
        if self._gif_busy:
            self.session.notify("GIF: one is being made already; click again when it has downloaded.", "warning")
            return io.BytesIO(b"")
        bars = PROJECTOR_BARS if self.projector else BlockGapsView.MAX_BARS
        self._gif_busy = True
        try:
            return await asyncio.to_thread(make, self.session, steps, max_bars=bars)
        except ValueError as exc:   # the run changed meanwhile (a reset): nothing to show
            self.session.notify(f"GIF: {exc}", "warning")
            return io.BytesIO(b"")
        finally:
            self._gif_busy = False

    def _sync_visibility(self):
        s, wd = self.session, self.widgets
        for name, widget in wd.items():
            widget.visible = (s.param[name].precedence or 0) >= 0

    def _build(self):
        self.subtitle = pn.pane.HTML(
            "<span style='font-size:13px;color:#dfe8f0'>Block-coordinate Frank-Wolfe for structured "
            "SVMs — gap sampling, pairwise &amp; away steps, caching (Osokin et al., ICML 2016)</span>",
            margin=(12, 10, 0, 0), sizing_mode="stretch_width", min_width=200)
        self.w_projector = pn.widgets.Toggle(label="Projector mode", value=False, width=170, height=36,
                                             margin=(8, 10), stylesheets=[".bk-btn {font-size: 16px;}"],
                                             css_classes=["gaplab-projector-toggle"])
        self.w_projector.param.watch(handler(lambda e: self.set_projector(e.new)), "value")
        self._projector_toggle_copy()
        title = pn.pane.HTML("<span style='font-size:20px;font-weight:600;color:white'>gaplab · Minding the gaps</span>",
                             margin=(8, 14))
        self.keys = KeyboardShortcuts(width=0, height=0, margin=0)
        self.keys.param.watch(lambda e: self.on_key(KeyboardShortcuts.action_of(e.new),
                                                    KeyboardShortcuts.count_of(e.new)), "press")
        self.keys.on_dropped = self._keys_dropped
        # a narrow output area (JupyterLab with its file browser open): the subtitle wraps, the
        # header's items go onto a second row rather than past the right edge
        self._header_extra = []   # classroom mode, the lecturer's page: the students' URL toggle
        self.qr_pane = None
        if self._student_url:   # the students' URL and its QR code (shown by the toggle)
            qr_toggle, self.qr_pane = classroom.qr_panel(self._student_url)
            self._header_extra = [qr_toggle]
        header = pn.Row(title, self.subtitle, *self._header_extra, self.w_projector,
                        styles={"background": "#1f3b57", "border-radius": "4px"},
                        sizing_mode="stretch_width", margin=(5, 10), stylesheets=[WRAP_CSS, NORMAL_ONLY_CSS])
        # projector mode hides the header (its toggle joins the bar of run buttons: 60 px more
        # for the Step tab at 1280×720); the keys stay outside it, always on the page
        self.header, self._title = header, title
        self.topbar = pn.Row(sizing_mode="stretch_width", css_classes=["gaplab-topbar"],
                             stylesheets=[PROJECTOR_ONLY_CSS])
        # the Step tab: the normal views, and projector mode's (hidden) once made
        self._step_normal = pn.Column(*self._step_objects(), sizing_mode="stretch_width", margin=0,
                                      stylesheets=[NORMAL_ONLY_CSS])
        step_tab = pn.Column(self._step_normal, sizing_mode="stretch_width")
        self._step_tab = step_tab
        # a tab's box no wider than the tabs (its minimum is its contents', which may wrap)
        self._boxes = [step_tab] + [pn.Column(sizing_mode="stretch_width", stylesheets=[_FIT_CSS])
                                    for _ in self.TAB_NAMES[1:]]
        self.tabs = pn.Tabs(*zip(self.TAB_NAMES, self._boxes), dynamic=True, sizing_mode="stretch_width",
                            stylesheets=[TABS_CSS])
        self.tabs.param.watch(handler(self._on_tab), "active")
        self.banner = pn.pane.HTML("", visible=False, sizing_mode="stretch_width", margin=(0, 10),
                                   css_classes=["gaplab-compiling"])
        main = pn.Column(*([self.qr_pane] if self.qr_pane is not None else []), self.banner, self.topbar,
                         self.status.panel, self.tabs, sizing_mode="stretch_width",
                         min_width=MAIN_MIN_WIDTH)
        self.sidebar = self._controls()
        self.sidebar.stylesheets = [*self.sidebar.stylesheets, NORMAL_ONLY_CSS]
        self.status.panel.stylesheets = [*self.status.panel.stylesheets, both_modes_text_css(13.5)]
        # narrower than the sidebar and MAIN_MIN_WIDTH: the tabs go below the settings
        main.styles = {"flex": "1 1 0"}
        # projector mode is a set of CSS variables on this root (gaplab.app.projector)
        return pn.Column(self.keys, self._frame.ack, header, pn.FlexBox(self.sidebar, main, flex_wrap="wrap", align_items="flex-start",
                                            sizing_mode="stretch_width"),
                         sizing_mode="stretch_width", styles=dict(MODE_VARS[False]))

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
            self._step_normal.objects = self._step_objects()
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
        self._size_tab(event.new)   # in this mode's sizes (restyled when shown)
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
            self._path_view = self._guarded(self.session.path, PathView(self.session.path, self.session, name="path"))
            self._guard_paths(self._path_view, "open_store", "Open path store")
            objs = [self._path_view.panel]
        elif tab == TOY:
            self._toy_view = self._guarded(self.toy, ToyView(self.toy, self.session))
            objs = [self._toy_view.panel]
        elif tab == LESSONS:
            self._lessons = LessonPanel(self.session, self._lesson_view, on_page=self._lesson_page)
            objs = [self._lessons.panel]
        elif tab == SWEEPS:  # a stored sweep's figures (gaplab.app.sweeps_tab)
            from .sweeps_tab import SweepsView
            self._sweeps_view = SweepsView(roots=self.session.typed_path_roots)
            self._guard_paths(self._sweeps_view, "load", "Load store")
            objs = [self._sweeps_view.panel]
        elif tab == RACE:  # uniform vs gap sampling in lockstep (gaplab.app.race)
            from .race import RaceView
            self._race_view = RaceView()
            self._race_view.set_projector(self.projector)
            objs = [self._race_view.panel]
        if self.projector:
            # projector sizes before the views are shown: a stylesheet set on a model in the
            # tick that creates it did not reach the page
            for obj in objs:
                self._apply_big(obj, True)
            self._tab_big[tab] = True
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
        # projector mode's views and bar made ahead, hidden in the page: the switch then only
        # shows them (gaplab.app.projector)
        next_tick(self._projector_ahead)

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


def build_app(**session_params) -> GapLabApp:
    """A new, independent app (default: OCR-small, BCFW + gap sampling, λ = 0.01).

    ``periodic`` (default True) pulls snapshots 10 times per second; ``warm`` (default False;
    ``gaplab app`` and ``app/panel_app.py`` pass True) compiles the solver kernels in the
    background first (buttons disabled meanwhile). Other keywords are :class:`Session` settings."""
    periodic = session_params.pop("periodic", True)
    warm = session_params.pop("warm", False)   # the served entry points pass True
    limits = session_params.pop("limits", None)   # gaplab.app.classroom (the server's policy)
    student_url = session_params.pop("student_url", None)
    url = None
    loc = pn.state.location if _served() else None
    if loc is not None and loc.search:   # a bookmarked state: its settings make the session
        url = urlstate.parse_query(loc.search, Session)
        refusal = limits.dataset_refusal(url.settings.get("dataset", "")) if limits is not None else None
        if refusal:
            url.settings.pop("dataset")
            url.notices.append(refusal)
        session_params = {**{k: v for k, v in url.settings.items() if k != "lam"}, **session_params}
    return GapLabApp(Session(**session_params), periodic=periodic, warm=warm, url=url, limits=limits,
                     student_url=student_url)
