"""Drawing helpers of the regularization-path tab (:mod:`gaplab.app.path_tab`): Proposition 1's
sawtooth of the gap between breakpoints, the staircase of the test metric of a piecewise-constant
path, and the legends and ranges of its Bokeh figures.

Paper: Sec. 4 (Proposition 1), App. K.
"""
from __future__ import annotations

import math

import numpy as np

from .views import GAP_FLOOR, legend_above


def _sawtooth(lam, gap, nxt, delta, lo_end):
    """Proposition 1 on each piece: the gap of the breakpoint's rescaled dual point at λ in
    [λ_{j+1}, λ_j] is g_j + (1 − λ/λ_j)Δ_j (NaN-separated segments)."""
    xs, ys = [], []
    for lj, gj, nj, dj in zip(lam, gap, nxt, delta):
        if not (math.isfinite(gj) and math.isfinite(dj)):
            continue
        lo = nj if (math.isfinite(nj) and nj > 0) else lo_end
        if not (math.isfinite(lo) and 0 < lo <= lj):
            continue
        xs += [lj, lo, math.nan]
        ys += [gj, gj + (1.0 - lo / lj) * dj, math.nan]
    return np.array(xs, dtype=np.float64), np.array(ys, dtype=np.float64)


def _staircase(lam, val, nxt, lo_end):
    """w is constant on each piece [λ_{j+1}, λ_j] (and its scaling above λ_0 predicts the same
    labels), so its test error is a staircase in λ."""
    xs, ys = [], []
    for lj, vj, nj in zip(lam, val, nxt):
        if not math.isfinite(vj):
            continue
        lo = nj if (math.isfinite(nj) and nj > 0) else lo_end
        if not (math.isfinite(lo) and 0 < lo <= lj):
            lo = lj
        xs += [lj, lo]
        ys += [vj, vj]
    return np.array(xs, dtype=np.float64), np.array(ys, dtype=np.float64)


def _legend_above(f):
    """The legend in one horizontal row above the plot, a little more spaced than the others."""
    leg = legend_above(f)
    leg.spacing = 8
    leg.glyph_width = 18
    leg.location = "top_left"


def _legend_inside(f, loc):
    leg = f.legend[0]
    leg.location = loc
    leg.label_text_font_size = "10.5px"
    leg.background_fill_alpha = 0.75
    leg.margin = 2
    leg.padding = 2
    leg.spacing = 0
    leg.glyph_width = 16
    leg.label_height = 14
    leg.glyph_height = 14


def _legend_visible(f, label_prefix, visible):
    for item in f.legend[0].items:
        lab = getattr(item.label, "value", None)
        if lab is None:
            lab = item.label.get("value", "") if isinstance(item.label, dict) else str(item.label)
        if lab.startswith(label_prefix) and item.visible != visible:
            item.visible = visible


def _pos(a):
    a = np.asarray(a, dtype=np.float64)
    return np.where(np.isfinite(a), np.maximum(a, GAP_FLOOR), np.nan)


def _grow(rng, start, end):
    """Move a linear range only when the data leave it (or shrink a lot: a new path)."""
    if rng.end < end or rng.end > 4 * end or rng.start != start:
        rng.update(start=start, end=end * 1.25 if rng.end < end else end)
