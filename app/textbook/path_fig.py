"""Lesson 8's explorable regularization path: the ε-approximate path of OCR-small (Paper: Sec. 4,
Proposition 1, Alg. 6-7) against the warm-started grid search 2^k (App. K), with λ on a slider.

Each breakpoint λ_j certifies a band: for λ in [λ_{j+1}, λ_j] the path keeps w_j, and the
rescaled dual point has duality gap g_j + (1 − λ/λ_j)Δ_j <= ε (Proposition 1). Moving the slider
highlights the band that holds λ, the certified gap at λ and the cost (cumulative effective
passes) of the path and of the grid down to λ. Everything is computed by :mod:`gaplab.core.regpath`
at build time; the page is driven by BokehJS callbacks only.

- :func:`build_data`: the path, the grid and fresh duality gaps of the path's pairs at the grid's λ.
- :func:`build_figure`: the standalone Bokeh layout (λ slider, play/pause, two figures, a readout).
"""
from __future__ import annotations

import math

import numpy as np

from ..pathlab_snapshot import end_words
from ..safe_html import esc
from .player import play_toggle

__all__ = ["LESSON", "build_data", "build_figure", "state_at"]

#: the lesson page (app/lessons.py: "8 · The regularization path")
LESSON = 8
DATASET = "ocr-small"
PATH_COLOR = "#1f77b4"
GRID_COLOR = "#2ca02c"
PICK_COLOR = "#d62728"
_COLS = ("lam", "next_lam", "gap", "delta", "ell", "passes", "cum_passes", "certified")


def _grid_lams(lam_hi: float, lam_lo: float) -> np.ndarray:
    """The paper's grid 2^k within [lam_lo, lam_hi], decreasing (App. K)."""
    from ..pathlab_worker import grid_lams
    return grid_lams(lam_hi, lam_lo)


def _clean(v):
    """A float for JSON: NaN and infinities as None."""
    v = float(v)
    return v if math.isfinite(v) else None


def build_data(seed: int = 0, *, eps: float = 0.1, kappa: float = 0.9, lam_min: float = 2.0 ** -15,
               grid_lo: float = 2.0 ** -15) -> dict:
    """The ε-approximate path of OCR-small and the warm-started grid search, with the checks.

    Paper: Sec. 4 (Proposition 1), Alg. 6-7 (the path), App. K (the grid 2^k, warm start
    "primal"). The solver at every breakpoint and grid point is BCFW with gap sampling
    (``SolverConfig(seed=seed)``).

    Parameters
    ----------
    seed : int
        The solver's seed.
    eps : float
        ε > 0 of the path (and the grid's exact gap target).
    kappa : float
        κ in (0, 1): each breakpoint is solved to κε.
    lam_min : float
        The path stops once it covers λ_min (> 0).
    grid_lo : float
        The grid runs from the largest 2^k <= λ_∞ down to max(grid_lo, λ_min, the path's end).

    Returns
    -------
    dict
        JSON-able: ``lesson``, ``seed``, ``dataset``, ``n``, ``eps``, ``kappa``, ``lam_min``,
        ``end`` (why the path ended), ``path`` (columns per breakpoint: ``lam``, ``next_lam``
        (0: every smaller λ is covered; None: not certified), ``gap`` (exact g_j), ``delta``
        (Δ_j), ``ell``, ``passes``, ``cum_passes``, ``certified``), ``grid`` (``lam``, ``gap``
        (exact), ``primal``, ``passes``, ``cum_passes``) and ``check``: at every grid λ the path
        covers, the fresh duality gap, primal and dual of the path's pair (n max-oracle calls).

    Raises
    ------
    ValueError
        Bad ε, κ, λ_min or grid_lo (from :class:`gaplab.core.regpath.PathConfig`).
    """
    from gaplab.core.config import SolverConfig
    from gaplab.core.problems import load_problem
    from gaplab.core.regpath import PathConfig, grid_search, regularization_path
    if not (isinstance(grid_lo, (int, float)) and math.isfinite(grid_lo) and grid_lo > 0):
        raise ValueError(f"grid_lo must be a finite number > 0, got {grid_lo!r}")
    cfg = PathConfig(eps=eps, kappa=kappa, lam_min=lam_min)
    scfg = SolverConfig(seed=seed)
    model = load_problem(DATASET).model
    path = regularization_path(model, cfg, scfg)
    cols = {c: path.column(c) for c in _COLS}
    lo = max(float(grid_lo), cfg.lam_min, path.lam_end if math.isfinite(path.lam_end) else 0.0)
    lams = _grid_lams(path.lam_inf, lo)
    grid = grid_search(model, lams, eps=cfg.eps, warm_start="primal", solver_config=scfg)
    check = {"lam": [], "gap": [], "primal": [], "dual": []}
    for lam in lams:
        try:
            g, p, d = path.duality_gap(model, float(lam))
        except ValueError:      # below the path's end: nothing certified there
            continue
        for k, v in zip(("lam", "gap", "primal", "dual"), (lam, g, p, d)):
            check[k].append(float(v))
    return {"lesson": LESSON, "seed": int(seed), "dataset": DATASET, "n": int(model.arrays.n),
            "eps": cfg.eps, "kappa": cfg.kappa, "lam_min": cfg.lam_min, "end": path.end_reason,
            "path": {c: ([bool(x) for x in v] if c == "certified" else [_clean(x) for x in v])
                     for c, v in cols.items()},
            "grid": {"lam": [float(x) for x in grid.column("lam")],
                     "gap": [_clean(x) for x in grid.column("gap")],
                     "primal": [_clean(x) for x in grid.column("primal")],
                     "passes": [_clean(x) for x in grid.column("passes")],
                     "cum_passes": [_clean(x) for x in grid.column("cum_passes")]},
            "check": check}


# ============================================================================ the figure

def _lam_range(data: dict) -> tuple[float, float]:
    """(smallest, largest) λ of the slider: the path's first breakpoint down to the grid's end
    (or the path's end, or the last breakpoint / 8 when the path covers every smaller λ)."""
    p = data["path"]
    hi = float(p["lam"][0])
    lo_cands = [min(data["grid"]["lam"])] if data["grid"]["lam"] else []
    ends = [x for x in p["next_lam"] if x is not None and x > 0]
    lo_cands.append(min(ends) if ends else float(p["lam"][-1]) / 8.0)
    return max(min(lo_cands), data["lam_min"]), hi


def _bands(data: dict, lo: float) -> dict:
    """Proposition 1's certified gap on each piece [λ_{j+1}, λ_j]: NaN-separated segments from
    (λ_j, g_j) to (λ_{j+1}, g_j + (1 − λ_{j+1}/λ_j)Δ_j), the last piece drawn to ``lo``."""
    p = data["path"]
    xs, ys = [], []
    for lj, nj, gj, dj, ok in zip(p["lam"], p["next_lam"], p["gap"], p["delta"], p["certified"]):
        if not ok or nj is None:
            continue
        end = nj if nj > 0 else lo
        xs += [lj, max(end, lo), math.nan]
        ys += [gj, gj + (1.0 - max(end, lo) / lj) * dj, math.nan]
    return dict(x=xs, y=ys)


def _figures(data: dict, lo: float, hi: float, srcs: dict):
    """The gap figure (bands, breakpoints, ε, κε, the grid's exact gaps) and the cost figure
    (cumulative passes of the path and of the grid), sharing the flipped λ axis."""
    from bokeh.models import BoxAnnotation, ColumnDataSource, Range1d, Span
    from bokeh.plotting import figure
    eps, kappa = data["eps"], data["kappa"]
    x_range = Range1d(hi * 2.0, lo / 2.0)     # flipped: the path runs right, to smaller λ
    kw = dict(x_axis_type="log", x_range=x_range, sizing_mode="stretch_width", height=250, min_width=300,
              tools="", toolbar_location=None)
    p, gr = data["path"], data["grid"]
    gaps = [g for g in p["gap"] + gr["gap"] if g is not None and g > 0]
    g = figure(y_axis_type="log", y_range=Range1d(max(min(gaps) / 3.0, eps * 1e-4), eps * 2.5),
               title="Duality gap, certified bands", name="path_gap_fig", **kw)
    band = BoxAnnotation(left=None, right=None, fill_color=PICK_COLOR, fill_alpha=0.12, name="path_band")
    g.add_layout(band)
    g.line("x", "y", source=srcs["bands"], color="#6baed6", line_width=1.5)
    g.scatter(p["lam"], [max(x, 1e-300) for x in p["gap"]], color=PATH_COLOR, size=5)
    g.scatter(gr["lam"], [max(x or 1e-300, 1e-300) for x in gr["gap"]], color=GRID_COLOR, marker="square", size=8)
    g.line("x", "y", source=srcs["piece"], color=PICK_COLOR, line_width=3.5)
    g.scatter("x", "y", source=srcs["pick"], color=PICK_COLOR, size=12, marker="diamond")
    g.add_layout(Span(location=eps, dimension="width", line_color="#d62728", line_width=2))
    g.add_layout(Span(location=kappa * eps, dimension="width", line_color="#d62728", line_width=1.5,
                      line_dash="dashed"))
    c = figure(title="Cost: effective passes so far", name="path_cost_fig",
               y_range=Range1d(0, max([x for x in p["cum_passes"] + gr["cum_passes"] if x is not None]) * 1.08), **kw)
    c.line(p["lam"], p["cum_passes"], color=PATH_COLOR, line_width=2.5)
    c.line(gr["lam"], gr["cum_passes"], color=GRID_COLOR, line_width=2, line_dash="dashed")
    c.scatter(gr["lam"], gr["cum_passes"], color=GRID_COLOR, marker="square", size=7)
    c.scatter("x", "y", source=srcs["cost"], color=PICK_COLOR, size=11, marker="diamond")
    spans = []
    for f, ylab in ((g, "duality gap"), (c, "passes so far")):
        sp = Span(location=None, dimension="height", line_color=PICK_COLOR, line_width=2, line_alpha=0.8)
        f.add_layout(sp)
        spans.append(sp)
        f.xaxis.axis_label = "λ (log scale, decreasing →)"
        f.yaxis.axis_label = ylab
        f.title.text_font_size = "15px"
        for ax in (f.xaxis, f.yaxis):
            ax.axis_label_text_font_size = "14px"
            ax.major_label_text_font_size = "13px"
    return g, c, band, spans


def _zoom_figure(data: dict, srcs: dict):
    """The chosen piece on linear axes (its x range set by the callback): Proposition 1's gap,
    linear in λ, from g_j at λ_j up to at most ε at λ_{j+1}."""
    from bokeh.models import BoxAnnotation, Range1d, Span
    from bokeh.plotting import figure
    eps, kappa, p, gr = data["eps"], data["kappa"], data["path"], data["grid"]
    z = figure(x_range=Range1d(1.0, 0.0, name="path_zoom_x"), y_range=Range1d(0.0, eps * 1.15),
               sizing_mode="stretch_width", height=250, min_width=300, tools="", toolbar_location=None,
               title="Zoom on the chosen piece: linear in λ", name="path_zoom_fig")
    band = BoxAnnotation(left=None, right=None, fill_color=PICK_COLOR, fill_alpha=0.10, name="path_band_zoom")
    z.add_layout(band)
    z.line("x", "y", source=srcs["bands"], color="#6baed6", line_width=2)
    z.scatter(p["lam"], p["gap"], color=PATH_COLOR, size=7)
    z.scatter(gr["lam"], gr["gap"], color=GRID_COLOR, marker="square", size=9)
    z.line("x", "y", source=srcs["piece"], color=PICK_COLOR, line_width=3.5)
    z.scatter("x", "y", source=srcs["pick"], color=PICK_COLOR, size=13, marker="diamond")
    z.add_layout(Span(location=eps, dimension="width", line_color="#d62728", line_width=2))
    z.add_layout(Span(location=kappa * eps, dimension="width", line_color="#d62728", line_width=1.5,
                      line_dash="dashed"))
    z.xaxis.axis_label = "λ (linear, decreasing →)"
    z.yaxis.axis_label = "duality gap"
    z.title.text_font_size = "15px"
    for ax in (z.xaxis, z.yaxis):
        ax.axis_label_text_font_size = "14px"
        ax.major_label_text_font_size = "13px"
    z.xaxis.ticker.desired_num_ticks = 4
    return z, band


#: BokehJS: the piece of the path that holds λ = 10^(−slider.value), its band, the certified gap
#: there (Proposition 1) and the cost of the path and of the grid down to λ
_UPDATE_JS = """
const P = path.data, G = grid.data;
const lam = Math.pow(10, -slider.value);
let j = 0;
while (j + 1 < P.lam.length && P.lam[j + 1] >= lam) { j++; }
const lj = P.lam[j], nj = P.next_lam[j];
const lo_band = (nj === null || isNaN(nj)) ? lj : (nj > 0 ? nj : lo);
const bound = P.gap[j] + (1 - lam / lj) * P.delta[j];
band.left = Math.max(lo_band, lo);  band.right = lj;
band_zoom.left = band.left;  band_zoom.right = lj;
const pad = 0.12 * (lj - band.left);
zoom_x.start = lj + pad;  zoom_x.end = Math.max(band.left - pad, 0);
for (const s of spans) { s.location = lam; }
piece.data = {x: [lj, Math.max(lo_band, lo)], y: [P.gap[j], P.gap[j] + (1 - Math.max(lo_band, lo) / lj) * P.delta[j]]};
pick.data = {x: [lam], y: [bound], j: [j]};
let cp = P.cum_passes[j];
let gk = -1;
for (let i = 0; i < G.lam.length; i++) { if (G.lam[i] >= lam * (1 - 1e-12)) { gk = i; } }
const gp = gk >= 0 ? G.cum_passes[gk] : 0;
cost.data = {x: [lj, gk >= 0 ? G.lam[gk] : lam], y: [cp, gp]};
const f = (v, d) => Number(v).toPrecision(d);
const end = (nj === null || isNaN(nj)) ? "?" : (nj > 0 ? f(nj, 4) : "0");
text.text = "<b>λ = " + f(lam, 4) + "</b>: piece j = " + j + ", [λ<sub>j+1</sub>, λ<sub>j</sub>] = [" + end + ", " + f(lj, 4) +
  "], w(λ) = w<sub>" + j + "</sub>. Certified gap g<sub>j</sub> + (1 − λ/λ<sub>j</sub>)Δ<sub>j</sub> = " + f(P.gap[j], 3) +
  " + " + f(1 - lam / lj, 3) + " × " + f(P.delta[j], 3) + " = <b>" + f(bound, 4) + "</b> ≤ ε = " + eps +
  ".<br><span style='color:#555'>Passes so far: path " + f(cp, 4) + " (" + (j + 1) + " breakpoints), grid " +
  f(gp, 4) + " (" + (gk + 1) + " grid λ, " + (gk >= 0 ? "last 2^" + Math.round(Math.log2(G.lam[gk])) : "none") +
  "; the grid certifies only its own λ).</span>";
"""


#: a row that wraps its figures under each other when the page is narrower than their minimum widths
_WRAP_CSS = ":host { flex-wrap: wrap !important; min-width: 0 !important; }"

#: the key of both figures (HTML; it wraps on a phone where a legend inside a plot would cover it)
_KEY_HTML = ("<span style='font-size:14px;line-height:1.6'>"
             f"<span style='white-space:nowrap;margin-right:0.8em'><b style='color:{PATH_COLOR}'>●</b>&nbsp;g<sub>j</sub> at breakpoint λ<sub>j</sub></span> "
             "<span style='white-space:nowrap;margin-right:0.8em'><b style='color:#6baed6'>╱</b>&nbsp;its band: the certified gap on [λ<sub>j+1</sub>, λ<sub>j</sub>]</span> "
             "<span style='white-space:nowrap;margin-right:0.8em'><b style='color:#d62728'>━</b>&nbsp;ε, <b style='color:#d62728'>- -</b>&nbsp;κε</span> "
             f"<span style='white-space:nowrap;margin-right:0.8em'><b style='color:{GRID_COLOR}'>■</b>&nbsp;grid 2<sup>k</sup> (warm start): exact gap, passes</span> "
             f"<span style='white-space:nowrap;margin-right:0.8em'><b style='color:{PATH_COLOR}'>━</b>&nbsp;ε-path's passes</span> "
             f"<span style='white-space:nowrap;margin-right:0.8em'><b style='color:{PICK_COLOR}'>◆</b>&nbsp;the chosen λ</span></span>")


def _intro_html(data: dict) -> str:
    p, gr = data["path"], data["grid"]
    nb = len(p["lam"])
    return (f"<b>{esc(data['dataset'])}</b> (n = {data['n']}), ε = {data['eps']:g}, κ = {data['kappa']:g}, "
            f"BCFW with gap sampling (seed {data['seed']}): {nb} breakpoints from λ<sub>∞</sub> = "
            f"{p['lam'][0]:.4g} to {p['lam'][-1]:.4g} ({esc(end_words(data['end']))}), "
            f"{p['cum_passes'][-1]:.0f} effective passes; the warm-started grid: {len(gr['lam'])} λ, "
            f"{gr['cum_passes'][-1]:.0f} passes. Drag λ (it decreases to the right, like the plots).")


def build_figure(data: dict):
    """The standalone explorable figure of :func:`build_data`: a λ slider (log scale, decreasing
    to the right) with play/pause, the gap figure with every breakpoint's certified band and the
    chosen one highlighted, the cost figure (path against grid) and a readout.

    Paper: Sec. 4 (Proposition 1), Alg. 7, App. K. Every control is wired with CustomJS.

    Parameters
    ----------
    data : dict
        From :func:`build_data`.

    Returns
    -------
    bokeh.models.LayoutDOM
        A column, ``sizing_mode="stretch_width"``; named models: the slider ``path_lam``
        (value −log10 λ), ``path_play``, the sources ``path_pick`` (x: [λ], y: [the certified
        gap at λ], j: [the piece]), ``path_piece``, ``path_cost`` (x: [λ_j, the grid's last
        λ >= λ], y: [the path's, the grid's cumulative passes]), the band ``path_band`` and the
        readout ``path_text``.

    Raises
    ------
    KeyError
        ``data`` lacks a field of :func:`build_data`.
    """
    from bokeh.layouts import column, row
    from bokeh.models import ColumnDataSource, CustomJS, CustomJSTickFormatter, Div, Slider
    lo, hi = _lam_range(data)
    srcs = {"pick": ColumnDataSource(dict(x=[], y=[], j=[]), name="path_pick"),
            "piece": ColumnDataSource(dict(x=[], y=[]), name="path_piece"),
            "cost": ColumnDataSource(dict(x=[], y=[]), name="path_cost")}
    srcs["bands"] = ColumnDataSource(_bands(data, lo))
    g, c, band, spans = _figures(data, lo, hi, srcs)
    z, band_zoom = _zoom_figure(data, srcs)
    p = data["path"]
    path_src = ColumnDataSource({k: [math.nan if v is None else v for v in p[k]]
                                 for k in ("lam", "next_lam", "gap", "delta", "cum_passes")})
    grid_src = ColumnDataSource({k: data["grid"][k] for k in ("lam", "cum_passes")})
    # the slider's ends rounded inwards: every λ it offers is on the path (λ_{end} <= λ <= λ_∞)
    a, b = math.ceil(-math.log10(hi) * 1000) / 1000, math.floor(-math.log10(lo) * 1000) / 1000
    slider = Slider(start=a, end=b, value=round(-math.log10(1.0), 3) if lo < 1.0 < hi else a, step=0.01,
                    title="λ", name="path_lam", sizing_mode="stretch_width", min_width=150,
                    format=CustomJSTickFormatter(code="return Number(Math.pow(10, -tick).toPrecision(3)).toString();"))
    text = Div(text="", name="path_text", sizing_mode="stretch_width", styles={"font-size": "15px"})
    intro = Div(text=_intro_html(data), sizing_mode="stretch_width", styles={"font-size": "14px", "color": "#444"})
    key = Div(text=_KEY_HTML, sizing_mode="stretch_width")
    js = CustomJS(args=dict(path=path_src, grid=grid_src, slider=slider, band=band, spans=spans, text=text,
                            band_zoom=band_zoom, zoom_x=z.x_range,
                            lo=lo, eps=data["eps"], **srcs), code=_UPDATE_JS)
    slider.js_on_change("value", js)
    play = play_toggle(slider, "path_play", interval_ms=150, stride=0.05, wrap=True)
    st = state_at(data, 10.0 ** -slider.value, lo)
    srcs["pick"].data, srcs["piece"].data, srcs["cost"].data = st["pick"], st["piece"], st["cost"]
    band.left, band.right = st["band"]
    band_zoom.left, band_zoom.right = st["band"]
    z.x_range.start, z.x_range.end = st["zoom"]
    for sp in spans:
        sp.location = st["pick"]["x"][0]
    text.text = st["html"]
    pair = row(z, c, sizing_mode="stretch_width", stylesheets=[_WRAP_CSS])
    return column(intro, row(play, slider, sizing_mode="stretch_width"), text, key, g, pair, sizing_mode="stretch_width",
                  name="path_layout", max_width=1000)


def _p(v: float, d: int) -> str:
    """JavaScript's ``Number(v).toPrecision(d)`` (what the page's readout writes)."""
    if v == 0:
        return "0." + "0" * (d - 1) if d > 1 else "0"
    r = float(f"{v:.{d - 1}e}")
    e = math.floor(math.log10(abs(r)))
    if e < -6 or e >= d:
        m, ex = f"{r:.{d - 1}e}".split("e")
        return f"{m}e{'+' if int(ex) >= 0 else '-'}{abs(int(ex))}"
    return f"{r:.{max(d - 1 - e, 0)}f}"


def state_at(data: dict, lam: float, lo: float) -> dict:
    """What the page draws at λ (as :data:`_UPDATE_JS` does; the first state is drawn from here):
    the piece j with λ_{j+1} <= λ <= λ_j, its band, the certified gap g_j + (1 − λ/λ_j)Δ_j at λ
    (Paper: Proposition 1), the cumulative passes of the path and of the grid down to λ, and the
    readout's HTML. ``lo``: where the band of a piece that covers every smaller λ is drawn to."""
    P, G = data["path"], data["grid"]
    j = 0
    while j + 1 < len(P["lam"]) and P["lam"][j + 1] >= lam:
        j += 1
    lj, nj, gj, dj = P["lam"][j], P["next_lam"][j], P["gap"][j], P["delta"][j]
    lo_band = lj if nj is None or math.isnan(nj) else (nj if nj > 0 else lo)
    left = max(lo_band, lo)
    bound = gj + (1 - lam / lj) * dj
    gk = max([i for i, x in enumerate(G["lam"]) if x >= lam * (1 - 1e-12)], default=-1)
    cp, gp = P["cum_passes"][j], (G["cum_passes"][gk] if gk >= 0 else 0)
    end = "?" if nj is None or math.isnan(nj) else (_p(nj, 4) if nj > 0 else "0")
    last = f"last 2^{round(math.log2(G['lam'][gk]))}" if gk >= 0 else "none"
    eps = data["eps"]
    html = (f"<b>λ = {_p(lam, 4)}</b>: piece j = {j}, [λ<sub>j+1</sub>, λ<sub>j</sub>] = [{end}, {_p(lj, 4)}], "
            f"w(λ) = w<sub>{j}</sub>. Certified gap g<sub>j</sub> + (1 − λ/λ<sub>j</sub>)Δ<sub>j</sub> = {_p(gj, 3)}"
            f" + {_p(1 - lam / lj, 3)} × {_p(dj, 3)} = <b>{_p(bound, 4)}</b> ≤ ε = {_js_num(eps)}."
            f"<br><span style='color:#555'>Passes so far: path {_p(cp, 4)} ({j + 1} breakpoints), grid {_p(gp, 4)} "
            f"({gk + 1} grid λ, {last}; the grid certifies only its own λ).</span>")
    pad = 0.12 * (lj - left)
    return {"j": j, "bound": bound, "band": (left, lj), "zoom": (lj + pad, max(left - pad, 0.0)), "pick": dict(x=[lam], y=[bound], j=[j]),
            "piece": dict(x=[lj, left], y=[gj, gj + (1 - left / lj) * dj]),
            "cost": dict(x=[lj, G["lam"][gk] if gk >= 0 else lam], y=[cp, gp]), "html": html}


def _js_num(v: float) -> str:
    """How JavaScript writes a number into a string (integers without ".0")."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))
