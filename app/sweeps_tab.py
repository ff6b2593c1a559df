"""The Sweeps tab: browse a sweep store written by ``gaplab sweep`` (Paper: Sec. 5, Fig. 3-8).

The views the store holds are offered: **Convergence** (solve runs: the duality gap against
effective passes and against time, median with min–max band over seeds; Fig. 3, 5, 6), **κ study**
(regularization paths: cumulative passes and the gap at the breakpoints against λ; Fig. 7) and
**Path vs grid** (paths and grid searches: cumulative time and passes against λ; Fig. 4, 8). Pick
a dataset, a λ (convergence only: the path views have λ on their x axis) and methods; hovering a
median curve shows the method's run config. The figures are HoloViews objects from
:mod:`gaplab.plots`, drawn by Bokeh. A table lists the runs with their status and errors.

The figures are composed from stored results, so HoloViews is used here; the live step views of
the other tabs stay on direct Bokeh sources (see :mod:`gaplab.app.views`).
"""
from __future__ import annotations

import os
from pathlib import Path

import panel as pn

from .export import figure_export_buttons
from .safe_html import choice_labels, esc
from .ticks import handler

__all__ = ["SweepsView", "STORE_ENV", "VIEWS"]

STORE_ENV = "GAPLAB_SWEEP_STORE"   # default store directory shown in the tab
#: view -> (button label, run kinds it draws); a view is offered when the store has done runs of
#: its first kind
VIEWS = {"convergence": ("Convergence", ("solve",)), "kappa": ("κ study", ("path",)),
         "path-grid": ("Path vs grid", ("grid", "path"))}
CAPTIONS = {
    "convergence": "Convergence (Paper: Fig. 3, 5, 6): duality gap against effective passes and against time",
    "kappa": "κ study (Paper: Fig. 7): cumulative effective passes and the duality gap at the breakpoints "
             "against λ",
    "path-grid": "Path vs grid (Paper: Fig. 4, 8): cumulative time and effective passes against λ"}


class SweepsView:
    """Widgets and figures over one store. ``load(path)`` (or the Load button) opens a store;
    ``redraw()`` rebuilds the figure from the selections.

    Parameters
    ----------
    store : str or Path, optional
        A store directory to open at once (default: ``$GAPLAB_SWEEP_STORE`` if set).
    roots : sequence of str, optional
        Folders a typed store path must resolve under (classroom mode); None: any folder but
        the system ones (:func:`gaplab.app.typed_paths.check_typed_path`).
    """

    def __init__(self, store=None, name: str = "sweeps", roots=None):
        self.name = name
        self.store = None
        self.roots = roots   # folders a typed store path must be under (None: any but system folders)
        start = store if store is not None else os.environ.get(STORE_ENV, "")
        self.path_input = pn.widgets.TextInput(label="Store directory", value=str(start or ""),
                                               placeholder="directory written by gaplab sweep",
                                               css_classes=["gaplab-sweeps-path"], width=420)
        self.load_button = pn.widgets.Button(label="Load store", color="primary", align="end",
                                             css_classes=["gaplab-sweeps-load"])
        self.view = pn.widgets.RadioButtonGroup(options={},
                                                css_classes=["gaplab-sweeps-view"])
        self.dataset = pn.widgets.Select(label="Dataset", options=[], width=200)
        self.lam = pn.widgets.Select(label="λ", options=[], width=120)
        self.methods = pn.widgets.MultiChoice(label="Methods", options=[], width=420)
        self.info = pn.pane.HTML("<i>No store loaded.</i>", css_classes=["gaplab-sweeps-info"],
                                 sizing_mode="stretch_width")
        self.caption = pn.pane.HTML("", css_classes=["gaplab-sweeps-caption"], sizing_mode="stretch_width")
        self.figure = pn.pane.HoloViews(None, backend="bokeh", sizing_mode="stretch_width",
                                        css_classes=["gaplab-sweeps-figure"])
        self.table = pn.pane.DataFrame(None, index=False, max_rows=200, escape=True, sizing_mode="stretch_width",
                                       css_classes=["gaplab-sweeps-runs"])
        self.load_button.on_click(handler(lambda _e: self.load(self.path_input.value)))   # gaplab.app.ticks
        for w in (self.view, self.dataset, self.lam, self.methods):
            w.param.watch(handler(lambda _e: self.redraw()), "value")
        self._quiet = False
        self._picked_for = None
        self.panel = pn.Column(
            pn.Row(self.path_input, self.load_button),
            self.info,
            self.view,
            pn.Row(self.dataset, self.lam, self.methods),
            self.caption,
            # PNG / SVG of the whole figure (every panel composited), found by the pane's class
            pn.Row(pn.layout.HSpacer(), figure_export_buttons(target="gaplab-sweeps-figure", stem="gaplab_sweeps"),
                   sizing_mode="stretch_width", height=28, margin=0),
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

        from .typed_paths import check_typed_path
        try:
            # a typed path is client input: a folder (never a FIFO or a device), under the roots
            st = Store(check_typed_path(str(path), self.roots, kind="dir"))
        except (ValueError, OSError) as exc:
            self.store = None
            self.info.object = f"<span style='color:#d7191c'>{esc(exc)}</span>"
            self.figure.object = None
            self.caption.object = ""
            self.table.object = None
            return False
        self.store = st
        runs = st.runs()
        m = st.manifest
        n_done = int((runs["status"] == "done").sum()) if len(runs) else 0
        n_failed = int((runs["status"] == "failed").sum()) if len(runs) else 0
        self.info.object = (f"Spec <b>{esc(m.get('spec_name'))}</b> v{esc(m.get('spec_version'))} · "
                            f"{len(runs)} runs recorded: {n_done} done, {n_failed} failed")
        done = runs[runs["status"] == "done"] if len(runs) else runs
        kinds = set(done["kind"].unique().tolist()) if len(done) else set()
        views = {label: v for v, (label, ks) in VIEWS.items() if ks[0] in kinds}
        self._quiet = True
        try:
            self.view.options = views
            if self.view.value not in views.values():
                self.view.value = next(iter(views.values()), None)
            self.view.visible = len(views) > 1
            self.dataset.value = None
            self._sync_choices(done)
        finally:
            self._quiet = False
        cols = [c for c in ("run_id", "status", "attempts", "dataset", "lam_label", "method", "kind", "seed",
                            "sampling", "step", "cache", "max_passes", "error") if c in runs.columns]
        self.table.object = runs[cols] if len(runs) else None
        self.redraw()
        return True

    def _view_runs(self, done):
        """The done runs the current view draws."""
        if not len(done) or self.view.value not in VIEWS:
            return done.iloc[:0] if len(done) else done
        return done[done["kind"].isin(VIEWS[self.view.value][1])]

    def _sync_choices(self, done):
        """Dataset, λ and method choices of the current view from the done runs."""
        runs = self._view_runs(done)
        datasets = sorted(runs["dataset"].unique().tolist()) if len(runs) else []
        self.dataset.options = datasets
        if self.dataset.value not in datasets:
            self.dataset.value = datasets[0] if datasets else None
        sub = runs[runs["dataset"] == self.dataset.value] if len(runs) else runs
        from gaplab.plots import _lam_key
        convergence = self.view.value == "convergence"
        lams = sorted(sub["lam_label"].unique().tolist(), key=_lam_key) if len(sub) and convergence else []
        self.lam.options = lams
        self.lam.disabled = not convergence
        if self.lam.value not in lams:
            self.lam.value = lams[0] if lams else None
        methods = sorted(sub["method"].unique().tolist()) if len(sub) else []
        # a new view or dataset starts with all its methods; otherwise the pick is kept
        keep = [m for m in (self.methods.value or []) if m in methods]
        if self._picked_for != (self.view.value, self.dataset.value):
            keep = []
            self._picked_for = (self.view.value, self.dataset.value)
        self.methods.options = choice_labels(methods)   # the store's names, shown as text
        self.methods.value = keep or methods

    # ------------------------------------------------------------------ drawing
    def redraw(self):
        """Rebuild the figure from the current selections: convergence (gap vs passes | gap vs
        time), κ study or path vs grid."""
        if self._quiet or self.store is None:
            return
        from gaplab import plots
        runs = self.store.runs()
        done = runs[runs["status"] == "done"]
        self._quiet = True
        try:
            self._sync_choices(done)
        finally:
            self._quiet = False
        view = self.view.value
        if not view or not self.dataset.value or not self.methods.value or (view == "convergence"
                                                                             and not self.lam.value):
            self.figure.object = None
            self.caption.object = ""
            return
        sel = dict(datasets=[self.dataset.value], methods=list(self.methods.value), width=520, height=340)
        try:
            if view == "convergence":
                fig = plots.comparison(self.store, lams=[self.lam.value], **sel)
            elif view == "kappa":
                fig = plots.kappa_study(self.store, **sel)
            else:
                fig = plots.path_vs_grid(self.store, **sel)
        except ValueError as exc:
            self.info.object = f"<span style='color:#d7191c'>{esc(exc)}</span>"
            self.figure.object = None
            self.caption.object = ""
            return
        lam = f", λ = {esc(self.lam.value)}" if view == "convergence" else ""
        self.caption.object = (f"<b>{esc(CAPTIONS[view])}</b> · {esc(self.dataset.value)}{lam} · "
                               f"{len(self.methods.value)} method(s); median and min–max over seeds; hover a "
                               "curve for its run config")
        self.figure.object = fig

    def update(self, snap=None, force=False):
        """Nothing live: the tab redraws on its own widgets' changes."""
        return False
