"""The Convergence tab's plots: duality gap vs passes or time, test error at the gap checks,
primal and dual objectives (Paper: Fig. 1a, 3; Sec. 2.3)."""
from __future__ import annotations

import math

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, LabelSet, Range1d, Title

from .base import _Base, _ComparisonPlot, _RunSlots, trace_columns
from .figures import (GAP_FLOOR, MAX_SLOTS, _fig, _figure_pane, _lin_range, _log_range, frame_note, legend_above,
                      legend_samples, set_frame_note)

NORMALISED_LABEL = "duality gap / primal P(w) (normalised)"


def relative_gap(gap, primal):
    """``gap / primal`` elementwise (NaN where the primal is not positive or not finite), for a
    log axis (values at least GAP_FLOOR).

    Parameters
    ----------
    gap, primal : array_like of float64, same shape
        Duality gaps g(α) >= 0 and primal objectives P(w) > 0 (Paper: Sec. 2.3, Eq. (5)).

    Returns
    -------
    ndarray of float64
    """
    g = np.asarray(gap, dtype=np.float64)
    p = np.asarray(primal, dtype=np.float64)
    ok = np.isfinite(g) & np.isfinite(p) & (p > 0)
    out = np.full(g.shape, np.nan)
    out[ok] = np.maximum(g[ok] / p[ok], GAP_FLOOR)
    return out


class GapView(_ComparisonPlot):
    """Duality gap vs effective passes (or vs solver time): exact gaps at gap checks (points),
    heuristic gap Σ ĝᵢ after every pass (line); log scale; runs overlaid (Paper: Fig. 1a, 3)."""

    def __init__(self, x="passes", height=330, title=None, name=None):
        super().__init__()
        self.xkey = "x" if x == "passes" else "t"
        self.normalised = False
        xlabel = "effective passes (oracle calls / n)" if x == "passes" else "solver time (s)"
        self.fig = _fig(height=height, y_axis_type="log", x_axis_label=xlabel,
                        y_axis_label="duality gap", y_range=Range1d(1e-6, 1), x_range=Range1d(0, 1),
                        title=title or ("Duality gap vs effective passes" if x == "passes"
                                        else "Duality gap vs time"))
        self.slots = _RunSlots(self.fig, [("heur", "line", "pass"), ("exact", "scatter", "check")])
        # notes on the plot, above it (never over the data): runs at different λ; why a
        # heuristic-gap line starts late (ĝᵢ = ∞ until every block is visited)
        self.lam_note = Title(text="", text_font_size="11px", text_font_style="italic", text_color="#b35806")
        self.late_note = Title(text="", text_font_size="11px", text_font_style="italic", text_color="#555555")
        self.fig.add_layout(self.lam_note, "above")
        self.fig.add_layout(self.late_note, "above")
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
        legend_samples(self.fig)     # the ★ sample before the heuristic gap is finite
        self.wait_note = frame_note(self.fig)
        self.fig.add_tools(HoverTool(tooltips=[("x", "@x{0.00}"), ("gap", "@y{0.000e}")]))
        self.note = pn.pane.Markdown(
            "Points: exact duality gap (a gap-check pass, n oracle calls). Line: heuristic gap "
            "Σᵢ ĝᵢ of the stale block-gap estimates after each pass. ★: the heuristic gap now.",
            styles={"font-size": "12px", "color": "#555"}, margin=(0, 10))
        self.panel = pn.Column(_figure_pane(self.fig), self.note, sizing_mode="stretch_width")

    def set_normalised(self, on: bool) -> None:
        """Draw gap / primal (relative gaps, comparable across λ) or the gap itself; the y-axis
        label says which. Takes effect at the next ``update``."""
        on = bool(on)
        if on == self.normalised:
            return
        self.normalised = on
        self.fig.yaxis.axis_label = NORMALISED_LABEL if on else "duality gap"
        self._version = None     # redraw with the other values

    def _data(self, cols, snap, current):
        p, c = cols["pass"], cols["check"]
        heur, gap = p["heur"], c["gap"]
        if self.normalised:
            # exact checks: g(α) / P(w(α)); the heuristic line: ĝ / (D(α) + ĝ), the primal the
            # heuristic gap stands for (P = D + g, Paper: Sec. 2.3)
            heur = relative_gap(heur, p["dual"] + heur)
            gap = relative_gap(gap, c["primal"])
        return {"heur": dict(x=p[self.xkey], y=heur), "exact": dict(x=c[self.xkey], y=gap)}

    def _extra(self, snap, cur):
        if snap.n and math.isfinite(snap.heuristic_gap):
            x = snap.effective_passes if self.xkey == "x" else snap.solver_time_s
            y = max(snap.heuristic_gap, GAP_FLOOR)
            if self.normalised:
                y = float(relative_gap([y], [snap.dual + y])[0])
            self._set(self.now, dict(x=[x], y=[y]) if math.isfinite(y) else dict(x=[], y=[]))
        else:
            self._set(self.now, dict(x=[], y=[]))
        marks = getattr(snap, "switches", ())
        self._set(self.switches, dict(x=[m[0] if self.xkey == "x" else m[1] for m in marks],
                                      label=[f"→ {m[3]}" for m in marks]))
        ys = [src.data.get("y", []) for slot in self.slots.slots for src in slot.values()]
        _log_range(self, self.fig.y_range, ys + [self.now.data.get("y", [])])
        _lin_range(self.fig.x_range, self._slot_values("x") + [self.now.data.get("x", [])], start=0.0)
        runs = [r for r in snap.comparison if r.dataset == snap.dataset][-MAX_SLOTS:]
        self.lam_note.text = _lam_note(snap, runs)
        self.late_note.text = _late_note(snap, [cur] + [self._columns(r) for r in runs])
        drawn = any(np.isfinite(np.asarray(y, dtype=np.float64)).any() for y in ys + [self.now.data.get("y", [])])
        set_frame_note(self.wait_note, self.fig, "" if drawn else gap_wait_note(snap, self.xkey == "x"))


def _checks_words(snap) -> str:
    """When exact gaps are computed: "every 10 passes", or never (check ∞)."""
    gc = float(snap.config.get("gap_check", 10))
    if math.isinf(gc):
        return "never (exact gap check ∞; the Exact gaps button computes one)"
    return f"every {gc:g} passes" if gc != 1 else "after every pass"


def _no_pass_words(snap) -> str:
    return f"No pass finished yet: step {snap.iteration:,} of the first n = {snap.n:,}."


def gap_wait_note(snap, passes: bool = True) -> str:
    """What an empty duality-gap plot will show and when (lines split by "\\n"); "" without a
    dataset. Paper: Sec. 3.1 (gap estimates ĝᵢ), Sec. 4 ("an effective pass consists in n
    calls to the max oracle"), App. D (exact gap checks)."""
    if not snap.n:
        return ""
    passed = any(r["kind"] == "pass" for r in snap.trace)
    head = "No finite gap to draw yet." if passed else _no_pass_words(snap)
    axis = "per effective pass (n max-oracle calls)" if passes else "against solver time"
    return (f"{head}\nThe duality gap is plotted {axis}:\n"
            f"the heuristic gap Σᵢ ĝᵢ after each pass, once every\n"
            f"block has been visited (ĝᵢ = ∞ before);\n"
            f"the exact gap g(α) at each gap check: {_checks_words(snap)}.")


def objectives_wait_note(snap) -> str:
    """What an empty primal/dual plot will show and when (Paper: Sec. 2.3)."""
    if not snap.n:
        return ""
    return (f"{_no_pass_words(snap)}\nThe dual D(α) is drawn after each effective pass,\n"
            f"the primal P(w) at each exact gap check\n({_checks_words(snap)}).")


def test_error_wait_note(snap) -> str:
    """What an empty test-error plot will show and when."""
    if not snap.n:
        return ""
    if not snap.has_test:
        return "This dataset has no test set."
    return f"No gap check yet: the test error is computed\nat each exact gap check ({_checks_words(snap)})."


def _lam_note(snap, runs) -> str:
    """A note when the drawn runs have different λ (each legend label carries its λ)."""
    lams = sorted({float(r.lam) for r in runs if math.isfinite(getattr(r, "lam", math.nan))}
                  | ({float(snap.lam)} if snap.n else set()))
    if len(lams) < 2:
        return ""
    return (f"Runs at different λ ({', '.join(f'{v:g}' for v in lams)}; λ in each legend entry): "
            "each solves its own problem, so compare how fast gaps fall, not their levels "
            "(or tick \"normalised (gap / primal)\")")


def _late_note(snap, cols) -> str:
    """Why a heuristic-gap line starts after pass 0: ĝᵢ = ∞ until every block is visited."""
    late = any(len(c["pass"]["heur"]) and not np.isfinite(c["pass"]["heur"][0]) for c in cols)
    if not late or not snap.n:
        return ""
    return (f"A heuristic-gap line starts once every block is visited (ĝᵢ = ∞ before): uniform sampling "
            f"needs about ln n + 0.58 ≈ {math.log(snap.n) + 0.5772:.1f} passes for n = {snap.n:,}, "
            "gap sampling one")


class TestErrorView(_ComparisonPlot):
    """Test error at the gap checks (token error: letters for OCR), runs overlaid."""

    def __init__(self, height=300):
        super().__init__()
        self.fig = _fig(height=height, x_axis_label="effective passes", y_axis_label="test error (%)",
                        title="Test error at gap checks", x_range=Range1d(0, 1), y_range=Range1d(0, 100))
        self.slots = _RunSlots(self.fig, [("line", "line", "check"), ("pts", "scatter", "check")])
        self.wait_note = frame_note(self.fig)
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
        _lin_range(self.fig.x_range, self._slot_values("x"), start=0.0)
        _lin_range(self.fig.y_range, self._slot_values("y"), pad=0.1, empty=(0.0, 100.0))
        drawn = any(len(y) for y in self._slot_values("y"))
        set_frame_note(self.wait_note, self.fig, "" if drawn else test_error_wait_note(snap))


class PrimalDualView(_Base):
    """Primal objective (at exact gap checks) and dual objective (after every pass) of the
    current run; their difference is the duality gap (Paper: Sec. 2.3)."""

    RUNNING_MIN_INTERVAL_S = 0.25

    def __init__(self, height=300):
        super().__init__()
        self.fig = _fig(height=height, x_axis_label="effective passes", y_axis_label="objective",
                        title="Primal and dual objectives (current run)", x_range=Range1d(0, 1),
                        y_range=Range1d(0, 1))
        self.dual = ColumnDataSource(dict(x=[], y=[]))
        self.primal = ColumnDataSource(dict(x=[], y=[]))
        self.fig.line("x", "y", source=self.dual, color="#1f77b4", line_width=2.5, legend_label="dual D(α) (every pass)")
        self.fig.line("x", "y", source=self.primal, color="#d62728", line_width=2, line_dash="dashed")
        self.fig.scatter("x", "y", source=self.primal, color="#d62728", size=8, legend_label="primal P(w) (gap checks)")
        legend_above(self.fig)
        self.wait_note = frame_note(self.fig)
        self.panel = _figure_pane(self.fig)

    def _draw(self, snap):
        cols = trace_columns(snap.trace, snap.manual_checks)
        p, c = cols["pass"], cols["check"]
        self._set(self.dual, dict(x=p["x"], y=p["dual"]))
        ok = np.isfinite(c["primal"])
        self._set(self.primal, dict(x=c["x"][ok], y=c["primal"][ok]))
        _lin_range(self.fig.x_range, [p["x"], c["x"][ok]], start=0.0)
        _lin_range(self.fig.y_range, [p["dual"], c["primal"][ok]], pad=0.08)
        drawn = bool(np.isfinite(p["dual"]).any() or ok.any())
        set_frame_note(self.wait_note, self.fig, "" if drawn else objectives_wait_note(snap))

