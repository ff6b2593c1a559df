"""A long-running app server keeps no memory of closed sessions: a page
load whose websocket never connects (a crawler, ``curl``, a tab closed early) made a
session that Bokeh destroyed as unused, and Panel's registry of rendered views kept its document
and every Bokeh model of the app (about 1.5 MB a page load). What sessions share (the loaded data
sets: ``gaplab.app.session.load_problem``, the compiled kernels) is loaded once per process.

- in process: the sessions of plain page loads and of websocket connections that open and close
  are destroyed, and weak references to their Session, app and Bokeh document die;
- a served process: 300 plain page loads after a warm-up raise its RSS by at most 50 MB.
"""
from __future__ import annotations

import asyncio
import gc
import time
import urllib.request
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pn = pytest.importorskip("panel")

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"


def test_closed_sessions_free_their_session_app_and_document(monkeypatch):
    from bokeh.client import pull_session
    from bokeh.events import DocumentReady
    from tornado.httpclient import AsyncHTTPClient

    from gaplab.app import serve as serve_mod
    from gaplab.app.testing import free_port
    from panel.io.state import state

    made = []
    factory = serve_mod.app_factory

    def recording_factory():
        shell = factory()
        made.append((shell, weakref.ref(shell), weakref.ref(pn.state.curdoc)))
        return shell

    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    server = pn.serve({"/": recording_factory}, port=port, address="127.0.0.1", start=False, show=False,
                      websocket_origin=[f"127.0.0.1:{port}", f"localhost:{port}"],
                      unused_session_lifetime_milliseconds=500, check_unused_sessions_milliseconds=250)
    server.start()
    apps = []

    def connect_and_close():
        client = pull_session(url=url)
        client.document.callbacks.send_event(DocumentReady())   # the app is built (as a page's)
        client.request_server_info()   # answered after the event was handled
        client.close()

    async def visit():
        client = AsyncHTTPClient()
        for _ in range(4):   # plain page loads: sessions that never connect
            await client.fetch(url, request_timeout=300)
        loop = asyncio.get_running_loop()
        for _ in range(2):   # sessions whose websocket connects, then closes
            await loop.run_in_executor(None, connect_and_close)
            apps.append(weakref.ref(made[-1][0].app))
        deadline = time.time() + 60
        while time.time() < deadline and server.get_sessions("/"):   # destroyed: unused or closed
            await asyncio.sleep(0.25)
        await asyncio.sleep(1.0)

    try:
        server.io_loop.asyncio_loop.run_until_complete(visit())
        assert server.get_sessions("/") == []
    finally:
        server.stop()
    assert len(made) == 6
    assert [type(a()).__name__ for a in apps] == ["GapLabApp", "GapLabApp"]
    sessions = [weakref.ref(a().session) for a in apps]
    docs = {id(d()) for _, _, d in made}
    made = [(s, d) for _, s, d in made]
    gc.collect()
    alive = [(s() is not None, d() is not None) for s, d in made]
    assert alive == [(False, False)] * 6, alive
    assert [a() for a in apps] == [None, None] and [s() for s in sessions] == [None, None]
    assert not [ref for ref, v in state._views.items() if id(v[2]) in docs]


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="RSS read from /proc")
def test_plain_page_loads_do_not_grow_the_server():
    from gaplab.app.testing import AppServer
    ARTIFACTS.mkdir(exist_ok=True)

    def load(url):
        with urllib.request.urlopen(url, timeout=300) as r:
            r.read()

    def loads(srv, n):
        before = srv.log().count(" closed (")
        with ThreadPoolExecutor(10) as ex:
            list(ex.map(lambda _: load(srv.url), range(n)))
        deadline = time.time() + 120   # every session destroyed as unused (1 s lifetime)
        while srv.log().count(" closed (") < before + n and time.time() < deadline:
            time.sleep(0.5)
        assert srv.log().count(" closed (") >= before + n, srv.log()[-2000:]
        time.sleep(2.0)

    with AppServer(ARTIFACTS / "memory_server.log", session_lifetime_ms=1000, timeout=900, wait_warm=True) as srv:
        loads(srv, 60)   # warm-up: lazily made caches, allocator arenas
        rss0 = _rss_mb(srv.proc.pid)
        loads(srv, 300)
        rss1 = _rss_mb(srv.proc.pid)
    assert rss1 - rss0 <= 50.0, (rss0, rss1)


def test_projector_font_sizes_are_forgotten_with_their_figures():
    """Projector mode remembers each figure's normal font sizes; a closed session's figures
    take that memory with them (it had been kept per id(figure) for the life of the process)."""
    from bokeh.plotting import figure

    from gaplab.app import views
    figs = [figure(title="t") for _ in range(3)]
    ids = {id(f) for f in figs}

    def held():  # entries about these figures, whether keyed by the figure or by its id
        return sum(1 for k in list(views._FIG_FONTS.keys()) if (k if isinstance(k, int) else id(k)) in ids)

    col = pn.Column(*(pn.pane.Bokeh(f) for f in figs))
    views.fig_fonts(col, True)
    assert all(f.title.text_font_size == "19px" for f in figs) and held() == 3
    views.fig_fonts(col, False)
    assert all(f.title.text_font_size != "19px" for f in figs)
    del col, figs
    gc.collect()
    assert held() == 0  # other tests' figures may be collected meanwhile: count only these


def test_messages_queued_by_a_page_that_closed_are_dropped_without_a_traceback():
    """A page's messages wait for its session's document lock; a tab closed meanwhile has its
    connection detached from the session, and Bokeh raised AssertionError for each queued
    message (logged as "error handling message ... PATCH-DOC" with a traceback). ``gaplab app``
    drops them; a page still open is handled as before."""
    from bokeh.server.connection import ServerConnection
    from bokeh.server.session import ServerSession

    from gaplab.app.serve import _ignore_messages_of_closed_pages

    gone = ServerConnection.__new__(ServerConnection)
    gone._session = None
    with pytest.raises(AssertionError):   # what Bokeh does with such a message on its own
        gone.session  # noqa: B018
    _ignore_messages_of_closed_pages()
    _ignore_messages_of_closed_pages()   # once per process, however often called
    for name in ("patch", "push", "pull"):
        assert asyncio.run(getattr(ServerSession, name)(object(), gone)) is None

    class Open:   # a live connection: its session handles the message
        seen = []

        class session:  # noqa: N801 - stands in for the ServerSession
            @staticmethod
            async def _handle_patch(message, connection):
                Open.seen.append(message)
                return "ok"

    assert asyncio.run(ServerSession.patch("msg", Open())) == "ok" and Open.seen == ["msg"]


def test_a_write_to_a_page_that_closed_is_dropped_without_a_traceback(caplog):
    """A message still being written when its tab closes fails in a write task nobody awaits;
    asyncio logged "Task exception was never retrieved" with the tornado traceback. The
    server's loop drops exactly those; any other unretrieved failure is still logged."""
    import gc

    from tornado.iostream import StreamClosedError
    from tornado.websocket import WebSocketClosedError

    from gaplab.app.serve import _drop_writes_to_closed_pages

    async def fail(exc):
        raise exc

    def unretrieved(exc, handler):
        loop = asyncio.new_event_loop()
        if handler:
            loop.set_exception_handler(handler)
        caplog.clear()
        with caplog.at_level("ERROR", logger="asyncio"):
            task = loop.create_task(fail(exc))
            loop.run_until_complete(asyncio.sleep(0.01))
            assert task.done()
            del task
            gc.collect()   # the never-retrieved report comes when the task is freed
        loop.close()
        return "\n".join(r.getMessage() + str(r.exc_info) for r in caplog.records)

    assert "never retrieved" in unretrieved(WebSocketClosedError(), None)   # asyncio on its own
    for exc in (WebSocketClosedError(), StreamClosedError()):
        assert unretrieved(exc, _drop_writes_to_closed_pages) == ""
    assert "never retrieved" in unretrieved(ValueError("a real bug"), _drop_writes_to_closed_pages)
    # only the unretrieved write task: the same error raised in a callback is still reported
    loop = asyncio.new_event_loop()
    caplog.clear()
    with caplog.at_level("ERROR", logger="asyncio"):
        _drop_writes_to_closed_pages(loop, {"message": "Exception in callback on_message",
                                            "exception": WebSocketClosedError()})
    loop.close()
    assert "Exception in callback" in caplog.text
