"""A classroom server in two processes: the lecturer's sessions in the main process, the
students' in a child process at a lower CPU priority.

All sessions of one Bokeh server share one event loop and one GIL: students' pages stepping
and redrawing would delay the lecturer's Step whatever the priority of their solver threads.
With ``gaplab app --classroom`` on a network address (not 127.0.0.1 itself,
nor every interface), :func:`serve_split` runs two Bokeh servers on the same port number:

- the lecturer's, in this process, on 127.0.0.1: every session there is the lecturer's (no
  limits) and its page shows the students' URL and its QR code;
- the students', in a child process (``python -c`` running :func:`child_main`) bound to the
  network address with the classroom policy (every session there is a student's, also one
  opened from the lecturer's own machine), the session gate and the loop share. The whole
  child runs at nice +10: the OS gives the lecturer's process the CPU first.

The two talk over pipes, in JSON lines (no pickle): the parent writes the child's settings and,
later, "first" and "rest" as its own kernel compile passes those phases (the child then loads the
kernels from numba's on-disk cache instead of compiling them a second time at once; meanwhile its
pages step with the reference solver); the child answers on a pipe of its own whether it could
listen. The child's stdin closing (the parent stopped, or died) ends the child, so it never
outlives the parent; the child's log lines go to the same stderr as the parent's.
"""
from __future__ import annotations

import dataclasses
import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

__all__ = ["LECTURER_ADDRESS", "CHILD_MARK", "STUDENTS_NICE", "splits", "free_port_pair", "StudentsProcess",
           "serve_split", "child_main", "policy_json", "policy_from_json"]

#: where the lecturer's own server listens (the page the lecturer opens on the serving machine)
LECTURER_ADDRESS = "127.0.0.1"

#: the first argument of the students' process (``ps`` shows ``... gaplab-students PORT``)
CHILD_MARK = "gaplab-students"

#: how much the students' process lowers its CPU priority (``os.nice``)
STUDENTS_NICE = 10

#: students' addresses that keep one process: the lecturer's own address, and every interface
#: (a wildcard bind would take the lecturer's 127.0.0.1 port too)
_ONE_PROCESS = frozenset({"127.0.0.1", "localhost", "0.0.0.0", "::", ""})


def splits(address: str) -> bool:
    """Whether a classroom served on ``address`` gets a process of its own for the students
    (any address but 127.0.0.1 itself, ``localhost`` and the wildcards, and only on POSIX)."""
    return os.name == "posix" and str(address) not in _ONE_PROCESS


def free_port_pair(a: str, b: str, tries: int = 8) -> int:
    """A TCP port number free on both addresses ``a`` and ``b`` right now.

    Raises
    ------
    OSError
        No such port was found in ``tries`` attempts (or an address cannot be bound)."""
    import socket
    last = None
    for _ in range(tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s1:
            s1.bind((a, 0))
            port = int(s1.getsockname()[1])
            try:
                fam = socket.AF_INET6 if ":" in b else socket.AF_INET
                with socket.socket(fam, socket.SOCK_STREAM) as s2:
                    s2.bind((b, port))
                return port
            except OSError as exc:
                last = exc
    raise last if last is not None else OSError(errno.EADDRINUSE, "no free port")


# ----------------------------------------------------------------------------- the policy over a pipe
def policy_json(policy) -> dict:
    """A :class:`gaplab.app.classroom.ClassroomPolicy` as plain JSON values."""
    out = {}
    for f in dataclasses.fields(policy):
        v = getattr(policy, f.name)
        if isinstance(v, frozenset):
            v = sorted(v)
        elif isinstance(v, tuple):
            v = [str(p) for p in v]
        out[f.name] = v
    return out


def policy_from_json(d: dict):
    """The policy :func:`policy_json` wrote (raises ValueError as the policy does)."""
    from .classroom import ClassroomPolicy
    d = dict(d)
    if d.get("path_roots") is not None:
        d["path_roots"] = tuple(d["path_roots"])
    return ClassroomPolicy(**d)


# ----------------------------------------------------------------------------- the parent's side
class StudentsProcess:
    """The parent's handle on the students' process (started at once; see the module's text).

    Parameters
    ----------
    config : dict
        JSON values: ``port``, ``address``, ``origins``, ``policy`` (:func:`policy_json`),
        ``sessions`` (``unused_session_lifetime_ms``, ``check_unused_sessions_ms``), ``warmup``
        and ``setup`` (what :func:`child_main` does first: ``imports``, ``data_file``,
        ``test_file``, ``sys_path``, ``client_of``).
    """

    #: seconds the parent waits for the child to listen (its imports, ``--import``, ``--data-file``)
    ANSWER_TIMEOUT_S = 180.0

    def __init__(self, config: dict):
        json.dumps(config)   # a value JSON cannot carry (TypeError) fails here, before any process starts
        self.where = f"{config.get('address')}:{config.get('port')}"
        r, w = os.pipe()
        # the parent's import path, not the current folder that ``python -c`` puts first: the
        # child imports the same gaplab and panel as this process
        code = (f"import sys; sys.path[:] = {json.dumps(list(sys.path))}; "
                "from gaplab.app.students import child_main; child_main()")
        try:
            # a session of its own: a terminal's Ctrl-C goes to the parent only, which stops it
            self.proc = subprocess.Popen([sys.executable, "-c", code, CHILD_MARK, str(config["port"])],
                                         stdin=subprocess.PIPE, pass_fds=(w,), text=True, start_new_session=True)
        finally:
            os.close(w)
        self._replies = os.fdopen(r, "r")
        self._lock = threading.Lock()
        self._stopping = False
        self.pid = self.proc.pid
        self._send(json.dumps(dict(config, reply_fd=w)))

    def _send(self, line: str) -> None:
        with self._lock:
            try:
                if self.proc.stdin is not None and not self.proc.stdin.closed:
                    self.proc.stdin.write(line + "\n")
                    self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):   # the child has gone: watch() says so
                pass

    def bound(self) -> dict:
        """Wait for the child's answer: ``{"bound": True, "pid": n}``, or ``{"error": one line,
        "in_use": bool}`` (also when the child ended before it could answer)."""
        import select
        ready, _, _ = select.select([self._replies], [], [], self.ANSWER_TIMEOUT_S)
        if not ready:
            self._replies.close()
            return {"error": f"the students' server process on {self.where} did not start listening within "
                             f"{self.ANSWER_TIMEOUT_S:.0f} s", "in_use": False}
        line = self._replies.readline()
        self._replies.close()
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            code = self.proc.wait()
            return {"error": f"the students' server process on {self.where} ended as it started ({_ended(code)})",
                    "in_use": False}
        return reply

    def follow_warmup(self) -> None:
        """Tell the child when this process's kernel compile has passed its phases ("first":
        the kernels of a Step are in numba's cache; "rest": all are), from a daemon thread."""
        from . import kernels

        def run():
            while kernels.state().status == "compiling":
                time.sleep(0.2)
            self._send("first")
            kernels.wait()
            self._send("rest")
        threading.Thread(target=run, name="gaplab-students-warmup", daemon=True).start()

    def watch(self, url: str) -> None:
        """Say in one line if the child ends while this process serves (a daemon thread)."""
        def run():
            code = self.proc.wait()
            if not self._stopping:
                print(f"gaplab app: the students' server (process {self.pid}, {url}) ended ({_ended(code)}"
                      f"); the lecturer's page keeps working, students cannot connect until gaplab app "
                      "is restarted", file=sys.stderr, flush=True)
        threading.Thread(target=run, name="gaplab-students-watch", daemon=True).start()

    def stop(self, timeout: float = 10.0) -> None:
        """End the child (its stdin closes; killed after ``timeout`` s) and reap it. Idempotent."""
        self._stopping = True
        with self._lock:
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if not self._replies.closed:
            self._replies.close()


def _ended(code: int) -> str:
    """How a process ended, in words: ``exit code N`` or ``killed by signal N``."""
    return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


def _child_config(port, address, extra, students, sessions, warmup, setup) -> dict:
    from .serve import _origins
    return {"port": port, "address": address, "origins": _origins(address, port, extra),
            "policy": policy_json(students), "sessions": dict(sessions), "warmup": bool(warmup),
            "setup": dict(setup or {}), "nice": STUDENTS_NICE}


def _close(server) -> None:
    try:
        server.stop()
    except Exception:   # pragma: no cover - a server that never started: its sockets are closed anyway
        pass


def _bind_both(port, address, students, extra, sessions, warmup, setup):
    """The lecturer's server (bound, not started) and the students' process (listening); with
    ``port`` 0 a port free on both addresses, tried again if it was taken meanwhile.

    Raises
    ------
    ValueError
        One of the two cannot listen (one line, :func:`gaplab.app.serve._bind_error`); nothing is
        left listening and no process is left behind."""
    from . import classroom as cl
    from .serve import _bind_error, _listen, _origins, make_app_factory
    tries = 3 if port == 0 else 1
    for attempt in range(tries):
        last = attempt + 1 == tries
        try:
            p = port or free_port_pair(LECTURER_ADDRESS, address)
        except OSError as exc:
            raise ValueError(_bind_error(address, port, exc)) from None
        url = cl.student_url(address, p)
        lecturer = cl.ClassroomPolicy()   # every session here is the lecturer's
        factory = make_app_factory(lecturer, cl.SessionGate(lecturer), student_url=url)
        try:
            server = _listen(factory, p, LECTURER_ADDRESS, _origins(LECTURER_ADDRESS, p, extra), sessions=sessions)
        except OSError as exc:
            if not last and not port and exc.errno == errno.EADDRINUSE:
                continue
            raise ValueError(_bind_error(LECTURER_ADDRESS, p, exc)) from None
        child = StudentsProcess(_child_config(p, address, extra, students, sessions, warmup, setup))
        try:
            reply = child.bound()
        except BaseException:   # Ctrl-C or SIGTERM while the child starts: it is not reading stdin yet
            child.stop(timeout=1.0)
            _close(server)
            raise
        if reply.get("bound"):
            return server, child, p, url
        child.stop()
        _close(server)
        if last or port or not reply.get("in_use"):
            raise ValueError(str(reply.get("error")))
    raise AssertionError("unreachable")  # pragma: no cover


@contextmanager
def _sigterm_interrupts():
    """SIGTERM stops the server as Ctrl-C does (so the students' process is stopped too);
    only in the main thread (elsewhere nothing changes)."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:   # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def serve_split(port: int, address: str, show: bool, *, policy, extra, sessions: dict, warmup: bool,
                setup: dict | None = None) -> int:
    """Serve a class in two processes (see the module's text) until Ctrl-C or SIGTERM; returns 0.

    ``policy``: the classroom's :class:`~gaplab.app.classroom.ClassroomPolicy` (its limits go to
    the students' process, where every session is a student's); ``extra``: more websocket
    origins; ``sessions``: the unused-session lifetime and check period (ms) of both servers;
    ``setup``: what the students' process does before it listens (see :class:`StudentsProcess`).

    Raises
    ------
    ValueError
        ``address:port`` or ``127.0.0.1:port`` cannot be listened on (one line)."""
    students = dataclasses.replace(policy, students_only=True, own_addresses=frozenset())
    with _sigterm_interrupts():
        return _serve_bound(*_bind_both(port, address, students, extra, sessions, warmup, setup),
                            show=show, policy=policy, warmup=warmup)


def _serve_bound(server, child, port, url, *, show, policy, warmup) -> int:
    """:func:`serve_split` once both servers listen: the log lines, then serve until stopped."""
    from .serve import _describe, _run, _warm
    try:
        child.watch(url)
        if warmup:   # both ports are ours: the compile starts here, the child loads what it wrote
            _warm()
            child.follow_warmup()
        mine = f"http://{LECTURER_ADDRESS}:{port}/"
        err = sys.stderr
        print(f"gaplab app: serving on {mine} (Ctrl+C to stop)", file=err, flush=True)
        print(f"gaplab app: classroom mode: students open {url}", flush=True)
        print(f"gaplab app: classroom mode: the lecturer opens {mine} on this machine (served first, by this "
              f"process); the students' server is process {child.pid} at nice +{STUDENTS_NICE} on {url} (a page "
              "opened there, also from this machine, is a student's)", file=err, flush=True)
        print(f"gaplab app: classroom limits: {_describe(policy)}", file=err, flush=True)
        _run(server, show)
    finally:
        child.stop()
    return 0


# ----------------------------------------------------------------------------- the child's side
def _setup(setup: dict):
    """What the parent's command did before serving (its ``--import`` modules, ``--data-file``),
    again in this process; returns the ``client_of`` function named by ``setup`` (None: the
    request's address). ``client_of`` (``"module:function"``) and ``sys_path`` exist for the
    benchmark, whose students all connect from one machine."""
    for d in setup.get("sys_path") or ():
        if d not in sys.path:
            sys.path.insert(0, d)
    if setup.get("imports"):
        from gaplab.core.problems import import_problems
        for target in setup["imports"]:
            import_problems(target)
    if setup.get("data_file"):
        from gaplab.core.builtin_problems import bind_conll_file
        bind_conll_file(setup["data_file"], setup.get("test_file"))
    name = setup.get("client_of")
    if not name:
        return None
    import importlib
    module, _, attr = str(name).partition(":")
    return getattr(importlib.import_module(module), attr)


def _child_listen(cfg: dict):
    """The students' Bokeh server (bound, not started) and the answer for the parent:
    ``{"bound": True, "pid": n}``, or ``{"error": one line, "in_use": bool}`` with server None."""
    from . import classroom as cl
    from .serve import _bind_error, _ignore_messages_of_closed_pages, _listen, make_app_factory
    try:
        client_of = _setup(cfg.get("setup") or {})
        policy = policy_from_json(cfg["policy"])
    except (OSError, ValueError, ImportError, AttributeError) as exc:   # a bad --import or --data-file
        return None, {"error": f"the students' server: {exc}", "in_use": False}
    _ignore_messages_of_closed_pages()
    factory = make_app_factory(policy, cl.SessionGate(policy), client_of=client_of)
    try:
        server = _listen(factory, int(cfg["port"]), cfg["address"], cfg["origins"], sessions=cfg["sessions"])
    except OSError as exc:
        return None, {"error": _bind_error(cfg["address"], int(cfg["port"]), exc),
                      "in_use": exc.errno == errno.EADDRINUSE}
    return server, {"bound": True, "pid": os.getpid()}


def _follow_parent(events: dict) -> None:
    """Read the parent's lines ("first", "rest": its compile passed that phase); at the end of
    the pipe (the parent stopped us, or has gone) end this process at once."""
    try:
        for line in sys.stdin:
            ev = events.get(line.strip())
            if ev is not None:
                ev.set()
    except (OSError, ValueError):
        pass
    sys.stderr.flush()
    os._exit(0)


def _warm_after_parent(events: dict) -> None:
    """The solver kernels and the default dataset, loaded once the parent has compiled them
    (:func:`gaplab.app.kernels.start` with ``after``); one log line when done."""
    from . import kernels

    def load_default():
        from .session import load_problem
        load_problem("ocr-small")
    kernels.start(log=False, extra=load_default, after=lambda phase: events[phase].wait())

    def report():
        kernels.wait()
        ks = kernels.state()
        what = "ready" if ks.status != "failed" else f"failed ({ks.message})"
        print(f"gaplab app: students' server: solver kernels and default dataset {what} "
              f"{ks.elapsed_s:.1f} s after start", file=sys.stderr, flush=True)
    threading.Thread(target=report, name="gaplab-students-warm-log", daemon=True).start()


def child_main() -> None:
    """The students' process (started by :class:`StudentsProcess`): read the settings from
    stdin, lower this process's priority, listen, answer the parent, serve until stdin ends."""
    from .serve import _run
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the parent stops us (closing our stdin)
    line = sys.stdin.readline()
    try:
        cfg = json.loads(line)
        reply = os.fdopen(int(cfg["reply_fd"]), "w")
    except (ValueError, KeyError, TypeError, OSError):
        os._exit(2)   # not started by StudentsProcess
    server, answer = _child_listen(cfg)   # at full priority: the lecturer's server waits for this answer
    try:
        reply.write(json.dumps(answer) + "\n")
        reply.close()
    except OSError:   # the parent has gone meanwhile
        os._exit(1)
    os.nice(int(cfg.get("nice", STUDENTS_NICE)))
    if server is None:
        os._exit(2)
    events = {"first": threading.Event(), "rest": threading.Event()}
    threading.Thread(target=_follow_parent, args=(events,), name="gaplab-students-parent", daemon=True).start()
    if cfg.get("warmup"):
        _warm_after_parent(events)
    _run(server, False)
    sys.stderr.flush()
    os._exit(0)
