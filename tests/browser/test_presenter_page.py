"""The presenter tools in headless Chromium: a bookmarked URL opens the
same state, a bad query value is shown escaped and dropped from the URL, and the keys step,
go back and switch projector mode. One page on a server of its own (no warm-up wait)."""
from __future__ import annotations

import functools
import time

import pytest

from browser_env import ARTIFACTS, one_page, require_browser, wait_until

# with the slow set (.ci/run runs it): a server of its own
pytestmark = [pytest.mark.browser, pytest.mark.slow]

sync_api, CHROMIUM = require_browser()

_wait = functools.partial(wait_until, poll=0.5)


def test_url_state_and_keys_in_the_browser():
    with one_page("presenter_server.log", CHROMIUM, sync_api) as (srv, page):
        page.goto(srv.url + "?dataset=ocr-small&sampling=uniform&steps=5&tab=convergence"
                  "&step_kind=<b>bold</b>")
        href = lambda: page.evaluate("location.href")   # noqa: E731 - page.url misses pushState
        # the state is applied once the dataset is loaded; the URL then says what is shown
        _wait(lambda: href().endswith("?dataset=ocr-small&sampling=uniform&tab=convergence&steps=5"),
              600, "the canonical URL")
        assert "bold" not in href()
        # the refused value is shown as text (escaped), not as markup
        assert page.get_by_text("<b>bold</b>", exact=False).count() >= 1
        status = page.locator(".gaplab-status").first
        _wait(lambda: "iteration 5 " in status.inner_text(), 60, "iteration 5 in the status line")
        # the keys work once the solver buttons are enabled (after the kernels compile)
        step_btn = page.get_by_role("button", name="Step", exact=True)
        _wait(lambda: step_btn.is_enabled(), 600, "the Step button")
        page.mouse.click(700, 300)
        page.keyboard.press(" ")
        _wait(lambda: "iteration 6 " in status.inner_text(), 30, "space = Step")
        page.keyboard.press(" ")
        _wait(lambda: "iteration 7 " in status.inner_text(), 30, "space = Step")
        page.keyboard.press("ArrowLeft")
        _wait(lambda: "iteration 6 " in status.inner_text(), 30, "← = Back")
        _wait(lambda: href().endswith("&steps=6"), 30, "the URL following the state")
        # a key typed into an input is the input's
        page.locator(".gaplab-w-n_steps input").first.click()
        page.keyboard.press("ArrowLeft")
        time.sleep(1.0)
        assert "iteration 6 " in status.inner_text()
        page.mouse.click(700, 300)
        page.keyboard.press("p")
        _wait(lambda: page.locator(".gaplab-topbar").first.is_visible(), 30, "p = projector mode")
        page.screenshot(path=str(ARTIFACTS / "presenter_keys.png"))
