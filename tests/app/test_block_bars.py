"""Per-block bars readable at any n: on the Step tab's figure every bar is at
least BAR_MIN_PX wide at a 720-px plot frame (the Step tab at 1280×720), bins are explained on
hover, and the last block stays visible (its bar or bin highlighted one bar wide)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("panel")

from gaplab.app.views import BAR_MIN_PX, BlockGapsView  # noqa: E402

FRAME_PX = 720.0


def _snap(n, last, visited, version=1):
    g = np.full(n, np.inf)
    g[visited] = np.linspace(1e-3, 1e-2, len(visited))
    st = np.full(n, -1)
    st[visited] = np.arange(len(visited))
    p = np.where(np.isinf(g), 1.0, 0.0)
    return SimpleNamespace(
        version=version, n=n, status="paused", dataset="fake", gap_estimates=g, staleness=st,
        exact_block_gaps=None, probabilities=p / p.sum(), last_step=SimpleNamespace(block=last),
        heuristic_gap=math.inf, exact_gap=math.nan, iteration=len(visited), exact_block_gaps_iteration=-1,
        chi_cubed=math.nan, config={"sampling": "gap", "gap_power": 1.0})


def _px(view, width):
    rng = view.fig.x_range
    return width / (rng.end - rng.start) * FRAME_PX


@pytest.mark.parametrize("n", [10, 139, 140, 141, 626, 2000, 8936, 60_000])
def test_every_bar_and_the_last_block_are_at_least_min_px_wide(n):
    view = BlockGapsView(name="bars")
    last = n // 3
    visited = sorted({0, last, n - 1})
    view.update(_snap(n, last, visited))
    d = view.src.data
    assert len(d["x"]) <= BlockGapsView.MAX_BARS
    assert min(_px(view, w) for w in d["w"]) >= BAR_MIN_PX
    # every visited block is inside a drawn (finite) bar
    drawn = [(lo, hi) for lo, hi, t in zip(d["lo"], d["hi"], d["top"]) if np.isfinite(t)]
    assert all(any(lo <= i <= hi for lo, hi in drawn) for i in visited)
    # the last block: highlighted over its bar or bin, at least one bar wide
    left, right = view.last_src.data["left"][0], view.last_src.data["right"][0]
    assert left < last < right and _px(view, right - left) >= BAR_MIN_PX
    # the hover says what a bar is
    how = d["how"][0]
    b = int(d["hi"][0] - d["lo"][0] + 1)
    assert (f"a bin of {b} blocks" in how) if b > 1 else how == "one bar per block"
    from bokeh.models import HoverTool
    tips = dict(next(t for t in view.fig.tools if isinstance(t, HoverTool)).tooltips)
    assert tips["drawn as"] == "@how"


def test_ocr_626_blocks_are_binned_in_the_normal_layout():
    view = BlockGapsView(name="bars")
    view.update(_snap(626, 500, [3, 500]))
    assert len(view.src.data["x"]) == math.ceil(626 / math.ceil(626 / BlockGapsView.MAX_BARS)) < 626
    assert "bins of" in view.fig.title.text
