"""What a class sees on the projector, checked on what the figures are given: an empty
Convergence or Cache plot says what it will show and when; every figure of every tab and
lesson page has explicit ranges (BokehJS warns "could not set initial ranges" for a range with
no start or end); the Cache tab's step strip ticks only whole steps."""
from __future__ import annotations

import math

import numpy as np
import pytest

pn = pytest.importorskip("panel")

from gaplab.app import views  # noqa: E402
from gaplab.app.lessons import LESSONS  # noqa: E402


@pytest.fixture(scope="module")
def app(module_app):
    return module_app


def _three_steps(s):
    s.reset()
    for _ in range(3):
        s.step()
    assert s.wait_idle(120)
    snap = s.snapshot
    assert snap.iteration == 3 and not any(r["kind"] == "pass" for r in snap.trace)
    return snap


def _note(label):
    return label.text if label.visible else ""


def test_empty_convergence_and_cache_plots_say_what_they_will_show_and_when(app):
    """After 3 steps (no pass finished) each empty plot carries a note in its frame: no pass
    finished yet, what is drawn per effective pass (n oracle calls, Paper Sec. 4) and when the
    exact gap comes (every 10 passes, the default gap check); the note goes once data is drawn."""
    s = app.session
    snap = _three_steps(s)
    n = snap.n
    gp, gt, pd, te = (views.GapView("passes"), views.GapView("time"), views.PrimalDualView(),
                      views.TestErrorView())
    cache = views.CacheView()
    for v in (gp, gt, pd, te, cache):
        v.update(snap)
    for v in (gp, gt):
        t = _note(v.wait_note)
        assert f"No pass finished yet: step 3 of the first n = {n:,}" in t, t
        assert "duality gap" in t and "heuristic gap Σᵢ ĝᵢ after each pass" in t and "every 10 passes" in t, t
        # the note sits inside the visible ranges (centred in the frame)
        assert v.fig.x_range.start <= v.wait_note.x <= v.fig.x_range.end
        assert v.fig.y_range.start <= v.wait_note.y <= v.fig.y_range.end
    assert "per effective pass (n max-oracle calls)" in _note(gp.wait_note)
    assert "against solver time" in _note(gt.wait_note)
    assert "dual D(α) is drawn after each effective pass" in _note(pd.wait_note)
    assert "primal P(w) at each exact gap check" in _note(pd.wait_note)
    assert "test error is computed" in _note(te.wait_note) and "every 10 passes" in _note(te.wait_note)
    rate = _note(cache.rate_note)
    assert f"No pass finished yet: step 3 of the first n = {n:,}" in rate
    assert "cache hit rate" in rate and "once per effective pass" in rate
    assert ("cache is off" in rate) == (not snap.config.get("cache"))
    act = _note(cache.active_note)
    assert act and (("keeps no atoms" in act) if not snap.tracks_atoms else ("|Sᵢ|" in act)), act
    # one pass later (gap sampling: every block visited) the curves are drawn and the notes go
    s.step_n(n)
    assert s.wait_idle(300)
    snap = s.snapshot
    assert any(r["kind"] == "pass" for r in snap.trace)
    for v in (gp, gt, pd, cache):
        v.update(snap)
    assert _note(gp.wait_note) == "" and _note(gt.wait_note) == "" and _note(pd.wait_note) == ""
    assert _note(cache.rate_note) == ""
    # no exact gap check before 10 passes: the test-error plot still says when it comes
    te.update(snap)
    assert "every 10 passes" in _note(te.wait_note)


def test_gap_note_says_never_when_exact_checks_are_off(app):
    s = app.session
    s.gap_check = math.inf
    try:
        snap = _three_steps(s)
        v = views.GapView("passes")
        v.update(snap)
        assert "never (exact gap check ∞" in _note(v.wait_note)
    finally:
        s.gap_check = 10
        assert s.wait_idle(120)


def _figures_of(layout):
    from bokeh.models import Plot
    out = []
    for p in layout.select(pn.pane.Bokeh):
        if isinstance(p.object, Plot):
            out.append(p.object)
    for p in layout.select(pn.pane.HoloViews):
        if p.object is not None:
            out += [m for m in pn.pane.HoloViews(p.object, backend="bokeh").get_root().select({"type": Plot})]
    return out


def _bad_ranges(fig):
    """Ranges of a figure that give BokehJS no start or end (NaN start + end): a Range1d without
    finite ends, an auto range (DataRange1d) over sources that are all empty. (An empty
    FactorRange spans [0, 0] in BokehJS: no warning.)"""
    from bokeh.models import DataRange1d, Range1d
    from gaplab.app.views.figures import LEGEND_SAMPLE_TAG
    has_data = any(any(len(v) for v in getattr(getattr(r, "data_source", None), "data", {}).values())
                   for r in fig.renderers if r.tags[:1] != [LEGEND_SAMPLE_TAG])
    bad = []
    ranges = [("x", fig.x_range), ("y", fig.y_range)] + [(f"x:{k}", r) for k, r in fig.extra_x_ranges.items()] \
        + [(f"y:{k}", r) for k, r in fig.extra_y_ranges.items()]
    for name, r in ranges:
        if isinstance(r, Range1d):
            ok = r.start is not None and r.end is not None and np.isfinite(float(r.start) + float(r.end))
        elif isinstance(r, DataRange1d):
            ok = (r.start is not None and r.end is not None and np.isfinite(float(r.start) + float(r.end))) \
                or has_data
        else:
            ok = True
        if not ok:
            title = getattr(getattr(fig, "title", None), "text", "") or type(fig).__name__
            bad.append(f"{title!r} {name}: {type(r).__name__}")
    return bad


def test_every_figure_of_every_tab_and_lesson_has_explicit_ranges(app):
    """BokehJS warns "could not set initial ranges" on each redraw of a figure whose range has no
    start/end (an auto range over empty data, a factor range without factors): every figure on
    every tab, and on every lesson page, is given its ranges."""
    from gaplab.app.main import LESSONS as LESSONS_TAB
    app.session.reset()
    bad = []
    for t in range(len(app.TAB_NAMES)):
        app._ensure_tab(t)
    app.refresh(force=True)
    for t in range(len(app.TAB_NAMES)):
        for f in _figures_of(app._boxes[t]):
            bad += [f"{app.TAB_NAMES[t]}: {b}" for b in _bad_ranges(f)]
    lp = app.lessons
    for page in range(len(LESSONS)):
        lp.go(page)
        app.refresh(force=True)
        for f in _figures_of(lp.live):
            bad += [f"lesson {page + 1}: {b}" for b in _bad_ranges(f)]
    assert app.TAB_NAMES[LESSONS_TAB] == "Lessons"
    assert bad == [], "\n".join(bad)


def _rows(r):
    data = getattr(getattr(r, "data_source", None), "data", {}) or {}
    return max((len(v) for v in data.values()), default=0)


def test_every_legend_entry_has_a_sample_to_draw(app):
    """BokehJS draws a legend entry's line/marker sample from the entry's renderers that have at
    least one data row (none for a renderer with an empty source): after 3 steps, before any
    curve has a point, every shown entry of every figure on every tab (and lesson page) still
    has a renderer with a row, and the samples draw no data (NaN)."""
    from bokeh.models import Legend
    from gaplab.app.views.figures import LEGEND_SAMPLE_TAG
    s = app.session
    _three_steps(s)
    for t in range(len(app.TAB_NAMES)):
        app._ensure_tab(t)
    app.refresh(force=True)
    figs = [(app.TAB_NAMES[t], f) for t in range(len(app.TAB_NAMES)) for f in _figures_of(app._boxes[t])]
    lp = app.lessons
    for page in range(len(LESSONS)):
        lp.go(page)
        app.refresh(force=True)
        figs += [(f"lesson {page + 1}", f) for f in _figures_of(lp.live)]
    bare, checked = [], 0
    for where, f in figs:
        for leg in f.select({"type": Legend}):
            for item in leg.items:
                if not item.visible or not item.renderers:
                    continue
                checked += 1
                if not any(_rows(r) for r in item.renderers):
                    label = item.label.get("value") if isinstance(item.label, dict) else item.label
                    bare.append(f"{where}: {f.title.text!r}: {label!r}")
                for r in item.renderers:
                    if r.tags[:1] == [LEGEND_SAMPLE_TAG]:
                        assert "x" not in r.data_source.data
                        assert all(np.isnan(v[0]) for v in r.data_source.data.values())
    assert checked >= 10
    assert bare == [], "\n".join(bare)


def test_projector_mode_lifts_text_glyphs_to_18px(app):
    """Text drawn as a glyph (the race's visit counts in their cells, the toy bars' counts) was
    11-13 px on the projector; projector mode lifts it to 18 px and gives it back after."""
    from bokeh.models import GlyphRenderer, Text
    from gaplab.app.main import RACE, TOY  # noqa: F401
    for t in (RACE, TOY):
        app._ensure_tab(t)
    texts = [r.glyph for t in (RACE, TOY) for f in _figures_of(app._boxes[t])
             for r in f.select({"type": GlyphRenderer}) if isinstance(r.glyph, Text)]
    assert len(texts) >= 3
    normal = [g.text_font_size for g in texts]
    assert min(float(v.rstrip("px")) for v in normal) < 18
    app.set_projector(True)
    try:
        for t in (RACE, TOY):
            app._size_tab(t)   # as showing the tab does
        assert all(float(g.text_font_size.rstrip("px")) >= 18 for g in texts), [g.text_font_size for g in texts]
    finally:
        app.set_projector(False)
    for t in (RACE, TOY):   # a tab is restyled when it is shown again
        app._size_tab(t)
    assert [g.text_font_size for g in texts] == normal
