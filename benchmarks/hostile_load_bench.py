"""Does browser-asked work block other pages? (issue 32 items 1 and 3)

On a ``gaplab app`` server of the running interpreter's gaplab (kernels compiled first), in
headless Chromium:

- ``baseline``: fresh pages' load times (navigation -> Step button enabled) and Step round trips
  (click -> the status line's iteration changes);
- ``long_url``: page A opens ``?dataset=D&steps=N``; meanwhile page B is loaded and steps: B's load
  time and Step round trips, and when A showed its page and finished its steps;
- ``counts``: page A sets the keyboard component's ``counts`` to ``step:100000`` from its own
  JavaScript; then page B is loaded and steps; A's iteration afterwards.

A page or Step that has not answered after ``--timeout`` seconds is recorded as null (timed out).
Prints JSON (medians) with the load average before and after, and writes it to ``--out``.
Run it with another checkout's interpreter to compare (e.g. ``/work/main/.venv/bin/python``).
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import print_json  # noqa: E402

SET_COUNTS_JS = """(value) => {
    for (const doc of Bokeh.documents) {
        for (const m of doc.all_models) {
            if (m.data && m.data.properties && 'counts' in m.data.properties) { m.data.counts = value; return true; }
        }
    }
    return false;
}"""


def _iteration(page) -> int:
    try:
        m = re.search(r"iteration ([\d,]+)", page.locator(".gaplab-status").first.inner_text(timeout=2000))
    except Exception:   # noqa: BLE001 - not drawn yet
        return -1
    return int(m.group(1).replace(",", "")) if m else -1


def _status(page) -> str:
    try:
        return page.locator(".gaplab-status").first.inner_text(timeout=2000)
    except Exception:   # noqa: BLE001
        return ""


def _wait(fn, timeout, poll=0.1):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if fn():
            return time.perf_counter() - t0
        time.sleep(poll)
    return None


def load_page(browser, url, timeout):
    """(seconds to the Step button enabled or None, context, page)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    page = ctx.new_page()
    page.set_default_timeout(timeout * 1000)
    t0 = time.perf_counter()
    try:
        page.goto(url, timeout=timeout * 1000, wait_until="commit")
        btn = page.get_by_role("button", name="Step", exact=True)
        left = timeout - (time.perf_counter() - t0)
        ok = _wait(lambda: btn.count() > 0 and btn.is_enabled() and _iteration(page) >= 0, max(left, 0.1))
        return (None if ok is None else time.perf_counter() - t0), ctx, page
    except Exception:   # noqa: BLE001 - a navigation that timed out
        return None, ctx, page


def step_round_trip(page, timeout):
    it = _iteration(page)
    btn = page.get_by_role("button", name="Step", exact=True)
    t0 = time.perf_counter()
    try:
        btn.click(timeout=timeout * 1000)
    except Exception:   # noqa: BLE001
        return None
    left = timeout - (time.perf_counter() - t0)
    ok = _wait(lambda: _iteration(page) > it, max(left, 0.1), poll=0.02)
    return None if ok is None else time.perf_counter() - t0


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def measure_other(browser, url, timeout, steps=3):
    t, ctx, page = load_page(browser, url, timeout)
    rts = [step_round_trip(page, timeout) for _ in range(steps)] if t is not None else []
    ctx.close()
    return {"load_s": t, "step_s": rts, "step_median_s": _median(rts)}


def run(args) -> dict:
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, AppServer, find_chromium
    out = {"gaplab": os.path.dirname(__import__("gaplab").__file__), "load_before": os.getloadavg()}
    try:
        out["commit"] = subprocess.run(["git", "-C", out["gaplab"], "rev-parse", "--short", "HEAD"],
                                       capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out["commit"] = None
    log = Path(tempfile.mkdtemp()) / "server.log"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        for scenario in args.scenarios:
            with AppServer(log, session_lifetime_ms=60_000, timeout=1200, wait_warm=not args.default_kernels) as srv:
                if args.default_kernels:   # only the kernels of a default Step (others may still compile)
                    _wait(lambda: "default solver kernels ready" in srv.log(), 1200, poll=1.0)
                if scenario == "baseline":
                    res = [measure_other(browser, srv.url, args.timeout) for _ in range(args.repeats)]
                    out["baseline"] = {"runs": res, "load_median_s": _median([r["load_s"] for r in res]),
                                       "step_median_s": _median([x for r in res for x in r["step_s"]])}
                elif scenario == "long_url":
                    out["long_url"] = _long_url(browser, srv.url, args)
                elif scenario == "counts":
                    out["counts"] = _counts(browser, srv.url, args)
                out.setdefault("tracebacks", {})[scenario] = srv.log().count("Traceback")
        browser.close()
    out["load_after"] = os.getloadavg()
    return out


def _long_url(browser, url, args) -> dict:
    q = f"?dataset={args.dataset}&steps={args.steps}"
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    a = ctx.new_page()
    t0 = time.perf_counter()
    a.goto(url + q, timeout=args.timeout * 1000, wait_until="commit")
    other = [measure_other(browser, url, args.timeout) for _ in range(args.repeats)]
    a_state = _status(a)
    done = _wait(lambda: _iteration(a) == args.steps and "replaying" not in _status(a), args.replay_timeout)
    res = {"url": q, "other_pages": other, "other_load_median_s": _median([r["load_s"] for r in other]),
           "other_step_median_s": _median([x for r in other for x in r["step_s"]]),
           "long_page_status_after_others": a_state,
           "long_page_done_s": None if done is None else time.perf_counter() - t0}
    ctx.close()
    return res


def _counts(browser, url, args) -> dict:
    t, ctx, a = load_page(browser, url, args.timeout)
    if t is None:
        ctx.close()
        return {"error": "the page did not load"}
    set_ok = a.evaluate(SET_COUNTS_JS, "step:100000")
    other = [measure_other(browser, url, args.timeout) for _ in range(args.repeats)]
    time.sleep(2.0)
    res = {"counts_set": bool(set_ok), "other_pages": other,
           "other_load_median_s": _median([r["load_s"] for r in other]),
           "other_step_median_s": _median([x for r in other for x in r["step_s"]]),
           "hostile_page_iteration": _iteration(a)}
    ctx.close()
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", nargs="+", default=["baseline", "long_url", "counts"],
                    choices=["baseline", "long_url", "counts"])
    ap.add_argument("--dataset", default="ocr-small")
    ap.add_argument("--steps", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before a page or a Step counts as timed out")
    ap.add_argument("--replay-timeout", type=float, default=600.0)
    ap.add_argument("--default-kernels", action="store_true",
                    help="start measuring once the default Step's kernels are ready (not every model kind's)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    res = run(args)
    print_json(res, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
