"""The views' common machinery: a view draws a snapshot only when it is new (:class:`_Base`);
comparison plots overlay the current run and the frozen comparison runs on one figure, one
legend entry per run (:class:`_RunSlots`, :class:`_ComparisonPlot`); :func:`trace_columns`
turns a run's trace into plot columns."""
from __future__ import annotations

import math

import numpy as np
from bokeh.core.properties import value
from bokeh.models import ColumnDataSource, Legend, LegendItem

from .figures import CURRENT_COLOR, LEGEND_ROW_PX, MAX_SLOTS, RUN_COLORS, _pos, _set, legend_samples

def trace_columns(trace, manual=()):
    """Columns of a run's trace: heuristic gap per pass and exact values at gap checks.

    Returns dict with "pass" -> dict(x passes, t time, heur, dual, hit_rate) and
    "check" -> dict(x, t, gap, primal, dual, test) (periodic and manual checks, in order)."""
    passes = [r for r in trace if r["kind"] == "pass"]
    checks = sorted([r for r in trace if r["kind"] == "gap_check"] + list(manual),
                    key=lambda r: (r["oracle_calls"], r["iteration"]))

    def col(rs, key):
        return np.array([r.get(key, math.nan) for r in rs], dtype=np.float64)

    px = col(passes, "effective_passes")
    hits = col(passes, "cache_hit")
    iters = col(passes, "iteration")
    if passes:
        dh = np.diff(np.concatenate([[0.0], hits]))
        di = np.diff(np.concatenate([[0.0], iters]))
        rate = np.where(di > 0, dh / np.maximum(di, 1), np.nan)
    else:
        rate = np.zeros(0)
    return {
        "pass": dict(x=px, t=col(passes, "wall_time_s"), heur=_pos(col(passes, "heuristic_gap")),
                     dual=col(passes, "dual"), hit_rate=rate),
        "check": dict(x=col(checks, "effective_passes"), t=col(checks, "wall_time_s"),
                      gap=_pos(col(checks, "exact_gap")), primal=col(checks, "primal"),
                      dual=col(checks, "dual"), test=col(checks, "test_error")),
    }



class _Base:
    """A view: ``panel`` (what to show) and ``update(snapshot)`` (cheap; skips old versions)."""

    def __init__(self):
        self._version = None
        self._cmp_key = None

    def update(self, snap, force: bool = False) -> bool:
        """Draw ``snap`` if it is new. ``force`` redraws and resends every column (used when
        the browser may not hold the current data: page load, tab switch)."""
        if not force and snap.version == self._version:
            return False
        self._version = snap.version
        self._full = bool(force)
        try:
            self._draw(snap)
        finally:
            self._full = False
        return True

    _full = False

    def _set(self, src, data):
        _set(src, data, full=self._full)

    def _draw(self, snap):  # pragma: no cover - abstract
        raise NotImplementedError


class _RunSlots:
    """Current run (slot 0) + up to MAX_SLOTS comparison runs on one figure, legend kept in
    sync. Comparison slots (renderers, sources, legend items) are added when first needed and
    reused afterwards."""

    def __init__(self, fig, kinds):
        # kinds: list of (name, glyph, which) with glyph in {"line", "scatter"}
        self.fig = fig
        self.kinds = kinds
        self.slots = []
        self.items = []
        self._labels = []
        # below the plot, never over the data; two columns, the figure grows a row at a time
        self.legend = Legend(items=[], click_policy="hide", label_text_font_size="11px",
                             background_fill_alpha=0.0, border_line_alpha=0.0, ncols=2,
                             spacing=0, padding=2, margin=2, label_height=14, glyph_height=14)
        fig.add_layout(self.legend, "below")
        self._height = fig.height
        self._add_slot()

    def _add_slot(self):
        s = len(self.slots)
        color = CURRENT_COLOR if s == 0 else RUN_COLORS[(s - 1) % len(RUN_COLORS)]
        srcs, rends = {}, []
        for name, glyph, _which in self.kinds:
            src = ColumnDataSource(dict(x=[], y=[]))
            if glyph == "line":
                r = self.fig.line("x", "y", source=src, color=color, line_width=2.5 if s == 0 else 2,
                                  line_dash="solid" if s == 0 else "dashed", alpha=0.9)
            else:
                r = self.fig.scatter("x", "y", source=src, color=color, size=8 if s == 0 else 7,
                                     marker="circle" if s == 0 else "square", alpha=0.9)
            srcs[name] = src
            rends.append(r)
        self.slots.append(srcs)
        item = LegendItem(label=value(""), renderers=rends, visible=False)
        self.items.append(item)
        self.legend.items = list(self.items)
        legend_samples(self.fig)     # the entry's line/marker sample before the run has a point
        self._labels.append(None)

    def set(self, slot, label, data, full=False):
        while slot >= len(self.slots):
            self._add_slot()
        srcs = self.slots[slot]
        for name, cols in data.items():
            _set(srcs[name], cols, full=full)
        if self._labels[slot] != label:
            self._labels[slot] = label
            item = self.items[slot]
            item.label = value(label or "")
            item.visible = bool(label)
            self._fit()

    def _fit(self):
        """Grow the figure by the legend's rows (the plot frame keeps its height)."""
        shown = sum(1 for it in self.legend.items if it.visible)
        rows = math.ceil(shown / 2)
        h = self._height + LEGEND_ROW_PX * rows
        if self.fig.height != h:
            self.fig.height = h

    def clear_from(self, slot):
        for s in range(slot, len(self.slots)):
            if self._labels[s] is not None:
                self.set(s, None, {k: dict(x=[], y=[]) for k in self.slots[s]})


class _ComparisonPlot(_Base):
    """Base for plots overlaying the current run and the comparison runs."""

    RUNNING_MIN_INTERVAL_S = 0.25   # curves grow once per pass: ~3 redraws per second are plenty

    def __init__(self):
        super().__init__()
        self._cache = {}

    def _columns(self, run):
        key = run.index
        if key not in self._cache:
            self._cache[key] = trace_columns(run.trace, run.manual_checks)
        return self._cache[key]

    def _draw(self, snap):
        cur = trace_columns(snap.trace, snap.manual_checks)
        full = self._full
        self.slots.set(0, current_label(snap), self._data(cur, snap, True), full)
        runs = [r for r in snap.comparison if r.dataset == snap.dataset][-MAX_SLOTS:]
        for j, run in enumerate(runs, start=1):
            self.slots.set(j, run.label, self._data(self._columns(run), snap, False), full)
        self.slots.clear_from(len(runs) + 1)
        live = {r.index for r in snap.comparison}
        for k in list(self._cache):
            if k not in live:
                del self._cache[k]
        self._extra(snap, cur)

    def _extra(self, snap, cur):
        pass

    def _slot_values(self, col):
        """Column ``col`` of every drawn run (all sources of all slots)."""
        return [src.data.get(col, []) for slot in self.slots.slots for src in slot.values()]


def current_label(snap) -> str:
    """The legend entry of the current run: its settings, and for a run whose settings were
    switched mid-run with α kept each part in order ("current: uniform sampling → gap sampling
    (now BCFW, gap …)"): one curve drawn under several settings names them all. "" without data."""
    if not snap.n:
        return ""
    marks = getattr(snap, "switches", ())
    if not marks:
        return f"current: {snap.label}"
    parts = [marks[0][4]] + [m[3] for m in marks]
    return f"current: {' → '.join(parts)} (now {snap.label})"
