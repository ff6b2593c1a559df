"""Screenshots, redraw times and file sizes of the textbook's explorable figures (issue: the
lessons as static pages): the block simplex of Lesson 5 (``gaplab.app.textbook.simplex_fig``) and
the ε-path of Lesson 8 (``gaplab.app.textbook.path_fig``), each saved as one standalone HTML file
(BokehJS inlined) and opened in headless Chromium from file:// with the network refused.

Per figure: screenshots at desktop 1280×800, phone 390×844 and projector 1280×720; the redraw
time of a scrubber move (the slider's value set from page JS → its source's data changed →
the next animation frame), median of 20 moves; the HTML file's size; data build time.

Usage::

    python benchmarks/textbook_figs.py [--out benchmarks/results/textbook] [--moves 20]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

VIEWPORTS = {"desktop": (1280, 800), "phone": (390, 844), "projector": (1280, 720)}
#: figure -> (module, slider, the source a move redraws, a state to show in the screenshots)
FIGS = {"simplex": ("simplex_fig", "simplex_step", "simplex_point", [("simplex_kind", "active", 2),
                                                                    ("simplex_step", "value", 3)]),
        "path": ("path_fig", "path_lam", "path_pick", [("path_lam", "value", 0.0)])}

#: page JS: median-able redraw times (ms) of ``n`` slider moves across its range
REDRAW_JS = """async ([slider, src, n]) => {
  const doc = Bokeh.documents[0];
  const s = doc.get_model_by_name(slider), m = doc.get_model_by_name(src);
  const times = [];
  for (let i = 0; i < n; i++) {
    const v = s.start + ((i * 7919) % n + 0.5) / n * (s.end - s.start);
    const target = s.step >= 1 ? Math.round(v) : v;
    const before = JSON.stringify(m.data);
    const t0 = performance.now();
    s.value = (target === s.value) ? s.start : target;
    await new Promise((r) => requestAnimationFrame(() => r()));
    const t1 = performance.now();
    if (JSON.stringify(m.data) === before && i > 0) { times.push(-1); } else { times.push(t1 - t0); }
    await new Promise((r) => setTimeout(r, 30));
  }
  return times;
}"""


def _build(name: str, seed: int):
    import importlib
    mod = importlib.import_module(f"gaplab.app.textbook.{FIGS[name][0]}")
    t0 = time.perf_counter()
    data = mod.build_data(seed)
    build_s = time.perf_counter() - t0
    return mod.build_figure(data), build_s, len(json.dumps(data))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "textbook"))
    ap.add_argument("--moves", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--figs", nargs="*", default=list(FIGS))
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, find_chromium
    from textbook_figs_page import HSCROLL_JS, offline_page, save_standalone, set_model
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"load_avg_start": os.getloadavg(), "moves": args.moves, "figures": {}}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        for name in args.figs:
            _mod, slider, src, state = FIGS[name]
            layout, build_s, data_bytes = _build(name, args.seed)
            html = save_standalone(layout, Path(tmp) / f"{name}.html", name)
            rec = {"build_data_s": round(build_s, 2), "data_json_bytes": data_bytes,
                   "html_bytes": html.stat().st_size, "screens": {}}
            for vp, size in VIEWPORTS.items():
                with offline_page(browser, html, size, ready_source=src) as (page, errors, blocked):
                    for model, attr, value in state:
                        set_model(page, model, attr, value)
                    page.wait_for_timeout(400)
                    shot = out / f"{name}_{vp}.png"
                    page.screenshot(path=str(shot), full_page=True)
                    rec["screens"][vp] = {"file": shot.name, "hscroll": page.evaluate(HSCROLL_JS),
                                          "console_errors": list(errors), "blocked": list(blocked)}
                    if vp == "desktop":
                        times = page.evaluate(REDRAW_JS, [slider, src, args.moves])
                        rec["redraw_ms"] = [round(t, 2) for t in times]
                        ok = [t for t in times if t >= 0]
                        rec["redraw_ms_median"] = round(statistics.median(ok), 2) if ok else None
                        rec["redraw_moves_without_change"] = sum(t < 0 for t in times)
            result["figures"][name] = rec
            print(name, json.dumps({k: v for k, v in rec.items() if k != "redraw_ms"}), flush=True)
        browser.close()
    result["load_avg_end"] = os.getloadavg()
    (out / "textbook_figs.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({"load_avg_start": result["load_avg_start"], "load_avg_end": result["load_avg_end"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
