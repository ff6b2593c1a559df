"""``gaplab app --classroom``, watched in headless Chromium on 127.0.0.1: the command prints the
URL students type, and the lecturer's page (a loopback client) shows that URL and its QR code
once "Students' URL" is pressed; the QR code is an inline SVG whose title is the URL. With the
students on 127.0.0.2 the lecturer's page is served by the command's own process (the students'
by a child process).

Slow: a server process of its own (about 20-60 s on a loaded machine).
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from browser_env import require_browser, wait_until
from gaplab.app.testing import CHROMIUM_ARGS, free_port

pytestmark = [pytest.mark.browser, pytest.mark.slow]

sync_api, CHROMIUM = require_browser()

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

_QR_JS = """() => {
    const find = (root) => {
        const hit = root.querySelector('.gaplab-classroom-qr');
        if (hit) { return hit; }
        for (const el of root.querySelectorAll('*')) {
            if (el.shadowRoot) { const h = find(el.shadowRoot); if (h) { return h; } }
        }
        return null;
    };
    const el = find(document);
    if (!el) { return null; }
    const svg = el.querySelector('svg');
    const r = el.getBoundingClientRect();
    return {text: el.textContent, svg_title: svg ? svg.querySelector('title').textContent : null,
            svg_w: svg ? svg.getBoundingClientRect().width : 0, visible: r.width > 0 && r.height > 0};
}"""


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.2"])
def test_lecturer_page_shows_the_printed_url_and_its_qr_code(address):
    """The lecturer opens http://127.0.0.1:PORT/ in both cases; with the students on 127.0.0.2
    (a process of their own) that page is the main process's and shows the students' URL."""
    from gaplab.app.students import free_port_pair
    ARTIFACTS.mkdir(exist_ok=True)
    port = free_port() if address == "127.0.0.1" else free_port_pair("127.0.0.1", address)
    out, log = ARTIFACTS / f"classroom_page_{address}.out", ARTIFACTS / f"classroom_page_{address}.log"
    cmd = [sys.executable, "-m", "gaplab", "app", "--classroom", "--address", address, "--port", str(port)]
    with open(out, "w") as fo, open(log, "w") as fe:
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe)
    try:
        wait_until(lambda: "students open" in out.read_text() or proc.poll() is not None, 300, "the printed URL")
        url = f"http://{address}:{port}/"   # the students' URL; the lecturer's page is on 127.0.0.1
        assert f"gaplab app: classroom mode: students open {url}" in out.read_text(), log.read_text()
        pw = sync_api.sync_playwright().start()
        try:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.set_default_timeout(120_000)
            page.goto(f"http://127.0.0.1:{port}/", timeout=300_000)
            toggle = page.get_by_role("button", name="Students' URL", exact=True)
            toggle.wait_for(timeout=300_000)
            assert page.evaluate(_QR_JS) is None or not page.evaluate(_QR_JS)["visible"]
            toggle.click()
            shown = wait_until(lambda: (lambda r: r if r and r["visible"] else None)(page.evaluate(_QR_JS)),
                               60, "the QR code")
            assert url in shown["text"] and shown["svg_title"] == url and shown["svg_w"] >= 100
            page.screenshot(path=str(ARTIFACTS / f"classroom_qr_{address}.png"))
            toggle.click()
            wait_until(lambda: not (page.evaluate(_QR_JS) or {"visible": False})["visible"], 60, "the QR code hidden")
            browser.close()
        finally:
            pw.stop()
        time.sleep(0.1)
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
    finally:
        proc.terminate()
        proc.wait(20)
