"""The Cache & active sets tab: cache hit rate per pass, active-set sizes and the hit/miss
timeline of the last steps (Paper: Sec. 3.2, 3.3)."""
from __future__ import annotations

import numpy as np
import panel as pn
from bokeh.models import BasicTicker, ColumnDataSource, NumeralTickFormatter, Range1d

from .base import _ComparisonPlot, _RunSlots
from .convergence import _no_pass_words
from .figures import _fig, _figure_pane, _lin_range, _set_range, frame_note, legend_above, set_frame_note

class CacheView(_ComparisonPlot):
    """Cache hit rate per pass (runs overlaid), active-set sizes over time, the hit/miss
    timeline of the last steps (Paper: Sec. 3.2, 3.3)."""

    def __init__(self, height=280, stacked: bool = False):
        super().__init__()
        self.fig = _fig(height=height, x_axis_label="effective passes", y_axis_label="cache hits / steps",
                        title="Cache hit rate per pass", y_range=(-0.02, 1.02), x_range=Range1d(0, 1))
        self.slots = _RunSlots(self.fig, [("rate", "line", "pass")])
        self.rate_note = frame_note(self.fig)
        self.asrc = ColumnDataSource(dict(x=[], mean=[], max=[], cache=[]))
        a = _fig(height=height, x_axis_label="effective passes", y_axis_label="atoms per block",
                 title="Active-set sizes |Sᵢ| (current run)", x_range=Range1d(0, 1), y_range=Range1d(0, 2))
        a.line("x", "mean", source=self.asrc, color="#1f77b4", line_width=2.5, legend_label="mean |Sᵢ|")
        a.line("x", "max", source=self.asrc, color="#ff7f0e", line_width=2, legend_label="max |Sᵢ|")
        a.line("x", "cache", source=self.asrc, color="#2ca02c", line_width=2, line_dash="dashed",
               legend_label="mean cached labellings")
        legend_above(a)
        self.active_note = frame_note(a)
        self.afig = a
        self.tsrc = ColumnDataSource(dict(x=[], top=[], color=[]))
        t = _fig(height=130, tools="", toolbar_location=None, x_axis_label="iteration",
                 title="Last steps: cache hit (green) / oracle call (grey)", y_range=(0, 1.05),
                 x_range=Range1d(-0.5, 0.5))
        t.vbar(x="x", top="top", width=0.9, color="color", source=self.tsrc)
        t.yaxis.visible = False
        t.ygrid.visible = False
        # iterations are integers: ticks at whole steps only (a fractional tick rounded by the
        # "0,0" format had labelled the strip 0, 1, 1, 2, 2, 3), no minor ticks between steps
        t.xaxis.ticker = BasicTicker(min_interval=1, num_minor_ticks=0)
        t.xaxis.formatter = NumeralTickFormatter(format="0,0")
        self.tfig = t
        self.info = pn.pane.Markdown("", styles={"font-size": "13px", "overflow": "hidden"}, margin=(0, 10),
                                     height=58, sizing_mode="stretch_width")
        plots = (pn.Column if stacked else pn.Row)(_figure_pane(self.fig), _figure_pane(a),
                                                   sizing_mode="stretch_width")
        self.panel = pn.Column(self.info, plots, _figure_pane(t), sizing_mode="stretch_width")

    def _data(self, cols, snap, current):
        p = cols["pass"]
        return {"rate": dict(x=p["x"], y=p["hit_rate"])}

    def _extra(self, snap, cur):
        if snap.active_history:
            h = np.asarray(snap.active_history, dtype=np.float64)
            self._set(self.asrc, dict(x=h[:, 0], mean=h[:, 1], max=h[:, 2], cache=h[:, 3]))
        else:
            self._set(self.asrc, dict(x=[], mean=[], max=[], cache=[]))
        a = self.asrc.data
        _lin_range(self.afig.x_range, [a["x"]], start=0.0)
        _lin_range(self.afig.y_range, [a["mean"], a["max"], a["cache"]], start=0.0, pad=0.1, empty=(0.0, 2.0))
        _lin_range(self.fig.x_range, self._slot_values("x"), start=0.0)
        rate_drawn = any(np.isfinite(np.asarray(y, dtype=np.float64)).any() for y in self._slot_values("y"))
        set_frame_note(self.rate_note, self.fig, "" if rate_drawn else hit_rate_wait_note(snap))
        set_frame_note(self.active_note, self.afig, "" if len(a["x"]) > 1 else active_sets_wait_note(snap))
        rs = np.asarray(snap.recent_steps)
        if rs.size:
            hit = rs[:, 1] > 0
            self._set(self.tsrc, dict(x=rs[:, 0], top=np.ones(len(rs)),
                                  color=np.where(hit, "#2ca02c", "#bbbbbb").tolist()))
            # the strip spans exactly the steps shown (an auto range had kept 0 after a run)
            _set_range(self.tfig.x_range, float(rs[0, 0]) - 0.5, float(rs[-1, 0]) + 0.5)
        else:
            self._set(self.tsrc, dict(x=[], top=[], color=[]))
            _set_range(self.tfig.x_range, -0.5, 0.5)
        sc = snap.step_counts or {}
        if not snap.n:
            self.info.object = ""
            return
        steps = max(snap.iteration, 1)
        txt = (f"steps {snap.iteration:,} · oracle calls {snap.oracle_calls:,} (incl. gap checks) · "
               f"cache hits {sc.get('cache_hit', 0):,} ({100 * sc.get('cache_hit', 0) / steps:.1f}% of steps) · "
               f"FW {sc.get('fw', 0):,} · away {sc.get('away', 0):,} · pairwise {sc.get('pairwise', 0):,} · "
               f"drop {sc.get('drop', 0):,}")
        if not snap.tracks_atoms:
            txt += ("  \n*Plain BCFW without cache keeps no atoms (only wᵢ): active sets appear with "
                    "pairwise/away steps or the cache.*")
        elif not snap.config.get("cache"):
            txt += "  \n*Cache is off: every step calls the max oracle.*"
        self.info.object = txt



def hit_rate_wait_note(snap) -> str:
    """What an empty cache-hit-rate plot will show and when (lines split by "\\n"). Paper:
    Sec. 3.3 (cache hit criterion), Alg. 5."""
    if not snap.n:
        return ""
    head = _no_pass_words(snap) if not any(r["kind"] == "pass" for r in snap.trace) else "No pass to draw yet."
    text = f"{head}\nThe cache hit rate (cache hits / steps) is drawn\nonce per effective pass (n max-oracle calls)."
    if not snap.config.get("cache"):
        text += "\nThe cache is off: every step calls the max oracle."
    return text


def active_sets_wait_note(snap) -> str:
    """What an empty active-set plot will show and when (Paper: Sec. 3.2, 3.3)."""
    if not snap.n:
        return ""
    if not snap.tracks_atoms:
        return ("Plain BCFW without cache keeps no atoms (only wᵢ):\nactive sets Sᵢ appear with "
                "pairwise or away\nsteps, or with the cache.")
    return (f"{_no_pass_words(snap)}\nThe active-set sizes |Sᵢ| are recorded after\n"
            "each effective pass (pass 0: one atom per block).")
