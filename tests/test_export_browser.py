"""Figure exports in headless Chromium (issue 24 item 8): a PNG has 3 image pixels per CSS pixel
of the figure whatever the screen's devicePixelRatio (sharp on a slide), an SVG is a well-formed
SVG document, on the Step tab and on a tab built later (Race)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from browser_env import launched_browser, require_browser
from gaplab.app.export import EXPORT_PIXEL_RATIO
from gaplab.app.testing import AppServer

pytestmark = pytest.mark.browser

sync_api, CHROMIUM = require_browser()

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"

# the CSS size of every figure on the page, by the file stem its export button gives it
_FIGURE_SIZES_JS = """() => {
  const out = {};
  for (const v of Bokeh.index.query((v) => v.model != null && v.model.title != null && v.frame != null)) {
    const t = v.model.title.text || "";
    const stem = t.replace(/[^A-Za-z0-9]+/g, "_").replace(/^_+|_+$/g, "").slice(0, 60);
    out[stem] = [v.bbox.width, v.bbox.height];
  }
  return out;
}"""


@pytest.fixture(scope="module")
def server():
    ARTIFACTS.mkdir(exist_ok=True)
    with AppServer(ARTIFACTS / "export_browser_server.log", session_lifetime_ms=1000, timeout=900,
                   wait_warm=True) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser():
    yield from launched_browser(sync_api, CHROMIUM)


@pytest.fixture
def page(server, browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900}, device_scale_factor=1,
                              accept_downloads=True)
    p = ctx.new_page()
    p.set_default_timeout(30_000)
    errors = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    p.goto(server.url, timeout=60_000)
    p.get_by_role("button", name="Step", exact=True).wait_for()
    p.wait_for_function("""() => { const d = window.Bokeh && window.Bokeh.documents[0];
        return !!(d && d.get_model_by_name('block_gaps')); }""", timeout=60_000, polling=100)
    p.errors = errors
    yield p
    ctx.close()


def _download(page, button):
    page.mouse.move(2, 2)          # no button tooltip left over the next button
    page.wait_for_timeout(300)
    with page.expect_download() as d:
        button.click()
    return d.value.suggested_filename, Path(d.value.path()).read_bytes()


def _check_png_and_svg(page, nth=0):
    from PIL import Image
    import io

    assert page.evaluate("() => window.devicePixelRatio") == 1
    png_btn = page.locator(".gaplab-export-png").filter(visible=True).nth(nth).locator("button")
    svg_btn = page.locator(".gaplab-export-svg").filter(visible=True).nth(nth).locator("button")
    name, data = _download(page, png_btn)
    assert name.endswith(".png") and data[:8] == b"\x89PNG\r\n\x1a\n"
    sizes = page.evaluate(_FIGURE_SIZES_JS)
    w, h = sizes[name[:-4]]
    im = Image.open(io.BytesIO(data))
    # every CSS pixel of the figure is EXPORT_PIXEL_RATIO (3) image pixels wide and high
    assert EXPORT_PIXEL_RATIO == 3
    assert abs(im.width - 3 * w) <= 3 and abs(im.height - 3 * h) <= 3, (im.size, w, h)
    assert page.evaluate("() => window.devicePixelRatio") == 1        # restored after the export
    name, data = _download(page, svg_btn)
    assert name.endswith(".svg")
    root = ET.fromstring(data.decode("utf-8"))                         # well-formed XML
    assert re.sub(r"^\{.*\}", "", root.tag) == "svg"
    assert len(list(root.iter())) > 20                                 # the figure, not an empty frame
    return name


def test_step_tab_png_is_3x_and_svg_parses(page):
    page.get_by_role("button", name="Step", exact=True).click()
    page.wait_for_timeout(800)
    name = _check_png_and_svg(page)
    assert name.startswith("Per_block_gap_estimates")
    assert page.errors == []


def test_race_tab_png_is_3x_and_svg_parses(page):
    page.locator(".bk-tab", has_text="Race").first.click()
    page.locator(".gaplab-race").first.wait_for()
    page.wait_for_timeout(1500)
    # the race's visit maps and gap curve: the first map
    name = _check_png_and_svg(page)
    assert "visits" in name
    assert page.errors == []


def test_convergence_and_cache_tabs_set_their_ranges_without_warnings(page, server):
    """BokehJS warns "could not set initial ranges" for a figure whose range has no start/end
    (an auto range over empty data): the Convergence and Cache figures give every range."""
    console = []
    page.on("console", lambda m: console.append((m.type, m.text)))
    for tab in ("Convergence", "Cache & active sets", "Step", "Convergence"):
        page.locator(".bk-tab", has_text=tab).first.click()
        page.wait_for_timeout(1500)
    page.get_by_role("button", name="Step", exact=True).click()
    page.wait_for_timeout(500)
    for tab in ("Convergence", "Cache & active sets"):
        page.locator(".bk-tab", has_text=tab).first.click()
        page.wait_for_timeout(1500)
    warned = [t for _k, t in console if "could not set initial ranges" in t]
    assert warned == [], f"{len(warned)} warnings"
    assert page.errors == []
