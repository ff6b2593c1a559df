"""Serve the app: ``gaplab app`` and ``python -m gaplab app`` call :func:`serve`.

Each browser session gets its own app (``pn.serve`` with the factory :func:`build_app`), so two
tabs never share a solver; a session's worker and solver are released when Bokeh destroys the
session (``pn.state.on_session_destroyed``), and so is its Bokeh document (:func:`_release_views`).
A session that never connects its websocket (a plain page load) is destroyed after
``unused_session_lifetime_ms``.

Shared by all sessions of the process, loaded once: the compiled solver kernels
(:mod:`gaplab.app.kernels`) and the data sets with their read-only models
(:func:`gaplab.app.session.load_problem`, at most ``PROBLEM_CACHE_SIZE`` kept).
"""
from __future__ import annotations

import sys

__all__ = ["serve", "app_factory"]


def app_factory():
    """Called by the server once per browser session."""
    import panel as pn

    from .main import build_app
    app = build_app(warm=True)
    sid = app.session.session_id
    print(f"gaplab app: session {sid} opened", file=sys.stderr, flush=True)

    def closed(session_context):
        app.close()  # idempotent; also registered by the app itself
        _release_views(session_context._document)
        _return_freed_memory()
        print(f"gaplab app: session {sid} closed (worker stopped, solver released: "
              f"{app.session.closed})", file=sys.stderr, flush=True)

    pn.state.on_session_destroyed(closed)
    return app


def _release_views(doc) -> None:
    """Drop what Panel's global registry of rendered views (``pn.state._views``) still holds
    for the document of a destroyed session.

    A session that never connects its websocket (a page load by a crawler, ``curl``, a tab
    closed before the page ran) is destroyed by Bokeh's unused-session check; Panel then removes
    the app's root view but keeps the view of the document's notification area, and with it the
    document and every Bokeh model of the app (about 1.5 MB a page load)."""
    from panel.io.state import state
    for ref, (pane, root, vdoc, _comm) in list(state._views.items()):
        if vdoc is not doc:
            continue
        try:
            pane._cleanup(root)
        except Exception:  # pragma: no cover - a model already cleaned up
            pass
        getattr(pane, "_documents", {}).pop(doc, None)
        state._views.pop(ref, None)


def _ignore_messages_of_closed_pages() -> None:
    """Drop a page's queued messages once its websocket has closed (once per process).

    Tornado hands a websocket's messages to Bokeh one at a time; a message waits while the
    session's document lock is held (a refresh, a Step). When the tab closes meanwhile, Bokeh
    detaches the connection from its session, and each message still queued behind raised
    ``AssertionError`` in ``ServerConnection.session``, logged with a traceback as "error
    handling message ... PATCH-DOC" (dozens per closed tab of a large dataset, whose page sends
    many layout patches). A closed page wants no answer: its messages are dropped."""
    from bokeh.server.session import ServerSession
    if getattr(ServerSession, "_gaplab_drops_closed", False):
        return
    for name in ("patch", "push", "pull"):
        def guarded(cls, message, connection, _orig=getattr(ServerSession, name)):
            if getattr(connection, "_session", True) is None:   # the page has gone
                return _nothing()
            return _orig(message, connection)
        setattr(ServerSession, name, classmethod(guarded))
    ServerSession._gaplab_drops_closed = True


async def _nothing():
    return None


def _return_freed_memory() -> None:
    """Collect the closed page's reference cycles (its document, views and solver, freed from
    Panel's registry just before) and hand the C heap's free pages back to the system.

    A page's Bokeh document and models are millions of small allocations; once freed, glibc keeps
    their pages in its heap arenas (fragmented between what later pages allocate), so the
    server's RSS grew by about 0.5 MB per page load while no Python object was left behind.
    ``malloc_trim(0)`` returns the free pages (glibc only; elsewhere nothing is done)."""
    import gc
    gc.collect()
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):   # not glibc
        pass


def serve(port: int = 5006, address: str = "127.0.0.1", show: bool = False, *,
          unused_session_lifetime_ms: int = 15_000, check_unused_sessions_ms: int = 5_000,
          warmup: bool = True) -> int:
    """Serve the app on http://address:port/ until interrupted. Returns a process exit code.

    Parameters
    ----------
    port : int
        TCP port (0: any free port; the chosen one is printed).
    address : str
        Interface to bind (default 127.0.0.1: this machine only).
    show : bool
        Open a browser tab.
    warmup : bool
        Compile (or load from the numba cache) every solver kernel and load the default
        dataset in a background thread while the server already accepts sessions.

    Raises
    ------
    ValueError
        ``port`` outside [0, 65535], or ``address:port`` cannot be listened on (in use, no
        permission, unknown address); one line, for ``gaplab app`` to print.
    """
    port = check_port(port)
    import panel as pn

    _ignore_messages_of_closed_pages()

    try:   # binds the port (the server starts below)
        if not port:
            port = _free_port(address)
        origins = [f"{address}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"]
        server = pn.serve(
            {"/": app_factory}, port=port, address=address, show=show, start=False,
            websocket_origin=origins, title="gaplab · Minding the gaps",
            unused_session_lifetime_milliseconds=unused_session_lifetime_ms,
            check_unused_sessions_milliseconds=check_unused_sessions_ms,
        )
    except OSError as exc:
        raise ValueError(_bind_error(address, port, exc)) from None
    if warmup:   # after the port is ours: a refused port costs no compile
        _warm()
    print(f"gaplab app: serving on http://{address}:{port}/ (Ctrl+C to stop)", file=sys.stderr, flush=True)
    try:
        server.start()
        if show:
            server.show("/")
        server.io_loop.start()
    except KeyboardInterrupt:
        pass
    finally:
        try:
            server.stop()
        except Exception:
            pass
    return 0


def check_port(port) -> int:
    """``port`` as a TCP port number (0: any free port).

    Raises
    ------
    ValueError
        ``port`` is not an integer in [0, 65535]."""
    if isinstance(port, bool) or not isinstance(port, (int, str)):
        raise ValueError(f"port must be an integer in [0, 65535] (0: any free port); got {port!r}")
    try:
        p = int(port)
    except ValueError:
        raise ValueError(f"port must be an integer in [0, 65535] (0: any free port); got {port!r}") from None
    if not 0 <= p <= 65535:
        raise ValueError(f"port must be an integer in [0, 65535] (0: any free port); got {p}")
    return p


def _bind_error(address: str, port: int, exc: OSError) -> str:
    """One line on why ``address:port`` cannot be listened on."""
    import errno
    if exc.errno == errno.EADDRINUSE:
        return (f"port {port} on {address} is already in use (another server?); choose another "
                "--port, or --port 0 for any free port")
    if exc.errno == errno.EACCES:
        return f"no permission to listen on port {port} of {address} (ports below 1024 need privileges)"
    return f"cannot listen on {address}:{port}: {exc.strerror or exc} (check --address and --port)"


def _free_port(address: str) -> int:
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


def _warm():
    """Compile every solver kernel and load the default dataset in a background thread from
    server start; the pages keep their solver buttons disabled, with the progress shown, until
    the compile has ended (:mod:`gaplab.app.kernels`)."""
    from . import kernels

    def load_default():
        from .session import load_problem
        load_problem("ocr-small")

    kernels.start(extra=load_default)
