"""The Step tab's per-block bars: the gap estimates ĝᵢ coloured by staleness, the exact block
gaps of the last gap check and the sampling probabilities of the next draw (Paper: Sec. 3.1)."""
from __future__ import annotations

import math

import numpy as np
import panel as pn
from bokeh.models import (ColorBar, ColumnDataSource, HoverTool, LinearColorMapper, PrintfTickFormatter,
                          Range1d, Span)
from bokeh.palettes import Viridis256

from ..wording import count
from .base import _Base
from .figures import GAP_FLOOR, LiveHTML, _bold, _fig, _figure_pane, _fmt, _set_range, legend_above

BAR_MIN_PX = 4.5           # per-block bars: the narrowest bar drawn at a 720-px plot frame


class BlockGapsView(_Base):
    """Per-block gap estimates ĝᵢ as bars coloured by staleness, exact block gaps overlaid when
    known, and the sampling probabilities of the next draw (Paper: Sec. 3.1)."""

    DECADES = 5
    RUNNING_MIN_INTERVAL_S = 0.15   # while a run goes: every other 100 ms tick, 5 redraws per
    #                                 second (the browser's canvas work competes with the solver)
    # more blocks than this are drawn in bins of ⌈n/MAX_BARS⌉ (the largest ĝᵢ of each bin): at a
    # 720-px plot frame (the Step tab at 1280×720) every bar is >= 4.6 px wide, readable from the
    # back row; one bar per block (626 for OCR) was 1-2 px
    MAX_BARS = 140

    def __init__(self, height=300, prob_height=160, name=None, max_bars=None):
        super().__init__()
        if max_bars is not None:
            self.MAX_BARS = int(max_bars)
        self.src = ColumnDataSource(dict(x=[], w=[], top=[], bottom=[], stale=[], gap=[], lo=[], hi=[], how=[]),
                                    name=name)
        # the last block's bar (or bin), highlighted at least one bar wide (a 1-px line was lost
        # among hundreds of bars)
        self.last_src = ColumnDataSource(dict(left=[], right=[]), name=f"{name}_last" if name else None)
        self.exact = ColumnDataSource(dict(x=[], y=[]))
        self.prob = ColumnDataSource(dict(x=[], w=[], top=[]))
        self._info_t = 0.0
        self.mapper = LinearColorMapper(palette=list(reversed(Viridis256)), low=0, high=1,
                                        nan_color="#cccccc")
        # explicit ranges, moved only when the data leave them (cheaper redraws than auto-ranging)
        f = _fig(height=height, y_axis_type="log", x_axis_label=None, y_axis_label="block gap ĝᵢ",
                 title="Per-block gap estimates", x_range=Range1d(-1, 1), y_range=Range1d(1e-6, 1))
        bars = f.vbar(x="x", top="top", bottom="bottom", width="w", source=self.src,
                      fill_color={"field": "stale", "transform": self.mapper}, line_color=None)
        f.scatter("x", "y", source=self.exact, marker="dash", size=9, color="#d62728", line_width=2,
                  legend_label="exact gᵢ at the last gap check")
        f.legend.location = "top_right"
        legend_above(f)
        # above or below the pointer: Bokeh keeps such a box inside the window (beside it, a box
        # too wide for the right of a bar in the plot's left half went left, past the window's edge)
        f.add_tools(HoverTool(renderers=[bars], attachment="vertical",
                              tooltips=[("blocks", "@lo{0,0}–@hi{0,0}"), ("ĝᵢ (max)", "@gap{0.000e}"),
                                        ("staleness (iterations)", "@stale{0,0}"), ("drawn as", "@how")]))
        cb = ColorBar(color_mapper=self.mapper, title="staleness: iterations since ĝᵢ was computed"
                      if max_bars is None else "staleness",
                      title_text_font_size="11px", label_standoff=6, width=12,
                      major_label_text_font_size="11px", location=(0, 0))
        f.add_layout(cb, "right")
        self.span = Span(location=-10, dimension="height", line_color="#d62728", line_width=1.5,
                         line_alpha=0.5, line_dash="dashed")
        f.add_layout(self.span)
        f.vstrip(x0="left", x1="right", source=self.last_src, fill_color="#d62728", fill_alpha=0.2,
                 line_color="#d62728", line_alpha=0.6, line_width=1)
        self.fig = f
        g = _fig(height=prob_height, x_axis_label="block i (training example)", y_axis_label="P(i)",
                 x_range=f.x_range, title="Sampling probabilities of the next draw", y_range=Range1d(0, 1))
        g.vbar(x="x", top="top", width="w", source=self.prob, color="#2c7fb8")
        g.yaxis.formatter = PrintfTickFormatter(format="%.2g")
        g.yaxis.ticker.desired_num_ticks = 3
        self.span2 = Span(location=-10, dimension="height", line_color="#d62728", line_width=1.5,
                          line_alpha=0.5, line_dash="dashed")
        g.add_layout(self.span2)
        g.vstrip(x0="left", x1="right", source=self.last_src, fill_color="#d62728", fill_alpha=0.2,
                 line_color="#d62728", line_alpha=0.6, line_width=1)
        g.min_border_right = f.min_border_right
        self.pfig = g
        # keep the two x axes aligned: the probability plot gets an invisible colorbar-sized pad
        pad = ColorBar(color_mapper=LinearColorMapper(palette=["#ffffff"], low=0, high=1),
                       width=12, major_label_text_alpha=0, major_tick_line_alpha=0,
                       bar_line_alpha=0, title="", title_text_alpha=0, label_standoff=6,
                       major_label_text_font_size="11px", location=(0, 0))
        g.add_layout(pad, "right")
        # fixed heights: text that changes 10x/s must not make the browser re-layout the page
        self.info = LiveHTML("", styles={"font-size": "13px", "overflow": "hidden", "line-height": "1.45"},
                             margin=(4, 10, 0, 10), height=46, sizing_mode="stretch_width")
        self.panel = pn.Column(self.info, _figure_pane(f), _figure_pane(g), sizing_mode="stretch_width")

    def _draw(self, snap):
        n = snap.n
        if not n:
            self._set(self.src, dict(x=[], w=[], top=[], bottom=[], stale=[], gap=[], lo=[], hi=[], how=[]))
            self._set(self.last_src, dict(left=[], right=[]))
            self._set(self.exact, dict(x=[], y=[]))
            self._set(self.prob, dict(x=[], w=[], top=[]))
            self.info.object = ""
            # no x range of the previous dataset is kept
            _set_range(self.fig.x_range, -1, 1)
            _set_range(self.pfig.y_range, 0.0, 1.0)
            self.fig.title.text = (f"Per-block gap estimates ĝᵢ ({snap.dataset}: loading…)" if snap.status == "loading"
                                   else "Per-block gap estimates ĝᵢ")
            return
        g = np.asarray(snap.gap_estimates, dtype=np.float64)
        known = np.isfinite(g)
        pos = g[known & (g > 0)]
        # at most DECADES decades below the largest estimate; smaller ones are stubs at the floor
        if pos.size:
            floor = max(10.0 ** math.floor(math.log10(pos.min())),
                        10.0 ** (math.floor(math.log10(pos.max())) - self.DECADES), GAP_FLOOR)
        else:
            floor = 1e-6
        stale = np.where(np.asarray(snap.staleness) >= 0, snap.staleness, np.nan).astype(np.float64)
        exact = (np.asarray(snap.exact_block_gaps, dtype=np.float64)
                 if snap.exact_block_gaps is not None else None)
        prob = np.asarray(snap.probabilities, dtype=np.float64)
        b, x, lo, hi, gb, sb, eb, pb = _bins(n, self.MAX_BARS, g, known, stale, exact, prob)
        nb = len(x)
        width = np.full(nb, 0.9 * b)
        top = np.where(np.isfinite(gb), np.maximum(gb, floor), np.nan)
        # short: the hover box is as wide as its longest line (it must fit beside a bar)
        how = f"a bin of {count(b)} blocks (max ĝᵢ, mean staleness)" if b > 1 else "one bar per block"
        self._set(self.src, dict(x=x, w=width, top=top, bottom=np.full(nb, floor), stale=sb, gap=gb, lo=lo, hi=hi,
                                 how=[how] * nb))
        hi_st = float(np.nanmax(sb)) if np.isfinite(sb).any() else 1.0
        self.mapper.high = max(hi_st, 1.0)
        if eb is not None:
            self._set(self.exact, dict(x=x, y=np.where(np.isfinite(eb), np.maximum(eb, floor), np.nan)))
        else:
            self._set(self.exact, dict(x=[], y=[]))
        self._set(self.prob, dict(x=x, w=width, top=pb))
        binned = f" — {count(nb)} bins of {count(b)} blocks (max ĝᵢ, mean staleness, summed P)" if b > 1 else ""
        self._ranges(n, b, floor, gb, pb)
        self.pfig.yaxis.axis_label = "P(bin)" if b > 1 else "P(i)"
        last = snap.last_step.block if snap.last_step is not None else -10
        self.span.location = last
        self.span2.location = last
        if last >= 0:   # the last block's bar (its bin), highlighted one bar wide
            first = (last // b) * b
            self._set(self.last_src, dict(left=[first - 0.5], right=[min(first + b, n) - 0.5]))
        else:
            self._set(self.last_src, dict(left=[], right=[]))
        if self.MAX_BARS < BlockGapsView.MAX_BARS:   # projector: a short title
            self.fig.title.text = f"Block gap estimates ĝᵢ (colour: staleness) — bins of {count(b)}" if b > 1 else \
                "Block gap estimates ĝᵢ (colour: staleness)"
        else:
            self.fig.title.text = (f"Per-block gap estimates ĝᵢ, coloured by staleness ({snap.dataset}, n = {count(n)})"
                                   f"{binned}")
        self.pfig.title.text = (f"Sampling probabilities of the next draw ({snap.config.get('sampling', '')}"
                                f"{' p=' + format(snap.config.get('gap_power', 1), 'g') if snap.config.get('sampling') == 'gap' else ''})")
        self.info.object = _info_line(snap, int(np.sum(~known)), b)


def _bins(n: int, max_bars: int, g, known, stale, exact, prob):
    """The bars of n blocks, at most ``max_bars``: bins of b blocks hold their largest estimate (of the
    ``known`` ones), mean staleness (of the known ones), largest exact block gap and summed
    probability. Returns b, the bars' centres, first and last blocks, and those four per bar."""
    b = max(1, math.ceil(n / max_bars))
    if b == 1:
        x = np.arange(n, dtype=np.float64)
        lo = hi = np.arange(n)
        gb, sb, eb, pb = np.where(known, g, np.nan), stale, exact, prob
    else:  # bins of b blocks: the largest estimate, the mean staleness, the summed probability
        starts = np.arange(0, n, b)
        lo, hi = starts, np.minimum(starts + b, n) - 1
        x = (lo + hi) / 2.0
        gmax = np.maximum.reduceat(np.where(known, g, -np.inf), starts)
        gb = np.where(np.isfinite(gmax), gmax, np.nan)
        ok = np.isfinite(stale)
        cnt = np.add.reduceat(ok.astype(np.float64), starts)
        ssum = np.add.reduceat(np.where(ok, stale, 0.0), starts)
        sb = np.where(cnt > 0, ssum / np.maximum(cnt, 1), np.nan)
        if exact is not None:
            emax = np.maximum.reduceat(np.where(np.isfinite(exact), exact, -np.inf), starts)
            eb = np.where(np.isfinite(emax), emax, np.nan)
        else:
            eb = None
        pb = np.add.reduceat(prob, starts)
    return b, x, lo, hi, gb, sb, eb, pb


def _info_line(snap, unvisited: int, b: int = 1) -> str:
    """The line above the bars: heuristic and exact gap, unvisited blocks, χ(ĝ)³ (HTML)."""
    parts = [f"**heuristic gap** Σᵢ ĝᵢ = {_fmt(snap.heuristic_gap)}"]
    if math.isfinite(snap.exact_gap):
        ago = snap.iteration - snap.exact_block_gaps_iteration
        parts.append(f"**exact gap** g(α) = {_fmt(snap.exact_gap)} ({ago:,} iterations ago)")
    if unvisited:
        parts.append(f"{count(unvisited)} block(s) never visited (ĝᵢ = +∞, not drawn as a bar; gap "
                     "sampling draws them first, uniformly)")
    if math.isfinite(snap.chi_cubed) and not unvisited:
        parts.append(f"χ(ĝ)³ = {snap.chi_cubed:.2f} (Thm. 2 divides the bound's curvature term, not h₀, "
                     "by χ(g)³ of the exact gaps, curvatures equal; here from the stale ĝᵢ)")
    parts.append("red: last block" + (f" (its bin of {count(b)})" if b > 1 else ""))
    return _bold(" · ".join(parts))


def _nice_up(v: float) -> float:
    """The smallest of 1, 2, 5 × 10^k that is >= v (v > 0)."""
    k = math.floor(math.log10(v))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10.0 ** k >= v * (1 - 1e-12):
            return m * 10.0 ** k
    return 10.0 ** (k + 1)



def _block_ranges(view, n, b, floor, gb, pb):
    pad = 0.5 * b + 0.5
    _set_range(view.fig.x_range, -pad, n - 1 + pad)
    finite = gb[np.isfinite(gb)]
    top = 10.0 ** math.ceil(math.log10(max(finite.max(), floor))) if finite.size else 1.0
    top = max(top, floor * 10)
    _set_range(view.fig.y_range, floor, top)
    pmax = float(np.max(pb)) if len(pb) else 1.0
    # a probability never exceeds 1: the axis stops there (max-gap sampling puts all of it on
    # one block; rounding 1.05 up had drawn the axis to 2)
    _set_range(view.pfig.y_range, 0.0, min(_nice_up(pmax * 1.05), 1.0) if pmax > 0 else 1.0)


BlockGapsView._ranges = _block_ranges
