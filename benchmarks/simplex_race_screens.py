"""Screenshots of the block simplex (Lesson 5) and of the uniform-vs-gap race at 1280×720
(a script, not a test): ``benchmarks/results/simplex_view.png`` and ``race_view.png``.

Usage::

    python benchmarks/simplex_race_screens.py [--out benchmarks/results]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from app_screens import ROOT, _ready, _shot, _tab


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, AppServer, find_chromium
    out = Path(args.out)
    art = ROOT / "artifacts"
    art.mkdir(exist_ok=True)
    errors = []
    with AppServer(art / "simplex_race_server.log", wait_warm=True, timeout=600) as srv, sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        ctx = b.new_context(viewport={"width": 1280, "height": 720})
        p = ctx.new_page()
        p.on("console", lambda m: errors.append(m.text[:120]) if m.type == "error" else None)
        p.goto(srv.url)
        _ready(p)
        _tab(p, "Lessons", 1.5)
        for _ in range(4):
            p.get_by_role("button", name="Next ▶").click()
            time.sleep(0.6)
        p.locator(".gaplab-simplex-problem select").first.select_option(label="three labels, random features (n = 4)")
        time.sleep(0.5)
        p.locator(".gaplab-simplex-block select").first.select_option(label="3")
        time.sleep(0.5)
        for _ in range(2):   # α inside the triangle, the next pairwise step stops short of γ_max
            p.get_by_role("button", name="Step this block").click()
            time.sleep(0.6)
        p.locator(".gaplab-simplex").first.scroll_into_view_if_needed()
        time.sleep(1.0)
        _shot(p, out / "simplex_view.png")
        _tab(p, "Race", 2.0)
        p.get_by_role("button", name="▶ Start").click()
        time.sleep(6.0)
        p.get_by_role("button", name="❚❚ Pause").click()
        time.sleep(1.0)
        _shot(p, out / "race_view.png")
        ctx.close()
        b.close()
    print("console errors:", errors)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
