"""Projector mode's text inside Bokeh canvases. Axis labels, titles, legends
and colour bars are drawn in canvases, not in the DOM, so the browser tests' bounding boxes do
not see them: they are checked here on the figure models of every tab and lesson page."""
from __future__ import annotations

from pathlib import Path

import pytest

pn = pytest.importorskip("panel")

from gaplab.app.main import CONVERGENCE, LESSON_PAGES, LESSONS, TOY, GapLabApp  # noqa: E402
from gaplab.app.styles import BIG_PX, figure_texts  # noqa: E402

_FONT = next((p for p in ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                          "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf") if Path(p).exists()), None)


def _figures(app: GapLabApp):
    """The figures a viewer can see in the current mode: the Step tab holds a set of views per
    mode, the other mode's hidden."""
    hidden = app._step_normal if app.projector else app._proj_row
    skip = {id(p) for p in hidden.select(pn.pane.Bokeh)} if hidden is not None and not app.shown(hidden) else set()
    return [p.object for p in app._layout.select(pn.pane.Bokeh) if hasattr(p.object, "title") and id(p) not in skip]


def _every_tab_in_projector_mode(app: GapLabApp):
    """Projector mode on, then every tab and every lesson page shown once (as a click does)."""
    app.set_projector(True)
    for tab in range(len(app.TAB_NAMES)):
        if tab == TOY:
            continue   # built below with the others; its view needs no solver
        app._ensure_tab(tab)
        app._size_tab(tab)   # as showing the tab does
    app._ensure_tab(TOY)
    app._size_tab(TOY)
    for page in range(len(LESSON_PAGES)):
        app.lessons.go(page)
        app._size_tab(LESSONS)


def _px(size) -> float:
    return float(str(size).rstrip("px"))


def test_projector_canvas_text_is_at_least_18px_on_every_tab(app):
    _every_tab_in_projector_mode(app)
    figs = _figures(app)
    assert len(figs) >= 15, len(figs)
    small = [(f.title.text, type(m).__name__, prop, getattr(m, prop))
             for f in figs for m, prop in figure_texts(f)
             if isinstance(getattr(m, prop), str) and _px(getattr(m, prop)) < BIG_PX]
    assert small == []
    app.set_projector(False)
    # normal mode gets its own sizes back (the block gap plot's 11-px colour bar labels)
    from bokeh.models import ColorBar
    cb = app.blocks.fig.select_one({"type": ColorBar})
    assert cb.major_label_text_font_size == "11px"


def test_projector_legends_are_outside_the_plot_frames(app):
    """At 18 px a legend in a corner of the frame covers curves and is cut at the frame's edge
    (CoNLL's legend was cut mid-line): projector mode puts every legend beside the frame."""
    fig = app.gap_passes.fig

    def places():
        return [(side, getattr(leg, "orientation", None)) for leg in fig.legend
                for side in ("center", "above", "below", "left", "right") if leg in getattr(fig, side)]

    normal = places()
    _every_tab_in_projector_mode(app)
    inside = [f.title.text for f in _figures(app) for leg in f.legend if leg in f.center]
    assert inside == []
    app.set_projector(False)
    # back in normal mode the convergence legend is where the normal layout put it, once the
    # tab is shown (a tab is restyled when shown)
    app.tabs.active = CONVERGENCE
    assert places() == normal and normal


@pytest.mark.skipif(_FONT is None, reason="no DejaVu/Liberation font to measure text with")
def test_projector_colour_bar_title_fits_beside_its_bar(app):
    """The staleness colour bar's title runs along the bar (rotated); longer than the plot
    frame it ran into the figure's title and covered "— bins of 6"."""
    from bokeh.models import ColorBar
    from PIL import ImageFont
    app.on_step()
    app.set_projector(True)
    fig = app.blocks_p.fig
    cb = fig.select_one({"type": ColorBar})
    font = ImageFont.truetype(_FONT, int(_px(cb.title_text_font_size)))
    title_w = font.getlength(cb.title)
    # the frame: the figure's height less its title, the legend row above and the x axis
    frame_h = fig.height - 3 * _px(fig.title.text_font_size) - 2 * BIG_PX - 10
    assert title_w <= frame_h, (cb.title, title_w, frame_h)
