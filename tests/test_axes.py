"""Axes that teach (issue 24 item 6): log gap axes label at least three ticks; the Convergence
and Cache figures keep their legends off the data, start at pass 0, mark runs at other λ and
say why a uniform run's heuristic gap starts late."""
from __future__ import annotations

import json
import math
import shutil
import subprocess

import pytest

pytest.importorskip("panel")

from gaplab.app import views  # noqa: E402

NODE = shutil.which("node") or shutil.which("nodejs")


def _major_ticks(start, end):
    """The app's log ticker's major ticks for a range, run by Node (the same JS BokehJS runs)."""
    src = f"const f = (cb_data) => {{ {views._LOG_MAJOR_JS} }};\n" \
          f"process.stdout.write(JSON.stringify(f({{start: {start!r}, end: {end!r}}})));"
    out = subprocess.run([NODE, "-e", src], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed (runs the ticker's JS)")
@pytest.mark.parametrize("lo,hi", [(1e-3, 1e-2), (1e-6, 1.0), (1e-12, 1.0), (1e-4, 1e-2), (2e-3, 5e-3),
                                   (3e-4, 4e-4), (1e-5, 3e-5), (0.5, 1e4), (1.0, 10.0)])
def test_log_axes_label_at_least_three_ticks_inside_the_range(lo, hi):
    ticks = _major_ticks(lo, hi)
    assert len(ticks) >= 3, ticks
    assert all(lo * (1 - 1e-6) <= t <= hi * (1 + 1e-6) for t in ticks), ticks
    assert ticks == sorted(ticks) and len(set(ticks)) == len(ticks)
    assert len(ticks) <= 13
