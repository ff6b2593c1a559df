"""The toy-example tab (Paper: App. C): one hard and n−1 easy objects; uniform, curvature and
gap sampling side by side; oracle calls to reach ε and the speed-up against min(n, K).

All numbers come from :func:`gaplab.toy_examples.hard_easy.compare_samplers`; the comparison
runs in a background thread of this session (:class:`ToyLab`, no Panel import needed).
"""
from __future__ import annotations

import math
import threading
import time

import numpy as np
import param

from .export import figure_pane
from .views import legend_above
from .safe_html import esc
from .ticks import handler
from .wording import count

__all__ = ["ToyLab", "ToyView"]

SAMPLER_CHOICES = ["uniform", "curvature", "lipschitz", "gap", "exact_gap"]

#: the n values of the speed-up-vs-n sweep (fixed K and ε: the tab's)
SWEEP_NS = (4, 8, 16, 32, 64, 128)

#: one line per sampler (shown under the plots)
SAMPLER_LINES = {
    "uniform": "uniform: every block with probability 1/n.",
    "curvature": "curvature: P(i) ∝ the block's curvature constant C_f^(i) (fixed weights). Here every "
                 "C_f^(i) is equal, so it is uniform sampling — with the same seed it makes the same "
                 "draws, and its curve (dashed) lies on the uniform one.",
    "lipschitz": "lipschitz: P(i) ∝ the ℓ2 Lipschitz constant L_i of block i's gradient (fixed weights, "
                 "as in non-uniform coordinate descent). Here it is worse than uniform: L_i = K/n for "
                 "an easy block and 1/(2n) for the hard one (App. C), so the hard block is drawn with "
                 "probability 1/(1 + 2K(n−1)) and t hard steps take about 2K(n−1)·t calls.",
    "gap": "gap: P(i) ∝ the block gap estimate ĝᵢ from the last time gap i was computed (block i's "
           "last oracle call or the last exact gap pass; stale), +∞ before its first visit, refreshed "
           "by an exact gap pass every few passes (Sec. 3.1).",
    "exact_gap": "exact_gap: Theorem 2's idealized sampler: every block gap recomputed before each "
                 "draw (those n oracle calls per step are reported separately, not counted).",
}
COLORS = {"uniform": "#7570b3", "curvature": "#1b9e77", "lipschitz": "#e7298a", "gap": "#d95f02",
          "exact_gap": "#666666"}


MAX_REPLAY_STEPS = 50_000   # visit counts are replayed step by step up to this many steps


def block_visits(result, problem, gap_check, seed) -> dict:
    """``{sampler: int64 (n,)}``: how often each block was stepped on in the run that
    :func:`~gaplab.toy_examples.hard_easy.compare_samplers` measured, replayed with the same
    solver settings and seed for the same number of steps (the draws are deterministic), one
    step at a time. Runs longer than ``MAX_REPLAY_STEPS`` are left out."""
    from gaplab.core import Solver
    model, lam, info = problem
    out = {}
    for name in result["sampler_names"]:
        r = result[name]
        steps = int(r["steps"])
        if steps > MAX_REPLAY_STEPS or name == "exact_gap":
            continue
        kw = {"uniform": dict(sampling="uniform"),
              "curvature": dict(sampling="weights", sampling_weights=info.get("curvature_constants")),
              "lipschitz": dict(sampling="weights", sampling_weights=info.get("lipschitz_constants")),
              "gap": dict(sampling="gap", gap_check=gap_check)}[name]
        s = Solver(model, lam=lam, seed=seed, max_passes=1e12, **kw)
        counts = np.zeros(model.arrays.n, dtype=np.int64)
        for _ in range(steps):
            s.step()
            counts[s.last_steps(1)[-1].block] += 1
        out[name] = counts
    return out


class ToyLab(param.Parameterized):
    """Settings and results of the hard/easy comparison for one session."""

    n = param.Integer(default=20, bounds=(2, 500), label="n (1 hard + n−1 easy)")
    K = param.Integer(default=100, bounds=(1, 1000), label="K (labels − 1)")
    eps = param.Selector(default=1e-4, objects={"1e-2": 1e-2, "1e-3": 1e-3, "1e-4": 1e-4,
                                                 "1e-5": 1e-5, "1e-6": 1e-6}, label="ε (target gap)")
    gap_check = param.Selector(default=10, objects={"every pass": 1, "every 10 passes": 10,
                                                     "never": math.inf}, label="gap check (gap sampler)")
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), label="Seed")
    samplers = param.ListSelector(default=["uniform", "curvature", "gap"], objects=SAMPLER_CHOICES,
                                  label="Samplers")
    run_action = param.Action(lambda self: self.start(), label="Run comparison")

    def __init__(self, **params):
        super().__init__(**params)
        self._lock = threading.Lock()
        self._thread = None
        self.version = 0
        self.sweep_result = None
        self.sweep_error = None
        self.result = None
        self.error = None
        self.busy = False

    def start(self) -> bool:
        """Run ``compare_samplers`` in a background thread (False if one is running)."""
        if self._thread is not None and self._thread.is_alive():
            return False
        order = [s for s in SAMPLER_CHOICES if s in self.samplers]
        if not order:
            with self._lock:
                self.error = "choose at least one sampler"
                self.version += 1
            return False
        args = (self.n, self.K, float(self.eps), self.seed, self.gap_check, tuple(order))
        self.busy = True
        with self._lock:
            self.version += 1

        def job():
            t0 = time.perf_counter()
            try:
                from gaplab.toy_examples.hard_easy import compare_samplers, make_hard_easy
                n, K, eps, seed, gc, samplers = args
                problem = make_hard_easy(n, K)
                res = compare_samplers(n, K, eps, seed=seed, gap_check=gc, samplers=samplers,
                                       max_calls={"lipschitz": max(200_000, 40 * n * min(K, 1000))}
                                       if "lipschitz" in samplers else None, problem=problem)
                res["visits"] = block_visits(res, problem, gc, seed)
                err = None
            except Exception as exc:  # shown in the tab, never a server traceback
                res, err = None, f"{type(exc).__name__}: {exc}"
            with self._lock:
                self.result = res
                self.error = err
                self.elapsed = time.perf_counter() - t0
                self.busy = False
                self.version += 1

        self._thread = threading.Thread(target=job, name="gaplab-toy", daemon=True)
        self._thread.start()
        return True

    def start_sweep(self, ns=SWEEP_NS) -> bool:
        """Speed-up of gap over uniform sampling against n at the tab's K and ε (one run of each
        sampler per n, seed as set), in the background thread (False if one is running).

        ``sweep_result`` becomes a list of dicts with ``n``, ``t`` (hard steps),
        ``uniform``/``gap`` (oracle calls to ε, None if not reached), ``measured`` (their
        ratio), ``predicted`` = min(n, K, 1/(nε)) and ``ratio_nt`` = n·t/(n + t), the ratio of
        the App. C counts n·t (uniform) and n + t (gap)."""
        if self._thread is not None and self._thread.is_alive():
            return False
        K, eps, seed, gc = self.K, float(self.eps), self.seed, self.gap_check
        self.busy = True
        with self._lock:
            self.version += 1

        def job():
            t0 = time.perf_counter()
            rows, err = [], None
            try:
                from gaplab.toy_examples.hard_easy import compare_samplers, hard_steps_needed
                for n in ns:
                    r = compare_samplers(n, K, eps, seed=seed, gap_check=gc, samplers=("uniform", "gap"),
                                         keep_curves=False)
                    u, g = r["uniform"]["oracle_calls"], r["gap"]["oracle_calls"]
                    t = hard_steps_needed(n, K, eps)
                    rows.append({"n": n, "t": t, "uniform": u, "gap": g,
                                 "measured": (u / g) if u and g else math.nan,
                                 "predicted": r["prediction"]["speedup_min_n_K_1_over_n_eps"],
                                 "ratio_nt": (n * t / (n + t)) if t > 0 else 1.0})
            except Exception as exc:  # shown in the tab, never a server traceback
                err = f"{type(exc).__name__}: {exc}"
            with self._lock:
                self.sweep_result = rows if err is None else None
                self.sweep_error = err
                self.sweep_args = (K, eps)
                self.sweep_elapsed = time.perf_counter() - t0
                self.busy = False
                self.version += 1

        self._thread = threading.Thread(target=job, name="gaplab-toy-sweep", daemon=True)
        self._thread.start()
        return True

    def wait(self, timeout=60.0) -> bool:
        t = self._thread
        if t is not None:
            t.join(timeout)
            return not t.is_alive()
        return True

    def summary(self) -> dict | None:
        """Oracle calls per sampler, measured speed-up of gap over uniform and min(n, K)."""
        r = self.result
        if r is None:
            return None
        names = r["sampler_names"]
        prob = r["problem"]
        calls = {s: r[s]["oracle_calls"] for s in names}
        uni = calls.get("uniform")
        gap = calls.get("gap")
        return {
            "n": prob["n"], "K": prob["K"], "eps": prob["eps"], "calls": calls,
            "reached": {s: r[s]["reached"] for s in names},
            "sampler_calls": {s: r[s].get("sampler_oracle_calls", 0) for s in names},
            "speedup": (uni / gap) if uni and gap else math.nan,
            "min_n_K": min(prob["n"], prob["K"]),
            "predicted": r["prediction"]["speedup_min_n_K_1_over_n_eps"],
            "hard_steps": r["prediction"]["hard_steps_needed"],
            "expected_calls": r["prediction"]["expected_calls"],
            "expected_speedup": r["prediction"]["speedup_uniform_over_gap"],
        }

    def close(self):
        self.wait(5.0)


class ToyView:
    """Panel view of a :class:`ToyLab` (controls, result numbers, bars and convergence curves)."""

    def __init__(self, lab: ToyLab, session=None, compact: bool = False):
        self.lab = lab
        self.session = session
        self._version = None
        b = self._bars_figure(compact)
        c = self._curves_figure()
        bl = self._linear_bars_figure(b)
        sw = self._sweep_figure(compact)
        v = self._visits_figure()
        self._text_panes()
        controls, buttons = self._controls(lab, session, compact)
        self._layout(compact, b, c, bl, sw, v, controls, buttons)

    # ------------------------------------------------------------------ building
    def _bars_figure(self, compact):
        """Oracle calls to reach ε per sampler, log scale (bars labelled with their counts)."""
        from bokeh.models import ColumnDataSource, HoverTool, Range1d
        from bokeh.plotting import figure

        self.bsrc = ColumnDataSource(dict(name=[], calls=[], color=[], label=[]),
                                     name=None if compact else "toy_bars")
        b = figure(height=300, x_range=[], y_axis_type="log", title="Oracle calls to reach ε",
                   y_range=Range1d(1, 10),
                   tools="save", toolbar_location=None, sizing_mode="stretch_width",
                   y_axis_label="oracle calls (counted)")
        b.vbar(x="name", top="calls", bottom=1, width=0.7, color="color", source=self.bsrc)
        b.text(x="name", y="calls", text="label", source=self.bsrc, text_align="center",
               text_baseline="bottom", text_font_size="13px", y_offset=-2)
        b.add_tools(HoverTool(tooltips=[("sampler", "@name"), ("oracle calls", "@calls")]))
        b.title.text_font_size = "14px"
        self.bars = b
        return b

    def _curves_figure(self):
        """The exact duality gap against oracle calls, one curve per sampler and the ε line."""
        from bokeh.models import ColumnDataSource, Legend, LegendItem, Range1d
        from bokeh.plotting import figure

        # explicit ranges (set from the data): an empty auto-ranged log axis warns on every redraw
        c = figure(height=300, x_axis_type="log", y_axis_type="log", sizing_mode="stretch_width",
                   x_range=Range1d(1, 1e4), y_range=Range1d(1e-6, 1),
                   title="Exact duality gap vs oracle calls", x_axis_label="oracle calls (counted)",
                   y_axis_label="duality gap", tools="pan,wheel_zoom,box_zoom,reset,save")
        c.title.text_font_size = "14px"
        c.toolbar.logo = None
        self.csrc, self._items = {}, {}
        for s in SAMPLER_CHOICES:
            src = ColumnDataSource(dict(x=[], y=[]))
            # curvature = uniform on this problem: dashed and thinner, so both stay visible
            r = c.line("x", "y", source=src, color=COLORS[s], line_width=2.5 if s != "curvature" else 3.5,
                       line_dash="dashed" if s == "curvature" else "solid",
                       alpha=1.0 if s != "curvature" else 0.8)
            self.csrc[s] = src
            self._items[s] = LegendItem(label=s, renderers=[r])
        self.eps_src = ColumnDataSource(dict(x=[], y=[]))
        r = c.line("x", "y", source=self.eps_src, color="#999999", line_dash="dotted", line_width=2)
        self._items["ε"] = LegendItem(label="ε", renderers=[r])
        self.legend = Legend(items=[], orientation="horizontal", label_text_font_size="11px",
                             click_policy="hide", border_line_alpha=0, margin=0, padding=2)
        c.add_layout(self.legend, "above")
        self.curves = c
        return c

    def _linear_bars_figure(self, b):
        """The bar chart's linear-scale twin (sharing its x range and data)."""
        from bokeh.models import Range1d
        from bokeh.plotting import figure

        # a linear twin of the bar chart (the "linear scale" checkbox swaps them)
        bl = figure(height=300, x_range=b.x_range, y_range=Range1d(0, 10), title="Oracle calls to reach ε (linear scale)",
                    tools="save", toolbar_location=None, sizing_mode="stretch_width",
                    y_axis_label="oracle calls (counted)")
        bl.vbar(x="name", top="calls", bottom=0, width=0.7, color="color", source=self.bsrc)
        bl.text(x="name", y="calls", text="label", source=self.bsrc, text_align="center",
                text_baseline="bottom", text_font_size="13px", y_offset=-2)
        bl.title.text_font_size = "14px"
        self.bars_lin = bl
        return bl

    def _sweep_figure(self, compact):
        """Speed-up of gap over uniform sampling against n, with the App. C predictions."""
        from bokeh.models import ColumnDataSource, Range1d
        from bokeh.plotting import figure

        # speed-up against n (sweep)
        self.ssrc = ColumnDataSource(dict(n=[], measured=[], predicted=[], ratio_nt=[]),
                                     name=None if compact else "toy_sweep")
        sw = figure(height=300, x_axis_type="log", y_axis_type="log", sizing_mode="stretch_width",
                    title="Speed-up of gap over uniform sampling vs n (fixed K, ε)",
                    x_axis_label="n (blocks)", y_axis_label="oracle calls: uniform / gap",
                    tools="pan,wheel_zoom,reset,save", x_range=Range1d(2, 256), y_range=Range1d(0.5, 200))
        sw.toolbar.logo = None
        sw.title.text_font_size = "14px"
        sw.line("n", "predicted", source=self.ssrc, color="#999999", line_dash="dashed", line_width=2,
                legend_label="min(n, K, 1/(nε))")
        sw.line("n", "ratio_nt", source=self.ssrc, color="#333333", line_dash="dotted", line_width=2,
                legend_label="n·t/(n+t)")
        sw.line("n", "measured", source=self.ssrc, color=COLORS["gap"], line_width=2.5)
        sw.scatter("n", "measured", source=self.ssrc, color=COLORS["gap"], size=9, legend_label="measured")
        sw.xaxis.ticker = list(SWEEP_NS)
        legend_above(sw)     # never over the data
        self.sweep_fig = sw
        return sw

    def _visits_figure(self):
        """Steps on each block until ε, per sampler (block 0 is the hard one)."""
        from bokeh.models import ColumnDataSource, Range1d
        from bokeh.plotting import figure

        # per-block visit counts of each sampler (the hard block 0 vs the easy ones)
        self.vsrc = {k: ColumnDataSource(dict(x=[], top=[])) for k in SAMPLER_CHOICES}
        v = figure(height=260, sizing_mode="stretch_width", y_axis_type="log", y_range=Range1d(0.5, 1e4),
                   x_range=Range1d(-0.5, 0.5),
                   title="Visits per block until ε (block 0 is the hard one)", x_axis_label="block i",
                   y_axis_label="steps on the block", tools="save,reset,xwheel_zoom,xpan")
        v.toolbar.logo = None
        v.title.text_font_size = "14px"
        self._vr = {}
        for j, k in enumerate(SAMPLER_CHOICES):
            self._vr[k] = v.vbar(x="x", top="top", bottom=0.5, width=0.25, source=self.vsrc[k], color=COLORS[k],
                                 legend_label=k, alpha=0.85 if k != "curvature" else 0.5,
                                 line_color=COLORS[k], line_dash="dashed" if k == "curvature" else "solid")
        legend_above(v)      # never over the data
        self.visits_fig = v
        return v

    def _text_panes(self):
        """The HTML panes the results are written into."""
        import panel as pn

        self.visits_info = pn.pane.HTML("", sizing_mode="stretch_width", styles={"font-size": "13px"})
        self.headline = pn.pane.HTML("", sizing_mode="stretch_width", styles={"font-size": "16px"})
        self.explain = pn.pane.HTML("", sizing_mode="stretch_width", styles={"font-size": "13px", "color": "#333"})
        self.sampler_info = pn.pane.HTML("", sizing_mode="stretch_width", styles={"font-size": "13px", "color": "#333"})
        self.table = pn.pane.HTML("", sizing_mode="stretch_width", styles={"font-size": "13px"})

    def _controls(self, lab, session, compact):
        """The problem's and samplers' widgets and the Run, Sweep, linear-scale and (with a session)
        Step-this-problem buttons; returns the controls' column and the buttons."""
        import panel as pn

        wd = dict(
            n=pn.widgets.IntInput.from_param(lab.param.n, width=150),
            K=pn.widgets.IntInput.from_param(lab.param.K, width=150),
            eps=pn.widgets.Select.from_param(lab.param.eps, width=110),
            gap_check=pn.widgets.Select.from_param(lab.param.gap_check, width=170, min_width=170),
            seed=pn.widgets.IntInput.from_param(lab.param.seed, width=90),
            samplers=pn.widgets.CheckButtonGroup.from_param(lab.param.samplers, width=420,
                                                            name="Samplers"),
        )
        self.widgets = wd
        rows = ([pn.Row(wd["n"], wd["K"], wd["eps"]), pn.Row(wd["gap_check"], wd["seed"])] if compact
                else [pn.Row(wd["n"], wd["K"], wd["eps"], wd["gap_check"], wd["seed"])])
        controls = pn.Column(*rows, pn.Row(pn.pane.HTML("Samplers:", margin=(12, 10, 0, 10)), wd["samplers"]))
        self.run_button = pn.widgets.Button(label="Run comparison", color="primary", width=180)
        self.run_button.on_click(handler(lambda e: self._run()))   # gaplab.app.ticks
        self.sweep_button = pn.widgets.Button(
            label="Sweep n", width=120, description=f"Uniform vs gap sampling for n in {', '.join(map(str, SWEEP_NS))} "
                                                    "at this K and ε (a few seconds)")
        self.sweep_button.on_click(handler(lambda e: self._sweep()))
        self.linear = pn.widgets.Checkbox(name="linear scale", value=False, width=120, margin=(14, 10))
        self.linear.param.watch(handler(lambda e: self._scale()), "value")
        buttons = [self.run_button, self.sweep_button, self.linear]
        if session is not None:
            self.load_button = pn.widgets.Button(label="Step this problem in the solver", width=240)
            self.load_button.on_click(handler(lambda e: self._load_into_session()))
            buttons.append(self.load_button)
        return controls, buttons

    def _layout(self, compact, b, c, bl, sw, v, controls, buttons):
        """``self.panel``: the App. C introduction (not on the lesson page), controls, numbers and
        figures."""
        import panel as pn

        intro = pn.pane.Markdown(
            "**App. C of the paper.** Block 0 is *hard* (its optimum spreads the dual mass over K "
            "labels, so it needs t ≈ min(K, 1/(2nε)) Frank-Wolfe steps for a duality gap ε: its "
            "smallest gap after t steps is 1/(2nt)); the n−1 *easy* blocks are "
            "all solved by one step on any of them. Curvatures are equal, so curvature sampling "
            "= uniform sampling and visits easy blocks as often as the hard one (~n·t calls); "
            "Lipschitz sampling favours the easy blocks (~2K(n−1)·t calls). Gap "
            "sampling stops visiting solved blocks (~n + t calls): a speed-up of about "
            "n·t/(n + t) ≈ min(n, t), the paper's min(n, K, 1/(nε)) up to constants.", sizing_mode="stretch_width", styles={"font-size": "13px"})
        self._bars_log = figure_pane(b)
        self._bars_lin = figure_pane(bl)
        self._bars_lin.visible = False
        plots = (pn.Column if compact else pn.Row)(pn.Column(self._bars_log, self._bars_lin, sizing_mode="stretch_width"),
                                                   figure_pane(c), sizing_mode="stretch_width")
        self.sweep_pane = figure_pane(sw)
        self.sweep_pane.visible = False
        self.sweep_info = pn.pane.HTML("", sizing_mode="stretch_width", styles={"font-size": "13px"})
        if compact:
            b.height = c.height = bl.height = sw.height = 230
            intro = None
        self.panel = pn.Column(*[x for x in (intro, controls, pn.Row(*buttons), self.headline, self.explain,
                                             plots, self.visits_info,
                                             figure_pane(v),
                                             self.sampler_info, self.table, self.sweep_info,
                                             self.sweep_pane) if x is not None],
                               sizing_mode="stretch_width")

    def _draw_visits(self, s, names):
        visits = (self.lab.result or {}).get("visits") or {}
        shown = [k for k in names if k in visits]
        m = len(shown)
        width = 0.8 / max(m, 1)
        top = 1.0
        for k in SAMPLER_CHOICES:
            if k in shown:
                c = visits[k]
                j = shown.index(k)
                x = np.arange(len(c)) + (j - (m - 1) / 2) * width
                keep = c > 0
                self.vsrc[k].data = dict(x=x[keep], top=c[keep].astype(float))
                self._vr[k].glyph.width = width
                self._vr[k].visible = True
                top = max(top, float(c.max()))
            else:
                self.vsrc[k].data = dict(x=[], top=[])
                self._vr[k].visible = False
        self.visits_fig.y_range.update(start=0.5, end=10 ** math.ceil(math.log10(top * 2)))
        nb = max((len(visits[k]) for k in shown), default=1)
        self.visits_fig.x_range.update(start=-0.5, end=nb - 0.5)
        if not shown:
            self.visits_info.object = ""
            return
        parts = []
        for k in shown:
            c = visits[k]
            easy = c[1:]
            parts.append(f"<b>{k}</b>: hard block {int(c[0]):,} steps, easy blocks {easy.mean():.1f} on average "
                         f"({int(easy.sum()):,} in all, {100 * easy.sum() / max(c.sum(), 1):.0f}% of the steps)")
        self.visits_info.object = ("<b>Where the steps went.</b> " + "; ".join(parts) + ". Uniform (and "
                                   "curvature) sampling keeps drawing easy blocks that one step already "
                                   "solved; gap sampling spends its steps on the hard block.")

    def _scale(self):
        self._bars_lin.visible = bool(self.linear.value)
        self._bars_log.visible = not self.linear.value

    def _sweep(self):
        if not self.lab.start_sweep():
            return
        self.sweep_button.loading = True
        self.update(force=True)

    def _draw_sweep(self):
        lab = self.lab
        rows = lab.sweep_result
        if lab.sweep_error:
            self.sweep_info.object = f"<span style='color:#d7191c'>Sweep failed: {esc(lab.sweep_error)}</span>"
            return
        if not rows:
            return
        K, eps = lab.sweep_args
        ns = [r["n"] for r in rows]
        meas = [r["measured"] for r in rows]
        self.ssrc.data = dict(n=ns, measured=meas, predicted=[r["predicted"] for r in rows],
                              ratio_nt=[r["ratio_nt"] for r in rows])
        vals = [v for r in rows for v in (r["measured"], r["predicted"], r["ratio_nt"]) if math.isfinite(v) and v > 0]
        self.sweep_fig.x_range.update(start=min(ns) / 1.5, end=max(ns) * 1.5)
        self.sweep_fig.y_range.update(start=min(vals + [1.0]) / 1.5, end=max(vals) * 2)
        self.sweep_fig.title.text = f"Speed-up of gap over uniform sampling vs n (K = {K}, ε = {eps:g}, seed {lab.seed})"
        self.sweep_pane.visible = True
        self.sweep_info.object = (
            "<b>Speed-up vs n.</b> Uniform sampling needs about n·t calls (t steps on the hard block, "
            "each after ~n draws), gap sampling about n + t (each easy block once, then the hard one): "
            "their ratio n·t/(n+t) (dotted) is what the measured points follow; the paper's "
            "min(n, K, 1/(nε)) (dashed) is its order of magnitude (t ≈ min(K, 1/(2nε)), rounded up). "
            f"Computed in {getattr(lab, 'sweep_elapsed', 0):.1f} s.")

    def _run(self):
        if not self.lab.start():
            return
        self.run_button.loading = True
        self.update(force=True)

    def _load_into_session(self):
        s = self.session
        s.param.update(toy_n=self.lab.n, toy_K=self.lab.K, dataset="toy")

    def update(self, force=False):
        """Redraw from the lab's latest result (sources are always replaced whole here)."""
        lab = self.lab
        if not force and lab.version == self._version:
            return False
        self._version = lab.version
        self.run_button.loading = bool(lab.busy)
        self.sweep_button.loading = bool(lab.busy)
        self._draw_sweep()
        if lab.busy:
            self.headline.object = "<i>running the samplers…</i>"
            return True
        if lab.error:
            self.headline.object = f"<span style='color:#d7191c'>Could not run: {esc(lab.error)}</span>"
            return True
        s = lab.summary()
        if s is None:
            self.headline.object = ("<span style='color:#666'>Press <b>Run comparison</b> to run the "
                                    "samplers on the hard/easy problem.</span>")
            return True
        names = [k for k in s["calls"]]
        calls = [s["calls"][k] for k in names]
        shown = [float(c) if c is not None else np.nan for c in calls]
        self.bars.x_range.factors = names
        finite = [c for c in shown if np.isfinite(c)]
        self.bars.y_range.update(start=1, end=10 ** math.ceil(math.log10(max(finite) * 4)) if finite else 10)
        self.bars_lin.y_range.update(start=0, end=max(finite) * 1.15 if finite else 10)
        self.legend.items = [self._items[k] for k in names] + [self._items["ε"]]
        self.bsrc.data = dict(name=names, calls=shown, color=[COLORS[k] for k in names],
                              label=[f"{int(c):,}" if c is not None else "not reached" for c in calls])
        for k in SAMPLER_CHOICES:
            if k in names and lab.result[k].get("curve"):
                cur = np.asarray(lab.result[k]["curve"], dtype=np.float64)
                x = np.maximum(cur[:, 0], 1.0)
                y = np.maximum(cur[:, 2], 1e-12)
                self.csrc[k].data = dict(x=x, y=y)
            else:
                self.csrc[k].data = dict(x=[], y=[])
        xs = [1, max([c for c in shown if np.isfinite(c)] + [10.0])]
        self.eps_src.data = dict(x=xs, y=[s["eps"], s["eps"]])
        ys = [v for k in names for v in self.csrc[k].data["y"]] + [s["eps"]]
        xmax = max([v for k in names for v in self.csrc[k].data["x"]] + [xs[1]])
        self.curves.x_range.update(start=1, end=10 ** math.ceil(math.log10(xmax * 1.2)))
        self.curves.y_range.update(start=10 ** math.floor(math.log10(max(min(ys), 1e-12))),
                                   end=10 ** math.ceil(math.log10(max(ys))))
        sp = s["speedup"]
        sp_txt = f"{sp:.1f}×" if math.isfinite(sp) else "–"
        self.headline.object = (
            f"n = {count(s['n'])}, K = {count(s['K'])}, ε = {s['eps']:g}: gap sampling needs "
            f"<b>{_int(s['calls'].get('gap'))}</b> oracle calls, uniform "
            f"<b>{_int(s['calls'].get('uniform'))}</b> → speed-up <b style='color:#d95f02'>{sp_txt}</b> "
            f"(min(n, K) = {s['min_n_K']}; predicted min(n, K, 1/(nε)) = {s['predicted']:g}; the hard "
            f"block needs t = {s['hard_steps']} steps)")
        ec = s.get("expected_calls") or {}
        why = (f"<b>Why {sp_txt} and not {s['predicted']:g}?</b> min(n, K, 1/(nε)) is an order of "
               f"magnitude. The code's expected counts are uniform ≈ n·t = {_int(ec.get('uniform'))} and "
               f"gap ≈ n + t + gap passes = {_int(ec.get('gap'))} (t = {s['hard_steps']} steps on the hard "
               f"block), an expected speed-up of {s['expected_speedup']:.1f}×: the n easy visits and the "
               "counted exact gap passes are paid by gap sampling too." if s.get("expected_speedup") else "")
        lines = "".join(f"<li>{SAMPLER_LINES[k]}</li>" for k in names if k in SAMPLER_LINES)
        self.explain.object = why
        self._draw_visits(s, names)
        self.sampler_info.object = f"<b>The samplers.</b><ul style='margin:4px 0'>{lines}</ul>"
        rows = "".join(
            f"<tr><td style='padding:1px 12px 1px 0'>{k}</td><td style='text-align:right'>{_int(s['calls'][k])}</td>"
            f"<td style='padding-left:12px;color:#666'>{'' if s['reached'][k] else 'budget hit before ε'}"
            f"{' + ' + format(s['sampler_calls'][k], ',') + ' sampler-only calls (Theorem 2 ideal)' if s['sampler_calls'].get(k) else ''}</td></tr>"
            for k in names)
        self.table.object = (f"<table><tr><th style='text-align:left'>sampler</th><th>oracle calls to ε</th>"
                             f"<th></th></tr>{rows}</table><span style='color:#666'>computed in "
                             f"{getattr(lab, 'elapsed', 0):.2f} s by gaplab.toy_examples.hard_easy.compare_samplers</span>")
        return True


def _int(v):
    return "–" if v is None else count(v)
