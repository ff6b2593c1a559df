"""The gaplab app: ``build_app()`` returns one independent app (its own :class:`Session`,
solver, worker thread and plots) that displays in ``panel serve`` and in Jupyter alike.

Layout (made for a 1400×900 projector): a header with the run's status line, a sidebar with
the settings (widgets generated from the Session's param parameters) and the buttons, and tabs:
Step (anatomy of the last step, per-block gaps), Convergence, Cache & active sets, Regularization
path, Toy example and Lessons.
"""
from __future__ import annotations

import collections
import time

import panel as pn
import param
from panel.io import hold

from .lessons import LessonPanel
from .path_tab import PathView
from .session import Session
from .toy_tab import ToyLab, ToyView
from .views import (AnatomyView, BlockGapsView, CacheView, GapView, PrimalDualView, StatusView,
                    TestErrorView)

__all__ = ["GapLabApp", "build_app", "REFRESH_MS"]

# tab indices (in TAB_NAMES order)
STEP, CONVERGENCE, CACHE, PATH, TOY, LESSONS, SWEEPS = range(7)

REFRESH_MS = 100   # the UI pulls a snapshot at most 10 times per second; while a run goes the
#                    heavier views redraw less often (RUNNING_MIN_INTERVAL_S of each view)

#: widget class of a parameter type (the session's parameters are generated from the schema)
_WIDGET_CLASS = {param.Selector: pn.widgets.Select, param.Boolean: pn.widgets.Checkbox,
                 param.Integer: pn.widgets.IntInput, param.Number: pn.widgets.FloatInput}

#: looks of particular widgets (number formats, the checkbox's alignment with its neighbour)
_WIDGET_KW = {"lam": dict(format="0.[000000]"), "cache": dict(margin=(28, 10, 5, 10)),
              "cache_nu": dict(step=0.005, format="0.[00000]")}

#: sidebar rows of the known settings (pairs); problem options follow the first row, settings
#: not listed here get rows of their own after them
_LAYOUT = (("dataset", "lam"), ("sampling", "gap_power"), ("step_kind", "gap_check"),
           ("cache", "cache_size"), ("cache_factor", "cache_nu"), ("seed", "max_passes"))


def _extension():
    """Load Panel's extensions for this document (idempotent; called by every app)."""
    pn.extension("mathjax", notifications=True)


class GapLabApp(pn.viewable.Viewer):
    """One app instance = one session. ``close()`` stops the worker and frees the solver.

    Parameters
    ----------
    session : Session, optional
        An existing session to show (default: a new one on OCR-small, gap sampling, λ = 0.01).
    periodic : bool
        Pull snapshots with a periodic callback every ``REFRESH_MS`` (off in headless tests,
        which call :meth:`refresh` themselves).
    """

    def __init__(self, session: Session | None = None, *, periodic: bool = True, **params):
        super().__init__(**params)
        _extension()
        self.session = session if session is not None else Session()
        self.toy = ToyLab()
        self._msg_seen = 0
        self._closed = False
        self.action_ms = collections.deque(maxlen=200)
        self._drawn = {}
        self._cb = None
        # ---- views of the tabs
        self.status = StatusView()
        self.anatomy = AnatomyView()
        self.blocks = BlockGapsView(height=290, prob_height=150, name="block_gaps")
        self._built = {0}   # tabs whose views exist (the others are built when first shown)
        self._layout = self._build()
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
        if key == "anatomy":
            return AnatomyView(stacked=True)
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
        raise KeyError(key)

    def _lesson_page(self):
        if LESSONS in self._built and hasattr(self, "_lessons") and self.tabs.active == LESSONS:
            self.refresh(force=True)

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
        wd = self.widgets
        _explain_invalid_lam(wd["lam"], s)
        bw = 86
        self.b_step = pn.widgets.Button(label="Step", color="primary", width=bw)
        self.b_step_n = pn.widgets.Button(label="Step ×N", color="primary", width=bw)
        self.b_run = pn.widgets.Button(label="▶ Run", color="success", width=bw)
        self.b_stop = pn.widgets.Button(label="■ Stop", color="danger", width=bw)
        self.b_reset = pn.widgets.Button(label="↺ Reset", color="warning", width=bw)
        self.b_exact = pn.widgets.Button(label="Compute exact gaps (n oracle calls)", width=290)
        self.b_compare = pn.widgets.Button(label="Add run to comparison", width=190)
        self.b_clear = pn.widgets.Button(label="Clear", width=90)
        for b, fn in [(self.b_step, self.on_step), (self.b_step_n, self.on_step_n),
                      (self.b_run, self.on_run), (self.b_stop, self.on_stop), (self.b_reset, self.on_reset),
                      (self.b_exact, self.on_exact), (self.b_compare, self.on_compare),
                      (self.b_clear, self.on_clear)]:
            b.on_click(lambda e, fn=fn: self._timed(fn))
        self.alert = pn.pane.Alert("", alert_type="info", visible=False, width=290, margin=(5, 10))
        self.s.param.watch(lambda e: self._sync_visibility(), ["sampling", "cache", "dataset"])
        self._sync_visibility()
        placed = [n for row in _LAYOUT for n in row]
        rest = [n for n in wd if n not in placed and n != "n_steps"]   # problem options, new settings
        rows = [pn.Row(*(wd[n] for n in row if n in wd)) for row in _LAYOUT[:1]]
        rows += [pn.Row(*(wd[n] for n in rest[k:k + 2])) for k in range(0, len(rest), 2)]
        rows += [pn.Row(*(wd[n] for n in row if n in wd)) for row in _LAYOUT[1:]]
        return pn.Column(
            pn.pane.HTML("<b>Settings</b>", margin=(5, 10, 0, 10)),
            *rows,
            pn.layout.Divider(margin=(5, 10)),
            pn.Row(self.b_step, self.b_step_n, wd["n_steps"]),
            pn.Row(self.b_run, self.b_stop, self.b_reset),
            pn.Row(self.b_exact),
            pn.Row(self.b_compare, self.b_clear),
            self.alert,
            width=330,
        )

    @property
    def s(self):
        return self.session

    def _sync_visibility(self):
        s, wd = self.session, self.widgets
        for name, widget in wd.items():
            widget.visible = (s.param[name].precedence or 0) >= 0

    def _build(self):
        header = pn.pane.HTML(
            "<div style='background:#1f3b57;color:white;padding:6px 14px;border-radius:4px'>"
            "<span style='font-size:20px;font-weight:600'>gaplab · Minding the gaps</span>"
            "<span style='font-size:13px;opacity:0.85;margin-left:16px'>Block-coordinate "
            "Frank-Wolfe for structured SVMs — gap sampling, pairwise &amp; away steps, caching "
            "(Osokin et al., ICML 2016)</span></div>",
            sizing_mode="stretch_width", margin=(5, 10))
        step_tab = pn.Column(self.anatomy.panel, self.blocks.panel, sizing_mode="stretch_width")
        self._boxes = [step_tab] + [pn.Column(sizing_mode="stretch_width") for _ in self.TAB_NAMES[1:]]
        self.tabs = pn.Tabs(*zip(self.TAB_NAMES, self._boxes), dynamic=True, sizing_mode="stretch_width")
        self.tabs.param.watch(self._on_tab, "active")
        main = pn.Column(self.status.panel, self.tabs, sizing_mode="stretch_width")
        return pn.Column(header, pn.Row(self._controls(), main, sizing_mode="stretch_width"),
                         sizing_mode="stretch_width")

    def __panel__(self):
        return self._layout

    TAB_NAMES = ("Step", "Convergence", "Cache & active sets", "Regularization path", "Toy example", "Lessons",
                 "Sweeps")

    def _on_tab(self, event):
        self._ensure_tab(event.new)
        self.refresh(force=True)

    def _ensure_tab(self, tab: int):
        """Create a tab's views the first time it is shown (a faster first page)."""
        if tab in self._built:
            return
        self._built.add(tab)
        if tab == CONVERGENCE:
            self._gap_passes = GapView("passes", height=320, name="gap_passes")
            self._gap_time = GapView("time", height=320)
            self._primal_dual = PrimalDualView(height=300)
            self._test_error = TestErrorView(height=300)
            self._boxes[1].objects = [
                pn.Row(self._gap_passes.panel, self._gap_time.panel, sizing_mode="stretch_width"),
                pn.Row(self._primal_dual.panel, self._test_error.panel, sizing_mode="stretch_width")]
        elif tab == CACHE:
            self._cache = CacheView(height=290)
            self._boxes[CACHE].objects = [self._cache.panel]
        elif tab == PATH:
            self._path_view = PathView(self.session.path, self.session, name="path")
            self._boxes[PATH].objects = [self._path_view.panel]
        elif tab == TOY:
            self._toy_view = ToyView(self.toy, self.session)
            self._boxes[TOY].objects = [self._toy_view.panel]
        elif tab == LESSONS:
            self._lessons = LessonPanel(self.session, self._lesson_view, on_page=self._lesson_page)
            self._boxes[LESSONS].objects = [self._lessons.panel]
        elif tab == SWEEPS:  # a stored sweep's figures (gaplab.app.sweeps_tab)
            from .sweeps_tab import SweepsView
            self._sweeps_view = SweepsView()
            self._boxes[SWEEPS].objects = [self._sweeps_view.panel]

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

    # ------------------------------------------------------------------ actions (buttons)
    def _timed(self, fn):
        """Run a button's action and record its server-side time (action + snapshot + view
        updates + Bokeh patch), kept in ``action_ms`` for diagnostics and benchmarks."""
        t0 = time.perf_counter()
        fn()
        self.action_ms.append((fn.__name__, 1e3 * (time.perf_counter() - t0)))

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
            return [self.anatomy, self.blocks]
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
        return self.lessons.views()

    def _on_page_load(self):
        self._page_loaded = True
        self.refresh(force=True)

    def _tick(self):
        if self._closed or not self._page_loaded:
            return
        try:
            self.refresh()
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
        busy = snap.status == "loading"
        for b in (self.b_step, self.b_step_n, self.b_run, self.b_exact, self.b_reset):
            if b.disabled != busy:
                b.disabled = busy
        now = time.perf_counter()
        with hold():  # one websocket message per refresh: all views change together
            for v in [self.status] + self.visible_views():
                slow = getattr(v, "RUNNING_MIN_INTERVAL_S", 0.0)
                if running and not force and slow and now - self._drawn.get(id(v), 0.0) < slow:
                    continue  # e.g. the anatomy changes thousands of times per second: 2 Hz is enough
                if v.update(snap, force):
                    self._drawn[id(v)] = now
            self._show_messages()

    def _show_messages(self):
        msgs = self.session.messages(self._msg_seen)
        if not msgs:
            return
        self._msg_seen += len(msgs)
        level, text = msgs[-1]
        self.alert.alert_type = {"error": "danger", "warning": "warning", "success": "success"}.get(level, "info")
        self.alert.object = text
        self.alert.visible = True
        notes = pn.state.notifications
        if notes is not None:
            for level, text in msgs:
                try:
                    getattr(notes, level if level in ("info", "success", "warning", "error") else "info")(
                        text, duration=4000 if level != "error" else 8000)
                except Exception:  # pragma: no cover - no notification area in this context
                    break

    # ------------------------------------------------------------------ lifetime
    def _on_destroyed(self, session_context):
        self.close()

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
    """A new, independent app (default: OCR-small, BCFW + gap sampling, λ = 0.01)."""
    periodic = session_params.pop("periodic", True)
    return GapLabApp(Session(**session_params), periodic=periodic)
