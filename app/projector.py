"""Projector mode of the app: :class:`ProjectorMixin` (held by :class:`gaplab.app.main.GapLabApp`).

Projector mode has text and controls of at least 18 px, no settings sidebar (a bar of run
buttons above the tabs instead) and a Step tab laid out for 1280×720 (the anatomy stacked left,
the block gaps right with bars binned to stay ≥ 6 px wide).

The switch is one small message and no layout work for BokehJS: both layouts are in the page
before it, and projector mode is a set of CSS custom properties on the app's root element
(:data:`gaplab.app.styles.MODE_VARS`), which every component's stylesheet reads: the header,
the sidebar and the Step tab's normal views are hidden by them, the projector bar and projector
mode's Step tab views shown, the tab labels and the status line grow to 18 px. Projector
mode's Step tab views and its bar (with its own copies of the run buttons and settings, bound
to the same session parameters and actions) are made in projector sizes after the page has
loaded and join it then, drawn. The switch also draws the newly shown views if the snapshot
moved on while they were hidden, and restyles the tab in view when it is not the Step tab
(another tab is restyled when it is next shown).

Why: BokehJS re-lays out the whole page for every component whose ``visible``,
``stylesheets`` or ``css_classes`` changes (once per component, synchronously), and rebuilds
the view of a component moved to another container; restyling every widget and figure and
moving the run buttons made the switch take many seconds on a busy laptop. A ``styles``
change is not such a change.
"""
from __future__ import annotations

import panel as pn

from .styles import MODE_VARS, NORMAL_ONLY_CSS, PROJECTOR_ONLY_CSS, designed_for_projector, projector_sizes
from .tabs import LESSONS, RACE, STEP
from .ticks import handler
from .views import AnatomyView, BlockGapsView, fig_fonts

__all__ = ["ProjectorMixin", "PROJECTOR_BARS"]

#: projector mode's per-block bars: bins of ⌈n/120⌉ blocks (max ĝ, summed P), ≥ 6 px wide for any n
PROJECTOR_BARS = 120


class ProjectorMixin:
    """Projector mode of :class:`gaplab.app.main.GapLabApp` (see the module's docstring)."""

    projector = False
    anatomy_p = blocks_p = None   # projector mode's Step tab views (made after the page loads)
    _proj_row = None              # the Row holding them in the Step tab (hidden in normal mode)

    def _projector_init(self):
        self.projector = False
        self.anatomy_p = self.blocks_p = self._proj_row = None
        self._bar_copies = {}   # sidebar button -> its copy in the projector bar
        self._tab_big = {}      # tab -> True while its contents are in projector sizes

    # ------------------------------------------------------------------ made ahead
    def _projector_ahead(self):
        """Projector mode's views and bar, made and placed in the page (hidden) once it has
        loaded, so that the switch only shows them."""
        if not self._closed and self.anatomy_p is None:
            self._projector_views()

    def _projector_views(self):
        """Projector mode's Step tab views (made once, in projector sizes, drawn with the snapshot
        on screen before they join the page: a view drawn after it joins the page showed a blank
        anatomy and empty −1…1 plots for seconds) and the bar of run buttons; both join the page
        hidden unless projector mode is on."""
        if self.anatomy_p is None:
            a = AnatomyView(stacked=True, compact=True, on_choice=self._choose)
            # the narration right under the input and the corners (above the fold at 1280×720),
            # the table of numbers after it
            a.panel.objects = [a.picker, a.word, a.sentence, a.table]
            # the bar of run buttons and the one of mid-run switches take two rows: shorter gap
            # bars keep the sampling plot above the fold at 1280×720
            blocks = BlockGapsView(height=188, prob_height=145, name="block_gaps_projector",
                                   max_bars=PROJECTOR_BARS)
            blocks.info.height = 82
            designed_for_projector(a.word, a.sentence, a.table, blocks.info)
            for view in (a, blocks):
                self._apply_big(view.panel, True)
            snap = self._frame.snap if self._frame.snap is not None else self.session.snapshot
            for view in (a, blocks):
                view.update(snap, force=True)
            self.anatomy_p, self.blocks_p = a, blocks
            self._proj_row = pn.Row(a.panel, blocks.panel, sizing_mode="stretch_width",
                                    stylesheets=[PROJECTOR_ONLY_CSS])
            bar = self._projector_bar()
            self.topbar.objects = [bar]
            self._step_tab.objects = [self._step_normal, self._proj_row]
        return self.anatomy_p, self.blocks_p

    def _projector_bar(self):
        """The bar above the tabs in projector mode: the run buttons and the projector toggle on
        the first row; the speed and what a lecture switches mid-run (the sampler, the step kind),
        exact gaps and the comparison on the second. Its own copies of the sidebar's widgets (a
        widget is shown in one place), in projector sizes."""
        c, bw = self._bar_copies, self.bar_widgets
        row1 = [c[self.b_back], c[self.b_step], c[self.b_step_n], bw["n_steps"], c[self.b_run], c[self.b_stop],
                c[self.b_reset], pn.Spacer(sizing_mode="stretch_width"), self.w_projector_p]
        bar2 = [bw["speed"]] + list(self.p_widgets.values()) + [pn.Column(pn.Spacer(height=20), pn.Row(
            self.b_exact_p, self.b_compare_p, margin=0), margin=0)]
        self._bar_row1 = pn.Row(*row1, margin=0, sizing_mode="stretch_width")
        rows = pn.Column(self._bar_row1, pn.Row(*bar2, margin=0), margin=0, sizing_mode="stretch_width")
        self._apply_big(rows, True)
        return rows

    def _projector_toggle_copy(self):
        """The bar's projector toggle (the header's is hidden with the header)."""
        t = self.w_projector
        self.w_projector_p = pn.widgets.Toggle(label=t.label, value=False, width=t.width, height=t.height,
                                               margin=t.margin, css_classes=["gaplab-projector-toggle-p"])
        self.w_projector_p.param.watch(handler(lambda e: self.set_projector(e.new)), "value")

    # ------------------------------------------------------------------ the switch
    def set_projector(self, on: bool):
        """Projector mode on or off (text and controls ≥ 18 px, no settings sidebar, the run
        buttons in a bar above the tabs, the Step tab laid out for 1280×720). One message to the
        page: the root's CSS variables (:data:`gaplab.app.styles.MODE_VARS`) and the newly shown
        views' data if the snapshot moved on while they were hidden; nothing is rebuilt, moved
        or restyled but the tab in view (when not the Step tab)."""
        on = bool(on)
        if on == self.projector:
            return
        with pn.io.hold():
            self._set_projector(on)

    def _set_projector(self, on: bool):
        self.projector = on
        self._projector_views()   # made now if the page has not loaded yet
        for t in (self.w_projector, self.w_projector_p):
            if t.value != on:
                t.value = on
        if self._header_extra:   # classroom mode: the students' URL toggle goes with the bar
            extra = self._header_extra
            self.header.objects = [self._title, self.subtitle] + ([] if on else [*extra, self.w_projector])
            row = [o for o in self._bar_row1.objects if o not in extra]
            self._bar_row1.objects = row[:-1] + (extra if on else []) + row[-1:]
        # the switch itself: the variables on the root (which layout shows, the tab labels' and
        # the status line's size)
        self._layout.styles = {**self._layout.styles, **MODE_VARS[on]}
        for part in (self.banner, self.qr_pane):   # shown while the kernels compile; classroom
            if part is not None and part.visible:
                self._apply_big(part, on)
        self._size_tab(self.tabs.active)
        self._kkey = None   # the compile banner in this mode's wording
        # the newly shown views draw the snapshot on screen if theirs is older
        self.refresh()

    def shown(self, part) -> bool:
        """Whether ``part`` (a component of the app's layout) shows in the current mode."""
        sheets = list(getattr(part, "stylesheets", []))
        if NORMAL_ONLY_CSS in sheets and self.projector or PROJECTOR_ONLY_CSS in sheets and not self.projector:
            return False
        return bool(part.visible)

    def _size_tab(self, tab: int):
        """A tab's contents in the current mode's sizes (a tab is restyled when shown; the Step
        tab has a set of views per mode)."""
        if tab == LESSONS and hasattr(self, "_lessons"):
            self._lessons.set_width(620 if self.projector else 480)
        if tab == RACE and hasattr(self, "_race_view"):
            self._race_view.set_projector(self.projector)
        if tab == STEP or not (self.projector or self._tab_big.get(tab)):
            return
        self._apply_big(self._boxes[tab], self.projector)
        self._tab_big[tab] = self.projector

    def _lesson_sizes(self):
        """A lesson page just shown: projector sizes when projector mode is on."""
        if self.projector and hasattr(self, "_lessons"):
            self._apply_big(self._boxes[LESSONS], True)
            self._tab_big[LESSONS] = True

    @staticmethod
    def _apply_big(layout, on: bool):
        """Projector sizes on or off for every widget, figure and text pane in ``layout``
        (:func:`gaplab.app.styles.projector_sizes`)."""
        projector_sizes(layout, on)
        fig_fonts(layout, on)
