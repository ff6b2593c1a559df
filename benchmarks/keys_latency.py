"""The presenter keys' answer time in the page, quiet or busy (a script, not a test).

Serves the app (kernels compiled first), opens OCR-small at 1280×720 in headless Chromium,
takes one Step, then presses keys and times each press (Playwright's key press) to the change a
viewer sees, read after the page's next painted frame every 50 ms:

* space (Step): the status line's iteration goes up by one;
* r (Run/Pause): the status line says "running" (and the iteration moves), then, on the next
  r, "paused" (the run at ``--speed``, default 1,000 steps/s; the pass budget set to 100,000 so
  that no round ends a run);
* p (projector mode): the projector bar shows, then hides (with the Step tab's narration).

The presses of each key alternate with the others (space, r, r, p, p per round), so each
round's presses share the load. ``--busy`` runs with the busy-laptop condition
(:func:`gaplab.app.testing.busy_machine`: two CPU-bound processes beside the app).

    python benchmarks/keys_latency.py [--busy] [--rounds 8] [--speed LABEL] [--url URL] [--out FILE.json]

Prints and writes JSON: seconds per key (median, max, every press), the load average, and what
the page received and how busy it was during the rounds: websocket messages and kilobytes per
second from the server, and the page's main-thread lag (how late a 50-ms timer fires: median and
max in ms; a page behind on applying document patches answers keys as late).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import print_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: after the next painted frame: the status line's text and whether the projector bar shows
_STATE_JS = """async () => {
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  let status = null, top = null, nar = false;
  const all = (root) => { for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) all(el.shadowRoot);
      if (!el.classList) continue;
      if (!status && el.classList.contains('gaplab-status') && el.checkVisibility()) status = el.textContent;
      if (el.classList.contains('gaplab-topbar')) top = el;
      if (el.classList.contains('gaplab-narration') && el.checkVisibility()
          && (el.shadowRoot || el).textContent.includes('What just happened')) nar = true;
  } };
  all(document);
  return {status: status || '', on: !!(top && top.checkVisibility()), narration: nar};
}"""

#: the page's main-thread lag: how late a 50-ms timer fires (ms), sampled from now on
_LAG_JS = """() => { window.__gaplabLag = []; let t = performance.now();
  window.__gaplabLagTimer = setInterval(() => { const now = performance.now();
    window.__gaplabLag.push(now - t - 50); t = now; }, 50); }"""

_ITER = re.compile(r"iteration ([0-9,]+)")


def _iteration(state) -> int:
    m = _ITER.search(state["status"])
    return int(m.group(1).replace(",", "")) if m else -1


def _press(page, key: str, done, timeout: float = 120.0) -> float:
    """Seconds from the key press to ``done(state)`` (polled every 50 ms after a painted frame)."""
    page.mouse.click(640, 5)   # the page has the focus, no input does
    t0 = time.perf_counter()
    page.keyboard.press(key)
    while time.perf_counter() - t0 < timeout:
        if done(page.evaluate(_STATE_JS)):
            return time.perf_counter() - t0
        time.sleep(0.05)
    raise TimeoutError(f"key {key!r}: no visible change after {timeout} s")


def _round(page, out: dict) -> None:
    s = page.evaluate(_STATE_JS)
    it = _iteration(s)
    out["space"].append(_press(page, " ", lambda st: _iteration(st) == it + 1))
    time.sleep(0.5)
    it = _iteration(page.evaluate(_STATE_JS))
    out["r_run"].append(_press(page, "r", lambda st: "running" in st["status"] and _iteration(st) > it))
    time.sleep(1.0)
    out["r_pause"].append(_press(page, "r", lambda st: "paused" in st["status"]))
    time.sleep(0.5)
    out["p_on"].append(_press(page, "p", lambda st: st["on"] and st["narration"]))
    time.sleep(0.5)
    out["p_off"].append(_press(page, "p", lambda st: not st["on"] and st["narration"]))
    time.sleep(0.5)


def measure(rounds: int, busy: bool, url: str | None = None, speed: str = "1,000 steps/s") -> dict:
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, AppServer, busy_machine, find_chromium
    out = {"busy": busy, "speed": speed, "load_before": os.getloadavg()}
    presses = {k: [] for k in ("space", "r_run", "r_pause", "p_on", "p_off")}
    log = ROOT / "artifacts" / "keys_latency_server.log"
    server = (contextlib.nullcontext(argparse.Namespace(url=url)) if url else
              AppServer(log, session_lifetime_ms=1000, timeout=1800, wait_warm=True))
    with server as srv, sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        page = b.new_page(viewport={"width": 1280, "height": 720})
        page.set_default_timeout(120_000)
        ws_in = []   # (time, bytes) of each websocket message the page receives
        page.on("websocket", lambda ws: ws.on(
            "framereceived", lambda payload: ws_in.append((time.perf_counter(), len(payload)))))
        page.goto(f"{srv.url}?dataset=ocr-small", timeout=300_000)
        status = page.locator(".gaplab-status").first
        # the run's speed: a lecture's (at "unlimited" the pass budget ends a run within seconds)
        page.locator(".gaplab-w-speed select").first.select_option(label=speed)
        # a pass budget no round reaches (at unlimited speed the default 100 passes end a run
        # within seconds, and r then cannot resume it)
        budget = page.locator(".gaplab-w-max_passes input").first
        budget.fill("100000")
        budget.press("Enter")
        page.get_by_role("button", name="Step", exact=True).click()
        t0 = time.time()
        while "iteration 1 " not in status.inner_text():
            if time.time() - t0 > 600:
                raise TimeoutError("iteration 1")
            time.sleep(0.25)
        time.sleep(5)   # the projector views join the page after it has loaded
        with busy_machine() if busy else contextlib.nullcontext():
            time.sleep(3 if busy else 0)
            out["load_start"] = os.getloadavg()
            page.evaluate(_LAG_JS)
            t_rounds = time.perf_counter()
            for _ in range(rounds):
                _round(page, presses)
            t_end = time.perf_counter()
            lag = page.evaluate("() => window.__gaplabLag")
        got = [b for t, b in ws_in if t_rounds <= t <= t_end]
        out["page"] = {"ws_msgs_per_s": len(got) / (t_end - t_rounds),
                       "ws_kb_per_s": sum(got) / 1024 / (t_end - t_rounds),
                       "main_thread_lag_ms_median": statistics.median(lag) if lag else None,
                       "main_thread_lag_ms_max": max(lag) if lag else None}
        b.close()
    out["load_after"] = os.getloadavg()
    for k, secs in presses.items():
        out[k] = {"median_s": statistics.median(secs), "max_s": max(secs), "seconds": secs}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="the presenter keys' answer time in the page")
    ap.add_argument("--busy", action="store_true", help="two CPU-bound processes beside the app")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--url", default=None, help="a running `gaplab app` (default: serve one, warm)")
    ap.add_argument("--speed", default="1,000 steps/s", help="the run's speed (a label of the Speed setting)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        print(f"keys_latency.py: --rounds must be >= 1, got {args.rounds}")
        return 2
    res = measure(args.rounds, args.busy, args.url, args.speed)
    print_json(res, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
