"""Projector mode's switch on and off, timed in the page, quiet and busy (a script, not a test).

Serves the app, opens OCR-small at 1280×720 in headless Chromium, takes three steps, then clicks
"Projector mode" ``--repeats`` times each way. A switch is done when the page shows the other
layout (the run-button bar above the tabs shown or hidden) with its Step tab drawn: the narration
of the last step and the per-block gap plot's data (not an empty −1…1 plot). Every 250 ms during
a switch the page is read; a read that finds the narration blank or the visible gap plot empty
is counted (``blank_reads``). ``--busy`` runs the same with the busy-laptop condition
(:func:`gaplab.app.testing.busy_machine`: two CPU-bound processes beside the app).

    python benchmarks/projector_switch.py [--busy] [--repeats 5] [--url URL] [--out FILE.json]

Prints and writes JSON: seconds per switch (median, max), the load average before and after.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

STATE_JS = """() => {
  const find = (root, sel) => {
    const hit = root.querySelector(sel);
    if (hit) return hit;
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { const h = find(el.shadowRoot, sel); if (h) return h; }
    }
    return null;
  };
  const doc = Bokeh.documents[0];
  const n = (name) => { const m = doc.get_model_by_name(name); return m ? m.data.x.length : -1; };
  const top = find(document, '.gaplab-topbar');
  const on = !!(top && top.checkVisibility());
  const nars = [];
  const all = (root) => { for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) all(el.shadowRoot);
      if (el.classList && el.classList.contains('gaplab-narration') && el.checkVisibility()) nars.push(el);
  } };
  all(document);
  const text = nars.map(e => (e.shadowRoot || e).textContent).join(' ');
  return {on: on, narration: text.includes('What just happened'),
          bars: n(on ? 'block_gaps_projector' : 'block_gaps')};
}"""


def _switch(page, want: bool, timeout: float = 120.0) -> dict:
    t0 = time.perf_counter()
    page.get_by_role("button", name="Projector mode").click()
    reads = blank = 0
    while time.perf_counter() - t0 < timeout:
        s = page.evaluate(STATE_JS)
        reads += 1
        drawn = s["narration"] and s["bars"] > 0
        if s["on"] == want and drawn:
            return {"seconds": time.perf_counter() - t0, "reads": reads, "blank_reads": blank}
        if not drawn:
            blank += 1
        time.sleep(0.25)
    raise TimeoutError(f"projector switch to {want} not done after {timeout} s")


def measure(repeats: int, busy: bool, url: str | None = None) -> dict:
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, AppServer, busy_machine, find_chromium
    out = {"busy": busy, "load_before": os.getloadavg(), "on": [], "off": []}
    log = ROOT / "artifacts" / "projector_switch_server.log"
    server = (contextlib.nullcontext(argparse.Namespace(url=url)) if url else
              AppServer(log, session_lifetime_ms=1000, timeout=1800, wait_warm=True))
    with server as srv, sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        page = b.new_page(viewport={"width": 1280, "height": 720})
        page.set_default_timeout(120_000)
        page.goto(f"{srv.url}?dataset=ocr-small", timeout=300_000)
        status = page.locator(".gaplab-status").first
        step = page.get_by_role("button", name="Step", exact=True)
        for k in range(1, 4):
            step.click()
            t0 = time.time()
            while f"iteration {k} " not in status.inner_text():
                if time.time() - t0 > 600:
                    raise TimeoutError(f"iteration {k}")
                time.sleep(0.25)
        time.sleep(5)   # the projector views are made after the page loads
        with busy_machine() if busy else contextlib.nullcontext():
            time.sleep(3 if busy else 0)
            for _ in range(repeats):
                out["on"].append(_switch(page, True))
                time.sleep(2)
                out["off"].append(_switch(page, False))
                time.sleep(2)
        b.close()
    out["load_after"] = os.getloadavg()
    for k in ("on", "off"):
        secs = [r["seconds"] for r in out[k]]
        out[f"{k}_median_s"] = statistics.median(secs)
        out[f"{k}_max_s"] = max(secs)
        out[f"{k}_blank_reads"] = sum(r["blank_reads"] for r in out[k])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="projector mode's switch, timed in the page")
    ap.add_argument("--busy", action="store_true", help="two CPU-bound processes beside the app")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--url", default=None, help="a running `gaplab app` (default: serve one, warm)")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        print(f"projector_switch.py: --repeats must be >= 1, got {args.repeats}")
        return 2
    res = measure(args.repeats, args.busy, args.url)
    text = json.dumps(res, indent=1)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
