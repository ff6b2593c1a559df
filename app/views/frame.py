"""One frame on screen: every view the page shows and the status line draw the same published
:class:`~gaplab.app.session.Snapshot` in one refresh, so no number on screen leads or lags
another (the status line's iteration, the anatomy's step, the per-block bars, the curves).

While a run goes the views redraw less often than the session publishes (each view's
``RUNNING_MIN_INTERVAL_S``; the curves of the Convergence tab grow once per pass). Instead of
each view keeping its own pace, and so showing a different snapshot, a frame is drawn at the
pace of the slowest visible view, and then all of them draw its snapshot: the Step tab's views
and the status line (0.15 s each) make a frame every other 100-ms refresh, five a second."""
from __future__ import annotations

import math
import time


class Frame:
    """The snapshot on screen and when it was drawn (one per app page)."""

    def __init__(self):
        self.snap = None        # the snapshot every visible view and the status line show
        self.t = -math.inf      # when it was drawn (time.perf_counter())

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
        Returns whether a frame was drawn."""
        now = time.perf_counter() if now is None else now
        if running and not force and now - self.t < self.interval(views, status):
            if force_status and self.snap is not None:
                status.update(self.snap, force=True)
            return False
        for v in views:
            v.update(snap, force)
        status.update(snap, force or force_status)
        self.snap, self.t = snap, now
        return True
