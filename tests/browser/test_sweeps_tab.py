"""The app's Sweeps tab in headless Chromium (Debian's chromium driven by Playwright): the served
app opens a store given by $GAPLAB_SWEEP_STORE, draws the convergence figure and the runs table,
switches to the κ study and the path-vs-grid views, and the page has no console errors.
Skipped with a reason when Playwright or Chromium is missing.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from browser_env import require_browser
from gaplab.app.testing import CHROMIUM_ARGS, AppServer

pytestmark = pytest.mark.browser

sync_api, CHROMIUM = require_browser()

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from gaplab.core.sweep import run_sweep
    path = tmp_path_factory.mktemp("sweep_browser") / "store"
    spec = {"name": "browser", "datasets": ["ocr-small[:12]"], "lams": [0.1], "seeds": [0, 1],
            "budget": {"max_passes": 4, "gap_check": 2},
            "methods": {"bcfw_uniform": {"sampling": "uniform"}, "bcfw_gap": {"sampling": "gap"},
                        # for the κ study and path-vs-grid views (tiny: 12 words, λ down to 0.1)
                        "eps_path": {"kind": "path", "kappa": 0.7, "lam_min": 0.1},
                        "grid": {"kind": "grid", "grid_hi": 1, "grid_lo": -3}}}
    rep = run_sweep(spec, path, workers=0)
    assert rep.done == 8
    return path


# end to end: its own app server (the store is given at start-up) is most of its time
@pytest.mark.slow
def test_sweeps_tab_loads_a_store_without_console_errors(store):
    ARTIFACTS.mkdir(exist_ok=True)
    with AppServer(ARTIFACTS / "browser_sweeps_server.log", env={"GAPLAB_SWEEP_STORE": str(store)},
                   timeout=900, wait_warm=True) as srv:
        pw = sync_api.sync_playwright().start()
        try:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
        except Exception as exc:  # pragma: no cover - depends on the machine
            pw.stop()
            pytest.skip(f"Chromium at {CHROMIUM} does not start: {exc}")
        try:
            ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = ctx.new_page()
            page.set_default_timeout(30_000)
            console = []
            page.on("console", lambda m: console.append((m.type, m.text)))
            page.on("pageerror", lambda e: console.append(("pageerror", str(e))))
            failed = []  # the URLs behind "Failed to load resource" console errors
            page.on("requestfailed", lambda r: failed.append(r.url))
            page.goto(srv.url, timeout=60_000)
            page.get_by_role("button", name="Step", exact=True).wait_for()
            page.locator(".bk-tab", has_text="Sweeps").first.click()
            page.locator(".gaplab-sweeps-info").first.wait_for()
            page.get_by_text("8 runs recorded: 8 done, 0 failed").wait_for()
            # the figure (two Bokeh plots: gap vs passes, gap vs time) and the runs table
            page.get_by_text("Convergence (Paper: Fig. 3, 5, 6)").wait_for()
            page.locator(".gaplab-sweeps-figure canvas").first.wait_for()
            page.locator(".gaplab-sweeps-runs table").first.wait_for()
            assert page.locator(".gaplab-sweeps-runs table tbody tr").count() == 8
            assert page.locator(".gaplab-sweeps-figure canvas").count() >= 2
            time.sleep(0.5)
            page.screenshot(path=str(ARTIFACTS / "browser_sweeps.png"))
            # the κ study and the path-vs-grid views (the store holds path and grid runs)
            # the plot titles the page's Bokeh document holds: the panels of the new view arrive
            # ("DATASET (κ study)", "DATASET (path vs grid)"; BokehJS keeps the old models a while)
            titles_js = """(marker) => {
                const docs = (window.Bokeh && window.Bokeh.documents) || [];
                const titles = [];
                for (const d of docs) {
                    const ms = d.all_models instanceof Map ? [...d.all_models.values()] : [...(d.all_models || [])];
                    for (const m of ms) {
                        if (m.x_range !== undefined && m.title && typeof m.title.text === "string"
                            && m.title.text.startsWith("ocr-small[:12]")) titles.push(m.title.text);
                    }
                }
                return titles.filter(t => t.endsWith(marker)).length >= 2;
            }"""
            page.wait_for_function(titles_js, arg=", λ = 0.1")
            for button, caption, marker, shot in (
                    ("κ study", "κ study (Paper: Fig. 7)", "(κ study)", "kappa"),
                    ("Path vs grid", "Path vs grid (Paper: Fig. 4, 8)", "(path vs grid)", "path_grid")):
                page.locator(".gaplab-sweeps-view button", has_text=button).first.click()
                page.get_by_text(caption).wait_for()
                page.wait_for_function(titles_js, arg=marker)
                page.locator(".gaplab-sweeps-figure canvas").first.wait_for()
                assert page.locator(".gaplab-sweeps-figure canvas").count() >= 2
                time.sleep(1.0)
                page.screenshot(path=str(ARTIFACTS / f"browser_sweeps_{shot}.png"))
            errors = [m for m in console if m[0] in ("error", "pageerror")]
            assert errors == [], (errors[:5], sorted(set(failed))[:5])
            ctx.close()
        finally:
            browser.close()
            pw.stop()
