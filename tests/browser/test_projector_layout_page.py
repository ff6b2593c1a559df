"""Projector mode at 1280×720 in headless Chromium: on every tab the DOM text
boxes neither overlap nor run out of their containers or the viewport, every text is at least
18 px, and on the Step tab the narration of the last step (``.gaplab-narration``) is inside
the viewport with the anatomy; the Step tab does not scroll and nothing on it (text, input,
plot canvas) is cut by the viewport's bottom. Text drawn in Bokeh canvases is checked on the figure models
(tests/app/test_projector_layout.py).

OCR-small in the default run; CoNLL-2000, horse-small and lsp-pose (the data in
``$GAPLAB_DATA`` or /work/shared/data) are the slow sweep.
"""
from __future__ import annotations

import functools
import time
from pathlib import Path

import pytest

from browser_env import require_browser, wait_until, warm_app_server
from cli_runs import shared_data
from gaplab.app.kernels import FAKE_BACKGROUND_ENV
from gaplab.app.testing import busy_machine, layout_problems, shadow_texts_js, text_layout

pytestmark = pytest.mark.browser

require_browser()   # skips the module without Playwright or Chromium

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
DATA = shared_data()
TABS = ("Step", "Convergence", "Cache & active sets", "Regularization path", "Toy example", "Lessons",
        "Sweeps", "Race")
W, H = 1280, 720
#: the tabs that fit the viewport in projector mode (no scrolling, nothing cut by its bottom)
FIT_TABS = ("Step", "Race")


@pytest.fixture(scope="module")
def server():
    env = {"GAPLAB_DATA": str(DATA)} if DATA is not None else None
    yield from warm_app_server(ARTIFACTS / "layout_server.log", env)


_wait = functools.partial(wait_until, poll=0.25)


def _settled(page, timeout=60):
    """The page's text once two reads 1 s apart find the same number of fragments (a tab's
    views are made when it is first shown)."""
    prev = None
    t0 = time.time()
    while time.time() - t0 < timeout:
        time.sleep(1.0)
        lay = text_layout(page)
        if prev is not None and len(lay["boxes"]) == len(prev["boxes"]):
            return lay
        prev = lay
    return prev


def projector_tour(browser, url, dataset, shots: Path | None = None, tabs=TABS, fold: bool = False,
                   note: bool = False) -> dict:
    """Open ``dataset`` at 1280×720 in projector mode, take three steps and visit ``tabs``.
    Returns {tab: problems} (see :func:`gaplab.app.testing.layout_problems`), with the
    narration's box on the Step tab; ``fold``: the Step and Race tabs must also fit the
    viewport (no scrolling, nothing cut by its bottom edge); ``note``: the background-compile
    note must show on the Step tab, inside the viewport."""
    ctx = browser.new_context(viewport={"width": W, "height": H})
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{url}?dataset={dataset}", timeout=120_000)
        status = page.locator(".gaplab-status").first
        _wait(lambda: "ready" in status.inner_text() and dataset in status.inner_text(), 600,
              f"{dataset} ready")
        page.get_by_role("button", name="Projector mode").click()
        page.locator(".gaplab-topbar").first.wait_for(state="visible", timeout=60_000)
        step = page.get_by_role("button", name="Step", exact=True)
        for k in range(1, 4):
            step.click()
            _wait(lambda k=k: f"iteration {k} " in status.inner_text(), 120, f"iteration {k}")
        out = {}
        for tab in tabs:
            page.locator(".bk-tab", has_text=tab).first.click()
            page.mouse.move(3, 3)   # no tooltip
            lay = _settled(page)
            # the Step tab is the lecture's screen: it fits 1280×720 (no scrolling, nothing cut
            # by the bottom edge: the anatomy's numbers table, the sampling plot's axis label)
            problems = layout_problems(lay, min_font=18, fold=fold and tab in FIT_TABS)
            if lay["scrollW"] > W:
                problems.append(f"the page scrolls sideways: {lay['scrollW']} px wide")
            if tab == "Step":
                nar = page.locator(".gaplab-narration").filter(visible=True).first
                box = nar.bounding_box()
                # the class is on the pane's element; its text is in the pane's shadow root
                text = nar.evaluate("e => (e.shadowRoot || e).textContent")
                if box is None or box["y"] < 0 or box["y"] + box["height"] > H or box["x"] + box["width"] > W:
                    problems.append(f"narration outside the {W}×{H} viewport: {box}")
                if "What just happened" not in text or "block" not in text:
                    problems.append(f"narration does not narrate the step: {text[:120]!r}")
                if note:
                    cn = page.locator(".gaplab-compile-short").filter(visible=True)
                    nb = cn.first.bounding_box() if cn.count() else None
                    if nb is None or nb["y"] < 0 or nb["y"] + nb["height"] > H:
                        problems.append(f"the background-compile note is not in the viewport: {nb}")
            if shots is not None:
                page.screenshot(path=str(shots / f"projector_{dataset}_{tab.split()[0].lower()}.png"))
            out[tab] = problems
        return out
    finally:
        ctx.close()


def _assert_clean(result):
    bad = {tab: p for tab, p in result.items() if p}
    assert bad == {}, "\n".join(f"{tab}:\n  " + "\n  ".join(p[:25]) for tab, p in bad.items())


def test_projector_layout_step_tab_ocr_small(server, browser):
    """The Step tab (the narration above the fold) in the default run (every tab: about 45 s
    here, so in the slow sweep)."""
    _assert_clean(projector_tour(browser, server.url, "ocr-small", tabs=TABS[:1]))


def test_projector_step_tab_fits_the_viewport_ocr_small(server, browser):
    """The lecture's screen fits 1280×720: the page does not scroll and nothing on the Step tab
    (the anatomy with its numbers table, the narration, the gap bars, the sampling plot with
    its axis labels) is cut by the viewport's bottom."""
    _assert_clean(projector_tour(browser, server.url, "ocr-small", tabs=TABS[:1], fold=True))


@pytest.fixture(scope="module")
def server_compile_note():
    """A server whose kernels are ready but whose page shows the background-compile note (the
    test-only :data:`gaplab.app.kernels.FAKE_BACKGROUND_ENV`)."""
    env = {FAKE_BACKGROUND_ENV: "1", **({"GAPLAB_DATA": str(DATA)} if DATA is not None else {})}
    yield from warm_app_server(ARTIFACTS / "layout_note_server.log", env)


def test_projector_step_tab_fits_the_viewport_with_the_compile_note_ocr_small(server_compile_note, browser):
    """The lecture's screen fits 1280×720 while the note "still compiling more kernels in the
    background" shows above it (the first minutes of a lecture on a fresh install): no scrolling,
    nothing cut by the bottom edge, the note itself on screen."""
    _assert_clean(projector_tour(browser, server_compile_note.url, "ocr-small", tabs=TABS[:1], fold=True,
                                 note=True))


def _race_ran(page, problem: str, until, timeout: float = 300.0) -> dict:
    """The race of ``problem`` (a label of its dropdown) run at the fastest speed until
    ``until(readout text)`` or ``timeout``; then the page's problems at 1280×720 (fold: no
    scrolling, nothing cut by the bottom edge)."""
    race = page.locator(".gaplab-race").first
    race.locator("select").first.select_option(label=problem)
    race.locator("select").nth(1).select_option(label="3 passes / tick")
    page.locator(".gaplab-race-run button, .gaplab-race-run .bk-btn").first.click()
    page.mouse.move(3, 3)
    t0 = time.time()
    while time.time() - t0 < timeout:
        text = page.evaluate(shadow_texts_js(readout=".gaplab-race-readout"))["readout"] or ""
        if until(text):
            break
        time.sleep(1.0)
    lay = _settled(page)
    return layout_problems(lay, min_font=18, fold=True)


def test_projector_race_tab_fits_the_viewport_ocr_small(server, browser):
    """The race (uniform against gap sampling) fits 1280×720 under the projector bar: before a
    race, on the toy after its race (the heat maps' titles then say "frozen at ε (… calls)",
    the readout takes three lines) and on OCR-small while it runs (its n and K note shown):
    its controls on one row, the heat maps and the gap curves with their axis labels above the
    bottom edge."""
    _assert_clean(projector_tour(browser, server.url, "ocr-small", tabs=("Race",), fold=True,
                                 shots=ARTIFACTS))
    ctx = browser.new_context(viewport={"width": W, "height": H})
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{server.url}?dataset=ocr-small&tab=race", timeout=120_000)
        page.locator(".gaplab-race").first.wait_for(state="visible", timeout=120_000)
        page.get_by_role("button", name="Projector mode").click()
        page.locator(".gaplab-topbar").first.wait_for(state="visible", timeout=60_000)
        out = {}
        # the toy until both sides have stopped (at ε: the heat maps' titles on their longest);
        # OCR-small (its n and K note shown) while it runs
        for problem, until in (("App. C toy (1 hard + n−1 easy)",
                                lambda t: t.count("stopped there") + t.count("without reaching") >= 2),
                               ("OCR-small", lambda t: "running" in t and "tick 0:" not in t)):
            out[problem] = _race_ran(page, problem, until)
            page.screenshot(path=str(ARTIFACTS / f"projector_race_ran_{problem.split()[0].lower()}.png"))
        _assert_clean(out)
    finally:
        ctx.close()


@pytest.mark.slow
def test_projector_step_tab_fits_the_viewport_ocr_small_busy(server, browser):
    """The same on a busy laptop (two CPU-bound processes beside the app)."""
    with busy_machine():
        _assert_clean(projector_tour(browser, server.url, "ocr-small", tabs=TABS[:1], fold=True))


@pytest.mark.slow
@pytest.mark.skipif(DATA is None, reason="no data directory ($GAPLAB_DATA) with CoNLL, horse, LSP")
@pytest.mark.parametrize("dataset", ["conll2000", "horse-small", "lsp-pose"])
def test_projector_step_tab_fits_the_viewport_other_datasets(server, browser, dataset):
    _assert_clean(projector_tour(browser, server.url, dataset, tabs=TABS[:1], fold=True))


@pytest.mark.slow
def test_projector_layout_every_tab_ocr_small(server, browser):
    _assert_clean(projector_tour(browser, server.url, "ocr-small", shots=ARTIFACTS))


@pytest.mark.slow
@pytest.mark.skipif(DATA is None, reason="no data directory ($GAPLAB_DATA) with CoNLL, horse, LSP")
@pytest.mark.parametrize("dataset", ["conll2000", "horse-small", "lsp-pose"])
def test_projector_layout_every_tab_other_datasets(server, browser, dataset):
    _assert_clean(projector_tour(browser, server.url, dataset, shots=ARTIFACTS))


def test_layout_problems_measure_the_text_inside_inputs_and_dropdowns(browser):
    """Text in an input box or a dropdown is not DOM text: the helper measures the shown value
    in the input's font against its inner width (a cut value is a problem, a fitting one not)."""
    ctx = browser.new_context(viewport={"width": W, "height": H})
    page = ctx.new_page()
    try:
        page.set_content("""<body style="font-family: sans-serif">
          <input id="cut" style="font-size: 18px; width: 70px; padding: 4px" value="0.00003052">
          <select id="cutsel" style="font-size: 18px; width: 100px"><option>every pass</option>
            <option selected>every 10 passes</option></select>
          <input id="fits" style="font-size: 18px; width: 200px; padding: 4px" value="0.00003052">
          <input id="small" style="font-size: 12px; width: 200px" value="12">
          <input type="checkbox" checked></body>""")
        lay = text_layout(page)
        assert {b["text"] for b in lay["inputs"]} == {"0.00003052", "every 10 passes", "12"}
        problems = layout_problems(lay, min_font=18)
        cut = [p for p in problems if p.startswith("input text cut")]
        assert len(cut) == 2 and any("'0.00003052' in a input" in p for p in cut) \
            and any("'every 10 passes' in a select" in p for p in cut), problems
        assert [p for p in problems if p.startswith("font 12.0 px")], problems
        assert len(problems) == 3, problems
    finally:
        ctx.close()


@pytest.mark.slow
def test_projector_layout_inputs_path_and_toy_tabs_ocr_small(server, browser):
    """At 18 px the path tab's λ_min ("0.00003052") and the toy tab's "every 10 passes"
    dropdown fit inside their boxes (with every other text check of the tour)."""
    _assert_clean(projector_tour(browser, server.url, "ocr-small", tabs=("Regularization path", "Toy example")))
