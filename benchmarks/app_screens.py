"""Screenshots of the app as a lecturer would show it (a script, not a test).

Serves the app, opens it in headless Chromium (Debian's chromium + Playwright) and saves

* in projector mode at 1280×720: the Step view (after a few steps and a slow-motion run), the
  Toy example (comparison and the speed-up-vs-n sweep) and the Lessons (page 3) to
  ``benchmarks/results/projector_{step,toy,lessons}.png``;
* the normal layout at 1600×1000 and 1280×720 to ``artifacts/screen_*.png``;

and prints the console warnings and errors of the page, counted by text.

Usage::

    python benchmarks/app_screens.py [--out benchmarks/results]
"""
from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _ready(page):
    page.get_by_role("button", name="Step", exact=True).wait_for(timeout=120_000)
    deadline = time.time() + 300
    while time.time() < deadline:
        if "ready" in page.locator(".gaplab-status").first.inner_text():
            return
        time.sleep(0.1)
    raise TimeoutError("the page never became ready")


def _tab(page, name, wait=1.0):
    page.locator(".bk-tab", has_text=name).first.click()
    time.sleep(wait)


def _shot(page, path):
    page.mouse.move(3, 3)     # no tooltip in the picture
    time.sleep(0.4)
    page.screenshot(path=str(path))
    try:   # a 256-colour palette: a third of the size, no visible loss on a UI
        from PIL import Image
        Image.open(path).convert("RGB").quantize(256).save(path, optimize=True)
    except ImportError:
        pass
    print("wrote", path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, AppServer, find_chromium
    out = Path(args.out)
    art = ROOT / "artifacts"
    art.mkdir(exist_ok=True)
    console = collections.Counter()
    with AppServer(art / "screens_server.log", wait_warm=True, timeout=600) as srv, sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        for w, h in ((1600, 1000), (1280, 720)):
            ctx = b.new_context(viewport={"width": w, "height": h})
            p = ctx.new_page()
            p.on("console", lambda m: console.update([f"{m.type}: {m.text[:90]}"]) if m.type in ("warning", "error") else None)
            p.goto(srv.url)
            _ready(p)
            for _ in range(3):
                p.get_by_role("button", name="Step", exact=True).click()
                time.sleep(0.3)
            _shot(p, art / f"screen_step_{w}x{h}.png")
            for tab in ("Convergence", "Cache & active sets", "Regularization path", "Toy example", "Lessons"):
                _tab(p, tab)
                _shot(p, art / f"screen_{tab.split()[0].lower()}_{w}x{h}.png")
            ctx.close()
        # projector mode at 1280×720
        ctx = b.new_context(viewport={"width": 1280, "height": 720})
        p = ctx.new_page()
        p.on("console", lambda m: console.update([f"{m.type}: {m.text[:90]}"]) if m.type in ("warning", "error") else None)
        p.goto(srv.url)
        _ready(p)
        p.get_by_role("button", name="Projector mode").click()
        time.sleep(1.0)
        p.locator(".gaplab-w-speed select").first.select_option(label="20 steps/s")
        time.sleep(0.3)
        p.get_by_role("button", name="▶ Run").click()
        time.sleep(3.0)
        p.get_by_role("button", name="❚❚ Pause").click()
        time.sleep(0.5)
        p.get_by_role("button", name="Step", exact=True).click()
        time.sleep(0.8)
        _shot(p, out / "projector_step.png")
        _tab(p, "Toy example")
        p.get_by_role("button", name="Run comparison").click()
        p.get_by_text("Why ").first.wait_for(timeout=120_000)
        p.get_by_role("button", name="Sweep n").click()
        p.get_by_text("Speed-up vs n.").wait_for(timeout=120_000)
        time.sleep(1.0)
        p.get_by_text("Speed-up vs n.").scroll_into_view_if_needed()
        p.mouse.wheel(0, 250)   # the sweep plot and the comparison plots in view
        time.sleep(0.5)
        _shot(p, out / "projector_toy.png")
        _tab(p, "Lessons", 1.5)
        for _ in range(2):
            p.get_by_role("button", name="Next ▶").click()
            time.sleep(0.5)
        time.sleep(1.5)
        _shot(p, out / "projector_lessons.png")
        ctx.close()
        b.close()
    print("console warnings/errors by text:")
    for text, k in console.most_common():
        print(f"  {k:4d}  {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
