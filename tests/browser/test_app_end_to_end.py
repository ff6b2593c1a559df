"""End-to-end tests in headless Chromium (Debian's chromium driven by Playwright) against the app
served on 127.0.0.1. Screenshots go to artifacts/ (look at them).

Skipped with a reason when Playwright or a Chromium executable is missing (``.ci/run``
installs Debian's chromium; never ``playwright install``).
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

import numpy as np
import pytest

from browser_env import require_browser, warm_app_server
from gaplab.app.testing import AppServer

pytestmark = pytest.mark.browser

require_browser()   # skips the module without Playwright or Chromium

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
TIMEOUT_MS = 30_000
CONLL = next((d for d in ([Path(os.environ["GAPLAB_DATA"]), Path(os.environ["GAPLAB_DATA"]) / "conll2000"]
                          if os.environ.get("GAPLAB_DATA") else []) + [ROOT.parent / "shared" / "data" / "conll2000"]
              if (d / "train.txt").exists() and (d / "test.txt").exists()), None)


@pytest.fixture(scope="module")
def server():
    env = {"GAPLAB_DATA": str(CONLL)} if CONLL is not None else None
    yield from warm_app_server(ARTIFACTS / "browser_server.log", env)


def _local(url: str) -> bool:
    """A URL the page may fetch offline: the app's server, or data/blob/about URLs."""
    from urllib.parse import urlsplit
    parts = urlsplit(url)
    return parts.scheme in ("data", "blob", "about") or parts.hostname in ("localhost", "127.0.0.1", "::1")


class Page:
    """One browser context on the app with its console log."""

    def __init__(self, browser, url, viewport=(1400, 900), wait_ready=True, bokeh_js_delay_s=0.0):
        self.ctx = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]},
                                       accept_downloads=True)
        self.page = self.ctx.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.console = []
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.console.append(("pageerror", str(e))))
        # the URLs behind "Failed to load resource" console errors (the console text omits them)
        self.failed_requests = []
        self.page.on("requestfailed", lambda r: self.failed_requests.append((r.url, r.failure)))
        # the app must work without internet (a classroom): every request goes to its own server
        self.external = []
        self.page.on("request", lambda r: None if _local(r.url) else self.external.append(r.url))
        if bokeh_js_delay_s:  # a slow page: BokehJS arrives after the delay
            self.page.route("**/static/js/bokeh.min.js*",
                            lambda route: (time.sleep(bokeh_js_delay_s), route.continue_()))
        self.page.goto(url, timeout=60_000)
        self.button("Step").wait_for()
        if wait_ready:
            self.wait_status(r"● ready")
            self.wait_block_plot()

    def wait_block_plot(self, timeout_ms=TIMEOUT_MS):
        """The Step tab's per-block gap plot is made once the page has loaded (after "ready")."""
        self.page.wait_for_function("""() => { const d = window.Bokeh && window.Bokeh.documents[0];
            return !!(d && d.get_model_by_name('block_gaps')); }""", timeout=timeout_ms, polling=50)

    def button(self, name):
        return self.page.get_by_role("button", name=name, exact=True)

    def status(self) -> str:
        return self.page.locator(".gaplab-status").first.inner_text()

    def wait_status(self, pattern, timeout=TIMEOUT_MS / 1000):
        deadline = time.time() + timeout
        text = ""
        while time.time() < deadline:
            try:
                text = self.status()
            except Exception:
                text = ""
            if re.search(pattern, text):
                return text
            time.sleep(0.05)
        self.shot("timeout")
        raise AssertionError(f"status never matched {pattern!r}; last: {text!r}")

    def iteration(self) -> int:
        m = re.search(r"iteration ([\d,]+)", self.status())
        return int(m.group(1).replace(",", ""))

    def block(self) -> int:
        return int(self.page.locator(".gaplab-block").first.inner_text())

    def finite_bars(self) -> int:
        return self.page.evaluate("""() => {
            const src = window.Bokeh.documents[0].get_model_by_name('block_gaps');
            let k = 0; for (const v of src.data.top) { if (Number.isFinite(v)) k++; } return k; }""")

    def errors(self):
        """Console errors, page errors and requests that left the machine (e.g. to a CDN)."""
        return ([m for m in self.console if m[0] in ("error", "pageerror")]
                + [("external request", u) for u in self.external])

    def shot(self, name):
        self.page.screenshot(path=str(ARTIFACTS / f"browser_{name}.png"))

    def close(self):
        self.ctx.close()


@pytest.fixture
def page(server, browser):
    p = Page(browser, server.url)
    yield p
    p.close()


def test_page_loads_without_console_errors(page):
    assert "ocr-small" in page.status() and "(n = 626)" in page.status() and page.iteration() == 0
    page.shot("loaded")
    page.page.locator(".bk-tab", has_text="Lessons").first.click()
    page.page.get_by_text("The structured SVM and its dual").wait_for()
    page.page.locator("mjx-container, svg[role='img'], .MathJax").first.wait_for(timeout=10_000)
    time.sleep(0.5)
    page.shot("lessons")
    for tab in ("Convergence", "Cache & active sets", "Toy example", "Step"):
        page.page.locator(".bk-tab", has_text=tab).first.click()
        time.sleep(0.4)
    assert page.errors() == [], page.failed_requests


def test_a_page_slower_than_the_session_lifetime_stays_offline(server, browser):
    """A page whose websocket connects after the server discarded its unused session (1 s here;
    under load in CI) gets a session re-created by the server, never rendered as HTML: every
    stylesheet must still come from the app's server (a pn.layout.Divider's did not, and CI
    without internet failed on cdn.holoviz.org requests)."""
    p = Page(browser, server.url, bokeh_js_delay_s=2.5)
    try:
        p.button("Step").click()
        p.wait_status(r"iteration 1\b")
        assert p.errors() == [], (p.external, p.failed_requests)
    finally:
        p.close()


def test_step_changes_block_index_and_gap_plot(page):
    assert page.finite_bars() == 0
    page.button("Step").click()
    page.wait_status(r"iteration 1\b")
    page.page.locator(".gaplab-block").first.wait_for()
    first = page.block()
    deadline = time.time() + 5
    while page.finite_bars() != 1 and time.time() < deadline:
        time.sleep(0.05)
    assert page.finite_bars() == 1
    seen = {first}
    for k in range(2, 5):
        page.button("Step").click()
        page.wait_status(rf"iteration {k}\b")
        time.sleep(0.15)
        seen.add(page.block())
    # one bar per bin of b blocks (b from the bars' block ranges): the visited blocks' bins
    b = page.page.evaluate("""() => { const d = window.Bokeh.documents[0].get_model_by_name('block_gaps').data;
        return d.hi[0] - d.lo[0] + 1; }""")
    assert len(seen) > 1 and page.finite_bars() == len({i // b for i in seen})
    page.shot("step")
    assert page.errors() == [], page.failed_requests


def _set_budget(page, value):
    box = page.page.locator(".gaplab-w-max_passes input").first
    box.fill(str(value))
    box.press("Enter")
    time.sleep(0.3)


def test_run_then_stop(page):
    _set_budget(page, 100000)
    page.button("▶ Run").click()
    page.wait_status(r"running")
    time.sleep(1.0)
    page.shot("running")
    it_running = page.iteration()
    assert it_running > 0
    page.button("■ Stop").click()
    page.wait_status(r"stopped", timeout=2.0)
    it = page.iteration()
    time.sleep(0.6)
    assert page.iteration() == it >= it_running
    page.shot("stopped")
    assert page.errors() == [], page.failed_requests


def test_switching_dataset_mid_run(page):
    _set_budget(page, 100000)
    page.button("▶ Run").click()
    page.wait_status(r"running")
    time.sleep(0.5)
    page.page.locator(".gaplab-w-dataset select").first.select_option("ocr-large")
    page.wait_status(r"ready.*ocr-large.*\(n = 6,251\) · iteration 0\b", timeout=60)
    page.button("Step").click()
    page.wait_status(r"ocr-large.*iteration 1\b")
    page.shot("switched_dataset")
    assert page.errors() == [], page.failed_requests


def test_two_browser_contexts_stay_independent(server, browser):
    a, b = Page(browser, server.url), Page(browser, server.url)
    try:
        for k in range(1, 4):
            a.button("Step").click()
            a.wait_status(rf"iteration {k}\b")
        assert b.iteration() == 0
        b.page.locator(".gaplab-w-sampling select").first.select_option("uniform")
        b.wait_status(r"ready")
        b.button("Step").click()
        b.wait_status(r"iteration 1\b")
        time.sleep(0.3)
        assert a.iteration() == 3 and a.page.locator(".gaplab-w-sampling select").first.input_value() == "gap"
        a.shot("context_a")
        b.shot("context_b")
        assert a.errors() == [] and b.errors() == [], (a.failed_requests, b.failed_requests)
    finally:
        a.close()
        b.close()


def test_toy_tab_shows_a_speedup(page):
    page.page.locator(".bk-tab", has_text="Toy example").first.click()
    page.button("Run comparison").click()
    head = page.page.get_by_text(re.compile(r"speed-up [\d.]+×"))
    head.wait_for(timeout=60_000)
    m = re.search(r"speed-up ([\d.]+)×", head.inner_text())
    assert m and float(m.group(1)) > 1
    time.sleep(0.5)
    page.shot("toy")
    assert page.errors() == [], page.failed_requests


def _fill(page, css, value):
    box = page.page.locator(f"{css} input").first
    box.fill(str(value))
    box.press("Enter")
    time.sleep(0.2)


def test_path_tab_traces_breakpoints_and_picks_a_lambda(page):
    page.page.locator(".bk-tab", has_text="Regularization path").first.click()
    page.button("▶ Start path").wait_for()
    _fill(page, ".gaplab-path-eps", 0.3)
    _fill(page, ".gaplab-path-lam_min", 0.1)
    page.button("▶ Start path").click()
    count = page.page.locator(".gaplab-path-breakpoints").first
    count.wait_for()
    deadline = time.time() + 60
    while time.time() < deadline and int(count.inner_text()) < 3:
        time.sleep(0.1)
    assert int(count.inner_text()) >= 3
    page.page.locator(".gaplab-path-end").first.wait_for(timeout=60_000)
    n = int(count.inner_text())
    assert n >= 3 and page.page.locator(".gaplab-path-end").first.inner_text() == "lam_min"
    time.sleep(0.5)
    page.shot("path")
    # a click on the test-error plot picks the λ under the mouse and loads its model
    box = page.page.locator(".gaplab-path-test").first.bounding_box()
    page.page.mouse.click(box["x"] + 0.55 * box["width"], box["y"] + 0.55 * box["height"])
    page.page.locator(".gaplab-path-picked").first.wait_for(timeout=30_000)
    page.wait_status(r"ready.*\(from the path\)", timeout=30)
    picked = float(page.page.locator(".gaplab-path-picked").first.inner_text())
    lo, hi = 0.1 / 2, 1e4
    assert lo < picked < hi
    time.sleep(0.5)
    page.shot("path_picked")
    page.page.locator(".bk-tab", has_text="Step").first.click()
    page.button("Step").click()
    page.wait_status(r"iteration 1\b.*\(from the path\)")
    page.page.locator(".gaplab-block").first.wait_for()
    time.sleep(0.3)
    page.shot("path_model_step")
    assert page.errors() == [], page.failed_requests


def test_open_store_shows_its_breakpoints_and_a_picked_models_numbers(page, tmp_path):
    from gaplab.core.problems import get_problem
    from gaplab.core.regpath import PathConfig, RegPath, regularization_path

    problem = get_problem("ocr-small").load()
    store = tmp_path / "ocr_small_store"
    saved = regularization_path(problem.model, PathConfig(eps=0.5, lam_min=0.1), test_data=problem.test,
                                meta={"dataset": "ocr-small"}, store=store)
    J = len(saved)
    page.page.locator(".bk-tab", has_text="Regularization path").first.click()
    box = page.page.locator(".gaplab-path-store input").first
    box.fill(str(store))
    box.press("Enter")
    time.sleep(0.2)
    page.button("Open store").click()
    count = page.page.locator(".gaplab-path-breakpoints").first
    count.wait_for()
    assert int(count.inner_text()) == J
    # the plots hold the store's breakpoints (λ_j, g_j) as the browser sees them
    xs = page.page.evaluate("""() => {
        const src = window.Bokeh.documents[0].get_model_by_name('path_gaps');
        return [Array.from(src.data.x), Array.from(src.data.gap)]; }""")
    assert xs[0] == pytest.approx(list(saved.lams), rel=1e-12) and xs[1] == pytest.approx(list(saved.column("gap")))
    # a click on the test-error plot picks the λ under the mouse: w_at(λ) read from the store
    plot = page.page.locator(".gaplab-path-test").first.bounding_box()
    page.page.mouse.click(plot["x"] + 0.5 * plot["width"], plot["y"] + 0.55 * plot["height"])
    nnz = page.page.locator(".gaplab-path-w-at").first
    nnz.wait_for(timeout=30_000)
    picked = float(page.page.locator(".gaplab-path-picked").first.inner_text())
    assert saved.lams[-1] / 10 < picked < saved.lams[0]
    j = int(page.page.locator(".gaplab-path-piece").first.inner_text())
    w = RegPath.open(store).point(j).w    # w_at(λ) = w_j on the picked piece
    assert nnz.inner_text() == f"{np.count_nonzero(w):,}"
    err = page.page.locator(".gaplab-path-w-error").first.inner_text()
    assert err == f"{100 * problem.model.error(w, problem.test):.2f}%"
    time.sleep(0.4)
    page.shot("path_store_opened")
    assert page.errors() == [], page.failed_requests


@pytest.mark.skipif(CONLL is None, reason="CoNLL-2000 not found ($GAPLAB_DATA or ../shared/data)")
def test_conll_anatomy_shows_chunks(page):
    page.page.locator(".gaplab-w-step_kind select").first.select_option("pairwise")
    page.wait_status(r"ready")
    page.page.locator(".gaplab-w-dataset select").first.select_option("conll2000")
    page.wait_status(r"loading", timeout=10)
    page.wait_status(r"ready.*conll2000.*\(n = 8,936\) · iteration 0\b", timeout=90)
    _fill(page, ".gaplab-w-n_steps", 12000)
    page.button("Step ×N").click()
    page.wait_status(r"iteration 12,000\b", timeout=60)
    page.button("Step").click()
    page.wait_status(r"iteration 12,001\b")
    page.page.locator(".gaplab-chunk").first.wait_for()
    time.sleep(0.4)
    rows = [page.page.locator(f".gaplab-{r}").first.inner_text() for r in ("gold", "fw", "away")]
    assert all(len(r.split()) >= 3 for r in rows) and rows[0].split()[2:] != []
    assert page.page.locator(".gaplab-chunk").count() >= 3
    page.shot("conll_anatomy")
    assert page.errors() == [], page.failed_requests


def test_segmentation_anatomy_shows_the_loss_heat_map(page):
    """seg-tiny: the step anatomy draws photo/superpixels, truth, FW and away corners and the FW
    corner's per-superpixel loss heat map, whose caption gives the block's loss."""
    page.page.locator(".gaplab-w-step_kind select").first.select_option("pairwise")
    page.wait_status(r"ready")
    page.page.locator(".gaplab-w-dataset select").first.select_option("seg-tiny")
    page.wait_status(r"ready.*seg-tiny.*iteration 0\b", timeout=90)
    _fill(page, ".gaplab-w-n_steps", 30)
    page.button("Step ×N").click()
    page.wait_status(r"iteration 30\b", timeout=60)
    page.button("Step").click()
    page.wait_status(r"iteration 31\b")
    page.page.locator(".gaplab-panel").nth(3).wait_for()
    assert 4 <= page.page.locator(".gaplab-panel").count() <= 6   # photo, 3 labellings, their heat maps
    panels = page.page.locator(".gaplab-panel")
    text = " | ".join(panels.nth(k).locator("xpath=..").inner_text() for k in range(panels.count()))
    assert re.search(r"FW corner loss per superpixel \(Σ \d\.\d{3}", text), text
    assert page.page.get_by_text("Loss heat map", exact=False).count() == 1  # the legend (pierces shadow DOM)
    page.shot("segmentation_anatomy")
    assert page.errors() == [], page.failed_requests


def test_closed_sessions_are_released(server, browser):
    before = server.log().count("closed (worker stopped, solver released: True)")
    p = Page(browser, server.url)
    p.button("Step").click()
    p.wait_status(r"iteration 1\b")
    p.close()
    deadline = time.time() + 15
    while time.time() < deadline:
        if server.log().count("closed (worker stopped, solver released: True)") > before:
            break
        time.sleep(0.2)
    assert server.log().count("closed (worker stopped, solver released: True)") > before, server.log()[-2000:]
    # tracebacks other than tornado's own about a socket the browser had already closed
    # ("Task exception was never retrieved ... WebSocketClosedError": a write racing a page close)
    blocks = server.log().split("Task exception was never retrieved")
    ours = [b for b in blocks[1:] if "WebSocketClosedError" not in b.split("gaplab app:")[0]
            or "Traceback" in b.partition("gaplab app:")[2]]
    assert "Traceback" not in blocks[0] and not ours, server.log()[-3000:]


# ------------------------------------------------------------------ the app in front of a class
def _speed(page, label):
    page.page.locator(".gaplab-w-speed select").first.select_option(label=label)
    time.sleep(0.3)


def test_speed_control_paces_the_run(page):
    _set_budget(page, 100000)
    _speed(page, "10 steps/s")
    page.button("▶ Run").click()
    page.wait_status(r"running")
    time.sleep(0.6)
    it0, t0 = page.iteration(), time.time()
    time.sleep(4.0)
    it1, t1 = page.iteration(), time.time()
    page.button("❚❚ Pause").click()
    page.wait_status(r"paused")
    rate = (it1 - it0) / (t1 - t0)
    assert 8.0 <= rate <= 12.0, rate    # within 20% of the setting
    assert page.errors() == [], page.failed_requests


def test_pause_resumes_and_stop_restarts(page):
    _set_budget(page, 100000)
    _speed(page, "100 steps/s")
    page.button("▶ Run").click()
    page.wait_status(r"running")
    time.sleep(0.8)
    page.button("❚❚ Pause").click()
    page.wait_status(r"paused")
    it = page.iteration()
    assert it > 20
    page.button("▶ Run").click()            # Pause then Run resumes
    page.wait_status(r"running")
    time.sleep(0.5)
    page.button("■ Stop").click()
    page.wait_status(r"stopped")
    it_stopped = page.iteration()
    assert it_stopped > it + 20
    page.button("▶ Run").click()            # Stop then Run starts a new run from α⁰
    page.wait_status(r"running")
    time.sleep(0.3)
    page.button("❚❚ Pause").click()
    page.wait_status(r"paused")
    assert 0 < page.iteration() < it_stopped - 20
    assert page.errors() == [], page.failed_requests


def _lesson_page(page, k):
    page.page.locator(".bk-tab", has_text="Lessons").first.click()
    page.page.get_by_text("page 1 of").wait_for()
    for _ in range(k - 1):
        page.button("Next ▶").click()
        time.sleep(0.3)
    page.page.get_by_text(f"page {k} of").wait_for()


def test_lesson_setup_after_an_exhausted_budget(page):
    _set_budget(page, 1)
    page.button("▶ Run").click()
    page.wait_status(r"pass budget reached", timeout=30)
    _lesson_page(page, 3)
    page.button("Set up this page").click()
    page.wait_status(r"ready.*iteration 0\b")
    page.button("Step").click()             # the solver answers again
    page.wait_status(r"iteration 1\b")
    page.button("Set up this page").click()  # settings already in place: still a fresh start
    page.wait_status(r"ready.*iteration 0\b")
    page.shot("lesson_setup")
    assert page.errors() == [], page.failed_requests


def test_projector_mode_at_1280x720(server, browser):
    p = Page(browser, server.url, viewport=(1280, 720))
    try:
        p.button("Projector mode").click()
        p.page.locator(".gaplab-topbar").first.wait_for()
        time.sleep(0.5)
        p.button("Step").click()
        p.wait_status(r"iteration 1\b")
        time.sleep(0.6)
        p.page.mouse.move(5, 700)
        p.shot("projector_step")
        width = p.page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], width          # no horizontal overflow
        assert not p.page.locator(".gaplab-w-lam").first.is_visible()   # no settings sidebar
        size = p.button("Step").evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
        status_size = p.page.locator(".gaplab-status").first.evaluate(
            "e => parseFloat(getComputedStyle(e).fontSize)")
        assert size >= 18 and status_size >= 18, (size, status_size)
        # the sampling-probability plot (the second figure with export buttons) is above the fold
        pngs = p.page.locator(".gaplab-export-png").filter(visible=True)
        box = pngs.nth(1).bounding_box()
        assert box is not None and box["y"] + 150 <= 720, box
        # every bar at least a few pixels wide: the Step view bins n = 626 into <= 120 bars
        bars = p.page.evaluate("""() => window.Bokeh.documents[0]
            .get_model_by_name('block_gaps_projector').data.x.length""")
        assert 0 < bars <= 120
        assert p.errors() == [], p.failed_requests
    finally:
        p.close()


def test_export_buttons_produce_files(page):
    import json
    _set_budget(page, 2)
    page.button("▶ Run").click()
    page.wait_status(r"pass budget reached", timeout=30)
    with page.page.expect_download() as d:
        page.page.locator(".gaplab-export-csv").locator("button, a").first.click()
    text = Path(d.value.path()).read_text()
    assert "# config:" in text and "seed=0" in text and "sampling=gap" in text
    rows = [r for r in text.splitlines() if r and not r.startswith("#")]
    assert rows[0].startswith("kind,") and sum(r.startswith("pass,") for r in rows) == 2
    with page.page.expect_download() as d:
        page.page.locator(".gaplab-export-json").locator("button, a").first.click()
    doc = json.loads(Path(d.value.path()).read_text())
    assert doc["config"]["seed"] == 0 and doc["n"] == 626 and len(doc["trace"]) >= 2
    with page.page.expect_download() as d:
        page.page.locator(".gaplab-export-png").filter(visible=True).first.locator("button").click()
    assert Path(d.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with page.page.expect_download() as d:
        page.page.locator(".gaplab-export-svg").filter(visible=True).first.locator("button").click()
    assert "<svg" in Path(d.value.path()).read_text()[:2000]
    assert page.errors() == [], page.failed_requests


@pytest.mark.slow
def test_dataset_not_installed_is_not_offered(browser, tmp_path):
    """A server that finds no CoNLL-2000 (empty $GAPLAB_DATA and user cache; its own server, so
    the test runs whether or not this machine has the data)."""
    env = {"GAPLAB_DATA": str(tmp_path / "data"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    (tmp_path / "data").mkdir()
    with AppServer(ARTIFACTS / "browser_no_conll_server.log", env=env, timeout=300, wait_warm=True) as srv:
        page = Page(browser, srv.url)
        try:
            opts = page.page.locator(".gaplab-w-dataset select option").all_inner_texts()
            assert "conll2000" not in opts and {"ocr-small", "ocr-large", "toy"} <= set(opts)
            note = page.page.locator(".gaplab-missing").first.get_by_text("Not installed")
            assert "conll2000" in note.inner_text()
            box = note.bounding_box()
            assert box["x"] + box["width"] <= 335          # wraps inside the sidebar
            assert page.errors() == [], page.failed_requests
        finally:
            page.close()


def test_buttons_disabled_until_kernels_compiled(browser, tmp_path):
    """A cold numba cache (temp NUMBA_CACHE_DIR): the page says it is compiling and keeps the
    solver buttons disabled, instead of saying "ready" and hanging on the first Step."""
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    with AppServer(ARTIFACTS / "browser_cold_server.log", env=env, timeout=120) as srv:
        p = Page(browser, srv.url, wait_ready=False)
        try:
            p.wait_status(r"compiling kernels", timeout=30)
            banner = p.page.locator(".gaplab-compiling").first.get_by_text("compiling solver kernels")
            banner.wait_for()
            assert "once per install" in banner.inner_text()
            for name in ("Step", "Step ×N", "▶ Run"):
                assert p.button(name).is_disabled(), name
            p.shot("cold_compiling")
        finally:
            p.close()


def test_toy_sweep_plots_speedup_against_n(page):
    page.page.locator(".bk-tab", has_text="Toy example").first.click()
    page.button("Sweep n").click()
    deadline = time.time() + 90
    data = None
    while time.time() < deadline:
        data = page.page.evaluate("""() => { const s = window.Bokeh.documents[0].get_model_by_name('toy_sweep');
            return s ? {n: Array.from(s.data.n), m: Array.from(s.data.measured),
                        r: Array.from(s.data.ratio_nt)} : null; }""")
        if data and len(data["n"]) >= 6:
            break
        time.sleep(0.2)
    assert data and len(data["n"]) >= 6, data
    m, r = data["m"], data["r"]
    assert all(x > 1 for x in m) and m[3] > m[0]         # gap sampling wins more as n grows (K, ε fixed)
    assert all(0.5 < a / b < 1.5 for a, b in zip(m, r))  # and follows n·t/(n+t)
    page.page.get_by_text("Speed-up vs n.").wait_for()
    time.sleep(0.4)
    page.shot("toy_sweep")
    assert page.errors() == [], page.failed_requests


def test_panel_serve_script_at_panel_app(browser, tmp_path):
    """``panel serve app/panel_app.py`` serves the same app at /panel_app (README)."""
    import subprocess
    import sys

    from gaplab.app.testing import free_port
    port = free_port()
    log = open(ARTIFACTS / "browser_panel_serve.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "panel", "serve", str(ROOT / "app" / "panel_app.py"),
                             "--port", str(port), "--address", "127.0.0.1",
                             "--allow-websocket-origin", f"127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        url = f"http://127.0.0.1:{port}/panel_app"
        deadline = time.time() + 60
        import socket
        while time.time() < deadline:   # the port is open (a GET would build a session the page does not use)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except OSError:
                time.sleep(0.3)
        p = Page(browser, url, wait_ready=False)
        try:
            p.wait_status(r"● ready.*ocr-small", timeout=120)
            p.button("Step").click()
            p.wait_status(r"iteration 1\b")
            p.page.locator(".gaplab-block").first.wait_for()
            assert p.block() >= 0
            assert p.errors() == [], p.failed_requests
        finally:
            p.close()
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
