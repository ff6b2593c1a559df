"""Start-up on a cold numba cache, watched in headless Chromium: while the
kernels of a Step compile, the page shows the elapsed seconds, a progress fraction that moves,
and what numba is compiling; the shown progress never stands still for more than 2 s.

Slow: the server compiles the kernels of a Step (a tiny chain model) from an empty
NUMBA_CACHE_DIR, a minute or more on a loaded machine.
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from browser_env import require_browser
from gaplab.app.testing import AppServer, shadow_texts_js

pytestmark = [pytest.mark.browser, pytest.mark.slow]

require_browser()   # skips the module without Playwright or Chromium

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

#: the longest the page's progress (fraction or seconds) may stand still
MAX_STILL_S = 2.0
#: seconds after the banner appeared before the check starts (the page's own load)
SETTLE_S = 3.0

_READ_JS = shadow_texts_js(fraction=".gaplab-startup-fraction", seconds=".gaplab-startup-seconds",
                           what=".gaplab-startup-what", status=".gaplab-status")


def test_cold_start_progress_is_live(browser, tmp_path):
    from gaplab.app.kernels import FIRST_STEP_WORK
    ARTIFACTS.mkdir(exist_ok=True)
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    with AppServer(ARTIFACTS / "startup_cold_server.log", env=env, timeout=120) as srv:
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        page = ctx.new_page()
        try:
            page.goto(srv.url, timeout=60_000)
            page.locator(".gaplab-startup-seconds").first.wait_for(timeout=60_000)
            samples = []   # (time, fraction %, seconds, what, status) while the page shows the compile
            deadline = time.perf_counter() + 900
            while time.perf_counter() < deadline:
                r = page.evaluate(_READ_JS)
                if r["fraction"] is not None:
                    samples.append((time.perf_counter(), int(r["fraction"].rstrip("%")),
                                    float(r["seconds"].rstrip(" s")), r["what"], r["status"] or ""))
                elif r["status"] and "compiling" not in r["status"]:   # the kernels of a Step are ready
                    break
                time.sleep(0.1)
            t_ready = time.perf_counter()
            page.screenshot(path=str(ARTIFACTS / "startup_cold_ready.png"))
            # the first Step is answered once the buttons are enabled
            step = page.get_by_role("button", name="Step", exact=True)
            page.wait_for_function("(b) => !b.disabled", arg=step.element_handle(), timeout=60_000)
            step.click()
            status = ""
            while time.perf_counter() < t_ready + 120 and not re.search(r"iteration\s*1\b", status):
                status = page.evaluate(_READ_JS)["status"] or ""
                time.sleep(0.1)
            assert re.search(r"iteration\s*1\b", status), status
        finally:
            ctx.close()
        log = srv.log()
    (ARTIFACTS / "startup_cold_progress.json").write_text(json.dumps(samples))
    assert len(samples) >= 20 and samples[-1][0] - samples[0][0] >= 5, samples[-3:]
    # the status line says the same as the banner (fraction and seconds) while compiling
    assert any(re.search(r"compiling kernels \d+% · \d+ s", s[4]) for s in samples), samples[-1]
    # what the page shows changes at least every MAX_STILL_S (the seconds tick, the fraction moves),
    # from SETTLE_S after the banner appeared (the server first builds the page's per-block plots,
    # once per page, on its own thread)
    live = [x for x in samples if x[0] >= samples[0][0] + SETTLE_S]
    changes = [live[0][0]] + [b[0] for a, b in zip(live, live[1:]) if a[1:3] != b[1:3]] + [t_ready]
    still = max(b - a for a, b in zip(changes, changes[1:]))
    assert still <= MAX_STILL_S, f"the progress stood still for {still:.1f} s"
    # the fraction moves (not only the clock): many distinct values, never backwards
    fractions = [s[1] for s in samples]
    assert fractions == sorted(fractions), fractions
    assert len(set(fractions)) >= 10 and fractions[-1] >= 50, sorted(set(fractions))
    # the seconds are the elapsed time of the compile
    assert samples[-1][2] - samples[0][2] >= int(samples[-1][0] - samples[0][0]) - 2
    # it names what numba is compiling (a function and a compiler pass)
    assert any(re.search(r"now: \w[\w.<>]* \(\w+(, \d+ s)?\)", s[3]) for s in samples), {s[3] for s in samples}
    # the expected compile work of a Step (the denominator of the fraction) is the real one ±30 %
    m = re.search(r"default solver kernels ready in [\d.]+ s \((\d+) units of compile work; (\d+) in the "
                  r"server process\)", log)
    assert m, log
    assert 0.7 <= int(m.group(1)) / FIRST_STEP_WORK <= 1.3, (m.group(1), FIRST_STEP_WORK)
    # they compiled in the child process: the server's own compiles are the session's few
    assert int(m.group(2)) <= 0.3 * int(m.group(1)), m.group(0)


def test_cold_start_first_step_answered_by_the_reference_solver(browser, tmp_path):
    """On a cold numba cache the first Step is answered while the kernels still compile (the
    reference solver answers; the page says so), and once the kernels are ready the next Step
    goes on from the same state (the fast solver took over). How many seconds after launch is
    measured by benchmarks/startup_bench.py, not asserted here."""
    from gaplab.app.refstep import REFERENCE_NOTE
    ARTIFACTS.mkdir(exist_ok=True)
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    t0 = time.perf_counter()
    with AppServer(ARTIFACTS / "startup_cold_reference_server.log", env=env, timeout=120) as srv:
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        page = ctx.new_page()
        try:
            page.goto(srv.url, timeout=60_000)
            step = page.get_by_role("button", name="Step", exact=True)
            step.wait_for(timeout=60_000)
            page.wait_for_function("(b) => !b.disabled", arg=step.element_handle(), timeout=60_000)
            step.click()
            status = ""
            while time.perf_counter() < t0 + 120 and not re.search(r"iteration\s*1\b", status):
                status = page.evaluate(_READ_JS)["status"] or ""
                time.sleep(0.05)
            assert re.search(r"iteration\s*1\b", status), status
            banner = page.evaluate(_BANNER_JS)["banner"] or ""
            compiling_then = "compiling" in banner
            assert not compiling_then or REFERENCE_NOTE in banner, banner
            # the kernels get ready: the banner goes, the next Step is the fast solver's
            deadline = time.perf_counter() + 900
            while time.perf_counter() < deadline and "compiling solver kernels" in (page.evaluate(_BANNER_JS)["banner"] or ""):
                time.sleep(0.2)
            page.wait_for_function("(b) => !b.disabled", arg=step.element_handle(), timeout=60_000)
            step.click()
            while time.perf_counter() < deadline and not re.search(r"iteration\s*2\b", status):
                status = page.evaluate(_READ_JS)["status"] or ""
                time.sleep(0.1)
            assert re.search(r"iteration\s*2\b", status), status
        finally:
            ctx.close()
        log = srv.log()
    assert compiling_then, "the kernels were ready before the first Step: not a cold start"
    assert "Traceback" not in log, log


_BANNER_JS = shadow_texts_js(banner=".gaplab-startup")


def test_shadow_texts_js_reads_text_through_shadow_roots(browser):
    """The shared look-up finds an element in the page, inside nested shadow roots, and a pane
    host's text in its own shadow root; a selector with no element gives None."""
    page = browser.new_page()
    try:
        page.set_content("<div class='plain'>plain text</div><div id='outer'></div><div id='host'></div>")
        page.evaluate("""() => {
            const outer = document.getElementById('outer').attachShadow({mode: 'open'});
            outer.innerHTML = "<div id='inner'></div>";
            const inner = outer.getElementById('inner').attachShadow({mode: 'open'});
            inner.innerHTML = "<span class='deep'>deep text</span>";
            const host = document.getElementById('host');
            host.className = 'pane';
            host.attachShadow({mode: 'open'}).innerHTML = '<b>pane text</b>';
        }""")
        got = page.evaluate(shadow_texts_js(plain=".plain", deep=".deep", pane=".pane", none=".absent"))
        assert got == {"plain": "plain text", "deep": "deep text", "pane": "pane text", "none": None}
    finally:
        page.close()
