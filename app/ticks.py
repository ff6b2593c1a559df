"""UI event handlers run in the document's next tick, where Bokeh holds the document's lock.

Panel may process a browser event without the document's lock: when a widget's value change and
a button click arrive together (a path typed into a box, then the button clicked without Enter),
Panel runs the click in a coroutine of its own. Model property changes made there are sent by
Panel, but a ``ColumnDataSource.data`` assignment then raises ``RuntimeError: _pending_writes
should be non-None ...`` inside Bokeh, and the view is left half drawn. So every handler of a
button, a widget or a plot event that updates Bokeh models is registered through :func:`handler`
(or calls :func:`next_tick`): served, it runs in a next-tick callback of the session's document
(``pn.state.execute(..., schedule=True)``: the lock held, the document current, exceptions
reported by Panel); in a notebook or a plain Python process it runs at once.
"""
from __future__ import annotations

import functools

__all__ = ["next_tick", "handler"]


def next_tick(fn, *args, **kwargs) -> None:
    """Call ``fn(*args, **kwargs)`` in the served document's next tick, or now when not served."""
    import panel as pn
    doc = pn.state.curdoc
    call = functools.partial(fn, *args, **kwargs)
    if doc is None or getattr(doc, "session_context", None) is None:
        call()
        return
    pn.state.execute(call, schedule=True)


def handler(fn):
    """``fn`` as an event handler that runs through :func:`next_tick` (its result is dropped)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        next_tick(fn, *args, **kwargs)
    return run
