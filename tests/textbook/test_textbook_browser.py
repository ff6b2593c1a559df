"""The exported lesson pages in headless Chromium, opened from ``file://`` with every other request
refused: the scrubbers and switches redraw the figures with the recorded trace's data (read from
the page's BokehJS document), a person's clicks and keys move them, nothing is fetched, nothing
is logged as an error, and a 390-px phone never scrolls sideways."""
import contextlib

import numpy as np
import pytest

from browser_env import launched_browser, require_browser
from gaplab.app.textbook import ocr_fig, race_fig

pytestmark = pytest.mark.browser
sync_api, CHROMIUM = require_browser()

_DATA = """(names) => Object.fromEntries(names.map((name) => {
  const m = Bokeh.documents[0].get_model_by_name(name);
  return [name, Object.fromEntries(Object.entries(m.data).map(([k, v]) => [k, Array.from(v)]))];
}))"""
_SET = """([name, attr, value]) => { Bokeh.documents[0].get_model_by_name(name)[attr] = value;
  return new Promise((done) => requestAnimationFrame(() => done(true))); }"""
_GET = "([name, attr]) => Bokeh.documents[0].get_model_by_name(name)[attr]"


@pytest.fixture(scope="module")
def browser():
    yield from launched_browser(sync_api, CHROMIUM)


@contextlib.contextmanager
def opened(browser, path, viewport=(1280, 800)):
    """A page on ``path`` (file://) with every non-file request refused and recorded; on exit,
    no console error, no page error and no request elsewhere."""
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
    errors, fetched = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url.startswith("file:"):
            return r.continue_()
        fetched.append(r.request.url)
        return r.abort()
    page.route("**/*", route)
    page.set_default_timeout(60_000)
    try:
        page.goto(path.as_uri())
        page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0 && "
                               "document.querySelector('.bk-Column, .bk-Row') !== null")
        page.wait_for_timeout(300)
        yield page
        assert errors == [], errors
        assert fetched == [], fetched
    finally:
        page.close()


def _set(page, name, attr, value):
    page.evaluate(_SET, [name, attr, value])


def test_the_race_redraws_the_recorded_race(browser, exported_pages, textbook_data):
    _, data = textbook_data["race_fig"]
    with opened(browser, exported_pages[race_fig.LESSON]) as page:
        for vi, v in enumerate(data["variants"]):
            _set(page, "race_switch", "active", vi)
            assert page.evaluate(_GET, ["race_scrubber", "end"]) == v["ticks"]
            for t in (0, 37, v["ticks"] // 2, v["ticks"]):
                _set(page, "race_scrubber", "value", t)
                got = page.evaluate(_DATA, ["race_heat_uniform", "race_heat_gap", "race_curve_uniform",
                                            "race_curve_gap"])
                for side in race_fig.SIDES:
                    rec = v["sides"][side]
                    assert got[f"race_heat_{side}"]["visits"] == race_fig.visits_at(rec, t, v["n"]).tolist()
                    curve = got[f"race_curve_{side}"]
                    assert np.allclose(curve["x"], np.asarray(rec["calls"][: t + 1]) / v["n"])
                    gaps = np.asarray(rec["gap"][: t + 1])
                    pos = gaps > 0
                    assert np.allclose(np.asarray(curve["y"])[pos], gaps[pos], rtol=1e-12)
                text = page.evaluate(_GET, ["race_readout", "text"])
                assert f"after <b>{t:,}</b> oracle calls" in text


def _expected_bars(g, stale, prob):
    from gaplab.app.views.blocks import BlockGapsView, _bins
    st = np.where(stale >= 0, stale, np.nan).astype(float)
    return _bins(g.size, BlockGapsView.MAX_BARS, g, np.isfinite(g), st, None, prob)


def _nan_equal(a, b, rtol=1e-9):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.array_equal(np.isnan(a), np.isnan(b)) and \
        np.allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=rtol)


@pytest.mark.parametrize("variant", [0, 1])
def test_the_ocr_steps_redraw_the_recorded_run(browser, exported_pages, textbook_data, variant):
    _, data = textbook_data["ocr_fig"]
    V = data["variants"][variant]
    with opened(browser, exported_pages[ocr_fig.LESSON]) as page:
        _set(page, "ocr_sampler", "active", variant)
        for stretch, offsets in ((0, (1, 9, 626, 1252)), (1, (1, 60, 61, 200))):
            _set(page, "ocr_stretch", "active", stretch)
            S = V["stretches"][stretch]
            for off in offsets:
                k = S["first"] + off
                _set(page, "ocr_scrubber", "value", k)
                got = page.evaluate(_DATA, ["ocr_state", "ocr_bars", "ocr_probs"])
                g, it = ocr_fig.state_at(V, stretch, k)
                stale = np.where(it >= 0, k - it, -1)
                prob = ocr_fig.probabilities(V["sampling"], g)
                st = got["ocr_state"]
                assert np.array_equal(np.asarray(st["g"], dtype=float), g) and st["stale"] == stale.tolist()
                assert np.allclose(st["prob"], prob, rtol=1e-12)
                b, x, lo, hi, gb, sb, eb, pb = _expected_bars(g, stale, prob)
                bars = got["ocr_bars"]
                assert np.allclose(bars["x"], x) and _nan_equal(bars["gap"], gb) and _nan_equal(bars["stale"], sb)
                assert np.allclose(got["ocr_probs"]["top"], pb)
                j = k - S["first"] - 1
                said = page.evaluate(_GET, ["ocr_sentence", "text"])
                assert ocr_fig.sentence_at(data, S["tpl"][j], S["nums"][j]) in said
                assert f"steps={k}" in said
                head = page.evaluate(_GET, ["ocr_head", "text"])
                assert f"<b>Block step {k:,}</b>" in head and f"block <b>{S['block'][j]:,}</b>" in head


def test_a_person_clicks_types_and_plays(browser, exported_pages):
    with opened(browser, exported_pages[ocr_fig.LESSON]) as page:
        page.get_by_role("button", name="uniform sampling").click()
        page.wait_for_timeout(200)
        assert page.evaluate(_GET, ["ocr_sampler", "active"]) == 1
        prob = page.evaluate(_DATA, ["ocr_state"])["ocr_state"]["prob"]
        assert np.allclose(prob, 1 / len(prob))
        handle = page.locator(".noUi-handle").first
        handle.focus()
        v0 = page.evaluate(_GET, ["ocr_scrubber", "value"])
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(200)
        assert page.evaluate(_GET, ["ocr_scrubber", "value"]) == v0 + 2
        assert f"<b>Block step {v0 + 2:,}</b>" in page.evaluate(_GET, ["ocr_head", "text"])
        page.get_by_role("button", name="▶ Play").click()
        page.wait_for_function(f"() => Bokeh.documents[0].get_model_by_name('ocr_scrubber').value >= {v0 + 8}")
        page.get_by_role("button", name="❚❚ Pause").click()
        page.wait_for_timeout(300)
        paused = page.evaluate(_GET, ["ocr_scrubber", "value"])
        page.wait_for_timeout(400)
        assert page.evaluate(_GET, ["ocr_scrubber", "value"]) == paused


def _longest_word_step(data) -> int:
    """The step of the first stretch (gap sampling) whose block has the longest word."""
    S = data["variants"][0]["stretches"][0]
    j = max(range(len(S["block"])), key=lambda j: len(data["truth"][str(S["block"][j])]))
    return S["first"] + 1 + j


@pytest.mark.parametrize("lesson", [ocr_fig.LESSON, race_fig.LESSON])
def test_a_phone_never_scrolls_sideways(browser, exported_pages, textbook_data, lesson):
    if lesson == ocr_fig.LESSON:   # the longest word's letters, then the exact gap pass's sentence
        data = textbook_data["ocr_fig"][1]
        moves = [("ocr_scrubber", "value", _longest_word_step(data)), ("ocr_stretch", "active", 1),
                 ("ocr_scrubber", "value", data["variants"][0]["gap_pass"])]
    else:                          # the largest toy: the most cells and the longest curves
        moves = [("race_switch", "active", 2), ("race_scrubber", "value", 2000)]
    with opened(browser, exported_pages[lesson], viewport=(390, 844)) as page:
        for name, attr, value in [(None, None, None)] + moves:
            if name is not None:
                _set(page, name, attr, value)
                page.wait_for_timeout(200)
            width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
            assert width[0] <= width[1], (lesson, name, width)
            # and every figure, and everything in it, fits the screen
            right = page.evaluate("() => Math.max(...[...document.querySelectorAll('section.figure')]"
                                  ".map((s) => s.getBoundingClientRect().right))")
            assert right <= 390, right
            if lesson == ocr_fig.LESSON:   # the word's letters (in the figure's shadow DOM) too
                letters = page.locator("span.L, span.I")
                assert letters.count() > 0
                right = letters.evaluate_all("(els) => Math.max(...els.map((e) => e.getBoundingClientRect().right))")
                assert right <= 390, right
