"""The served app in headless Chromium (Debian's chromium driven by Playwright) fed hostile input:

- a typed store path, a path store's manifest entry and a sweep store's ``spec_version`` that
  carry ``<img src=x onerror=...>``: shown as text; the script never runs (``document.title``
  unchanged, no dialog);
- a path store's directory typed and the Open store button clicked without pressing Enter first
  (the value change and the click reach the server together): the store opens, and the server
  logs no traceback (it raised ``_pending_writes should be non-None`` from a ``src.data = …``
  outside the document's lock).

Skipped with a reason when Playwright or a Chromium executable is missing.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from browser_env import require_browser, warm_app_server

pytestmark = pytest.mark.browser

require_browser()   # skips the module without Playwright or Chromium

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
TIMEOUT_MS = 30_000
SCRIPT = "document.title=document.domain+location.port"
IMG = f"<img src=x onerror={SCRIPT}>"


@pytest.fixture(scope="module")
def server():
    yield from warm_app_server(ARTIFACTS / "browser_security_server.log")


@pytest.fixture(scope="module")
def ocr_store(tmp_path_factory):
    """A short path store of OCR-small (the app's default dataset)."""
    from gaplab.core.problems import get_problem
    from gaplab.core.regpath import PathConfig, regularization_path
    problem = get_problem("ocr-small").load()
    store = tmp_path_factory.mktemp("security_browser") / "ocr_small_store"
    saved = regularization_path(problem.model, PathConfig(eps=0.5, lam_min=0.1), test_data=problem.test,
                                meta={"dataset": "ocr-small"}, store=store)
    return store, len(saved)


class Page:
    """One browser context on the app: its dialogs, page errors and title."""

    def __init__(self, browser, url):
        self.ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        self.page = self.ctx.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.dialogs, self.errors = [], []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url, timeout=60_000)
        self.page.get_by_role("button", name="Step", exact=True).wait_for()
        self.title = self.page.title()

    def tab(self, name):
        self.page.locator(".bk-tab", has_text=name).first.click()

    def type_and_click(self, box_css, text, button):
        """Type into a text box and click the button at once (no Enter, no blur before)."""
        box = self.page.locator(f"{box_css} input").first
        box.fill(text)
        self.page.get_by_role("button", name=button, exact=True).click()

    def assert_no_script_ran(self):
        time.sleep(1.0)   # an <img onerror> fires after its failed load
        assert self.page.title() == self.title, self.page.title()
        assert self.dialogs == []
        # no <img src=x> anywhere in the page (shadow roots included)
        n = self.page.evaluate("""() => { let n = 0;
            const walk = (root) => { for (const el of root.querySelectorAll('*')) {
                if (el.tagName === 'IMG' && el.getAttribute('src') === 'x') n++;
                if (el.shadowRoot) walk(el.shadowRoot); } };
            walk(document); return n; }""")
        assert n == 0

    def close(self):
        self.ctx.close()


@pytest.fixture
def page(server, browser):
    p = Page(browser, server.url)
    yield p
    p.close()


def assert_quiet_server(server):
    """No traceback in the server's log (the app reports bad input in the page, in one line)."""
    log = server.log()
    assert "Traceback" not in log and "_pending_writes" not in log, log[-3000:]


def test_a_typed_store_path_with_a_script_is_text(server, page):
    page.tab("Regularization path")
    path = "/x" + IMG
    page.type_and_click(".gaplab-path-store", path, "Open store")
    page.page.get_by_text("Open path store:", exact=False).first.wait_for()
    page.page.get_by_text(path, exact=False).first.wait_for()
    page.assert_no_script_ran()
    page.page.screenshot(path=str(ARTIFACTS / "browser_security_typed_path.png"))
    assert_quiet_server(server)


def test_a_path_store_with_a_script_in_a_file_entry_is_text(server, page, ocr_store, tmp_path):
    import shutil
    src, _ = ocr_store
    store = tmp_path / "tampered"
    shutil.copytree(src, store)
    man = json.loads((store / "manifest.json").read_text())
    man["files"][2]["file"] = IMG
    (store / "manifest.json").write_text(json.dumps(man))
    page.tab("Regularization path")
    page.type_and_click(".gaplab-path-store", str(store), "Open store")
    page.page.get_by_text("broken file entry", exact=False).first.wait_for()
    page.assert_no_script_ran()
    assert_quiet_server(server)


def test_a_sweep_store_with_a_script_in_its_spec_version_is_text(server, page, tmp_path):
    store = tmp_path / "sweep"
    (store / "runs").mkdir(parents=True)
    cfg = {"kind": "solve", "method": IMG, "dataset": IMG, "lam": IMG, "seed": 0}
    (store / "manifest.json").write_text(json.dumps({
        "store_format": 1, "spec_name": "tampered", "spec_version": IMG, "spec": {},
        "runs": {"r1": {"status": "failed", "config": cfg, "error": IMG, "attempts": 1}}}))
    page.tab("Sweeps")
    page.type_and_click(".gaplab-sweeps-path", str(store), "Load store")
    page.page.get_by_text("1 runs recorded", exact=False).first.wait_for()
    page.page.get_by_text(f"v{IMG}", exact=False).first.wait_for()
    page.assert_no_script_ran()
    page.page.screenshot(path=str(ARTIFACTS / "browser_security_sweep.png"))
    assert_quiet_server(server)


def test_open_store_typed_and_clicked_without_enter(server, page, ocr_store):
    store, J = ocr_store
    page.tab("Regularization path")
    page.type_and_click(".gaplab-path-store", str(store), "Open store")
    count = page.page.locator(".gaplab-path-breakpoints").first
    count.wait_for()
    assert int(count.inner_text()) == J
    xs = page.page.evaluate("""() => {
        const src = window.Bokeh.documents[0].get_model_by_name('path_gaps');
        return Array.from(src.data.x).length; }""")
    assert xs == J
    time.sleep(0.5)
    assert_quiet_server(server)
    assert page.errors == []
