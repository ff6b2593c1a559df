"""One frame on screen: every view the page shows and the status line draw the same published
:class:`~gaplab.app.session.Snapshot` in one refresh, so no number on screen leads or lags
another (the status line's iteration, the anatomy's step, the per-block bars, the curves).

While a run goes the views redraw less often than the session publishes (each view's
``RUNNING_MIN_INTERVAL_S``; the curves of the Convergence tab grow once per pass). Instead of
each view keeping its own pace, and so showing a different snapshot, a frame is drawn at the
pace of the slowest visible view, and then all of them draw its snapshot: the Step tab's views
and the status line (0.15 s each) make a frame every other 100-ms refresh, five a second.

A busy page applies a frame's document patches more slowly than that: the frames queued up in
the browser and a key press (r = Pause) waited behind seconds of them. So while a run goes a
new frame is sent only once the page has painted the previous one (:class:`FrameAck`, at most
:data:`ACK_TIMEOUT_S` of waiting): one frame in flight, the newest snapshot when it is due. The
solver's worker does not wait for the page; only what is drawn is thinned."""
from __future__ import annotations

import math
import time

import param
from panel.reactive import ReactiveHTML

#: while a run goes, a frame waits at most this long (s) for the page to say it painted the last
#: one (a page that stopped answering, a hidden tab whose animation frames do not fire)
ACK_TIMEOUT_S = 2.0


class FrameAck(ReactiveHTML):
    """An invisible component: the server sets ``sent`` (a running number) with each frame, in
    the same message as the frame's patches; the page sets ``applied`` to it after the next two
    animation frames (the frame's patches applied and painted). ``applied`` comes from the
    page and is only compared: a wrong value makes frames wait at most :data:`ACK_TIMEOUT_S`,
    or not wait."""

    sent = param.Integer(default=0, doc="The last frame sent (a running number).")
    applied = param.Integer(default=0, doc="The last frame the page says it has painted.")

    _template = '<div id="ack" class="gaplab-frame-ack" style="display:none"></div>'

    _scripts = {"sent": "const n = data.sent; requestAnimationFrame(() => "
                        "requestAnimationFrame(() => { data.applied = n; }));"}

    def __init__(self, **params):
        super().__init__(**params)
        self.t_sent = -math.inf

    def waiting(self, now: float) -> bool:
        """The page has answered before (so it answers) and has not painted the last frame,
        sent less than :data:`ACK_TIMEOUT_S` ago."""
        return 0 < self.applied < self.sent and now - self.t_sent < ACK_TIMEOUT_S

    def mark(self, now: float) -> None:
        """A frame is being sent (call inside the frame's ``hold``: one message with it)."""
        self.sent += 1
        self.t_sent = now


class Frame:
    """The snapshot on screen and when it was drawn (one per app page)."""

    def __init__(self, ack: bool = False):
        self.snap = None        # the snapshot every visible view and the status line show
        self.t = -math.inf      # when it was drawn (time.perf_counter())
        #: the page's acknowledgement of painted frames (a served or notebook page), or None
        self.ack = FrameAck(width=0, height=0, margin=0) if ack else None

    @staticmethod
    def interval(views, status) -> float:
        """Seconds between two frames while a run goes: the slowest visible view's pace."""
        return max([getattr(v, "RUNNING_MIN_INTERVAL_S", 0.0) for v in views]
                   + [getattr(status, "RUNNING_MIN_INTERVAL_S", 0.0)])

    def draw(self, snap, views, status, *, running: bool, force: bool = False,
             force_status: bool = False, now: float | None = None) -> bool:
        """Draw ``snap`` in every view of ``views`` and in ``status`` when a frame is due (always
        when not running or forced); otherwise redraw only the status line, and only when
        ``force_status`` (e.g. the compile progress changed), with the snapshot on screen.
        While running, a frame is also not due while the page paints the previous one
        (:meth:`FrameAck.waiting`). Returns whether a frame was drawn."""
        now = time.perf_counter() if now is None else now
        if running and not force and (now - self.t < self.interval(views, status)
                                      or (self.ack is not None and self.ack.waiting(now))):
            if force_status and self.snap is not None:
                status.update(self.snap, force=True)
            return False
        for v in views:
            v.update(snap, force)
        status.update(snap, force or force_status)
        self.snap, self.t = snap, now
        if self.ack is not None:
            self.ack.mark(now)
        return True
