"""The status line: one line of numbers about the current run, all from one snapshot."""
from __future__ import annotations

import math

from ..safe_html import esc
from .base import _Base
from .figures import LiveHTML, _fmt
from .narration import status_test_words

class StatusView(_Base):
    """One line of numbers about the current run (all from the snapshot)."""

    RUNNING_MIN_INTERVAL_S = 0.15
    #: the background compile's KernelState while it runs (set by the app), else None
    compiling = None

    def __init__(self):
        super().__init__()
        # wraps in a narrow output area (one line at 1280 px and wider)
        self.panel = LiveHTML("", sizing_mode="stretch_width", margin=(0, 10), min_height=24,
                              styles={"font-size": "13.5px"})

    def _draw(self, snap):
        from ..session import STATUS_LABELS
        from ..startup import status_words
        status = STATUS_LABELS.get(snap.status, snap.status)
        color = {"running": "#1a9641", "error": "#d7191c", "loading": "#fdae61",
                 "budget": "#2c7fb8"}.get(snap.status, "#555")
        ks = self.compiling
        if ks is not None and snap.status in ("idle", "loading"):
            # never "ready" while the first Step would wait for the compiler
            status, color = status_words(ks), "#d08000"
        note = (f" <span style='color:#8a5a00'>{esc(snap.note)}</span>"
                if snap.status == "loading" and snap.note else "")
        if not snap.n:
            self.panel.object = (f"<div class='gaplab-status'><span style='color:{color};font-weight:bold'>"
                                 f"● {status}</span> {esc(snap.dataset)}{note}</div>")
            return
        if note:  # loading a model into the solver: say what, not the old model's numbers
            self.panel.object = (f"<div class='gaplab-status'><span style='color:{color};font-weight:bold'>"
                                 f"● {status}</span> <b>{esc(snap.dataset)}</b> (n = {snap.n:,}) ·{note}</div>")
            return
        rate = _rate_words(snap)
        exact = (f"exact gap <b>{_fmt(snap.exact_gap)}</b> @ {snap.exact_passes:.1f} passes"
                 if math.isfinite(snap.exact_gap) else "exact gap –")
        from gaplab.core.certify import is_impossible_gap
        if is_impossible_gap(snap.exact_gap, snap.exact_primal, snap.exact_dual):  # certifies nothing
            status, color = "oracle not exact", "#d7191c"
            exact += " <span style='color:#d7191c'>(&lt; 0: the max oracle is not exact; check_model finds where)</span>"
        test = status_test_words(snap)
        if snap.origin:   # a model picked on the path, or a λ warm start (Session.keep_alpha)
            src = "from the path" if snap.origin.startswith("path") else "warm start from " + esc(snap.origin)
            test += f" · λ = <b>{snap.lam:.4g}</b> <span style='color:#666'>({src})</span>"
        self.panel.object = (
            f"<div class='gaplab-status'><span style='color:{color};font-weight:bold'>● {status}</span> &nbsp;"
            f"<b>{esc(snap.dataset)}</b> (n = {snap.n:,}) · iteration <b>{snap.iteration:,}</b> · "
            f"<b>{snap.effective_passes:.2f}</b> passes · heuristic gap <b>{_fmt(snap.heuristic_gap)}</b> · "
            f"{exact}{test}{rate}</div>")


def _rate_words(snap) -> str:
    """The run's speed, while it runs and once measured (``Snapshot.steps_per_s`` is NaN until
    the run has published two snapshots): whole steps per second, one decimal below 10."""
    r = snap.steps_per_s
    if snap.status != "running" or not (math.isfinite(r) and r > 0):
        return ""
    return f" · {r:,.0f} steps/s" if r >= 10 else f" · {r:.1f} steps/s"
