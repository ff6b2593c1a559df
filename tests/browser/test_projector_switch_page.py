"""Projector mode's switch in headless Chromium (1280×720, OCR-small after three Steps): at no
moment of the switch, on or off, is the anatomy blank or the sampling plot empty. The page is
read every 250 ms from the click until the other layout shows (and once more): each read
takes a screenshot of the whole page and finds, in the page, a visible narration of the last
step (in projector mode inside the viewport) and, in the screenshot, the sampling plot's bars
(its #2c7fb8 blue; an empty −1…1 plot has none). How long the switch takes is measured by benchmarks/projector_switch.py, not
here (no clock races in tests)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from browser_env import require_browser, wait_until, warm_app_server
from gaplab.app.testing import busy_machine, shadow_texts_js

pytestmark = pytest.mark.browser

require_browser()

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
W, H = 1280, 720
BAR_BLUE = (0x2C, 0x7F, 0xB8)   # the sampling plot's bars (views/blocks.py)

#: after the next painted frame: the projector bar shown, and the visible narration's text and
#: box (null when no narration is visible)
_STATE_JS = """async () => {
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const nars = [];
  let top = null;
  const all = (root) => { for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) all(el.shadowRoot);
      if (!el.classList) continue;
      if (el.classList.contains('gaplab-topbar')) top = el;
      if (el.classList.contains('gaplab-narration') && el.checkVisibility()) nars.push(el);
  } };
  all(document);
  const nar = nars.length ? nars[0] : null;
  const r = nar ? nar.getBoundingClientRect() : null;
  return {on: !!(top && top.checkVisibility()),
          narration: nar ? (nar.shadowRoot || nar).textContent : null,
          box: r ? [r.x, r.y, r.width, r.height] : null};
}"""


@pytest.fixture(scope="module")
def server():
    yield from warm_app_server(ARTIFACTS / "projector_switch_server.log")


def _blue_pixels(png: bytes) -> int:
    import io

    import numpy as np
    from PIL import Image
    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    return int((np.abs(img - np.array(BAR_BLUE)).max(axis=2) <= 12).sum())


def _png_height(png: bytes) -> int:
    import io

    from PIL import Image
    return Image.open(io.BytesIO(png)).size[1]


def _read(page, shots: list, tag: str) -> dict:
    state = page.evaluate(_STATE_JS)
    png = page.screenshot(full_page=True)   # normal mode's sampling plot is below the fold
    state["blue"] = _blue_pixels(png)
    state["shot_height"] = _png_height(png)
    state["on_after"] = page.evaluate(_STATE_JS)["on"]   # the switch may land during the screenshot
    path = ARTIFACTS / f"projector_switch_{tag}_{len(shots):02d}.png"
    path.write_bytes(png)
    shots.append(path)
    return state


def _switch_reads(page, want: bool, tag: str, timeout: float = 240.0) -> list[dict]:
    """Reads every 250 ms from the click until the page shows the ``want`` layout with its
    narration, then one more."""
    page.get_by_role("button", name="Projector mode").click()
    page.mouse.move(640, 3)   # no tooltip
    reads, shots = [], []
    t0 = time.time()
    while time.time() - t0 < timeout:
        t = time.time()
        s = _read(page, shots, tag)
        reads.append(s)
        if s["on"] == want and s["narration"] and len([r for r in reads if r["on"] == want]) >= 2:
            return reads
        time.sleep(max(0.0, 0.25 - (time.time() - t)))
    raise AssertionError(f"the switch to projector={want} did not end in {timeout} s")


def _problems(reads: list[dict]) -> list[str]:
    out = []
    for k, s in enumerate(reads):
        nar = s["narration"] or ""
        if "What just happened" not in nar or "block" not in nar:
            out.append(f"read {k}: no narration of the step visible ({nar[:80]!r})")
        elif s["on"] and (s["box"][1] < 0 or s["box"][1] + s["box"][3] > H):
            out.append(f"read {k}: projector mode's narration is outside the viewport ({s['box']})")
        # normal mode's sampling plot is below the fold: while the page has not grown back to
        # its normal height (the first frame after the switch) nobody can see it; every read of
        # a grown page, and the last read of each switch, must show its bars
        normal = not s["on"] or not s["on_after"]
        unseen = normal and s["shot_height"] <= H and k < len(reads) - 1
        if s["blue"] < 150 and not unseen:
            out.append(f"read {k}: the sampling plot shows no bars ({s['blue']} bar pixels)")
    return out


def _open(browser):
    ctx = browser.new_context(viewport={"width": W, "height": H})
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    return ctx, page


def _switch_round(browser, url, tag):
    ctx, page = _open(browser)
    try:
        page.goto(f"{url}?dataset=ocr-small", timeout=300_000)
        status = page.locator(".gaplab-status").first
        step = page.get_by_role("button", name="Step", exact=True)
        for k in range(1, 4):
            step.click()
            wait_until(lambda k=k: f"iteration {k} " in status.inner_text(), 300, f"iteration {k}")
        page.mouse.move(640, 3)   # no tooltip
        # projector mode's views join the page (hidden) after it has loaded
        wait_until(lambda: page.evaluate("() => !!Bokeh.documents[0].get_model_by_name('block_gaps_projector')"),
                   300, "projector views in the page")
        before = _read(page, [], f"{tag}_before")
        assert not _problems([before]), _problems([before])
        on = _switch_reads(page, True, f"{tag}_on")
        off = _switch_reads(page, False, f"{tag}_off")
        texts = page.evaluate(shadow_texts_js(status=".gaplab-status"))
        assert "iteration 3 " in texts["status"]
        return _problems(on), _problems(off), len(on), len(off)
    finally:
        ctx.close()


def test_projector_switch_never_shows_a_blank_anatomy_or_an_empty_plot(server, browser):
    on, off, n_on, n_off = _switch_round(browser, server.url, "quiet")
    assert on == [] and off == [], "\n".join(on + off)
    assert n_on >= 2 and n_off >= 2


@pytest.mark.slow
def test_projector_switch_never_blank_on_a_busy_laptop(server, browser):
    with busy_machine():
        on, off, _n_on, _n_off = _switch_round(browser, server.url, "busy")
    assert on == [] and off == [], "\n".join(on + off)
