"""A/B of the app's Step round trip in the page and of its refreshes during Run, between
checkouts, in one run (a benchmark script, not a timed test).

Each checkout's app is served by its own process (``gaplab.app.serve``, its kernels compiled or
loaded from the numba cache first), all with this interpreter and ``PYTHONPATH=ROOT`` (a
directory whose ``gaplab`` entry is the checkout, as for ``ab_step.py``); one page each, in one
Chromium, on OCR-large. The Step clicks alternate between the pages (click k of every checkout,
the first checkout rotating), so each pair of round trips is taken under the same load of a
shared machine; then Run windows alternate the same way, the page on the Step tab. Measured in
the page by its own clock, as ``app_bench.py`` does: click -> the status line's new iteration,
and -> the next animation frame; per-block bar refreshes per second and steps per second read
from the status line during Run.

    python benchmarks/app_bench_ab.py --root old=ROOT_OLD --root new=ROOT_NEW [--root ...]
        [--steps 40] [--run-rounds 3] [--run-seconds 3] [--out ab.json]

Needs Playwright (PyPI) and a Chromium executable (Debian's chromium).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import app_bench as ab  # noqa: E402  (the page helpers and the in-page round-trip probe)
from common import describe_root  # noqa: E402

_COUNT_REFRESH_JS = """() => {
    const src = window.Bokeh.documents[0].get_model_by_name('block_gaps');
    window.__gaplab_refresh = 0; window.__gaplab_data = 0;
    src.connect(src.change, () => { window.__gaplab_refresh++; });
    src.connect(src.properties.data.change, () => { window.__gaplab_data++; });
}"""
_REFRESHES = "() => Math.max(window.__gaplab_refresh, window.__gaplab_data)"


def _serve(root: str, port: int, log):
    code = (f"import sys; from gaplab.app.serve import serve; sys.exit(serve(port={port}, address='127.0.0.1', "
            "unused_session_lifetime_ms=1000, check_unused_sessions_ms=500))")
    env = dict(os.environ, PYTHONPATH=root)
    return subprocess.Popen([sys.executable, "-c", code], cwd=root, stdout=log, stderr=subprocess.STDOUT, env=env)


def _rotated(names, k):
    k %= len(names)
    return names[k:] + names[:k]


def _steps(pages, n_steps):
    """Step clicks alternating between the pages; the in-page round trips of each page."""
    names = list(pages)
    for k in range(1, n_steps + 1):
        for name in _rotated(names, k - 1):
            page = pages[name]
            page.get_by_role("button", name="Step", exact=True).click()
            ab._wait_status(page, rf"iteration {k}\b", timeout=30)
            time.sleep(0.05)
    rt = {name: pages[name].evaluate("() => window.__gaplab_rt") for name in names}
    out = {}
    for name in names:
        a, f = [r[0] for r in rt[name]], [r[1] for r in rt[name]]
        out[name] = {"in_page_ms_median": statistics.median(a), "in_page_ms_p90": sorted(a)[int(0.9 * len(a)) - 1],
                     "next_frame_ms_median": statistics.median(f), "n": len(a), "in_page_ms": a}
    for i, x in enumerate(names):
        for y in names[:i]:
            n = min(len(rt[x]), len(rt[y]))
            out[f"{x}/{y}"] = {"paired_ratio_median": statistics.median(rt[x][j][0] / rt[y][j][0] for j in range(n)),
                               "pairs": n}
    return out


def _runs(pages, rounds, seconds):
    """Run windows alternating between the pages: bar refreshes and steps per second."""
    names = list(pages)
    for page in pages.values():
        box = page.locator(".gaplab-w-max_passes input").first
        box.fill("1000000")
        box.press("Enter")
        time.sleep(0.3)
        page.evaluate(_COUNT_REFRESH_JS)
    out = {name: {"refreshes_per_s": [], "steps_per_s": []} for name in names}
    for r in range(rounds):
        for name in _rotated(names, r):
            page = pages[name]
            page.get_by_role("button", name="▶ Run", exact=True).click()
            ab._wait_status(page, r"running")
            time.sleep(0.5)
            c0, it0, t0 = page.evaluate(_REFRESHES), ab._iteration(page), time.perf_counter()
            time.sleep(seconds)
            c1, it1, t1 = page.evaluate(_REFRESHES), ab._iteration(page), time.perf_counter()
            page.get_by_role("button", name="❚❚ Pause", exact=True).click()
            ab._wait_status(page, r"paused")
            out[name]["refreshes_per_s"].append((c1 - c0) / (t1 - t0))
            out[name]["steps_per_s"].append((it1 - it0) / (t1 - t0))
    for v in out.values():
        v["refreshes_per_s_median"] = statistics.median(v["refreshes_per_s"])
        v["steps_per_s_median"] = statistics.median(v["steps_per_s"])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", action="append", required=True, metavar="NAME=ROOT",
                    help="a checkout to compare: NAME=ROOT, ROOT/gaplab being the checkout (two or more)")
    ap.add_argument("--steps", type=int, default=40, help="Step clicks per checkout")
    ap.add_argument("--run-rounds", type=int, default=3, help="Run windows per checkout")
    ap.add_argument("--run-seconds", type=float, default=3.0, help="length of each Run window")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)
    roots = dict(r.split("=", 1) for r in args.root)
    if len(roots) < 2 or any(not (Path(p) / "gaplab").is_dir() for p in roots.values()):
        print(f"--root needs two or more NAME=ROOT with a ROOT/gaplab checkout, got {args.root}", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, find_chromium, free_port
    res = {"roots": {k: describe_root(v) for k, v in roots.items()},
           "machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg()}}
    logs = tempfile.TemporaryDirectory(prefix="gaplab-app-ab-")
    procs = {}
    try:
        for name, root in roots.items():
            port = free_port()
            log = open(Path(logs.name) / f"{name}.log", "w")
            procs[name] = (_serve(root, port, log), port, log)
        t0 = time.time()
        for name in roots:   # kernels compiled (or loaded) and the default dataset ready
            while "solver kernels and default dataset ready" not in (Path(logs.name) / f"{name}.log").read_text():
                if procs[name][0].poll() is not None or time.time() - t0 > 900:
                    print(f"{name}: the app server did not get ready:\n"
                          + (Path(logs.name) / f"{name}.log").read_text()[-2000:], file=sys.stderr)
                    return 1
                time.sleep(0.5)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
            pages, errors = {}, {}
            for name in roots:
                _ctx, page, errors[name] = ab._open(browser, f"http://127.0.0.1:{procs[name][1]}/")
                ab._wait_status(page, r"ready", timeout=300)
                page.locator(".gaplab-w-dataset select").first.select_option("ocr-large")
                ab._wait_status(page, r"ready.*ocr-large.*iteration 0\b", timeout=300)
                page.evaluate(ab._ROUND_TRIP_JS)
                pages[name] = page
            res["step"] = _steps(pages, args.steps)
            res["machine"]["load_avg_after_steps"] = os.getloadavg()
            res["run"] = _runs(pages, args.run_rounds, args.run_seconds)
            res["console_errors"] = errors
            browser.close()
    finally:
        for proc, _port, log in procs.values():
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()
        logs.cleanup()
    res["machine"]["load_avg_end"] = os.getloadavg()
    for name in roots:
        s, r = res["step"][name], res["run"][name]
        print(f"{name}: Step in the page {s['in_page_ms_median']:.1f} ms median (p90 {s['in_page_ms_p90']:.0f}, "
              f"next frame {s['next_frame_ms_median']:.0f}; {s['n']} clicks); during Run "
              f"{r['refreshes_per_s_median']:.1f} refreshes/s, {r['steps_per_s_median']:,.0f} steps/s")
    for key, v in res["step"].items():
        if "/" in key:
            print(f"{key}: paired in-page ratio {v['paired_ratio_median']:.2f} (median of {v['pairs']} pairs)")
    return ab.finish(res, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
