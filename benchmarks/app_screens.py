"""Screenshots of the app as a lecturer would show it (a script, not a test).

Serves the app, opens it in headless Chromium (Debian's chromium + Playwright) and saves

* in projector mode at 1280×720, after three steps: every tab, to
  ``benchmarks/results/projector_<tab>.png`` (OCR-small) and
  ``benchmarks/results/projector_<dataset>_<tab>.png`` for ``--datasets`` (e.g. conll2000);
* the app in JupyterLab at 1280×720 with the file browser open (examples/gaplab_tour.ipynb's
  app cell), after one step: every tab, to ``benchmarks/results/jupyterlab_<tab>.png``
  (``--no-jupyterlab`` skips it);

``--busy`` takes the projector pictures under the busy-laptop condition
(:func:`gaplab.app.testing.busy_machine`: two CPU-bound processes beside the app and the browser)
and names them with a ``_busy`` suffix (``projector_step_busy.png``); ``--report FILE`` writes
every picture's layout problems, the console messages and the load average as JSON. A dataset
whose page is not ready after 600 s is reported (its status line's text; a picture of the page
in ``artifacts/``) and the next one is taken.

It prints the layout problems of each page (:func:`gaplab.app.testing.layout_problems`: text
cut, overlapping or, in projector mode, under 18 px) and the console warnings and errors.

Usage::

    python benchmarks/app_screens.py [--out benchmarks/results] [--datasets conll2000 horse-small lsp-pose]
                                     [--no-jupyterlab] [--busy] [--report FILE.json]
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABS = ("Step", "Convergence", "Cache & active sets", "Regularization path", "Toy example", "Lessons",
        "Sweeps", "Race")
APP_OUTPUT = ".jp-Notebook .jp-CodeCell .jp-OutputArea-output"   # only the app cell has run


def _wait(fn, timeout, what):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if fn():
            return
        time.sleep(0.2)
    raise TimeoutError(what)


def _content(lay, below):
    return [b for b in lay["boxes"] if b["y0"] > below]


def _settle(page, within=None, below=0.0):
    """The page's text once the tab shows some text below ``below`` (px: under the tab strip)
    and two reads 1 s apart find the same number of fragments; a tab still blank after 60 s is
    returned as it is (flagged by :func:`_blank`)."""
    from gaplab.app.testing import text_layout
    page.mouse.move(3, 3)     # no tooltip in the picture
    prev = None
    for _ in range(60):
        time.sleep(1.0)
        lay = text_layout(page, within=within)
        if (prev is not None and _content(lay, below) and len(lay["boxes"]) == len(prev["boxes"])):
            return lay
        prev = lay
    return prev


def _blank(lay, below):
    return [] if _content(lay, below) else [f"blank tab: no text below y = {below:.0f} px after 60 s"]


def _strip_bottom(page) -> float:
    """Bottom of the tab strip (px), or 0."""
    return page.evaluate("""() => { let y = 0;
      (function walk(root) { for (const el of root.querySelectorAll('*')) {
        if (el.classList.contains('bk-header')) { const r = el.getBoundingClientRect();
          if (r.height > 0) y = Math.max(y, r.bottom); }
        if (el.shadowRoot) walk(el.shadowRoot); } })(document);
      return y; }""")


def _shot(page, path):
    page.screenshot(path=str(path))
    try:   # a 256-colour palette: a third of the size, no visible loss on a UI
        from PIL import Image
        Image.open(path).convert("RGB").quantize(256).save(path, optimize=True)
    except ImportError:
        pass


def _slug(tab):
    return tab.split()[0].lower()


def projector(browser, url, dataset, out, report, suffix=""):
    from gaplab.app.testing import layout_problems
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    p = ctx.new_page()
    where = [f"{dataset}: loading"]     # the page the console message came from
    p.on("console", lambda m: report["console"].update([f"{m.type} ({where[0]}): {m.text[:90]}"])
         if m.type in ("warning", "error") else None)
    p.goto(f"{url}?dataset={dataset}", timeout=120_000)
    status = p.locator(".gaplab-status").first
    try:
        _wait(lambda: "ready" in status.inner_text() and dataset in status.inner_text(), 600, "ready")
    except TimeoutError:   # recorded (with a picture of the page in artifacts/), the next dataset is taken
        shown = status.inner_text(timeout=10_000) if status.count() else "(no status line)"
        report["not_ready"][dataset] = f"not ready after 600 s; the status said: {shown[:200]}"
        _shot(p, ROOT / "artifacts" / f"screens_{dataset}_not_ready{suffix}.png")
        ctx.close()
        return
    p.get_by_role("button", name="Projector mode").click()
    p.locator(".gaplab-topbar").first.wait_for(state="visible", timeout=60_000)
    for k in range(1, 4):
        p.get_by_role("button", name="Step", exact=True).click()
        _wait(lambda k=k: f"iteration {k} " in status.inner_text(), 120, f"iteration {k}")
    for tab in TABS:
        where[0] = f"{dataset}: {tab}"
        p.locator(".bk-tab", has_text=tab).first.click()
        below = _strip_bottom(p) + 2
        lay = _settle(p, below=below)
        name = (f"projector_{_slug(tab)}{suffix}.png" if dataset == "ocr-small"
                else f"projector_{dataset}_{_slug(tab)}{suffix}.png")
        _shot(p, out / name)
        report["pages"][name] = _blank(lay, below) + layout_problems(lay, min_font=18)
    ctx.close()


def jupyterlab(browser, out, report):
    from gaplab.app.testing import JupyterLabServer, layout_problems
    with tempfile.TemporaryDirectory() as tmp, \
            JupyterLabServer(ROOT / "examples" / "gaplab_tour.ipynb", Path(tmp) / "lab",
                             ROOT / "artifacts" / "screens_jupyterlab.log") as jl:
        p = browser.new_page(viewport={"width": 1280, "height": 720})
        p.set_default_timeout(60_000)
        p.goto(jl.url, timeout=90_000)
        p.locator(".jp-Notebook .jp-CodeCell").first.wait_for(timeout=90_000)
        fb = p.locator("#filebrowser")
        if fb.count() == 0 or not fb.first.is_visible():
            p.locator("[data-id='filebrowser']").first.click()
        p.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=90_000)
        prompt = p.locator(".jp-Notebook .jp-CodeCell").first.locator(".jp-InputArea-prompt").first
        status = p.locator(".gaplab-status").first
        for _ in range(3):
            prompt.click()
            time.sleep(0.3)
            p.keyboard.press("Shift+Enter")
            try:
                status.wait_for(timeout=60_000)
                break
            except Exception:
                continue
        _wait(lambda: "ready" in status.inner_text(), 300, "ready in JupyterLab")
        news = p.get_by_role("button", name="No", exact=True)   # JupyterLab's "notified about news?" toast
        if news.count() and news.first.is_visible():
            news.first.click()
        p.get_by_role("button", name="Step", exact=True).first.click()
        _wait(lambda: "iteration 1 " in status.inner_text(), 300, "a step in JupyterLab")
        for tab in TABS:
            p.locator(".bk-tab", has_text=tab).first.click()
            p.locator(".bk-tab", has_text=tab).first.scroll_into_view_if_needed()
            lay = _settle(p, within=APP_OUTPUT)
            name = f"jupyterlab_{_slug(tab)}.png"
            _shot(p, out / name)
            report["pages"][name] = layout_problems(lay)
        p.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--datasets", nargs="*", default=[], help="more datasets than OCR-small in projector mode")
    ap.add_argument("--no-jupyterlab", action="store_true", help="skip the JupyterLab screenshots")
    ap.add_argument("--busy", action="store_true",
                    help="projector pictures with two CPU-bound processes beside (files named *_busy.png)")
    ap.add_argument("--report", default=None, help="write the layout problems and console messages as JSON here")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, AppServer, busy_machine, find_chromium
    out = Path(args.out)
    art = ROOT / "artifacts"
    art.mkdir(exist_ok=True)
    report = {"console": collections.Counter(), "pages": {}, "not_ready": {}}
    datasets = ["ocr-small"] + list(args.datasets)
    loads = {"load_avg_start": os.getloadavg()}
    env = {"GAPLAB_DATA": os.environ.get("GAPLAB_DATA") or str(ROOT.parent / "shared" / "data")}  # CoNLL, horse, LSP
    with AppServer(art / "screens_server.log", wait_warm=True, timeout=900, env=env) as srv, sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        with busy_machine() if args.busy else contextlib.nullcontext():
            loads["load_avg_shots_start"] = os.getloadavg()
            for dataset in datasets:
                projector(b, srv.url, dataset, out, report, "_busy" if args.busy else "")
            loads["load_avg_shots_end"] = os.getloadavg()
        if not args.no_jupyterlab:
            jupyterlab(b, out, report)
        b.close()
    if args.report:
        from gaplab.core.atomic import write_text_atomic
        write_text_atomic(args.report, json.dumps(
            {"busy": args.busy, "datasets": datasets, "tabs": list(TABS), "out": str(out), **loads,
             "load_avg_end": os.getloadavg(), "pages": report["pages"],
             "written": sorted(n for n in report["pages"] if (out / n).is_file()),
             "not_ready": report["not_ready"], "console": dict(report["console"])}, indent=1))
    for dataset, why in report["not_ready"].items():
        print(f"{dataset}: {why}")
    for name, problems in report["pages"].items():
        print(f"wrote {out / name}: {len(problems)} layout problem(s)")
        for line in problems[:10]:
            print("   ", line)
    print("console warnings/errors by page and text:")
    for text, k in report["console"].most_common():
        print(f"  {k:4d}  {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
