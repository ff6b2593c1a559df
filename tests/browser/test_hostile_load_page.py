"""Browser-asked work never blocks the server (issue 32 items 1 and 3): in headless Chromium,

- while one page opens a 200,000-step URL (replayed in its session's worker, in chunks), another
  page loads and its Step answers;
- a page that sets the keyboard component's ``counts`` to ``step:100000`` from its own JavaScript
  (what anyone can do from the browser's console) takes at most a few dozen Steps, and another
  page's Step still answers.

Hang guards only (generous timeouts), no latency bound: a Step that never answers fails.
Skipped with a reason when Playwright or a Chromium executable is missing.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from browser_env import require_browser, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

require_browser()

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
HANG_S = 180   # a Step that has not answered after this long counts as never

SET_COUNTS_JS = """(value) => {
    for (const doc of Bokeh.documents) {
        for (const m of doc.all_models) {
            if (m.data && m.data.properties && 'counts' in m.data.properties) {
                m.data.counts = value; return true;
            }
        }
    }
    return false;
}"""


@pytest.fixture(scope="module")
def server():
    """A warm server whose unused sessions live 60 s: on a loaded machine a page's websocket may
    connect more than a second after its HTML, and a session dropped in between leaves a page
    whose clicks reach no session (not what this module measures)."""
    from gaplab.app.testing import AppServer
    ARTIFACTS.mkdir(exist_ok=True)
    with AppServer(ARTIFACTS / "browser_hostile_load_server.log", session_lifetime_ms=60_000, timeout=900,
                   wait_warm=True) as srv:
        yield srv


class Page:
    def __init__(self, browser, url):
        self.ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        self.page = self.ctx.new_page()
        self.page.set_default_timeout(HANG_S * 1000)
        self.page.goto(url, timeout=HANG_S * 1000)
        self.step_button = self.page.get_by_role("button", name="Step", exact=True)

    def status(self) -> str:
        return self.page.locator(".gaplab-status").first.inner_text()

    def iteration(self) -> int:
        m = re.search(r"iteration ([\d,]+)", self.status())
        return int(m.group(1).replace(",", "")) if m else -1

    def step_answers(self) -> int:
        """Click Step once it is enabled; the iteration after it (fails after HANG_S)."""
        wait_until(lambda: self.step_button.is_enabled(), HANG_S, "the Step button")
        it = max(self.iteration(), 0)
        self.step_button.click()
        return wait_until(lambda: self.iteration() if self.iteration() > it else 0, HANG_S,
                          "the Step's answer")

    def close(self):
        self.ctx.close()


def test_another_page_steps_while_a_long_url_replays(server, browser):
    long = Page(browser, server.url + "?dataset=ocr-small&steps=200000")
    other = None
    try:
        # the long page is up at once and says what it is doing
        wait_until(lambda: "replaying" in long.status() or "200,000" in long.status(), HANG_S,
                   "the long URL's page saying it replays")
        other = Page(browser, server.url)
        assert other.step_answers() >= 1
        assert "replaying" in long.status() or long.iteration() == 200_000
        wait_until(lambda: long.iteration() == 200_000 and "replaying" not in long.status(), 1200,
                   "the long URL's 200,000 steps")
    finally:
        long.close()
        if other is not None:
            other.close()


def test_counts_set_from_the_page_take_at_most_a_few_steps(server, browser):
    from gaplab.app.keys import PRESS_CAPS
    hostile = Page(browser, server.url + "?dataset=ocr-small")
    other = None
    try:
        wait_until(lambda: hostile.step_button.is_enabled(), HANG_S, "the Step button")
        assert hostile.page.evaluate(SET_COUNTS_JS, "step:100000")
        other = Page(browser, server.url)
        assert other.step_answers() >= 1
        time.sleep(3.0)   # the hostile page's queue has run out by now (30 Steps of OCR-small)
        wait_until(lambda: hostile.iteration() >= 1, HANG_S, "the hostile page's capped Steps")
        assert 1 <= hostile.iteration() <= PRESS_CAPS["step"]
        assert hostile.page.evaluate(SET_COUNTS_JS, "step:1,bogus:9999999999")   # refused whole
        assert other.step_answers() >= 2
        assert hostile.iteration() <= PRESS_CAPS["step"]
        assert "Traceback" not in server.log()
    finally:
        hostile.close()
        if other is not None:
            other.close()
