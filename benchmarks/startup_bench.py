"""Start-up of ``gaplab app`` as a class sees it (a benchmark script, not a timed test).

Cold (an empty ``NUMBA_CACHE_DIR``) and/or warm (the numba cache as it is), one run each:
seconds from launching the server to the page (the Step button on screen), to Step enabled
(clicked at once: while the kernels compile the reference solver answers it), to the first Step
answered (status "iteration 1"), to the compile banner gone; while compiling, how long
the page's shown progress stood still at most (the fraction, and the pair fraction / seconds),
sampled every ~0.1 s from the page. The machine's load average is recorded (the machine is shared).

Usage::

    python benchmarks/startup_bench.py [--cold] [--warm] [--page-repeats 5] [--out results.json]

Warm uses ``NUMBA_CACHE_DIR`` as set (fill it first: ``gaplab warmup``).

Needs Playwright (PyPI) and a Chromium executable (Debian's chromium).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from gaplab.app.testing import shadow_texts_js

ROOT = Path(__file__).resolve().parents[1]

# the status line, and the compiling banner (a pane: its text is in its shadow root)
_READ_JS = shadow_texts_js(status=".gaplab-status", banner=".gaplab-compiling")


def _still(samples, key) -> float:
    """Longest time the value key(sample) stayed the same (seconds)."""
    if len(samples) < 2:
        return float("nan")
    t_change, longest = samples[0][0], 0.0
    for a, b in zip(samples, samples[1:]):
        if key(a) != key(b):
            longest = max(longest, b[0] - t_change)
            t_change = b[0]
    return max(longest, samples[-1][0] - t_change)


def start_run(browser, cold: bool, page_repeats: int = 0) -> dict:
    from gaplab.app.testing import AppServer
    env, tmp = {}, None
    if cold:
        tmp = tempfile.TemporaryDirectory(prefix="gaplab-numba-cold-")
        env["NUMBA_CACHE_DIR"] = tmp.name
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    (ROOT / "artifacts").mkdir(exist_ok=True)
    with AppServer(ROOT / "artifacts" / f"startup_bench_{'cold' if cold else 'warm'}.log", env=env,
                   timeout=600) as srv:
        server_s = time.perf_counter() - t0
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        page = ctx.new_page()
        page.goto(srv.url, timeout=120_000)
        step = page.get_by_role("button", name="Step", exact=True)
        step.wait_for(timeout=120_000)
        page_s = time.perf_counter() - t0
        # Step is clicked as soon as it is enabled (while the kernels compile the reference
        # solver answers it: gaplab.app.refstep)
        page.wait_for_function("(b) => !b.disabled", arg=step.element_handle(), timeout=900_000)
        enabled_s = time.perf_counter() - t0
        step.click()
        status = ""
        while time.perf_counter() - t0 < 900 and not re.search(r"iteration\s*1\b", status):
            status = page.evaluate(_READ_JS)["status"] or ""
            time.sleep(0.05)
        first_step_s = time.perf_counter() - t0
        answered_during_compile = "compiling solver kernels" in (page.evaluate(_READ_JS)["banner"] or "")
        samples = []   # (t, fraction text, seconds text) while the banner shows the compile
        while time.perf_counter() - t0 < 900:
            r = page.evaluate(_READ_JS)
            m = re.search(r"— (\d+)% · ([\d.]+) s", r["banner"] or "")
            if not m:
                break
            samples.append((time.perf_counter(), m.group(1), m.group(2)))
            time.sleep(0.1)
        kernels_ready_s = time.perf_counter() - t0
        ctx.close()
        # fresh pages on the running server: navigation -> status "ready" (buttons enabled)
        page_ready = []
        for _ in range(page_repeats):
            ctx = browser.new_context(viewport={"width": 1400, "height": 900})
            page = ctx.new_page()
            t1 = time.perf_counter()
            page.goto(srv.url, timeout=120_000)
            status = ""
            while time.perf_counter() - t1 < 120 and not re.search(r"ready.*ocr-small.*iteration 0\b", status):
                status = page.evaluate(_READ_JS)["status"] or ""
                time.sleep(0.02)
            page_ready.append(time.perf_counter() - t1)
            ctx.close()
            time.sleep(1.0)
        log = srv.log()
    if tmp is not None:
        tmp.cleanup()
    m = re.search(r"default solver kernels ready in ([\d.]+) s", log)
    return {"cold": cold, "server_listening_s": server_s, "page_s": page_s, "step_enabled_s": enabled_s,
            "first_step_answered_s": first_step_s, "first_step_during_compile": answered_during_compile,
            "step_kernels_shown_ready_s": kernels_ready_s, "fresh_page_ready_s": page_ready,
            "numba_cache_dir": env.get("NUMBA_CACHE_DIR", os.environ.get("NUMBA_CACHE_DIR", "(default)")),
            "server_says_step_kernels_ready_s": float(m.group(1)) if m else None,
            "progress_samples": len(samples),
            "progress_fraction_still_max_s": _still(samples, lambda s: s[1]),
            "progress_shown_still_max_s": _still(samples, lambda s: s[1:]),
            "load_avg_start": load0, "load_avg_end": os.getloadavg()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cold", action="store_true", help="an empty NUMBA_CACHE_DIR")
    ap.add_argument("--warm", action="store_true", help="the numba cache as it is")
    ap.add_argument("--page-repeats", type=int, default=0,
                    help="then time this many fresh pages to status ready on the running server")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)
    if not (args.cold or args.warm):
        args.cold = args.warm = True
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, find_chromium
    chromium = find_chromium()
    if chromium is None:
        print("no Chromium executable found (apt-get install chromium)", file=sys.stderr)
        return 2
    import gaplab
    res = {"machine": {"cpus": os.cpu_count()}, "gaplab": str(Path(gaplab.__file__).parent), "runs": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for cold in [c for c, on in ((False, args.warm), (True, args.cold)) if on]:
            r = start_run(browser, cold, args.page_repeats)
            res["runs"].append(r)
            print(f"{'cold' if cold else 'warm'} numba cache: page {r['page_s']:.1f} s, Step enabled "
                  f"{r['step_enabled_s']:.1f} s, first Step answered {r['first_step_answered_s']:.1f} s; "
                  f"progress shown still at most {r['progress_shown_still_max_s']:.1f} s (fraction "
                  f"{r['progress_fraction_still_max_s']:.1f} s); load {r['load_avg_start'][0]:.1f} -> "
                  f"{r['load_avg_end'][0]:.1f} on {res['machine']['cpus']} CPUs")
            if r["fresh_page_ready_s"]:
                print("fresh pages to status ready: " + ", ".join(f"{t:.2f}" for t in r["fresh_page_ready_s"]) + " s")
        browser.close()
    if args.out:
        from gaplab.core.atomic import write_text_atomic
        write_text_atomic(args.out, json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
