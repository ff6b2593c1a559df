"""The explorable textbook's budget (a script, not a test): the build time of every lesson's
figure data (cold: computed, not read from the cache), each exported page's size, and how fast a
scrubber or switch move redraws in headless Chromium (the time from setting the control's value
to the figure's data changed, and to the next animation frame, in which BokehJS repaints); then
screenshots of every figure at 1280×800 (desktop), 390×844 (phone) and 1280×720 (projector).

Prints one JSON object (medians over the repeats) and writes it to ``--out`` (default
``benchmarks/results/textbook_bench.json``), the screenshots to ``--shots``.

Usage::

    python benchmarks/textbook_bench.py [--moves 40] [--out FILE] [--shots DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VIEWPORTS = {"desktop": (1280, 800), "phone": (390, 844), "projector": (1280, 720)}
#: per figure module: (its scrubber, its switches) by model name
CONTROLS = {"race_fig": ("race_scrubber", ("race_switch",)), "ocr_fig": ("ocr_scrubber", ("ocr_sampler", "ocr_stretch")),
            "simplex_fig": (None, ()), "path_fig": (None, ())}

_MOVE = """async ([name, attr, value]) => {
  const m = Bokeh.documents[0].get_model_by_name(name);
  const t0 = performance.now();
  m[attr] = value;                       // the CustomJS callbacks run here, synchronously
  const t1 = performance.now();
  await new Promise((done) => requestAnimationFrame(() => done()));
  return [t1 - t0, performance.now() - t0];
}"""


def build_times(folder: Path) -> dict:
    from gaplab.app.textbook.datacache import cached_data
    from gaplab.app.textbook.registry import FIGURES, figure_modules
    out, total = {}, 0.0
    for lesson in sorted(FIGURES):
        for mod in figure_modules(lesson):
            t0 = time.perf_counter()
            cached_data(mod, 0, folder=folder, refresh=True)
            dt = time.perf_counter() - t0
            out[mod.__name__.rsplit(".", 1)[-1]] = round(dt, 2)
            total += dt
    return {"seconds_per_module": out, "seconds_total": round(total, 2)}


def export_pages(folder: Path, cache: Path) -> dict:
    from gaplab.app.lessons import LESSONS
    from gaplab.app.textbook.page import export_lesson
    from gaplab.app.textbook.registry import lessons_with_figures
    pages = {}
    for k in range(1, len(LESSONS) + 1):
        p = export_lesson(k, folder / f"lesson_{k:02d}.html", cache_folder=cache)
        pages[k] = {"path": p, "bytes": p.stat().st_size, "figures": k in lessons_with_figures()}
    return pages


def _stats(xs) -> dict:
    xs = sorted(xs)
    return {"median_ms": round(statistics.median(xs), 2), "p90_ms": round(xs[int(0.9 * (len(xs) - 1))], 2),
            "max_ms": round(xs[-1], 2), "n": len(xs)}


def redraws(browser, path: Path, mods, moves: int, viewport) -> dict:
    import random
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    page.goto(path.as_uri())
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
    page.wait_for_timeout(500)
    rng, out = random.Random(0), {}
    for mod in mods:
        name = mod.__name__.rsplit(".", 1)[-1]
        scrub, switches = CONTROLS.get(name, (None, ()))
        if scrub is None:
            continue
        get = "(n) => { const m = Bokeh.documents[0].get_model_by_name(n); return [m.start, m.end]; }"
        cb, frame = [], []
        for _ in range(moves):
            lo, hi = page.evaluate(get, scrub)
            a, b = page.evaluate(_MOVE, [scrub, "value", rng.randint(int(lo), int(hi))])
            cb.append(a)
            frame.append(b)
        sw = []
        for s in switches:
            for v in (1, 0) * max(1, moves // 8):
                sw.append(page.evaluate(_MOVE, [s, "active", v])[1])
        out[name] = {"scrubber_callback": _stats(cb), "scrubber_to_next_frame": _stats(frame),
                     "switch_to_next_frame": _stats(sw) if sw else None}
    page.close()
    return out


def screenshots(browser, pages: dict, shots: Path) -> list[str]:
    from gaplab.app.textbook.registry import figure_modules
    shots.mkdir(parents=True, exist_ok=True)
    made = []
    for k, info in pages.items():
        if not info["figures"]:
            continue
        for view, (w, h) in VIEWPORTS.items():
            page = browser.new_page(viewport={"width": w, "height": h})
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
            page.goto(info["path"].as_uri())
            page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
            page.wait_for_timeout(800)
            for j, mod in enumerate(figure_modules(k)):
                name = mod.__name__.rsplit(".", 1)[-1]
                scrub, _ = CONTROLS.get(name, (None, ()))
                if scrub is not None:   # a step in the middle of the run, not its empty start
                    page.evaluate("(n) => { const m = Bokeh.documents[0].get_model_by_name(n); "
                                  "m.value = Math.round(m.start + 0.4 * (m.end - m.start)); }", scrub)
                    page.wait_for_timeout(300)
                sec = page.locator("section.figure").nth(j)
                sec.evaluate("(e) => e.scrollIntoView({block: 'start'})")
                page.wait_for_timeout(300)
                file = shots / f"lesson{k}_{name}_{view}.png"
                if view == "projector":   # what one screen of the projector shows
                    page.screenshot(path=str(file))
                else:
                    sec.screenshot(path=str(file))
                made.append(file.name)
            page.close()
    return made


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--moves", type=int, default=40, help="scrubber moves per figure and viewport")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "textbook_bench.json"))
    ap.add_argument("--shots", default=str(ROOT / "benchmarks" / "results" / "textbook"))
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, find_chromium
    from gaplab.app.textbook.registry import figure_modules
    from gaplab.core.atomic import write_text_atomic
    result = {"load_average_start": os.getloadavg(), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        result["data_build_cold"] = build_times(tmp / "cache")
        pages = export_pages(tmp, tmp / "cache")
        result["page_bytes"] = {k: v["bytes"] for k, v in pages.items()}
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
            result["redraw"] = {view: {k: redraws(b, v["path"], figure_modules(k), args.moves, VIEWPORTS[view])
                                       for k, v in pages.items() if v["figures"]}
                                for view in ("desktop", "phone")}
            result["screenshots"] = screenshots(b, pages, Path(args.shots))
            b.close()
    result["load_average_end"] = os.getloadavg()
    text = json.dumps(result, indent=1, default=str)
    write_text_atomic(Path(args.out), text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
