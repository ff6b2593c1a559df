"""The Sweeps tab: browse a sweep store written by ``gaplab sweep`` (Paper: Sec. 5, Fig. 3, 5, 6).

Pick a dataset, a λ and methods; the panel shows the duality gap against effective passes and
against time, median with min–max band over seeds (HoloViews objects from :mod:`gaplab.plots`,
drawn by Bokeh); hovering a median curve shows the method's run config. A table lists the runs
with their status and errors.

The figures are composed from stored results, so HoloViews is used here; the live step views of
the other tabs stay on direct Bokeh sources (see :mod:`gaplab.app.views`).
"""
from __future__ import annotations

import html
import os
from pathlib import Path

import panel as pn

__all__ = ["SweepsView", "STORE_ENV"]

STORE_ENV = "GAPLAB_SWEEP_STORE"   # default store directory shown in the tab


class SweepsView:
    """Widgets and figures over one store. ``load(path)`` (or the Load button) opens a store;
    ``redraw()`` rebuilds the figure from the selections.

    Parameters
    ----------
    store : str or Path, optional
        A store directory to open at once (default: ``$GAPLAB_SWEEP_STORE`` if set).
    """

    def __init__(self, store=None, name: str = "sweeps"):
        self.name = name
        self.store = None
        start = store if store is not None else os.environ.get(STORE_ENV, "")
        self.path_input = pn.widgets.TextInput(label="Store directory", value=str(start or ""),
                                               placeholder="directory written by gaplab sweep",
                                               css_classes=["gaplab-sweeps-path"], width=420)
        self.load_button = pn.widgets.Button(label="Load store", color="primary", align="end",
                                             css_classes=["gaplab-sweeps-load"])
        self.dataset = pn.widgets.Select(label="Dataset", options=[], width=200)
        self.lam = pn.widgets.Select(label="λ", options=[], width=120)
        self.methods = pn.widgets.MultiChoice(label="Methods", options=[], width=420)
        self.info = pn.pane.HTML("<i>No store loaded.</i>", css_classes=["gaplab-sweeps-info"],
                                 sizing_mode="stretch_width")
        self.figure = pn.pane.HoloViews(None, backend="bokeh", sizing_mode="stretch_width",
                                        css_classes=["gaplab-sweeps-figure"])
        self.table = pn.pane.DataFrame(None, index=False, max_rows=200, sizing_mode="stretch_width",
                                       css_classes=["gaplab-sweeps-runs"])
        self.load_button.on_click(lambda _e: self.load(self.path_input.value))
        for w in (self.dataset, self.lam, self.methods):
            w.param.watch(lambda _e: self.redraw(), "value")
        self._quiet = False
        self.panel = pn.Column(
            pn.Row(self.path_input, self.load_button),
            self.info,
            pn.Row(self.dataset, self.lam, self.methods),
            self.figure,
            pn.pane.HTML("<b>Runs</b>"),
            self.table,
            sizing_mode="stretch_width", name=name)
        if start:
            self.load(start)

    # ------------------------------------------------------------------ loading
    def load(self, path) -> bool:
        """Open a store; False (and a message in the tab) if it cannot be read."""
        from gaplab.core.sweep import Store
        try:
            st = Store(Path(str(path).strip()).expanduser())
        except (ValueError, OSError) as exc:
            self.store = None
            self.info.object = f"<span style='color:#d7191c'>{html.escape(str(exc))}</span>"
            self.figure.object = None
            self.table.object = None
            return False
        self.store = st
        runs = st.runs()
        m = st.manifest
        n_done = int((runs["status"] == "done").sum()) if len(runs) else 0
        n_failed = int((runs["status"] == "failed").sum()) if len(runs) else 0
        self.info.object = (f"Spec <b>{html.escape(str(m.get('spec_name')))}</b> v{m.get('spec_version')} · "
                            f"{len(runs)} runs recorded: {n_done} done, {n_failed} failed")
        solve = runs[(runs["status"] == "done") & (runs["kind"] == "solve")] if len(runs) else runs
        self._quiet = True
        try:
            datasets = sorted(solve["dataset"].unique().tolist()) if len(solve) else []
            self.dataset.options = datasets
            self.dataset.value = datasets[0] if datasets else None
            self._sync_choices(solve)
        finally:
            self._quiet = False
        cols = [c for c in ("run_id", "status", "attempts", "dataset", "lam_label", "method", "seed", "sampling",
                            "step", "cache", "max_passes", "error") if c in runs.columns]
        self.table.object = runs[cols] if len(runs) else None
        self.redraw()
        return True

    def _sync_choices(self, solve):
        sub = solve[solve["dataset"] == self.dataset.value] if len(solve) else solve
        from gaplab.plots import _lam_key
        lams = sorted(sub["lam_label"].unique().tolist(), key=_lam_key) if len(sub) else []
        self.lam.options = lams
        if self.lam.value not in lams:
            self.lam.value = lams[0] if lams else None
        methods = sorted(sub["method"].unique().tolist()) if len(sub) else []
        self.methods.options = methods
        self.methods.value = [m for m in (self.methods.value or methods) if m in methods] or methods

    # ------------------------------------------------------------------ drawing
    def redraw(self):
        """Rebuild the figure from the current selections (gap vs passes | gap vs time)."""
        if self._quiet or self.store is None:
            return
        if not self.dataset.value or not self.lam.value or not self.methods.value:
            self.figure.object = None
            return
        from gaplab import plots
        runs = self.store.runs()
        solve = runs[(runs["status"] == "done") & (runs["kind"] == "solve")]
        self._quiet = True
        try:
            self._sync_choices(solve)
        finally:
            self._quiet = False
        sel = dict(datasets=[self.dataset.value], lams=[self.lam.value], methods=list(self.methods.value),
                   width=520, height=340)
        try:
            fig = plots.comparison(self.store, **sel)
        except ValueError as exc:
            self.info.object = f"<span style='color:#d7191c'>{html.escape(str(exc))}</span>"
            self.figure.object = None
            return
        self.figure.object = fig

    def update(self, snap=None, force=False):
        """Nothing live: the tab redraws on its own widgets' changes."""
        return False
