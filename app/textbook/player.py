"""The controls every explorable figure shares, driven by BokehJS callbacks only: a step scrubber
(a slider), a play/pause toggle that moves it, a switch between precomputed variants, and the
small JavaScript helpers the figures' callbacks start with (:data:`JS_HELPERS`)."""
from __future__ import annotations

from bokeh.models import CustomJS, RadioButtonGroup, Slider, Toggle

__all__ = ["JS_HELPERS", "scrubber", "play_toggle", "variant_switch", "controls_row", "on_ready"]

#: prepended to a figure's update callback: HTML escaping of data strings, number formats
JS_HELPERS = r"""
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
                            .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
const fmt = (v, p) => (v === null || v === undefined || !isFinite(v)) ? "–" : Number(v).toPrecision(p || 3)
                            .replace(/(\.\d*?)0+(e|$)/, "$1$2").replace(/\.(e|$)/, "$1");
const grp = (k) => Number(k).toLocaleString("en-US");
"""


def scrubber(name: str, title: str, end: int, value: int = 0) -> Slider:
    """The step scrubber: an integer slider from 0 to ``end`` (at least 1) that stretches to the
    page's width (a phone's too)."""
    return Slider(start=0, end=max(int(end), 1), value=int(value), step=1, title=title, name=name,
                  sizing_mode="stretch_width", min_width=200, margin=(4, 10, 4, 10))


def play_toggle(slider: Slider, name: str, frames: int = 240, interval_ms: int = 60,
                stride: float | None = None, wrap: bool = False) -> Toggle:
    """A ▶ Play / ❚❚ Pause toggle moving ``slider`` every ``interval_ms`` (a timer of the page)
    by ``stride`` (default: an integer step that reaches the end in about ``frames`` frames).
    At the end it stops (and starts from the start when pressed there), or with ``wrap`` goes
    on from the start."""
    btn = Toggle(label="▶ Play", active=False, width=96, name=name, margin=(4, 10, 4, 10),
                 button_type="success")
    step_js = (repr(float(stride)) if stride is not None
               else "Math.max(1, Math.round((slider.end - slider.start) / frames))")
    btn.js_on_change("active", CustomJS(args=dict(slider=slider, btn=btn, frames=frames, ms=interval_ms,
                                                  wrap=bool(wrap)), code="""
const key = "__gaplab_play_" + btn.id;
if (window[key]) { clearInterval(window[key]); window[key] = null; }
if (!btn.active) { btn.label = "▶ Play"; return; }
btn.label = "❚❚ Pause";
if (!wrap && slider.value >= slider.end) slider.value = slider.start;
window[key] = setInterval(() => {
  const stride = STEP;
  if (wrap) {
    const v = slider.value + stride;
    slider.value = v > slider.end + 1e-9 ? slider.start : v;
    return;
  }
  if (slider.value >= slider.end) { btn.active = false; return; }
  slider.value = Math.min(slider.end, slider.value + stride);
}, ms);
""".replace("STEP", step_js)))
    return btn


def variant_switch(labels, name: str, active: int = 0) -> RadioButtonGroup:
    """A switch between precomputed variants (one button per label)."""
    return RadioButtonGroup(labels=list(labels), active=int(active), name=name, margin=(4, 10, 4, 10))


def controls_row(*children):
    """The figure's buttons in one row that wraps onto more lines on a narrow screen (a phone)
    instead of running past its edge."""
    from bokeh.layouts import row
    from bokeh.models import InlineStyleSheet
    return row(*children, sizing_mode="stretch_width",
               stylesheets=[InlineStyleSheet(css=":host { flex-wrap: wrap; row-gap: 2px; }")])


def on_ready(layout, callback: CustomJS):
    """Mark ``callback`` to run once when the page's document is ready (the first drawing of the
    figure): :mod:`gaplab.app.textbook.page` runs every CustomJS found in a figure's ``tags``."""
    layout.tags = list(layout.tags) + [callback]
    return layout
