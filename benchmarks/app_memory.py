"""A long-running app server's memory and its heavy datasets' loads, measured in a browser.

``gaplab app`` on 127.0.0.1 (kernels compiled first), then

* ``--tabs``: one Chromium tab per heavy dataset (``/?dataset=NAME``), each until its status line
  shows the loaded dataset (seconds to ready, every status text seen meanwhile), then closed; the
  server's RSS before, with the tabs open and after they are all closed and their sessions
  destroyed; tracebacks in the server log;
* ``--page-loads``: RSS growth of plain page loads (``--warm`` loads first, then ``--loads``).

``--no-compile``: the server does not compile the solver kernels (memory and loads only, on a
machine too busy for a compile; the pages keep Step disabled). ``--busy`` keeps two CPU-bound
processes running meanwhile (a lecturer's laptop with a browser and
a video call beside the app). Prints JSON; ``--out`` writes it too.

    python benchmarks/app_memory.py --tabs --page-loads --out benchmarks/results/app_memory.json
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import print_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def wait_closed(srv, count: int, timeout: float = 180.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if srv.log().count(" closed (") >= count:
            return True
        time.sleep(0.5)
    return False


def open_tab(browser, url: str, dataset: str, timeout: float) -> dict:
    """Open ``url`` in a new tab; poll the status line until it shows ``dataset`` loaded."""
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    t0 = time.perf_counter()
    page.goto(url, timeout=int(timeout * 1000))
    seen, ready = [], None
    while time.perf_counter() - t0 < timeout:
        try:
            text = page.locator(".gaplab-status").first.inner_text(timeout=2000)
        except Exception:
            text = ""
        if text and (not seen or seen[-1][1] != text):
            seen.append((round(time.perf_counter() - t0, 2), text))
        if dataset in text and "(n = " in text and "loading" not in text:
            ready = time.perf_counter() - t0
            break
        time.sleep(0.25)
    return {"dataset": dataset, "ready_s": ready, "statuses": seen[:60], "page": page}


def tabs(srv, browser, names, timeout: float) -> dict:
    pid = srv.proc.pid
    time.sleep(3.0)
    before = rss_mb(pid)
    closed0 = srv.log().count(" closed (")
    out, pages = [], []
    for name in names:
        r = open_tab(browser, srv.url + f"?dataset={name}", name, timeout)
        r["rss_open_mb"] = rss_mb(pid)
        pages.append(r.pop("page"))
        out.append(r)
        print(json.dumps({k: r[k] for k in ("dataset", "ready_s", "rss_open_mb")}), file=sys.stderr, flush=True)
    with_tabs = rss_mb(pid)
    for p in pages:
        p.close()
    ok = wait_closed(srv, closed0 + len(pages))
    time.sleep(20.0)
    after = rss_mb(pid)
    log = srv.log()
    return {"rss_before_mb": before, "rss_with_tabs_mb": with_tabs, "rss_after_close_mb": after,
            "kept_mb": after - before, "sessions_destroyed": ok, "tabs": out,
            "tracebacks": log.count("Traceback"), "error_handling_message": log.count("error handling message"),
            "kept_datasets_log": re.findall(r"datasets kept loaded[^\n]*", log)}


def page_loads(srv, warm: int, n: int) -> dict:
    def load(_):
        with urllib.request.urlopen(srv.url, timeout=300) as r:
            r.read()

    def batch(k):
        before = srv.log().count(" closed (")
        with ThreadPoolExecutor(10) as ex:
            list(ex.map(load, range(k)))
        wait_closed(srv, before + k)
        time.sleep(2.0)

    batch(warm)
    r0 = rss_mb(srv.proc.pid)
    t0 = time.perf_counter()
    batch(n)
    r1 = rss_mb(srv.proc.pid)
    return {"warm_loads": warm, "loads": n, "rss_after_warm_mb": r0, "rss_after_loads_mb": r1,
            "growth_mb": r1 - r0, "mb_per_load": (r1 - r0) / n, "seconds": time.perf_counter() - t0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tabs", action="store_true")
    ap.add_argument("--datasets", default="conll2000,horse-small,lsp-pose")
    ap.add_argument("--page-loads", action="store_true")
    ap.add_argument("--warm", type=int, default=60)
    ap.add_argument("--loads", type=int, default=300)
    ap.add_argument("--busy", action="store_true", help="two CPU-bound processes run meanwhile")
    ap.add_argument("--no-compile", action="store_true", help="the server compiles no solver kernel")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds a tab may take to load")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, AppServer, find_chromium

    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)] if args.busy else []
    res = {"load_average_start": os.getloadavg(), "busy": bool(args.busy)}
    try:
        env = {"GAPLAB_DATA": os.environ.get("GAPLAB_DATA", str(DATA))}
        log = ROOT / "artifacts" / "app_memory_server.log"
        srv = AppServer(log, session_lifetime_ms=1000, timeout=900, wait_warm=not args.no_compile, env=env)
        if args.no_compile:
            srv.cmd[-1] = ("import gaplab.app.kernels as k; k.start = lambda *a, **kw: None; "
                           + srv.cmd[-1].replace("check_unused_sessions_ms", "warmup=False, check_unused_sessions_ms"))
        res["no_compile"] = bool(args.no_compile)
        with srv:
            if args.tabs:
                with sync_playwright() as pw:
                    browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
                    res["tabs"] = tabs(srv, browser, args.datasets.split(","), args.timeout)
                    browser.close()
            if args.page_loads:
                res["page_loads"] = page_loads(srv, args.warm, args.loads)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    res["load_average_end"] = os.getloadavg()
    print_json(res, args.out or None, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
