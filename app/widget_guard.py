"""Values a page sends through a widget are checked on the server.

A widget's ``start`` and ``end`` (or its options) bind only the page's own controls: any page
can send any value to a Bokeh model property from its console. A widget made with
``from_param`` passes the value on to its parameter, whose bounds, choices and type hold on the
server (``param`` raises); unguarded, that refusal is a server traceback and the widget keeps
showing the refused value. :func:`guard_links` wraps each such link: a refused value gives one
notice naming the setting, what it expects and what came, and the widget shows the parameter's
value again. No other state changes.
"""
from __future__ import annotations

import math

import param

__all__ = ["expected_text", "guard_links"]


def expected_text(p: param.Parameter) -> str:
    """What parameter ``p`` accepts, in words (for a notice)."""
    if isinstance(p, param.Selector):
        names = getattr(p, "names", None) or {}
        return "one of " + ", ".join(str(k) for k in (names or p.objects))
    if isinstance(p, param.Boolean):
        return "true or false"
    kind = "an integer" if isinstance(p, param.Integer) else "a number"
    lo, hi = p.bounds or (None, None)
    if lo is None and hi is None:
        return kind
    fmt = (lambda v: f"{v:,}") if isinstance(p, param.Integer) else (lambda v: f"{v:g}")
    if lo is not None and hi is not None:
        return f"{kind} in [{fmt(lo)}, {fmt(hi)}]"
    return f"{kind} >= {fmt(lo)}" if lo is not None else f"{kind} <= {fmt(hi)}"


def _shown(v) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:40] + "…"


def guard_links(obj: param.Parameterized, widgets: dict, notify) -> int:
    """Guard the ``from_param`` links of ``widgets`` (parameter name -> widget of ``obj``).

    Parameters
    ----------
    obj : param.Parameterized
        The object whose parameters the widgets set.
    widgets : dict
        Parameter name -> Panel widget made with ``Widget.from_param(obj.param[name])``.
    notify : callable
        ``notify(text, level)``: where a refusal is said (plain text; the page escapes it).

    Returns
    -------
    int
        The number of links guarded.
    """
    count = 0
    for pname, widget in widgets.items():
        if pname not in obj.param:
            continue
        links = [wt for wt in widget.param.watchers.get("value", {}).get("value", [])
                 if getattr(wt.fn, "__name__", "") == "link_widget"]   # Panel's widget -> parameter link
        for wt in links:
            widget.param.unwatch(wt)
            widget.param.watch(_guarded(wt.fn, obj, pname, widget, notify), wt.parameter_names,
                               onlychanged=wt.onlychanged, queued=wt.queued, precedence=max(wt.precedence, 0))
            count += 1
    return count


def _guarded(link, obj, pname, widget, notify):
    def safe(*args, **kwargs):
        new = args[0].new if args else None
        p = obj.param[pname]
        bad = isinstance(new, float) and not math.isfinite(new) and isinstance(p, param.Number) \
            and not isinstance(p, param.Integer) and p.bounds is not None and p.bounds != (None, None)
        try:
            if bad:
                raise ValueError("not finite")
            return link(*args, **kwargs)
        except (ValueError, TypeError, OverflowError):
            cur = getattr(obj, pname)
            label = (p.label or pname).split(" (")[0]   # "λ (regularization)" -> "λ"
            notify(f"{label} must be {expected_text(p)}; got {_shown(new)}. Kept {label} = {cur!r}.", "error")
            try:
                if widget.value != cur:
                    widget.value = cur   # the page shows the value in force again
            except Exception:   # pragma: no cover - a widget that cannot show it: the notice says it
                pass
    safe.__name__ = "link_widget_guarded"
    return safe
