"""Serving a class: the server's policy (:class:`ClassroomPolicy`), the sessions it admits
(:class:`SessionGate`), the address students type (:func:`network_address`, :func:`student_url`)
and the QR code of it shown in the page (:func:`qr_svg`).

``gaplab app --classroom`` binds the machine's network address, allows that origin for Bokeh's
websocket (``allow_websocket_origin``: Bokeh's own check of the Origin header, not a bypass of
it) and applies the policy to every session whose client is not the lecturer. In one process
the lecturer is the browser on the serving machine itself (a loopback client address, or the
machine's own network address): a TCP client address cannot be chosen by a student. On a
network address the students get a process of their own (:mod:`gaplab.app.students`) whose
policy makes every session a student's (``students_only``); the lecturer's page is served on
127.0.0.1 by the main process.

Nothing here keeps state at module level: :func:`gaplab.app.serve.serve` makes one policy and
one gate per server and hands them to the app factory in a closure.
"""
from __future__ import annotations

import dataclasses
import ipaddress
import os
import socket
import threading
import time
from collections import deque
from pathlib import Path

__all__ = ["ClassroomPolicy", "SessionGate", "SessionLimits", "LoopShare", "HEAVY_DATASETS", "network_address",
           "student_url", "qr_svg", "check_origin", "full_page_html"]

#: datasets whose first load takes minutes of CPU or hundreds of MB per session (CoNLL-2000,
#: the horse segmentation images, the LSP pose model): students get them only with --allow-heavy
HEAVY_DATASETS = frozenset({"conll2000", "horse-small", "lsp-pose"})


@dataclasses.dataclass(frozen=True)
class ClassroomPolicy:
    """What the server lets a browser session do. One per server, read-only.

    Parameters
    ----------
    classroom : bool
        Classroom mode: the limits below apply to every session that is not the lecturer's.
        Off (default: ``gaplab app`` on 127.0.0.1), every session is the lecturer's.
    allow_heavy : bool
        Students may open the datasets of ``heavy`` (default False).
    heavy : frozenset of str
        Dataset names refused to students unless ``allow_heavy``.
    path_roots : tuple of Path or None
        Folders under which a student may type a store path (Open store in the path tab, Load
        store in the Sweeps tab). ``()`` (the classroom default): typed paths are off for
        students. None: unrestricted (outside classroom mode).
    max_steps_per_request : int
        Block steps one request of a student session may take: Step ×N's N, a URL's ``steps``
        and one Run are cut to it (>= 1).
    max_sessions_per_client : int
        Live sessions per client address (>= 1); the lecturer's are not counted.
    max_sessions : int
        Live student sessions in total (>= 1).
    student_refresh_ms : int
        How often a student page pulls a snapshot (the lecturer's: every 100 ms); fewer
        redraws of 30 pages leave the server's event loop free for the lecturer's clicks.
    own_addresses : frozenset of str
        Client addresses that are the lecturer (loopback always is; ``serve`` adds the address
        it binds, so the lecturer may open the URL the students type).
    students_only : bool
        Every session is a student's, loopback clients and ``own_addresses`` too: the policy of
        a classroom's students' process, whose lecturer is served by a process of their own
        (:mod:`gaplab.app.students`).

    Raises
    ------
    ValueError
        A count below 1 or a refresh period outside [100, 10000] ms.
    """

    classroom: bool = False
    allow_heavy: bool = False
    heavy: frozenset = HEAVY_DATASETS
    path_roots: tuple | None = None
    max_steps_per_request: int = 20_000
    max_sessions_per_client: int = 4
    max_sessions: int = 40
    student_refresh_ms: int = 400
    own_addresses: frozenset = frozenset()
    students_only: bool = False

    def __post_init__(self):
        for name in ("max_steps_per_request", "max_sessions_per_client", "max_sessions"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an int >= 1; got {v!r}")
        r = self.student_refresh_ms
        if isinstance(r, bool) or not isinstance(r, int) or not 100 <= r <= 10_000:
            raise ValueError(f"student_refresh_ms must be an int in [100, 10000]; got {r!r}")
        if self.path_roots is not None:
            roots = tuple(Path(p).expanduser().resolve() for p in self.path_roots)
            object.__setattr__(self, "path_roots", roots)
        object.__setattr__(self, "heavy", frozenset(self.heavy))
        object.__setattr__(self, "own_addresses", frozenset(self.own_addresses))

    @classmethod
    def for_classroom(cls, *, allow_heavy: bool = False, path_roots=(), own_addresses=(), students_only=False,
                      **limits):
        """The classroom mode's policy: typed paths only under ``path_roots`` (none: off)."""
        return cls(classroom=True, allow_heavy=allow_heavy, path_roots=tuple(path_roots or ()),
                   own_addresses=frozenset(own_addresses), students_only=bool(students_only), **limits)

    def is_lecturer(self, client_address: str | None) -> bool:
        """True for the machine's own browser (loopback, or an address of ``own_addresses``),
        and for every session outside classroom mode; never with ``students_only``."""
        if not self.classroom:
            return True
        if self.students_only or not client_address:
            return False
        addr = str(client_address).split("%", 1)[0]
        try:
            ip = ipaddress.ip_address(addr)
        except ValueError:
            return False
        if ip.is_loopback or (getattr(ip, "ipv4_mapped", None) is not None and ip.ipv4_mapped.is_loopback):
            return True
        return addr in self.own_addresses

    def limits(self, client_address: str | None, loop_share: "LoopShare | None" = None) -> "SessionLimits":
        """The limits of one session whose browser connects from ``client_address``;
        ``loop_share``: the server's :class:`LoopShare` (a student's page redraws within it)."""
        return SessionLimits(self, lecturer=self.is_lecturer(client_address), loop_share=loop_share)


@dataclasses.dataclass(frozen=True)
class SessionLimits:
    """The policy as it applies to one session (a student's or the lecturer's)."""

    policy: ClassroomPolicy
    lecturer: bool
    loop_share: "LoopShare | None" = dataclasses.field(default=None, compare=False)

    @property
    def student(self) -> bool:
        return not self.lecturer

    def dataset_refusal(self, name: str) -> str | None:
        """Why this session may not open dataset ``name`` (None: it may)."""
        p = self.policy
        if self.lecturer or p.allow_heavy or name not in p.heavy:
            return None
        return (f"{name} is not offered to students on this server (its first load takes minutes "
                "of the server's CPU); the lecturer can start the server with --allow-heavy.")

    def datasets(self, names) -> list:
        """The names of ``names`` this session may open (in their order)."""
        return [n for n in names if self.dataset_refusal(n) is None]

    @property
    def path_roots(self):
        """Folders a typed path must lie under (None: any path; ``()``: typed paths are off)."""
        return None if self.lecturer else self.policy.path_roots

    @property
    def typed_paths(self) -> bool:
        """Whether this session may open a typed store path at all."""
        return self.path_roots is None or len(self.path_roots) > 0

    def check_path(self, text) -> Path:
        """``text`` as a path this session may read: a regular file or folder, under the
        policy's ``path_roots`` for a student (:func:`gaplab.app.typed_paths.check_typed_path`).

        Raises
        ------
        ValueError
            Typed paths are off for this session, or the path is refused; the message never
            says whether a path outside the roots exists."""
        if not self.typed_paths:
            raise ValueError("typed paths are off for students on this server (the lecturer can "
                             "name folders with --path-root DIR)")
        from .typed_paths import check_typed_path
        return check_typed_path(text, roots=self.path_roots)

    def steps(self, n: int) -> int:
        """``n`` block steps cut to the per-request budget (students only)."""
        n = int(n)
        return n if self.lecturer else min(n, self.policy.max_steps_per_request)

    @property
    def refresh_ms(self) -> int | None:
        """A student page's refresh period (None: the app's default)."""
        return None if self.lecturer else self.policy.student_refresh_ms


class LoopShare:
    """The share of the server's event loop that the students' pages may take, so that the
    lecturer's Step is answered first (one per server, thread-safe).

    Every page's redraws (a snapshot turned into Bokeh patches) and button handlers run on the
    server's one event loop; 30 students' pages redrawing a running solver would keep it busy,
    and the lecturer's click would wait behind them. A student's page redraws only while the
    students' redraws of the last ``window_s`` took less than ``fraction`` of it, and not within
    ``lecturer_grace_s`` of a lecturer's action (a page not redrawn for ``starve_s`` redraws
    anyway). What is not redrawn is not lost: the next redraw shows the latest snapshot.

    Parameters
    ----------
    fraction : float
        Share of the loop's time in (0, 1] (default 0.25).
    window_s, lecturer_grace_s, starve_s : float
        Seconds (> 0, >= 0, > 0).

    Raises
    ------
    ValueError
        A value outside these ranges.
    """

    def __init__(self, fraction: float = 0.25, window_s: float = 1.0, lecturer_grace_s: float = 0.3,
                 starve_s: float = 3.0):
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"fraction must be in (0, 1]; got {fraction!r}")
        if not (window_s > 0 and lecturer_grace_s >= 0 and starve_s > 0):
            raise ValueError(f"window_s and starve_s must be > 0 and lecturer_grace_s >= 0; got "
                             f"{window_s!r}, {starve_s!r}, {lecturer_grace_s!r}")
        self.fraction, self.window_s = float(fraction), float(window_s)
        self.lecturer_grace_s, self.starve_s = float(lecturer_grace_s), float(starve_s)
        self._lock = threading.Lock()
        self._spent: deque = deque()   # (monotonic end time, seconds) of the students' redraws
        self._sum = 0.0
        self._lecturer = float("-inf")

    def lecturer_acted(self) -> None:
        """The lecturer clicked: students' redraws wait ``lecturer_grace_s``."""
        self._lecturer = time.monotonic()

    def may_run(self, idle_s: float = 0.0) -> bool:
        """Whether a student's page may redraw now (``idle_s``: seconds since it last did)."""
        now = time.monotonic()
        with self._lock:
            if now - self._lecturer < self.lecturer_grace_s:
                return False
            while self._spent and self._spent[0][0] < now - self.window_s:
                self._sum -= self._spent.popleft()[1]
            return self._sum < self.fraction * self.window_s or idle_s >= self.starve_s

    def spend(self, seconds: float) -> None:
        """Count a student's redraw that took ``seconds`` of the loop."""
        with self._lock:
            self._spent.append((time.monotonic(), float(seconds)))
            self._sum += float(seconds)


class SessionGate:
    """Counts the live sessions per client address and admits a new one while the policy's
    caps allow (the lecturer's sessions are counted apart and always admitted). Thread-safe;
    one per server.

    Parameters
    ----------
    policy : ClassroomPolicy
    """

    def __init__(self, policy: ClassroomPolicy):
        self.policy = policy
        #: the students' share of the server's event loop (see LoopShare)
        self.loop_share = LoopShare()
        self._lock = threading.Lock()
        self._by_client: dict[str, int] = {}
        self._lecturer = 0

    def admit(self, client_address: str | None) -> str | None:
        """Count a new session of ``client_address``; returns None when admitted (call
        :meth:`release` with the same address when it ends), else why not (one sentence)."""
        p = self.policy
        key = str(client_address or "?")
        with self._lock:
            if p.is_lecturer(client_address):
                self._lecturer += 1
                return None
            if self._by_client.get(key, 0) >= p.max_sessions_per_client:
                return (f"This server already has {p.max_sessions_per_client} open sessions from your "
                        "computer: close a tab (or wait a few seconds after closing one) and reload.")
            if sum(self._by_client.values()) >= p.max_sessions:
                return (f"This server is full ({p.max_sessions} student sessions are open): try "
                        "again in a minute, or ask the lecturer.")
            self._by_client[key] = self._by_client.get(key, 0) + 1
            return None

    def release(self, client_address: str | None) -> None:
        """One session of ``client_address`` has ended."""
        key = str(client_address or "?")
        with self._lock:
            if self.policy.is_lecturer(client_address):
                self._lecturer = max(0, self._lecturer - 1)
                return
            left = self._by_client.get(key, 0) - 1
            if left > 0:
                self._by_client[key] = left
            else:
                self._by_client.pop(key, None)

    def counts(self) -> dict:
        """``{"lecturer": n, "students": n, "clients": {address: n}}`` (a copy)."""
        with self._lock:
            return {"lecturer": self._lecturer, "students": sum(self._by_client.values()),
                    "clients": dict(self._by_client)}


# ----------------------------------------------------------------------------- addresses
def network_address() -> str:
    """This machine's address on its network (the one students can reach), found without
    sending a packet: a UDP socket "connected" to a non-routable address only picks the
    interface the kernel would route through. Falls back to the host name's IPv4 address, then
    to ``0.0.0.0`` (every interface) when the machine has no network."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.254.254.254", 9))   # UDP connect: no packet leaves the machine
            addr = s.getsockname()[0]
            if addr and not ipaddress.ip_address(addr).is_loopback and addr != "0.0.0.0":
                return addr
    except OSError:
        pass
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            addr = info[4][0]
            if not ipaddress.ip_address(addr).is_loopback:
                return addr
    except (OSError, ValueError):
        pass
    return "0.0.0.0"


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def student_url(address: str, port: int) -> str:
    """The URL students type: ``http://ADDRESS:PORT/`` (``0.0.0.0``: the host name)."""
    host = socket.gethostname() if address in ("0.0.0.0", "::", "") else address
    return f"http://{_host(host)}:{int(port)}/"


def check_origin(text: str) -> str:
    """An ``--allow-origin`` value as Bokeh's ``allow_websocket_origin`` takes it: ``HOST`` or
    ``HOST:PORT`` (a scheme and a trailing slash are dropped).

    Raises
    ------
    ValueError
        Not a host name or address with an optional port in [1, 65535]."""
    raw = str(text).strip()
    s = raw
    for scheme in ("http://", "https://"):
        if s.lower().startswith(scheme):
            s = s[len(scheme):]
    s = s.rstrip("/")
    host, port = s, ""
    if s.startswith("["):   # [ipv6]:port
        end = s.find("]")
        host, rest = s[:end + 1], s[end + 1:]
        port = rest[1:] if rest.startswith(":") else rest
    elif s.count(":") == 1:
        host, port = s.split(":")
    ok_host = bool(host) and len(host) <= 253 and all(c.isalnum() or c in ".-_[]:" for c in host)
    ok_port = port == "" or (port.isdigit() and 1 <= int(port) <= 65535)
    if not (ok_host and ok_port) or "/" in s or "@" in s:
        raise ValueError(f"--allow-origin must be HOST or HOST:PORT (port in [1, 65535]), e.g. "
                         f"192.168.1.20:5006; got {raw!r}")
    return f"{host}:{int(port)}" if port else host


# ----------------------------------------------------------------------------- the page
def qr_svg(url: str, *, scale: int = 4) -> str:
    """The QR code of ``url`` as an inline SVG element (segno; no XML declaration), with the
    URL as its title. The SVG is made by segno from the URL's bytes (the URL itself only goes
    into the escaped title), so it is safe to place in HTML."""
    import segno
    from .safe_html import esc
    import io
    buf = io.BytesIO()
    segno.make(str(url), error="m").save(buf, kind="svg", scale=int(scale), border=2, xmldecl=False,
                                         svgns=True, nl=False, dark="#000", light="#fff",
                                         title=None, desc=None)
    svg = buf.getvalue().decode("ascii")
    return svg.replace(">", f"><title>{esc(url)}</title>", 1)


def full_page_html(reason: str) -> str:
    """The short page an extra session gets instead of the app (escaped)."""
    from .safe_html import esc
    return ("<div style='font:18px sans-serif;max-width:640px;margin:40px auto;line-height:1.5'>"
            "<h2>gaplab · this server is busy</h2>"
            f"<p>{esc(reason)}</p></div>")


def client_address_of(doc) -> str | None:
    """The client address of a served Bokeh document's HTTP request (None outside a server)."""
    ctx = getattr(doc, "session_context", None)
    req = getattr(ctx, "request", None) if ctx is not None else None
    try:
        return getattr(req, "remote_ip", None) if req is not None else None
    except Exception:  # pragma: no cover - a request proxy without the attribute
        return None


def path_root_dirs(values) -> tuple:
    """``--path-root`` values as resolved folders.

    Raises
    ------
    ValueError
        A value that is not an existing folder."""
    out = []
    for v in values or ():
        p = Path(os.path.expanduser(str(v)))
        if not p.is_dir():
            raise ValueError(f"--path-root must name an existing folder; got {str(v)!r}")
        out.append(p.resolve())
    return tuple(out)


# ----------------------------------------------------------------------------- the app's side
def lower_thread_priority(niceness: int = 10) -> None:
    """Lower the calling thread's CPU priority (Linux sets a nice value per thread); a student
    session's worker calls it as it starts, so the lecturer's session and the server's event
    loop get the cores first. No effect where the OS has no per-thread priority."""
    get_tid = getattr(threading, "get_native_id", None)
    if get_tid is None or not hasattr(os, "setpriority"):
        return
    tid = get_tid()
    os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), int(niceness)))


def guard_session(session, limits: SessionLimits) -> None:
    """Give ``session`` (a :class:`gaplab.app.session.Session`) the dataset refusals of
    ``limits`` and, for a student, low-priority worker threads."""
    session.dataset_guard = limits.dataset_refusal if limits.student else None
    session.on_worker_start = lower_thread_priority if limits.student else None
    if limits.student:   # a student's page pulls a snapshot every refresh_ms: publish no faster
        session.snapshot_period_s = max(session.snapshot_period_s, limits.refresh_ms / 1000)
    if limits.student:   # the folders the typed-path check of the session's tabs allows
        session.typed_path_roots = limits.path_roots


def restrict_dataset_widget(widget, limits: SessionLimits) -> None:
    """Offer a student only the datasets ``limits`` allows (the server refuses the others
    anyway: a page can send any value)."""
    if limits.lecturer:
        return
    opts = widget.options
    names = list(opts.values()) if isinstance(opts, dict) else list(opts)
    allowed = limits.datasets(names)
    if len(allowed) != len(names):
        widget.options = ({k: v for k, v in opts.items() if v in allowed} if isinstance(opts, dict)
                          else allowed)


def guard_store_paths(view, limits: SessionLimits, notify, *, method: str, what: str) -> None:
    """Make ``view.<method>(text)`` (a path tab's ``open_store``, the Sweeps tab's ``load``) open
    only paths ``limits`` allows; with typed paths off for this session, hide its path input.

    ``notify(text, level)`` reports a refusal (the session's notifications)."""
    if limits.lecturer and limits.path_roots is None:
        return
    inner = getattr(view, method)

    def checked(text, _inner=inner):
        try:
            path = limits.check_path(text)
        except ValueError as exc:
            notify(f"{what}: {exc}", "warning")
            return False
        return _inner(str(path))

    setattr(view, method, checked)
    if not limits.typed_paths:
        for name in ("store_input", "b_open", "path_input", "load_button"):
            w = getattr(view, name, None)
            if w is not None:
                w.visible = False


def qr_panel(url: str):
    """The header's pieces for the lecturer: a toggle "Students' URL" and the pane it shows
    (the URL in large type and its QR code), hidden until toggled. Returns (toggle, pane)."""
    import panel as pn
    from .safe_html import esc
    html = ("<div class='gaplab-classroom-qr' style='display:flex;align-items:center;gap:24px;"
            "padding:8px;background:#fff'>" + qr_svg(url, scale=6) +
            f"<div style='font:28px sans-serif'>Students open<br><b>{esc(url)}</b></div></div>")
    pane = pn.pane.HTML(html, visible=False, margin=(0, 10), css_classes=["gaplab-classroom-qr-pane"])
    toggle = pn.widgets.Toggle(label="Students' URL", value=False, width=140, height=36, margin=(8, 10),
                               css_classes=["gaplab-classroom-qr-toggle"])

    def show(event):
        pane.visible = bool(event.new)
    toggle.param.watch(show, "value")
    return toggle, pane
