"""Rapid presenter keys in headless Chromium: every ← press goes back one step, however fast the
presses come (the server may merge a property's changes; the page sends running counts)."""
from __future__ import annotations

import functools
import re
import time

import pytest

from browser_env import one_page, require_browser, wait_until

# with the slow set (.ci/run runs it): a server of its own and 150 steps before the presses
pytestmark = [pytest.mark.browser, pytest.mark.slow]

sync_api, CHROMIUM = require_browser()

_wait = functools.partial(wait_until, poll=0.5)


def test_every_rapid_back_press_counts():
    with one_page("keys_rapid_server.log", CHROMIUM, sync_api) as (srv, page):
        page.goto(srv.url + "?dataset=toy&steps=150")
        status = page.locator(".gaplab-status").first
        _wait(lambda: "iteration 150 " in status.inner_text(), 600, "iteration 150")
        step_btn = page.get_by_role("button", name="Step", exact=True)
        _wait(lambda: step_btn.is_enabled(), 600, "the Step button")
        page.mouse.click(700, 300)
        for _ in range(120):                     # as fast as the page takes them
            page.keyboard.press("ArrowLeft", delay=0)
        _wait(lambda: "iteration 30 " in status.inner_text(), 120, "120 presses = 120 steps back")
        time.sleep(2.0)                          # and no more
        assert re.search(r"iteration 30\b", status.inner_text())
