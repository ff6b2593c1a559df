"""Labels a lecturer saw cut in the normal layout at 1280×720, measured in headless Chromium: the
race's visit-map title under its "frozen at ε" line, the simplex's vertex label "y = 1" past the
figure's edge, the 14th letter of OCR-small's longest word past the anatomy pane's edge, and the
per-block bars' hover box past the window's left edge.

Text BokehJS draws on a canvas is read where it is drawn: ``fillText`` is wrapped (before the
page's scripts run) to record each text's box in its canvas's CSS pixels."""
from __future__ import annotations

import functools

import pytest

from browser_env import ARTIFACTS, require_browser, wait_until, warm_app_server
from cli_runs import shared_data

# with the slow set (.ci/run runs it): a warm server and four pages (about a minute)
pytestmark = [pytest.mark.browser, pytest.mark.slow]

require_browser()   # skips the module without Playwright or Chromium

DATA = shared_data()
W, H = 1280, 720
# OCR-small's longest words have 14 letters (blocks 607-625); seed 22's first draw is block 621,
# "nconsequential"
LONG_WORD_URL = "?dataset=ocr-small&seed=22&steps=1"

# every fillText: its text -> its box (CSS px of its canvas) and the canvas's CSS size
_RECORD_TEXT_JS = """(() => {
  const rec = window.__gaplabTexts = new Map();
  const fill = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
    try {
      const m = this.measureText(text), t = this.getTransform(), c = this.canvas;
      const r = c.getBoundingClientRect();
      const k = r.width > 0 ? r.width / c.width : 1;       // canvas px -> CSS px
      const xs = [x - m.actualBoundingBoxLeft, x + m.actualBoundingBoxRight];
      const ys = [y - m.actualBoundingBoxAscent, y + m.actualBoundingBoxDescent];
      const px = [], py = [];
      for (const a of xs) for (const b of ys) { px.push((t.a * a + t.c * b + t.e) * k); py.push((t.b * a + t.d * b + t.f) * k); }
      rec.set(String(text), {x0: Math.min(...px), x1: Math.max(...px), y0: Math.min(...py), y1: Math.max(...py),
                             w: c.width * k, h: c.height * k});
    } catch (e) { /* a measuring error must not stop the drawing */ }
    return fill.call(this, text, x, y, ...rest);
  };
})();"""

# a plot's frame (its canvas's CSS px) and the boxes of the given texts as last drawn
_TEXTS_JS = """([title, texts]) => {
  const pv = Bokeh.index.query_one((v) => v.model != null && v.model.title != null && v.frame != null
                                   && (v.model.title.text || "").startsWith(title));
  if (pv == null) { return null; }
  const f = pv.frame.bbox;
  const boxes = {};
  for (const t of texts) { const b = window.__gaplabTexts.get(t); if (b != null) boxes[t] = b; }
  return {frame: [f.x0, f.y0, f.x1, f.y1], boxes};
}"""

_wait = functools.partial(wait_until, poll=0.25)


@pytest.fixture(scope="module")
def server():
    env = {"GAPLAB_DATA": str(DATA)} if DATA is not None else None
    yield from warm_app_server(ARTIFACTS / "clipped_labels_server.log", env)


@pytest.fixture
def page(server, browser):
    ctx = browser.new_context(viewport={"width": W, "height": H})
    ctx.add_init_script(_RECORD_TEXT_JS)
    p = ctx.new_page()
    p.set_default_timeout(60_000)
    yield p
    ctx.close()


def _open(page, url, query, until):
    page.goto(url + query, timeout=120_000)
    status = page.locator(".gaplab-status").first
    _wait(lambda: until in status.inner_text(), 600, until)


def test_race_map_title_lines_stay_inside_the_figure_and_apart(page, server):
    """At ε the gap side's title gained a second line, "frozen at ε (70 calls)", drawn over the
    first, which went above the figure's top edge."""
    _open(page, server.url, "?dataset=ocr-small", "ready")
    page.locator(".bk-tab", has_text="Race").first.click()
    page.locator(".gaplab-race").first.wait_for()
    page.get_by_role("button", name="▶ Start").click()
    lines = ["gap: visits (0 = hard)", "frozen at ε (70 calls)"]
    d = _wait(lambda: (lambda r: r if r and len(r["boxes"]) == 2 else None)(
        page.evaluate(_TEXTS_JS, ["gap: visits", lines])), 300, "the gap side frozen at ε")
    page.wait_for_timeout(1000)
    d = page.evaluate(_TEXTS_JS, ["gap: visits", lines])
    first, second = d["boxes"][lines[0]], d["boxes"][lines[1]]
    for b in (first, second):
        assert b["y0"] >= 0 and b["x0"] >= 0 and b["x1"] <= b["w"], d      # inside the canvas
    assert first["y1"] <= second["y0"] + 0.5, d                            # one above the other
    assert second["y1"] <= d["frame"][1], d                                # above the heat map


def test_simplex_vertex_labels_lie_inside_the_frame_beside_their_vertices(page, server):
    """Lesson 5: "y = 1" ran past the figure's right edge ("y =" was left) and "y = 0" lay under
    the away corner's square (BokehJS drew every label left-aligned)."""
    _open(page, server.url, "?dataset=ocr-small&lesson=5", "ready")
    page.locator(".gaplab-simplex").first.wait_for()
    labels = ["y = 0", "y = 1", "y = 2"]
    d = _wait(lambda: (lambda r: r if r and len(r["boxes"]) == 3 else None)(
        page.evaluate(_TEXTS_JS, ["Block", labels])), 60, "the vertex labels drawn")
    page.wait_for_timeout(1000)
    d = page.evaluate(_TEXTS_JS, ["Block", labels])
    fx0, fy0, fx1, fy1 = d["frame"]
    for t in labels:
        b = d["boxes"][t]
        assert fx0 <= b["x0"] and b["x1"] <= fx1 and fy0 <= b["y0"] and b["y1"] <= fy1, (t, d)
    vx = page.evaluate("""() => {
      const pv = Bokeh.index.query_one((v) => v.model != null && v.model.title != null && v.frame != null
                                       && (v.model.title.text || "").startsWith("Block"));
      return [0, 1, 0.5].map((x) => pv.frame.x_scale.compute(x));
    }""")
    y0, y1, y2 = (d["boxes"][t] for t in labels)
    assert y0["x1"] <= vx[0] - 10, (y0, vx)            # left of the lower left vertex's markers
    assert y1["x0"] >= vx[1] + 10, (y1, vx)            # right of the lower right vertex's
    assert abs(0.5 * (y2["x0"] + y2["x1"]) - vx[2]) <= 3, (y2, vx)   # centred over the apex


_WORD_JS = """() => {
  const all = [];
  (function walk(root) { for (const el of root.querySelectorAll('*')) { all.push(el); if (el.shadowRoot) walk(el.shadowRoot); } })(document);
  const host = all.find((e) => e.shadowRoot && e.getBoundingClientRect().height > 0
                        && (e.shadowRoot.textContent || "").includes("Anatomy of the last step"));
  const pane = host.getBoundingClientRect();
  const rows = [...host.shadowRoot.querySelectorAll('tr')];
  const imgs = rows.length ? [...rows[0].querySelectorAll('img')] : [];
  const truth = rows.find((r) => (r.textContent || "").includes("ground truth"));
  const cells = truth ? [...truth.querySelectorAll('td')].slice(1) : [];
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.right]; };
  return {pane: [pane.left, pane.right], letters: cells.map((c) => c.textContent.trim()).join(""),
          imgs: imgs.map(box), cells: cells.map(box)};
}"""


def test_every_letter_of_the_longest_ocr_word_is_inside_the_anatomy_pane(page, server):
    """A 14-letter word showed 13 letters: the 14th letter image and truth cell lay past the
    pane's right edge (it hides what overflows)."""
    _open(page, server.url, LONG_WORD_URL, "iteration 1 ")
    page.wait_for_timeout(1500)
    d = _wait(lambda: (lambda r: r if len(r["imgs"]) == 14 else None)(page.evaluate(_WORD_JS)), 60,
              "the word's 14 letter images")
    assert d["letters"] == "nconsequential", d
    left, right = d["pane"]
    for a, b in d["imgs"] + d["cells"]:
        assert left <= a and b <= right + 0.5, d
    widths = [b - a for a, b in d["imgs"]]
    assert min(widths) >= 14, widths                  # narrower, still readable


_BARS_JS = """() => {
  const pv = Bokeh.index.query_one((v) => v.model != null && v.model.title != null && v.frame != null
                                   && (v.model.title.text || "").startsWith("Per-block gap"));
  const r = pv.canvas_view.el.getBoundingClientRect(), f = pv.frame.bbox;
  let xs = null;
  for (const [m, rv] of pv.renderer_views) {
    if (rv.glyph != null && rv.glyph.model.type == "VBar") { xs = Array.from(rv.glyph.sx); }
  }
  return {left: r.left, top: r.top, bottom: r.top + f.y1, xs};
}"""

_TIP_JS = """() => {
  const t = [...document.querySelectorAll('.bk-Tooltip')].map((e) => e.getBoundingClientRect())
    .filter((r) => r.width > 0 && r.height > 0);
  return t.length ? {left: t[0].left, right: t[0].right, top: t[0].top, bottom: t[0].bottom} : null;
}"""


def test_bin_hover_box_stays_inside_the_window(page, server):
    """A bar in the plot's left half whose 735-px hover box did not fit on its right got it on
    its left, past the window's left edge. Every bin is hovered at twelve places across."""
    _open(page, server.url, "?dataset=ocr-small&steps=700", "iteration 700 ")
    page.wait_for_timeout(2000)
    d = page.evaluate(_BARS_JS)
    page.evaluate(f"() => window.scrollBy(0, {d['bottom'] - (H - 60)})")
    page.wait_for_timeout(800)
    d = page.evaluate(_BARS_JS)
    assert d["xs"] and len(d["xs"]) >= 100, d
    seen = 0
    for i in range(0, len(d["xs"]), max(1, len(d["xs"]) // 12)):
        page.mouse.move(d["left"] + d["xs"][i], d["bottom"] - 4)
        tip = _wait(lambda: page.evaluate(_TIP_JS), 10, f"the hover box of bin {i}")
        assert tip["left"] >= 0 and tip["right"] <= W, (i, tip)
        seen += 1
        page.mouse.move(3, 3)
        page.wait_for_timeout(200)
    assert seen >= 12
