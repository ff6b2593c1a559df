"""Where the time of a Step goes between the click and the new status line (a benchmark script,
not a timed test): OCR-large served in this process (as ``app_bench.py`` does), Step clicked
``--steps`` times, with time stamps

* on the server (``time.perf_counter``, from the click's websocket message arriving): Bokeh's
  handling of the message, the button's handler (``GapLabApp._timed``: the Step and the frame
  drawn), Panel writing the patch at once (``write_events``) or holding it back because the
  websocket is being written (``schedule_write_events``, retried by ``_dispatch_msgs`` after
  10 ms), the serialisation of Bokeh messages (``Protocol.create``) and every websocket
  fragment written, wrapped around Bokeh's, Panel's and Tornado's functions for this run only;
* in the page (``performance.now``, from the click): the websocket send, every fragment
  received, the status line's new iteration and the next animation frame.

Run it for a checkout with ``PYTHONPATH=ROOT`` (ROOT/gaplab the checkout)::

    PYTHONPATH=ROOT python benchmarks/app_bench_step_trace.py [--steps 30] [--out trace.json]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import app_bench as ab  # noqa: E402

_EVENTS: list = []   # (perf_counter, what) of the current Step


def _stamp(what):
    _EVENTS.append((time.perf_counter(), what))


def _wrap(owner, name, before, after=None, is_async=False):
    orig = getattr(owner, name)
    if is_async:
        async def wrapped(*a, **k):
            _stamp(before)
            r = await orig(*a, **k)
            if after:
                _stamp(after)
            return r
    else:
        def wrapped(*a, **k):
            _stamp(before)
            r = orig(*a, **k)
            if after:
                _stamp(after)
            return r
    setattr(owner, name, wrapped)


def _instrument():
    import panel.io.document as pdoc
    from bokeh.server import session as bsession
    from bokeh.server.views import ws
    from tornado.websocket import WebSocketHandler

    from gaplab.app.main import GapLabApp
    orig_in = ws.WSHandler.on_message

    async def on_message(self, fragment):
        _stamp(("in", len(fragment)))
        return await orig_in(self, fragment)
    ws.WSHandler.on_message = on_message
    orig_out = WebSocketHandler.write_message

    def write_message(self, message, binary=False):
        _stamp(("out", len(message)))
        return orig_out(self, message, binary)
    WebSocketHandler.write_message = write_message
    _wrap(bsession.ServerSession, "_handle_patch", "message handled from", "message handled to", is_async=True)
    _wrap(GapLabApp, "_timed", "handler from", "handler to")
    _wrap(pdoc, "write_events", "patch written at once")
    _wrap(pdoc, "schedule_write_events", "patch held back")
    _wrap(pdoc, "_dispatch_msgs", "held patch: write attempt", is_async=True)
    from bokeh.protocol import Protocol
    _wrap(Protocol, "create", "message serialised from", "message serialised to")


_PAGE_JS = """() => {
    const doc = window.Bokeh.documents[0];
    const m = [...doc.all_models].find(x => typeof x.text === 'string' && x.text.includes('gaplab-status'));
    window.__tr = []; window.__cur = null;
    document.addEventListener('click', () => { window.__cur = {click: performance.now(), send: [], recv: []}; }, true);
    const send = WebSocket.prototype.send;
    WebSocket.prototype.send = function(d) {
        if (window.__cur) window.__cur.send.push(performance.now());
        if (!this.__hooked) {
            this.__hooked = true;
            this.addEventListener('message', (e) => {
                if (window.__cur) window.__cur.recv.push([performance.now(), e.data.length || e.data.byteLength || e.data.size || 0]);
            });
        }
        return send.call(this, d);
    };
    m.properties.text.change.connect(() => {
        const c = window.__cur;
        if (c === null || !/iteration (<b>|&lt;b&gt;)[1-9]/.test(m.text)) { return; }
        window.__cur = null; c.text = performance.now();
        requestAnimationFrame(() => { c.frame = performance.now(); window.__tr.push(c); });
    });
}"""


def _server_times(events) -> dict:
    """Milliseconds from the click's first websocket fragment in to each stamp (first of each)."""
    ins = [t for t, w in events if isinstance(w, tuple) and w[0] == "in"]
    if not ins:
        return {}
    t0, out = ins[0], {}
    for t, w in events:
        if isinstance(w, str):
            out.setdefault(w, 1e3 * (t - t0))
    outs = [(t, w[1]) for t, w in events if isinstance(w, tuple) and w[0] == "out"]
    if outs:
        out["largest fragment out"] = 1e3 * (max(outs, key=lambda o: o[1])[0] - t0)
        out["largest fragment bytes"] = max(o[1] for o in outs)
    out["held-back write attempts"] = sum(1 for _, w in events if w == "held patch: write attempt")
    return out


def _page_times(c) -> dict:
    out = {"status text": c["text"] - c["click"], "next frame": c["frame"] - c["click"]}
    if c["recv"]:
        big = max(c["recv"], key=lambda r: r[1])
        out["first fragment in"] = c["recv"][0][0] - c["click"]
        out["largest fragment in"] = big[0] - c["click"]
        out["largest fragment in -> status text"] = c["text"] - big[0]
    return out


def _medians(rows: list[dict]) -> dict:
    keys = {k for r in rows for k in r}
    return {k: statistics.median(r[k] for r in rows if k in r) for k in sorted(keys)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30, help="Step clicks traced")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    import gaplab
    from gaplab.app.testing import CHROMIUM_ARGS, find_chromium
    _instrument()
    res = {"checkout": str(Path(gaplab.__file__).resolve().parent),
           "machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg()}}
    server = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        with ab.InProcessServer() as srv:
            ctx, page, errors = ab._open(browser, srv.url)
            ab._wait_status(page, r"ready", timeout=900)
            page.locator(".gaplab-w-dataset select").first.select_option("ocr-large")
            ab._wait_status(page, r"ready.*ocr-large.*iteration 0\b", timeout=300)
            page.evaluate(_PAGE_JS)
            for k in range(1, args.steps + 1):
                time.sleep(0.15)
                _EVENTS.clear()
                page.get_by_role("button", name="Step", exact=True).click()
                ab._wait_status(page, rf"iteration {k}\b", timeout=30)
                time.sleep(0.05)
                server.append(_server_times(list(_EVENTS)))
            trace = page.evaluate("() => window.__tr")
            res["console_errors"] = errors
            ctx.close()
        browser.close()
    res["machine"]["load_avg_end"] = os.getloadavg()
    res["server_ms_median"] = _medians([s for s in server if s])
    res["page_ms_median"] = _medians([_page_times(c) for c in trace])
    # held back while the handler ran (not a later periodic refresh's patch)
    res["steps_with_patch_held_back"] = sum(1 for s in server if s.get("patch held back", 1e9) < s.get("handler to", 0))
    res["steps"] = len(server)
    print(f"checkout {res['checkout']}: {res['steps_with_patch_held_back']} of {res['steps']} Steps had their patch "
          "held back")
    for side in ("server_ms_median", "page_ms_median"):
        print(side + ": " + "; ".join(f"{k} {v:.1f}" for k, v in res[side].items()))
    return ab.finish(res, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
