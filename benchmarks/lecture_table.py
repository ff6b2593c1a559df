"""The lecture table: the lecture targets measured quiet and busy, in one table (a benchmark driver).

Runs the benchmark scripts one after the other, each in its own process, first on the machine as
it is ("quiet") and then under the busy-laptop condition (``--busy`` of each script:
:func:`gaplab.app.testing.busy_machine`, two CPU-bound processes beside the app), collects each
one's JSON and writes ``lecture_table.json`` (every piece's command, exit code, wall time, load
average at its start and end, and its whole JSON) and ``lecture_table.md`` (one row per item:
the quiet and the busy value, the target, whether it is met, the load at the row's start and end).

Pieces (``--pieces``, in this order):

* ``startup``: first Step after a cold ``gaplab app`` (``startup_bench.py --cold``);
* ``url``: a bookmarked URL opened during the compile, and another page's Step meanwhile
  (``startup_bench.py --url-during-compile``);
* ``projector``: projector mode's switch on and off (``projector_switch.py``);
* ``horse``: horse-small's first load (an empty feature cache) and cached load (``horse_load_time.py``);
* ``memory``: the server's RSS before and after CoNLL, horse-small and lsp-pose tabs, the
  horse-small tab's time to ready, tracebacks (``app_memory.py --tabs``);
* ``screens``: every tab in projector mode for OCR-small, CoNLL, horse-small and lsp-pose
  (``app_screens.py``; busy pictures are named ``*_busy.png``); they are to be looked at.

A quiet piece waits (up to ``--settle`` seconds) for the 1-minute load average to fall to 1.0
(the previous piece's own work raises it); a piece whose load at the start is still above 1.0 is
recorded with ``quiet: false`` and the table says "not quiet" next to its values, since other
jobs may share the machine. Running one condition (``--busy`` or ``--quiet-only``) or some pieces
(``--pieces``) keeps the other records (each dated) from an existing ``lecture_table.json`` in the
same folder.

    python benchmarks/lecture_table.py [--busy | --quiet-only] [--pieces startup,url,...]
        [--cold-repeats 1] [--url-repeats 1] [--projector-repeats 3] [--settle 180]
        [--results benchmarks/results]
    python benchmarks/lecture_table.py --table-only     # rebuild the Markdown from the JSON
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT.parent / "shared" / "data"
PIECES = ("startup", "url", "projector", "horse", "memory", "screens")
CONDITIONS = ("quiet", "busy")
QUIET_LOAD = 1.0       # the most 1-minute load average at a piece's start for it to count as quiet
SCREEN_DATASETS = ("conll2000", "horse-small", "lsp-pose")
SCREEN_TABS = 8        # app_screens.TABS


def piece_argv(name: str, busy: bool, opts, out: Path, tmp: Path) -> list[str]:
    """The command line of piece ``name`` (its JSON goes to ``out``; ``tmp`` an empty folder)."""
    py = [sys.executable]
    if name == "startup":
        argv = py + [str(HERE / "startup_bench.py"), "--cold", "--repeats", str(opts.cold_repeats), "--out", str(out)]
    elif name == "url":
        argv = py + [str(HERE / "startup_bench.py"), "--url-during-compile", "--repeats", str(opts.url_repeats),
                     "--out", str(out)]
    elif name == "projector":
        argv = py + [str(HERE / "projector_switch.py"), "--repeats", str(opts.projector_repeats), "--out", str(out)]
    elif name == "horse":
        argv = py + [str(HERE / "horse_load_time.py"), "--data-home", str(opts.data_home), "--cache-dir", str(tmp),
                     "--out", str(out)]
    elif name == "memory":
        argv = py + [str(HERE / "app_memory.py"), "--tabs", "--out", str(out)]
    elif name == "screens":
        argv = py + [str(HERE / "app_screens.py"), "--no-jupyterlab", "--datasets", *SCREEN_DATASETS,
                     "--out", str(opts.shots), "--report", str(out)]
    else:
        raise ValueError(f"piece must be one of {', '.join(PIECES)}, got {name!r}")
    return argv + (["--busy"] if busy else [])


def wait_quiet(settle: float) -> list[float]:
    """Wait up to ``settle`` seconds for the 1-minute load to fall to :data:`QUIET_LOAD`; the load then."""
    t0 = time.monotonic()
    while os.getloadavg()[0] > QUIET_LOAD and time.monotonic() - t0 < settle:
        time.sleep(5)
    return list(os.getloadavg())


def run_piece(name: str, condition: str, opts) -> dict:
    """Run one piece; its record (command, exit code, wall seconds, loads, quiet or not, JSON)."""
    busy = condition == "busy"
    with tempfile.TemporaryDirectory(prefix=f"lecture-{name}-") as tmp:
        out = Path(tmp) / "result.json"
        cache = Path(tmp) / "empty-cache"
        cache.mkdir()
        argv = piece_argv(name, busy, opts, out, cache)
        load0 = wait_quiet(opts.settle) if not busy else list(os.getloadavg())
        print(f"[{condition}] {name}: load {load0[0]:.2f}; {' '.join(argv[1:])}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
        rec = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               "argv": argv[1:], "rc": proc.returncode, "wall_s": time.perf_counter() - t0,
               "load_start": load0, "load_end": list(os.getloadavg()),
               "quiet": None if busy else load0[0] <= QUIET_LOAD, "result": None, "error": None}
        try:
            rec["result"] = json.loads(out.read_text())
        except (OSError, ValueError) as exc:
            rec["error"] = f"no JSON ({type(exc).__name__}); stderr: {proc.stderr[-600:]}"
        if proc.returncode != 0 and rec["error"] is None:
            rec["error"] = f"exit code {proc.returncode}; stderr: {proc.stderr[-600:]}"
    print(f"[{condition}] {name}: {rec['wall_s']:.0f} s, exit {rec['rc']}, load {rec['load_end'][0]:.2f} at the end",
          file=sys.stderr, flush=True)
    return rec


# ---- the rows: each reads one piece's JSON ---------------------------------------------------

def _get(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _seconds(v):
    """A row's value in seconds and its cell text (None, None: not seen)."""
    return v, None if v is None else f"{v:.1f} s"


def _first_step(r):
    return _seconds(_get(r, "summary", "cold_first_step_answered_s_median"))


def _projector(r):
    on, off = _get(r, "app", "on"), _get(r, "app", "off")
    if not on or not off:
        return None, None
    v = max(on["median_s"], off["median_s"])
    return v, (f"on {on['median_s']:.2f} s, off {off['median_s']:.2f} s (max {max(on['max_s'], off['max_s']):.2f} s; "
               f"blank reads {on['blank_reads'] + off['blank_reads']})")


def _url_visible(r):
    v = _get(r, "summary", "url_b_visible_s_median")
    return v, None if v is None else f"{v:.1f} s (shell {_fmt(_get(r, 'summary', 'url_b_shell_s_median'))})"


def _url_steps(r):
    return _seconds(_get(r, "summary", "url_b_iteration_120_s_median"))


def _url_other(r):
    med, mx = _get(r, "summary", "url_a_round_trip_during_median_ms"), _get(r, "summary", "url_a_round_trip_during_max_ms")
    n = sum(len(run.get("a_round_trips_during_ms", [])) for run in r.get("runs", []))
    wait = _get(r, "summary", "url_a_longest_wait_s_median")
    if med is None:   # no Step of A answered while B replayed: how long the longest click waited
        return (None, None) if wait is None else (wait, f"no Step answered in the window; longest wait {wait:.1f} s")
    return mx, f"{med:.0f} ms median, {mx:.0f} ms max ({n} Steps; longest wait {_fmt(wait)})"


def _horse(key):
    def read(r):
        v = _get(r, key, "wall_s")
        return v, None if v is None else f"{v:.1f} s (CPU {_get(r, key, 'cpu_s'):.1f} s)"
    return read


def _horse_tab(r):
    tabs = _get(r, "tabs", "tabs") or []
    return _seconds(next((t.get("ready_s") for t in tabs if t.get("dataset") == "horse-small"), None))


def _rss(r):
    t = _get(r, "tabs")
    if not t:
        return None, None
    kept = t["rss_after_close_mb"] - t["rss_before_mb"]
    cache = "; log: " + t["kept_datasets_log"][-1] if t.get("kept_datasets_log") else ""
    return kept, (f"{t['rss_before_mb']:,.0f} → {t['rss_with_tabs_mb']:,.0f} → {t['rss_after_close_mb']:,.0f} MB "
                  f"(kept {kept:+,.0f} MB){cache}")


def _tracebacks(r):
    v = _get(r, "tabs", "tracebacks")
    return v, None if v is None else f"{v} (error handling message: {_get(r, 'tabs', 'error_handling_message')})"


def _screens(r):
    pages = {k: v for k, v in (r.get("pages") or {}).items() if k.startswith("projector_")}
    if not pages and not r.get("not_ready"):
        return None, None
    bad = sorted(k for k, v in pages.items() if v)
    want = (1 + len(SCREEN_DATASETS)) * SCREEN_TABS
    text = f"{len(r.get('written', pages))} of {want} written; {len(bad)} with layout problems"
    text += (": " + ", ".join(bad[:6]) if bad else "")
    for dataset, why in (r.get("not_ready") or {}).items():
        text += f"; {dataset} {why}"
    return (len(r.get("written", pages)), len(bad)), text


def _fmt(v):
    return "—" if v is None else f"{v:.1f} s"


def _at_most(limit):
    return lambda v: v <= limit


def _rss_met(r, v):
    return v <= 150 or bool(_get(r, "tabs", "kept_datasets_log"))


#: (key, item, piece, read(json) -> (value, text), targets {condition: (text, met(value[, json]))})
ROWS = (
    ("first_step", "First Step after a cold `gaplab app` (after launch, median)", "startup", _first_step,
     {"quiet": ("≤ 15 s", _at_most(15)), "busy": ("≤ 30 s", _at_most(30))}),
    ("projector_switch", "Projector switch (the slower of the on / off medians)", "projector", _projector,
     {"quiet": ("≤ 1 s", _at_most(1)), "busy": ("≤ 2 s", _at_most(2))}),
    ("url_visible", "URL opened during the compile: page visible (status drawn) after the request", "url",
     _url_visible, {"quiet": ("≤ 3 s", _at_most(3)), "busy": ("≤ 3 s", _at_most(3))}),
    ("url_steps", "URL opened during the compile: iteration 120 shown after the request", "url", _url_steps, {}),
    ("url_other_step", "Another page's Step round trip while the URL replays during the compile (in the page)",
     "url", _url_other, {}),
    ("horse_first", "horse-small first load (empty feature cache; library load)", "horse", _horse("first_or_cached"), {}),
    ("horse_cached", "horse-small cached load (library load)", "horse", _horse("cached"),
     {"quiet": ("≤ 10 s", _at_most(10)), "busy": ("≤ 10 s", _at_most(10))}),
    ("horse_tab", "horse-small tab ready in the app (user feature cache)", "memory", _horse_tab,
     {"quiet": ("≤ 10 s", _at_most(10)), "busy": ("≤ 10 s", _at_most(10))}),
    ("rss", "Server RSS before → 3 heavy tabs open → 20 s after closing (CoNLL, horse-small, lsp-pose)", "memory",
     _rss, {c: ("kept ≤ 150 MB, or a bounded cache the log names", _rss_met) for c in CONDITIONS}),
    ("tracebacks", "Tracebacks in the server log after the tabs closed", "memory", _tracebacks,
     {c: ("0", lambda v: v == 0) for c in CONDITIONS}),
    ("screens", "Projector screenshots, every tab of OCR-small, CoNLL, horse-small, lsp-pose (to be looked at)",
     "screens", _screens,
     {c: (f"{(1 + len(SCREEN_DATASETS)) * SCREEN_TABS} written, no layout problem",
          lambda v: v[0] == (1 + len(SCREEN_DATASETS)) * SCREEN_TABS and v[1] == 0) for c in CONDITIONS}),
)


def _cell(rec, read, target) -> dict:
    """One row's value under one condition: "not run", "failed", "not seen" or the value."""
    if rec is None:
        return {"state": "not run", "text": "not run", "met": None}
    cell = {"load_start": rec["load_start"][0], "load_end": rec["load_end"][0], "quiet": rec.get("quiet")}
    if rec.get("result") is None:
        return dict(cell, state="failed", text=f"failed (exit {rec.get('rc')})", met=False if target else None)
    value, text = read(rec["result"])
    if value is None:
        return dict(cell, state="not seen", text="not seen" + (f" (exit {rec['rc']})" if rec.get("rc") else ""),
                    met=False if target else None)
    met = None
    if target:
        fn = target[1]
        met = bool(fn(rec["result"], value) if fn is _rss_met else fn(value))
    return dict(cell, state="ok", text=text, value=value, met=met)


def build_rows(conditions: dict) -> list[dict]:
    """The table's rows from ``{"quiet": {piece: record}, "busy": {...}}`` (a piece missing from a
    condition, or a condition missing, gives "not run" cells)."""
    rows = []
    for key, item, piece, read, targets in ROWS:
        row = {"key": key, "item": item, "piece": piece,
               "target": {c: targets[c][0] if c in targets else None for c in CONDITIONS}}
        for c in CONDITIONS:
            row[c] = _cell((conditions.get(c) or {}).get(piece), read, targets.get(c))
        rows.append(row)
    return rows


def _met(cell) -> str:
    if cell["state"] == "not run":
        return "not run"
    m = {True: "yes", False: "**no**", None: "—"}[cell["met"]]
    return m + (" (not quiet)" if cell.get("quiet") is False else "")


def _load(cell) -> str:
    if "load_start" not in cell:
        return ""
    return f"{cell['load_start']:.1f} → {cell['load_end']:.1f}"


def _value(cell) -> str:
    text = cell["text"].replace("|", "\\|")
    if cell.get("quiet") is False:
        text += f" — *not quiet: load {cell['load_start']:.1f} > {QUIET_LOAD:.1f} at the start*"
    return text


def markdown(rows: list[dict], meta: dict) -> str:
    """The Markdown table of ``rows`` (:func:`build_rows`) with a header naming ``meta``'s date,
    commit and machine."""
    head = [f"# Lecture table ({meta.get('date', '?')}, commit {meta.get('commit', '?')}, "
            f"{meta.get('cpus', '?')} CPUs)", "",
            "Made by `python benchmarks/lecture_table.py` (see its docstring). Quiet: the machine as it was, "
            f"a row counts as quiet only when the 1-minute load average at its start was ≤ {QUIET_LOAD:.1f}. "
            "Busy: two CPU-bound processes beside the app (`gaplab.app.testing.busy_machine`). "
            "Load: the 1-minute load average at the start and the end of the row's piece."
            + (" Some pieces were kept from earlier runs: each piece's date and command are in lecture_table.json."
               if meta.get("kept_from") else ""), "",
            "| item | quiet | busy | target (quiet / busy) | met quiet | met busy | load quiet | load busy |",
            "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        tq, tb = r["target"]["quiet"], r["target"]["busy"]
        target = "report" if tq is None and tb is None else (tq if tq == tb else f"{tq or '—'} / {tb or '—'}")
        head.append(f"| {r['item']} | {_value(r['quiet'])} | {_value(r['busy'])} | {target} | {_met(r['quiet'])} | "
                    f"{_met(r['busy'])} | {_load(r['quiet'])} | {_load(r['busy'])} |")
    return "\n".join(head) + "\n"


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def write_table(res: dict, results: Path) -> None:
    from common import clean
    from gaplab.core.atomic import write_text_atomic
    res["rows"] = build_rows(res["conditions"])
    write_text_atomic(results / "lecture_table.json", json.dumps(clean(res), indent=1, default=str) + "\n")
    write_text_atomic(results / "lecture_table.md", markdown(res["rows"], res))


def _args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    one = ap.add_mutually_exclusive_group()
    one.add_argument("--busy", action="store_true", help="the busy condition only")
    one.add_argument("--quiet-only", action="store_true", help="the quiet condition only")
    one.add_argument("--table-only", action="store_true", help="rebuild lecture_table.md from lecture_table.json")
    ap.add_argument("--pieces", default=",".join(PIECES), help=f"comma-separated, of {', '.join(PIECES)}")
    ap.add_argument("--cold-repeats", type=int, default=1, help="cold launches of the startup piece")
    ap.add_argument("--url-repeats", type=int, default=1, help="cold launches of the url piece")
    ap.add_argument("--projector-repeats", type=int, default=3, help="switches each way")
    ap.add_argument("--settle", type=float, default=180.0,
                    help=f"seconds a quiet piece waits at most for the load to fall to {QUIET_LOAD}")
    ap.add_argument("--data-home", type=Path, default=Path(os.environ.get("GAPLAB_DATA", DATA)))
    ap.add_argument("--results", type=Path, default=HERE / "results", help="where the table is written")
    ap.add_argument("--shots", type=Path, default=None, help="where the screenshots go (default: --results)")
    args = ap.parse_args(argv)
    pieces = [p.strip() for p in args.pieces.split(",") if p.strip()]
    bad = [p for p in pieces if p not in PIECES]
    if bad or not pieces:
        ap.error(f"--pieces must name some of {', '.join(PIECES)}, got {args.pieces!r}")
    if min(args.cold_repeats, args.url_repeats, args.projector_repeats) < 1 or args.settle < 0:
        ap.error("the repeats must be >= 1 and --settle >= 0")
    args.pieces, args.shots = pieces, args.shots or args.results
    return args


def main(argv=None) -> int:
    args = _args(argv)
    sys.path.insert(0, str(HERE))
    path = args.results / "lecture_table.json"
    old = json.loads(path.read_text()) if path.is_file() else {}
    if args.table_only:
        if not old:
            print(f"lecture_table.py: no {path} to rebuild the table from", file=sys.stderr)
            return 2
        write_table(old, args.results)
        return 0
    conds = ["busy"] if args.busy else ["quiet"] if args.quiet_only else list(CONDITIONS)
    res = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "commit": _commit(), "cpus": os.cpu_count(), "argv": sys.argv[1:],
           "conditions": {c: v for c, v in (old.get("conditions") or {}).items() if c not in conds}}
    kept = [f"{c}/{k}" for c, ps in (old.get("conditions") or {}).items() for k in ps
            if c not in conds or k not in args.pieces]
    if kept:
        res["kept_from"] = {"date": old.get("date"), "commit": old.get("commit"), "pieces": kept}
    t0 = time.perf_counter()
    args.results.mkdir(parents=True, exist_ok=True)
    for c in conds:   # pieces not run now keep their record from the JSON (each dated)
        res["conditions"][c] = {k: v for k, v in ((old.get("conditions") or {}).get(c) or {}).items()
                                if k not in args.pieces}
        for name in args.pieces:
            res["conditions"][c][name] = run_piece(name, c, args)
            res["wall_s"] = time.perf_counter() - t0
            write_table(res, args.results)   # after every piece: an interrupted run keeps what it measured
    print(markdown(res["rows"], res))
    print(f"lecture table: {res['wall_s'] / 60:.1f} min; wrote {path} and {path.with_suffix('.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
