"""Served, the app's event handlers run in the document's next tick, where Bokeh holds the
document's lock (the browser test of the failure is
tests/browser/test_hostile_input.py::test_open_store_typed_and_clicked_without_enter). Here a
Bokeh document stands in for a served session's: a click schedules its handler, and the Bokeh
models change only when the tick runs."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

pn = pytest.importorskip("panel")

from bokeh.document import Document  # noqa: E402
from panel.io.state import set_curdoc  # noqa: E402

from gaplab.app.main import PATH  # noqa: E402


class _Served:
    """A document that looks served (it has a session context) and collects next-tick callbacks."""

    def __init__(self):
        self.doc = Document()
        request = SimpleNamespace(arguments={}, cookies={}, headers={})
        context = SimpleNamespace(request=request, id="served-test", session=None)
        self.doc._session_context = lambda: context
        assert self.doc.session_context is not None

    def ticks(self):
        return list(self.doc.callbacks.session_callbacks)

    def run_ticks(self):
        for cb in self.ticks():
            self.doc.callbacks.remove_session_callback(cb)
            cb.callback()


def test_a_click_is_handled_in_the_next_tick(app):
    served = _Served()
    status = app.status.panel.object
    with set_curdoc(served.doc):
        app.b_step.clicks += 1
    assert app.session.snapshot.iteration == 0 and app.status.panel.object == status
    assert len(served.ticks()) == 1
    served.run_ticks()
    assert app.session.wait_idle(30)   # the Step is taken in the session's worker
    app.refresh()                      # (the periodic refresh's draw)
    assert app.session.snapshot.iteration == 1 and "iteration <b>1</b>" in app.status.panel.object


def test_open_store_and_tab_changes_are_handled_in_the_next_tick(app, tmp_path):
    served = _Served()
    with set_curdoc(served.doc):
        app.tabs.active = PATH
    assert len(served.ticks()) == 1
    served.run_ticks()
    # a tab shown for the first time comes to the page drawn (its views draw before they are
    # added): no follow-up tick
    assert not served.ticks()
    view = app.path_view
    n_msgs = len(app.session.messages())
    with set_curdoc(served.doc):
        view.store_input.value = str(tmp_path / "nowhere")
        view.b_open.clicks += 1
    assert len(app.session.messages()) == n_msgs and len(served.ticks()) == 1
    served.run_ticks()
    assert "Open path store" in app.session.messages()[-1][1]


def test_a_click_applied_under_the_document_lock_is_handled_at_once(app):
    """Bokeh applying the click's message holds the document's lock (its session collects the
    changes to send: ``_pending_writes`` is a list): the Step is taken and drawn at once, its
    patch sent with that message's processing, not in a later tick that races Bokeh's reply to
    the click (Panel then holds the patch back 10 ms). Without that lock (Panel processing the
    click in a coroutine of its own) it still waits for the next tick. (The Step itself is
    queued for the session's worker; the periodic refresh draws it.)"""
    import threading

    from panel.io.state import state
    served = _Served()
    session = SimpleNamespace(_pending_writes=[])
    served.doc._session_context().session = session
    # as Panel records a served document: its page connected, its thread
    state._connected[served.doc] = True
    state._thread_id_[served.doc] = threading.get_ident()
    try:
        with set_curdoc(served.doc):
            app.b_step.clicks += 1
        assert not served.ticks()
        assert app.session.wait_idle(30) and app.session.snapshot.iteration == 1
        session._pending_writes = None      # the lock not held here
        with set_curdoc(served.doc):
            app.b_step.clicks += 1
        assert app.session.wait_idle(30) and app.session.snapshot.iteration == 1 and len(served.ticks()) == 1
        served.run_ticks()
        assert app.session.wait_idle(30) and app.session.snapshot.iteration == 2
        app.refresh()
        assert "iteration <b>2</b>" in app.status.panel.object
    finally:
        state._connected.pop(served.doc, None)
        state._thread_id_.pop(served.doc, None)


def test_not_served_handlers_run_at_once(app):
    app.b_step.clicks += 1
    assert app.session.wait_idle(30) and app.session.snapshot.iteration == 1
