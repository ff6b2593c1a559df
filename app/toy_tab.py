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

__all__ = ["ToyLab", "ToyView"]

SAMPLER_CHOICES = ["uniform", "curvature", "lipschitz", "gap", "exact_gap"]
COLORS = {"uniform": "#7570b3", "curvature": "#1b9e77", "lipschitz": "#e7298a", "gap": "#d95f02",
          "exact_gap": "#666666"}


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
                from gaplab.toy_examples.hard_easy import compare_samplers
                n, K, eps, seed, gc, samplers = args
                res = compare_samplers(n, K, eps, seed=seed, gap_check=gc, samplers=samplers,
                                       max_calls={"lipschitz": max(200_000, 40 * n * min(K, 1000))}
                                       if "lipschitz" in samplers else None)
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
        }

    def close(self):
        self.wait(5.0)


class ToyView:
    """Panel view of a :class:`ToyLab` (controls, result numbers, bars and convergence curves)."""

    def __init__(self, lab: ToyLab, session=None, compact: bool = False):
        import panel as pn
        from bokeh.models import ColumnDataSource, HoverTool
        from bokeh.plotting import figure

        self.lab = lab
        self.session = session
        self._version = None
        self.bsrc = ColumnDataSource(dict(name=[], calls=[], color=[], label=[]),
                                     name=None if compact else "toy_bars")
        from bokeh.models import Legend, LegendItem, Range1d
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
        c = figure(height=300, x_axis_type="log", y_axis_type="log", sizing_mode="stretch_width",
                   title="Exact duality gap vs oracle calls", x_axis_label="oracle calls (counted)",
                   y_axis_label="duality gap", tools="pan,wheel_zoom,box_zoom,reset,save")
        c.title.text_font_size = "14px"
        c.toolbar.logo = None
        self.csrc, self._items = {}, {}
        for s in SAMPLER_CHOICES:
            src = ColumnDataSource(dict(x=[], y=[]))
            r = c.line("x", "y", source=src, color=COLORS[s], line_width=2.5)
            self.csrc[s] = src
            self._items[s] = LegendItem(label=s, renderers=[r])
        self.eps_src = ColumnDataSource(dict(x=[], y=[]))
        r = c.line("x", "y", source=self.eps_src, color="#999999", line_dash="dotted", line_width=2)
        self._items["ε"] = LegendItem(label="ε", renderers=[r])
        self.legend = Legend(items=[], orientation="horizontal", label_text_font_size="11px",
                             click_policy="hide", border_line_alpha=0, margin=0, padding=2)
        c.add_layout(self.legend, "above")
        self.curves = c
        self.headline = pn.pane.HTML("", sizing_mode="stretch_width", styles={"font-size": "16px"})
        self.table = pn.pane.HTML("", sizing_mode="stretch_width", styles={"font-size": "13px"})
        wd = dict(
            n=pn.widgets.IntInput.from_param(lab.param.n, width=150),
            K=pn.widgets.IntInput.from_param(lab.param.K, width=150),
            eps=pn.widgets.Select.from_param(lab.param.eps, width=110),
            gap_check=pn.widgets.Select.from_param(lab.param.gap_check, width=150),
            seed=pn.widgets.IntInput.from_param(lab.param.seed, width=90),
            samplers=pn.widgets.CheckButtonGroup.from_param(lab.param.samplers, width=420,
                                                            name="Samplers"),
        )
        self.widgets = wd
        rows = ([pn.Row(wd["n"], wd["K"], wd["eps"]), pn.Row(wd["gap_check"], wd["seed"])] if compact
                else [pn.Row(wd["n"], wd["K"], wd["eps"], wd["gap_check"], wd["seed"])])
        controls = pn.Column(*rows, pn.Row(pn.pane.HTML("Samplers:", margin=(12, 10, 0, 10)), wd["samplers"]))
        self.run_button = pn.widgets.Button(label="Run comparison", color="primary", width=180)
        self.run_button.on_click(lambda e: self._run())
        buttons = [self.run_button]
        if session is not None:
            self.load_button = pn.widgets.Button(label="Step this problem in the solver", width=240)
            self.load_button.on_click(lambda e: self._load_into_session())
            buttons.append(self.load_button)
        intro = pn.pane.Markdown(
            "**App. C of the paper.** Block 0 is *hard* (its optimum spreads the dual mass over K "
            "labels, so it needs ~min(K, 1/(nε)) Frank-Wolfe steps); the n−1 *easy* blocks are "
            "all solved by one step on any of them. Curvatures are equal, so curvature sampling "
            "= uniform sampling and visits easy blocks as often as the hard one (~n·t calls). Gap "
            "sampling stops visiting solved blocks (~n + t calls): a speed-up of about "
            "min(n, K, 1/(nε)).", sizing_mode="stretch_width", styles={"font-size": "13px"})
        plots = (pn.Column if compact else pn.Row)(pn.pane.Bokeh(b, sizing_mode="stretch_width"),
                                                   pn.pane.Bokeh(c, sizing_mode="stretch_width"),
                                                   sizing_mode="stretch_width")
        if compact:
            b.height = c.height = 230
            intro = None
        self.panel = pn.Column(*[x for x in (intro, controls, pn.Row(*buttons), self.headline, plots,
                                             self.table) if x is not None], sizing_mode="stretch_width")

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
        if lab.busy:
            self.headline.object = "<i>running the samplers…</i>"
            return True
        if lab.error:
            self.headline.object = f"<span style='color:#d7191c'>Could not run: {lab.error}</span>"
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
        sp = s["speedup"]
        sp_txt = f"{sp:.1f}×" if math.isfinite(sp) else "–"
        self.headline.object = (
            f"n = {s['n']}, K = {s['K']}, ε = {s['eps']:g}: gap sampling needs "
            f"<b>{_int(s['calls'].get('gap'))}</b> oracle calls, uniform "
            f"<b>{_int(s['calls'].get('uniform'))}</b> → speed-up <b style='color:#d95f02'>{sp_txt}</b> "
            f"(min(n, K) = {s['min_n_K']}; predicted min(n, K, 1/(nε)) = {s['predicted']:g}; the hard "
            f"block needs t = {s['hard_steps']} steps)")
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
    return "–" if v is None else f"{int(v):,}"
