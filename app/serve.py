"""Serve the app: ``gaplab app`` and ``python -m gaplab app`` call :func:`serve`.

Each browser session gets its own app (``pn.serve`` with the factory :func:`build_app`), so two
tabs never share a solver; a session's worker and solver are released when Bokeh destroys the
session (``pn.state.on_session_destroyed``), and so is its Bokeh document (:func:`_release_views`).
A session that never connects its websocket (a plain page load) is destroyed after
``unused_session_lifetime_ms`` (5 s; a page that connects later gets a new session). With
``classroom=True`` (``gaplab app --classroom``) the server binds the network address and applies
the limits of :mod:`gaplab.app.classroom` to the students' sessions; on a network address the
students are served by a child process of their own at a lower CPU priority, the lecturer by
this one on 127.0.0.1 (:mod:`gaplab.app.students`).

Shared by all sessions of the process, loaded once: the compiled solver kernels
(:mod:`gaplab.app.kernels`) and the data sets with their read-only models
(:func:`gaplab.app.session.load_problem`, at most ``PROBLEM_CACHE_SIZE`` kept).
"""
from __future__ import annotations

import asyncio
import sys

__all__ = ["serve", "app_factory", "make_app_factory"]


def app_factory():
    """Called by the server once per browser session (every session is the lecturer's: the
    factory of ``gaplab app`` without ``--classroom``)."""
    from .classroom import ClassroomPolicy, SessionGate
    policy = ClassroomPolicy()
    return make_app_factory(policy, SessionGate(policy))()


def make_app_factory(policy, gate, *, student_url: str | None = None, client_of=None):
    """The per-session factory of a server with ``policy`` (a
    :class:`gaplab.app.classroom.ClassroomPolicy`) and ``gate`` (its
    :class:`~gaplab.app.classroom.SessionGate`).

    Each session's client address (``client_of(doc)``, default: the HTTP request's remote
    address) decides whether it is the lecturer's; a session the gate does not admit gets a
    short page saying why instead of the app, and every admitted one is released from the gate
    when Bokeh destroys it. ``student_url``: the URL shown (with its QR code) in the lecturer's
    page."""
    from . import classroom
    from .classroom import full_page_html
    from .main import build_app

    def factory():
        import panel as pn

        _start_panel_busy_cleanup()
        doc = pn.state.curdoc
        client = (client_of or classroom.client_address_of)(doc)
        refusal = gate.admit(client)
        if refusal is not None:
            print(f"gaplab app: refused a session from {client}: {refusal}", file=sys.stderr, flush=True)
            return pn.pane.HTML(full_page_html(refusal), sizing_mode="stretch_width",
                                css_classes=["gaplab-refused"])
        share = gate.loop_share if policy.classroom else None   # students' share of the event loop
        shell = PageShell(lambda: build_app(warm=True, limits=policy.limits(client, share), student_url=student_url),
                          client)

        def closed(session_context):
            gate.release(client)
            shell.close()
            _release_views(session_context._document)
            # a page load that never connected left no app to collect: a full collection of a
            # server holding 30 pages' apps takes the event loop for most of a second, which
            # after every page load delayed every page's answer (the lecturer's Step) by seconds
            if shell.app is not None:
                _return_freed_memory()

        pn.state.on_session_destroyed(closed)
        return shell

    return factory


def _start_panel_busy_cleanup() -> None:
    """Start Panel's process-wide cleanup of its busy counter outside every session (once).

    Panel starts that periodic task at the first click it handles, inside the session of that
    click; the task keeps the context it was started in, with that session's document as the
    current one, so the document (and its app's models) stayed alive for the life of the
    server. Started here in an empty context it holds none. Relies on Panel's private
    ``state._schedule_busy_cleanup`` (nothing is done without it)."""
    import contextvars

    from panel.io.state import state
    schedule = getattr(state, "_schedule_busy_cleanup", None)
    if schedule is None or getattr(type(state), "_busy_cleanup_scheduled", None):
        return
    try:
        contextvars.Context().run(schedule)
    except Exception:   # pragma: no cover - another Panel version: its own way
        pass


def _viewer():
    import panel as pn
    return pn.viewable.Viewer


class PageShell(_viewer()):
    """What a page load gets: a small page saying the app opens, and the app itself only once
    the page's websocket has connected and BokehJS has drawn the shell (Panel's ``onload``).

    Building an app (its widgets, plots and some thousand Bokeh models) takes the server's event
    loop for a while; a page load that never connects (a crawler, ``curl``, a tab closed at
    once, a student reloading) would take it for nothing, and every other page (the
    lecturer's Step) waits meanwhile. ``layout`` is the document's root; ``app`` is None until
    built (and stays None for a page that never connects).

    Parameters
    ----------
    build : callable
        Makes the session's :class:`gaplab.app.main.GapLabApp` (called once, in the served
        document's onload).
    client : str or None
        The page's client address (for the log line).
    """

    def __init__(self, build, client):
        import panel as pn

        from .refresh import _extension, _pin_local_resources
        super().__init__()
        self.app = None
        self.client = client
        self.doc = pn.state.curdoc   # the session's document
        self._build, self._closed = build, False
        _pin_local_resources()   # as the app does: the page is rendered from this document
        _extension()             # the page's head loads MathJax and the toasts now
        self.note = pn.pane.HTML("<div class='gaplab-opening' style='font:16px sans-serif;margin:24px'>"
                                 "gaplab: opening the app…</div>", sizing_mode="stretch_width")
        self.layout = pn.Column(self.note, sizing_mode="stretch_width", css_classes=["gaplab-shell"])
        pn.state.onload(self._open)

    def __panel__(self):
        return self.layout

    def _open(self):
        if self._closed or self.app is not None:
            return
        app = self._build()
        self.app = app
        self.layout.objects = [app]
        who = "lecturer" if app.limits.lecturer else "student"
        print(f"gaplab app: session {app.session.session_id} opened ({who}, {self.client})",
              file=sys.stderr, flush=True)

    def close(self):
        """Stop the app's worker and release its solver (idempotent; nothing to do when the
        page never connected)."""
        self._closed = True
        if self.app is None:
            print(f"gaplab app: page load from {self.client} closed (never connected: no app was built)",
                  file=sys.stderr, flush=True)
            return
        self.app.close()
        print(f"gaplab app: session {self.app.session.session_id} closed (worker stopped, solver "
              f"released: {self.app.session.closed})", file=sys.stderr, flush=True)


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


def _drop_writes_to_closed_pages(loop, context) -> None:
    """The event loop's exception handler (set by :func:`_run`): a message Panel was still
    writing to a page when its tab closed fails with tornado's ``WebSocketClosedError`` (or
    ``StreamClosedError``) inside a write task nobody awaits any more, which asyncio logged as
    "Task exception was never retrieved" with a traceback. A closed page wants no answer: such a
    failure is dropped. Everything else goes to the loop's default handler."""
    from tornado.iostream import StreamClosedError
    from tornado.websocket import WebSocketClosedError
    if (isinstance(context.get("exception"), (WebSocketClosedError, StreamClosedError))
            and isinstance(context.get("future"), asyncio.Future)
            and "never retrieved" in str(context.get("message", ""))):
        return
    loop.default_exception_handler(context)


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


def serve(port: int = 5006, address: str | None = None, show: bool = False, *,
          unused_session_lifetime_ms: int = 5_000, check_unused_sessions_ms: int = 1_000,
          warmup: bool = True, classroom: bool = False, allow_origins=(), allow_heavy: bool = False,
          path_roots=(), max_sessions: int | None = None, max_sessions_per_client: int | None = None,
          max_steps_per_request: int | None = None, students_setup: dict | None = None) -> int:
    """Serve the app on http://address:port/ until interrupted. Returns a process exit code.

    Parameters
    ----------
    port : int
        TCP port (0: any free port; the chosen one is printed).
    address : str, optional
        Interface to bind (default 127.0.0.1: this machine only; in classroom mode the
        machine's network address, :func:`gaplab.app.classroom.network_address`).
    show : bool
        Open a browser tab.
    unused_session_lifetime_ms, check_unused_sessions_ms : int
        A session whose page never connects (a plain page load) is released this long after it
        was made, checked this often (a page that connects later gets a new session).
    warmup : bool
        Compile (or load from the numba cache) every solver kernel and load the default
        dataset in a background thread while the server already accepts sessions.
    classroom : bool
        Serve a class: bind the network address, allow its origin, print the URL students
        type (the lecturer's page shows it with a QR code) and apply the limits of
        :class:`gaplab.app.classroom.ClassroomPolicy` to every session not on this machine.
        On an address other than 127.0.0.1 (and the wildcards) the students get a process of
        their own at a lower CPU priority, and the lecturer's page is served on
        127.0.0.1:``port`` by this process (:mod:`gaplab.app.students`).
    allow_origins : iterable of str
        More origins (``HOST[:PORT]``, no port: ``port``) whose pages may connect.
    allow_heavy : bool
        Classroom mode: students may open CoNLL-2000, horse-small and lsp-pose.
    path_roots : iterable of path
        Classroom mode: folders under which students may type store paths (none: off).
    max_sessions, max_sessions_per_client, max_steps_per_request : int, optional
        Classroom mode: the caps of the policy (defaults: those of ``ClassroomPolicy``).
    students_setup : dict, optional
        Classroom mode with a students' process: what that process does before it listens, as
        JSON values (``imports``: ``--import`` targets; ``data_file``, ``test_file``: as
        ``--data-file``; for a benchmark on one machine ``sys_path`` and ``client_of``, a
        ``"module:function"`` giving a session's client address). See
        :class:`gaplab.app.students.StudentsProcess`.

    Raises
    ------
    ValueError
        ``port`` outside [0, 65535], a bad origin, path root or cap, or ``address:port``
        (or, with a students' process, ``127.0.0.1:port``) cannot be listened on (in use, no
        permission, unknown address); one line, for ``gaplab app`` to print.
    """
    from . import classroom as cl
    from . import students
    port = check_port(port)
    extra = [cl.check_origin(o) for o in allow_origins or ()]
    if address is None:
        address = cl.network_address() if classroom else "127.0.0.1"
    policy = _policy(classroom, address, allow_heavy=allow_heavy, path_roots=path_roots,
                     max_sessions=max_sessions, max_sessions_per_client=max_sessions_per_client,
                     max_steps_per_request=max_steps_per_request)
    sessions = {"unused_session_lifetime_ms": unused_session_lifetime_ms,
                "check_unused_sessions_ms": check_unused_sessions_ms}
    _ignore_messages_of_closed_pages()
    if classroom and students.splits(address):
        return students.serve_split(port, address, show, policy=policy, extra=extra, sessions=sessions,
                                    warmup=warmup, setup=students_setup)
    return _serve_one(port, address, show, policy=policy, extra=extra, sessions=sessions, warmup=warmup)


def _serve_one(port: int, address: str, show: bool, *, policy, extra, sessions: dict, warmup: bool) -> int:
    """:func:`serve` in this process alone: every session (the lecturer's and, in classroom
    mode, the students') on ``address:port``. Raises ValueError when it cannot listen."""
    from . import classroom as cl
    classroom = policy.classroom
    try:   # binds the port (the server starts below)
        if not port:
            port = _free_port(address)
        url = cl.student_url(address, port)
        factory = make_app_factory(policy, cl.SessionGate(policy), student_url=url if classroom else None)
        server = _listen(factory, port, address, _origins(address, port, extra), show=show, sessions=sessions)
    except OSError as exc:
        raise ValueError(_bind_error(address, port, exc)) from None
    if warmup:   # after the port is ours: a refused port costs no compile
        _warm()
    host = f"[{address}]" if ":" in address else address
    print(f"gaplab app: serving on http://{host}:{port}/ (Ctrl+C to stop)", file=sys.stderr, flush=True)
    if classroom:
        print(f"gaplab app: classroom mode: students open {url}", flush=True)
        print(f"gaplab app: classroom limits: {_describe(policy)}", file=sys.stderr, flush=True)
    _run(server, show)
    return 0


def _listen(factory, port: int, address: str, origins, *, sessions: dict, show: bool = False):
    """A Bokeh server of the per-session ``factory`` on ``address:port``, bound but not started;
    ``sessions``: ``unused_session_lifetime_ms`` and ``check_unused_sessions_ms``. Raises
    OSError when it cannot listen."""
    import panel as pn
    return pn.serve({"/": factory}, port=port, address=address, show=show, start=False,
                    websocket_origin=list(origins), title="gaplab · Minding the gaps",
                    unused_session_lifetime_milliseconds=sessions["unused_session_lifetime_ms"],
                    check_unused_sessions_milliseconds=sessions["check_unused_sessions_ms"])


def _policy(classroom: bool, address: str, *, allow_heavy: bool, path_roots, **caps):
    """The server's :class:`gaplab.app.classroom.ClassroomPolicy`: every session the lecturer's
    without ``classroom``; otherwise the classroom limits (``caps`` given as None keep the
    policy's defaults). Raises ValueError for a bad path root or cap."""
    from . import classroom as cl
    if not classroom:
        return cl.ClassroomPolicy()
    caps = {k: v for k, v in caps.items() if v is not None}
    return cl.ClassroomPolicy.for_classroom(allow_heavy=allow_heavy, path_roots=cl.path_root_dirs(path_roots),
                                            own_addresses={address}, **caps)


def _run(server, show: bool) -> None:
    """Start ``server`` and run its event loop until Ctrl-C; the server is stopped either way."""
    try:
        server.io_loop.asyncio_loop.set_exception_handler(_drop_writes_to_closed_pages)
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


def _origins(address: str, port: int, extra) -> list:
    """Bokeh's ``allow_websocket_origin``: this server's own addresses and ``extra`` (a host
    without a port: this server's port)."""
    import socket
    out = [f"localhost:{port}", f"127.0.0.1:{port}"]
    if address in ("0.0.0.0", "::"):   # every interface: pages may come by the host name
        out.append(f"{socket.gethostname()}:{port}")
    elif address not in ("127.0.0.1", "localhost"):
        out.append(f"{address}:{port}" if ":" not in address else f"[{address}]:{port}")
    for o in extra:
        has_port = o.rsplit(":", 1)[-1].isdigit() and (not o.startswith("[") or "]:" in o)
        out.append(o if has_port else f"{o}:{port}")
    return list(dict.fromkeys(out))


def _describe(policy) -> str:
    roots = ", ".join(str(p) for p in policy.path_roots) if policy.path_roots else "off"
    return (f"heavy datasets {'allowed' if policy.allow_heavy else 'refused'} for students; typed paths: "
            f"{roots}; at most {policy.max_sessions} student sessions, {policy.max_sessions_per_client} per "
            f"computer; at most {policy.max_steps_per_request:,} block steps per request")


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
