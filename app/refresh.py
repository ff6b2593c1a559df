"""The app's periodic refresh and its page: :class:`RefreshMixin` (held by
:class:`gaplab.app.main.GapLabApp`) pulls the session's latest snapshot and draws it (the tick,
``refresh``, the compile banner, the session's messages as an alert and toasts) and, in a
notebook, routes the page's messages to the kernel's event loop and waits for the display's comm.

The module's functions say where the app runs (served or not) and prepare the page's document
(Panel's extensions, local stylesheets).
"""
from __future__ import annotations

import threading
import time

import panel as pn
from panel.io import hold

from . import kernels, startup
from .safe_html import esc, md_esc

__all__ = ["RefreshMixin"]


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


def _running_loop():
    """The running asyncio event loop of this thread and the thread's id, or (None, None)."""
    import asyncio
    try:
        return asyncio.get_running_loop(), threading.get_ident()
    except RuntimeError:
        return None, None


class RefreshMixin:
    """The tick, refresh, banner and messages of :class:`gaplab.app.main.GapLabApp`, and the
    routing of a notebook page's messages."""

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
        share = self.limits.loop_share if self.limits.student else None
        if share is None:
            self._tick_now()
            return
        # a classroom's student page: redrawn within the students' share of the event loop
        now = time.perf_counter()
        if not share.may_run(now - getattr(self, "_t_drawn", 0.0)):
            return
        self._t_drawn = now
        self._tick_now()
        share.spend(time.perf_counter() - now)

    def _after_action(self):
        """Redraw after a button's action: at once for the lecturer (students' redraws then
        wait, see gaplab.app.classroom.LoopShare); a student's within the students' share."""
        share = self.limits.loop_share
        if share is None:
            self.refresh()
        elif self.limits.lecturer:
            share.lecturer_acted()
            self.refresh()
        elif share.may_run():
            t0 = time.perf_counter()
            self.refresh()
            share.spend(time.perf_counter() - t0)

    def _tick_now(self):
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
        for b in (self.b_run, self._bar_copies.get(self.b_run)):
            if b is not None and b.label != label:
                b.label = label
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
            for w in (b, self._bar_copies.get(b)):   # and its copy in the projector bar
                if w is not None and w.disabled != off:
                    w.disabled = off
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
        if html and self.projector:
            self._apply_big(self.banner, True)
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
                        esc(text), duration=0 if text in self._persistent else 4000 if level != "error" else 8000)
                except Exception:  # pragma: no cover - no notification area in this context
                    break
