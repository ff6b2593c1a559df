"""Rapid presenter keys in headless Chromium: every ← press goes back one step, however fast the
presses come (the server may merge a property's changes; the page sends running counts)."""
from __future__ import annotations

import re
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


def test_every_rapid_back_press_counts():
    ARTIFACTS.mkdir(exist_ok=True)
    with AppServer(ARTIFACTS / "keys_rapid_server.log", session_lifetime_ms=1000, timeout=600) as srv:
        pw = sync_api.sync_playwright().start()
        try:
            b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
            page = b.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(60_000)
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
            b.close()
        finally:
            pw.stop()
