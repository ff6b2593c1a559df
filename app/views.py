"""Live views of a session: Bokeh figures built once, whose ColumnDataSources are replaced in
place from :class:`~gaplab.app.session.Snapshot` objects (no re-rendering, no flicker).

Why Bokeh sources rather than HoloViews ``Pipe``/``Buffer`` streams: the app refreshes up to
10 times per second while the solver runs on the same two cores. Replacing a source's data
costs ~0.1 ms per plot, a HoloViews ``Pipe.send`` ~8 ms (it rebuilds the element and its plot
options), i.e. ~0.6 s of CPU per second for the eight live plots of the app at 10 Hz — which
would be taken from the solver (``benchmarks/app_bench.py`` measures the throughput ratio).

Every number drawn comes from a snapshot (computed by the core); log axes use a positive floor.
"""
from __future__ import annotations

import base64
import math
import re
import struct
import time
import weakref
import zlib

import numpy as np
import panel as pn
from bokeh.models import (ColorBar, ColumnDataSource, CustomJSTicker, CustomJSTickFormatter, HoverTool,
                          LabelSet, Legend, LegendItem, LinearColorMapper, NumeralTickFormatter,
                          PrintfTickFormatter, Range1d, Span)
from bokeh.core.properties import value
from bokeh.palettes import Category10_10, Viridis256
from bokeh.plotting import figure

from .safe_html import esc

__all__ = ["AnatomyView", "BlockGapsView", "GapView", "PrimalDualView", "TestErrorView",
           "CacheView", "StatusView", "trace_columns", "GAP_FLOOR"]

GAP_FLOOR = 1e-12          # log axes: values <= 0 (round-off) are drawn at this floor
CURRENT_COLOR = "#111111"
RUN_COLORS = [c for c in Category10_10 if c != "#7f7f7f"]
MAX_SLOTS = 8              # comparison runs drawn (Session keeps at most 8)
TOOLS = "pan,wheel_zoom,box_zoom,reset,save"
FONT = "13px"


def _fig(**kw):
    kw.setdefault("tools", TOOLS)
    kw.setdefault("toolbar_location", "right")
    kw.setdefault("sizing_mode", "stretch_width")
    f = figure(**kw)
    f.title.text_font_size = "14px"
    f.xaxis.axis_label_text_font_size = FONT
    f.yaxis.axis_label_text_font_size = FONT
    f.xaxis.major_label_text_font_size = "12px"
    f.yaxis.major_label_text_font_size = "12px"
    f.toolbar.logo = None
    f.toolbar.autohide = True
    if kw.get("y_axis_type") == "log":
        f.yaxis.ticker = log_ticker()
        f.yaxis.formatter = _log_formatter()
    if kw.get("x_axis_type") == "log":
        f.xaxis.ticker = log_ticker()
        f.xaxis.formatter = _log_formatter()
    return f


# Major ticks of a log axis: the decades inside the visible range (every k-th when there are
# more than 7), or 1-2-5 steps when fewer than two decades are visible; never the linear ticks
# Bokeh's LogTicker falls back to on a range under two decades (0.01, 8e-3, 6e-3, 4e-3 piled up
# at the top of the block-gap axis).
_LOG_MAJOR_JS = """
const lo = Math.min(cb_data.start, cb_data.end), hi = Math.max(cb_data.start, cb_data.end);
if (!(lo > 0) || !isFinite(hi)) { return []; }
const eps = 1e-9;
const k0 = Math.ceil(Math.log10(lo) - eps), k1 = Math.floor(Math.log10(hi) + eps);
if (k1 - k0 + 1 >= 2) {
  const step = Math.max(1, Math.ceil((k1 - k0 + 1) / 7));
  const out = [];
  for (let k = k0; k <= k1; k++) { if ((k - k0) % step == 0) { out.push(Number(Math.pow(10, k).toPrecision(12))); } }
  return out;
}
const out = [];
for (let k = k0 - 1; k <= k1; k++) {
  for (const m of [1, 2, 5]) {
    const t = Number((m * Math.pow(10, k)).toPrecision(12));
    if (t >= lo * (1 - eps) && t <= hi * (1 + eps)) { out.push(t); }
  }
}
return out;
"""

# Minor ticks: 2..9 times each decade inside the range (none when the labels are 1-2-5 steps
# or when the decades are thinned)
_LOG_MINOR_JS = """
const lo = Math.min(cb_data.start, cb_data.end), hi = Math.max(cb_data.start, cb_data.end);
const major = cb_data.major_ticks;
if (!(lo > 0) || major.length < 2) { return []; }
const ratio = major[1] / major[0];
if (Math.abs(ratio - 10) > 1e-6) { return []; }
const out = [];
for (let k = Math.floor(Math.log10(lo)); k <= Math.ceil(Math.log10(hi)); k++) {
  for (let m = 2; m <= 9; m++) {
    const t = m * Math.pow(10, k);
    if (t > lo && t < hi) { out.push(t); }
  }
}
return out;
"""


def log_ticker() -> CustomJSTicker:
    """Ticker of the app's log axes: decades only when at least two are visible (thinned to at
    most 7 labels), 1-2-5 steps on a narrower range; minor ticks at 2..9 × each decade."""
    return CustomJSTicker(major_code=_LOG_MAJOR_JS, minor_code=_LOG_MINOR_JS)


_LOG_TICK_JS = """
const sup = {"-": "\u207b", "0": "\u2070", "1": "\u00b9", "2": "\u00b2", "3": "\u00b3", "4": "\u2074",
             "5": "\u2075", "6": "\u2076", "7": "\u2077", "8": "\u2078", "9": "\u2079"};
if (tick <= 0) { return "0"; }
const e = Math.floor(Math.log10(tick) + 1e-9);
const m = Math.round(tick / Math.pow(10, e) * 100) / 100;
if (e >= -2 && e <= 3) { return String(Number(tick.toPrecision(2))); }
const pow = "10" + String(e).split("").map(c => sup[c]).join("");
return (m === 1) ? pow : (m + "\u00b7" + pow);
"""


class LiveHTML(pn.pane.HTML):
    """An HTML pane for text that changes several times per second (status line, anatomy, step
    sentence): a new ``object`` sends only the model's new text. Panel's HTML pane recomputes
    every property of its model on each change (stylesheets, sizing, styles: 4.5 ms per update
    on this machine against 0.05 ms here), which was a third of a Step's server time."""

    def _update(self, ref, model):
        text = self._transform_object(self.object)["object"]
        if model.text != text:
            model.text = text


_BOLD = re.compile(r"\*\*(.+?)\*\*")


def _bold(text: str) -> str:
    """``**x**`` -> ``<b>x</b>`` (the info lines are HTML: Markdown took 8 ms per update)."""
    return _BOLD.sub(r"<b>\1</b>", text)


def legend_above(f):
    """Move the figure's legend into one transparent horizontal row above the plot (never over
    the data)."""
    leg = f.legend[0]
    leg.orientation = "horizontal"
    leg.label_text_font_size = "11px"
    leg.background_fill_alpha = 0.0
    leg.border_line_alpha = 0.0
    leg.margin = 0
    leg.padding = 0
    f.center.remove(leg)
    f.add_layout(leg, "above")
    return leg


def _log_formatter():
    """Log-axis labels: 0.01, 0.5, 20, 10⁻⁵, 2·10⁻⁵ (never 1.000e-2)."""
    return CustomJSTickFormatter(code=_LOG_TICK_JS)


def _pos(a):
    """Array for a log axis: NaN for inf/NaN (not drawn), values <= 0 at GAP_FLOOR."""
    a = np.asarray(a, dtype=np.float64)
    out = np.where(np.isfinite(a), np.maximum(a, GAP_FLOOR), np.nan)
    return out


def _same(a, b) -> bool:
    if a is b:
        return True
    try:
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    except TypeError:
        return False


def _set(src, data, full: bool = False) -> None:
    """Update a ColumnDataSource in place, sending only the columns that changed (a full
    replacement when the columns or the length change, or when ``full``)."""
    old = src.data
    lens = {len(v) for v in data.values()}
    old_lens = {len(v) for v in old.values()}
    if not full and set(old) == set(data) and len(lens) == 1 and lens == old_lens:
        changed = {k: v for k, v in data.items() if not _same(old[k], v)}
        if changed:
            src.data.update(changed)
    else:
        src.data = dict(data)


ROUND_OFF = 1e-12   # |value| below this (relative to 1) counts as round-off of a quantity >= 0


def _fmt_gap(v, spec=".4e", scale=1.0):
    """A gap (>= 0 in exact arithmetic): a tiny negative value from floating-point round-off is
    shown as 0 with the raw value in a note, not as a negative gap."""
    try:
        fv = float(v)
    except (TypeError, ValueError):
        return _fmt(v, spec)
    if math.isfinite(fv) and fv < 0 and abs(fv) <= ROUND_OFF * max(1.0, abs(scale)):
        return f"0 <span style='font-weight:normal;color:#777'>(round-off: {fv:.1e})</span>"
    return _fmt(fv, spec)


def _gap_word(v) -> str:
    """A gap in plain text for the step sentence (0 for round-off below zero)."""
    try:
        fv = float(v)
    except (TypeError, ValueError):
        return "–"
    if math.isfinite(fv) and fv < 0 and abs(fv) <= ROUND_OFF:
        return "0 (round-off)"
    return _fmt(fv, ".2g")


def _fmt(v, spec=".3g"):
    if v is None:
        return "–"
    try:
        fv = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(fv):
        return "–"
    if math.isinf(fv):
        return "∞"
    return format(fv, spec)


def trace_columns(trace, manual=()):
    """Columns of a run's trace: heuristic gap per pass and exact values at gap checks.

    Returns dict with "pass" -> dict(x passes, t time, heur, dual, hit_rate) and
    "check" -> dict(x, t, gap, primal, dual, test) (periodic and manual checks, in order)."""
    passes = [r for r in trace if r["kind"] == "pass"]
    checks = sorted([r for r in trace if r["kind"] == "gap_check"] + list(manual),
                    key=lambda r: (r["oracle_calls"], r["iteration"]))

    def col(rs, key):
        return np.array([r.get(key, math.nan) for r in rs], dtype=np.float64)

    px = col(passes, "effective_passes")
    hits = col(passes, "cache_hit")
    iters = col(passes, "iteration")
    if passes:
        dh = np.diff(np.concatenate([[0.0], hits]))
        di = np.diff(np.concatenate([[0.0], iters]))
        rate = np.where(di > 0, dh / np.maximum(di, 1), np.nan)
    else:
        rate = np.zeros(0)
    return {
        "pass": dict(x=px, t=col(passes, "wall_time_s"), heur=_pos(col(passes, "heuristic_gap")),
                     dual=col(passes, "dual"), hit_rate=rate),
        "check": dict(x=col(checks, "effective_passes"), t=col(checks, "wall_time_s"),
                      gap=_pos(col(checks, "exact_gap")), primal=col(checks, "primal"),
                      dual=col(checks, "dual"), test=col(checks, "test_error")),
    }


def _figure_pane(fig, export: bool = True):
    """A figure with its PNG / SVG export buttons above it (right-aligned)."""
    pane = pn.pane.Bokeh(fig, sizing_mode="stretch_width")
    if not export:
        return pane
    from .export import figure_export_buttons
    return pn.Column(pn.Row(pn.layout.HSpacer(), figure_export_buttons(fig), sizing_mode="stretch_width",
                            height=28, margin=0), pane, sizing_mode="stretch_width", margin=0)


def _log_range(view, rng, values, floor=GAP_FLOOR):
    """Set an explicit log-axis range from the finite positive values (whole decades around
    them; [1e-6, 1] with no data): Bokeh's auto range warns on every redraw of an empty or
    non-positive log axis and picks too few ticks."""
    v = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in values]) if values else np.zeros(0)
    v = v[np.isfinite(v) & (v > floor * 0.999)]
    if v.size:
        lo = 10.0 ** math.floor(math.log10(v.min()))
        hi = 10.0 ** math.ceil(math.log10(v.max()))
        if hi <= lo:
            hi = lo * 10
    else:
        lo, hi = 1e-6, 1.0
    if rng.start != lo or rng.end != hi:
        rng.update(start=lo, end=hi)


BIG_PX = 18.0   # projector mode: the smallest text size


def _scale_px(html_text: str, scale: float, floor: float = 0.0) -> str:
    """Scale every ``font-size:Npx`` of inline HTML by ``scale`` (at least ``floor`` px)."""
    if scale == 1.0:
        return html_text

    def sub(m):
        v = max(float(m.group(1)) * scale, floor)
        return f"font-size:{v:.3g}px"
    return re.sub(r"font-size:\s*([\d.]+)px", sub, html_text)


_FIG_FONTS = weakref.WeakKeyDictionary()   # figure -> its normal font sizes (gone with the figure)


def fig_fonts(panel, big: bool) -> None:
    """Projector mode on (``big``) or off for everything in a Panel layout: Bokeh figures get
    18 px titles, axis labels and tick labels (legends 16 px); Markdown and HTML panes whose
    ``styles`` set a font size get at least 18 px. Off restores the normal sizes."""
    for pane in panel.select(pn.pane.Bokeh):
        fig = pane.object
        if fig is None or not hasattr(fig, "title"):
            continue
        key = fig
        if key not in _FIG_FONTS:
            _FIG_FONTS[key] = (fig.title.text_font_size, [a.axis_label_text_font_size for a in fig.axis],
                               [a.major_label_text_font_size for a in fig.axis],
                               [leg.label_text_font_size for leg in fig.legend])
        title, labels, ticks, legs = _FIG_FONTS[key]
        fig.title.text_font_size = "19px" if big else title
        for a, lab, tick in zip(fig.axis, labels, ticks):
            a.axis_label_text_font_size = "18px" if big else lab
            a.major_label_text_font_size = "18px" if big else tick
        for leg, size in zip(fig.legend, legs):
            leg.label_text_font_size = "18px" if big else size
    for pane in list(panel.select(pn.pane.Markdown)) + list(panel.select(pn.pane.HTML)):
        st = dict(pane.styles or {})
        orig = st.get("--gaplab-font-size", st.get("font-size"))
        if orig is None:
            continue
        if big:
            st["--gaplab-font-size"] = orig
            st["font-size"] = f"{max(float(str(orig).rstrip('px')), BIG_PX):g}px"
        else:
            st["font-size"] = orig
            st.pop("--gaplab-font-size", None)
        pane.styles = st


class _Base:
    """A view: ``panel`` (what to show) and ``update(snapshot)`` (cheap; skips old versions)."""

    def __init__(self):
        self._version = None
        self._cmp_key = None

    def update(self, snap, force: bool = False) -> bool:
        """Draw ``snap`` if it is new. ``force`` redraws and resends every column (used when
        the browser may not hold the current data: page load, tab switch)."""
        if not force and snap.version == self._version:
            return False
        self._version = snap.version
        self._full = bool(force)
        try:
            self._draw(snap)
        finally:
            self._full = False
        return True

    _full = False

    def _set(self, src, data):
        _set(src, data, full=self._full)

    def _draw(self, snap):  # pragma: no cover - abstract
        raise NotImplementedError


class _RunSlots:
    """Current run (slot 0) + up to MAX_SLOTS comparison runs on one figure, legend kept in
    sync. Comparison slots (renderers, sources, legend items) are added when first needed and
    reused afterwards."""

    def __init__(self, fig, kinds, legend_loc="top_right"):
        # kinds: list of (name, glyph, which) with glyph in {"line", "scatter"}
        self.fig = fig
        self.kinds = kinds
        self.slots = []
        self.items = []
        self._labels = []
        self.legend = Legend(items=[], location=legend_loc, click_policy="hide",
                             label_text_font_size="11px", background_fill_alpha=0.75,
                             spacing=0, padding=4, margin=4)
        fig.add_layout(self.legend)
        self._add_slot()

    def _add_slot(self):
        s = len(self.slots)
        color = CURRENT_COLOR if s == 0 else RUN_COLORS[(s - 1) % len(RUN_COLORS)]
        srcs, rends = {}, []
        for name, glyph, _which in self.kinds:
            src = ColumnDataSource(dict(x=[], y=[]))
            if glyph == "line":
                r = self.fig.line("x", "y", source=src, color=color, line_width=2.5 if s == 0 else 2,
                                  line_dash="solid" if s == 0 else "dashed", alpha=0.9)
            else:
                r = self.fig.scatter("x", "y", source=src, color=color, size=8 if s == 0 else 7,
                                     marker="circle" if s == 0 else "square", alpha=0.9)
            srcs[name] = src
            rends.append(r)
        self.slots.append(srcs)
        item = LegendItem(label=value(""), renderers=rends, visible=False)
        self.items.append(item)
        self.legend.items = list(self.items)
        self._labels.append(None)

    def set(self, slot, label, data, full=False):
        while slot >= len(self.slots):
            self._add_slot()
        srcs = self.slots[slot]
        for name, cols in data.items():
            _set(srcs[name], cols, full=full)
        if self._labels[slot] != label:
            self._labels[slot] = label
            item = self.items[slot]
            item.label = value(label or "")
            item.visible = bool(label)

    def clear_from(self, slot):
        for s in range(slot, len(self.slots)):
            if self._labels[s] is not None:
                self.set(s, None, {k: dict(x=[], y=[]) for k in self.slots[s]})


class _ComparisonPlot(_Base):
    """Base for plots overlaying the current run and the comparison runs."""

    RUNNING_MIN_INTERVAL_S = 0.25   # curves grow once per pass: ~3 redraws per second are plenty

    def __init__(self):
        super().__init__()
        self._cache = {}

    def _columns(self, run):
        key = run.index
        if key not in self._cache:
            self._cache[key] = trace_columns(run.trace, run.manual_checks)
        return self._cache[key]

    def _draw(self, snap):
        cur = trace_columns(snap.trace, snap.manual_checks)
        full = self._full
        self.slots.set(0, f"current: {snap.label}" if snap.n else "", self._data(cur, snap, True), full)
        runs = [r for r in snap.comparison if r.dataset == snap.dataset][-MAX_SLOTS:]
        for j, run in enumerate(runs, start=1):
            self.slots.set(j, run.label, self._data(self._columns(run), snap, False), full)
        self.slots.clear_from(len(runs) + 1)
        live = {r.index for r in snap.comparison}
        for k in list(self._cache):
            if k not in live:
                del self._cache[k]
        self._extra(snap, cur)

    def _extra(self, snap, cur):
        pass


# ----------------------------------------------------------------------------- convergence
class GapView(_ComparisonPlot):
    """Duality gap vs effective passes (or vs solver time): exact gaps at gap checks (points),
    heuristic gap Σ ĝᵢ after every pass (line); log scale; runs overlaid (Paper: Fig. 1a, 3)."""

    def __init__(self, x="passes", height=330, title=None, name=None):
        super().__init__()
        self.xkey = "x" if x == "passes" else "t"
        xlabel = "effective passes (oracle calls / n)" if x == "passes" else "solver time (s)"
        self.fig = _fig(height=height, y_axis_type="log", x_axis_label=xlabel,
                        y_axis_label="duality gap", y_range=Range1d(1e-6, 1),
                        title=title or ("Duality gap vs effective passes" if x == "passes"
                                        else "Duality gap vs time"))
        self.slots = _RunSlots(self.fig, [("heur", "line", "pass"), ("exact", "scatter", "check")])
        self.now = ColumnDataSource(dict(x=[], y=[]), name=f"{name}_now" if name else None)
        self.fig.scatter("x", "y", source=self.now, marker="star", size=14, color="#d62728",
                         legend_label="heuristic gap now")
        # settings switched mid-run with α kept (Session.keep_alpha): a vertical line at the
        # switch, labelled with the new setting
        self.switches = ColumnDataSource(dict(x=[], label=[]), name=f"{name}_switches" if name else None)
        self.fig.vspan(x="x", source=self.switches, line_color="#555555", line_dash="dashed", line_width=1.5)
        self.fig.add_layout(LabelSet(x="x", y=6, y_units="screen", text="label", source=self.switches,
                                     text_font_size="11px", text_color="#333333", angle=math.pi / 2,
                                     x_offset=-3))
        self.fig.legend.label_text_font_size = "11px"
        self.fig.add_tools(HoverTool(tooltips=[("x", "@x{0.00}"), ("gap", "@y{0.000e}")]))
        self.note = pn.pane.Markdown(
            "Points: exact duality gap (a gap-check pass, n oracle calls). Line: heuristic gap "
            "Σᵢ ĝᵢ of the stale block-gap estimates after each pass. ★: the heuristic gap now.",
            styles={"font-size": "12px", "color": "#555"}, margin=(0, 10))
        self.panel = pn.Column(_figure_pane(self.fig), self.note, sizing_mode="stretch_width")

    def _data(self, cols, snap, current):
        p, c = cols["pass"], cols["check"]
        return {"heur": dict(x=p[self.xkey], y=p["heur"]), "exact": dict(x=c[self.xkey], y=c["gap"])}

    def _extra(self, snap, cur):
        if snap.n and math.isfinite(snap.heuristic_gap):
            x = snap.effective_passes if self.xkey == "x" else snap.solver_time_s
            self._set(self.now, dict(x=[x], y=[max(snap.heuristic_gap, GAP_FLOOR)]))
        else:
            self._set(self.now, dict(x=[], y=[]))
        marks = getattr(snap, "switches", ())
        self._set(self.switches, dict(x=[m[0] if self.xkey == "x" else m[1] for m in marks],
                                      label=[f"→ {m[3]}" for m in marks]))
        ys = [src.data.get("y", []) for slot in self.slots.slots for src in slot.values()]
        _log_range(self, self.fig.y_range, ys + [self.now.data.get("y", [])])


class TestErrorView(_ComparisonPlot):
    """Test error at the gap checks (token error: letters for OCR), runs overlaid."""

    def __init__(self, height=300):
        super().__init__()
        self.fig = _fig(height=height, x_axis_label="effective passes", y_axis_label="test error (%)",
                        title="Test error at gap checks")
        self.slots = _RunSlots(self.fig, [("line", "line", "check"), ("pts", "scatter", "check")])
        self.panel = _figure_pane(self.fig)

    def _data(self, cols, snap, current):
        # a percentage, as in the status line and the path tab (never a fraction in one place
        # and a percentage in another)
        c = cols["check"]
        ok = np.isfinite(c["test"])
        return {"line": dict(x=c["x"][ok], y=100 * c["test"][ok]), "pts": dict(x=c["x"][ok], y=100 * c["test"][ok])}

    def _extra(self, snap, cur):
        self.fig.title.text = ("Test error at gap checks" if snap.has_test or not snap.n
                               else "Test error: this dataset has no test set")


class PrimalDualView(_Base):
    """Primal objective (at exact gap checks) and dual objective (after every pass) of the
    current run; their difference is the duality gap (Paper: Sec. 2.3)."""

    RUNNING_MIN_INTERVAL_S = 0.25

    def __init__(self, height=300):
        super().__init__()
        self.fig = _fig(height=height, x_axis_label="effective passes", y_axis_label="objective",
                        title="Primal and dual objectives (current run)")
        self.dual = ColumnDataSource(dict(x=[], y=[]))
        self.primal = ColumnDataSource(dict(x=[], y=[]))
        self.fig.line("x", "y", source=self.dual, color="#1f77b4", line_width=2.5, legend_label="dual D(α) (every pass)")
        self.fig.line("x", "y", source=self.primal, color="#d62728", line_width=2, line_dash="dashed")
        self.fig.scatter("x", "y", source=self.primal, color="#d62728", size=8, legend_label="primal P(w) (gap checks)")
        self.fig.legend.location = "bottom_right"
        self.fig.legend.label_text_font_size = "11px"
        self.panel = _figure_pane(self.fig)

    def _draw(self, snap):
        cols = trace_columns(snap.trace, snap.manual_checks)
        p, c = cols["pass"], cols["check"]
        self._set(self.dual, dict(x=p["x"], y=p["dual"]))
        ok = np.isfinite(c["primal"])
        self._set(self.primal, dict(x=c["x"][ok], y=c["primal"][ok]))


# ----------------------------------------------------------------------------- per block
class BlockGapsView(_Base):
    """Per-block gap estimates ĝᵢ as bars coloured by staleness, exact block gaps overlaid when
    known, and the sampling probabilities of the next draw (Paper: Sec. 3.1)."""

    DECADES = 5
    RUNNING_MIN_INTERVAL_S = 0.15   # while a run goes: every other 100 ms tick, 5 redraws per
    #                                 second (the browser's canvas work competes with the solver)
    MAX_BARS = 700    # more blocks than this are drawn in bins (about a bar per pixel, not per block)

    def __init__(self, height=300, prob_height=160, name=None, max_bars=None):
        super().__init__()
        if max_bars is not None:
            self.MAX_BARS = int(max_bars)
        self.src = ColumnDataSource(dict(x=[], w=[], top=[], bottom=[], stale=[], gap=[], lo=[], hi=[]),
                                    name=name)
        self.exact = ColumnDataSource(dict(x=[], y=[]))
        self.prob = ColumnDataSource(dict(x=[], w=[], top=[]))
        self._info_t = 0.0
        self.mapper = LinearColorMapper(palette=list(reversed(Viridis256)), low=0, high=1,
                                        nan_color="#cccccc")
        # explicit ranges, moved only when the data leave them (cheaper redraws than auto-ranging)
        f = _fig(height=height, y_axis_type="log", x_axis_label=None, y_axis_label="block gap ĝᵢ",
                 title="Per-block gap estimates", x_range=Range1d(-1, 1), y_range=Range1d(1e-6, 1))
        bars = f.vbar(x="x", top="top", bottom="bottom", width="w", source=self.src,
                      fill_color={"field": "stale", "transform": self.mapper}, line_color=None)
        f.scatter("x", "y", source=self.exact, marker="dash", size=9, color="#d62728", line_width=2,
                  legend_label="exact gᵢ at the last gap check")
        f.legend.location = "top_right"
        legend_above(f)
        f.add_tools(HoverTool(renderers=[bars], tooltips=[("blocks", "@lo–@hi"), ("ĝᵢ (max)", "@gap{0.000e}"),
                                                          ("staleness (iterations)", "@stale{0}")]))
        cb = ColorBar(color_mapper=self.mapper, title="staleness: iterations since ĝᵢ was computed"
                      if max_bars is None else "staleness",
                      title_text_font_size="11px", label_standoff=6, width=12,
                      major_label_text_font_size="11px", location=(0, 0))
        f.add_layout(cb, "right")
        self.span = Span(location=-10, dimension="height", line_color="#d62728", line_width=1.5,
                         line_alpha=0.5, line_dash="dashed")
        f.add_layout(self.span)
        self.fig = f
        g = _fig(height=prob_height, x_axis_label="block i (training example)", y_axis_label="P(i)",
                 x_range=f.x_range, title="Sampling probabilities of the next draw", y_range=Range1d(0, 1))
        g.vbar(x="x", top="top", width="w", source=self.prob, color="#2c7fb8")
        g.yaxis.formatter = PrintfTickFormatter(format="%.2g")
        g.yaxis.ticker.desired_num_ticks = 3
        self.span2 = Span(location=-10, dimension="height", line_color="#d62728", line_width=1.5,
                          line_alpha=0.5, line_dash="dashed")
        g.add_layout(self.span2)
        g.min_border_right = f.min_border_right
        self.pfig = g
        # keep the two x axes aligned: the probability plot gets an invisible colorbar-sized pad
        pad = ColorBar(color_mapper=LinearColorMapper(palette=["#ffffff"], low=0, high=1),
                       width=12, major_label_text_alpha=0, major_tick_line_alpha=0,
                       bar_line_alpha=0, title="", title_text_alpha=0, label_standoff=6,
                       major_label_text_font_size="11px", location=(0, 0))
        g.add_layout(pad, "right")
        # fixed heights: text that changes 10x/s must not make the browser re-layout the page
        self.info = LiveHTML("", styles={"font-size": "13px", "overflow": "hidden", "line-height": "1.45"},
                             margin=(4, 10, 0, 10), height=46, sizing_mode="stretch_width")
        self.panel = pn.Column(self.info, _figure_pane(f), _figure_pane(g), sizing_mode="stretch_width")

    def _draw(self, snap):
        n = snap.n
        if not n:
            self._set(self.src, dict(x=[], w=[], top=[], bottom=[], stale=[], gap=[], lo=[], hi=[]))
            self._set(self.exact, dict(x=[], y=[]))
            self._set(self.prob, dict(x=[], w=[], top=[]))
            self.info.object = ""
            # no x range of the previous dataset is kept
            _set_range(self.fig.x_range, -1, 1)
            _set_range(self.pfig.y_range, 0.0, 1.0)
            self.fig.title.text = (f"Per-block gap estimates ĝᵢ ({snap.dataset}: loading…)" if snap.status == "loading"
                                   else "Per-block gap estimates ĝᵢ")
            return
        g = np.asarray(snap.gap_estimates, dtype=np.float64)
        known = np.isfinite(g)
        pos = g[known & (g > 0)]
        # at most DECADES decades below the largest estimate; smaller ones are stubs at the floor
        if pos.size:
            floor = max(10.0 ** math.floor(math.log10(pos.min())),
                        10.0 ** (math.floor(math.log10(pos.max())) - self.DECADES), GAP_FLOOR)
        else:
            floor = 1e-6
        stale = np.where(np.asarray(snap.staleness) >= 0, snap.staleness, np.nan).astype(np.float64)
        exact = (np.asarray(snap.exact_block_gaps, dtype=np.float64)
                 if snap.exact_block_gaps is not None else None)
        prob = np.asarray(snap.probabilities, dtype=np.float64)
        b = max(1, math.ceil(n / self.MAX_BARS))
        if b == 1:
            x = np.arange(n, dtype=np.float64)
            lo = hi = np.arange(n)
            gb, sb, eb, pb = np.where(known, g, np.nan), stale, exact, prob
        else:  # bins of b blocks: the largest estimate, the mean staleness, the summed probability
            starts = np.arange(0, n, b)
            lo, hi = starts, np.minimum(starts + b, n) - 1
            x = (lo + hi) / 2.0
            gmax = np.maximum.reduceat(np.where(known, g, -np.inf), starts)
            gb = np.where(np.isfinite(gmax), gmax, np.nan)
            ok = np.isfinite(stale)
            cnt = np.add.reduceat(ok.astype(np.float64), starts)
            ssum = np.add.reduceat(np.where(ok, stale, 0.0), starts)
            sb = np.where(cnt > 0, ssum / np.maximum(cnt, 1), np.nan)
            if exact is not None:
                emax = np.maximum.reduceat(np.where(np.isfinite(exact), exact, -np.inf), starts)
                eb = np.where(np.isfinite(emax), emax, np.nan)
            else:
                eb = None
            pb = np.add.reduceat(prob, starts)
        nb = len(x)
        width = np.full(nb, 0.9 * b)
        top = np.where(np.isfinite(gb), np.maximum(gb, floor), np.nan)
        self._set(self.src, dict(x=x, w=width, top=top, bottom=np.full(nb, floor), stale=sb, gap=gb, lo=lo, hi=hi))
        hi_st = float(np.nanmax(sb)) if np.isfinite(sb).any() else 1.0
        self.mapper.high = max(hi_st, 1.0)
        if eb is not None:
            self._set(self.exact, dict(x=x, y=np.where(np.isfinite(eb), np.maximum(eb, floor), np.nan)))
        else:
            self._set(self.exact, dict(x=[], y=[]))
        self._set(self.prob, dict(x=x, w=width, top=pb))
        binned = f" — {nb} bins of {b} blocks (max ĝᵢ, mean staleness, summed P)" if b > 1 else ""
        self._ranges(n, b, floor, gb, pb)
        self.pfig.yaxis.axis_label = "P(bin)" if b > 1 else "P(i)"
        last = snap.last_step.block if snap.last_step is not None else -10
        self.span.location = last
        self.span2.location = last
        if self.MAX_BARS < BlockGapsView.MAX_BARS:   # projector: a short title
            self.fig.title.text = f"Block gap estimates ĝᵢ (colour: staleness) — bins of {b}" if b > 1 else \
                "Block gap estimates ĝᵢ (colour: staleness)"
        else:
            self.fig.title.text = (f"Per-block gap estimates ĝᵢ, coloured by staleness ({snap.dataset}, n = {n})"
                                   f"{binned}")
        self.pfig.title.text = (f"Sampling probabilities of the next draw ({snap.config.get('sampling', '')}"
                                f"{' p=' + format(snap.config.get('gap_power', 1), 'g') if snap.config.get('sampling') == 'gap' else ''})")
        unvisited = int(np.sum(~known))
        parts = [f"**heuristic gap** Σᵢ ĝᵢ = {_fmt(snap.heuristic_gap)}"]
        if math.isfinite(snap.exact_gap):
            ago = snap.iteration - snap.exact_block_gaps_iteration
            parts.append(f"**exact gap** g(α) = {_fmt(snap.exact_gap)} ({ago:,} iterations ago)")
        if unvisited:
            parts.append(f"{unvisited} block(s) never visited (ĝᵢ = +∞, not drawn as a bar; gap "
                         "sampling draws them first, uniformly)")
        if math.isfinite(snap.chi_cubed) and not unvisited:
            parts.append(f"χ(ĝ)³ = {snap.chi_cubed:.2f} (Thm. 2's gain of gap over uniform sampling if "
                         "these stale estimates were the exact gaps and the curvatures were equal)")
        parts.append("dashed line: last block")
        self.info.object = _bold(" · ".join(parts))


def _nice_up(v: float) -> float:
    """The smallest of 1, 2, 5 × 10^k that is >= v (v > 0)."""
    k = math.floor(math.log10(v))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10.0 ** k >= v * (1 - 1e-12):
            return m * 10.0 ** k
    return 10.0 ** (k + 1)


def _set_range(rng, start, end):
    if rng.start != start or rng.end != end:
        rng.update(start=start, end=end)


def _block_ranges(view, n, b, floor, gb, pb):
    pad = 0.5 * b + 0.5
    _set_range(view.fig.x_range, -pad, n - 1 + pad)
    finite = gb[np.isfinite(gb)]
    top = 10.0 ** math.ceil(math.log10(max(finite.max(), floor))) if finite.size else 1.0
    top = max(top, floor * 10)
    _set_range(view.fig.y_range, floor, top)
    pmax = float(np.max(pb)) if len(pb) else 1.0
    # a probability never exceeds 1: the axis stops there (max-gap sampling puts all of it on
    # one block; rounding 1.05 up had drawn the axis to 2)
    _set_range(view.pfig.y_range, 0.0, min(_nice_up(pmax * 1.05), 1.0) if pmax > 0 else 1.0)


BlockGapsView._ranges = _block_ranges


# ----------------------------------------------------------------------------- one step
POSE_COLORS = {"truth": "#ffc800", "fw": "#00aaff", "away": "#ff3ca0"}


def pose_svg(pose, k: int, px: int) -> str:
    """An inline SVG (px × px) of skeleton k of ``pose`` (StepInfo.pose: ``score_map`` (G, G),
    ``edges`` (N − 1, 2), ``skeletons`` (name, key, cells (N, 2) as (x, y), loss), ``part``)
    over the part's score map (grayscale PNG, bright = high). Cell (x, y) is drawn at its centre
    (x + ½, y + ½) in a viewBox of G × G; the ground truth is repeated thin and dashed under a
    corner's skeleton."""
    G = int(pose["G"])
    m = np.asarray(pose["score_map"], dtype=np.float64)
    lo, hi = float(m.min()), float(m.max())
    img = np.zeros(m.shape, np.uint8) if hi <= lo else np.round(255 * (m - lo) / (hi - lo)).astype(np.uint8)
    edges = np.asarray(pose["edges"], dtype=np.int64)
    lw = max(G / 70, 0.25)

    def lines(cells, color, width, dash=""):
        c = np.asarray(cells, dtype=np.float64) + 0.5
        segs = "".join(f"<line x1='{c[a, 0]:.1f}' y1='{c[a, 1]:.1f}' x2='{c[b, 0]:.1f}' y2='{c[b, 1]:.1f}'/>"
                       for a, b in edges)
        dots = "".join(f"<circle cx='{x:.1f}' cy='{y:.1f}' r='{1.3 * width:.2f}'/>" for x, y in c) if not dash else ""
        return (f"<g stroke='{color}' stroke-width='{width:.2f}' stroke-linecap='round' fill='{color}'"
                + (f" stroke-dasharray='{dash}'" if dash else "") + f">{segs}{dots}</g>")

    name, key, cells, _ = pose["skeletons"][k]
    body = ""
    if key != "truth":
        body += lines(pose["skeletons"][0][2], POSE_COLORS["truth"], 0.6 * lw, dash=f"{2 * lw:.2f}")
    body += lines(cells, POSE_COLORS.get(key, "#fff"), lw)
    px_, py_ = (np.asarray(cells)[int(pose["part"])] + 0.5)
    body += (f"<circle class='gaplab-part-ring' cx='{px_:.1f}' cy='{py_:.1f}' r='{max(G / 18, 0.8):.2f}' fill='none' "
             f"stroke='white' stroke-width='{0.8 * lw:.2f}'/>")
    return (f"<svg class='gaplab-pose' data-key='{key}' viewBox='0 0 {G} {G}' width='{px}' height='{px}' "
            f"style='border:1px solid #ddd;background:#000'>"
            f"<image href='{_png(img)}' x='0' y='0' width='{G}' height='{G}' preserveAspectRatio='none' "
            f"style='image-rendering:pixelated'/>{body}</svg>")


def _png(gray) -> str:
    """A data-URI PNG of a small 8-bit grayscale (H, W) or RGB (H, W, 3) image (no imaging
    library needed)."""
    a = np.ascontiguousarray(gray, dtype=np.uint8)
    h, w = a.shape[:2]
    color = 2 if a.ndim == 3 else 0
    raw = b"".join(b"\x00" + a[r].tobytes() for r in range(h))

    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


CHUNK_COLORS = {"NP": "#d4e6f7", "VP": "#d6efd0", "PP": "#fde2c8", "ADVP": "#eadcf5", "ADJP": "#f8d5e5",
                "SBAR": "#fff1b0", "PRT": "#d3f0ef", "CONJP": "#e8e0d0", "INTJ": "#e0e0e0", "LST": "#e0e0e0",
                "UCP": "#e0e0e0"}
CHUNK_OTHER = "#e4e4e4"
MISTAKE = "#d7191c"


def is_iob(tags) -> bool:
    """True if every tag is "O" or "B-X" / "I-X" (a chunking, e.g. CoNLL-2000)."""
    return bool(tags) and all(t == "O" or (len(t) > 2 and t[:2] in ("B-", "I-")) for t in tags)


def iob_chunks(tags) -> list[tuple[int, int, str | None]]:
    """Chunks of an IOB2 tag sequence as (start, end, type), end exclusive; type None for an "O"
    token (one token each). B-X starts a chunk of type X, I-X continues a chunk of type X (an
    I-X that follows anything else starts one, as the CoNLL evaluation script does)."""
    out = []
    cur = None
    for t, tag in enumerate(tags):
        if tag == "O" or len(tag) < 3:
            if cur is not None:
                out.append(cur)
                cur = None
            out.append((t, t + 1, None))
            continue
        kind, typ = tag[0], tag[2:]
        if kind == "I" and cur is not None and cur[2] == typ:
            cur = (cur[0], t + 1, typ)
        else:
            if cur is not None:
                out.append(cur)
            cur = (t, t + 1, typ)
    if cur is not None:
        out.append(cur)
    return out


def chunk_row_html(words, tags, gold=None) -> str:
    """One chunked sentence as wrapping HTML: every chunk a coloured box with its type; "O" words
    plain. With ``gold``, a chunk that is not a gold chunk (same span and type) gets a red
    border and a word whose tag differs from the gold tag is red and underlined."""
    gold_set = {c for c in iob_chunks(gold) if c[2] is not None} if gold is not None else None
    parts = []
    for a, b, typ in iob_chunks(tags):
        ws = []
        for t in range(a, b):
            wrong = gold is not None and t < len(gold) and tags[t] != gold[t]
            word = esc(str(words[t]) if t < len(words) else "?")
            title = esc(f"{tags[t]}" + (f" (gold {gold[t]})" if wrong else ""))
            style = f"color:{MISTAKE};text-decoration:underline;font-weight:600" if wrong else ""
            ws.append(f"<span class='gaplab-word' title='{title}' style='{style}'>{word}</span>")
        inner = " ".join(ws)
        if typ is None:
            parts.append(f"<span class='gaplab-o' style='padding:1px 1px'>{inner}</span>")
            continue
        bad = gold_set is not None and (a, b, typ) not in gold_set
        border = f"2px solid {MISTAKE}" if bad else "1px solid #b9b9b9"
        parts.append(
            f"<span class='gaplab-chunk' data-type='{esc(typ)}' style='background:"
            f"{CHUNK_COLORS.get(typ, CHUNK_OTHER)};border:{border};border-radius:4px;padding:0 3px;"
            f"white-space:nowrap'><b style='font-size:9.5px;color:#333;margin-right:3px;"
            f"vertical-align:1px'>{esc(typ)}</b>{inner}</span>")
    return ("<div style='display:flex;flex-wrap:wrap;gap:3px 4px;line-height:1.45;align-items:center'>"
            + "".join(parts) + "</div>")


SAMPLER_WORDS = {"gap": "gap sampling (P ∝ ĝᵢ)", "uniform": "uniform sampling",
                 "permutation": "a random permutation", "maxgap": "max-gap sampling (the largest ĝᵢ)"}


def _sampler_words(snap, st) -> str:
    """The sampler in words; gap sampling with its power p (P ∝ ĝᵢᵖ) when p ≠ 1."""
    name = st.sampling or snap.config.get("sampling", "")
    if name == "gap":
        p = float(snap.config.get("gap_power", 1.0) or 1.0)
        if p == 1.0:
            return "gap sampling (P ∝ ĝᵢ)"
        return f"gap sampling with power p = {p:g} (P ∝ ĝᵢ<sup>p</sup>)"
    return SAMPLER_WORDS.get(name, name or "the sampler")


def _drawn_words(snap, st) -> str:
    """How the block was drawn. Under gap sampling a block not visited yet has ĝᵢ = +∞ (Paper:
    Alg. 2 line 1), so while unvisited blocks remain the draw is uniform over them."""
    samp = _sampler_words(snap, st)
    name = st.sampling or snap.config.get("sampling", "")
    unvisited = getattr(st, "unvisited", -1)
    if name == "gap" and (math.isinf(getattr(st, "gap_prev", math.nan)) or unvisited > 0):
        m = unvisited if unvisited > 0 else (round(1 / st.probability) if st.probability > 0 else 0)
        prob = f" (probability <b>{st.probability:.2g}</b>)" if math.isfinite(st.probability) else ""
        among = f"the <b>{m:,}</b> blocks not visited yet" if m else "the blocks not visited yet"
        return (f"was drawn uniformly among {among}{prob}: under {samp} an unvisited block has "
                "ĝᵢ = +∞ (Alg. 2 line 1), so the first draws ignore the gaps")
    if math.isfinite(st.probability):
        return f"was drawn with probability <b>{st.probability:.2g}</b> under {samp}"
    return f"was drawn under {samp}"


def corner_name(st) -> str:
    """What the step used as its FW corner: the cache corner y^c on a cache hit (Alg. 5)."""
    return "cache corner" if st.cache_hit else "FW corner"


def _fw_row_label(st) -> str:
    """The anatomy's label of the corner the step moved towards: on a cache hit that is the
    cache corner y^c, not the max oracle's FW corner y* (no oracle was called)."""
    if st.cache_hit:
        return ("<span title='A cache hit: the best labelling in the cache (Alg. 5), used in place of "
                "the FW corner; the max oracle was not called'>cache corner y<sup>c</sup></span>")
    return "FW corner y*"


def step_sentence(snap, st) -> str:
    """One sentence saying what the last block step did ("what just happened"), as HTML.

    Exact in the cases students ask about: a step with γ = 0 moves nothing; on a cache hit the
    stored estimate g_i^(k_i) is unchanged (Paper: Alg. 5 updates it only on a miss) and the gap
    computed at the step is the cache corner's; on the first pass of gap sampling the draw is
    uniform over the unvisited blocks (ĝ = +∞, Alg. 2 line 1); with gap power p, P ∝ ĝᵢᵖ."""
    drawn = _drawn_words(snap, st)
    if st.cache_hit:
        how = ("the cache hit: the best cached labelling, the cache corner y<sup>c</sup>, served as FW "
               "corner (no oracle call)")
    elif snap.config.get("cache"):
        how = "the cache missed, so the max oracle was called"
    else:
        how = "the max oracle was called"
    cname = corner_name(st)
    wrong = sum(a != b for a, b in zip(st.fw_corner, st.truth)) + abs(len(st.fw_corner) - len(st.truth))
    corner = (f"the {cname} is the ground truth itself" if wrong == 0 else
              f"the {cname} differs from the ground truth in {wrong} of {len(st.truth)} position(s)")
    g = f"γ = <b>{_fmt(st.gamma, '.2g')}</b>"
    if not st.gamma > 0:
        if st.kind == "pairwise":
            same = st.away_corner is not None and tuple(st.away_corner) == tuple(st.fw_corner)
            why = (f"the {cname} is the away corner" if same else
                   "the pairwise direction does not decrease f (its gap ⟨−∇ᵢf, d⟩ ≤ 0)")
            move = f"a pairwise step with {g} moved nothing: {why}"
        elif st.kind == "away":
            move = f"an away step with {g} moved nothing (its direction does not decrease f)"
        else:
            move = (f"a FW step with {g} moved nothing: the gap towards the {cname} is ≤ 0, so block "
                    f"{st.block} is already optimal for that direction")
    elif st.kind == "pairwise":
        move = f"a pairwise step with {g} moved mass from the away corner to the {cname}"
    elif st.kind == "away":
        move = f"an away step with {g} moved mass away from the away corner (onto the other atoms)"
    else:
        move = f"a FW step with {g} moved the block towards the {cname}"
    if st.drop:
        move += " and dropped the away atom from the active set"
    after = f"<b>{_gap_word(st.gap_after)}</b>"
    if st.cache_hit:
        est = (f"its stored estimate g<sub>i</sub><sup>(k<sub>i</sub>)</sup> = {_gap_word(st.gap_before)} "
               "stays unchanged (a hit updates neither it nor k<sub>i</sub>)")
        comp = {"fw": "the cache corner's gap at the step was",
                "pairwise": "the step's direction gap ⟨−∇ᵢf, d⟩ (cache corner minus away corner) was",
                }.get(st.kind, "the step's direction gap ⟨−∇ᵢf, d⟩ was")
        gaps = f"{est}; {comp} {_gap_word(st.direction_gap)}; after the step the block gap is {after}"
    elif math.isfinite(getattr(st, "gap_prev", math.nan)):
        gaps = (f"its block gap went from {_gap_word(st.gap_prev)} (the stored estimate ĝᵢ) / "
                f"{_gap_word(st.gap_before)} (computed at the step) to {after}")
    else:
        gaps = f"its block gap went from {_gap_word(st.gap_before)} to {after}"
    return (f"<b>What just happened:</b> block <b>{st.block}</b> {drawn}; {how}; {corner}; {move}; "
            f"{gaps}.")


# the anatomy's row labels, with what students get wrong on hover
_TIP_BEFORE = (
    "<span title='The block gap g_i computed by this step&#39;s oracle call. The estimate stored for "
    "gap sampling is this gap *before* the step: right after a large step it overestimates the "
    "block&#39;s gap, and the sum of the stored estimates bounds nothing (Fig. 1b).'>"
    "block gap before g<sub>i</sub></span>")
_TIP_BEFORE_HIT = (
    "<span title='A cache hit updates neither g_i^(k_i) nor k_i (Alg. 5 updates them only on a miss): "
    "gap sampling with a cache draws from staler estimates.'>stored estimate "
    "g<sub>i</sub><sup>(k<sub>i</sub>)</sup></span>")
_TIP_DIRECTION_HIT = (
    "<span title='The gap towards the cache corner, ĝ_i = ⟨−∇_i f, e_c − α_i⟩ (Alg. 5 line 8): the "
    "cache hit rule compares it with max(F g_i^(k_i), (ν/n) g^(k_0)).'>cache corner&#39;s gap "
    "⟨−∇<sub>i</sub>f, d⟩</span>")
_TIP_IMPROVEMENT_BOX = (
    "<span title='Box constraints (App. H): w = clip(v); the gap and γ use the untruncated v_i. γ is "
    "exact for the dual with the box multipliers β held fixed, and γg − γ²λ‖d‖²/2 is the decrease at "
    "fixed β: re-clipping w afterwards lowers f further, so this is a lower bound on the true "
    "decrease.'>dual improvement (≥, box)</span>")


def status_test_words(snap) -> str:
    """The status line's test number: the problem's headline metric (CoNLL: chunk F1, with the
    pass it was evaluated at) when it has one, else the test error at the last exact check."""
    name = getattr(snap, "test_metric_name", "test error")
    value = getattr(snap, "test_metric", math.nan)
    if name != "test error":
        if not math.isfinite(value):
            return ""
        at = getattr(snap, "test_metric_passes", math.nan)
        when = f" @ {at:.1f} passes" if math.isfinite(at) else ""
        return f" · test {esc(name)} <b>{100 * value:.2f}%</b>{when}"
    if math.isfinite(snap.exact_test_error):
        return f" · test error {100 * snap.exact_test_error:.2f}%"
    return ""


class AnatomyView(_Base):
    """The last block step: the input (OCR word image), its ground truth, the FW corner and the
    away corner decoded, step kind, γ, cache hit or miss, block gap before and after.

    Drawn as HTML (pixel-exact letter images, real text the browser tests can read)."""

    MAX_TOKENS = 16
    RUNNING_MIN_INTERVAL_S = 0.45   # while a run goes, redraw at most twice per second

    def __init__(self, stacked: bool = False, name=None, compact: bool = False, on_part=None):
        super().__init__()
        # pose models: a part picker (whose score map is drawn); on_part(index) asks the session
        # to describe the last step again with that part
        self._on_part = on_part
        self._part_guard = False
        self.part_picker = pn.widgets.Select(name="score map of part", options={}, width=230, margin=(0, 10),
                                             visible=False, css_classes=["gaplab-part-picker"])
        self.part_picker.param.watch(self._part_chosen, "value")
        # fixed heights: content that changes 10x/s must not make the browser re-layout the page
        # (a long CoNLL sentence chunked three times may need more: the word pane then scrolls)
        self._stacked = stacked
        # compact: projector mode (text at least 18 px, the table in two columns)
        self._scale = 1.3 if compact else 1.0
        self._compact = compact
        self.word = LiveHTML("", sizing_mode="stretch_width", margin=(5, 10), height=self._height(False),
                                 styles={"font-size": "14px", "overflow-x": "hidden", "overflow-y": "auto"})
        self.table = LiveHTML("", width=430 if not stacked else None, margin=(5, 10),
                                  height=235 if not compact else 300,
                                  sizing_mode=None if not stacked else "stretch_width",
                                  styles={"font-size": "14px", "overflow": "hidden"})
        layout = pn.Column if stacked else pn.Row
        # "what just happened": one sentence about the last step, under it (a long one, e.g. a
        # cache hit's, scrolls rather than being cut off)
        self.sentence = LiveHTML("", sizing_mode="stretch_width", margin=(0, 10),
                                     height=64 if not compact else 120,
                                     css_classes=["gaplab-sentence", "gaplab-narration"],
                                     styles={"font-size": "13.5px", "overflow-x": "hidden", "overflow-y": "auto",
                                             "background": "#f4f7fa", "border-left": "4px solid #1f3b57",
                                             "padding": "2px 8px"})
        self.panel = pn.Column(self.part_picker, layout(self.word, self.table, sizing_mode="stretch_width"),
                               self.sentence, sizing_mode="stretch_width", css_classes=["gaplab-anatomy"])

    def _part_chosen(self, event):
        if self._part_guard or event.new is None or self._on_part is None:
            return
        self._on_part(int(event.new))

    def _height(self, chunks: bool) -> int:
        """Height of the input pane: taller for a chunked sentence (three wrapped rows); it only
        changes when the kind of data changes, never from one step to the next."""
        if self._compact:
            return 300 if chunks else 215
        if self._stacked:
            return 250 if chunks else 190
        return 290 if chunks else 235

    def _set_height(self, chunks: bool):
        h = self._height(chunks)
        if self.word.height != h:
            self.word.height = h

    @staticmethod
    def _cell(text, color="#222", size="22px", weight="bold"):
        return (f"<td style='text-align:center;padding:0 3px;font-size:{size};font-weight:{weight};"
                f"color:{color};font-family:monospace'>{esc(str(text))}</td>")

    def _draw(self, snap):
        st = snap.last_step
        if st is None and snap.status == "loading" and not snap.n:
            self.word.object = self._big("<div style='font-weight:600;font-size:15px'>Anatomy of the last step</div>"
                                f"<p style='color:#8a5a00'>Loading <b>{esc(snap.dataset)}</b>: "
                                f"{esc(snap.note or 'reading the data')} The buttons come back when "
                                "the solver is ready.</p>")
            self.table.object = ""
            self.sentence.object = ""
            return
        if st is None:
            self.word.object = self._big("<div style='font-weight:600;font-size:15px'>Anatomy of the last step</div>"
                                "<p style='color:#666'>No step yet. <b>Step</b> takes one block step: "
                                "sample a block, call its max oracle, move its dual variables towards "
                                "the FW corner.</p>")
            self.table.object = ""
            self.sentence.object = self._big("<div style='font-size:13.5px;color:#666'><b>What just happened:</b> "
                                             "a sentence about each step appears here.</div>")
            return
        chunks = st.tokens is not None and is_iob(st.truth)
        self._set_height(chunks)
        pose = getattr(st, "pose", None)
        self._show_picker(pose)
        if pose:
            self._draw_pose(snap, st, pose)
        elif getattr(st, "overlays", None):
            self._draw_masks(snap, st)
        elif chunks:
            self._draw_chunks(snap, st)
        else:
            self._draw_tokens(snap, st)
        self._draw_table(snap, st)

    def _draw_chunks(self, snap, st):
        """A sentence (CoNLL chunking): the words, chunked by the ground truth, the FW corner and
        the away corner (Paper: App. I.2); long sentences wrap, the pane scrolls if needed."""
        label = ("<td style='vertical-align:top;text-align:right;padding:3px 8px 0 0;color:#555;"
                 "font-size:12.5px;white-space:nowrap;width:96px'>{}</td>")
        rows = [("ground truth y<sub>i</sub>", "gaplab-gold", chunk_row_html(st.tokens, st.truth))]
        rows.append((_fw_row_label(st), "gaplab-fw", chunk_row_html(st.tokens, st.fw_corner, st.truth)))
        if st.away_corner is not None:
            rows.append(("away corner y<sup>a</sup>", "gaplab-away",
                         chunk_row_html(st.tokens, st.away_corner, st.truth)))
        body = "".join(f"<tr class='{cls}'>{label.format(name)}<td style='padding:2px 0 5px 0'>{row}</td></tr>"
                       for name, cls, row in rows)
        errs = [sum(a != b for a, b in zip(y, st.truth)) for y in (st.fw_corner, st.away_corner) if y is not None]
        note = f" — {esc(st.note)}" if st.note else ""
        self.word.object = self._big(
            f"<div style='font-weight:600;font-size:15px;margin-bottom:4px'>Anatomy of the last step: "
            f"block <span class='gaplab-block'>{st.block}</span>{note} "
            f"<span style='font-weight:normal;font-size:12.5px;color:#555'>({len(st.truth)} words; "
            f"{corner_name(st)}: {errs[0]} wrong tag(s)"
            + (f", away corner: {errs[1]}" if len(errs) > 1 else "") + ")</span></div>"
            f"<table style='border-collapse:collapse;font-size:12.5px;width:100%'>{body}</table>"
            "<div style='color:#666;font-size:11.5px;margin-top:2px'>box: a chunk (B-X starts a chunk of "
            "type X, I-X continues it); red box: not a gold chunk; red word: its tag differs from the "
            "gold tag (adds loss); hover a word for its tag</div>")

    def _show_picker(self, pose):
        """The part picker: shown for a pose block (when a session listens), its options the
        tree's nodes, its value the part drawn (set without calling back)."""
        want = pose is not None and self._on_part is not None
        if self.part_picker.visible != want:
            self.part_picker.visible = want
        if not want:
            return
        opts = {f"{k}: {nm}": k for k, nm in enumerate(pose["part_names"])}
        self._part_guard = True
        try:
            if self.part_picker.options != opts:
                self.part_picker.options = opts
            if self.part_picker.value != pose["part"]:
                self.part_picker.value = pose["part"]
        finally:
            self._part_guard = False

    def _draw_pose(self, snap, st, pose):
        """A pose block (Paper: App. I): the score map of one part (bright: high score) with
        the skeleton (the 26-node tree) of the ground truth, the FW corner and the away corner
        over it, one panel each; the corners' panels repeat the ground truth thin and dashed, and
        the drawn part is ringed."""
        px = max(110, self.word.height - 95)
        note = f" — {esc(st.note)}" if st.note else ""
        cells = "".join(
            f"<td style='text-align:center;padding:0 4px;vertical-align:top'>{pose_svg(pose, k, px)}"
            f"<div style='font-size:12px;color:#444'>{esc(name)}"
            + (f" (loss {loss:.3f})" if key != "truth" else "") + "</div></td>"
            for k, (name, key, _, loss) in enumerate(pose["skeletons"]))
        self.word.object = self._big(
            f"<div style='font-weight:600;font-size:15px;margin-bottom:4px'>Anatomy of the last step: "
            f"block <span class='gaplab-block'>{st.block}</span>{note} "
            f"<span style='font-weight:normal;font-size:12.5px;color:#555'>({len(pose['skeletons'][0][2])} "
            f"parts on a {pose['G']}×{pose['G']} grid; score map of "
            f"<b class='gaplab-part'>{esc(pose['part_name'])}</b>)</span></div>"
            f"<div style='overflow-x:auto'><table><tr>{cells}</tr></table></div>"
            f"<div style='color:#666;font-size:12px'>gold: ground truth; blue: {corner_name(st)}; pink: away corner; "
            "ring: the part whose score map is shown (bright: high score)</div>")

    def _draw_masks(self, snap, st):
        """A segmentation block (Paper: App. I): the photo with its superpixels, the ground truth,
        the FW corner and the away corner as coloured overlays (darkened: superpixels whose label
        differs from the ground truth, i.e. that add loss), and the FW corner's per-superpixel
        loss as a heat map (the class-balanced, area-weighted Hamming loss, superpixel by
        superpixel)."""
        # equal columns over the pane's width: every panel (up to five) stays in view, scaled down
        cells = "".join(
            f"<td style='text-align:center;padding:0 3px;vertical-align:top'>"
            f"<img class='gaplab-mask' src='{_png(img)}' style='max-width:100%;max-height:140px;"
            f"object-fit:contain;border:1px solid #ddd'>"
            f"<div style='font-size:11.5px;line-height:1.2;color:#444'>{esc(name)}</div></td>"
            for name, img in st.overlays)
        note = f" — {esc(st.note)}" if st.note else ""
        self.word.object = (
            f"<div style='font-weight:600;font-size:15px;margin-bottom:6px'>Anatomy of the last step: "
            f"block <span class='gaplab-block'>{st.block}</span>{note} "
            f"<span style='font-weight:normal;font-size:12.5px;color:#555'>({len(st.truth)} superpixels)</span></div>"
            f"<div style='overflow-x:auto'><table style='width:100%;table-layout:fixed'><tr>{cells}</tr></table></div>"
            f"<div style='color:#666;font-size:11.5px;line-height:1.25'>yellow: true horse; blue: {corner_name(st)}; "
            "pink: away corner; darkened: wrong label (adds loss). Loss heat map: what each wrong superpixel "
            f"of the {corner_name(st)} adds to its loss, ω<sub>p</sub> = area / (2 · area of its true class), light "
            "yellow → dark red (the image's largest ω<sub>p</sub>); they sum to the loss</div>")

    def _draw_tokens(self, snap, st):
        T = len(st.truth)
        show = min(T, self.MAX_TOKENS)
        multi = any(len(s) > 1 for s in st.truth)
        size = "13px" if multi else "22px"
        label = ("<td style='text-align:right;padding-right:10px;color:#555;font-size:13px;"
                 "white-space:nowrap'>{}</td>")
        rows = []
        if st.image is not None:
            cells = "".join(
                f"<td style='padding:0 3px'><img src='{_png(255 - 255 * np.asarray(st.image[t]))}' "
                f"style='width:24px;height:48px;image-rendering:pixelated;border:1px solid #ddd'></td>"
                for t in range(show))
            rows.append("<tr>" + label.format("input x<sub>i</sub>") + cells + "</tr>")
        elif st.tokens is not None:
            cells = "".join(self._cell(st.tokens[t], "#444", "12px", "normal") for t in range(show))
            rows.append("<tr>" + label.format("words") + cells + "</tr>")

        def row(name, seq):
            cells = []
            for t in range(show):
                if t >= len(seq):
                    cells.append("<td></td>")
                    continue
                ok = seq[t] == st.truth[t]
                cells.append(self._cell(seq[t], "#1a9641" if ok else "#d7191c", size))
            return "<tr>" + label.format(name) + "".join(cells) + "</tr>"

        rows.append("<tr>" + label.format("ground truth y<sub>i</sub>")
                    + "".join(self._cell(st.truth[t], "#222", size) for t in range(show)) + "</tr>")
        rows.append(row(_fw_row_label(st), st.fw_corner))
        if st.away_corner is not None:
            rows.append(row("away corner y<sup>a</sup>", st.away_corner))
        more = f" (first {show} of {T} tokens)" if show < T else ""
        note = f" — {esc(st.note)}" if st.note else ""
        self.word.object = self._big(
            f"<div style='font-weight:600;font-size:15px;margin-bottom:6px'>Anatomy of the last step: "
            f"block <span class='gaplab-block'>{st.block}</span>{note}{more}</div>"
            f"<table style='border-collapse:separate;border-spacing:0 4px'>{''.join(rows)}</table>"
            "<div style='color:#666;font-size:12px;margin-top:4px'>green: equals the ground truth; "
            "red: differs (adds loss)</div>")

    def _draw_table(self, snap, st):
        hit = ("cache hit (no oracle call)" if st.cache_hit else
               "cache miss → max oracle" if snap.config.get("cache") else "max oracle call")
        items = [
            ("block i", f"{st.block} of {snap.n}" + (f" ({esc(st.note)})" if st.note else "")),
            # StepRecord.iteration is k, the steps done before this one; the status line counts
            # steps done, so this step took the solver from iteration k to k + 1
            ("step", f"#{st.iteration + 1:,} &nbsp;<span style='font-weight:normal;color:#666'>(iteration "
                     f"{st.iteration:,} → {st.iteration + 1:,})</span>"),
            ("step kind", st.kind + (" (drop step)" if st.drop else "")),
            ("γ (step size)", f"{_fmt(st.gamma, '.4g')} &nbsp;(γ<sub>max</sub> = {_fmt(st.gamma_max, '.4g')})"),
            ("oracle", hit),
            (_TIP_BEFORE_HIT if st.cache_hit else _TIP_BEFORE,
             _fmt_gap(st.gap_before) + (" (stale, unchanged)" if st.cache_hit else "")),
            (_TIP_DIRECTION_HIT if st.cache_hit and st.kind == "fw" else "direction gap ⟨−∇<sub>i</sub>f, d⟩",
             _fmt_gap(st.direction_gap)),
            ("block gap after (diagnostic)", _fmt_gap(st.gap_after)),
            (_TIP_IMPROVEMENT_BOX if getattr(st, "box", False) else "dual improvement",
             _fmt(st.improvement, ".3e")),
        ]
        if st.active_set_size >= 0:
            items.append(("active set |S<sub>i</sub>|", str(st.active_set_size)))
        body = "".join(f"<tr><td style='padding:0 12px 0 0;color:#555;line-height:1.45'>{k}</td>"
                       f"<td style='padding:0'><b>{v}</b></td></tr>" for k, v in items)
        self.table.object = self._big(f"<table style='border-collapse:collapse;font-size:14px'>{body}</table>")
        self.sentence.object = self._big(f"<div style='font-size:13.5px'>{step_sentence(snap, st)}</div>")

    def _big(self, text):
        return _scale_px(text, self._scale, BIG_PX if self._compact else 0.0)


# ----------------------------------------------------------------------------- cache & atoms
class CacheView(_ComparisonPlot):
    """Cache hit rate per pass (runs overlaid), active-set sizes over time, the hit/miss
    timeline of the last steps (Paper: Sec. 3.2, 3.3)."""

    def __init__(self, height=280, stacked: bool = False):
        super().__init__()
        self.fig = _fig(height=height, x_axis_label="effective passes", y_axis_label="cache hits / steps",
                        title="Cache hit rate per pass", y_range=(-0.02, 1.02))
        self.slots = _RunSlots(self.fig, [("rate", "line", "pass")], legend_loc="center_right")
        self.asrc = ColumnDataSource(dict(x=[], mean=[], max=[], cache=[]))
        a = _fig(height=height, x_axis_label="effective passes", y_axis_label="atoms per block",
                 title="Active-set sizes |Sᵢ| (current run)")
        a.line("x", "mean", source=self.asrc, color="#1f77b4", line_width=2.5, legend_label="mean |Sᵢ|")
        a.line("x", "max", source=self.asrc, color="#ff7f0e", line_width=2, legend_label="max |Sᵢ|")
        a.line("x", "cache", source=self.asrc, color="#2ca02c", line_width=2, line_dash="dashed",
               legend_label="mean cached labellings")
        legend_above(a)
        self.afig = a
        self.tsrc = ColumnDataSource(dict(x=[], top=[], color=[]))
        t = _fig(height=130, tools="", toolbar_location=None, x_axis_label="iteration",
                 title="Last steps: cache hit (green) / oracle call (grey)", y_range=(0, 1.05),
                 x_range=Range1d(-0.5, 0.5))
        t.vbar(x="x", top="top", width=0.9, color="color", source=self.tsrc)
        t.yaxis.visible = False
        t.ygrid.visible = False
        t.xaxis.formatter = NumeralTickFormatter(format="0,0")
        self.tfig = t
        self.info = pn.pane.Markdown("", styles={"font-size": "13px", "overflow": "hidden"}, margin=(0, 10),
                                     height=48, sizing_mode="stretch_width")
        plots = (pn.Column if stacked else pn.Row)(_figure_pane(self.fig), _figure_pane(a),
                                                   sizing_mode="stretch_width")
        self.panel = pn.Column(self.info, plots, pn.pane.Bokeh(t, sizing_mode="stretch_width"),
                               sizing_mode="stretch_width")

    def _data(self, cols, snap, current):
        p = cols["pass"]
        return {"rate": dict(x=p["x"], y=p["hit_rate"])}

    def _extra(self, snap, cur):
        if snap.active_history:
            h = np.asarray(snap.active_history, dtype=np.float64)
            self._set(self.asrc, dict(x=h[:, 0], mean=h[:, 1], max=h[:, 2], cache=h[:, 3]))
        else:
            self._set(self.asrc, dict(x=[], mean=[], max=[], cache=[]))
        rs = np.asarray(snap.recent_steps)
        if rs.size:
            hit = rs[:, 1] > 0
            self._set(self.tsrc, dict(x=rs[:, 0], top=np.ones(len(rs)),
                                  color=np.where(hit, "#2ca02c", "#bbbbbb").tolist()))
            # the strip spans exactly the steps shown (an auto range had kept 0 after a run)
            _set_range(self.tfig.x_range, float(rs[0, 0]) - 0.5, float(rs[-1, 0]) + 0.5)
        else:
            self._set(self.tsrc, dict(x=[], top=[], color=[]))
            _set_range(self.tfig.x_range, -0.5, 0.5)
        sc = snap.step_counts or {}
        if not snap.n:
            self.info.object = ""
            return
        steps = max(snap.iteration, 1)
        txt = (f"steps {snap.iteration:,} · oracle calls {snap.oracle_calls:,} (incl. gap checks) · "
               f"cache hits {sc.get('cache_hit', 0):,} ({100 * sc.get('cache_hit', 0) / steps:.1f}% of steps) · "
               f"FW {sc.get('fw', 0):,} · away {sc.get('away', 0):,} · pairwise {sc.get('pairwise', 0):,} · "
               f"drop {sc.get('drop', 0):,}")
        if not snap.tracks_atoms:
            txt += ("  \n*Plain BCFW without cache keeps no atoms (only wᵢ): active sets appear with "
                    "pairwise/away steps or the cache.*")
        elif not snap.config.get("cache"):
            txt += "  \n*Cache is off: every step calls the max oracle.*"
        self.info.object = txt


# ----------------------------------------------------------------------------- status
class StatusView(_Base):
    """One line of numbers about the current run (all from the snapshot)."""

    RUNNING_MIN_INTERVAL_S = 0.15
    #: the background compile's KernelState while it runs (set by the app), else None
    compiling = None
    #: the step (1-based) the anatomy on screen describes, when it is drawn less often than this
    #: line (set by the app; None: no anatomy shown). A lag is said with the numbers.
    anatomy_step = None

    def __init__(self):
        super().__init__()
        # wraps in a narrow output area (one line at 1280 px and wider)
        self.panel = LiveHTML("", sizing_mode="stretch_width", margin=(0, 10), min_height=24,
                              styles={"font-size": "13.5px"})

    def _draw(self, snap):
        from .session import STATUS_LABELS
        status = STATUS_LABELS.get(snap.status, snap.status)
        color = {"running": "#1a9641", "error": "#d7191c", "loading": "#fdae61",
                 "budget": "#2c7fb8"}.get(snap.status, "#555")
        ks = self.compiling
        if ks is not None and snap.status in ("idle", "loading"):
            # never "ready" while the first Step would wait for the compiler
            status, color = f"compiling kernels {100 * ks.fraction:.0f}%", "#d08000"
        note = (f" <span style='color:#8a5a00'>{esc(snap.note)}</span>"
                if snap.status == "loading" and snap.note else "")
        if not snap.n:
            self.panel.object = (f"<div class='gaplab-status'><span style='color:{color};font-weight:bold'>"
                                 f"● {status}</span> {esc(snap.dataset)}{note}</div>")
            return
        if note:  # loading a model into the solver: say what, not the old model's numbers
            self.panel.object = (f"<div class='gaplab-status'><span style='color:{color};font-weight:bold'>"
                                 f"● {status}</span> <b>{esc(snap.dataset)}</b> (n = {snap.n:,}) ·{note}</div>")
            return
        rate = f" · {snap.steps_per_s:,.0f} steps/s" if snap.status == "running" and snap.steps_per_s else ""
        exact = (f"exact gap <b>{_fmt(snap.exact_gap)}</b> @ {snap.exact_passes:.1f} passes"
                 if math.isfinite(snap.exact_gap) else "exact gap –")
        test = status_test_words(snap)
        if snap.origin:   # a model picked on the path, or a λ warm start (Session.keep_alpha)
            src = "from the path" if snap.origin.startswith("path") else "warm start from " + esc(snap.origin)
            test += f" · λ = <b>{snap.lam:.4g}</b> <span style='color:#666'>({src})</span>"
        self.panel.object = (
            f"<div class='gaplab-status'><span style='color:{color};font-weight:bold'>● {status}</span> &nbsp;"
            f"<b>{esc(snap.dataset)}</b> (n = {snap.n:,}) · iteration <b>{snap.iteration:,}</b> · "
            f"<b>{snap.effective_passes:.2f}</b> passes · heuristic gap <b>{_fmt(snap.heuristic_gap)}</b> · "
            f"{exact}{test}{rate}{self._anatomy_lag(snap)}</div>")

    def _anatomy_lag(self, snap) -> str:
        shown = self.anatomy_step
        if shown is None or snap.iteration <= shown:
            return ""
        return (f" · <span class='gaplab-anatomy-lag' style='color:#666'>anatomy: step #{shown:,}, "
                f"{snap.iteration - shown:,} steps ago</span>")
