"""The Convergence tab's plots: duality gap vs passes or time, test error at the gap checks,
primal and dual objectives (Paper: Fig. 1a, 3; Sec. 2.3)."""
from __future__ import annotations

import math

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, LabelSet, Range1d

from .base import _Base, _ComparisonPlot, _RunSlots, trace_columns
from .figures import GAP_FLOOR, _fig, _figure_pane, _log_range

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

