"""Figures in headless Chromium: a PNG export has 3 image pixels per CSS
pixel of the figure whatever the screen's devicePixelRatio (sharp on a slide) and an SVG export is
a well-formed SVG document, on the Step tab and on a tab built later (Race); the Convergence and
Cache tabs give BokehJS every range (no "could not set initial ranges") and draw runs added before
they are opened, also while the kernels still compile in the background."""
from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from browser_env import require_browser, warm_app_server
from gaplab.app.export import EXPORT_PIXEL_RATIO, FILE_STEM_JS
from gaplab.app.testing import AppServer

pytestmark = pytest.mark.browser

require_browser()   # skips the module without Playwright or Chromium

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"

# the CSS size of every figure on the page, by the file stem its export button gives it
_FIGURE_SIZES_JS = """() => {
  const out = {};
  const fileStem = FILE_STEM;
  for (const v of Bokeh.index.query((v) => v.model != null && v.model.title != null && v.frame != null)) {
    const stem = fileStem(v.model.title.text || "");
    out[stem] = [v.bbox.width, v.bbox.height];
  }
  return out;
}""".replace("FILE_STEM", FILE_STEM_JS)


@pytest.fixture(scope="module")
def server():
    yield from warm_app_server(ARTIFACTS / "export_browser_server.log")


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


def test_gif_cut_by_a_setting_switch_offers_the_gif_across_it(page):
    """Five Steps, a switch to uniform sampling (α kept), four Steps; the GIF of the last 20
    steps has the 4 since the switch, the page says why and shows "Make the GIF across the
    switch", whose GIF has all 9 steps."""
    import io

    from PIL import Image

    status = page.locator(".gaplab-status").first
    step = page.get_by_role("button", name="Step", exact=True)

    def steps(k0, k1):
        for k in range(k0, k1 + 1):
            step.click()
            t0 = time.time()
            while f"iteration {k} " not in status.inner_text():
                assert time.time() - t0 < 60, f"iteration {k}: {status.inner_text()}"
                time.sleep(0.1)
    steps(1, 5)
    page.locator(".gaplab-w-sampling select").first.select_option(value="uniform")
    page.wait_for_timeout(1000)
    steps(6, 9)
    across = page.locator(".gaplab-export-gif-across").first
    assert not across.is_visible()
    gif_n = page.locator(".gaplab-gif-steps input").first
    gif_n.fill("20")
    gif_n.press("Enter")
    name, data = _download(page, page.locator(".gaplab-export-gif button").first)
    assert Image.open(io.BytesIO(data)).n_frames == 4
    across.wait_for(state="visible", timeout=30_000)
    name, data = _download(page, across.locator("button"))
    assert name.endswith(".gif") and Image.open(io.BytesIO(data)).n_frames == 9
    assert page.errors == []


def test_race_tab_png_is_3x_and_svg_parses(page):
    page.locator(".bk-tab", has_text="Race").first.click()
    page.locator(".gaplab-race").first.wait_for()
    page.wait_for_timeout(1500)
    # the race's visit maps and gap curve: the first map
    name = _check_png_and_svg(page)
    assert "visits" in name
    assert page.errors == []


@pytest.mark.slow
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


_DRAWN_JS = """(title) => {
  const v = Bokeh.index.query_one((v) => v.model != null && v.model.title != null && v.frame != null
                                  && (v.model.title.text || "").startsWith(title));
  if (v == null) { return null; }
  const xr = v.frame.x_range, yr = v.frame.y_range;
  const filled = v.model.renderers.filter((r) => r.data_source && r.data_source.data && r.data_source.data.x
                                          && r.data_source.data.x.length > 0).length;
  const legend = v.model.center.concat(v.model.below, v.model.above)
      .filter((m) => m.items !== undefined).flatMap((m) => m.items).filter((it) => it.visible)
      .map((it) => String(it.label && it.label.value !== undefined ? it.label.value : it.label));
  return {filled, legend, ranges: [xr.start, xr.end, yr.start, yr.end].every(Number.isFinite),
          width: v.bbox.width, height: v.bbox.height};
}"""


def _wait_text(loc, text, timeout_s):
    deadline = time.time() + timeout_s
    last = ""
    while time.time() < deadline:
        try:
            last = loc.inner_text()
        except Exception:
            last = ""
        if text in last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"never saw {text!r}; last: {last!r}")


@pytest.mark.slow
def test_runs_added_before_the_convergence_tab_is_opened_are_drawn(browser, server):
    """The same with a warm numba cache (no compile running)."""
    _runs_then_tabs(browser, server.url, cold=False)


@pytest.mark.slow
def test_runs_added_during_the_background_compile_are_drawn(browser, tmp_path):
    """A cold numba cache: while the other model kinds still compile in the background, three
    runs are added to the comparison; the Convergence and Cache figures then draw all of them
    (finite ranges, every run's source filled, no range warning)."""
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    with AppServer(ARTIFACTS / "export_cold_server.log", env=env, timeout=600) as srv:
        _runs_then_tabs(browser, srv.url, cold=True)


def _first_message_with(frames, title) -> list:
    """The x-column lengths of every ColumnDataSource defined in the first Bokeh PATCH-DOC
    message (its content frame) that brings a figure titled ``title`` to the page."""
    import json
    for payload in frames:
        if not isinstance(payload, str) or title not in payload or '"events"' not in payload:
            continue
        lens = []

        def walk(o):
            if isinstance(o, dict):
                if o.get("type") == "object" and o.get("name") == "ColumnDataSource":
                    entries = dict((o.get("attributes", {}).get("data") or {}).get("entries", []))
                    x = entries.get("x")
                    lens.append(x["shape"][0] if isinstance(x, dict) and "shape" in x else len(x or ()))
                for v in o.values():
                    walk(v)
            elif isinstance(o, list):
                for v in o:
                    walk(v)
        walk(json.loads(payload))
        return lens
    return []


def _first_drawn(p, title, timeout_s=60):
    """The figure titled ``title`` as the page first shows it (polled every 0.1 s from now)."""
    t0 = time.time()
    while time.time() - t0 < timeout_s:
        d = p.evaluate(_DRAWN_JS, title)
        if d is not None and d["width"] > 100:
            return d
        p.wait_for_timeout(100)
    return None


def _runs_then_tabs(browser, url, cold):
    """Three 1-pass runs added to the comparison on the Step tab, then the Convergence and Cache
    tabs opened: every run is drawn (legend entries, filled sources, finite ranges) as soon as
    the figures are on the page: the message that brings a new tab's figures carries their data
    (never blank figures first and the data in a later message)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True)
    p = ctx.new_page()
    p.set_default_timeout(30_000)
    frames = []
    p.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))
    console = []
    p.on("console", lambda m: console.append((m.type, m.text)))
    p.on("pageerror", lambda e: console.append(("pageerror", str(e))))
    try:
        p.goto(url, timeout=120_000)
        if cold:
            p.locator(".gaplab-compiling").first.get_by_text("Still compiling in the background").wait_for(
                timeout=600_000)
        else:
            p.get_by_role("button", name="Step", exact=True).wait_for()
            p.wait_for_timeout(3000)
        box = p.locator(".gaplab-w-max_passes input").first
        box.fill("1")
        box.press("Enter")
        for k in range(3):
            p.get_by_role("button", name="▶ Run", exact=True).click()
            _wait_text(p.locator(".gaplab-status").first, "pass budget reached", 120)
            p.get_by_role("button", name="Add run to comparison", exact=True).click()
            p.wait_for_timeout(400)
            if k < 2:
                p.get_by_role("button", name="↺ Reset", exact=True).click()
                _wait_text(p.locator(".gaplab-status").first, "iteration 0", 60)
        assert p.locator(".gaplab-compiling").first.is_visible() or not cold    # still compiling
        n0 = len(frames)
        p.locator(".bk-tab", has_text="Convergence").first.click()
        for title in ("Duality gap vs effective passes", "Duality gap vs time"):
            # as the page first shows it (the compile competes for the CPU: it may take seconds)
            d = _first_drawn(p, title)
            assert d is not None and d["ranges"] and d["width"] > 100 and d["height"] > 100, (title, d)
            # the heuristic-gap lines of the current run and the 3 runs, the ★; 5 legend entries
            runs = [t for t in d["legend"] if t.startswith("#")]
            assert d["filled"] >= 5 and len(runs) == 3 and any(t.startswith("current") for t in d["legend"]), (title, d)
        # the message that brought the figures had their data (not empty sources filled later)
        lens = _first_message_with(frames[n0:], "Duality gap vs effective passes")
        assert sum(n > 0 for n in lens) >= 5, lens
        p.screenshot(path=str(ARTIFACTS / "export_runs_while_compiling_convergence.png"))
        n0 = len(frames)
        p.locator(".bk-tab", has_text="Cache").first.click()
        d = _first_drawn(p, "Cache hit rate per pass")
        assert d is not None and d["ranges"] and d["filled"] >= 4, d
        assert len([t for t in d["legend"] if t.startswith("#")]) == 3, d     # 3 runs + current
        lens = _first_message_with(frames[n0:], "Cache hit rate per pass")
        assert sum(n > 0 for n in lens) >= 4, lens
        p.screenshot(path=str(ARTIFACTS / "export_runs_while_compiling.png"))
        assert not [t for _k, t in console if "could not set initial ranges" in t]
        assert not [m for m in console if m[0] == "pageerror"], console
    finally:
        ctx.close()
