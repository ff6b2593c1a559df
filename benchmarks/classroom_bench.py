"""A class on the lecturer's server (a benchmark script, not a timed test).

The server is ``gaplab app --classroom --address 127.0.0.2`` (``gaplab.app.serve.serve``) in its
own process: the lecturer's page on http://127.0.0.1:PORT/ is served by that process, the
students' on http://127.0.0.2:PORT/ by its child process at nice +10 (``gaplab.app.students``;
see ``classroom_clients.py`` for how a student's client address is given on one machine), with a
folder holding a FIFO as ``--path-root``. The lecturer's page (real Chromium) steps OCR-small
while N = 0, 10, 20, 30 students are connected. Meanwhile a thread of this script loads the
students' page over plain HTTP once a second (a visitor's page load that never connects its
websocket).

The students, in this order:

- the first ``--browser-students`` are Chromium pages, two per browser context (one context =
  one student computer). Student 1 opens ``/?dataset=conll2000&steps=200000`` (hostile: a heavy
  dataset and a 200,000-step replay); student 2 sets the page's KeyboardShortcuts ``counts`` to
  ``step:1000000`` from the page's JavaScript (hostile: what a console would send); the others
  click Step every 0.5 s and ▶ Run every 5 s;
- the rest are Bokeh protocol clients (``classroom_clients.ProtocolStudent``): a websocket that
  sends what a page sends (DocumentReady, then a Step click every 0.5 s and a Run click every
  5 s) and applies the server's patches, without drawing anything. The first of them also types
  the FIFO's path into the path tab's Open store every 2 s (hostile). A class's browsers run on
  the students' own laptops; 30 Chromium pages on this 2-core machine would take the CPU the
  server needs, which a class would not.

Reported per N: the lecturer's Step round trip in the page (click -> the status line's new
iteration, the page's own clock, as ``app_bench.py`` measures it), median and max; page loads
answered (within 10 s) of those tried; the RSS of the lecturer's process, of the students'
process and their sum; the students' clicks sent.
Target at N = 30: median <= 100 ms, max <= 500 ms. ``--busy``: two CPU-bound processes run
beside (``scripts/busy.py``'s condition) during the timed part.

``--one-process``: the comparison, everyone served by one process on 127.0.0.1 as before the
students had a process of their own (the bench's client addresses read by that process).

Usage::

    python benchmarks/classroom_bench.py [--students 0,10,20,30] [--steps 20] [--repeats 1]
        [--browser-students 4] [--busy] [--one-process] [--out benchmarks/results/classroom_bench.json]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_bench import _ROUND_TRIP_JS, _wait_status, finish  # noqa: E402
from classroom_clients import (HEADER, STUDENTS_ADDRESS, ProtocolStudent, rss_mb, serve_classroom,  # noqa: E402
                               students_pid)


#: a student page's own clicks (buttons found in Panel's shadow roots by their text)
_STUDENT_JS = """() => {
    const find = (root, text) => {
        for (const el of root.querySelectorAll('button')) {
            if (el.textContent.trim() === text) { return el; }
        }
        for (const el of root.querySelectorAll('*')) {
            if (el.shadowRoot) { const h = find(el.shadowRoot, text); if (h) { return h; } }
        }
        return null;
    };
    window.__bench_clicks = 0;
    setInterval(() => { const b = find(document, 'Step'); if (b && !b.disabled) { b.click(); window.__bench_clicks++; } }, 500);
    setInterval(() => { const b = find(document, '▶ Run'); if (b && !b.disabled) { b.click(); } }, 5000);
}"""

#: a hostile page: a million presses of space in one value of the keyboard component's counts
_HOSTILE_KEYS_JS = """() => {
    const doc = window.Bokeh.documents[0];
    const m = [...doc.all_models].find(x => x.properties && x.properties.data
        && x.data && x.data.properties && x.data.properties.counts !== undefined);
    if (!m) { return false; }
    m.data.counts = 'step:1000000';
    return true;
}"""


class PageLoads:
    """Plain page loads once a second from a thread: how many are answered within 10 s. Each
    load comes from a visitor address of its own (the bench's header), so that the per-computer
    session cap does not turn them into refusals."""

    def __init__(self, url):
        self.url, self.stop, self.done = url, threading.Event(), []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        k = 0
        while not self.stop.is_set():
            t0 = time.perf_counter()
            k += 1
            req = urllib.request.Request(self.url, headers={HEADER: f"10.9.{k // 250 % 250}.{k % 250 + 1}"})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    r.read()
                self.done.append((True, time.perf_counter() - t0))
            except Exception:
                self.done.append((False, time.perf_counter() - t0))
            self.stop.wait(max(0.0, 1.0 - (time.perf_counter() - t0)))

    def take(self):
        out, self.done = self.done, []
        return out


class ServerProcess:
    """The classroom server in a child process (its own interpreter: the script's browsers and
    clients do not share its GIL); ``url``: the lecturer's page, ``student_url``: the students'."""

    def __init__(self, max_sessions, per_client, log_path, one_process=False):
        from gaplab.app.students import free_port_pair
        from gaplab.app.testing import free_port
        students = "127.0.0.1" if one_process else STUDENTS_ADDRESS
        self.port = free_port() if one_process else free_port_pair("127.0.0.1", students)
        self.url = f"http://127.0.0.1:{self.port}/"
        self.student_url = f"http://{students}:{self.port}/"
        self.dir = tempfile.mkdtemp(prefix="gaplab-classroom-")
        self.fifo = os.path.join(self.dir, "store-fifo")
        os.mkfifo(self.fifo)
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(self.port), "--path-root", self.dir,
             "--max-sessions", str(max_sessions), "--per-client", "2"] + (["--one-process"] if one_process else []),
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 600
        while time.time() < deadline:
            try:
                for url in (self.url, self.student_url):
                    with urllib.request.urlopen(url, timeout=30) as r:
                        r.read()
                return
            except Exception:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the server exited ({self.proc.returncode}); see {log_path}")
                time.sleep(1.0)
        raise TimeoutError("the server did not answer in 600 s")

    def rss_mb(self):
        """``{"lecturer": MB, "students": MB, "sum": MB}`` (the students' process: None if gone)."""
        child = students_pid(self.proc.pid)
        lect = rss_mb(self.proc.pid)
        stud = rss_mb(child) if child is not None else None
        return {"lecturer": lect, "students": stud, "sum": lect + (stud or 0.0)}

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        os.unlink(self.fifo)
        os.rmdir(self.dir)


def _open_student(browser, url, client, pages, timeout=300):
    ctx = browser.new_context(viewport={"width": 1280, "height": 720}, extra_http_headers={HEADER: client})
    out = []
    for u in pages:
        page = ctx.new_page()
        page.set_default_timeout(timeout * 1000)
        page.goto(url + u, timeout=timeout * 1000)
        out.append(page)
    return ctx, out


def _start_student(page, hostile_keys=False, hostile_url=False):
    if hostile_url:   # replays its URL's steps (cut to the server's budget): left to it
        return None
    _wait_status(page, r"ready|paused|running|idle", timeout=300)
    if hostile_keys:
        return page.evaluate(_HOSTILE_KEYS_JS)
    page.evaluate(_STUDENT_JS)
    return None


def _lecturer_steps(page, n_steps, timeout=60.0):
    """``n_steps`` Step clicks, each once the previous one's new status has arrived (then a
    0.2 s pause); the in-page round trips (ms). A click unanswered after ``timeout`` s counts
    as that long."""
    page.evaluate(_ROUND_TRIP_JS)
    out = []
    for _ in range(n_steps):
        n0 = page.evaluate("() => window.__gaplab_rt.length")
        page.get_by_role("button", name="Step", exact=True).click()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < timeout and page.evaluate("() => window.__gaplab_rt.length") == n0:
            time.sleep(0.02)
        rts = page.evaluate("() => window.__gaplab_rt")
        out.append(rts[-1][0] if len(rts) > n0 else 1e3 * timeout)
        time.sleep(0.2)
    return out


def _add_students(n, students, browser, srv, args):
    """Connect students until there are ``n`` (see the module docstring for who they are)."""
    while len(students) < n:
        k = len(students)
        client = f"10.0.{k // 2 // 250}.{k // 2 % 250 + 1}"   # two students per computer
        if k < args.browser_students:
            m = min(2, args.browser_students - k, n - k)
            urls = ["?dataset=conll2000&steps=200000" if k + j == 0 else "" for j in range(m)]
            ctx, pages = _open_student(browser, srv.student_url, client, urls)
            for j, (page, u) in enumerate(zip(pages, urls)):
                _start_student(page, hostile_keys=(k + j == 1), hostile_url=bool(u))
                students.append(("browser", ctx, page))
        else:
            fifo = srv.fifo if k == args.browser_students else None
            st = ProtocolStudent(srv.student_url, client, fifo=fifo)
            st.start()
            st.connected.wait(600)
            students.append(("protocol", None, st))


def _measure(n, lect, loads, srv, students, args, open_s):
    """The lecturer's Steps (``--repeats`` rounds of ``--steps``) with ``n`` students working."""
    loads.take()
    la0 = os.getloadavg()[0]
    rounds = []
    for _ in range(args.repeats):
        rounds.append(_lecturer_steps(lect, args.steps))
    rt = [x for r in rounds for x in r]
    pl = loads.take()
    proto = [st for kind, _, st in students if kind == "protocol"]
    ok = [t for good, t in pl if good]
    return {"students": n, "open_s": open_s, "load_avg_1min": [la0, os.getloadavg()[0]],
            "lecturer_step_ms": {"median": statistics.median(rt), "max": max(rt), "n": len(rt),
                                 "round_medians": [statistics.median(r) for r in rounds], "all": rt},
            "page_loads": {"answered": len(ok), "tried": len(pl), "median_s": statistics.median(ok) if ok else None,
                           "max_s": max(ok) if ok else None},
            "rss_mb": srv.rss_mb(),
            "students_by_kind": {"browser": sum(k == "browser" for k, _, _ in students), "protocol": len(proto)},
            "protocol_clicks": {k: sum(st.clicks[k] for st in proto) for k in ("step", "run", "fifo")},
            "protocol_errors": [st.error for st in proto if st.error]}


def _print(run, args):
    ms = run["lecturer_step_ms"]
    print(f"N = {run['students']}: lecturer Step {ms['median']:.0f} ms median, {ms['max']:.0f} ms max "
          f"({ms['n']} of {args.steps * args.repeats}); page loads {run['page_loads']['answered']}/"
          f"{run['page_loads']['tried']} answered; RSS {run['rss_mb']['sum']:.0f} MB (lecturer "
          f"{run['rss_mb']['lecturer']:.0f}, students {run['rss_mb']['students'] or 0:.0f}); students "
          f"{run['students_by_kind']}; load {run['load_avg_1min'][0]:.1f}", flush=True)


def _args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", default="0,10,20,30", help="student counts, increasing")
    ap.add_argument("--steps", type=int, default=20, help="lecturer's Step clicks per round")
    ap.add_argument("--repeats", type=int, default=1, help="rounds of --steps clicks per N")
    ap.add_argument("--browser-students", type=int, default=4, help="students that are Chromium pages")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds the students work before timing")
    ap.add_argument("--busy", action="store_true", help="two CPU-bound processes beside, while timing")
    ap.add_argument("--no-page-loads", action="store_true", help="no plain page loads meanwhile")
    ap.add_argument("--out", default=None, help="write the results as JSON here (again after each N)")
    ap.add_argument("--one-process", action="store_true",
                    help="everyone served by one process on 127.0.0.1 (as before the students' own process)")
    ap.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)   # the server process
    ap.add_argument("--path-root", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--max-sessions", type=int, default=40, help=argparse.SUPPRESS)
    ap.add_argument("--per-client", type=int, default=2, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = _args(argv)
    if args.serve is not None:
        return serve_classroom(args.serve, args.path_root, args.max_sessions, args.per_client, args.one_process)
    counts = [int(c) for c in args.students.split(",")]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # the server process is stopped
    from playwright.sync_api import sync_playwright

    from gaplab.app.testing import CHROMIUM_ARGS, busy_machine, find_chromium
    chromium = find_chromium()
    if chromium is None:
        print("no Chromium executable found (apt-get install chromium)", file=sys.stderr)
        return 2
    res = {"machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg()}, "busy": args.busy,
           "one_process": args.one_process,
           "browser_students": args.browser_students, "runs": []}
    # the server's log beside the temporary files, not in benchmarks/results (which holds the results only)
    log = os.path.join(tempfile.gettempdir(), os.path.basename(args.out or "classroom_bench.json") + ".server.log")
    # room for the plain page loads too: each holds a student session for the unused-session lifetime (5 s)
    srv = ServerProcess(max(counts) + 16, 2, log if args.out else os.devnull, one_process=args.one_process)
    students = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            lect = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            lect.set_default_timeout(300_000)
            lect.goto(srv.url, timeout=300_000)
            _wait_status(lect, r"ready", timeout=900)
            loads = PageLoads(srv.student_url)
            if not args.no_page_loads:
                loads.thread.start()
            for n in counts:
                t_open = time.perf_counter()
                _add_students(n, students, browser, srv, args)
                open_s = time.perf_counter() - t_open
                time.sleep(args.settle if n else 0.5)
                if args.busy:
                    with busy_machine(2):
                        run = _measure(n, lect, loads, srv, students, args, open_s)
                else:
                    run = _measure(n, lect, loads, srv, students, args, open_s)
                res["runs"].append(run)
                _print(run, args)
                if args.out:   # a partial result survives an interrupted run
                    from gaplab.core.atomic import write_text_atomic
                    write_text_atomic(args.out, json.dumps(dict(res, partial=True), indent=1, default=str))
            loads.stop.set()
            for kind, _, st in students:
                if kind == "protocol":
                    st.stop()
            browser.close()
    finally:
        srv.stop()
    res["machine"]["load_avg_end"] = os.getloadavg()
    last = res["runs"][-1]
    res["targets_met"] = {"lecturer_step_median_ms<=100": last["lecturer_step_ms"]["median"] <= 100,
                          "lecturer_step_max_ms<=500": last["lecturer_step_ms"]["max"] <= 500}
    return finish(res, args.out, lambda: print("targets at N =", last["students"], ":", res["targets_met"]))


if __name__ == "__main__":
    raise SystemExit(main())
