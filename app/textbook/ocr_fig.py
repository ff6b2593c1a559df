"""OCR-small step by step as an explorable figure (lesson 4, gap sampling and staleness): the first
two passes and a stretch around the first exact gap pass, each block step with the block drawn,
its word and FW corner, the per-block gap estimates ĝᵢ coloured by staleness, the sampling
probabilities of the next draw and the app's own narration of the step; a switch between uniform
and gap sampling (precomputed runs).

The runs are made by the app's :class:`~gaplab.app.session.Session` one Step at a time, and the
sentence of each step is :func:`gaplab.app.views.narration.step_sentence` of its snapshot: the
page's step k shows what the app shows at the same settings with ``?steps=k`` (the recorded
``query`` plus ``&steps=k``). The estimates are stored as changes per step (a step changes its
own block's, an exact gap pass every block's) and the probabilities are computed from them in the
browser as the solver computes them (:meth:`gaplab.core.solver.Solver.sampling_probabilities`).
Sentences are stored as templates with their numbers cut out (a few dozen templates for
thousands of steps).

Paper: Sec. 3.1 (gap sampling, Alg. 2), Fig. 1 (staleness).
"""
from __future__ import annotations

import json
import math
import re

import numpy as np

__all__ = ["LESSON", "SETTINGS", "TITLE", "CAPTION", "build_data", "build_figure", "sentence_at",
           "state_at", "probabilities", "split_sentence"]

LESSON = 4
#: the recorded runs: the app's settings besides the sampler, the samplers (the switch), the
#: first stretch (its passes) and the second (block steps before and after the first exact gap pass)
SETTINGS = {"dataset": "ocr-small", "step_kind": "fw", "cache": False, "samplers": ("gap", "uniform"),
            "passes": 2, "around_gap_pass": (60, 140)}
TITLE = "OCR-small, one block step at a time"
CAPTION = ("Each step is a real step of gaplab's solver (seed 0) as the app takes it; the sentence is "
           "the app's. Bars: the stored estimates ĝᵢ (bins of 5 blocks: the largest ĝᵢ, the mean "
           "staleness), coloured by how many iterations ago each was computed; a block never visited "
           "has ĝᵢ = +∞ and no bar. The red band marks the block of the step.")
_SIG = 6
_NUM = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")
_HOLE = "§"


def _round(x) -> float | None:
    x = float(x)
    return float(f"{x:.{_SIG}g}") if math.isfinite(x) else None


def split_sentence(sentence: str) -> tuple[str, str]:
    """(template, numbers): the sentence with every number replaced by ``§`` and the numbers
    joined by ``|``. Raises ValueError if the sentence holds ``§`` or ``|`` itself."""
    if _HOLE in sentence:
        raise ValueError(f"a narrated sentence holds the template mark {_HOLE!r}: {sentence[:80]!r}")
    nums = _NUM.findall(sentence)
    if any("|" in x for x in nums):
        raise ValueError("a number holds '|'")
    return _NUM.sub(_HOLE, sentence), "|".join(nums)


def sentence_at(data: dict, template: int, numbers: str) -> str:
    """The sentence of a template and its numbers (the inverse of :func:`split_sentence`)."""
    parts = data["templates"][template].split(_HOLE)
    nums = numbers.split("|") if numbers else []
    return "".join(p + (nums[j] if j < len(nums) else "") for j, p in enumerate(parts))


def _state(snap) -> tuple[np.ndarray, np.ndarray]:
    g = np.asarray(snap.gap_estimates, dtype=np.float64)
    st = np.asarray(snap.staleness, dtype=np.int64)
    return g, np.where(st >= 0, snap.iteration - st, -1)


def _strip(image) -> str | None:
    """The block's letter images side by side as one PNG data URI (the app's encoding,
    :func:`gaplab.app.views.figures._png`; each letter is cut from it by the page), None without."""
    if image is None:
        return None
    from gaplab.app.views.figures import _png
    im = np.asarray(image, dtype=np.uint8)
    return _png(np.concatenate(list(im), axis=1))


def _word(labels) -> str:
    return "".join(str(x) for x in labels)


def _record_steps(s, first: int, last: int, templates: dict, truth: dict, images: dict) -> dict:
    """Block steps first+1 .. last of session ``s`` (at iteration ``first``), one Step each."""
    from gaplab.app.views.narration import step_sentence
    g0, it0 = _state(s.snapshot)
    out = {"first": first, "last": last, "init_g": [_round(x) for x in g0], "init_it": it0.tolist(),
           "block": [], "gamma": [], "gap_before": [], "gap_after": [], "prob": [], "fw": [], "tpl": [],
           "nums": [], "chg": [], "chg_g": [], "chg_it": []}
    prev_g, prev_it = g0, it0
    for _ in range(first, last):
        snap = s.step()
        st = snap.last_step
        if int(st.block) not in truth:
            truth[int(st.block)] = _word(st.truth)
            images[int(st.block)] = _strip(st.image)
        g, it = _state(snap)
        changed = np.flatnonzero((it != prev_it) | ~((g == prev_g) | (np.isnan(g) & np.isnan(prev_g))))
        tpl, nums = split_sentence(step_sentence(snap, st))
        for key, v in (("block", int(st.block)), ("gamma", _round(st.gamma)), ("gap_before", _round(st.gap_before)),
                       ("gap_after", _round(st.gap_after)), ("prob", _round(st.probability)),
                       ("fw", _word(st.fw_corner)), ("tpl", templates.setdefault(tpl, len(templates))),
                       ("nums", nums), ("chg", changed.tolist()), ("chg_g", [_round(x) for x in g[changed]]),
                       ("chg_it", it[changed].tolist())):
            out[key].append(v)
        prev_g, prev_it = g, it
    assert s.snapshot.iteration == last
    return out


def _record_run(sampling: str, seed: int, templates: dict, truth: dict, images: dict) -> dict:
    from gaplab.app import urlstate
    from gaplab.app.session import Session
    cfg = SETTINGS
    s = Session(dataset=cfg["dataset"], sampling=sampling, step_kind=cfg["step_kind"], cache=cfg["cache"], seed=seed)
    try:
        if not s.wait_idle(600) or s.status != "idle":
            raise RuntimeError(f"the {cfg['dataset']} session did not load: {s.messages()}")
        n = s.snapshot.n
        query = urlstate.query_of(s)
        query.pop("steps", None)
        stretches = [_record_steps(s, 0, cfg["passes"] * n, templates, truth, images)]
        gap_pass = next(r["iteration"] for r in _first_gap_check(s))
        before, after = cfg["around_gap_pass"]
        s.replay(gap_pass - before)
        s.wait_idle(600)
        stretches.append(_record_steps(s, gap_pass - before, gap_pass + after, templates, truth, images))
        return {"sampling": sampling, "query": urlstate.query_string(query), "n": n,
                "gap_pass": gap_pass, "stretches": stretches}
    finally:
        s.close()


def _first_gap_check(s, max_passes: int = 100):
    """The first exact gap check of the session's settings: found on a copy of its solver, run
    to it (the session is left where it is). RuntimeError when none comes within ``max_passes``."""
    solver = s.solver.copy()
    for _ in range(max_passes):
        solver.steps(solver.n)
        checks = [r for r in solver.trace() if r["kind"] == "gap_check"]
        if checks:
            return checks
    raise RuntimeError(f"no exact gap check within {max_passes} passes (gap_check = {s.gap_check})")


def build_data(seed: int = 0) -> dict:
    """The recorded runs, one per sampler of :data:`SETTINGS` (JSON-able; made in about 15 s).

    Parameters
    ----------
    seed : int
        The session's seed (>= 0).

    Returns
    -------
    dict
        ``{"seed", "templates": [str], "truth": {block: word}, "images": {block: PNG data URI of
        its letter images side by side}, "variants": [{"sampling", "query",
        "n", "gap_pass", "stretches": [{"first", "last", "init_g", "init_it", per step:
        "block", "gamma", "gap_before", "gap_after", "prob", "fw", "tpl", "nums", "chg",
        "chg_g", "chg_it"}]}]}``. ``init_g``/``init_it``: the estimates ĝᵢ (None: +∞) and the
        iterations kᵢ they were computed at (-1: never) at iteration ``first``; a step's ``chg``
        are the blocks whose ĝᵢ or kᵢ it changed, to ``chg_g``/``chg_it``; ``tpl``/``nums``: its
        sentence (:func:`sentence_at`). Numbers keep 6 significant digits.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    templates, truth, images = {}, {}, {}
    variants = [_record_run(samp, seed, templates, truth, images) for samp in SETTINGS["samplers"]]
    return {"seed": seed, "templates": list(templates), "truth": {str(k): v for k, v in sorted(truth.items())},
            "images": {str(k): v for k, v in sorted(images.items())}, "variants": variants}


def state_at(variant: dict, stretch: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(ĝ, kᵢ) after block step ``k`` of a recorded stretch, from its changes (ĝ +∞: never
    computed; kᵢ -1). The figure's callback does the same in the browser."""
    S = variant["stretches"][stretch]
    if not S["first"] < k <= S["last"]:
        raise ValueError(f"k must be in ({S['first']}, {S['last']}], got {k!r}")
    g = np.array([np.inf if x is None else x for x in S["init_g"]], dtype=np.float64)
    it = np.array(S["init_it"], dtype=np.int64)
    for j in range(k - S["first"]):
        idx = np.asarray(S["chg"][j], dtype=np.int64)
        g[idx] = [np.inf if x is None else x for x in S["chg_g"][j]]
        it[idx] = S["chg_it"][j]
    return g, it


def probabilities(sampling: str, g) -> np.ndarray:
    """The probabilities of the next draw given the estimates ĝ (+∞: never computed), as
    :meth:`gaplab.core.solver.Solver.sampling_probabilities` computes them for uniform and gap
    sampling with p = 1 (Paper: Alg. 2); the figure's callback does the same in the browser."""
    g = np.asarray(g, dtype=np.float64)
    n = g.size
    if sampling == "uniform":
        return np.full(n, 1.0 / n)
    if sampling != "gap":
        raise ValueError(f"sampling must be 'uniform' or 'gap', got {sampling!r}")
    unvisited = np.isposinf(g)
    if unvisited.any():
        return np.where(unvisited, 1.0 / unvisited.sum(), 0.0)
    w = np.maximum(np.nan_to_num(g, nan=0.0), 0.0)
    tot = w.sum()
    return w / tot if tot > 0 else np.full(n, 1.0 / n)


#: the word rows: the input's letter images over the ground truth's and the FW corner's letters,
#: one column per position (narrower on a phone)
_WORD_CSS = (".W{display:grid;grid-template-columns:max-content 1fr;gap:2px 8px;align-items:center;margin:4px 0}"
             ".L,.I{display:inline-block;box-sizing:border-box;width:24px;margin:1px;border:1px solid #ccc;"
             "border-radius:3px;vertical-align:middle}"
             ".L{text-align:center;font:600 17px/1.5 ui-monospace,monospace;background:#f6f8fa}"
             ".L.x{color:#fff;background:#d7191c;border-color:#d7191c}"
             ".I{height:46px;image-rendering:pixelated;background-repeat:no-repeat;border-color:#ddd}"
             "@media (max-width:480px){.L,.I{width:19px}.L{font-size:14px}.I{height:36px}}")

_UPDATE = r"""
const D = (window.__gaplab_ocr_data ||= JSON.parse(raw));
const V = D.variants[sw.active], S = V.stretches[part.active];
if (slider.start !== S.first + 1 || slider.end !== S.last) {
  const v = Math.min(Math.max(slider.value, S.first + 1), S.last);
  slider.start = S.first + 1; slider.end = S.last;
  if (slider.value !== v) { slider.value = v; return; }      // that change redraws
}
const k = Math.round(slider.value), j = k - S.first - 1, n = V.n;
const num = (x) => (x === null ? Infinity : x);
const g = S.init_g.map(num), it = S.init_it.slice();
for (let q = 0; q <= j; q++) {
  const c = S.chg[q];
  for (let m = 0; m < c.length; m++) { g[c[m]] = num(S.chg_g[q][m]); it[c[m]] = S.chg_it[q][m]; }
}
const stale = it.map((x) => (x >= 0 ? k - x : -1));
let unv = 0;
for (const x of g) if (x === Infinity) unv += 1;
let prob;                       // as Solver.sampling_probabilities (p = 1)
if (V.sampling === "uniform") prob = g.map(() => 1 / n);
else if (unv > 0) prob = g.map((x) => (x === Infinity ? 1 / unv : 0));
else {
  const w = g.map((x) => Math.max(isNaN(x) ? 0 : x, 0)), tot = w.reduce((a, b) => a + b, 0);
  prob = w.map((x) => (tot > 0 ? x / tot : 1 / n));
}
state.data = {block: g.map((_, i) => i), g: g, it: it, stale: stale, prob: prob};
// bins of b blocks as the app's Step tab draws them (views/blocks.py: _bins)
const b = Math.max(1, Math.ceil(n / MAX_BARS)), X = [], LO = [], HI = [], GB = [], SB = [], PB = [];
let pmin = Infinity, pmax = -Infinity;
for (const x of g) if (isFinite(x) && x > 0) { pmin = Math.min(pmin, x); pmax = Math.max(pmax, x); }
for (let lo = 0; lo < n; lo += b) {
  const hi = Math.min(lo + b, n) - 1;
  let gm = -Infinity, ss = 0, sc = 0, ps = 0;
  for (let i = lo; i <= hi; i++) {
    if (isFinite(g[i])) gm = Math.max(gm, g[i]);
    if (stale[i] >= 0) { ss += stale[i]; sc += 1; }
    ps += prob[i];
  }
  X.push((lo + hi) / 2); LO.push(lo); HI.push(hi); GB.push(isFinite(gm) ? gm : NaN);
  SB.push(sc > 0 ? ss / sc : NaN); PB.push(ps);
}
const floor = isFinite(pmin) ? Math.max(10 ** Math.floor(Math.log10(pmin)),
                                        10 ** (Math.floor(Math.log10(pmax)) - 5), 1e-12) : 1e-6;
bars.data = {x: X, w: X.map(() => 0.9 * b), top: GB.map((v) => (isFinite(v) ? Math.max(v, floor) : NaN)),
             bottom: X.map(() => floor), stale: SB, gap: GB, lo: LO, hi: HI};
probs.data = {x: X, w: X.map(() => 0.9 * b), top: PB};
let smax = 1;
for (const v of SB) if (isFinite(v)) smax = Math.max(smax, v);
mapper.high = smax;
const blk = S.block[j], first = Math.floor(blk / b) * b;
last.data = {left: [first - 0.5], right: [Math.min(first + b, n) - 0.5]};
const pad = 0.5 * b + 0.5;
xr.start = -pad; xr.end = n - 1 + pad;
let gtop = floor;
for (const v of GB) if (isFinite(v)) gtop = Math.max(gtop, v);
yr.start = floor; yr.end = Math.max(10 ** Math.ceil(Math.log10(gtop)), floor * 100);   // two decades at least: readable ticks
let pm = 0;
for (const v of PB) pm = Math.max(pm, v);
const nice = (v) => { const e = Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * 10 ** e >= v * (1 - 1e-12)) return m * 10 ** e; return 10 ** (e + 1); };
pr.start = 0; pr.end = pm > 0 ? Math.min(nice(pm * 1.05), 1) : 1;
// the step: its word, FW corner and the app's sentence
const truth = D.truth[String(blk)] || "", fw = S.fw[j];
const letters = (w, ref) => [...w].map((ch, i) =>
  `<span class="L${ref !== null && ch !== ref[i] ? " x" : ""}">${esc(ch)}</span>`).join("");
const img = D.images[String(blk)], T = truth.length;
const pics = (img && /^data:image\/png;base64,[A-Za-z0-9+\/=]+$/.test(img)) ? [...truth].map((_, i) =>
  `<span class="I" style="background-image:url(${img});background-size:${T * 100}% 100%;` +
  `background-position:${T > 1 ? (100 * i) / (T - 1) : 0}% 0"></span>`).join("") : "";
const parts = D.templates[S.tpl[j]].split("§"), nums = S.nums[j] ? S.nums[j].split("|") : [];
const sentence = parts.map((p, i) => p + (i < nums.length ? nums[i] : "")).join("");
let heur = 0;
for (const x of g) heur += x;
head.text = `<div style="font-size:15px;line-height:1.5">` +
  `<b>Block step ${grp(k)}</b> (${fmt(k / n, 3)} passes) under <b>${esc(V.sampling)} sampling</b>: block ` +
  `<b>${grp(blk)}</b>, γ = <b>${fmt(S.gamma[j], 2)}</b>, block gap ${fmt(S.gap_before[j], 2)} → ${fmt(S.gap_after[j], 2)}` +
  `<style>${WORD_CSS}</style><div class="W">` +
  (pics ? `<span>input xᵢ</span><span>${pics}</span>` : "") +
  `<span>ground truth</span><span>${letters(truth, null)}</span>` +
  `<span>FW corner y*</span><span>${letters(fw, truth)}</span></div>` +
  `heuristic gap Σᵢ ĝᵢ = ${isFinite(heur) ? fmt(heur, 3) : "+∞"} · ${grp(unv)} block(s) never visited ` +
  `(ĝᵢ = +∞) · exact gap pass at step ${grp(V.gap_pass)}</div>`;
say.text = `<div style="font-size:15px;line-height:1.5">${sentence}</div>` +
  `<div style="font-size:12.5px;color:#57606a;margin-top:4px">The app shows this step at ` +
  `<code>${esc(V.query)}${V.query ? "&amp;" : "?"}steps=${k}</code>.</div>`;
"""


def _bars():
    from bokeh.models import ColorBar, ColumnDataSource, FixedTicker, HoverTool, LinearColorMapper, Range1d
    from bokeh.palettes import Viridis256
    from bokeh.plotting import figure
    bars = ColumnDataSource(dict(x=[], w=[], top=[], bottom=[], stale=[], gap=[], lo=[], hi=[]), name="ocr_bars")
    last = ColumnDataSource(dict(left=[], right=[]), name="ocr_last")
    mapper = LinearColorMapper(palette=list(reversed(Viridis256)), low=0, high=1, nan_color="#cccccc")
    f = figure(height=220, sizing_mode="stretch_width", min_width=200, y_axis_type="log", toolbar_location=None,
               tools="", title="Gap estimates ĝᵢ, coloured by staleness", x_range=Range1d(-1, 1),
               y_range=Range1d(1e-6, 1), y_axis_label="ĝᵢ", name="ocr_gapfig")
    r = f.vbar(x="x", top="top", bottom="bottom", width="w", source=bars,
               fill_color={"field": "stale", "transform": mapper}, line_color=None)
    f.add_tools(HoverTool(renderers=[r], attachment="vertical", tooltips=[
        ("blocks", "@lo–@hi"), ("ĝᵢ (max)", "@gap{0.000e}"), ("staleness", "@stale{0,0} iterations")]))
    f.add_layout(ColorBar(color_mapper=mapper, title="staleness (iterations)", title_text_font_size="11px",
                          width=10, major_label_text_font_size="10px", label_standoff=4), "right")
    f.vstrip(x0="left", x1="right", source=last, fill_color="#d62728", fill_alpha=0.25, line_color="#d62728")
    p = figure(height=135, sizing_mode="stretch_width", min_width=200, toolbar_location=None, tools="",
               title="Sampling probabilities, next draw", x_range=f.x_range,
               y_range=Range1d(0, 1), x_axis_label="block i (training word)", y_axis_label="P", name="ocr_probfig")
    probs = ColumnDataSource(dict(x=[], w=[], top=[]), name="ocr_probs")
    p.vbar(x="x", top="top", width="w", source=probs, color="#2c7fb8")
    p.vstrip(x0="left", x1="right", source=last, fill_color="#d62728", fill_alpha=0.25, line_color="#d62728")
    p.yaxis.ticker.desired_num_ticks = 3
    # decades only: a range of two or three decades otherwise labels every mantissa (0.02 … 0.09
    # printed over each other at the top of the axis)
    f.yaxis.ticker = FixedTicker(ticks=[10.0 ** k for k in range(-12, 3)])
    p.min_border_right = 70   # the colour bar's room above: the two x axes stay aligned
    for fig in (f, p):
        fig.title.text_font_size = "14px"
    return f, p, bars, probs, last, mapper


def build_figure(data: dict):
    """The steps as a standalone Bokeh layout: the sampler and stretch switches, play/pause and
    the step scrubber, the step's block, word and FW corner, the binned gap estimates and
    probabilities, and the app's sentence (CustomJS only)."""
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, CustomJS, Div

    from gaplab.app.views.blocks import BlockGapsView

    from .player import JS_HELPERS, controls_row, on_ready, play_toggle, scrubber, variant_switch
    V = data["variants"]
    sw = variant_switch([f"{v['sampling']} sampling" for v in V], "ocr_sampler")
    gp = V[0]["gap_pass"]
    part = variant_switch(["passes 1–2", f"steps {V[0]['stretches'][1]['first'] + 1:,}–"
                           f"{V[0]['stretches'][1]['last']:,} (exact gap pass at {gp:,})"], "ocr_stretch")
    S = V[0]["stretches"][0]
    slider = scrubber("ocr_scrubber", "block step k", S["last"], value=1)
    slider.start = S["first"] + 1
    play = play_toggle(slider, "ocr_play", frames=400, interval_ms=80)
    head = Div(text="", sizing_mode="stretch_width", name="ocr_head", margin=(4, 10, 4, 10))
    say = Div(text="", sizing_mode="stretch_width", name="ocr_sentence", margin=(4, 10, 4, 10))
    f, p, bars, probs, last, mapper = _bars()
    state = ColumnDataSource(dict(block=[], g=[], it=[], stale=[], prob=[]), name="ocr_state")
    args = dict(raw=json.dumps(data, separators=(",", ":")), sw=sw, part=part, slider=slider, head=head,
                say=say, bars=bars, probs=probs, last=last, mapper=mapper, state=state, xr=f.x_range,
                yr=f.y_range, pr=p.y_range, MAX_BARS=BlockGapsView.MAX_BARS, WORD_CSS=_WORD_CSS)
    update = CustomJS(args=args, code=JS_HELPERS + _UPDATE)
    for model, attr in ((slider, "value"), (sw, "active"), (part, "active")):
        model.js_on_change(attr, update)
    layout = column(controls_row(sw, part, play), slider, head, f, p, say,
                    sizing_mode="stretch_width", name="ocr_figure")
    return on_ready(layout, update)
