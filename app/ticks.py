"""UI event handlers run where Bokeh holds the document's lock.

Panel may process a browser event without the document's lock: when a widget's value change and
a button click arrive together (a path typed into a box, then the button clicked without Enter),
Panel runs the click in a coroutine of its own. Model property changes made there are sent by
Panel, but a ``ColumnDataSource.data`` assignment then raises ``RuntimeError: _pending_writes
should be non-None ...`` inside Bokeh, and the view is left half drawn. So every handler of a
button, a widget or a plot event that updates Bokeh models is registered through :func:`handler`
(or calls :func:`locked`): served, it runs at once when this thread is applying a browser message
to the session's document (Bokeh's lock held: the usual case of a click), else in a next-tick
callback of the document (``pn.state.execute(..., schedule=True)``: the lock held, the document
current, exceptions reported by Panel); in a notebook or a plain Python process it runs at once.

Why not always the next tick: that callback runs while Bokeh is still writing its reply to the
click's own message, and Panel, finding the websocket being written, holds the handler's patch
back and retries after 10 ms, a third of a Step's round trip in the page.
:func:`next_tick` remains for work that must come after the current tick (e.g. a second draw
of figures made in this one).
"""
from __future__ import annotations

import functools

__all__ = ["next_tick", "locked", "handler"]


def _served(doc) -> bool:
    return doc is not None and getattr(doc, "session_context", None) is not None


def next_tick(fn, *args, **kwargs) -> None:
    """Call ``fn(*args, **kwargs)`` in the served document's next tick, or now when not served."""
    import panel as pn
    doc = pn.state.curdoc
    call = functools.partial(fn, *args, **kwargs)
    if not _served(doc):
        call()
        return
    pn.state.execute(call, schedule=True)


def _lock_held_here(doc) -> bool:
    """True when this thread is applying a browser message (or running a callback) of ``doc``'s
    server session under Bokeh's document lock: Bokeh then collects model changes for sending
    (its ``_pending_writes`` is a list only inside that lock) and Panel may dispatch them
    (``state._unblocked``: ``doc`` is the current document, this is its thread, the page is
    connected)."""
    import panel as pn
    session = getattr(doc.session_context, "session", None)
    if getattr(session, "_pending_writes", None) is None:
        return False
    return bool(pn.state._unblocked(doc))


def locked(fn, *args, **kwargs) -> None:
    """Call ``fn(*args, **kwargs)`` with the served document's lock held: now when this thread
    holds it (see :func:`_lock_held_here`), else in the next tick; now when not served."""
    import panel as pn
    doc = pn.state.curdoc
    if not _served(doc) or _lock_held_here(doc):
        fn(*args, **kwargs)
        return
    next_tick(fn, *args, **kwargs)


def handler(fn):
    """``fn`` as an event handler that runs through :func:`locked` (its result is dropped)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        locked(fn, *args, **kwargs)
    return run
