"""The app's stylesheets in one place, and projector mode's sizes.

Panel renders every component in a shadow root of its own, so a page-wide stylesheet does not
reach inside; each stylesheet here is attached to the components it styles (``stylesheets=``):

* :data:`TABS_CSS` (every ``pn.Tabs``): tab labels wrap onto a second row instead of running
  off the right edge of a narrow output area (JupyterLab with its file browser open);
* :data:`WRAP_CSS` (the app's flex rows that may wrap, e.g. the sidebar beside the tabs);
* :data:`PROJECTOR_CSS` (widgets, tabs) and :data:`PROJECTOR_TEXT_CSS` (HTML/Markdown panes) in
  projector mode: every text at least :data:`BIG_PX` px, also where the HTML sets a smaller
  inline ``font-size``, widget labels wrap within their widget instead of running into the next.

:func:`projector_sizes` switches projector mode on or off for everything in a layout (widgets,
tabs, text panes, Bokeh figures with their legends, colour bars and labels). The switch of the
app's layout itself is :data:`MODE_VARS` on its root, read by :data:`NORMAL_ONLY_CSS`,
:data:`PROJECTOR_ONLY_CSS`, :func:`both_modes_text_css` and :data:`TABS_CSS`.
"""
from __future__ import annotations

import weakref

import panel as pn

__all__ = ["BIG_PX", "MODE_VARS", "NORMAL_ONLY_CSS", "PROJECTOR_ONLY_CSS", "both_modes_text_css", "TABS_CSS", "WRAP_CSS", "PROJECTOR_CSS", "PROJECTOR_TEXT_CSS", "projector_sizes",
           "figure_texts", "designed_for_projector", "SCROLL_CUE_CLASS", "SCROLL_CUE_STYLES",
           "SCROLL_CUE_BAND", "NARRATION_LINE_PX", "NARRATION_PROJECTOR_LINE_PX", "NARRATION_PROJECTOR_LINES",
           "NARRATION_CUE_STYLES", "narration_height"]

BIG_PX = 18.0   # projector mode: the smallest text size (px)

#: projector mode is one set of CSS custom properties on the app's root element (``styles=``):
#: custom properties inherit into every shadow root below it, and a ``styles`` change is no
#: layout change for BokehJS (a ``visible``, ``stylesheets`` or ``css_classes`` change of a
#: component re-lays out the whole page, once per component). "initial" leaves a variable
#: unset, so the fallbacks of the stylesheets below (the normal layout) apply.
MODE_VARS = {
    False: {"--gaplab-normal-display": "initial", "--gaplab-projector-display": "initial",
            "--gaplab-big-font": "initial"},
    True: {"--gaplab-normal-display": "none", "--gaplab-projector-display": "flex",
           "--gaplab-big-font": f"{BIG_PX:g}px"},
}
#: on a component shown in normal mode only (header, sidebar, the Step tab's normal views: all
#: flex layouts), and on one shown in projector mode only (its bar and Step tab views)
NORMAL_ONLY_CSS = ":host { display: var(--gaplab-normal-display, flex) !important; }"
PROJECTOR_ONLY_CSS = ":host { display: var(--gaplab-projector-display, none) !important; }"


def both_modes_text_css(px: float) -> str:
    """The stylesheet of a text pane shown in both modes (the status line): ``px`` px, BIG_PX
    in projector mode."""
    return f":host {{ font-size: var(--gaplab-big-font, {px:g}px) !important; }}"


#: tab labels wrap onto another row rather than scroll sideways out of view; projector mode's
#: labels are BIG_PX (the fallback, "inherit", is the labels' normal size)
TABS_CSS = """
.bk-headers-wrapper { flex-wrap: wrap; overflow-x: hidden; }
.bk-tab { font-size: var(--gaplab-big-font, inherit) !important; }
"""

#: a fixed-height pane that scrolls (``overflow-y: auto``) shows when more is below or above:
#: a dark band at the edge where lines are hidden, drawn only while some are (the "scroll
#: shadows" of ``background-attachment: local``). Pass both to the pane (``css_classes=``,
#: ``styles=``); the layout check (:func:`gaplab.app.testing.layout_problems`) accepts lines
#: hidden in a scroll box with this class.
SCROLL_CUE_CLASS = "gaplab-scroll-cue"
SCROLL_CUE_STYLES = {
    "background": ("linear-gradient(#fff 30%, rgba(255,255,255,0)) center top, "
                   "linear-gradient(rgba(255,255,255,0), #fff 70%) center bottom, "
                   "radial-gradient(farthest-side at 50% 0, rgba(31,59,87,.55), rgba(31,59,87,0)) center top, "
                   "radial-gradient(farthest-side at 50% 100%, rgba(31,59,87,.55), rgba(31,59,87,0)) center bottom"),
    "background-repeat": "no-repeat",
    "background-size": "100% 40px, 100% 40px, 100% 18px, 100% 18px",
    "background-attachment": "local, local, scroll, scroll",
}
#: the last element of such a pane's content: a band that sticks to the pane's bottom edge,
#: the narration box ("what just happened"): whole lines of text, scrolling with the cue of
#: SCROLL_CUE_STYLES drawn on the box's own tint when a sentence needs more lines than it shows;
#: normal layout 13.5-px text on 18-px lines, projector mode 18-px text on 22-px lines (four:
#: the short form of the sentence, the full one a click away)
NARRATION_LINE_PX = 18
NARRATION_PROJECTOR_LINE_PX = 22
NARRATION_PROJECTOR_LINES = 4
NARRATION_TINT = "#f4f7fa"
NARRATION_CUE_STYLES = {
    **{k: (v.replace("#fff", NARRATION_TINT).replace("rgba(255,255,255,0)", "rgba(244,247,250,0)")
           if k == "background" else v) for k, v in SCROLL_CUE_STYLES.items()},
    "background-color": NARRATION_TINT,
}


def narration_height(lines: int, line_px: int) -> int:
    """Height (px) of a narration box showing ``lines`` whole lines of ``line_px`` (2-px padding
    above and below)."""
    return 4 + lines * line_px

#: drawn over the rows hidden below it (the band of SCROLL_CUE_STYLES is drawn under the
#: content, where coloured boxes hide it); with nothing hidden it closes the content
SCROLL_CUE_BAND = ("<div aria-hidden='true' style='position:sticky;bottom:0;height:16px;margin-top:2px;"
                   "pointer-events:none;background:linear-gradient(rgba(31,59,87,0),rgba(31,59,87,.55))'></div>")

#: a flex row whose children go below each other when the row is too narrow for them
WRAP_CSS = """
:host { flex-wrap: wrap !important; }
"""

#: projector mode's stylesheet for widgets and tabs (inside their shadow roots); a widget's
#: label wraps inside the widget's width (at 18 px "n (1 hard + n−1 easy)" is wider than its box);
#: buttons at least 38 px high, except a figure's PNG / SVG buttons, which keep the height of
#: their 28-px bar (38-px buttons overflowed it upwards and covered the tab strip's underline)
PROJECTOR_CSS = f"""
.bk-btn, .bk-input, select, input, label, .bk-label, .bk-tab, .bk-input-group, .bk-slider-title, .bk-slider-value
  {{ font-size: {BIG_PX:g}px !important; }}
label, .bk-input-group > label, .bk-slider-title {{ white-space: normal; overflow-wrap: break-word; }}
.bk-btn {{ min-height: 38px; }}
:host(.gaplab-export-png) .bk-btn, :host(.gaplab-export-svg) .bk-btn
  {{ min-height: 0; height: 100%; padding: 0 4px; line-height: 1.1; }}
.gaplab-status {{ font-size: {BIG_PX:g}px !important; }}
"""


def _small_inline_selectors(px: float = BIG_PX) -> str:
    """Selectors of elements whose inline style sets a font size under ``px`` (0.5 px steps,
    with and without a space after the colon: the forms the app's HTML uses)."""
    sizes = [f"{v / 2:g}" for v in range(10, int(2 * px))]
    return ",\n".join(f'[style*="font-size:{s}px"], [style*="font-size: {s}px"]' for s in sizes)


#: projector mode's stylesheet for HTML and Markdown panes: text at least BIG_PX px, inline
#: smaller sizes lifted, sub- and superscripts included
PROJECTOR_TEXT_CSS = (f":host {{ font-size: max({BIG_PX:g}px, 1em); }}\n"
                      f"{_small_inline_selectors()} {{ font-size: {BIG_PX:g}px !important; }}\n"
                      f"sub, sup, small {{ font-size: max({BIG_PX:g}px, 0.8em) !important; }}\n")

_NORMAL = weakref.WeakKeyDictionary()   # Bokeh model -> its normal text sizes (gone with it)
_PANES = weakref.WeakKeyDictionary()    # text pane -> (its normal stylesheets, height)
_WIDGETS = weakref.WeakKeyDictionary()  # widget or tabs -> its normal stylesheets
_DESIGNED = weakref.WeakSet()           # text panes sized for projector mode by their view
_WIDTHS = weakref.WeakKeyDictionary()   # input box or dropdown -> its normal width

#: projector mode: an input box's or dropdown's value at BIG_PX px takes about this many px per
#: character (digits and lower-case letters of the page's sans-serif font, with a margin) ...
INPUT_CHAR_PX = 0.56 * BIG_PX
#: ... plus this much for the box's padding, border and a dropdown's arrow
INPUT_PAD_PX = 40


def _shown_texts(wdg) -> list[str]:
    """The texts an input box or dropdown can show: every option's label of a dropdown, the
    value of an input box (as the widget formats it, or as ``str``)."""
    if isinstance(wdg, pn.widgets.Select):
        opts = wdg.options
        return [str(k) for k in (opts.keys() if isinstance(opts, dict) else opts)]
    v = getattr(wdg, "value", None)
    if v is None:
        return []
    if isinstance(v, float):   # as "0.00003052" (the path tab's format) or as "3.052e-05"
        return [f"{v:.10g}", format(v, ".8f").rstrip("0").rstrip(".")]
    return [str(v)]


def _input_width(wdg, big: bool) -> None:
    """Projector mode: an input box or dropdown with a fixed width at least as wide as its
    longest text at BIG_PX px (at 18 px "0.00003052" and "every 10 passes" were cut); off
    restores its width."""
    if wdg not in _WIDTHS:
        _WIDTHS[wdg] = wdg.width
    normal = _WIDTHS[wdg]
    if not isinstance(normal, int):
        return
    texts = _shown_texts(wdg)
    need = max((len(t) for t in texts), default=0) * INPUT_CHAR_PX + INPUT_PAD_PX
    want = max(normal, int(need + 0.5)) if big else normal
    if wdg.width != want:
        wdg.width = want


def designed_for_projector(*panes) -> None:
    """Mark text panes whose height their view chose for projector mode (not grown)."""
    for p in panes:
        _DESIGNED.add(p)


def _px(size) -> float:
    try:
        return float(str(size).strip().rstrip("px"))
    except ValueError:
        return BIG_PX


def _panel_models(fig):
    """The annotations in a figure's side panels and its plot frame (``center``), read from the
    figure's own lists: ``fig.select`` walks every model reachable from the figure, the data
    sources' columns included, and took seconds per figure on a busy machine."""
    return [m for name in ("center", "above", "below", "left", "right") for m in getattr(fig, name)]


def figure_texts(fig):
    """``(model, property)`` of every text size drawn in a Bokeh figure's canvas: the title,
    axis labels and tick labels, legend labels and titles, colour-bar titles and tick labels,
    Label/LabelSet annotations, text glyphs (e.g. the race's visit counts in their cells)."""
    from bokeh.models import ColorBar, GlyphRenderer, Label, LabelSet, Legend, Text, Title
    out = []
    for r in fig.renderers:
        if isinstance(r, GlyphRenderer) and isinstance(r.glyph, Text):
            out.append((r.glyph, "text_font_size"))
    panels = _panel_models(fig)
    titles = [fig.title] if isinstance(fig.title, Title) else []
    for m in titles + [m for m in panels if isinstance(m, Title) and m is not fig.title]:
        out.append((m, "text_font_size"))
    for a in fig.axis:
        out += [(a, "axis_label_text_font_size"), (a, "major_label_text_font_size")]
    for m in panels:
        if isinstance(m, Legend):
            out += [(m, "label_text_font_size"), (m, "title_text_font_size")]
    for m in panels:
        if isinstance(m, ColorBar):
            out += [(m, "title_text_font_size"), (m, "major_label_text_font_size")]
    for m in panels:
        if isinstance(m, (Label, LabelSet)):
            out.append((m, "text_font_size"))
    return out


def _fig_sizes(fig, big: bool) -> None:
    """The text sizes :func:`gaplab.app.views.fig_fonts` leaves alone (it sets the figure's
    title, its axes and its legends' labels): colour bars, legend titles, labels."""
    theirs = {(id(fig.title), "text_font_size")}
    theirs |= {(id(a), p) for a in fig.axis for p in ("axis_label_text_font_size", "major_label_text_font_size")}
    theirs |= {(id(leg), "label_text_font_size") for leg in fig.legend}
    for model, prop in figure_texts(fig):
        if (id(model), prop) in theirs:
            continue
        store = _NORMAL.setdefault(model, {})
        if prop not in store:
            store[prop] = getattr(model, prop)
        normal = store[prop]
        if isinstance(normal, dict) or normal is None:   # a field/expr spec: leave it
            continue
        want = f"{max(_px(normal), BIG_PX):g}px" if big else normal
        if getattr(model, prop) != want:
            setattr(model, prop, want)


_LEGENDS = weakref.WeakKeyDictionary()  # legend -> (its normal panel, orientation)


def _legend_places(fig, big: bool) -> None:
    """Projector mode: every legend drawn inside the plot frame goes below it (at 18 px a
    legend in a corner covers the curves and is cut at the frame's edge); off puts it back."""
    from bokeh.models import Legend
    for leg in [m for m in _panel_models(fig) if isinstance(m, Legend)]:
        if leg not in _LEGENDS:
            panel = next((name for name in ("center", "above", "below", "left", "right")
                          if leg in getattr(fig, name)), None)
            _LEGENDS[leg] = (panel, leg.orientation)
        panel, orientation = _LEGENDS[leg]
        want = "below" if big and panel == "center" else panel
        now = next((name for name in ("center", "above", "below", "left", "right")
                    if leg in getattr(fig, name)), None)
        if now != want and now is not None and want is not None:
            getattr(fig, now).remove(leg)
            fig.add_layout(leg, want)
        if leg.orientation != orientation:
            leg.orientation = orientation


def projector_sizes(layout, big: bool) -> None:
    """Projector mode on (``big``) or off for everything in a Panel ``layout``: widgets and tabs
    get :data:`PROJECTOR_CSS`; HTML/Markdown panes :data:`PROJECTOR_TEXT_CSS`, and a fixed
    height grown with their text (a 42-px summary of 13-px lines holds the same lines at
    18 px); input boxes and dropdowns as wide as their text at that size; every text of a Bokeh
    figure at least :data:`BIG_PX` px. Off restores the normal
    stylesheets, heights and sizes. Legends inside a plot frame move below it (and back)."""
    select = layout.select
    for wdg in list(select(pn.widgets.Widget)) + list(select(pn.Tabs)):
        if wdg not in _WIDGETS:
            _WIDGETS[wdg] = list(wdg.stylesheets)
        want = _WIDGETS[wdg] + [PROJECTOR_CSS] if big else _WIDGETS[wdg]
        if list(wdg.stylesheets) != want:
            wdg.stylesheets = want
        if isinstance(wdg, (pn.widgets.Select, pn.widgets.TextInput, pn.widgets.FloatInput,
                            pn.widgets.IntInput)) and not isinstance(wdg, pn.widgets.MultiSelect):
            _input_width(wdg, big)
    for pane in list(select(pn.pane.Markdown)) + list(select(pn.pane.HTML)):
        if pane not in _PANES:
            _PANES[pane] = (list(pane.stylesheets), pane.height)
        sheets, height = _PANES[pane]
        want = sheets + [PROJECTOR_TEXT_CSS] if big else sheets
        if list(pane.stylesheets) != want:
            pane.stylesheets = want
        if height and pane not in _DESIGNED:
            st = pane.styles or {}
            normal = _px(st.get("--gaplab-font-size", st.get("font-size", "14px")))
            h = round(height * max(1.0, BIG_PX / normal)) if big else height
            if pane.height != h:
                pane.height = h
    for pane in select(pn.pane.Bokeh):
        fig = pane.object
        if fig is not None and hasattr(fig, "title"):
            _fig_sizes(fig, big)
            _legend_places(fig, big)
