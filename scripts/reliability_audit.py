"""Reliability audit: bad options, corrupted stores, signals and the named defects, run as a user would.

Each case runs ``gaplab`` (or a short Python snippet) in a subprocess with a time-out and gets one
verdict:

- ``pass``: the expected outcome. For input that must be refused: a non-zero exit, no traceback and
  one line on stderr that starts with ``gaplab`` and names the cause (argparse's usage lines are
  allowed before it). For input that may be accepted: either that clean refusal or exit 0.
- ``traceback``: a Python traceback reached the user.
- ``accepted``: bad input ran and exited 0 (or an invariant the case checks did not hold).
- ``crash``: the process died from a signal (a segfault, the OOM killer).
- ``hang``: the case did not end within its time-out.
- ``multi-line``: refused without a traceback, but the error took several lines.

Usage::

    python scripts/reliability_audit.py --out benchmarks/results/reliability_audit.json [--only KIND]

It prints a table of counts by verdict and by kind, then every case that did not pass with its
reason, and writes the whole table as JSON. It needs the OCR data (bundled) and nothing else; the
cases use the toy problem and OCR-small with tiny budgets. More cases live in
``reliability_cases.py`` (kinds lock, disk, arrays, early-int, errors, browser: two writers on a
store, a full disk then ``--resume``, model arrays changed under a built solver, Ctrl-C in the
first 0.05 s, one-line errors, the values a browser sends to ``gaplab app --classroom``).

- ``--add-to OLD.json``: run some cases (``--only``/``--match``) and merge them into an earlier
  table: the earlier rows of the cases not run now are kept, the counts cover the whole.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

GAPLAB = [sys.executable, "-m", "gaplab"]
TRACEBACK = "Traceback (most recent call last)"


@dataclass
class Case:
    kind: str                      # family: option, file, store, signal, named, app, sweep
    name: str
    argv: list | None = None       # gaplab arguments, or None for a Python snippet
    code: str | None = None        # Python snippet (exit 0 = the property held)
    expect: str = "refuse"         # refuse | either | succeed
    timeout: float = 120.0
    setup: object = None           # callable(workdir) run before the case
    signal_at: float | None = None  # send SIGINT this many seconds after start
    after: str | None = None       # Python snippet run after the case (exit 0 = the property held)
    env: dict = field(default_factory=dict)
    must_name: tuple = ()          # a refusal's line must contain one of these words


# ---------------------------------------------------------------- the cases

BAD_NUMBERS = ["nan", "-1", "abc", "", "-inf", "2^2000", "0x10", "1,5"]
EDGE_NUMBERS = ["0", "inf", "1e400", "1e308", "1e-308", "99999999999999999999"]

TRAIN_BASE = ["train", "--dataset", "toy", "--option", "n=10", "--max-passes", "3", "--quiet"]
PATH_BASE = ["path", "--dataset", "toy", "--option", "n=10", "--eps", "0.5", "--quiet", "--no-test-error",
             "--max-passes-per-breakpoint", "50"]
GRID_BASE = ["grid", "--dataset", "toy", "--option", "n=10", "--lams", "1,0.1", "--quiet", "--no-test-error",
             "--max-passes-per-point", "50"]

TRAIN_NUMERIC = ["--gap-power", "--cache-factor", "--cache-nu", "--cache-size", "--gap-check", "--seed",
                 "--lam", "--gap-threshold", "--max-passes", "--time-limit"]
PATH_NUMERIC = ["--eps", "--check-every", "--check-factor", "--every", "--kappa", "--lam-min",
                "--max-passes-per-breakpoint", "--checkpoint-every"]
GRID_NUMERIC = ["--lams", "--max-passes-per-point"]


def option_cases() -> list:
    cases = []
    for base, opts in ((TRAIN_BASE, TRAIN_NUMERIC), (PATH_BASE, PATH_NUMERIC), (GRID_BASE, GRID_NUMERIC)):
        for opt in opts:
            for v in BAD_NUMBERS:
                cases.append(Case("option", f"{base[0]} {opt} {v!r}", argv=base + [f"{opt}={v}"], expect="refuse"))
            for v in EDGE_NUMBERS:
                cases.append(Case("option", f"{base[0]} {opt} {v!r}", argv=base + [f"{opt}={v}"], expect="either",
                                  timeout=180))
    for v in ["abc", "-1", "0", "2^2000", "1e9", "nan", ""]:
        cases.append(Case("option", f"train --option n={v!r}", argv=TRAIN_BASE + ["--option", f"n={v}"],
                          expect="either" if v in ("1e9",) else "refuse"))
    for opt in ["--option", "--dataset", "--sampling", "--step"]:
        for v in ["nonsense", "n", "=", "nonsense=1"]:
            cases.append(Case("option", f"train {opt} {v!r}", argv=TRAIN_BASE + [opt, v], expect="refuse"))
    # the named combination that never ended
    cases.append(Case("named", "train --gap-check inf --max-passes inf", timeout=60,
                      argv=["train", "--dataset", "toy", "--gap-check", "inf", "--max-passes", "inf", "--quiet"],
                      expect="refuse"))
    cases.append(Case("named", "grid --lams 2^2000", argv=GRID_BASE + ["--lams", "2^2000"], expect="refuse"))
    cases.append(Case("named", "path --eps 1e308 names eps", argv=PATH_BASE + ["--eps", "1e308"], expect="either",
                      must_name=("eps", "ε")))
    cases.append(Case("named", "train --lam 1e100: converged, not max_passes",
                      code="import json,subprocess,sys\n"
                           "r=subprocess.run([sys.executable,'-m','gaplab','train','--dataset','ocr-small','--lam','1e100',"
                           "'--max-passes','2','--quiet','--out','r.json'],capture_output=True,text=True)\n"
                           "d=json.load(open('r.json'))\n"
                           "assert d['exact_gap']<=1e-3 and d['status']=='converged', (d['status'], d['exact_gap'])\n",
                      expect="succeed", timeout=300))
    return cases


def file_cases() -> list:
    cases = []
    for sub, base in (("train", TRAIN_BASE), ("path", PATH_BASE), ("grid", GRID_BASE)):
        for what, out in (("empty", ""), ("missing dir", "nodir/sub/x.json"), ("a directory", "."),
                          ("/proc", "/proc/gaplab.json"), ("NUL byte", "a\x00b")):
            if what == "NUL byte":
                continue  # argv cannot carry a NUL byte
            cases.append(Case("file", f"{sub} --out {what}", argv=base + ["--out", out], expect="refuse"))
        cases.append(Case("file", f"{sub} --data-home missing", argv=base + ["--data-home", "nonexistent"],
                          expect="either"))
        cases.append(Case("file", f"{sub} conll2000 without data",
                          argv=[sub, "--dataset", "conll2000", "--data-home", "nonexistent", "--quiet"],
                          expect="refuse"))
    for what in ("missing", "empty file", "text file", "truncated npz", "a directory"):
        cases.append(Case("file", f"path --resume {what}", argv=["path", "--resume", "R"], expect="refuse",
                          setup=lambda wd, w=what: _resume_file(wd, w), timeout=300))
    cases.append(Case("file", "path --store is a file", argv=PATH_BASE + ["--store", "F"], expect="refuse",
                      setup=lambda wd: open(os.path.join(wd, "F"), "w").write("x")))
    # a full disk: every write raises ENOSPC (sitecustomize patches os.write / io writes in the child)
    for sub, base in (("train", TRAIN_BASE), ("path", PATH_BASE + ["--store", "S"]), ("grid", GRID_BASE)):
        argv = base + (["--out", "o.json"] if sub == "train" else ["--out", "o.npz"])
        cases.append(Case("file", f"{sub}: disk full (ENOSPC)", argv=argv, expect="refuse",
                          setup=_enospc_setup, env={"GAPLAB_AUDIT_ENOSPC": "1"}, timeout=300))
    return cases


def _resume_file(wd, what):
    p = os.path.join(wd, "R")
    if what == "empty file":
        open(p, "wb").close()
    elif what == "text file":
        open(p, "w").write("hello")
    elif what == "a directory":
        os.mkdir(p)
    elif what == "truncated npz":
        _run(GAPLAB + PATH_BASE + ["--out", "full.npz"], wd, 300)
        data = open(os.path.join(wd, "full.npz"), "rb").read()
        open(p, "wb").write(data[: len(data) // 2])


_ENOSPC_SITE = r'''
import builtins, errno, io, os
_open = builtins.open
class _Full(io.RawIOBase):
    pass
def _refuse(*a, **k):
    raise OSError(errno.ENOSPC, "No space left on device")
_write = os.write
def write(fd, data):
    if fd > 2:
        _refuse()
    return _write(fd, data)
os.write = write
def opener(file, mode="r", *a, **k):
    f = _open(file, mode, *a, **k)
    if any(c in mode for c in "wax+") and not str(file).startswith("/dev/"):
        class W:
            def __init__(s, f): s._f = f
            def write(s, *a, **k): _refuse()
            def __getattr__(s, n): return getattr(s._f, n)
            def __enter__(s): return s
            def __exit__(s, *e): s._f.close()
            def __iter__(s): return iter(s._f)
        return W(f)
    return f
builtins.open = opener
io.open = opener
'''


def _enospc_setup(wd):
    os.makedirs(os.path.join(wd, "site"), exist_ok=True)
    with open(os.path.join(wd, "site", "sitecustomize.py"), "w") as f:
        f.write("import os\nif os.environ.get('GAPLAB_AUDIT_ENOSPC'):\n")
        for line in _ENOSPC_SITE.strip().splitlines():
            f.write("    " + line + "\n")


def store_cases() -> list:
    """A short path store, then each file damaged in turn; `gaplab path --resume` must resume or refuse
    in one line."""
    cases = []
    damages = ["truncate0", "truncate_half", "flip_byte", "foreign_json", "nested_json", "npy_shape_2^40",
               "delete", "html_name"]
    for dmg in damages:
        for target in ("manifest", "first breakpoint", "last breakpoint"):
            if dmg in ("nested_json", "foreign_json", "html_name") and target != "manifest":
                continue
            if dmg == "npy_shape_2^40" and target == "manifest":
                continue
            cases.append(Case("store", f"path store: {dmg} of {target}", argv=["path", "--resume", "S", "--quiet"],
                              expect="either", timeout=300,
                              setup=lambda wd, d=dmg, t=target: _damage_store(wd, d, t)))
    cases.append(Case("store", "sweep store: foreign parquet run file", expect="succeed", timeout=600,
                      code=_SWEEP_FOREIGN))
    return cases


_STORE_CACHE = {}


def _make_store(wd):
    key = "path"
    if key not in _STORE_CACHE:
        src = tempfile.mkdtemp(prefix="gaplab-audit-store-")
        _run(GAPLAB + PATH_BASE + ["--store", "S"], src, 300)
        _STORE_CACHE[key] = os.path.join(src, "S")
    shutil.copytree(_STORE_CACHE[key], os.path.join(wd, "S"))
    return os.path.join(wd, "S")


def _damage_store(wd, dmg, target):
    s = _make_store(wd)
    files = sorted(f for f in os.listdir(s) if f != "manifest.json" and not f.startswith("."))
    if target == "manifest":
        p = os.path.join(s, "manifest.json")
    else:
        bps = [f for f in files if f.endswith((".npz", ".npy"))] or files
        p = os.path.join(s, bps[0] if target == "first breakpoint" else bps[-1])
    data = open(p, "rb").read() if os.path.isfile(p) else b""
    if dmg == "truncate0":
        open(p, "wb").close()
    elif dmg == "truncate_half":
        open(p, "wb").write(data[: len(data) // 2])
    elif dmg == "flip_byte":
        b = bytearray(data)
        if b:
            b[len(b) // 2] ^= 0xFF
        open(p, "wb").write(bytes(b))
    elif dmg == "foreign_json":
        open(p, "w").write('{"foo": [1, 2, 3]}')
    elif dmg == "nested_json":
        open(p, "w").write("[" * 100000 + "]" * 100000)
    elif dmg == "html_name":
        m = json.loads(data)
        for entry in m.get("files", [])[:3]:
            if isinstance(entry, dict) and "file" in entry:
                entry["file"] = "<img src=x onerror=alert(1)>"
        open(p, "w").write(json.dumps(m))
    elif dmg == "delete":
        os.remove(p)
    elif dmg == "npy_shape_2^40":
        import zipfile
        if zipfile.is_zipfile(p):
            with zipfile.ZipFile(p) as z:
                names = z.namelist()
                contents = {n: z.read(n) for n in names}
            n0 = names[0]
            contents[n0] = _npy_huge_header()
            with zipfile.ZipFile(p, "w") as z:
                for n in names:
                    z.writestr(n, contents[n])
        else:
            open(p, "wb").write(_npy_huge_header())


def _npy_huge_header() -> bytes:
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\x00" * 64


_SWEEP_FOREIGN = r'''
import glob, os, subprocess, sys
import pyarrow as pa, pyarrow.parquet as pq
spec = """
name = "audit"
version = 1
datasets = ["ocr-small[:20]"]
lams = [0.1]
seeds = 1
[budgets.laptop]
max_passes = 3
gap_check = 1
[methods.bcfw]
sampling = "uniform"
step = "fw"
"""
open("spec.toml", "w").write(spec)
r = subprocess.run([sys.executable, "-m", "gaplab", "sweep", "spec.toml", "--store", "st", "--workers", "0", "--quiet"],
                   capture_output=True, text=True)
if r.returncode != 0:
    print(r.stderr[-2000:]); sys.exit(3)
runs = glob.glob("st/runs/*.parquet")
assert runs, "no run file"
pq.write_table(pa.table({"foo": [1, 2, 3]}), runs[0])
r = subprocess.run([sys.executable, "-m", "gaplab", "figure", "st", "--out", "f.png", "--quiet"],
                   capture_output=True, text=True)
assert "Traceback" not in r.stderr, r.stderr[-2000:]
r2 = subprocess.run([sys.executable, "-m", "gaplab", "sweep", "spec.toml", "--store", "st", "--workers", "0", "--dry-run"],
                    capture_output=True, text=True)
assert "Traceback" not in r2.stderr, r2.stderr[-2000:]
# the foreign file must be reported (figure refuses or warns) and the run redone by the next sweep
assert r.returncode != 0 or "foreign" in (r.stderr + r.stdout).lower() or "not a gaplab" in (r.stderr + r.stdout).lower(), \
    "figure accepted a foreign run file silently: " + r.stderr[-500:]
assert "1 to run" in r2.stdout + r2.stderr, "the next sweep would skip the run: " + (r2.stdout + r2.stderr)[-500:]
'''


def signal_cases(n_random: int, rng: random.Random) -> list:
    """SIGINT at random moments of a stored path and of a grid: the store opens and resumes."""
    cases = []
    for k in range(n_random):
        t = round(rng.uniform(0.5, 12.0), 2)
        cases.append(Case("signal", f"path --store, SIGINT at {t} s", argv=[
            "path", "--dataset", "ocr-small", "--eps", "0.05", "--no-test-error", "--quiet", "--store", "S"],
            expect="either", signal_at=t, timeout=600,
            after="from gaplab.core.regpath import RegPath\nimport os,subprocess,sys\n"
                  "if os.path.exists('S/manifest.json'):\n"
                  "    RegPath.open('S')\n"
                  "    r=subprocess.run([sys.executable,'-m','gaplab','path','--resume','S','--quiet'],capture_output=True,text=True)\n"
                  "    assert r.returncode==0 or 'path is finished' in r.stderr, r.stderr[-800:]\n"))
    for t in (0.05, 0.15, 0.3):
        cases.append(Case("signal", f"train, SIGINT at {t} s", argv=TRAIN_BASE, expect="refuse", signal_at=t))
    return cases


def app_cases() -> list:
    cases = []
    for port in ("99999", "-1", "abc", "65536"):
        cases.append(Case("app", f"app --port {port}", argv=["app", "--port", port], expect="refuse", timeout=60))
    cases.append(Case("app", "app --port in use", argv=["app", "--port", "PORT_IN_USE"], expect="refuse",
                      timeout=90))
    return cases


def sweep_cases() -> list:
    cases = []
    cases.append(Case("sweep", "sweep missing spec", argv=["sweep", "missing.toml", "--store", "st"]))
    cases.append(Case("sweep", "sweep spec not TOML", argv=["sweep", "bad.toml", "--store", "st"],
                      setup=lambda wd: open(os.path.join(wd, "bad.toml"), "w").write("[[[")))
    cases.append(Case("sweep", "sweep --workers -1", argv=["sweep", "x.toml", "--store", "st", "--workers", "-1"]))
    cases.append(Case("sweep", "sweep --retries abc", argv=["sweep", "x.toml", "--store", "st", "--retries", "abc"]))
    cases.append(Case("sweep", "sweep --scheduler tcp://127.0.0.1:1", timeout=180,
                      argv=["sweep", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "benchmarks", "specs",
                                                                  "demo_tiny.toml")),
                            "--store", "st", "--scheduler", "tcp://127.0.0.1:1"]))
    cases.append(Case("sweep", "figure missing store", argv=["figure", "nostore", "--out", "f.png"]))
    cases.append(Case("sweep", "figure --out bad suffix", argv=["figure", "nostore", "--out", "f.xyz"]))
    return cases


# ---------------------------------------------------------------- running

def as_from_a_terminal():
    """In the child before exec: SIGINT at its default, as a terminal's shell starts a command (the
    audit itself may run under nohup or as a background job, which start it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run(argv, cwd, timeout, env=None, signal_at=None):
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True, preexec_fn=as_from_a_terminal)
    try:
        if signal_at is not None:
            try:
                proc.wait(timeout=signal_at)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err, time.perf_counter() - t0
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out, err, time.perf_counter() - t0


def _verdict(case, rc, out, err) -> tuple:
    if rc is None:
        return "hang", f"no end within {case.timeout:.0f} s"
    if TRACEBACK in err:
        last = [ln for ln in err.strip().splitlines() if ln.strip()][-1:]
        if "init_import_site" in err:   # CPython's own start-up, before any line of gaplab runs
            return "traceback", (f"exit {rc}: Fatal Python error: init_import_site ({last[0] if last else ''} while "
                                 "CPython imports site and the .pth files, before gaplab's first line)")
        return "traceback", (last[0] if last else "")[:300]
    ended_by_ctrl_c = rc == -signal.SIGINT and case.expect == "interrupted"
    if (rc < 0 and not ended_by_ctrl_c) or rc in (134, 137, 139):
        return "crash", f"exit {rc}"
    if case.expect == "succeed":
        return ("pass", "") if rc == 0 else ("accepted", (err or out).strip()[-300:])
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    if case.expect == "interrupted":   # a Ctrl-C: exit 130 and one line saying "interrupted"
        if rc == 130 and len(lines) == 1 and "interrupted" in lines[0]:
            return "pass", lines[0][:200]
        if rc == 0:
            return "accepted", "exit 0: the Ctrl-C was lost"
        if rc == -signal.SIGINT:
            return "pass", "ended by SIGINT itself (before Python's handler existed): the shell shows 130"
        return ("multi-line" if rc == 130 else "accepted"), f"exit {rc}: " + " | ".join(lines)[:250]
    if rc == 0:
        if case.expect == "either":
            return "pass", "accepted"
        return "accepted", "exit 0 on input that must be refused"
    # refused: argparse usage lines may come first; then one line naming the cause
    body = [ln for ln in lines if not ln.startswith(("usage:", " "))]
    if len(body) == 1 and body[0].startswith("gaplab"):
        if case.must_name and not any(w in body[0] for w in case.must_name):
            return "accepted", f"the message does not name {case.must_name[0]}: {body[0][:200]}"
        return "pass", body[0][:200]
    if not body:
        return "multi-line", "no message on stderr"
    return "multi-line", " | ".join(body)[:300]


def run_case(case: Case, root: str) -> dict:
    wd = tempfile.mkdtemp(prefix="gaplab-audit-")
    env = dict(os.environ, **case.env)
    env["PYTHONPATH"] = os.path.join(wd, "site") + os.pathsep + env.get("PYTHONPATH", "")
    blocker = None
    try:
        if case.setup is not None:
            case.setup(wd)
        if case.argv is not None and "PORT_IN_USE" in case.argv:
            blocker = socket.socket()
            blocker.bind(("127.0.0.1", 0))
            blocker.listen(1)
            case.argv = [str(blocker.getsockname()[1]) if a == "PORT_IN_USE" else a for a in case.argv]
        if case.argv is not None:
            prog = ([os.path.join(os.path.dirname(sys.executable), "gaplab")] if case.env.get("GAPLAB_AUDIT_SCRIPT")
                    else GAPLAB)
            rc, out, err, secs = _run(prog + case.argv, wd, case.timeout, env, case.signal_at)
            verdict, why = _verdict(case, rc, out, err)
            if (case.signal_at is not None and verdict != "traceback" and case.after is None
                    and case.expect != "interrupted"):
                # a Ctrl-C must end the run with one line, whatever moment it came
                verdict, why = ("pass", why) if rc is not None else (verdict, why)
            if case.after and verdict in ("pass", "multi-line", "accepted"):
                rc2, out2, err2, _ = _run([sys.executable, "-c", case.after], wd, case.timeout, env)
                if rc2 != 0:
                    verdict, why = "accepted", ("after: " + (err2 or out2).strip().splitlines()[-1][:300]
                                                if (err2 or out2).strip() else f"after: exit {rc2}")
        else:
            rc, out, err, secs = _run([sys.executable, "-c", case.code], wd, case.timeout, env)
            if rc is None:
                verdict, why = "hang", f"no end within {case.timeout:.0f} s"
            elif rc < 0 or rc in (134, 137, 139):
                verdict, why = "crash", f"exit {rc}: " + " | ".join((err or out).strip().splitlines()[-2:])[:250]
            elif rc == 0:
                tail = out.strip().splitlines()
                verdict, why = "pass", (tail[-1] if tail else "")[:300]
            else:
                tail = (err or out).strip().splitlines()
                verdict, why = "accepted", (tail[-1] if tail else f"exit {rc}")[:300]
    except Exception as exc:  # the harness's own set-up failed: say so, do not hide it
        verdict, why, secs = "setup-error", f"{type(exc).__name__}: {exc}"[:300], 0.0
    finally:
        if blocker is not None:
            blocker.close()
        shutil.rmtree(wd, ignore_errors=True)
    return {"kind": case.kind, "name": case.name, "expect": case.expect, "verdict": verdict, "why": why,
            "seconds": round(secs, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="write the table as JSON here")
    ap.add_argument("--only", action="append", default=None,
                    help="run only these kinds (option, file, store, signal, named, app, sweep)")
    ap.add_argument("--signals", type=int, default=15, help="random SIGINT moments in a stored path (default 15)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=None, help="run the first N cases only")
    ap.add_argument("--match", action="append", default=None, help="run only cases whose name contains this")
    ap.add_argument("--add-to", default=None, metavar="JSON",
                    help="a table written by --out: its rows for the cases not run now are kept, and the "
                         "counts cover both")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    import reliability_cases
    cases = (option_cases() + file_cases() + store_cases() + signal_cases(args.signals, rng) + app_cases()
             + sweep_cases() + reliability_cases.all_cases(Case, TRAIN_BASE))
    if args.only:
        cases = [c for c in cases if c.kind in args.only]
    if args.match:
        cases = [c for c in cases if any(m in c.name for m in args.match)]
    if args.limit:
        cases = cases[: args.limit]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = []
    t0 = time.perf_counter()
    for i, case in enumerate(cases, 1):
        rows.append(run_case(case, root))
        r = rows[-1]
        print(f"[{i}/{len(cases)}] {r['verdict']:<10} {r['kind']:<7} {r['name']}  {r['why'][:120]}", flush=True)
    kept = []
    if args.add_to:
        ran = {(r["kind"], r["name"]) for r in rows}
        with open(args.add_to) as f:
            kept = [r for r in json.load(f)["rows"] if (r["kind"], r["name"]) not in ran]
    rows = kept + rows
    counts = {}
    for r in rows:
        counts.setdefault(r["kind"], {}).setdefault(r["verdict"], 0)
        counts[r["kind"]][r["verdict"]] += 1
    total = {}
    for r in rows:
        total[r["verdict"]] = total.get(r["verdict"], 0) + 1
    print("\nverdicts:", json.dumps(total))
    for kind, c in counts.items():
        print(f"  {kind:<8} {json.dumps(c)}")
    failed = [r for r in rows if r["verdict"] != "pass"]
    print(f"\n{len(failed)} of {len(rows)} cases did not pass:")
    for r in failed:
        print(f"  {r['verdict']:<10} {r['kind']:<7} {r['name']}: {r['why']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"cases": len(rows), "verdicts": total, "by_kind": counts, "wall_s": round(time.perf_counter() - t0, 1),
                       "kept_from": args.add_to and {"file": args.add_to, "rows": len(kept)}, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
