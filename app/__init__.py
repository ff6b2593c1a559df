"""gaplab.app: the Panel app (session runner, live views, toy tab, lessons).

``build_app()`` returns an independent app object that displays in ``panel serve`` and in
Jupyter; ``serve()`` runs the server used by ``gaplab app``. :class:`Session` (settings, solver,
worker thread, snapshots) imports no Panel and can be driven headless.

What lives where:

- ``main``: the app object (its tabs and header), made of ``controls`` (the
  sidebar: the settings' widgets, the buttons and their actions), ``projector`` (projector
  mode: its Step tab views and bar, made ahead and shown by the switch), ``page_url`` (a page's URL
  state: opening a bookmarked state, keeping the URL on the state shown) and ``refresh`` (the
  periodic tick, drawing the snapshot, the banner and messages, a notebook page's messages);
  ``tabs``: the tabs' indices; ``panel_app``: the ``panel serve`` entry;
  ``serve``: the server behind ``gaplab app``; ``classroom``: serving a class (the policy
  applied to students' sessions, the session caps, the students' URL and its QR code);
  ``students``: a classroom's students served by a child process at a lower CPU priority,
  the lecturer by the main one; ``settings``: the ``param`` parameters made from
  the settings schema; ``styles``: the stylesheets and projector mode's sizes.
- ``session/``: the headless session (settings, solver, run loop, snapshots); ``views/``: the
  Step, Convergence and Cache tabs' views, each drawing one snapshot.
- ``wording``: how numbers are written in words (counts with thousands separators, the one
  round-off rule for narrated gaps and γ).
- ``kernels``: whether the solver kernels are compiled, and the background compile;
  ``startup``: what the page says while they compile; ``refstep``: the reference solver that
  answers the Steps meanwhile, then hands over to the fast solver.
- ``toy_tab``: App. C's toy example; ``race``: uniform against gap sampling, live;
  ``simplex``: a block's simplex with FW / away / pairwise steps; ``lessons``: the lesson pages;
  ``path_tab`` and ``pathlab``: the regularization path and the grid search (the lab behind the
  tab; its ``pathlab_snapshot``: what the tab draws, ``pathlab_worker``: the thread that traces
  the path, ``pathlab_pick``: picking a λ; ``path_figures``: the tab's sawtooth, staircase and
  legends); ``sweeps_tab``: a sweep store's figures.
- ``textbook/``: the lessons as static explorable pages (figures replaying recorded runs in the
  browser, exported by ``gaplab lesson export``, built into the documentation site).
- Presenter tools: ``switch`` (keep α when a setting changes), ``history`` (go back),
  ``keys`` (keyboard shortcuts), ``urlstate`` (bookmarkable states), ``export`` (CSV/JSON and
  PNG/SVG) and ``animate`` (a GIF of the last steps).
- ``safe_html``: escaping of every text that reaches the page; ``typed_paths``: which typed
  paths may be opened (regular files and folders, under the lecturer's roots) and reads with
  a size limit; ``widget_guard``: a widget's value refused by its setting is said, not a
  traceback; ``ticks``: event handlers under
  the document's lock (at once, or in its next tick); ``testing``: helpers for driving the
  served app from tests.
"""
from __future__ import annotations

__all__ = ["Session", "Snapshot", "build_app", "GapLabApp", "serve"]


def __getattr__(name):  # lazy: importing gaplab.app must not import Panel
    if name in ("Session", "Snapshot"):
        from . import session
        return getattr(session, name)
    if name in ("build_app", "GapLabApp"):
        from . import main
        return getattr(main, name)
    if name == "serve":
        from .serve import serve
        return serve
    raise AttributeError(f"module 'gaplab.app' has no attribute {name!r}")
