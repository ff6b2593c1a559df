"""The presenter tools in headless Chromium: a bookmarked URL opens the
same state, a bad query value is shown escaped and dropped from the URL, and the keys step,
go back and switch projector mode. One page on a server of its own (no warm-up wait)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from browser_env import require_browser
from gaplab.app.testing import CHROMIUM_ARGS, AppServer

pytestmark = pytest.mark.browser

sync_api, CHROMIUM = require_browser()

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"


def _wait(fn, timeout, what):
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = fn()
        if v:
            return v
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def test_url_state_and_keys_in_the_browser():
    ARTIFACTS.mkdir(exist_ok=True)
    with AppServer(ARTIFACTS / "presenter_server.log", session_lifetime_ms=1000, timeout=600) as srv:
        pw = sync_api.sync_playwright().start()
        try:
            b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
            page = b.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(60_000)
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
            b.close()
        finally:
            pw.stop()
