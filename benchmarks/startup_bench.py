"""Start-up of ``gaplab app`` as a class sees it (a benchmark script, not a timed test).

Cold (an empty ``NUMBA_CACHE_DIR``) and/or warm (the numba cache as it is), one run each:
seconds from launching the server to the page (the Step button on screen), to Step enabled
(clicked at once: while the kernels compile the reference solver answers it), to the first Step
answered (status "iteration 1"), to the compile banner gone; while compiling, how long
the page's shown progress stood still at most (the fraction, and the pair fraction / seconds),
sampled every ~0.1 s from the page. The machine's load average is recorded (the machine is shared).

``--url-during-compile``: a bookmarked URL opened while the kernels compile. ``gaplab app`` on an
empty ``NUMBA_CACHE_DIR``; page A (the lecturer's) opens at launch and clicks Step once a second
(the next click a second after the last one, once that one is answered); ``--url-after`` seconds
after launch (or once A's page is up, when that is later) page B navigates to ``--url-query``. Reported: seconds from B's request to the
page shell drawn ("opening the app…") and to B's app drawn (its status line shows text: the page
is visible and says what it waits for), to B's status showing iteration 120 (the query's
steps); every status text B showed meanwhile; A's Step round trips as the page measures them
(click to a new iteration in the status line, as ``app_bench._ROUND_TRIP_JS``), median and max over the clicks made from
B's request to B's last step (at least ``--a-window`` seconds; and before B's request, for
comparison), and the longest a click of A went unanswered.

``--busy``: the busy-laptop condition (:func:`gaplab.app.testing.busy_machine`: two CPU-bound
processes) from before the launch to the end of each run. ``--repeats N``: N runs of each kind.

Usage::

    python benchmarks/startup_bench.py [--cold] [--warm] [--page-repeats 5] [--busy] [--repeats 1]
                                       [--out results.json]
    python benchmarks/startup_bench.py --url-during-compile [--url-query "?dataset=ocr-small&sampling=gap&steps=120"]
                                       [--url-after 15] [--busy] [--repeats 1] [--out results.json]

Warm uses ``NUMBA_CACHE_DIR`` as set (fill it first: ``gaplab warmup``).

Needs Playwright (PyPI) and a Chromium executable (Debian's chromium).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from gaplab.app.testing import shadow_texts_js

ROOT = Path(__file__).resolve().parents[1]

# the status line, and the compiling banner (a pane: its text is in its shadow root)
_READ_JS = shadow_texts_js(status=".gaplab-status", banner=".gaplab-compiling")


def _still(samples, key) -> float:
    """Longest time the value key(sample) stayed the same (seconds)."""
    if len(samples) < 2:
        return float("nan")
    t_change, longest = samples[0][0], 0.0
    for a, b in zip(samples, samples[1:]):
        if key(a) != key(b):
            longest = max(longest, b[0] - t_change)
            t_change = b[0]
    return max(longest, samples[-1][0] - t_change)


def start_run(browser, cold: bool, page_repeats: int = 0) -> dict:
    from gaplab.app.testing import AppServer
    env, tmp = {}, None
    if cold:
        tmp = tempfile.TemporaryDirectory(prefix="gaplab-numba-cold-")
        env["NUMBA_CACHE_DIR"] = tmp.name
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    (ROOT / "artifacts").mkdir(exist_ok=True)
    with AppServer(ROOT / "artifacts" / f"startup_bench_{'cold' if cold else 'warm'}.log", env=env,
                   timeout=600) as srv:
        server_s = time.perf_counter() - t0
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        page = ctx.new_page()
        page.goto(srv.url, timeout=120_000)
        step = page.get_by_role("button", name="Step", exact=True)
        step.wait_for(timeout=120_000)
        page_s = time.perf_counter() - t0
        # Step is clicked as soon as it is enabled (while the kernels compile the reference
        # solver answers it: gaplab.app.refstep)
        page.wait_for_function("(b) => !b.disabled", arg=step.element_handle(), timeout=900_000)
        enabled_s = time.perf_counter() - t0
        step.click()
        status = ""
        while time.perf_counter() - t0 < 900 and not re.search(r"iteration\s*1\b", status):
            status = page.evaluate(_READ_JS)["status"] or ""
            time.sleep(0.05)
        first_step_s = time.perf_counter() - t0
        answered_during_compile = "compiling solver kernels" in (page.evaluate(_READ_JS)["banner"] or "")
        samples = []   # (t, fraction text, seconds text) while the banner shows the compile
        while time.perf_counter() - t0 < 900:
            r = page.evaluate(_READ_JS)
            m = re.search(r"— (\d+)% · ([\d.]+) s", r["banner"] or "")
            if not m:
                break
            samples.append((time.perf_counter(), m.group(1), m.group(2)))
            time.sleep(0.1)
        kernels_ready_s = time.perf_counter() - t0
        ctx.close()
        # fresh pages on the running server: navigation -> status "ready" (buttons enabled)
        page_ready = []
        for _ in range(page_repeats):
            ctx = browser.new_context(viewport={"width": 1400, "height": 900})
            page = ctx.new_page()
            t1 = time.perf_counter()
            page.goto(srv.url, timeout=120_000)
            status = ""
            while time.perf_counter() - t1 < 120 and not re.search(r"ready.*ocr-small.*iteration 0\b", status):
                status = page.evaluate(_READ_JS)["status"] or ""
                time.sleep(0.02)
            page_ready.append(time.perf_counter() - t1)
            ctx.close()
            time.sleep(1.0)
        log = srv.log()
    if tmp is not None:
        tmp.cleanup()
    m = re.search(r"default solver kernels ready in ([\d.]+) s", log)
    return {"cold": cold, "server_listening_s": server_s, "page_s": page_s, "step_enabled_s": enabled_s,
            "first_step_answered_s": first_step_s, "first_step_during_compile": answered_during_compile,
            "step_kernels_shown_ready_s": kernels_ready_s, "fresh_page_ready_s": page_ready,
            "numba_cache_dir": env.get("NUMBA_CACHE_DIR", os.environ.get("NUMBA_CACHE_DIR", "(default)")),
            "server_says_step_kernels_ready_s": float(m.group(1)) if m else None,
            "progress_samples": len(samples),
            "progress_fraction_still_max_s": _still(samples, lambda s: s[1]),
            "progress_shown_still_max_s": _still(samples, lambda s: s[1:]),
            "load_avg_start": load0, "load_avg_end": os.getloadavg()}


#: Page A's Step round trip in the page: from the click event (captured at the document) to the
#: status line's Bokeh model showing an iteration above the one shown at the click (then to the
#: next animation frame); as ``app_bench._ROUND_TRIP_JS``, except that a status redraw without a
#: new iteration (the compile's percent and seconds tick in it) does not end the round trip.
_A_ROUND_TRIP_JS = """() => {
    const doc = window.Bokeh.documents[0];
    const m = [...doc.all_models].find(x => typeof x.text === 'string' && x.text.includes('gaplab-status'));
    const it = () => { const r = /iteration (?:<b>|&lt;b&gt;)([\\d,]+)/.exec(m.text);
                       return r ? parseInt(r[1].replace(/,/g, ''), 10) : -1; };
    window.__gaplab_rt = [];
    window.__gaplab_click = null;
    document.addEventListener('click', () => { window.__gaplab_click = [performance.now(), it()]; }, true);
    m.properties.text.change.connect(() => {
        const c = window.__gaplab_click;
        if (c === null || it() <= c[1]) { return; }
        window.__gaplab_click = null;
        const t1 = performance.now();
        requestAnimationFrame(() => window.__gaplab_rt.push([t1 - c[0], performance.now() - c[0]]));
    });
}"""

#: B's page: the shell's note, the app's status line and the compile banner
_B_JS = shadow_texts_js(opening=".gaplab-opening", status=".gaplab-status", banner=".gaplab-compiling")


def _a_step(page, step, state, now) -> None:
    """Page A's Step loop, one tick: count an answered click; click again a second after the
    last click once it is answered (only while the Step button is enabled)."""
    n = page.evaluate("() => window.__gaplab_rt.length")
    if state["pending"] is not None and n > state["answered"]:
        state["answered"] = n
        state["clicks"][-1]["answered_at"] = now
        state["pending"] = None
    if state["pending"] is None and now >= state["next"] and step.is_enabled():
        state["clicks"].append({"at": now, "answered_at": None})
        step.click(timeout=30_000)
        state["pending"], state["next"] = now, now + 1.0


def _b_read(page) -> dict:
    try:
        return page.evaluate(_B_JS)
    except Exception:   # navigating: no document to read yet
        return {"opening": None, "status": None, "banner": None}


def url_run(browser, query: str, after: float, window: float = 10.0, timeout: float = 900.0) -> dict:
    """One cold launch with page A stepping and page B opening ``query`` ``after`` seconds in
    (see the module docstring). Times are seconds; None: not seen within ``timeout``."""
    from gaplab.app.testing import AppServer
    tmp = tempfile.TemporaryDirectory(prefix="gaplab-numba-cold-")
    load0, t0 = os.getloadavg(), time.perf_counter()
    (ROOT / "artifacts").mkdir(exist_ok=True)
    out = {"query": query, "url_after_s": after, "numba_cache_dir": tmp.name}
    with AppServer(ROOT / "artifacts" / "startup_bench_url_during_compile.log",
                   env={"NUMBA_CACHE_DIR": tmp.name}, timeout=600) as srv:
        ctx_a = browser.new_context(viewport={"width": 1280, "height": 720})
        page_a = ctx_a.new_page()
        page_a.goto(srv.url, timeout=300_000)
        step = page_a.get_by_role("button", name="Step", exact=True)
        step.wait_for(timeout=300_000)
        page_a.wait_for_function("() => window.Bokeh && window.Bokeh.documents.length > 0", timeout=300_000)
        page_a.evaluate(_A_ROUND_TRIP_JS)
        out["a_page_s"] = time.perf_counter() - t0
        state = {"pending": None, "next": 0.0, "answered": 0, "clicks": []}
        ctx_b = browser.new_context(viewport={"width": 1280, "height": 720})
        page_b = ctx_b.new_page()
        t_req = seen = None
        marks = {"shell_s": None, "visible_s": None, "iteration_120_s": None}
        while time.perf_counter() - t0 < timeout and (marks["iteration_120_s"] is None
                                                     or time.perf_counter() - t0 < t_req + window):
            now = time.perf_counter() - t0
            _a_step(page_a, step, state, now)
            if t_req is None and now >= after:
                t_req, seen = now, []
                page_b.evaluate(f"() => {{ window.location.href = {json.dumps(srv.url + query)}; }}")
            elif t_req is not None:
                r = _b_read(page_b)
                status = (r["status"] or "").strip()
                if marks["shell_s"] is None and (r["opening"] or status):
                    marks["shell_s"] = now - t_req
                if marks["visible_s"] is None and status:
                    marks["visible_s"] = now - t_req
                if status and (not seen or seen[-1][1] != status):
                    seen.append((round(now - t_req, 2), status[:160]))
                if marks["iteration_120_s"] is None and re.search(r"iteration\s*120\b", status):
                    marks["iteration_120_s"] = now - t_req
            time.sleep(0.1)
        t_end = time.perf_counter() - t0
        rts = page_a.evaluate("() => window.__gaplab_rt")
        ctx_a.close()
        ctx_b.close()
        log = srv.log()
    tmp.cleanup()
    before = {k: v for k, v in _a_summary(state["clicks"], rts, 0.0, t_req, "before").items() if "_before" in k}
    out.update(_a_summary(state["clicks"], rts, t_req, t_end, "during"), **before,
               a_window_s=[t_req, t_end], b_request_s=t_req, b_statuses=seen[:40] if seen else [],
               b_compiling_when_visible=bool(seen) and "compiling" in seen[0][1],
               **{"b_" + k: v for k, v in marks.items()})
    m = re.search(r"default solver kernels ready in ([\d.]+) s", log)
    out.update(server_says_step_kernels_ready_s=float(m.group(1)) if m else None,
               server_tracebacks=log.count("Traceback"), load_avg_start=load0, load_avg_end=os.getloadavg())
    return out


def _a_summary(clicks, rts, t_from, t_to, name) -> dict:
    """A's Step round trips (in-page ms, in click order) of the clicks made in [t_from, t_to]
    (keys named ``a_round_trip(s)_<name>...``); the longest wait counts every click of the run."""
    answered = [c for c in clicks if c["answered_at"] is not None]
    window = [i for i, c in enumerate(answered) if t_from is not None and t_from <= c["at"] <= t_to]
    ms = [rts[i][0] for i in window if i < len(rts)]
    unanswered = [t_to - c["at"] for c in clicks if c["answered_at"] is None]
    waits = [c["answered_at"] - c["at"] for c in answered] + unanswered
    return {"a_clicks": len(clicks), "a_answered": len(answered), f"a_round_trips_{name}_ms": ms,
            f"a_round_trip_{name}_median_ms": statistics.median(ms) if ms else None,
            f"a_round_trip_{name}_max_ms": max(ms) if ms else None,
            "a_longest_wait_s": max(waits) if waits else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cold", action="store_true", help="an empty NUMBA_CACHE_DIR")
    ap.add_argument("--warm", action="store_true", help="the numba cache as it is")
    ap.add_argument("--page-repeats", type=int, default=0,
                    help="then time this many fresh pages to status ready on the running server")
    ap.add_argument("--url-during-compile", action="store_true",
                    help="a bookmarked URL opened while the kernels compile (instead of --cold/--warm)")
    ap.add_argument("--url-query", default="?dataset=ocr-small&sampling=gap&steps=120")
    ap.add_argument("--url-after", type=float, default=15.0, help="seconds after launch page B opens the URL")
    ap.add_argument("--a-window", type=float, default=10.0,
                    help="A's Steps are counted from B's request to B's iteration 120, at least this many seconds")
    ap.add_argument("--busy", action="store_true", help="two CPU-bound processes beside the app (busy_machine)")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each kind")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.url_after < 0:
        print(f"startup_bench.py: --repeats must be >= 1 and --url-after >= 0, got {args.repeats} and "
              f"{args.url_after}", file=sys.stderr)
        return 2
    if not (args.cold or args.warm):
        args.cold = args.warm = True
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, busy_machine, find_chromium
    chromium = find_chromium()
    if chromium is None:
        print("no Chromium executable found (apt-get install chromium)", file=sys.stderr)
        return 2
    import gaplab
    res = {"machine": {"cpus": os.cpu_count()}, "gaplab": str(Path(gaplab.__file__).parent), "busy": args.busy,
           "runs": []}
    kinds = (["url"] if args.url_during_compile
             else [c for c, on in ((False, args.warm), (True, args.cold)) if on])
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for kind in kinds * args.repeats:
            with busy_machine() if args.busy else contextlib.nullcontext():
                if kind == "url":
                    r = url_run(browser, args.url_query, args.url_after, args.a_window)
                else:
                    r = start_run(browser, kind, args.page_repeats)
            r["busy"] = args.busy
            res["runs"].append(r)
            _say(r, res["machine"]["cpus"])
        browser.close()
    _summarise(res)
    if args.out:
        from gaplab.core.atomic import write_text_atomic
        write_text_atomic(args.out, json.dumps(res, indent=1))
    return 0


def _say(r: dict, cpus) -> None:
    load = f"load {r['load_avg_start'][0]:.1f} -> {r['load_avg_end'][0]:.1f} on {cpus} CPUs"
    f = (lambda v, unit=" s": "not seen" if v is None else f"{v:.1f}{unit}")
    if "query" in r:
        print(f"URL during the compile{' (busy)' if r['busy'] else ''}: B requested {f(r['b_request_s'])} after "
              f"launch; shell {f(r['b_shell_s'])}, page visible {f(r['b_visible_s'])}, iteration 120 "
              f"{f(r['b_iteration_120_s'])} after the request; A's Steps meanwhile "
              f"{f(r['a_round_trip_during_median_ms'], ' ms')} median, {f(r['a_round_trip_during_max_ms'], ' ms')} "
              f"max ({len(r['a_round_trips_during_ms'])} clicks), longest wait {f(r['a_longest_wait_s'])}; {load}")
        return
    print(f"{'cold' if r['cold'] else 'warm'} numba cache{' (busy)' if r['busy'] else ''}: page {r['page_s']:.1f} s, "
          f"Step enabled {r['step_enabled_s']:.1f} s, first Step answered {r['first_step_answered_s']:.1f} s; "
          f"progress shown still at most {r['progress_shown_still_max_s']:.1f} s (fraction "
          f"{r['progress_fraction_still_max_s']:.1f} s); {load}")
    if r["fresh_page_ready_s"]:
        print("fresh pages to status ready: " + ", ".join(f"{t:.2f}" for t in r["fresh_page_ready_s"]) + " s")


def _summarise(res: dict) -> None:
    """Medians over the runs of each kind (``res["summary"]``); a value never seen counts as None."""
    def med(runs, key):
        vals = [r[key] for r in runs]
        return None if not vals or any(v is None for v in vals) else statistics.median(vals)
    cold = [r for r in res["runs"] if r.get("cold") is True]
    warm = [r for r in res["runs"] if r.get("cold") is False]
    url = [r for r in res["runs"] if "query" in r]
    s = {}
    for name, runs in (("cold", cold), ("warm", warm)):
        if runs:
            s[f"{name}_first_step_answered_s_median"] = med(runs, "first_step_answered_s")
    if url:
        for key in ("b_visible_s", "b_shell_s", "b_iteration_120_s", "a_longest_wait_s"):
            s[f"url_{key}_median"] = med(url, key)
        s["url_a_round_trip_during_median_ms"] = med(url, "a_round_trip_during_median_ms")   # median of the runs'
        mx = [r["a_round_trip_during_max_ms"] for r in url if r["a_round_trip_during_max_ms"] is not None]
        s["url_a_round_trip_during_max_ms"] = max(mx) if mx else None
    s["runs"] = len(res["runs"])
    res["summary"] = s


if __name__ == "__main__":
    raise SystemExit(main())
