"""The parts of ``classroom_bench.py`` that are not the browser: the classroom server in its own
process (``gaplab.app.serve.serve`` with ``classroom=True``) and a student as a Bokeh protocol
client (the messages a student's page sends, without a browser drawing the page).

The server serves the students on 127.0.0.2 (a second loopback address: on Linux it needs no
setup), so that, as on a network address, they get a process of their own
(``gaplab.app.students``) and the lecturer's page on 127.0.0.1 is served by the main process.
A student's address: on one machine every client connects from 127.0.0.1, so the students'
process of this script reads a bench-only ``X-Bench-Client`` header (browser pages) or
``bench_client`` query argument (protocol clients) as the client address (the per-computer
session cap counts by it); only that differs from ``gaplab app --classroom --address 127.0.0.2``.
"""
from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

HEADER = "X-Bench-Client"
ARGUMENT = "bench_client"

#: the students' address of the bench's server (the lecturer's page: 127.0.0.1, same port)
STUDENTS_ADDRESS = "127.0.0.2"


def bench_client_of(doc):
    """A session's client address: the bench's header or query argument, else the request's."""
    from gaplab.app import classroom as cl
    req = getattr(getattr(doc, "session_context", None), "request", None)
    request_address = getattr(cl, "_bench_original_client_of", cl.client_address_of)
    if req is not None:
        args = getattr(req, "arguments", None) or {}
        if args.get(ARGUMENT):
            v = args[ARGUMENT][0]
            return v.decode() if isinstance(v, bytes) else str(v)
        hdr = (getattr(req, "headers", None) or {}).get(HEADER)
        if hdr:
            return hdr
    return request_address(doc)


def serve_classroom(port: int, path_root: str | None, max_sessions: int, per_client: int,
                    one_process: bool = False) -> int:
    """``gaplab app --classroom --address 127.0.0.2 --port PORT``, whose students' process reads
    the bench's client addresses (runs until killed). ``one_process``: as before the students had
    a process of their own, everyone on 127.0.0.1 in this process (the comparison)."""
    from gaplab.app import classroom as cl
    from gaplab.app.serve import serve
    roots = [path_root] if path_root else ()
    if one_process:
        cl._bench_original_client_of = cl.client_address_of
        cl.client_address_of = bench_client_of
        return serve(port=port, address="127.0.0.1", classroom=True, path_roots=roots,
                     max_sessions=max_sessions, max_sessions_per_client=per_client)
    setup = {"sys_path": [str(Path(__file__).resolve().parent)], "client_of": "classroom_clients:bench_client_of"}
    return serve(port=port, address=STUDENTS_ADDRESS, classroom=True, path_roots=roots,
                 max_sessions=max_sessions, max_sessions_per_client=per_client, students_setup=setup)


def students_pid(parent: int) -> int | None:
    """The pid of the students' process of the server process ``parent`` (None: none running)."""
    from gaplab.app.students import CHILD_MARK
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            args = (d / "cmdline").read_bytes().split(b"\0")
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and CHILD_MARK.encode() in args:
            return int(d.name)
    return None


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class ProtocolStudent(threading.Thread):
    """A student's page as a Bokeh protocol client in its own thread and event loop.

    It connects the websocket (``bokeh.client.pull_session``: the server makes the session),
    sends ``DocumentReady`` as a browser does once the page is drawn, applies the server's
    patches to its copy of the document, and clicks Step every ``step_s`` and ▶ Run every
    ``run_s`` s (a ButtonClick event, as the page's button sends; only when the button is
    enabled). ``fifo``: also opens the Regularization path tab and types this path into Open
    store every 2 s (a hostile student).
    """

    def __init__(self, url: str, client: str, *, fifo: str | None = None, step_s=0.5, run_s=5.0):
        super().__init__(daemon=True)
        self.url, self.client, self.fifo = url, client, fifo
        self.step_s, self.run_s = step_s, run_s
        self.clicks = {"step": 0, "run": 0, "fifo": 0}
        self.connected = threading.Event()
        self.error = None
        self._session = self._loop = None
        self._buttons = {}

    def run(self):
        import panel.models  # noqa: F401 - the document's model types, as the page's BokehJS has them

        import gaplab.app.main  # noqa: F401 - the app's own component types
        from bokeh.client import pull_session
        from bokeh.events import DocumentReady
        from tornado.ioloop import IOLoop, PeriodicCallback
        asyncio.set_event_loop(asyncio.new_event_loop())
        self._loop = IOLoop.current()
        try:
            self._session = pull_session(url=self.url, io_loop=self._loop, arguments={ARGUMENT: self.client})
        except Exception as exc:   # counted by the bench
            self.error = f"{type(exc).__name__}: {exc}"
            self.connected.set()
            return
        self._session.document.callbacks.send_event(DocumentReady())
        self.connected.set()
        t0 = time.monotonic()
        PeriodicCallback(lambda: self._tick(t0), self.step_s * 1000).start()
        self._loop.add_callback(self._read)
        self._loop.start()

    async def _read(self):
        """Apply the server's patches as they come (Bokeh's own client loop recurses once per
        message and stops at Python's recursion limit after some thousand messages)."""
        conn = self._session._connection
        while True:
            message = await conn._pop_message()
            if message is None:   # closed
                self.error = self.error or "connection closed by the server"
                self._loop.stop()
                return
            if message.msgtype == "PATCH-DOC":
                self._session._handle_patch(message)

    def _button(self, label):
        b = self._buttons.get(label)
        if b is None or b.document is None or b.label != label:
            b = next((m for m in self._session.document.models if getattr(m, "label", None) == label
                      and type(m).__name__ == "Button"), None)
            self._buttons[label] = b
        return b

    def _click(self, label, key):
        from bokeh.events import ButtonClick
        b = self._button(label)
        if b is not None and b.label == label and not b.disabled:   # as the page's own check
            self._session.document.callbacks.send_event(ButtonClick(b))
            self.clicks[key] += 1

    def _tick(self, t0):
        n = int((time.monotonic() - t0) / self.step_s)
        self._click("Step", "step")
        if n % max(1, round(self.run_s / self.step_s)) == 0:
            self._click("▶ Run", "run")
        if self.fifo and n % max(1, round(2.0 / self.step_s)) == 1:
            self._type_fifo()

    def _type_fifo(self):
        doc = self._session.document
        tabs = next((m for m in doc.models if type(m).__name__ == "Tabs" and len(m.tabs) >= 8), None)
        if tabs is not None and tabs.active != 3:
            tabs.active = 3   # "Regularization path": the server builds the tab
            return
        box = next((m for m in doc.models if type(m).__name__ == "TextInput"
                    and str(getattr(m, "placeholder", "")).startswith("path store directory")), None)
        if box is not None:
            box.value = self.fifo
            self._click("Open store", "fifo")

    def stop(self):
        if self._session is not None and self._loop is not None:
            self.error = self.error or "stopped"
            self._loop.add_callback(self._session.close)
