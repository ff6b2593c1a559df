"""One hostile browser value sent to ``gaplab app --classroom`` (a reliability-audit case).

Usage: ``python scripts/reliability_app_client.py WHAT`` with WHAT one of ``counts`` (key counts
``step:1000000`` and a press value of 999999999), ``url`` (a lecturer's page opened at
``?dataset=conll2000&steps=200000``; the data from ``$GAPLAB_DATA``, default
../shared/data), ``url-over`` (``?steps=200001``), ``fifo``,
``/dev/zero``, ``/dev/stdin`` (typed into the path tab's Open store), ``outside`` (a student
types paths outside the lecturer's roots: one that exists, one that does not).

The server is ``gaplab.app.serve.serve(classroom=True)`` as ``benchmarks/classroom_clients.py``
runs it: the lecturer's server on 127.0.0.1, the students' process on
``classroom_clients.STUDENTS_ADDRESS`` (a ``bench_client`` query argument is the client's address
there, so one machine can be a student; a page with one connects to the students' process, the
others to the lecturer's); its stdin is a pipe nobody writes. A page is a Bokeh
protocol client: it sends what a page sends (property changes, button clicks) and applies the
server's patches. After the hostile value the server must keep answering another page: a plain
HTTP GET of ``/`` of both servers within 10 s each, and a Step of a fresh lecturer page that changes what the page
shows within 60 s. Exit 0 when it did; otherwise the last line says what failed.
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")
STUDENT = "192.0.2.10"
sys.path.insert(0, BENCH)
from classroom_clients import STUDENTS_ADDRESS  # noqa: E402

from gaplab.app.students import free_port_pair  # noqa: E402
GET_S, STEP_S = 10.0, 60.0


def start_server(path_root: str, log):
    port = free_port_pair("127.0.0.1", STUDENTS_ADDRESS)   # the lecturer's and the students' server
    code = (f"import sys; sys.path.insert(0, {BENCH!r})\nfrom classroom_clients import serve_classroom\n"
            f"sys.exit(serve_classroom({port}, {path_root!r}, 40, 6))\n")
    env = dict(os.environ, GAPLAB_DATA=os.environ.get("GAPLAB_DATA") or os.path.join(os.path.dirname(ROOT), "shared",
                                                                                       "data"))
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=log, stderr=log,
                            start_new_session=True, env=env)
    t0 = time.time()
    while time.time() - t0 < 300:
        if proc.poll() is not None:
            raise SystemExit(f"the server ended at start (exit {proc.returncode})")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read()
            return proc, port
        except OSError:
            time.sleep(0.5)
    raise SystemExit("the server did not answer within 300 s of its start")


def get_page(port) -> float:
    """The slower of the two servers' answers to a plain GET of ``/`` (seconds)."""
    slowest = 0.0
    for host in ("127.0.0.1", STUDENTS_ADDRESS):
        t0 = time.perf_counter()
        try:
            urllib.request.urlopen(f"http://{host}:{port}/", timeout=GET_S).read()
        except OSError as exc:
            raise SystemExit(f"GET http://{host}:{port}/ failed or took over {GET_S:.0f} s after the hostile "
                             f"value ({exc})")
        slowest = max(slowest, time.perf_counter() - t0)
    return slowest


class Page(threading.Thread):
    """A page as a Bokeh protocol client in its own thread and event loop; :meth:`call` runs a
    function on that loop (where the document may be changed) and returns its result."""

    def __init__(self, port: int, arguments: dict):
        super().__init__(daemon=True)
        host = STUDENTS_ADDRESS if "bench_client" in arguments else "127.0.0.1"   # a student's: their process
        self.url, self.arguments = f"http://{host}:{port}/", arguments
        self.ready, self.error = threading.Event(), None
        self.session = self.loop = None

    def run(self):
        import panel.models  # noqa: F401 - the document's model types, as the page's BokehJS has them

        import gaplab.app.main  # noqa: F401 - the app's own component types
        from bokeh.client import pull_session
        from bokeh.events import DocumentReady
        from tornado.ioloop import IOLoop
        asyncio.set_event_loop(asyncio.new_event_loop())
        self.loop = IOLoop.current()
        try:
            self.session = pull_session(url=self.url, io_loop=self.loop, arguments=self.arguments)
        except Exception as exc:  # noqa: BLE001 - reported as the case's reason
            self.error = f"{type(exc).__name__}: {exc}"
            self.ready.set()
            return
        self.session.document.callbacks.send_event(DocumentReady())
        self.ready.set()
        self.loop.add_callback(self._read)
        self.loop.start()

    async def _read(self):
        conn = self.session._connection
        while True:
            message = await conn._pop_message()
            if message is None:
                self.error = self.error or "connection closed by the server"
                return
            if message.msgtype == "PATCH-DOC":
                self.session._handle_patch(message)

    def call(self, fn, timeout=30.0):
        out, done = {}, threading.Event()

        def run():
            try:
                out["v"] = fn(self.session.document)
            except Exception as exc:  # noqa: BLE001
                out["e"] = exc
            done.set()
        self.loop.add_callback(run)
        if not done.wait(timeout):
            raise SystemExit("the page's own event loop did not run a call within 30 s")
        if "e" in out:
            raise out["e"]
        return out.get("v")

    def texts(self) -> set:
        def grab(doc):
            got = set()
            for m in list(doc.models):
                for attr in ("text", "object", "label", "title", "value"):
                    try:
                        v = getattr(m, attr, None)
                    except Exception:  # noqa: BLE001
                        v = None
                    if isinstance(v, str) and v:
                        got.add(v)
            return got
        return self.call(grab)

    def button(self, label, timeout=180.0):
        """Wait until a Button ``label`` is enabled; the model."""
        t0 = time.time()
        while time.time() - t0 < timeout:
            b = self.call(lambda d: next((m for m in d.models if type(m).__name__ == "Button"
                                          and getattr(m, "label", None) == label and not m.disabled), None))
            if b is not None:
                return b
            if self.error:
                raise SystemExit(f"page: {self.error}")
            time.sleep(0.2)
        raise SystemExit(f"no enabled {label!r} button within {timeout:.0f} s")

    def click(self, label):
        from bokeh.events import ButtonClick
        b = self.button(label)
        self.call(lambda d: d.callbacks.send_event(ButtonClick(b)))

    def close(self):
        if self.session is not None and self.loop is not None:
            self.loop.add_callback(self.session.close)


def open_page(port, **arguments) -> Page:
    p = Page(port, arguments)
    p.start()
    if not p.ready.wait(300) or p.error:
        raise SystemExit(f"a page could not connect: {p.error or 'no session within 300 s'}")
    return p


def lecturer_steps(port) -> float:
    """A fresh lecturer page: Step changes what it shows; the seconds from the click."""
    page = open_page(port)
    try:
        page.button("Step")
        time.sleep(1.0)
        before = page.texts()
        t0 = time.perf_counter()
        page.click("Step")
        while time.perf_counter() - t0 < STEP_S:
            if page.texts() != before:
                return time.perf_counter() - t0
            time.sleep(0.05)
        raise SystemExit(f"a lecturer page's Step changed nothing within {STEP_S:.0f} s after the hostile value")
    finally:
        page.close()


def type_store(page: Page, path: str, wait_s=30.0) -> set:
    """Open the path tab, type ``path`` into Open store, click it; the page's new messages about it."""
    def to_tab(d):
        tabs = next((m for m in d.models if type(m).__name__ == "Tabs" and len(m.tabs) >= 8), None)
        if tabs is None:
            return False
        tabs.active = 3   # "Regularization path"
        return True
    page.button("Step")   # the page is built
    if not page.call(to_tab):
        raise SystemExit("no tab bar in the page")
    t0 = time.time()
    box = None
    while box is None and time.time() - t0 < 120:
        box = page.call(lambda d: next((m for m in d.models if type(m).__name__ == "TextInput"
                                        and str(getattr(m, "placeholder", "")).startswith("path store directory")),
                                       None))
        time.sleep(0.2)
    if box is None:
        raise SystemExit("the path tab's Open store box never appeared")
    before = page.texts()

    def set_value(d):
        box.value = path
    page.call(set_value)
    time.sleep(0.5)
    page.click("Open store")
    t0 = time.time()
    while time.time() - t0 < wait_s:
        new = {t for t in page.texts() - before if "path store" in t and t != path}
        if new:
            return new
        time.sleep(0.2)
    return set()


def hostile(what: str, port: int, work: str) -> str:
    """Send the hostile value; a short description of what the page showed."""
    if what == "counts":
        page = open_page(port, bench_client=STUDENT)
        page.button("Step")

        def press(d):
            m = next((m for m in d.models if getattr(getattr(m, "data", None), "counts", None) is not None), None)
            if m is None:
                return False
            m.data.counts = "step:1000000"
            return True
        if not page.call(press):
            raise SystemExit("no keyboard component with 'counts' in the page")
        time.sleep(2.0)

        def press2(d):
            m = next(m for m in d.models if getattr(getattr(m, "data", None), "press", None) is not None)
            m.data.press = "step:1:999999999"
        page.call(press2)
        time.sleep(2.0)
        shown = [t for t in page.texts() if "dropped" in t]
        return f"counts sent; shown: {shown[:1]}"
    if what in ("url", "url-over"):
        args = {"dataset": "conll2000", "steps": "200000"} if what == "url" else {"steps": "200001"}
        page = open_page(port, **args)
        t0, shown = time.time(), []
        while not shown and time.time() - t0 < 60:
            shown = [t for t in page.texts() if "replay" in t.lower() or "steps" in t.lower()]
            time.sleep(0.5)
        return f"page opened; shown: {[s[:100] for s in shown[:1]]}"
    if what in ("fifo", "/dev/zero", "/dev/stdin"):
        path = what
        if what == "fifo":
            path = os.path.join(work, "fifo")
            os.mkfifo(path)
        page = open_page(port)   # the lecturer: no roots, only the typed-path checks
        new = type_store(page, path)
        return f"Open store {what}: {sorted(t[:100] for t in new)[:2]}"
    if what == "outside":
        secret = os.path.join(work, "secret")
        with open(secret, "w") as f:
            f.write("x")
        page = open_page(port, bench_client=STUDENT)
        seen = {}
        inside = os.path.join(work, "lecture", "no-store-here")
        for p in (secret, os.path.join(work, "missing"), "/etc/passwd", "/no/such/file"):
            type_store(page, inside, wait_s=30.0)   # another message first: the next one is new
            seen[p] = sorted(t.replace(p, "<PATH>") for t in type_store(page, p, wait_s=30.0))
        if len({tuple(v) for v in seen.values()}) != 1:
            raise SystemExit(f"the refusals differ between paths that exist and not: {seen}")
        if not any(seen.values()):
            raise SystemExit("typing a path outside the roots showed nothing")
        return f"one refusal for all: {next(iter(seen.values()))[:1]}"
    raise SystemExit(f"unknown case {what!r}")


def main(what: str) -> int:
    work = tempfile.mkdtemp(prefix="gaplab-audit-app-")
    root = os.path.join(work, "lecture")
    os.makedirs(root)
    log = open(os.path.join(work, "server.log"), "w")
    proc, port = start_server(root, log)
    try:
        said = hostile(what, port, work)
        time.sleep(1.0)
        if proc.poll() is not None:
            raise SystemExit(f"the server ended (exit {proc.returncode}) after: {said}")
        g = get_page(port)
        s = lecturer_steps(port)
        g2 = get_page(port)
        print(f"{said}; then GET / {g:.2f} s, a lecturer's Step {s:.2f} s, GET / {g2:.2f} s")
        log.flush()
        tb = open(os.path.join(work, "server.log")).read()
        if "Traceback" in tb:
            last = [ln for ln in tb.splitlines() if ln.strip()][-1]
            raise SystemExit(f"the server logged a traceback: {last[:200]}")
        return 0
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.split("\n\n")[1])
    sys.exit(main(sys.argv[1]))
