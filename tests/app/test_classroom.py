"""Serving a class (``gaplab app --classroom``): who is the lecturer, what a student session may
do, how many sessions the server admits, which page origins may connect, the students' URL
and its QR code, and that page loads that never connect leave no live sessions.

Every server here binds 127.0.0.1. Student sessions are made by a factory whose client address
comes from a test-only request header (the real server reads the TCP peer address). A page load
gets a small shell; its app is built when the page's websocket connects and BokehJS says the
document is ready (:meth:`_Served.open` does what a browser does: the page, then the websocket of
its session, then DocumentReady).
"""
from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from gaplab.app import classroom as cl

pn = pytest.importorskip("panel")


# ----------------------------------------------------------------------------- the policy
def test_lecturer_is_this_machine_only_in_classroom_mode():
    p = cl.ClassroomPolicy.for_classroom(own_addresses={"192.0.2.7"})
    assert p.is_lecturer("127.0.0.1") and p.is_lecturer("127.0.0.5") and p.is_lecturer("::1")
    assert p.is_lecturer("::ffff:127.0.0.1") and p.is_lecturer("192.0.2.7")
    assert not p.is_lecturer("192.0.2.8") and not p.is_lecturer(None) and not p.is_lecturer("not an ip")
    # outside classroom mode every session is the lecturer's (gaplab app on 127.0.0.1)
    assert cl.ClassroomPolicy().is_lecturer("192.0.2.8")
    # the students' own process: every session is a student's, this machine's too
    only = cl.ClassroomPolicy.for_classroom(students_only=True, own_addresses={"192.0.2.7"})
    assert not any(only.is_lecturer(a) for a in ("127.0.0.1", "::1", "192.0.2.7", "192.0.2.8"))
    assert only.limits("127.0.0.1").student


def test_the_policy_reaches_the_students_process_as_json_unchanged(tmp_path):
    import json

    from gaplab.app.students import policy_from_json, policy_json, splits
    p = cl.ClassroomPolicy.for_classroom(allow_heavy=True, path_roots=[tmp_path], students_only=True,
                                         max_steps_per_request=77, max_sessions_per_client=3, max_sessions=9,
                                         heavy={"seg-tiny", "conll2000"})
    assert policy_from_json(json.loads(json.dumps(policy_json(p)))) == p
    with pytest.raises(ValueError, match="max_sessions"):
        policy_from_json(dict(policy_json(p), max_sessions=0))
    # which addresses get a students' process: not the lecturer's own address, nor every interface
    assert splits("192.168.1.20") and splits("127.0.0.2") and splits("fe80::1")
    assert not any(splits(a) for a in ("127.0.0.1", "localhost", "0.0.0.0", "::"))


def test_student_limits_heavy_datasets_paths_and_steps():
    p = cl.ClassroomPolicy.for_classroom(max_steps_per_request=500)
    student, lecturer = p.limits("192.0.2.8"), p.limits("127.0.0.1")
    for name in ("conll2000", "horse-small", "lsp-pose"):
        assert "not offered to students" in student.dataset_refusal(name)
        assert lecturer.dataset_refusal(name) is None
    assert student.dataset_refusal("ocr-small") is None
    assert student.datasets(["ocr-small", "conll2000", "toy"]) == ["ocr-small", "toy"]
    assert student.steps(200_000) == 500 and student.steps(20) == 20 and lecturer.steps(200_000) == 200_000
    assert not student.typed_paths and lecturer.typed_paths and lecturer.path_roots is None
    with pytest.raises(ValueError, match="typed paths are off"):
        student.check_path("/etc/passwd")
    heavy_ok = cl.ClassroomPolicy.for_classroom(allow_heavy=True).limits("192.0.2.8")
    assert heavy_ok.dataset_refusal("conll2000") is None


def test_student_paths_go_through_the_typed_path_check_with_the_roots(tmp_path, monkeypatch):
    """With --path-root, a student's typed path is checked by
    gaplab.app.typed_paths.check_typed_path(text, roots=the lecturer's folders)."""
    import types
    calls = []

    def check_typed_path(text, roots=None):   # a stand-in recording the call
        calls.append((text, roots))
        return tmp_path
    monkeypatch.setitem(sys.modules, "gaplab.app.typed_paths",
                        types.SimpleNamespace(check_typed_path=check_typed_path))
    p = cl.ClassroomPolicy.for_classroom(path_roots=[tmp_path])
    assert p.limits("192.0.2.8").check_path("x") == tmp_path
    assert calls == [("x", (tmp_path.resolve(),))]


def test_policy_refuses_bad_caps():
    for kw in (dict(max_sessions=0), dict(max_sessions_per_client=-1), dict(max_steps_per_request=True),
               dict(student_refresh_ms=5)):
        with pytest.raises(ValueError, match=next(iter(kw))):
            cl.ClassroomPolicy(**kw)


def test_gate_caps_per_client_and_in_total():
    p = cl.ClassroomPolicy.for_classroom(max_sessions_per_client=2, max_sessions=3)
    g = cl.SessionGate(p)
    assert g.admit("192.0.2.1") is None and g.admit("192.0.2.1") is None
    assert "2 open sessions from your computer" in g.admit("192.0.2.1")
    assert g.admit("192.0.2.2") is None
    assert "server is full" in g.admit("192.0.2.3")
    for _ in range(5):   # the lecturer is never refused nor counted with the students
        assert g.admit("127.0.0.1") is None
    assert g.counts() == {"lecturer": 5, "students": 3, "clients": {"192.0.2.1": 2, "192.0.2.2": 1}}
    g.release("192.0.2.1")
    assert g.admit("192.0.2.3") is None
    assert "server is full" in g.admit("192.0.2.1")


def test_origins_and_urls():
    assert cl.check_origin("http://192.168.1.20:5006/") == "192.168.1.20:5006"
    assert cl.check_origin("lab-pc.local") == "lab-pc.local"
    assert cl.check_origin("[fe80::1]:5006") == "[fe80::1]:5006"
    for bad in ("a b", "host:0", "host:99999", "user@host", "host/x", ""):
        with pytest.raises(ValueError, match="--allow-origin"):
            cl.check_origin(bad)
    from gaplab.app.serve import _origins
    got = _origins("192.0.2.7", 5006, ["lab-pc.local", "10.1.2.3:8080"])
    assert got == ["localhost:5006", "127.0.0.1:5006", "192.0.2.7:5006", "lab-pc.local:5006", "10.1.2.3:8080"]
    assert cl.student_url("192.0.2.7", 5006) == "http://192.0.2.7:5006/"
    assert cl.student_url("fe80::1", 80) == "http://[fe80::1]:80/"


def test_network_address_is_an_address_of_this_machine_or_every_interface():
    import ipaddress
    addr = cl.network_address()
    assert addr == "0.0.0.0" or not ipaddress.ip_address(addr).is_loopback


def test_qr_code_is_an_svg_of_the_url_with_an_escaped_title():
    import segno
    url = "http://192.0.2.7:5006/?a=<b>"
    svg = cl.qr_svg(url, scale=4)
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    side = segno.make(url, error="m").symbol_size(scale=4, border=2)[0]
    assert int(root.get("width")) == side
    assert "<b>" not in svg and "&lt;b&gt;" in svg
    assert "<script" not in svg.lower()


# ----------------------------------------------------------------------------- a served app
class _Served:
    """A server of make_app_factory on 127.0.0.1 in this process (its own event loop); the
    client address of a session is the request's X-Test-Client header (test only)."""

    def __init__(self, policy, lifetime_ms=500):
        from gaplab.app.serve import make_app_factory
        from gaplab.app.testing import free_port
        self.gate = cl.SessionGate(policy)
        self.made = []
        self.clients = []
        self.most_students = 0

        def client_of(doc):
            return doc.session_context.request.headers.get("X-Test-Client", "127.0.0.1")
        inner = make_app_factory(policy, self.gate, student_url="http://192.0.2.7:5006/", client_of=client_of)

        def factory():
            obj = inner()
            self.made.append(obj)
            self.most_students = max(self.most_students, self.gate.counts()["students"])
            return obj
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.server = pn.serve({"/": factory}, port=self.port, address="127.0.0.1", start=False, show=False,
                               websocket_origin=[f"127.0.0.1:{self.port}"],
                               unused_session_lifetime_milliseconds=lifetime_ms,
                               check_unused_sessions_milliseconds=max(100, lifetime_ms // 2))
        self.server.start()

    def run(self, coro):
        return self.server.io_loop.asyncio_loop.run_until_complete(coro)

    async def get(self, path="", client=None):
        from tornado.httpclient import AsyncHTTPClient
        headers = {"X-Test-Client": client} if client else {}
        return await AsyncHTTPClient().fetch(self.url + path, headers=headers, request_timeout=300)

    async def open(self, path="", client=None):
        """What a browser does: load the page, connect its session's websocket, send
        DocumentReady; returns the session's app (None: the page was refused) once built."""
        from bokeh.util.token import get_session_id
        page = await self.get(path, client)
        shell = self.made[-1]
        if type(shell).__name__ == "HTML":   # the refusal page
            return None
        token = re.search(r'"token":\s*"([^"]+)"', page.body.decode()).group(1)
        sid = get_session_id(token)
        loop = asyncio.get_running_loop()
        self.clients.append(await loop.run_in_executor(None, lambda: _ready_client(self.url, sid)))
        deadline = time.time() + 300
        while time.time() < deadline and _app_of(shell) is None:
            await asyncio.sleep(0.05)
        return _app_of(shell)

    def in_doc(self, shell, fn):
        """``fn()`` in the shell's document's next tick (with its lock, as a button's handler)."""
        async def go():
            fut = asyncio.get_running_loop().create_future()

            def call():
                try:
                    fut.set_result(fn())
                except Exception as exc:   # pragma: no cover - reported by the test
                    fut.set_exception(exc)
            shell.doc.add_next_tick_callback(call)
            return await fut
        return self.run(go())

    async def wait_sessions(self, n, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline and len(self.server.get_sessions("/")) > n:
            await asyncio.sleep(0.1)
        return len(self.server.get_sessions("/"))

    def close(self):
        for c in self.clients:
            c.close()
        for obj in self.made:
            app = _app_of(obj)
            if app is not None:
                app.close()
        self.server.stop()


def _app_of(shell):
    """The app a page's shell holds once built (None before, and for a refusal page)."""
    return getattr(shell, "app", None)


def _ready_client(url, session_id):
    """A websocket client of the page's session that has sent DocumentReady (as BokehJS does
    once the page is drawn); the server has handled it when this returns."""
    from bokeh.client import pull_session
    from bokeh.events import DocumentReady
    client = pull_session(session_id=session_id, url=url)
    client.document.callbacks.send_event(DocumentReady())
    client.request_server_info()   # a reply after the event: handled in order
    return client


@pytest.fixture
def served():
    made = []

    def make(policy, **kw):
        s = _Served(policy, **kw)
        made.append(s)
        return s
    yield make
    for s in made:
        s.close()


@pytest.mark.slow   # about 50 s of page polls and session releases; .ci/run runs the slow set
def test_polling_the_page_leaves_no_live_sessions(served):
    """A client polling the page (plain loads, no websocket) makes sessions that are released
    within the unused-session lifetime: N polls do not leave N live sessions, the gate's counts
    return to zero, and no poll built an app (a page that never connects gets only the shell)."""
    srv = served(cl.ClassroomPolicy.for_classroom(max_sessions_per_client=3, max_sessions=5))

    async def poll():
        for _ in range(12):
            await srv.get(client="192.0.2.9")
        for _ in range(4):
            await srv.get()   # the lecturer
        return await srv.wait_sessions(0)

    assert srv.run(poll()) == 0
    assert len(srv.made) == 16
    assert srv.gate.counts() == {"lecturer": 0, "students": 0, "clients": {}}
    # at most 3 of the student's polls were apps at any time (the others got the busy page)
    assert srv.most_students <= 3
    assert [type(m).__name__ for m in srv.made].count("PageShell") >= 4   # the lecturer's 4 at least
    assert not [m for m in srv.made if _app_of(m) is not None]


def test_a_page_load_gets_the_shell_and_its_app_only_when_the_websocket_connects(served):
    srv = served(cl.ClassroomPolicy.for_classroom(), lifetime_ms=60_000)

    async def visit():
        r = await srv.get(client="192.0.2.9")
        assert r.code == 200 and "opening the app" in srv.made[-1].note.object
        assert _app_of(srv.made[-1]) is None
        app = await srv.open(client="192.0.2.9")
        return app
    app = srv.run(visit())
    assert _app_of(srv.made[0]) is None   # the plain page load: never an app
    assert app is not None and app.limits.student and _app_of(srv.made[1]) is app
    assert app._page_loaded   # its own onload ran after it joined the page


def test_caps_refuse_the_extra_session_with_a_page_saying_why(served):
    srv = served(cl.ClassroomPolicy.for_classroom(max_sessions_per_client=2, max_sessions=3), lifetime_ms=60_000)

    async def visit():
        apps = []
        for c in ("192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.2", "192.0.2.3", "127.0.0.1"):
            apps.append(await srv.open(client=c))
        return apps
    apps = srv.run(visit())
    kinds = [type(m).__name__ for m in srv.made]
    assert kinds == ["PageShell", "PageShell", "HTML", "PageShell", "HTML", "PageShell"], kinds
    assert [a is None for a in apps] == [False, False, True, False, True, False]
    texts = [m.object for m in srv.made if type(m).__name__ == "HTML"]
    assert "2 open sessions from your computer" in texts[0] and "server is full" in texts[1]
    assert srv.gate.counts()["students"] == 3
    lecturer = apps[-1]
    assert lecturer.limits.lecturer and lecturer.qr_pane is not None
    assert "192.0.2.7:5006" in lecturer.qr_pane.object and "<svg" in lecturer.qr_pane.object
    assert apps[0].limits.student and apps[0].qr_pane is None


def test_heavy_dataset_names_are_registered_problems():
    from gaplab.core.problems import problem_names
    assert cl.HEAVY_DATASETS <= set(problem_names())


def test_heavy_dataset_is_refused_to_a_student_and_not_to_the_lecturer(served):
    """A heavy dataset (here seg-tiny, declared heavy: the data of the real ones may not be
    installed) is refused in a student's URL and picker, and offered to the lecturer."""
    policy = cl.ClassroomPolicy.for_classroom(max_steps_per_request=50, heavy={"seg-tiny"})
    srv = served(policy, lifetime_ms=60_000)

    async def visit():
        return [await srv.open("?dataset=seg-tiny&steps=7", client="192.0.2.4"),
                await srv.open("?dataset=toy", client="192.0.2.4"),
                await srv.open("?dataset=toy")]   # the lecturer
    url_student, student, lecturer = srv.run(visit())
    assert url_student.session.dataset == "ocr-small"   # the URL's dataset was refused, with a notice
    pending = url_student._url_pending
    notices = [t for _lvl, t in url_student.session.messages()] + (pending.notices if pending else [])
    assert any("seg-tiny is not offered to students" in t for t in notices), notices

    def offered(app):
        opts = app.widgets["dataset"].options
        return list(opts.values()) if isinstance(opts, dict) else list(opts)
    # the picker offers no heavy dataset; a value sent anyway is refused and reverted
    assert "seg-tiny" not in offered(student) and "toy" in offered(student)
    assert "seg-tiny" in offered(lecturer)
    assert student.session.wait_idle(120)
    student.session.dataset = "seg-tiny"
    assert student.session.dataset == "toy" and student.session.status != "loading"
    assert any("seg-tiny is not offered to students" in t for _lvl, t in student.session.messages())
    assert lecturer.session.wait_idle(120)
    lecturer.session.dataset = "seg-tiny"
    assert lecturer.session.wait_idle(120) and lecturer.session.dataset == "seg-tiny"
    assert lecturer.session.problem is not None and lecturer.session.problem.name == "seg-tiny"


def test_student_step_budget_cuts_step_n_and_run(served):
    srv = served(cl.ClassroomPolicy.for_classroom(max_steps_per_request=30), lifetime_ms=60_000)
    app = srv.run(srv.open("?dataset=toy", client="192.0.2.5"))
    s = app.session
    assert s.wait_idle(120)
    s.n_steps = 1000
    srv.in_doc(srv.made[0], app.on_step_n)   # as the button's handler: with the document's lock
    assert s.wait_idle(120)
    assert s.solver.iteration == 30
    assert any("at most 30 block steps per request" in t for _lvl, t in s.messages())
    srv.in_doc(srv.made[0], app.on_run)
    assert s.wait_idle(120)
    assert s.solver.iteration == 60


def test_printed_url_and_origins_of_the_cli(tmp_path):
    """``gaplab app --classroom --address 127.0.0.1`` prints the URL students type; a
    websocket from an origin given with --allow-origin is accepted, any other refused (403)."""
    from gaplab.app.testing import free_port
    port = free_port()
    log = tmp_path / "server.log"
    out = tmp_path / "server.out"
    cmd = [sys.executable, "-m", "gaplab", "app", "--classroom", "--address", "127.0.0.1", "--port", str(port),
           "--allow-origin", "lab-pc.invalid"]
    with open(out, "w") as fo, open(log, "w") as fe:
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and "serving on" not in log.read_text():
            assert proc.poll() is None, log.read_text()
            time.sleep(0.2)
        assert f"students open http://127.0.0.1:{port}/" in out.read_text()
        assert asyncio.run(_ws_status(port, f"http://lab-pc.invalid:{port}")) == 101
        assert asyncio.run(_ws_status(port, f"http://elsewhere.invalid:{port}")) == 403
    finally:
        proc.terminate()
        proc.wait(20)


async def _ws_status(port, origin):
    """The HTTP status of a websocket upgrade to the server's page session with ``origin``."""
    from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
    from tornado.websocket import websocket_connect
    page = await AsyncHTTPClient().fetch(f"http://127.0.0.1:{port}/", request_timeout=300)
    token = re.search(r'"token":\s*"([^"]+)"', page.body.decode()).group(1)
    req = HTTPRequest(f"ws://127.0.0.1:{port}/ws", headers={"Origin": origin}, request_timeout=120)
    try:
        conn = await websocket_connect(req, subprotocols=["bokeh", token])
    except HTTPClientError as exc:
        return exc.code
    conn.close()
    return 101


# ----------------------------------------------------------------------------- the lecturer first
def test_loop_share_bounds_the_students_redraws_and_yields_to_the_lecturer(monkeypatch):
    """Students' redraws stop once they took the share of the window, start again as the
    window slides, wait after a lecturer's action, and a page starved for starve_s redraws."""
    clock = [100.0]
    monkeypatch.setattr(cl.time, "monotonic", lambda: clock[0])
    share = cl.LoopShare(fraction=0.25, window_s=1.0, lecturer_grace_s=0.3, starve_s=3.0)
    assert share.may_run()
    share.spend(0.2)
    assert share.may_run()
    share.spend(0.1)   # 0.3 s of the last 1 s: more than a quarter
    assert not share.may_run(idle_s=1.0)
    assert share.may_run(idle_s=3.0)   # starved pages still redraw
    clock[0] += 1.01
    assert share.may_run()   # the window has slid past both
    share.lecturer_acted()
    assert not share.may_run() and not share.may_run(idle_s=10.0)
    clock[0] += 0.31
    assert share.may_run()
    for bad in ({"fraction": 0}, {"fraction": 1.5}, {"window_s": 0}, {"lecturer_grace_s": -1}, {"starve_s": 0}):
        with pytest.raises(ValueError, match="must be"):
            cl.LoopShare(**bad)


def test_a_students_step_runs_in_the_worker_and_publishes_at_the_page_refresh(served):
    """In a classroom a student's Step is queued to the session's worker (the event loop only
    queues it), its snapshots are published at the student page's refresh period, and the
    lecturer's session steps on the loop as before."""
    policy = cl.ClassroomPolicy.for_classroom(student_refresh_ms=500)
    srv = served(policy, lifetime_ms=60_000)

    async def visit():
        return await srv.open("?dataset=toy", client="192.0.2.5"), await srv.open("?dataset=toy")
    student, lecturer = srv.run(visit())
    assert student.session.wait_idle(120) and lecturer.session.wait_idle(120)
    assert student.limits.loop_share is srv.gate.loop_share and lecturer.limits.loop_share is srv.gate.loop_share
    assert student.session.snapshot_period_s == 0.5 and lecturer.session.snapshot_period_s == 0.1
    queued = []
    monkeypatch_key = student.session.key_action
    student.session.key_action = lambda a, c: queued.append((a, c)) or monkeypatch_key(a, c)
    it0 = student.session.solver.iteration
    srv.in_doc(srv.made[0], student.on_step)
    assert queued == [("step", 1)]
    assert student.session.wait_idle(120)
    assert student.session.solver.iteration == it0 + 1
    it1 = lecturer.session.solver.iteration
    srv.in_doc(srv.made[1], lecturer.on_step)   # on the loop: taken when the handler returns
    assert lecturer.session.solver.iteration == it1 + 1


# ----------------------------------------------------------------------------- the students' own process
def _start_cli(tmp_path, *args):
    """``gaplab app --classroom ARGS`` (stdout, stderr to files); returns (proc, out, log) once
    it says "serving on" (or has exited)."""
    out, log = tmp_path / "server.out", tmp_path / "server.log"
    cmd = [sys.executable, "-m", "gaplab", "app", "--classroom", *args]
    with open(out, "w") as fo, open(log, "w") as fe:
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe)
    deadline = time.time() + 300
    while time.time() < deadline and "serving on" not in log.read_text() and proc.poll() is None:
        time.sleep(0.2)
    return proc, out, log


def _students_pid(log) -> int:
    m = re.search(r"the students' server is process (\d+)", log.read_text())
    assert m, log.read_text()
    return int(m.group(1))


def _proc_stat(pid):
    """(ppid, nice) of a process, from /proc/PID/stat (fields 4 and 19)."""
    text = open(f"/proc/{pid}/stat").read()
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[16])


def _tcp_sockets(pid) -> set:
    """{(local address, local port, "listen"/"established")} of the TCP sockets process ``pid`` holds."""
    import os
    import socket
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    out = set()
    for line in open(f"/proc/{pid}/net/tcp").read().splitlines()[1:]:
        parts = line.split()
        if parts[9] in inodes:
            ip_hex, port_hex = parts[1].split(":")
            state = {"0A": "listen", "01": "established"}.get(parts[3], parts[3])
            out.add((socket.inet_ntoa(bytes.fromhex(ip_hex)[::-1]), int(port_hex, 16), state))
    return out


def _page_texts(client, want, timeout=300):
    """The string properties of every model of a connected page's document (pulled again from
    the server), once ``want(texts)`` holds."""
    deadline = time.time() + timeout
    while True:
        client.pull()
        texts = [v for m in client.document.models for v in m.properties_with_values(include_defaults=False).values()
                 if isinstance(v, str)]
        if want(texts) or time.time() > deadline:
            return texts
        time.sleep(0.5)


def _connect(url):
    """A page's session (its websocket connected, DocumentReady sent, as BokehJS does)."""
    import panel.models  # noqa: F401 - the document's model types, as the page's BokehJS has them

    import gaplab.app.main  # noqa: F401 - the app's own component types
    from bokeh.client import pull_session
    from bokeh.events import DocumentReady
    client = pull_session(url=url)
    client.document.callbacks.send_event(DocumentReady())
    return client


def _live_mark_processes(port) -> list:
    """Pids of live students' processes of ``port`` (their command line names the port)."""
    import os

    from gaplab.app.students import CHILD_MARK
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                args = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
                state = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if CHILD_MARK.encode() in args and str(port).encode() in args and state != "Z":
                out.append(int(d))
    return out


def test_a_classroom_on_another_address_serves_the_students_in_a_niced_child_process(tmp_path):
    """``--address 127.0.0.2``: the lecturer's page is served on 127.0.0.1 by the command's own
    process and shows the students' URL and its QR code; the students' server is a child process
    at nice +10 listening on 127.0.0.2, where a page (from this machine too) is a student's, with
    the students' limits; Ctrl-C (SIGINT to the command) stops both, with no traceback."""
    import os
    import signal
    import urllib.request

    from gaplab.app.students import free_port_pair
    port = free_port_pair("127.0.0.1", "127.0.0.2")
    proc, out, log = _start_cli(tmp_path, "--address", "127.0.0.2", "--port", str(port),
                                "--max-sessions-per-client", "1")
    clients = []
    try:
        assert proc.poll() is None, log.read_text()
        student_url = f"http://127.0.0.2:{port}/"
        assert f"gaplab app: classroom mode: students open {student_url}" in out.read_text()
        child = _students_pid(log)
        ppid, nice = _proc_stat(child)
        assert ppid == proc.pid and nice == min(19, _proc_stat(proc.pid)[1] + 10)
        assert os.getpriority(os.PRIO_PROCESS, child) == nice
        assert ("127.0.0.1", port, "listen") in _tcp_sockets(proc.pid)
        assert ("127.0.0.2", port, "listen") in _tcp_sockets(child)
        assert not [s for s in _tcp_sockets(proc.pid) if s[0] == "127.0.0.2"]
        assert not [s for s in _tcp_sockets(child) if s[0] == "127.0.0.1"]
        # the lecturer's page: the students' URL and its QR code
        clients.append(_connect(f"http://127.0.0.1:{port}/"))
        texts = _page_texts(clients[-1], lambda t: any(student_url in x and "svg" in x for x in t))
        assert any(student_url in x and "svg" in x for x in texts), log.read_text()[-3000:]
        assert "Students' URL" in texts
        # a student's page: its websocket is the child's; no QR toggle; the per-client cap refuses a second page
        clients.append(_connect(student_url))
        texts = _page_texts(clients[-1], lambda t: "Step" in t)
        assert "Step" in texts and "Students' URL" not in texts, log.read_text()[-3000:]
        assert ("127.0.0.2", port, "established") in _tcp_sockets(child)
        assert not [s for s in _tcp_sockets(proc.pid) if s[0] == "127.0.0.2"]
        clients.append(_connect(student_url))   # a second page from this computer: over the cap of 1
        texts = _page_texts(clients[-1], lambda t: any("open sessions from your computer" in x for x in t))
        assert any("This server already has 1 open sessions from your computer" in x for x in texts)
        for _ in range(2):   # the lecturer's page loads are never refused
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=120) as r:
                assert r.status == 200
        assert log.read_text().count("refused a session") == 1, log.read_text()[-3000:]
        assert "opened (student, 127.0.0.1)" in log.read_text() and "opened (lecturer, 127.0.0.1)" in log.read_text()
        for c in clients:
            c.close()
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(60) == 0, log.read_text()[-3000:]
        assert not os.path.exists(f"/proc/{child}") and _live_mark_processes(port) == []
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(20)


def test_the_students_process_cannot_listen_one_line_and_no_process_left(tmp_path):
    """A port in use on the students' address: the command's one-line error (exit 2), nothing
    printed as served, and no students' process left."""
    import socket

    from gaplab.app.students import free_port_pair
    port = free_port_pair("127.0.0.1", "127.0.0.2")
    with socket.socket() as taken:
        taken.bind(("127.0.0.2", port))
        taken.listen()
        proc, out, log = _start_cli(tmp_path, "--address", "127.0.0.2", "--port", str(port))
        assert proc.wait(120) == 2
    lines = log.read_text().strip().splitlines()
    assert lines == [f"gaplab app: error: port {port} on 127.0.0.2 is already in use (another server?); choose another "
                     "--port, or --port 0 for any free port"], lines
    assert "serving on" not in out.read_text() + log.read_text() and "students open" not in out.read_text()
    assert _live_mark_processes(port) == []


def test_a_students_process_that_dies_is_said_and_the_lecturer_keeps_serving(tmp_path):
    """``--port 0`` picks a port free on both addresses; a killed students' process is reported
    in one line and the lecturer's page still loads; SIGTERM stops the command (exit 0)."""
    import os
    import signal
    import urllib.request
    proc, out, log = _start_cli(tmp_path, "--address", "127.0.0.2", "--port", "0")
    try:
        assert proc.poll() is None, log.read_text()
        port = int(re.search(r"serving on http://127\.0\.0\.1:(\d+)/", log.read_text()).group(1))
        assert f"students open http://127.0.0.2:{port}/" in out.read_text()
        child = _students_pid(log)
        os.kill(child, signal.SIGKILL)
        deadline = time.time() + 60
        while time.time() < deadline and "the students' server" not in log.read_text().split("limits:")[-1]:
            time.sleep(0.2)
        said = [ln for ln in log.read_text().splitlines() if "ended (killed by signal 9)" in ln]
        assert len(said) == 1 and f"process {child}" in said[0] and "lecturer's page keeps working" in said[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=120) as r:
            assert r.status == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(20)


def test_a_students_process_that_never_listens_is_one_line_naming_where_and_is_stopped(tmp_path, monkeypatch):
    """A students' process stuck before it listens (here: an ``--import`` module that never
    returns) gives the lecturer's start-up one line naming the address and port instead of a
    wait without end; the process is then ended. A setting JSON cannot carry fails before any
    process starts."""
    from pathlib import Path

    from gaplab.app import students as st
    stuck = tmp_path / "stuck_problem.py"
    stuck.write_text("import time\nwhile True:\n    time.sleep(1)\n")
    monkeypatch.setattr(st.StudentsProcess, "ANSWER_TIMEOUT_S", 3.0)
    policy = st.policy_json(cl.ClassroomPolicy.for_classroom())
    cfg = st._child_config(1, "127.0.0.2", (), cl.ClassroomPolicy.for_classroom(), {"unused_session_lifetime_ms": 5000,
                           "check_unused_sessions_ms": 1000}, False, {"imports": [str(stuck)]})
    assert cfg["policy"] == policy
    child = st.StudentsProcess(cfg)
    try:
        reply = child.bound()
        assert not reply.get("bound") and "127.0.0.2:1" in reply["error"] and "did not start listening" in reply["error"]
        assert child.proc.poll() is None   # still stuck: the caller stops it
    finally:
        child.stop(timeout=1.0)
    assert child.proc.poll() is not None
    with pytest.raises(TypeError):
        st.StudentsProcess(dict(cfg, setup={"imports": [Path(stuck)]}))
