"""The regularization-path tab (Paper: Sec. 4, App. K): the path traced live, its cost and
certificates against λ, the problem's test metric against λ (CoNLL: chunk F1, as conlleval; OCR:
test error), read from the path's rows (never from its weights), and a λ picker that loads the path's model at λ
into the session's solver (then the Step and Convergence tabs show that model).

Every number comes from :class:`~gaplab.app.pathlab_snapshot.PathSnapshot` (computed by
:mod:`gaplab.core.regpath`); plots are Bokeh figures whose sources are replaced in place.
"""
from __future__ import annotations

import math

import numpy as np
import panel as pn
from bokeh.events import Tap
from bokeh.models import (ColumnDataSource, CustomJSTickFormatter, HoverTool, LinearAxis,
                          NumeralTickFormatter, Range1d, Span)

from .export import figure_pane
from .safe_html import esc
from .ticks import handler
from .path_figures import _grow, _legend_above, _legend_inside, _legend_visible, _pos, _sawtooth, _staircase
from .views import GAP_FLOOR, _fig, _fmt, _set, _set_range

#: a row of controls that wraps to the width it is given: Bokeh sets a stretched row's min-width
#: to its children's widths, which would keep it on one line past a narrow output area's edge
WRAP_ROW_CSS = ":host { flex-wrap: wrap !important; min-width: 0 !important; }"

#: a column no wider than its container: its minimum is its children's (Bokeh's own minimum
#: comes from the widths they had when first laid out)
FIT_CSS = ":host { min-width: 0 !important; }"

#: px: the narrowest a path figure (and the pick column beside the test-error figure) gets
FIG_MIN_WIDTH = 300

__all__ = ["PathView"]

PATH_COLOR = "#1f77b4"
TIME_COLOR = "#ff7f0e"
GRID_COLOR = "#2ca02c"
PICK_COLOR = "#d62728"

_STATUS = {"idle": ("#555", "no path yet"), "running": ("#1a9641", "computing the path"),
           "grid": ("#1a9641", "path done · computing the grid search"), "done": ("#2c7fb8", "done"),
           "stopped": ("#555", "stopped"), "error": ("#d7191c", "error"), "closed": ("#555", "closed")}

# the slider holds −log10 λ, so that it runs the way the plots do (λ decreases to the right)
_LAM_TICK_JS = "const v = Math.pow(10, -tick); return Number(v.toPrecision(3)).toString();"


class PathView:
    """Controls, plots and λ picker of a session's :class:`~gaplab.app.pathlab.PathLab`.

    ``update(session_snapshot, force)`` redraws from the lab's latest snapshot (it may be
    called as often as the app refreshes: nothing happens unless something changed).
    """

    RUNNING_MIN_INTERVAL_S = 0.25

    def __init__(self, lab, session, compact: bool = False, name: str | None = None):
        self.lab = lab
        self.session = session
        self.compact = compact
        self._key = None
        self._full = False
        self._range = None
        h = 215 if compact else 300
        self.x_range = Range1d(1e3, 1e-3)   # shared by the three plots; flipped: λ decreases →
        xlabel = "λ (log scale; the path goes right, to smaller λ)" if not compact else "λ (decreasing →)"
        c = self._cost_figure(h, xlabel, name)
        g = self._gaps_figure(h, xlabel, name)
        t = self._test_figure(h, xlabel, name)
        self.pick_spans = []
        for f, cls in ((c, "cost"), (g, "gaps"), (t, "test")):
            f.css_classes = [f"gaplab-path-{cls}"]   # hooks for browser tests
            sp = Span(location=None, dimension="height", line_color=PICK_COLOR, line_width=2, line_alpha=0.7)
            f.add_layout(sp)
            self.pick_spans.append(sp)
            f.on_event(Tap, handler(self._on_tap))
            f.toolbar.active_tap = None

        wd = self._controls()
        self._layout(c, g, t, wd, h)

    # ------------------------------------------------------------------ building
    def _cost_figure(self, h, xlabel, name):
        """The cost of the path against λ: cumulative passes (path and grid) and time (right axis)."""
        compact = self.compact
        # ---- cost: cumulative passes and time
        self.cost_src = ColumnDataSource(dict(x=[], passes=[], time=[]), name=f"{name}_cost" if name else None)
        self.grid_src = ColumnDataSource(dict(x=[], passes=[], time=[], test=[]))
        c = _fig(height=h, x_axis_type="log", x_range=self.x_range, x_axis_label=xlabel,
                 y_axis_label="cumulative effective passes", title="Cost of the path: cumulative passes and time")
        r1 = c.line("x", "passes", source=self.cost_src, color=PATH_COLOR, line_width=2.5,
                    legend_label="path: passes")
        c.scatter("x", "passes", source=self.cost_src, color=PATH_COLOR, size=4)
        rg = c.line("x", "passes", source=self.grid_src, color=GRID_COLOR, line_width=2, line_dash="dashed",
                    legend_label="grid 2^k (warm): passes")
        c.scatter("x", "passes", source=self.grid_src, color=GRID_COLOR, marker="square", size=6)
        c.extra_y_ranges = {"time": Range1d(0, 1)}
        rt = c.line("x", "time", source=self.cost_src, color=TIME_COLOR, line_width=2, line_dash="dotdash",
                    y_range_name="time", legend_label="path: time (s, right axis)")
        c.add_layout(LinearAxis(y_range_name="time", axis_label="cumulative time (s)" if not compact else "time (s)",
                                axis_label_text_font_size="13px", major_label_text_font_size="12px"), "right")
        c.y_range = Range1d(0, 1)
        if compact:
            c.yaxis[0].axis_label = "passes"
            _legend_inside(c, "top_left")
        else:
            _legend_above(c)
        c.add_tools(HoverTool(renderers=[r1, rt, rg], tooltips=[("λ", "@x{0.000e}"), ("passes", "@passes{0.0}"),
                                                               ("time", "@time{0.00} s")]))
        self.cost = c
        return c

    def _gaps_figure(self, h, xlabel, name):
        """The gap at each breakpoint against λ, with Proposition 1's sawtooth and the ε, κε lines."""
        # ---- gaps at breakpoints vs ε (Proposition 1 sawtooth)
        self.gap_src = ColumnDataSource(dict(x=[], gap=[], exact=[]), name=f"{name}_gaps" if name else None)
        self.saw_src = ColumnDataSource(dict(x=[], y=[]))
        g = _fig(height=h, x_axis_type="log", y_axis_type="log", x_range=self.x_range, x_axis_label=xlabel,
                 y_axis_label="duality gap", title="Gap at each breakpoint vs ε",
                 y_range=Range1d(1e-3, 1))
        g.line("x", "y", source=self.saw_src, color="#6baed6", line_width=1, alpha=0.8,
               legend_label="gap on [λⱼ₊₁, λⱼ] (Prop. 1)")
        self.gap_pts = g.scatter("x", "gap", source=self.gap_src, color=PATH_COLOR, size=6,
                                 legend_label="gⱼ at λⱼ")
        self.true_pts = g.scatter("x", "exact", source=self.gap_src, color="#7b3294", size=7, marker="triangle",
                                  legend_label="true gap", visible=False)
        self.eps_span = Span(location=None, dimension="width", line_color="#d62728", line_width=2)
        self.keps_span = Span(location=None, dimension="width", line_color="#d62728", line_width=1.5,
                              line_dash="dashed")
        g.add_layout(self.eps_span)
        g.add_layout(self.keps_span)
        _legend_above(g)
        g.add_tools(HoverTool(renderers=[self.gap_pts], tooltips=[("λ", "@x{0.000e}"), ("gap", "@gap{0.000e}")]))
        self.gaps = g
        return g

    def _test_figure(self, h, xlabel, name):
        """The test metric of the path's weights against λ (a staircase) and of the grid's."""
        compact = self.compact
        # ---- test error vs λ
        self.test_src = ColumnDataSource(dict(x=[], y=[]))
        self.test_pts = ColumnDataSource(dict(x=[], y=[]), name=f"{name}_test" if name else None)
        t = _fig(height=h, x_axis_type="log", x_range=self.x_range, x_axis_label=xlabel,
                 y_axis_label="test error", title="Test error vs λ", y_range=Range1d(0, 1))
        t.line("x", "y", source=self.test_src, color=PATH_COLOR, line_width=2, legend_label="path wⱼ (piecewise constant)")
        tp = t.scatter("x", "y", source=self.test_pts, color=PATH_COLOR, size=5)
        t.scatter("x", "test", source=self.grid_src, color=GRID_COLOR, marker="square", size=7,
                  legend_label="grid 2^k")
        t.yaxis.formatter = NumeralTickFormatter(format="0%")
        if compact:
            _legend_inside(t, "top_right")
        else:
            _legend_above(t)
        self.test_hover = HoverTool(renderers=[tp], tooltips=[("λ", "@x{0.000e}"), ("test error", "@y{0.00%}")])
        t.add_tools(self.test_hover)
        self.test = t
        self._metric_shown = ("test_error", "test error", False)
        return t

    def _controls(self):
        """The path's settings, Start/Stop, the store opener, the summary and the λ picker; returns
        the settings' widgets by name."""
        lab, compact = self.lab, self.compact
        # ---- controls
        W = 120 if compact else 112
        wd = dict(
            eps=pn.widgets.FloatInput.from_param(lab.param.eps, width=W, step=0.01, format="0.[0000]"),
            kappa=pn.widgets.FloatInput.from_param(lab.param.kappa, width=W, step=0.05),
            # "0.00003052" in a notebook's UI font needs about 82 px inside the box
            lam_min=pn.widgets.FloatInput.from_param(lab.param.lam_min, width=W + 12, format="0.[00000000]"),
            heuristic=pn.widgets.Checkbox.from_param(lab.param.heuristic, width=165,
                                                     margin=(5, 10, 5, 10) if compact else (28, 5, 5, 10)),
            grid=pn.widgets.Checkbox.from_param(lab.param.grid, width=215,
                                                margin=(5, 10, 5, 10) if compact else (28, 5, 5, 5)),
        )
        for k, w in wd.items():
            w.css_classes = [f"gaplab-path-{k}"]
        self.widgets = wd
        self.b_start = pn.widgets.Button(label="▶ Start path", color="success", width=115,
                                         margin=(22 if not compact else 0, 5, 5, 10))
        self.b_stop = pn.widgets.Button(label="■ Stop path", color="danger", width=105,
                                        margin=(22 if not compact else 0, 5, 5, 5))
        # every handler runs in the document's next tick (gaplab.app.ticks)
        self.b_start.on_click(handler(lambda e: self._start()))
        self.b_stop.on_click(handler(lambda e: self._stop()))
        # a saved path store (gaplab path --store DIR): rows at once, w_at(λ) read on demand
        self.store_input = pn.widgets.TextInput(placeholder="path store directory (gaplab path --store DIR)",
                                                width=300, css_classes=["gaplab-path-store"],
                                                margin=(22 if not compact else 0, 5, 5, 10))
        self.b_open = pn.widgets.Button(label="Open store", width=100, margin=(22 if not compact else 0, 5, 5, 5))
        self.b_open.on_click(handler(lambda e: self.open_store(self.store_input.value)))
        self.summary = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10), height=42 if not compact else 60,
                                    styles={"font-size": "13px", "overflow": "hidden"},
                                    css_classes=["gaplab-path-summary"])
        self.slider = pn.widgets.FloatSlider(label="Pick λ (log scale, decreasing to the right like the plots): "
                                                   "load its model into the solver",
                                             start=-3, end=3, value=0, step=0.001, disabled=True,
                                             format=CustomJSTickFormatter(code=_LAM_TICK_JS),
                                             sizing_mode="stretch_width", css_classes=["gaplab-path-slider"])
        self.slider.param.watch(handler(self._on_slider), "value_throttled")
        self.b_best = pn.widgets.Button(label="Pick the λ with the lowest test error", width=280,
                                        disabled=True, margin=(5, 10))
        self.b_best.on_click(handler(lambda e: self.pick_best()))
        # a pick far from a solver checkpoint shows w_at(λ) from the store at once; loading its dual
        # point (a replay of the breakpoints since the checkpoint) is then the user's choice
        self.b_load = pn.widgets.Button(label="Load its dual point into the solver", width=280, visible=False,
                                        margin=(5, 10), css_classes=["gaplab-path-load"])
        self.b_load.on_click(handler(lambda e: self.load_pending()))
        self.pick_info = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10),
                                      styles={"font-size": "13px"}, css_classes=["gaplab-path-pick"])
        return wd

    def _layout(self, c, g, t, wd, h):
        """``self.panel``: the lesson page's compact column, or the tab's rows of controls and figures."""
        compact = self.compact
        if compact:
            # lesson page: the gap plot (Proposition 1) full width, cost and test error side by side
            c.height = t.height = 205
            c.title.text = "Cost: cumulative passes and time"
            controls = pn.Column(pn.Row(wd["eps"], wd["kappa"], wd["lam_min"]),
                                 pn.Row(wd["heuristic"], wd["grid"]),
                                 pn.Row(self.b_start, self.b_stop),
                                 pn.Row(self.store_input, self.b_open))
            self.panel = pn.Column(controls, self.summary, figure_pane(g),
                                   pn.Row(figure_pane(c), figure_pane(t),
                                          sizing_mode="stretch_width"),
                                   self.slider, self.b_load, self.pick_info, sizing_mode="stretch_width")
        else:
            # the store widgets on a row of their own: in one row the controls overflow a 1400-px window
            self.store_input.margin, self.store_input.width = (0, 5, 5, 10), 420
            self.b_open.margin = (0, 5, 5, 5)
            # the controls' rows wrap to the width they are given (a notebook's output area beside
            # JupyterLab's file browser is narrower than the 1,050 px they take in one row)
            controls = pn.Row(wd["eps"], wd["kappa"], wd["lam_min"], wd["heuristic"], wd["grid"], self.b_start,
                              self.b_stop, sizing_mode="stretch_width", stylesheets=[WRAP_ROW_CSS],
                              css_classes=["gaplab-path-controls"])
            store = pn.Row(self.store_input, self.b_open, sizing_mode="stretch_width", stylesheets=[WRAP_ROW_CSS])
            # the figures and the pick column share a row's width down to FIG_MIN_WIDTH each (a flex
            # item's automatic minimum is its drawn width: the first layout would stick); the
            # slider's long title wraps instead of widening its column
            for f in (c, g, t):
                f.min_width = FIG_MIN_WIDTH
            self.slider.stylesheets = [".bk-slider-title { white-space: normal; }"]
            pick = pn.Column(self.slider, pn.Row(self.b_best, self.b_load, stylesheets=[WRAP_ROW_CSS]), self.pick_info,
                             sizing_mode="stretch_width", height=h, margin=(10, 0), min_width=FIG_MIN_WIDTH)
            self.panel = pn.Column(controls, store, self.summary,
                                   pn.Row(figure_pane(c), figure_pane(g), sizing_mode="stretch_width"),
                                   pn.Row(figure_pane(t), pick, sizing_mode="stretch_width"),
                                   sizing_mode="stretch_width", stylesheets=[FIT_CSS])

    # ------------------------------------------------------------------ actions
    def _start(self):
        self.lab.start()
        self.update(self.session.snapshot, force=True)

    def _stop(self):
        self.lab.stop()
        self.update(self.session.snapshot, force=True)

    def open_store(self, directory) -> bool:
        """Show the saved path store ``directory`` (see :meth:`PathLab.open_store`)."""
        if not str(directory or "").strip():
            self.session.notify("Open path store: type the store's directory first.", "warning")
            return False
        ok = self.lab.open_store(directory)
        self.update(self.session.snapshot, force=True)
        return ok

    def _on_slider(self, event):
        if event.new is not None:
            self.pick(10.0 ** -float(event.new))

    def pick_best(self) -> bool:
        """Load the breakpoint with the best test metric (lowest test error; highest chunk F1 on
        CoNLL), at its own λ_j."""
        ps = self.lab.snapshot
        col, name, higher = ps.shown_metric
        te = np.asarray(ps.cols[col], dtype=np.float64)
        if not np.isfinite(te).any():
            self.session.notify(f"Pick: no test {name} on this path (no test set, or no breakpoint yet).", "warning")
            return False
        return self.pick(float(ps.cols["lam"][_best_index(te, higher)]))

    def load_pending(self) -> bool:
        """Load the dual point of the last pick whose load was deferred (a long replay)."""
        pend = self.lab.snapshot.pending_load
        if not pend:
            self.session.notify("Pick: nothing to load (pick a λ first).", "warning")
            return False
        ok = self.lab.pick(float(pend["lam"]), load=True)
        self.update(self.session.snapshot, force=True)
        return ok

    def _on_tap(self, event):
        if event.x is not None and event.x > 0:
            self.pick(float(event.x))

    def pick(self, lam: float) -> bool:
        """Load the path's model at λ (clipped to the path's range) into the session's solver."""
        snap = self.lab.snapshot
        lo, hi = snap.lam_range
        if not snap.n_points or not math.isfinite(lo):
            self.session.notify("Pick: compute a path first (Start path).", "warning")
            return False
        lam = float(min(max(lam, lo), hi))
        return self.lab.pick(lam)

    # ------------------------------------------------------------------ drawing
    def update(self, snap, force: bool = False) -> bool:
        ps = self.lab.snapshot
        key = (ps.version, snap.version if snap is not None else None)
        if not force and key == self._key:
            return False
        self._key = key
        self._full = bool(force)
        try:
            self._draw(ps, snap)
        finally:
            self._full = False
        return True

    def _set(self, src, data):
        _set(src, data, full=self._full)

    def _draw(self, ps, snap):
        cols = ps.cols
        lam = np.asarray(cols["lam"], dtype=np.float64)
        lo, hi = ps.lam_range
        n = ps.n_points
        busy = ps.status in ("running", "grid")
        self.b_start.disabled = busy
        self.b_stop.disabled = not busy
        # ---- cost
        self._set(self.cost_src, dict(x=lam, passes=cols["cum_passes"], time=cols["cum_time_s"]))
        gr = ps.grid
        self._set(self.grid_src, dict(x=gr["lam"], passes=gr["cum_passes"], time=gr["cum_time_s"],
                                      test=gr[ps.shown_metric[0]]))
        ymax = max([float(np.nanmax(cols["cum_passes"])) if n else 1.0]
                   + ([float(np.nanmax(gr["cum_passes"]))] if len(gr["lam"]) else []))
        _grow(self.cost.y_range, 0.0, max(ymax, 1.0) * 1.08)
        tmax = float(np.nanmax(cols["cum_time_s"])) if n else 1.0
        _grow(self.cost.extra_y_ranges["time"], 0.0, max(tmax, 1e-3) * 1.08)
        lo_end = lo if math.isfinite(lo) else math.nan
        self._draw_gaps(ps, lam, n, lo_end)
        self._draw_test(ps, lam, n, lo_end)
        self._draw_lambda_axis(ps, n, lo, hi)
        picked = ps.picked if math.isfinite(ps.picked) else None
        for sp in self.pick_spans:
            sp.location = picked
        self._summary(ps, snap, lo, hi)

    def _draw_gaps(self, ps, lam, n, lo_end):
        """The gaps figure: gⱼ (and the true gaps of a heuristic path), the sawtooth, ε and κε; the
        grid's legend entries shown when there is a grid."""
        cols, gr = ps.cols, ps.grid
        # ---- gaps
        exact_path = ps.kind == "eps"
        gap = _pos(cols["gap"])
        true = _pos(cols["exact_gap"]) if not exact_path else np.full(n, np.nan)
        self._set(self.gap_src, dict(x=lam, gap=gap, exact=true))
        sx, sy = _sawtooth(lam, np.asarray(cols["gap"], dtype=np.float64), np.asarray(cols["next_lam"], dtype=np.float64),
                           np.asarray(cols["delta"], dtype=np.float64), lo_end)
        self._set(self.saw_src, dict(x=sx, y=_pos(sy)))
        self.true_pts.visible = not exact_path and bool(np.isfinite(true).any())
        _legend_visible(self.gaps, "true gap", self.true_pts.visible)
        has_grid = bool(len(gr["lam"]))
        _legend_visible(self.cost, "grid", has_grid)
        _legend_visible(self.test, "grid", has_grid)
        self.eps_span.location = ps.eps if math.isfinite(ps.eps) else None
        self.keps_span.location = ps.eps * ps.kappa if math.isfinite(ps.eps) else None
        self.gap_pts.glyph.fill_color = PATH_COLOR
        vals = np.concatenate([gap[np.isfinite(gap)], true[np.isfinite(true)],
                               [ps.eps * ps.kappa, ps.eps] if math.isfinite(ps.eps) else []])
        if vals.size:
            ylo = 10.0 ** math.floor(math.log10(max(vals.min(), GAP_FLOOR)) - 0.05)
            yhi = 10.0 ** math.ceil(math.log10(vals.max()) + 0.05)
            _set_range(self.gaps.y_range, max(ylo, yhi * 1e-6), yhi)
        self.gaps.title.text = ("Gap at each breakpoint vs ε (red: ε; dashed: κε)" if exact_path else
                                "Heuristic path: stale gap sums vs ε (red: ε; dashed: κε)"
                                if ps.kind else "Gap at each breakpoint vs ε")

    def _draw_test(self, ps, lam, n, lo_end):
        """The test-metric figure: its label (CoNLL: chunk F1), the staircase, its range and title."""
        cols, gr = ps.cols, ps.grid
        # ---- test metric (CoNLL: chunk F1; OCR: test error), from the rows only
        col, mname, higher = ps.shown_metric
        label = _metric_label(col, mname)
        if (col, mname, higher) != self._metric_shown:
            self._metric_shown = (col, mname, higher)
            self.test.yaxis.axis_label = label
            self.test_hover.tooltips = [("λ", "@x{0.000e}"), (label, "@y{0.00%}")]
            self.b_best.label = f"Pick the λ with the {'highest' if higher else 'lowest'} {label}"
        te = np.asarray(cols[col], dtype=np.float64)
        tx, ty = _staircase(lam, te, np.asarray(cols["next_lam"], dtype=np.float64), lo_end)
        self._set(self.test_src, dict(x=tx, y=ty))
        ok = np.isfinite(te)
        self._set(self.test_pts, dict(x=lam[ok], y=te[ok]))
        vals = np.concatenate([te[ok], np.asarray(gr[col], dtype=np.float64)])
        vals = vals[np.isfinite(vals)]
        if vals.size:
            top = float(vals.max())
            bot = float(vals.min())
            pad = max(0.05 * (top - bot), 0.005)
            _set_range(self.test.y_range, max(0.0, bot - pad), min(1.0, top + pad))
        has_test = bool(ok.any()) or not n
        self.test.title.text = (f"{label[:1].upper() + label[1:]} vs λ" if has_test else
                                f"{label[:1].upper() + label[1:]} vs λ: this dataset has no test set")

    def _draw_lambda_axis(self, ps, n, lo, hi):
        """The shared λ axis (flipped) and the picker's slider over the path's range."""
        gr = ps.grid
        # ---- shared λ axis (flipped) and the picker
        if n and math.isfinite(lo):
            gl = np.asarray(gr["lam"], dtype=np.float64)
            a = max(hi, float(gl.max()) if gl.size else hi) * 1.6
            b = min(lo, float(gl.min()) if gl.size else lo) / 1.6
            b = min(b, a / 300.0)   # at least 2.5 decades: room for the breakpoints to come
            _set_range(self.x_range, a, b)
            rng = (round(-math.log10(hi), 3), round(-math.log10(lo), 3))
            if rng != self._range:
                self._range = rng
                v = min(max(self.slider.value, rng[0]), rng[1])
                if self.slider.disabled:
                    v = rng[0]
                self.slider.param.update(start=rng[0], end=max(rng[1], rng[0] + 1e-3), value=v)
            if math.isfinite(ps.picked) and ps.picked > 0:
                v = min(max(-math.log10(ps.picked), self.slider.start), self.slider.end)
                if abs(v - self.slider.value) > 1e-9:
                    self.slider.value = v
            self.slider.disabled = False
        else:
            self.slider.disabled = True
            self._range = None

    def _summary(self, ps, snap, lo, hi):
        color, label = _STATUS.get(ps.status, ("#555", ps.status))
        n = ps.n_points
        cols = ps.cols
        parts = [f"<span style='color:{color};font-weight:bold'>● {label}</span>"]
        if n:
            kind = "ε-approximate path" if ps.kind == "eps" else "heuristic path"
            parts.append(f"{kind} on <b>{esc(ps.dataset)}</b> (ε = {ps.eps:g}, κ = {ps.kappa:g})")
            parts.append(f"<b class='gaplab-path-breakpoints'>{n}</b> breakpoints")
            parts.append(f"λ {float(cols['lam'][0]):.4g} → {float(cols['lam'][-1]):.4g}")
            parts.append(f"{float(cols['cum_passes'][-1]):.1f} passes, {float(cols['cum_time_s'][-1]):.2f} s "
                         "<span style='color:#666' title='solver time of the breakpoint solves and their exact "
                         "gap passes; the wait also includes the test error at each breakpoint and the page updates'>"
                         "(solver time)</span>")
            end = ps.end
            if end:
                from .pathlab_snapshot import end_words
                parts.append(f"end: <b class='gaplab-path-end'>{esc(end)}</b> "
                             f"<span style='color:#666'>({esc(end_words(end, ps.kind))})</span>")
            if len(ps.grid["lam"]):
                ng = len(ps.grid["lam"])
                parts.append(f"grid: {ng} λ, {float(ps.grid['cum_passes'][-1]):.1f} passes "
                             f"<span style='color:#666' title='Why the certified path costs more passes: every "
                             f"breakpoint ends with a counted exact gap pass (n oracle calls = 1 pass) that "
                             f"certifies gap ≤ κε, and it certifies every λ in between; the warm-started grid "
                             f"solves only its {ng} λ values and certifies nothing between them.'>"
                             f"(why fewer? hover)</span>")
        head = " · ".join(parts)
        solver = (f"solver at each breakpoint: <i>{esc(ps.solver_label)}</i>" if ps.solver_label else
                  f"solver at each breakpoint: the sidebar's settings (<i>{esc(self._label())}</i>)")
        msg = ps.message if (ps.status in ("error",) or not n) else ""
        self.summary.object = (f"<div>{head}</div><div style='color:#555'>{solver}"
                               f"{' · ' + esc(msg) if msg else ''}</div>")
        col, mname, higher = ps.shown_metric
        te_all = np.asarray(cols[col], dtype=np.float64)
        self.b_best.disabled = not (n and np.isfinite(te_all).any())
        pend = ps.pending_load
        show = bool(n and pend and math.isfinite(ps.picked) and abs(pend["lam"] - ps.picked) <= 1e-12 * ps.picked
                    and not ps.opened)
        if show:
            self.b_load.label = (f"Load its dual point into the solver (replays {pend['replay']} "
                                 f"breakpoint{'s' if pend['replay'] != 1 else ''}, ~{pend['est_s']:.0f} s)")
        if self.b_load.visible != show:
            self.b_load.visible = show
        if n and math.isfinite(lo):
            txt = (f"Drag the slider or click a plot to load <b>w(λ)</b>, any λ in [{lo:.3g}, {hi:.3g}], "
                   + ("from the store (its test numbers are its breakpoint's row; no solver is loaded: the "
                      "store holds no dual point)." if ps.opened else
                      "from the store at once, and its dual point into the solver (warm start from the "
                      "breakpoint's; a long replay from a checkpoint waits for your click)."))
            if ps.store:
                txt += (f"<br><span style='color:#666'>Breakpoints on disk: <code>{esc(ps.store)}</code> "
                        "(the plots read only the store's rows)</span>")
            if np.isfinite(te_all).any():
                b = _best_index(te_all, higher)
                txt += (f"<br>{'Highest' if higher else 'Lowest'} {esc(_metric_label(col, mname))} on the path: "
                        f"<b class='gaplab-path-best'>{100 * te_all[b]:.2f}%</b> at "
                        f"λ<sub>{b}</sub> = {float(cols['lam'][b]):.4g}.")
            if math.isfinite(ps.picked) and 0 <= ps.picked_piece < n:
                txt += self._picked_table(ps, snap)
            self.pick_info.object = txt
        else:
            self.pick_info.object = ("<span style='color:#666'>Start a path: breakpoints appear as they are "
                                     "computed; then pick a λ to inspect its model.</span>")

    def _picked_table(self, ps, snap):
        """HTML of the picked λ: its piece and breakpoint numbers, w(λ) read from the store, the
        dual point (pending, loading or loaded with its exact gap)."""
        cols = ps.cols
        col, mname, higher = ps.shown_metric
        j = ps.picked_piece
        loaded = (snap is not None and snap.origin.startswith("path")
                  and abs(snap.lam - ps.picked) <= 1e-9 * ps.picked)
        rows = [("picked λ", f"<b class='gaplab-path-picked'>{ps.picked:.4g}</b>"),
                ("its piece", f"[{_fmt(float(cols['next_lam'][j]), '.4g')}, {float(cols['lam'][j]):.4g}] "
                              f"(breakpoint j = <span class='gaplab-path-piece'>{j}</span>)"),
                ("g<sub>j</sub> at λ<sub>j</sub>, Δ<sub>j</sub>",
                 f"{_fmt(float(cols['gap'][j]), '.3g')}, {_fmt(float(cols['delta'][j]), '.3g')}"),
                ("test error of w<sub>j</sub>", f"{_fmt(100 * float(cols['test_error'][j]), '.2f')}%")]
        if col != "test_error":
            rows.append((f"test {esc(mname)} of w<sub>j</sub>",
                         f"{_fmt(100 * float(cols[col][j]), '.2f')}%"))
        wi = ps.w_info
        if wi and abs(wi.get("lam", math.nan) - ps.picked) <= 1e-12 * ps.picked:
            rows.append(("w(λ) read from the store",
                         f"<b class='gaplab-path-w-at'>{wi['nnz']:,}</b> non-zeros of d = {wi['d']:,}, "
                         f"‖w‖ = {wi['norm']:.4g}, read in {1000 * wi['read_s']:.0f} ms"))
            rows.append(("test error of w(λ)", f"<b class='gaplab-path-w-error'>"
                                               f"{_fmt(100 * wi['test_error'], '.2f')}%</b>"))
            if wi.get("metric"):
                rows.append((f"test {esc(wi['metric'])} of w(λ)",
                             f"<b class='gaplab-path-w-metric'>{_fmt(100 * wi['test_metric'], '.2f')}%</b>"))
            if ps.opened:
                loaded = False
        pend = ps.pending_load
        if pend and abs(pend.get("lam", math.nan) - ps.picked) <= 1e-12 * ps.picked and not loaded:
            rows.append(("dual point", f"<span class='gaplab-path-pending'>not loaded: it replays "
                                       f"{pend['replay']} breakpoint(s) from the checkpoint at j = "
                                       f"{pend['base']} (about {pend['est_s']:.0f} s); use "
                                       f"<i>Load its dual point</i></span>"))
        if loaded and snap.status != "loading":
            rows.append(("loaded: exact gap at λ", f"<b>{_fmt(snap.exact_gap, '.4g')}</b> "
                         f"(≤ ε = {ps.eps:g})" if ps.kind == "eps" else f"<b>{_fmt(snap.exact_gap, '.4g')}</b>"))
        elif snap is not None and snap.status == "loading":
            rows.append(("loaded", "<i>loading…</i>"))
        body = "".join(f"<tr><td style='padding:0 10px 0 0;color:#555'>{k}</td><td>{v}</td></tr>"
                       for k, v in rows)
        txt = f"<table style='margin-top:6px;border-collapse:collapse'>{body}</table>"
        if loaded and snap.status != "loading":
            txt += ("<div style='color:#2c7fb8'>The <b>Step</b> and <b>Convergence</b> tabs now show this "
                    "model; Run continues from it.</div>")
        return txt

    def _label(self):
        try:
            return self.session.run_label().rsplit(" · λ=", 1)[0]
        except Exception:  # pragma: no cover
            return ""


def _metric_label(col: str, name: str) -> str:
    return "test error" if col == "test_error" else f"test {name}"


def _best_index(vals, higher_is_better: bool) -> int:
    return int(np.nanargmax(vals) if higher_is_better else np.nanargmin(vals))
