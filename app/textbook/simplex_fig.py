"""Lesson 5's explorable block simplex: one block with three labellings (K = 3) stepped by the
readable reference solver, drawn as α_i on a triangle with the FW and away corners, the step's
direction, γ_max and the line search's γ, for FW, away and pairwise steps (Paper: Alg. 1, 3, 4).

Three precomputed variants (one per step kind) of the same seeded run: every block of the
three-label problem of :mod:`gaplab.app.simplex` is stepped in a seeded random order, one pass
after another, and each step of the shown block is recorded. The page switches variants and
scrubs steps with BokehJS callbacks only (no Python at view time).

- :func:`build_data`: the recorded trace (JSON-able).
- :func:`build_figure`: the standalone Bokeh layout (step slider, play/pause, step-kind switch).
"""
from __future__ import annotations

import math

import numpy as np

from ..safe_html import esc
from .player import play_toggle
from ..simplex import (CORNER_LABELS, CORNERS_XY, PROBLEMS, STEP_KINDS, SimplexLab, X_START,
                       _vertex_labels, geometry_sentence, simplex_x_end, step_geometry, to_xy)

__all__ = ["LESSON", "build_data", "build_figure", "zoom_window"]

#: the lesson page (app/lessons.py: "5 · Pairwise and away steps")
LESSON = 5
#: the shown block of the three-label problem: with seed 0 a FW step zig-zags on it while an
#: away or pairwise step drops y = 0 (the lesson's point)
BLOCK = 2
PASSES = 12
_KIND_COLOR = {"fw": "#d62728", "away": "#1f77b4", "pairwise": "#9467bd"}
_KIND_NAME = {"fw": "FW", "away": "away", "pairwise": "pairwise"}
_KIND_LABEL = {"fw": "FW (Alg. 1)", "away": "away (Alg. 4)", "pairwise": "pairwise (Alg. 3)"}
#: a row that wraps its figures under each other when the page is narrower than their minimum widths
_WRAP_CSS = ":host { flex-wrap: wrap !important; min-width: 0 !important; }"
#: the narrowest figure the vertex labels must fit (a 390-px phone less the page's margins)
_MIN_WIDTH_PX = 340


def _away_note(kind_asked: str, kind_taken: str) -> str:
    if kind_asked == "away" and kind_taken == "fw":
        return (" The away direction's gap is not larger than the FW gap, so the away-step variant "
                "takes the FW step (Alg. 4 line 12).")
    return ""


def _run_kind(kind: str, seed: int, block: int, passes: int) -> dict:
    """One variant: every block stepped with ``kind`` in a seeded random order, ``passes`` passes;
    the steps of ``block`` recorded (α before and after, corners, γ, γ_max, exact duality gap)."""
    lab = SimplexLab("random", kind, block=0, seed=seed)
    rng = np.random.default_rng(seed)
    rec = {k: [] for k in ("step", "pass", "alpha", "alpha_after", "kind", "fw_corner", "away_corner",
                           "gamma", "gamma_max", "drop", "duality_gap", "sentence")}
    t = 0
    for p in range(passes):
        for i in rng.permutation(lab.model.n):
            lab.set_block(int(i))
            g, info = lab.step()
            t += 1
            if int(i) != block:
                continue
            rec["step"].append(t)
            rec["pass"].append(p + 1)
            rec["alpha"].append(g.alpha.tolist())
            rec["alpha_after"].append(lab.alpha().tolist())
            rec["kind"].append(g.kind)
            rec["fw_corner"].append(int(g.fw_corner))
            rec["away_corner"].append(-1 if g.away_corner is None else int(g.away_corner))
            rec["gamma"].append(float(g.gamma))
            rec["gamma_max"].append(float(g.gamma_max))
            rec["drop"].append(bool(g.drop))
            rec["duality_gap"].append(lab.duality_gap())
            rec["sentence"].append(geometry_sentence(g, block) + _away_note(kind, g.kind))
    return rec


def build_data(seed: int = 0, *, block: int = BLOCK, passes: int = PASSES) -> dict:
    """The recorded steps of one block of a three-label problem, one variant per step kind.

    Paper: Alg. 1 (FW), Alg. 3 (pairwise), Alg. 4 (away); the steps are those of
    :func:`gaplab.core.reference.block_step` through :class:`gaplab.app.simplex.SimplexLab`.

    Parameters
    ----------
    seed : int
        Seed of the problem's random features and of the block order.
    block : int
        The block shown, in [0, 4).
    passes : int
        Passes over the 4 blocks, >= 1 (one step of the shown block each).

    Returns
    -------
    dict
        JSON-able: ``lesson``, ``seed``, ``block``, ``lam``, ``n``, ``passes``, ``kinds``,
        ``corners_xy`` (3 × 2) and ``variants[kind]`` with one list entry per step of the
        block: ``step`` (solver step, 1-based), ``pass``, ``alpha`` and ``alpha_after`` (3
        barycentric weights), ``kind`` (the kind taken), ``fw_corner``, ``away_corner`` (−1:
        none), ``gamma``, ``gamma_max``, ``drop``, ``duality_gap`` (exact, after the step) and
        ``sentence``.

    Raises
    ------
    ValueError
        A block outside [0, 4) or passes < 1 (or a seed the solver refuses).
    """
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or not 0 <= block < 4:
        raise ValueError(f"block must be an int in [0, 4), got {block!r}")
    if isinstance(passes, bool) or not isinstance(passes, (int, np.integer)) or passes < 1:
        raise ValueError(f"passes must be an int >= 1, got {passes!r}")
    lab = SimplexLab("random", "fw", block=0, seed=seed)
    return {"lesson": LESSON, "seed": int(seed), "problem": PROBLEMS["random"], "block": int(block),
            "lam": float(lab.lam), "n": int(lab.model.n), "passes": int(passes), "kinds": list(STEP_KINDS),
            "corners_xy": CORNERS_XY.tolist(),
            "variants": {k: _run_kind(k, seed, int(block), int(passes)) for k in STEP_KINDS}}


# ============================================================================ the figure

def _trace_source(rec: dict, block: int):
    """The drawing coordinates of every recorded step of one variant, as a ColumnDataSource: α_i
    (px, py), where the solver put it (gx, gy), the γ_max point (mx, my), the FW and away
    corners (fx, fy, ax, ay; NaN: no away corner), the arrow's colour, the sentence and title."""
    from bokeh.models import ColumnDataSource
    geo = [step_geometry(a, kind, ys, None if ya < 0 else ya, None, gm)
           for a, kind, ys, ya, gm in zip(rec["alpha"], rec["kind"], rec["fw_corner"], rec["away_corner"],
                                          rec["gamma_max"])]
    pt, gp = to_xy(np.asarray(rec["alpha"])), to_xy(np.asarray(rec["alpha_after"]))
    gmax = np.array([g.gamma_max_point for g in geo])
    fw = np.array([g.fw_xy for g in geo])
    away = np.array([g.away_xy if g.away_xy is not None else [np.nan, np.nan] for g in geo])
    html = [f"<b>Step {k + 1} of {len(rec['step'])}</b> (solver step {s}, pass {p}): {esc(sen)}"
            f"<br><span style='color:#555'>exact duality gap after it: {dg:.4g}</span>"
            for k, (s, p, sen, dg) in enumerate(zip(rec["step"], rec["pass"], rec["sentence"], rec["duality_gap"]))]
    title = [f"Block {block}, step {k + 1}: {'a drop step' if d else _KIND_NAME[kind] + ' step'}"
             for k, (kind, d) in enumerate(zip(rec["kind"], rec["drop"]))]
    return ColumnDataSource(dict(px=pt[:, 0], py=pt[:, 1], gx=gp[:, 0], gy=gp[:, 1], mx=gmax[:, 0], my=gmax[:, 1],
                                 fx=fw[:, 0], fy=fw[:, 1], ax=away[:, 0], ay=away[:, 1],
                                 color=[_KIND_COLOR[k] for k in rec["kind"]], html=html, title=title))


#: BokehJS: draw step ``slider.value`` of the variant chosen by ``radio`` into the figure's sources
_UPDATE_JS = """
const kinds = %s;
const tr = traces[kinds[radio.active]].data;
const n = tr.px.length;
const k = Math.max(0, Math.min(n - 1, Math.round(slider.value) - 1));
if (slider.end != n) { slider.end = n; }
point.data = {x: [tr.px[k]], y: [tr.py[k]]};
trail.data = {x: tr.px.slice(0, k + 1), y: tr.py.slice(0, k + 1)};
fw.data = {x: [tr.fx[k]], y: [tr.fy[k]]};
away.data = isNaN(tr.ax[k]) ? {x: [], y: []} : {x: [tr.ax[k]], y: [tr.ay[k]]};
seg.data = {x: [tr.px[k], tr.mx[k]], y: [tr.py[k], tr.my[k]]};
gmax.data = {x: [tr.mx[k]], y: [tr.my[k]]};
gamma.data = {x: [tr.gx[k]], y: [tr.gy[k]]};
const moves = Math.hypot(tr.gx[k] - tr.px[k], tr.gy[k] - tr.py[k]) > 1e-9;
arrow.data = moves ? {x0: [tr.px[k]], y0: [tr.py[k]], x1: [tr.gx[k]], y1: [tr.gy[k]], color: [tr.color[k]]}
                   : {x0: [], y0: [], x1: [], y1: [], color: []};
fig.title.text = tr.title[k];
const d2 = Math.hypot(tr.gx[k] - tr.px[k], tr.gy[k] - tr.py[k]);
const half = Math.max(%s, 0.8 * d2);
const cx = (tr.px[k] + tr.gx[k]) / 2, cy = (tr.py[k] + tr.gy[k]) / 2;
zx.start = cx - half; zx.end = cx + half; zy.start = cy - half; zy.end = cy + half;
text.text = tr.html[k];
"""


def _simplex_plot(srcs: dict):
    """The triangle with its vertex labels and the step's glyphs (sources in ``srcs``)."""
    from bokeh.models import ColumnDataSource, Range1d
    from bokeh.plotting import figure
    s = float(np.sqrt(3.0) / 2.0)
    x0 = X_START + 0.5   # no legend inside: the key is a text line under the figure
    x1 = simplex_x_end(_MIN_WIDTH_PX)
    y0, y1 = -0.12, s + 0.24
    f = figure(x_range=Range1d(x0 - 0.05, x1), y_range=Range1d(y0, y1), tools="", toolbar_location=None,
               sizing_mode="scale_width", width=_MIN_WIDTH_PX + 160, min_width=_MIN_WIDTH_PX,
               height=int((_MIN_WIDTH_PX + 160) * (y1 - y0) / (x1 - x0 + 0.05)), max_width=560,
               title="Block simplex", name="simplex_fig")
    f.axis.visible = False
    f.grid.visible = False
    f.outline_line_alpha = 0
    f.title.text_font_size = "16px"
    f.patch(CORNERS_XY[:, 0], CORNERS_XY[:, 1], fill_color="#f4f4f4", line_color="#555", line_width=1.5)
    lab = ColumnDataSource(dict(CORNER_LABELS, x=CORNERS_XY[:, 0].tolist(), y=CORNERS_XY[:, 1].tolist()))
    _vertex_labels(f, lab)
    _draw_step_glyphs(f, srcs)
    return f


def _draw_step_glyphs(f, srcs: dict) -> None:
    """α_i so far, the corners, the segment up to γ_max, the step's arrow, γ_max, γ and α_i."""
    from bokeh.models import Arrow, VeeHead
    f.line("x", "y", source=srcs["trail"], color="#999", line_width=1.5, line_dash="dotted")
    f.scatter("x", "y", source=srcs["trail"], size=5, color="#999")
    f.scatter("x", "y", source=srcs["fw"], size=22, fill_alpha=0, line_color=_KIND_COLOR["fw"], line_width=3)
    f.scatter("x", "y", source=srcs["away"], size=22, marker="square", fill_alpha=0,
              line_color=_KIND_COLOR["away"], line_width=3)
    f.line("x", "y", source=srcs["seg"], color="#444", line_dash="dashed", line_width=2)
    f.add_layout(Arrow(x_start="x0", y_start="y0", x_end="x1", y_end="y1", source=srcs["arrow"], line_width=3,
                       line_color="color", end=VeeHead(size=14, line_color="#444", fill_color="#444")))
    f.scatter("x", "y", source=srcs["gmax"], marker="x", size=16, line_width=3, color="#444")
    f.scatter("x", "y", source=srcs["gamma"], marker="star", size=18, color="#ff7f0e")
    f.scatter("x", "y", source=srcs["point"], size=14, color="black")


#: the zoom's window: centred between α_i and where the step puts it, at least ±0.04 wide
ZOOM_MIN_HALF = 0.04


def zoom_window(px: float, py: float, gx: float, gy: float) -> tuple[float, float, float, float]:
    """(x start, x end, y start, y end) of the zoom around the step from (px, py) to (gx, gy)
    (as :data:`_UPDATE_JS` sets it)."""
    half = max(ZOOM_MIN_HALF, 0.8 * math.hypot(gx - px, gy - py))
    cx, cy = (px + gx) / 2.0, (py + gy) / 2.0
    return cx - half, cx + half, cy - half, cy + half


def _zoom_plot(srcs: dict):
    """A square close-up of the step (the same sources; its ranges follow the step)."""
    from bokeh.models import Range1d
    from bokeh.plotting import figure
    z = figure(x_range=Range1d(0, 1, name="simplex_zoom_x"), y_range=Range1d(0, 1, name="simplex_zoom_y"),
               tools="", toolbar_location=None, sizing_mode="scale_width", width=300, height=300, max_width=400,
               name="simplex_zoom", min_border=6)
    z.axis.visible = False
    z.grid.visible = False
    z.outline_line_color = "#bbb"
    z.patch(CORNERS_XY[:, 0], CORNERS_XY[:, 1], fill_color="#f4f4f4", line_color="#555", line_width=1.5)
    _draw_step_glyphs(z, srcs)
    return z


#: the key under the figure (HTML; it wraps on a phone where a legend inside the plot would not)
_KEY_HTML = ("<span style='font-size:15px;line-height:1.6'>"
             "<span style='white-space:nowrap;margin-right:0.8em'><b style='color:black'>●</b>&nbsp;α<sub>i</sub></span> "
             "<span style='white-space:nowrap;margin-right:0.8em'><b style='color:#d62728'>○</b>&nbsp;FW corner</span> "
             "<span style='white-space:nowrap;margin-right:0.8em'><b style='color:#1f77b4'>□</b>&nbsp;away corner</span> "
             "<span style='white-space:nowrap;margin-right:0.8em'><b>→</b>&nbsp;the step α&nbsp;+&nbsp;γ·d</span> "
             "<span style='white-space:nowrap;margin-right:0.8em'><b style='color:#444'>- -</b>&nbsp;up to γ<sub>max</sub> (<b>✕</b>)</span> "
             "<span style='white-space:nowrap;margin-right:0.8em'><b style='color:#ff7f0e'>★</b>&nbsp;line search γ</span> "
             "<span style='white-space:nowrap;margin-right:0.8em'><span style='color:#999'>··</span>&nbsp;α<sub>i</sub> so far</span></span>")


def build_figure(data: dict):
    """The standalone explorable figure of :func:`build_data`'s trace: a step-kind switch
    (FW / away / pairwise), a step slider with play/pause, the simplex and the step's sentence.

    Paper: Alg. 1, 3, 4. Every control is wired with CustomJS (no server).

    Parameters
    ----------
    data : dict
        From :func:`build_data`.

    Returns
    -------
    bokeh.models.LayoutDOM
        A column, ``sizing_mode="stretch_width"``; its models are named ``simplex_*`` (the
        sources ``simplex_point``, ``simplex_trail``, ``simplex_fw``, ``simplex_away``,
        ``simplex_seg``, ``simplex_gmax``, ``simplex_gamma``, ``simplex_arrow``; the widgets
        ``simplex_kind``, ``simplex_step``, ``simplex_play``; the text ``simplex_text``).

    Raises
    ------
    KeyError
        ``data`` lacks a field of :func:`build_data`.
    """
    import json

    from bokeh.layouts import column, row
    from bokeh.models import ColumnDataSource, CustomJS, Div, RadioButtonGroup, Slider
    kinds = list(data["kinds"])
    traces = {k: _trace_source(data["variants"][k], data["block"]) for k in kinds}
    srcs = {key: ColumnDataSource(dict(x=[], y=[]), name=f"simplex_{key}")
            for key in ("point", "trail", "fw", "away", "seg", "gmax", "gamma")}
    srcs["arrow"] = ColumnDataSource(dict(x0=[], y0=[], x1=[], y1=[], color=[]), name="simplex_arrow")
    f = _simplex_plot(srcs)
    n = len(data["variants"][kinds[-1]]["step"])
    slider = Slider(start=1, end=n, value=1, step=1, title="step of the block", name="simplex_step",
                    sizing_mode="stretch_width", min_width=150)
    radio = RadioButtonGroup(labels=[_KIND_LABEL[k] for k in kinds], active=kinds.index("pairwise"),
                             name="simplex_kind", sizing_mode="stretch_width")
    text = Div(text="", name="simplex_text", sizing_mode="stretch_width", styles={"font-size": "15px"})
    key = Div(text=_KEY_HTML, sizing_mode="stretch_width")
    intro = Div(text=(f"<b>{esc(data['problem'])}</b>, λ = {data['lam']:g}: the {data['n']} blocks are stepped "
                      f"in a random order (seed {data['seed']}); shown: block {data['block']}'s "
                      f"{n} steps. Switch the step kind and scrub."), sizing_mode="stretch_width",
                styles={"font-size": "14px", "color": "#444"})
    z = _zoom_plot(srcs)
    js = CustomJS(args=dict(traces=traces, radio=radio, slider=slider, fig=f, text=text, zx=z.x_range, zy=z.y_range,
                            **{k: v for k, v in srcs.items()}),
                  code=_UPDATE_JS % (json.dumps(kinds), ZOOM_MIN_HALF))
    slider.js_on_change("value", js)
    radio.js_on_change("active", js)
    play = play_toggle(slider, "simplex_play", interval_ms=700, stride=slider.step, wrap=True)
    _draw_initial(traces[kinds[radio.active]].data, srcs, f, text)
    z.x_range.start, z.x_range.end, z.y_range.start, z.y_range.end = zoom_window(
        *(float(traces[kinds[radio.active]].data[c][0]) for c in ("px", "py", "gx", "gy")))
    zoom = column(Div(text="<b>Close-up of the step</b>", styles={"font-size": "15px"}), z,
                  sizing_mode="stretch_width", min_width=260, max_width=400)
    figs = row(f, zoom, sizing_mode="stretch_width", stylesheets=[_WRAP_CSS])
    return column(intro, radio, row(play, slider, sizing_mode="stretch_width"), figs, key, text,
                  sizing_mode="stretch_width", name="simplex_layout", max_width=760)


def _draw_initial(tr: dict, srcs: dict, fig, text) -> None:
    """The first step drawn into the sources before any callback runs (as :data:`_UPDATE_JS`
    draws step 1; a test compares the two)."""
    px, py, gx, gy, mx, my = (float(tr[c][0]) for c in ("px", "py", "gx", "gy", "mx", "my"))
    srcs["point"].data = dict(x=[px], y=[py])
    srcs["trail"].data = dict(x=[px], y=[py])
    srcs["fw"].data = dict(x=[float(tr["fx"][0])], y=[float(tr["fy"][0])])
    ax, ay = float(tr["ax"][0]), float(tr["ay"][0])
    srcs["away"].data = dict(x=[], y=[]) if np.isnan(ax) else dict(x=[ax], y=[ay])
    srcs["seg"].data = dict(x=[px, mx], y=[py, my])
    srcs["gmax"].data = dict(x=[mx], y=[my])
    srcs["gamma"].data = dict(x=[gx], y=[gy])
    moves = float(np.hypot(gx - px, gy - py)) > 1e-9
    srcs["arrow"].data = (dict(x0=[px], y0=[py], x1=[gx], y1=[gy], color=[tr["color"][0]]) if moves
                          else dict(x0=[], y0=[], x1=[], y1=[], color=[]))
    fig.title.text = tr["title"][0]
    text.text = tr["html"][0]
