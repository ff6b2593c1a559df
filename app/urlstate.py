"""Bookmarkable states: the page's URL holds the dataset, the settings, the
seed, the tab, the lesson page, the step count and the Race tab's settings, e.g.
``?dataset=ocr-small&sampling=gap&tab=lessons&lesson=4&steps=120``; opening it reproduces the same
screen (the solver is deterministic: the same settings and seed stepped the same number of times
give the same state).

Every query value is validated against the parameter it names (a Selector's choices, a number's
bounds, a boolean's spellings); a bad or unknown one is ignored with a notice (plain text: the
alert and toasts that show it escape it, app/safe_html.py), never an exception. The URL describes a run from α⁰: after a
setting switch with α kept it holds the settings but no step count (:func:`query_of`).
No Panel import.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode

import param

__all__ = ["TAB_SLUGS", "RACE_KEYS", "MAX_URL_STEPS", "UrlRequest", "parse_query", "query_of", "query_string",
           "restore", "session_from_query", "url_keys"]

#: the tabs' names in a URL (in the app's tab order: one per tab of ``GaplabApp.TAB_NAMES``)
TAB_SLUGS = ("step", "convergence", "cache", "path", "toy", "lessons", "sweeps", "race")
#: the Race tab's settings in a URL: key -> (Race argument, parse, check, what is expected). A
#: race is deterministic, so these give the same race; how far it ran is not kept (a race is
#: watched from its start).
RACE_KEYS = {
    "race": ("problem", str, lambda v: v in ("toy", "ocr-small"), "one of toy, ocr-small"),
    "race_n": ("n", int, lambda v: 2 <= v <= 400, "an integer in [2, 400]"),
    "race_k": ("K", int, lambda v: 1 <= v <= 1000, "an integer in [1, 1000]"),
    "race_seed": ("seed", int, lambda v: 0 <= v <= 2 ** 31 - 1, "an integer >= 0"),
}
#: the most block steps a URL may ask for (replayed in the session's worker when the page opens,
#: in chunks: seconds of one worker's time on CoNLL, never the server's event loop)
MAX_URL_STEPS = 200_000
_MAX_LEN = 64          # longer query values are refused unread
_INT = re.compile(r"^[+-]?\d{1,12}$")
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


@dataclass
class UrlRequest:
    """What a URL asks for: ``settings`` (session parameter -> value, validated; λ applied after
    the dataset is loaded), ``tab`` (index), ``lesson`` (1-based page), ``steps`` (block steps
    from α⁰), ``race`` (the Race tab's settings: Race argument -> value, :data:`RACE_KEYS`) and
    ``notices`` (plain texts of what was refused; the page escapes them)."""

    settings: dict = field(default_factory=dict)
    tab: int | None = None
    lesson: int | None = None
    steps: int | None = None
    race: dict = field(default_factory=dict)
    notices: list = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.settings or self.tab is not None or self.lesson is not None or self.steps is not None
                    or self.race)


def url_keys(session) -> tuple:
    """The session parameters a URL may set: the dataset, the solver settings and the problems'
    loader options (``session`` an instance or the class)."""
    from .settings import option_parameters
    cls = session if isinstance(session, type) else type(session)
    return ("dataset",) + tuple(cls.CONFIG_SETTINGS) + tuple(option_parameters())


def _shown(raw: str) -> str:
    """A query value quoted for a notice: plain text (the alert and toasts escape what they show,
    app/safe_html.py)."""
    raw = raw if len(raw) <= 40 else raw[:40] + "…"
    return repr(raw)


def _value(p: param.Parameter, raw: str):
    """``raw`` (a query string value) as a value of parameter ``p``; ValueError saying why not."""
    if isinstance(p, param.Selector):
        names = getattr(p, "names", None) or {}
        for k, v in names.items():
            if raw == str(k) or raw == _fmt(v):
                return v
        for v in p.objects:
            if raw == _fmt(v):
                return v
        choices = list(names) if names else [_fmt(v) for v in p.objects]
        raise ValueError("expected one of " + ", ".join(choices))
    if isinstance(p, param.Boolean):
        low = raw.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError("expected true or false")
    if isinstance(p, param.Integer):
        if not _INT.match(raw.strip()):
            raise ValueError("expected an integer")
        v = int(raw)
    elif isinstance(p, param.Number):
        try:
            v = float(raw)
        except ValueError:
            raise ValueError("expected a number") from None
        if not math.isfinite(v):
            raise ValueError("expected a finite number")
    else:
        raise ValueError("not settable from a URL")
    lo, hi = p.bounds or (None, None)
    inc_lo, inc_hi = getattr(p, "inclusive_bounds", (True, True))
    below = lo is not None and (v < lo or (v == lo and not inc_lo))
    above = hi is not None and (v > hi or (v == hi and not inc_hi))
    if below or above:
        raise ValueError(f"expected a value in [{lo:g}, {hi:g}]" if lo is not None and hi is not None
                         else "out of range")
    return v


def _fmt(v) -> str:
    """A value as the URL writes it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)
    return str(v)


def parse_query(query, session) -> UrlRequest:
    """Validate a URL query (``"?a=1&b=2"`` or a mapping of str to str) for ``session`` (an
    instance or the Session class): known keys with valid values go into the request, every
    other key or value into a notice. Never raises on the query's content."""
    req = UrlRequest()
    if isinstance(query, str):
        pairs = parse_qsl(query.lstrip("?"), keep_blank_values=True)
    else:
        pairs = [(str(k), str(v)) for k, v in dict(query).items()]
    from .settings import option_parameters, sync_registry
    cls = session if isinstance(session, type) else type(session)
    sync_registry(cls)   # the dataset picker's choices: the installed problems
    keys = url_keys(cls)
    seen = set()
    for key, raw in pairs:
        if key in seen:
            req.notices.append(f"URL parameter {_shown(key)} given twice: kept the first value.")
            continue
        seen.add(key)
        if len(raw) > _MAX_LEN:
            req.notices.append(f"URL parameter {_shown(key)}: value too long ({len(raw)} characters); ignored.")
            continue
        try:
            if key == "tab":
                low = raw.strip().lower()
                if low not in TAB_SLUGS:
                    raise ValueError("expected one of " + ", ".join(TAB_SLUGS))
                req.tab = TAB_SLUGS.index(low)
            elif key == "lesson":
                from .lessons import LESSONS
                if not _INT.match(raw.strip()) or not 1 <= int(raw) <= len(LESSONS):
                    raise ValueError(f"expected a page number in [1, {len(LESSONS)}]")
                req.lesson = int(raw)
            elif key == "steps":
                if not _INT.match(raw.strip()) or not 0 <= int(raw) <= MAX_URL_STEPS:
                    raise ValueError(f"expected a number of steps in [0, {MAX_URL_STEPS:,}]")
                req.steps = int(raw)
            elif key in RACE_KEYS:
                name, kind, ok, expected = RACE_KEYS[key]
                low = raw.strip().lower() if kind is str else raw.strip()
                if (kind is int and not _INT.match(low)) or not ok(kind(low)):
                    raise ValueError("expected " + expected)
                req.race[name] = kind(low)
            elif key in keys and key in cls.param:
                req.settings[key] = _value(cls.param[key], raw)
            else:
                req.notices.append(f"Unknown URL parameter {_shown(key)}: ignored.")
        except ValueError as exc:
            req.notices.append(f"URL parameter {_shown(key)} = {_shown(raw)} ignored: "
                               f"{exc}.")
    ds = req.settings.get("dataset", cls.param.dataset.default)
    opts = option_parameters()
    for k in [k for k in req.settings if k in opts and opts[k][0] != ds]:
        # a loader option of another problem than the chosen one means nothing
        req.notices.append(f"URL parameter {_shown(k)} ignored: it is an option of another dataset.")
        del req.settings[k]
    return req


def session_from_query(query, **params):
    """A :class:`~gaplab.app.session.Session` in the state a URL query describes (settings,
    seed, steps; tab and lesson are the app's), and the parsed request (its notices were sent to
    the session). Blocks until the dataset is loaded and the steps are taken (not for a served
    page: the app restores a URL with ``restore(..., wait=False)``)."""
    from .session import Session
    req = parse_query(query, Session)
    s = Session(**{**{k: v for k, v in req.settings.items() if k != "lam"}, **params})
    restore(s, req)
    return s, req


def query_of(session, *, tab: int | None = None, lesson: int | None = None, race: dict | None = None) -> dict:
    """The URL query (str -> str) that reproduces ``session``'s screen: the dataset, the
    settings that differ from their defaults (λ: from the dataset's default λ), the chosen
    problem's loader options, the tab, the lesson page (on the Lessons tab), the race's
    settings (on the Race tab; ``race``: Race argument -> value, e.g. ``{"problem": "toy",
    "n": 20, "K": 50, "seed": 0}``; n and K only on the toy) and the step count
    (left out when the run is not "these settings from α⁰": after a setting switch with α kept,
    or on a model loaded from the path)."""
    cls = type(session)
    q = {"dataset": str(session.dataset)}
    problem = session.problem
    default_lam = getattr(problem, "default_lam", None) if problem is not None else None
    from .settings import option_parameter_name
    mine = {option_parameter_name(session.dataset, o) for o in session.problem_options()}
    for k in tuple(cls.CONFIG_SETTINGS) + tuple(sorted(mine)):
        if k not in cls.param:
            continue
        p = cls.param[k]
        v = getattr(session, k)
        default = default_lam if k == "lam" and default_lam is not None else p.default
        if v != default:
            q[k] = _fmt(v)
    if tab is not None and 0 <= tab < len(TAB_SLUGS):
        q["tab"] = TAB_SLUGS[tab]
        if tab == TAB_SLUGS.index("lessons") and lesson is not None:
            q["lesson"] = str(int(lesson))
        if tab == TAB_SLUGS.index("race") and race:
            for key, (name, _kind, _ok, _expected) in RACE_KEYS.items():
                toy_only = key in ("race_n", "race_k") and race.get("problem") != "toy"
                if name in race and not toy_only:
                    q[key] = str(race[name])
    snap = session.snapshot
    if not snap.switches and not snap.origin:
        q["steps"] = str(int(snap.iteration))
    # else: the run kept α across a setting switch or started from a loaded model; "steps from
    # α⁰ with these settings" would be another state, so the URL opens these settings at α⁰
    return q


def query_string(query: dict) -> str:
    """``"?k=v&…"`` (percent-encoded), or "" for an empty query."""
    return "?" + urlencode(query) if query else ""


def restore(session, req: UrlRequest, *, timeout: float = 120.0, wait: bool = True) -> None:
    """Finish what a URL asks of a session made with ``Session(**settings without lam)``: set λ,
    then take ``steps`` block steps from α⁰ in the session's worker, in chunks
    (:meth:`~gaplab.app.session.Session.replay`: the last one as a single Step, so the anatomy
    shows it as after a Step; the status line says "replaying step k of N"; it stops when the
    session closes). Notices go to ``session.notify``.

    ``wait`` True (a notebook, a test): wait up to ``timeout`` seconds for the dataset, and then
    for the steps. False (the served page, on the server's event loop): return at once; the
    dataset must be loaded (else only the notices are sent)."""
    for text in req.notices:
        session.notify(text, "warning")
    if wait and not session.wait_idle(timeout):
        return
    if session.status == "loading" or session.solver is None:
        return
    lam = req.settings.get("lam")
    if lam is not None and lam != session.lam:
        session.lam = lam
    if req.steps:
        session.replay(min(int(req.steps), MAX_URL_STEPS))
        if wait:
            session.wait_idle(timeout)
