"""The layout check itself (:func:`gaplab.app.testing.layout_problems` over
:func:`~gaplab.app.testing.text_layout`) on small pages in headless Chromium: it must see text
cut part-way by the edge of a scroll box, text cut by ``overflow: hidden``, and text covered by
a later sibling (also across shadow roots), and stay silent on a clean page."""
from __future__ import annotations

import pytest

from browser_env import require_browser
from gaplab.app.testing import layout_problems, text_layout

pytestmark = pytest.mark.browser

require_browser()   # skips the module without Playwright or Chromium


def _problems(browser, html):
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    try:
        page.set_content(f"<body style='font: 18px sans-serif; margin: 0'>{html}</body>")
        return layout_problems(text_layout(page), min_font=18)
    finally:
        ctx.close()


CLEAN = """
<p style='margin: 10px'>A paragraph with <b>bold</b> and <span style='background: #eee; padding: 0 3px;
  border-radius: 4px'>a chip</span> inside.</p>
<div style='height: 200px; overflow-y: auto; line-height: 24px'>
  <div>one</div><div>two</div><div>three</div></div>
<div class='gaplab-scroll-cue' style='height: 60px; overflow-y: auto; line-height: 30px'>
  <div>shown</div><div>shown too</div><div>scrolled away whole</div><div>and this</div></div>
<p>under the scroll box</p>
"""


def test_a_clean_page_has_no_problems(browser):
    """Lines a scroll box with a visible cue (``gaplab-scroll-cue``) scrolls away whole are
    reachable, not problems."""
    assert _problems(browser, CLEAN) == []


def test_lines_hidden_whole_in_a_scroll_box_without_a_cue_are_a_problem(browser):
    """CoNLL's fourth row of FW-corner chips was hidden whole under the narration: only the
    chips' top borders showed, and nothing said that more was there."""
    problems = _problems(browser, CLEAN.replace("class='gaplab-scroll-cue' ", ""))
    assert len(problems) == 2 and all(p.startswith("hidden in a scroll box") for p in problems) \
        and "'scrolled away whole'" in problems[0] and "'and this'" in problems[1], problems


def test_a_line_cut_part_way_by_a_scroll_box_is_a_problem(browser):
    """The third row of words half under the bottom edge of a 60-px scroll box (CoNLL's
    FW-corner chips under the narration)."""
    problems = _problems(browser, """
      <div style='height: 60px; overflow-y: auto; line-height: 24px'>
        <div>first row</div><div>second row</div><div>third row</div></div>""")
    assert len(problems) == 1 and problems[0].startswith("cut by its container") \
        and "'third row'" in problems[0], problems


def test_text_cut_by_overflow_hidden_is_a_problem(browser):
    problems = _problems(browser, """
      <div style='height: 30px; width: 300px; overflow: hidden; line-height: 24px'>
        <div>first row</div><div>second row</div></div>""")
    assert len(problems) == 1 and "'second row'" in problems[0] and "cut by" in problems[0], problems


def test_text_covered_by_a_later_sibling_is_a_problem(browser):
    """A box drawn over the text (a negative margin here; an absolutely placed pane in the app)
    hides it although neither clips it."""
    problems = _problems(browser, """
      <div style='line-height: 24px'><div>first row</div><div>second row</div></div>
      <div class='cover' style='position: relative; margin-top: -24px; height: 40px;
        background: #f4f7fa'></div>""")
    assert len(problems) == 1 and problems[0].startswith("covered by div.cover") \
        and "'second row'" in problems[0], problems


def test_text_covered_across_shadow_roots_is_a_problem(browser):
    """Panel draws every pane in a shadow root of its own: the covered text and the cover are
    in two of them."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    try:
        page.set_content("<body style='font: 18px sans-serif; margin: 0'><div id='a'></div>"
                         "<div id='b'></div></body>")
        page.evaluate("""() => {
          const a = document.getElementById('a').attachShadow({mode: 'open'});
          a.innerHTML = "<div style='line-height: 24px'><div>first row</div><div>second row</div></div>";
          const b = document.getElementById('b').attachShadow({mode: 'open'});
          b.innerHTML = "<div class='narration' style='position: relative; margin-top: -24px; " +
                        "height: 40px; background: #f4f7fa'><span style='margin-left: 300px'>on top</span></div>";
        }""")
        problems = layout_problems(text_layout(page), min_font=18)
    finally:
        ctx.close()
    assert len(problems) == 1 and "covered by div.narration" in problems[0] \
        and "'second row'" in problems[0], problems


def _fold_problems(browser, html):
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    try:
        page.set_content(f"<body style='font: 18px sans-serif; margin: 0'>{html}</body>")
        return layout_problems(text_layout(page), min_font=18, fold=True)
    finally:
        ctx.close()


def test_a_page_that_fits_its_viewport_has_no_fold_problem(browser):
    assert _fold_problems(browser, "<div style='height: 700px'><p>top</p><canvas width='400' height='300'>"
                                   "</canvas></div>") == []


def test_a_page_taller_than_its_viewport_and_what_its_bottom_cuts_are_problems(browser):
    """Projector mode at 1280×720 scrolled to 1072 px: the anatomy's numbers table started at
    y = 722 and the sampling plot's axis label was under the bottom edge."""
    problems = _fold_problems(browser, """
      <div style='height: 600px'>top</div>
      <canvas width='400' height='200' class='plot'></canvas>
      <p style='margin: 0'>the numbers table</p>""")
    assert problems[0].startswith("the page scrolls: scrollHeight 82") \
        and problems[0].endswith("px > the viewport's 720 px"), problems
    cut = [p for p in problems if p.startswith("cut by the viewport's bottom")]
    below = [p for p in problems if p.startswith("below the viewport's bottom")]
    assert len(cut) == 1 and "a canvas.plot at (0, 600)–(400, 80" in cut[0], problems
    assert len(below) == 1 and "'the numbers table'" in below[0], problems
    assert len(problems) == 3, problems
    # the same page without fold=True: the default check leaves what is below the fold alone
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    try:
        page.set_content("<body style='font: 18px sans-serif; margin: 0'><div style='height: 900px'>top</div>"
                         "<p>under</p></body>")
        assert layout_problems(text_layout(page), min_font=18) == []
        page.evaluate("window.scrollTo(0, 300)")   # measured scrolled: still the page's own fold
        assert len(layout_problems(text_layout(page), min_font=18, fold=True)) == 2
    finally:
        ctx.close()
