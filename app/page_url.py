"""The URL state of a page: :class:`UrlMixin` (held by :class:`gaplab.app.main.GapLabApp`)
shows the state a URL query describes (``open_url``; a served page's own URL once its dataset
is loaded) and keeps a served page's URL on the state it shows (``url_query``, ``_write_url``).
Parsing and writing queries is :mod:`gaplab.app.urlstate`'s.
"""
from __future__ import annotations

import time
from urllib.parse import urlsplit

from . import urlstate
from .tabs import LESSONS, RACE

__all__ = ["UrlMixin"]


class UrlMixin:
    """Bookmarkable states of :class:`gaplab.app.main.GapLabApp` (see :mod:`gaplab.app.urlstate`)."""

    def open_url(self, query) -> urlstate.UrlRequest:
        """Show the state a URL query describes (``"?dataset=toy&steps=20&tab=lessons&lesson=3"``):
        settings, seed, step count, tab and lesson page; bad values are ignored with an escaped
        notice. Blocks until the dataset is loaded and the steps are taken (a notebook's or a
        test's call; a served page's URL is restored in the session's worker)."""
        req = urlstate.parse_query(query, self.session)
        settings = {k: v for k, v in req.settings.items() if k != "lam" and getattr(self.session, k) != v}
        if settings:
            self.session.param.update(**settings)
        self.session.wait_idle(120)
        if self.session.solver is not None:
            self.session.reset()   # a URL describes a run from α⁰ (not the current α continued)
        self._url_pending = req if not (req.empty and not req.notices) else None
        self._apply_url()
        self.session.wait_idle(600)
        self.refresh(force=True)
        return req

    def _apply_url(self):
        """Apply a pending URL request once the session's dataset is loaded (λ, steps, tab,
        lesson page), then show its notices (escaped by urlstate) after what the steps said."""
        req = self._url_pending
        if req is None or self.session.status == "loading" or self.session.running:
            return
        self._url_pending = None
        # the steps are taken in the session's worker (the page shows "replaying step k of N")
        steps = self._budget(req.steps, "URL steps") if req.steps else req.steps
        urlstate.restore(self.session, urlstate.UrlRequest(settings=req.settings, steps=steps), wait=False)
        tab = req.tab if req.tab is not None else (LESSONS if req.lesson is not None else None)
        if tab is not None:
            self.tabs.active = tab
        if req.lesson is not None:
            self.lessons.go(req.lesson - 1)
        if req.race:
            self.race_view.configure(**req.race)
        for text in req.notices:   # a refused URL value: its toast stays until dismissed
            self._persistent.add(text)
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
