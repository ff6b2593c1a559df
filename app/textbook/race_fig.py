"""App. C's toy as an explorable figure: uniform against gap sampling on the same problem, side by
side on one clock of oracle calls (the app's Race tab, :class:`gaplab.app.race.Race`, recorded
one oracle call per tick), with each side's visits per block and exact duality gap; a scrubber
over the oracle calls, play/pause and a switch of the toy's size n.

Paper: App. C (gap sampling needs about n + t oracle calls where uniform sampling needs n·t),
Sec. 3.1 (gap sampling, Alg. 2).
"""
from __future__ import annotations

import json
import math

import numpy as np

__all__ = ["LESSON", "SETTINGS", "build_data", "build_figure", "visits_at"]

#: the lesson page of App. C's toy (app/lessons.py, from 1)
LESSON = 7
#: the races recorded: the toy's sizes n (the switch), its K, ε, the gap-check period and budget
SETTINGS = {"ns": (10, 20, 40), "K": 50, "eps": 1e-4, "gap_check": 10, "max_passes": 200}
SIDES = ("uniform", "gap")
COLORS = {"uniform": "#7570b3", "gap": "#d95f02"}
_SIG = 6   # significant digits kept of a duality gap (drawn on a log axis)


def _round(x: float) -> float:
    return float(f"{float(x):.{_SIG}g}")


def _race_trace(n: int, seed: int) -> dict:
    """One race on the toy of size ``n``, ticked one oracle call at a time until both sides
    stopped (at ε or the budget): per tick each side's counted oracle calls and exact duality
    gap, and each block step as (tick, block)."""
    from gaplab.app.race import Race
    s = SETTINGS
    race = Race("toy", n=n, K=s["K"], seed=seed, gap_check=s["gap_check"], eps=s["eps"],
                max_passes=s["max_passes"], passes_per_tick=1.0)
    out = {side: {"calls": [int(race.oracle_calls[side])], "gap": [_round(race.gaps()[side])],
                  "vt": [], "vb": []} for side in SIDES}
    prev = {side: race.visits[side].copy() for side in SIDES}
    tick = 0
    while not race.over:
        race.tick(1)
        tick += 1
        for side in SIDES:
            rec = out[side]
            rec["calls"].append(int(race.oracle_calls[side]))
            rec["gap"].append(_round(race.gaps()[side]))
            grew = race.visits[side] - prev[side]
            for block in np.flatnonzero(grew):
                rec["vt"] += [tick] * int(grew[block])
                rec["vb"] += [int(block)] * int(grew[block])
            prev[side] = race.visits[side].copy()
    for side in SIDES:
        out[side]["reached"] = race.reached[side]
        assert np.array_equal(visits_at(out[side], tick, n), race.visits[side])
    return {"n": n, "K": s["K"], "eps": s["eps"], "gap_check": s["gap_check"], "ticks": tick, "sides": out}


def visits_at(side_trace: dict, tick: int, n: int) -> np.ndarray:
    """The visits per block of one side after ``tick`` ticks (from its recorded block steps)."""
    v = np.zeros(n, dtype=np.int64)
    vt, vb = np.asarray(side_trace["vt"], dtype=np.int64), np.asarray(side_trace["vb"], dtype=np.int64)
    np.add.at(v, vb[vt <= tick], 1)
    return v


def build_data(seed: int = 0) -> dict:
    """The recorded races, one per toy size of :data:`SETTINGS` (JSON-able).

    Parameters
    ----------
    seed : int
        Seed of both solvers of every race (>= 0).

    Returns
    -------
    dict
        ``{"seed", "variants": [{"n", "K", "eps", "ticks", "sides": {side: {"calls", "gap",
        "vt", "vb", "reached"}}}]}``: per tick t (0 .. ticks) the side's counted oracle calls and
        exact duality gap; ``vt``/``vb`` the tick and block of each block step; ``reached`` the
        oracle calls at which the side's gap first was <= ε (None: not reached).
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    return {"seed": seed, "variants": [_race_trace(n, seed) for n in SETTINGS["ns"]]}


_UPDATE = r"""
const D = (window.__gaplab_race_data ||= JSON.parse(raw));
const V = D.variants[sw.active];
if (slider.end !== V.ticks) {
  slider.end = V.ticks;
  if (slider.value > V.ticks) { slider.value = V.ticks; return; }   // that change redraws
}
const t = Math.max(0, Math.min(V.ticks, Math.round(slider.value)));
const n = V.n, cols = Math.ceil(Math.sqrt(n)), rows = Math.ceil(n / cols);
const visits = {};
for (const side of ["uniform", "gap"]) {
  const S = V.sides[side], v = new Array(n).fill(0);
  for (let j = 0; j < S.vt.length && S.vt[j] <= t; j++) v[S.vb[j]] += 1;
  visits[side] = v;
}
const hi = Math.max(1, ...visits.uniform, ...visits.gap);
let lo = Infinity, top = 0, xmax = 1;
for (const side of ["uniform", "gap"]) {
  const S = V.sides[side];
  for (const g of S.gap) { if (g > 0) { lo = Math.min(lo, g); top = Math.max(top, g); } }
  xmax = Math.max(xmax, S.calls[S.calls.length - 1] / n);
}
const floor = isFinite(lo) ? Math.max(1e-12, 0.1 * Math.min(lo, V.eps)) : 0.1 * V.eps;
const readout = [];
for (const side of ["uniform", "gap"]) {
  const S = V.sides[side], v = visits[side];
  heat[side].data = {x: v.map((_, i) => i % cols), y: v.map((_, i) => Math.floor(i / cols)), visits: v,
                     block: v.map((_, i) => i), label: n <= 64 ? v.map(String) : v.map(() => ""),
                     tcolor: v.map((x) => x > 0.6 * hi ? "white" : "#222")};
  mappers[side].high = hi;
  const calls = S.calls.slice(0, t + 1);
  curve[side].data = {x: calls.map((c) => c / n), y: S.gap.slice(0, t + 1).map((g) => Math.max(g, floor))};
  const frozen = S.reached !== null && S.calls[t] >= S.reached;
  const name = side === "gap" ? "gap sampling" : "uniform";
  figs[side].title.text = `${name}: visits\n` +
      (frozen ? `frozen at ε, ${grp(S.reached)} calls` : `${grp(S.calls[t])} oracle calls`);
  readout.push(`<b style="color:${side === "gap" ? "#d95f02" : "#7570b3"}">${esc(name)}</b>: ` +
      `${grp(S.calls[t])} oracle calls (${fmt(S.calls[t] / n, 3)} passes), duality gap <b>${fmt(S.gap[t], 3)}</b>` +
      (frozen ? `, reached ε = ${fmt(V.eps, 2)} and stopped` : "") +
      `, hard block visited <b>${grp(v[0])}</b> times`);
  xr[side].start = -0.5; xr[side].end = cols - 0.5;
  yr[side].start = rows - 0.5; yr[side].end = -0.5;
}
const ru = V.sides.uniform.reached, rg = V.sides.gap.reached;
let tail = "";
if (ru !== null && rg !== null && V.sides.uniform.calls[t] >= ru && V.sides.gap.calls[t] >= rg)
  tail = `<br>Both reached ε: gap sampling needed <b>×${fmt(ru / rg, 3)}</b> fewer oracle calls ` +
         `(App. C predicts about min(n, t) = ${grp(Math.min(n, Math.min(V.K, Math.round(1 / (2 * n * V.eps)))))}).`;
info.text = `<div style="font-size:15px;line-height:1.45">Toy with n = ${grp(n)} objects (block 0, top left, is the hard one; ` +
            `K = ${grp(V.K)} wrong labels), after <b>${grp(t)}</b> oracle calls on the race's clock:<br>` +
            readout.join("<br>") + tail + `<br><span style="font-size:13px;color:#57606a">An exact gap pass ` +
            `(every ${grp(V.gap_check)} passes) counts ${grp(n)} oracle calls at once: a side may be a few calls ` +
            `past the clock.</span></div>`;
eps.data = {x: [0, xmax * 1.02], y: [V.eps, V.eps]};
cursor.location = t / n;
cxr.start = 0; cxr.end = xmax * 1.02;
cyr.start = floor * 0.5; cyr.end = Math.max(top, V.eps) * 2;
"""


def _heat(side: str):
    from bokeh.models import ColumnDataSource, LinearColorMapper, Range1d
    from bokeh.palettes import Viridis256
    from bokeh.plotting import figure
    src = ColumnDataSource(dict(x=[], y=[], visits=[], block=[], label=[], tcolor=[]), name=f"race_heat_{side}")
    mapper = LinearColorMapper(palette=Viridis256[::-1], low=0, high=1)
    f = figure(height=230, sizing_mode="stretch_width", min_width=160, tools="hover", toolbar_location=None,
               tooltips=[("block", "@block"), ("visits", "@visits")], title=f"{side}: visits\n ",
               x_range=Range1d(-0.5, 4.5), y_range=Range1d(4.5, -0.5), name=f"race_heatfig_{side}")
    f.rect("x", "y", 0.95, 0.95, source=src, fill_color={"field": "visits", "transform": mapper}, line_color=None)
    f.text("x", "y", text="label", source=src, text_align="center", text_baseline="middle",
           text_font_size="11px", color="tcolor")
    f.axis.visible = False
    f.grid.visible = False
    f.title.text_font_size = "14px"
    f.title.text_color = COLORS[side]
    return f, src, mapper


def _curves():
    from bokeh.models import ColumnDataSource, Range1d, Span
    from bokeh.plotting import figure
    c = figure(height=260, sizing_mode="stretch_width", min_width=200, y_axis_type="log", tools="",
               toolbar_location=None, x_range=Range1d(0, 1), y_range=Range1d(1e-6, 1),
               title="Exact duality gap (0 drawn at the bottom)", x_axis_label="effective passes (oracle calls / n)",
               y_axis_label="duality gap", name="race_curves")
    srcs = {}
    for side in SIDES:
        srcs[side] = ColumnDataSource(dict(x=[], y=[]), name=f"race_curve_{side}")
        c.line("x", "y", source=srcs[side], color=COLORS[side], line_width=3,
               legend_label="gap sampling" if side == "gap" else "uniform sampling")
    eps = ColumnDataSource(dict(x=[], y=[]))
    c.line("x", "y", source=eps, color="#999", line_dash="dotted", line_width=2, legend_label="ε")
    leg = c.legend[0]   # in one row above the plot, never over the curves
    leg.orientation, leg.label_text_font_size, leg.spacing, leg.padding, leg.margin = "horizontal", "12px", 8, 0, 0
    leg.border_line_alpha = 0.0
    c.center.remove(leg)
    c.add_layout(leg, "above")
    cursor = Span(location=0, dimension="height", line_color="#444", line_dash="dashed", line_width=1)
    c.add_layout(cursor)
    c.title.text_font_size = "14px"
    return c, srcs, eps, cursor


def build_figure(data: dict):
    """The race as a standalone Bokeh layout: the size switch, play/pause and the oracle-call
    scrubber, a readout, the two visit maps and the two duality-gap curves (CustomJS only)."""
    from bokeh.layouts import column, row
    from bokeh.models import CustomJS, Div

    from .player import JS_HELPERS, controls_row, on_ready, play_toggle, scrubber, variant_switch
    variants = data["variants"]
    sw = variant_switch([f"n = {v['n']}" for v in variants], "race_switch", active=min(1, len(variants) - 1))
    first = variants[sw.active]
    slider = scrubber("race_scrubber", "oracle calls, the same on both sides", first["ticks"], value=0)
    play = play_toggle(slider, "race_play", frames=200, interval_ms=60)
    info = Div(text="", sizing_mode="stretch_width", name="race_readout", margin=(4, 10, 4, 10))
    heats = {side: _heat(side) for side in SIDES}
    c, csrc, eps, cursor = _curves()
    args = dict(raw=json.dumps(data, separators=(",", ":")), sw=sw, slider=slider, info=info,
                heat={s: heats[s][1] for s in SIDES}, mappers={s: heats[s][2] for s in SIDES},
                figs={s: heats[s][0] for s in SIDES}, xr={s: heats[s][0].x_range for s in SIDES},
                yr={s: heats[s][0].y_range for s in SIDES}, curve=csrc, eps=eps, cursor=cursor,
                cxr=c.x_range, cyr=c.y_range)
    update = CustomJS(args=args, code=JS_HELPERS + _UPDATE)
    slider.js_on_change("value", update)
    sw.js_on_change("active", update)
    layout = column(controls_row(sw, play), slider, info,
                    row(heats["uniform"][0], heats["gap"][0], sizing_mode="stretch_width"), c,
                    sizing_mode="stretch_width", name="race_figure")
    return on_ready(layout, update)

