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
