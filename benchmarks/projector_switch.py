"""Projector mode's switch on and off, timed in the page, quiet and busy (a script, not a test).

Serves the app, opens OCR-small at 1280×720 in headless Chromium, takes three steps, then clicks
"Projector mode" ``--repeats`` times each way. A switch is done when the page shows the other
layout (the run-button bar above the tabs shown or hidden) with its Step tab drawn: the narration
of the last step and the per-block gap plot's data (not an empty −1…1 plot). Every 250 ms during
a switch the page is read; a read that finds the narration blank or the visible gap plot empty
is counted (``blank_reads``). ``--busy`` runs the same with the busy-laptop condition
(:func:`gaplab.app.testing.busy_machine`: two CPU-bound processes beside the app).

    python benchmarks/projector_switch.py [--busy] [--repeats 5] [--url URL] [--out FILE.json]
        [--root old=DIR_OLD --root new=DIR_NEW]

With ``--root`` (A/B) each checkout is served by its own process and the switches alternate
between their pages, round by round. A read is taken after the page's next painted frame.
Prints and writes JSON: seconds per switch (median, max) per checkout, the load average before
and after.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import describe_root, print_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: the page's state after its next painted frame: the projector bar shown (``on``), a visible
#: narration of the last step, the data of the shown per-block gap plot (its length; -1: none)
STATE_JS = """async () => {
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
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


def _open(browser, url: str):
    """A 1280×720 page on OCR-small after three Steps, its projector views made (5 s)."""
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.set_default_timeout(120_000)
    page.goto(f"{url}?dataset=ocr-small", timeout=300_000)
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
    return page


def _servers(stack, roots: dict, url: str | None):
    """{name: url}: ``url`` as it is, or one warm server per checkout (``PYTHONPATH=root``)."""
    from gaplab.app.testing import AppServer
    if url:
        return {"app": url}
    out = {}
    for name, root in roots.items():
        env = {"PYTHONPATH": root} if root else None
        log = ROOT / "artifacts" / f"projector_switch_server_{name}.log"
        out[name] = stack.enter_context(AppServer(log, session_lifetime_ms=1000, timeout=1800,
                                                  wait_warm=True, env=env)).url
    return out


def _summary(rows: list) -> dict:
    secs = [r["seconds"] for r in rows]
    return {"median_s": statistics.median(secs), "max_s": max(secs), "min_s": min(secs),
            "blank_reads": sum(r["blank_reads"] for r in rows), "seconds": secs}


def measure(repeats: int, busy: bool, url: str | None = None, roots: dict | None = None) -> dict:
    """Switches on and off, ``repeats`` times each way per checkout, alternating between the
    checkouts' pages (the first one rotating) so that each round is taken under the same load."""
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, busy_machine, find_chromium
    out = {"busy": busy, "load_before": os.getloadavg(), "roots": roots or {}}
    if roots:
        out["compared"] = {name: describe_root(root) for name, root in roots.items()}
    roots = roots or {"app": ""}
    rows = {}
    with contextlib.ExitStack() as stack, sync_playwright() as pw:
        urls = _servers(stack, roots, url)
        b = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        pages = {name: _open(b, u) for name, u in urls.items()}
        rows = {name: {"on": [], "off": []} for name in pages}
        names = list(pages)
        with busy_machine() if busy else contextlib.nullcontext():
            time.sleep(3 if busy else 0)
            out["load_start"] = os.getloadavg()
            for r in range(repeats):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    rows[name]["on"].append(_switch(pages[name], True))
                    time.sleep(1)
                    rows[name]["off"].append(_switch(pages[name], False))
                    time.sleep(1)
        b.close()
    out["load_after"] = os.getloadavg()
    for name, r in rows.items():
        out[name] = {k: _summary(v) for k, v in r.items()}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="projector mode's switch, timed in the page")
    ap.add_argument("--busy", action="store_true", help="two CPU-bound processes beside the app")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--url", default=None, help="a running `gaplab app` (default: serve one, warm)")
    ap.add_argument("--root", action="append", default=[], metavar="NAME=DIR",
                    help="A/B: serve the gaplab of DIR (a directory whose `gaplab` entry is a checkout, "
                         "put first on PYTHONPATH) as NAME; repeat for each checkout")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        print(f"projector_switch.py: --repeats must be >= 1, got {args.repeats}")
        return 2
    roots = {}
    for spec in args.root:
        name, sep, path = spec.partition("=")
        if not sep or not name or not Path(path, "gaplab").exists():
            print(f"projector_switch.py: --root must be NAME=DIR with DIR/gaplab a checkout, got {spec!r}")
            return 2
        roots[name] = path
    res = measure(args.repeats, args.busy, args.url, roots or None)
    print_json(res, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
