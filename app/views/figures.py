"""Shared figure and text helpers of the live views: the app's Bokeh figure style and log axes
(ticks, labels, ranges), in-place ColumnDataSource updates, number formats, the projector-mode
font switch and a small PNG encoder for inline images.

Every number drawn comes from a snapshot (computed by the core); log axes use a positive floor.
"""
from __future__ import annotations

import base64
import math
import re
import struct
import weakref
import zlib

import numpy as np
import panel as pn
from bokeh.models import CustomJSTicker, CustomJSTickFormatter, Label, LogScale
from bokeh.palettes import Category10_10
from bokeh.plotting import figure

from ..wording import ROUND_OFF, gap_words, is_round_off  # noqa: F401  (ROUND_OFF re-exported by views)

GAP_FLOOR = 1e-12          # log axes: values <= 0 (round-off) are drawn at this floor
CURRENT_COLOR = "#111111"
RUN_COLORS = [c for c in Category10_10 if c != "#7f7f7f"]
MAX_SLOTS = 8              # comparison runs drawn (Session keeps at most 8)
LEGEND_ROW_PX = 17         # a legend row below a figure
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


# Major ticks of a log axis, at least three labelled: the decades inside the visible range
# (every k-th when there are more than 7) when three or more are visible, else 1-2-5 steps (or
# 1..9 × each decade on a narrower range); never the linear ticks
# Bokeh's LogTicker falls back to on a range under two decades (0.01, 8e-3, 6e-3, 4e-3 piled up
# at the top of the block-gap axis).
_LOG_MAJOR_JS = """
const lo = Math.min(cb_data.start, cb_data.end), hi = Math.max(cb_data.start, cb_data.end);
if (!(lo > 0) || !isFinite(hi)) { return []; }
const eps = 1e-9;
const k0 = Math.ceil(Math.log10(lo) - eps), k1 = Math.floor(Math.log10(hi) + eps);
if (k1 - k0 + 1 >= 3) {
  const step = Math.max(1, Math.ceil((k1 - k0 + 1) / 7));
  const out = [];
  for (let k = k0; k <= k1; k++) { if ((k - k0) % step == 0) { out.push(Number(Math.pow(10, k).toPrecision(12))); } }
  return out;
}
for (const ms of [[1, 2, 5], [1, 2, 3, 4, 5, 6, 7, 8, 9]]) {
  const out = [];
  for (let k = k0 - 1; k <= k1; k++) {
    for (const m of ms) {
      const t = Number((m * Math.pow(10, k)).toPrecision(12));
      if (t >= lo * (1 - eps) && t <= hi * (1 + eps)) { out.push(t); }
    }
  }
  if (out.length >= 3) { return out; }
}
// under a factor of ~1.3: three evenly spaced ticks, two significant digits
const mid = Number(Math.sqrt(lo * hi).toPrecision(2));
return [Number(lo.toPrecision(2)), mid, Number(hi.toPrecision(2))].filter((t, j, a) => a.indexOf(t) == j);
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
    """Ticker of the app's log axes, at least three labelled ticks: decades when at least three
    are visible (thinned to at most 7 labels), 1-2-5 steps (or 1..9) on a narrower range; minor
    ticks at 2..9 × each decade."""
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


LEGEND_SAMPLE_TAG = "gaplab-legend-sample"


def legend_samples(fig) -> None:
    """Every legend entry of ``fig`` shows its line/marker sample also while its data is empty.

    BokehJS draws no sample for a renderer without data points (an entry was a bare label until
    its curve had a point). Each renderer named by a legend entry gets a stand-in: the same glyph
    on a one-row source of NaN (drawn nowhere in the plot, only as the entry's sample), added to
    the entry, so hiding the entry hides both. Stand-ins carry the tag
    :data:`LEGEND_SAMPLE_TAG` and never an ``x`` column; calling again adds none twice."""
    from bokeh.core.property.vectorization import Field
    from bokeh.models import ColumnDataSource, GlyphRenderer, Legend

    for leg in fig.select({"type": Legend}):
        for item in leg.items:
            have = {r.tags[1] for r in item.renderers if r.tags[:1] == [LEGEND_SAMPLE_TAG]}
            for r in list(item.renderers):
                if not isinstance(r, GlyphRenderer) or r.tags[:1] == [LEGEND_SAMPLE_TAG] or r.id in have:
                    continue
                props = dict(r.glyph.properties_with_values(include_defaults=False))
                data = {}
                for name, v in props.items():
                    if isinstance(v, Field) or (name in r.glyph.dataspecs() and isinstance(v, str)
                                                and v in r.data_source.column_names):
                        col = f"_sample_{name}"
                        props[name] = col
                        data[col] = [math.nan]
                proxy = GlyphRenderer(data_source=ColumnDataSource(data), glyph=type(r.glyph)(**props),
                                      tags=[LEGEND_SAMPLE_TAG, r.id])
                fig.renderers.append(proxy)
                item.renderers = list(item.renderers) + [proxy]


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
    leg.spacing = 8      # entries apart: a sample never touches the previous label
    f.center.remove(leg)
    f.add_layout(leg, "above")
    legend_samples(f)
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


def _fmt_gap(v, spec=".4e", tol=ROUND_OFF):
    """A gap (>= 0 in exact arithmetic) for a table: within ``tol`` of 0 (the one round-off rule,
    :mod:`gaplab.app.wording`; ``tol`` = ROUND_OFF × the gap's scale, default scale 1) it is
    shown as 0 with the raw value in a note."""
    if is_round_off(v, tol):
        return f"0 <span style='font-weight:normal;color:#777'>(round-off: {float(v):.1e})</span>"
    return _fmt(v, spec)


def _gap_word(v, tol=ROUND_OFF) -> str:
    """A gap in plain text for the step sentence ("0 (round-off)" within ``tol`` of 0)."""
    return gap_words(v, tol)


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



def _figure_pane(fig, export: bool = True):
    """A figure with its PNG / SVG export buttons above it (right-aligned)."""
    if not export:
        return pn.pane.Bokeh(fig, sizing_mode="stretch_width")
    from ..export import figure_pane
    return figure_pane(fig)


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


def _lin_range(rng, values, *, start=None, pad=0.04, empty=(0.0, 1.0)):
    """Set an explicit linear range from the finite values (``start`` fixes its left end, e.g.
    pass 0; ``empty`` with no data). An auto range (DataRange1d) over empty sources has no start
    and end, and BokehJS then warns "could not set initial ranges" on every redraw."""
    v = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in values]) if values else np.zeros(0)
    v = v[np.isfinite(v)]
    if not v.size:
        lo, hi = empty
    else:
        lo = float(v.min()) if start is None else min(float(start), float(v.min()))
        hi = float(v.max())
        span = hi - lo if hi > lo else max(abs(hi), 1.0)
        lo, hi = (lo if start is not None else lo - pad * span), hi + pad * span
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


def frame_note(fig) -> Label:
    """A note drawn in the middle of a figure's plot frame (shown while the plot has nothing to
    draw: what it will show and when); set it with :func:`set_frame_note`."""
    lab = Label(x=0.5, y=0.5, text="", visible=False, text_align="center", text_baseline="middle",
                text_font_size="13px", text_color="#444444", text_font_style="italic",
                background_fill_color="white", background_fill_alpha=0.85, text_line_height=1.3)
    fig.add_layout(lab)
    return lab


def set_frame_note(note: Label, fig, text: str) -> None:
    """Show ``text`` (lines split by "\\n") centred in ``fig``'s current x and y ranges, or hide
    the note when ``text`` is empty. Call it after the ranges are set."""
    if not text:
        if note.visible:
            note.visible = False
        return
    xr, yr = fig.x_range, fig.y_range
    x = 0.5 * (xr.start + xr.end)
    if isinstance(fig.y_scale, LogScale) and yr.start > 0 and yr.end > 0:
        y = math.sqrt(yr.start * yr.end)
    else:
        y = 0.5 * (yr.start + yr.end)
    if note.text != text or note.x != x or note.y != y or not note.visible:
        note.update(text=text, x=x, y=y, visible=True)


def _set_range(rng, start, end):
    if rng.start != start or rng.end != end:
        rng.update(start=start, end=end)



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

