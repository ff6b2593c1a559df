"""More reliability-audit cases (see ``reliability_audit.py``): writers that meet on one store, a
path stopped by a full disk and resumed, model arrays changed under a built solver, Ctrl-C in
the first moments, one-line errors of the estimator and of a read-only store folder, and the
values a browser sends to ``gaplab app --classroom``.

Kinds: ``lock``, ``disk``, ``arrays``, ``early-int``, ``errors``, ``browser``. Children start
with SIGINT at its default, as from a terminal; one ``early-int`` case starts ``gaplab`` with it
ignored, as ``nohup`` does, and wants it to stay ignored. Each case is a
short Python snippet run in its own work directory (exit 0: the property held) or a ``gaplab``
command; a snippet that dies from a signal is a ``crash``.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# a path that runs for a while on OCR-small: interrupted after a few breakpoints it is resumable
RESUMABLE = ["path", "--dataset", "ocr-small", "--eps", "0.05", "--no-test-error", "--quiet"]
# a short whole path (for the full-disk cases: run whole, then stopped and resumed)
SHORT = ["path", "--dataset", "ocr-small", "--eps", "0.3", "--lam-min", "0.01", "--no-test-error", "--quiet"]

_HELPERS = r'''
import json, os, signal, socket, subprocess, sys, time
G = [sys.executable, "-m", "gaplab"]
LOCK = ".gaplab-writer.lock"
def start(args, env=None):
    return subprocess.Popen(G + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
def holder(store):
    try:
        return json.load(open(os.path.join(store, LOCK))).get("pid")
    except (OSError, ValueError):
        return None
def wait_lock(store, p, timeout=600):
    t = time.time()
    while time.time() - t < timeout:
        if holder(store) == p.pid:
            return
        assert p.poll() is None, "the first writer ended before it held the lock: " + p.stderr.read()[-500:]
        time.sleep(0.05)
    raise AssertionError("the first writer never held the lock")
def lines(err):
    return [ln for ln in err.strip().splitlines() if ln.strip()]
def all_listed(store):
    m = json.load(open(os.path.join(store, "manifest.json")))
    listed = {f["file"] for f in m["files"]}
    disk = {f for f in os.listdir(store) if f.startswith("bp_")}
    assert disk == listed, f"on disk, not listed: {sorted(disk - listed)}; listed, missing: {sorted(listed - disk)}"
    return len(listed)
'''


def _case(Case, kind, name, code, timeout=900.0, setup=None, **kw):
    return Case(kind, name, code=_HELPERS + code, expect="succeed", timeout=timeout, setup=setup, **kw)


# ------------------------------------------------------------------------------ resumable store
_CACHE: dict = {}


def _resumable_store(wd, name="S"):
    """A path store interrupted (SIGINT) after its 3rd breakpoint, copied into ``wd/name``."""
    if "store" not in _CACHE:
        src = tempfile.mkdtemp(prefix="gaplab-audit-resumable-")
        p = subprocess.Popen([sys.executable, "-m", "gaplab", *RESUMABLE, "--store", "S"], cwd=src,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        man = os.path.join(src, "S", "manifest.json")
        t0 = time.time()
        while time.time() - t0 < 900 and p.poll() is None:
            try:
                if len(json.load(open(man))["files"]) >= 3:
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=300)
        keys = json.load(open(man)).keys()
        if "resume_state" not in keys:
            raise RuntimeError(f"the interrupted path store holds no solver state (exit {p.returncode}): {err[-300:]}")
        _CACHE["store"] = os.path.join(src, "S")
    shutil.copytree(_CACHE["store"], os.path.join(wd, name))


def _spec(wd, runs=12):
    with open(os.path.join(wd, "spec.toml"), "w") as f:
        f.write('name = "audit-lock"\nversion = 1\ndatasets = ["ocr-small[:30]"]\nlams = [1.0, 0.1, 0.01]\n'
                'seeds = 2\n[budgets.laptop]\nmax_passes = 8\ngap_check = 1\n'
                '[methods.bcfw]\nsampling = "uniform"\nstep = "fw"\n'
                '[methods.gap]\nsampling = "gap"\nstep = "fw"\n')


def lock_cases(Case) -> list:
    resume = "['path', '--resume', 'S', '--quiet', '--no-test-error']"
    sweep = "['sweep', 'spec.toml', '--store', 'st', '--workers', '0', '--quiet']"
    cases = [
        _case(Case, "lock", "path --resume S twice at once: the second is one line with the pid", f'''
p1 = start({resume}); wait_lock("S", p1)
p2 = start({resume}); o2, e2 = p2.communicate(timeout=300)
o1, e1 = p1.communicate(timeout=1800)
assert p1.returncode == 0, ("first writer", p1.returncode, e1[-500:])
L = lines(e2)
assert p2.returncode == 1 and len(L) == 1, ("second writer", p2.returncode, e2[-500:])
assert "'S'" in L[0] or " S " in L[0] or "S:" in L[0] or "store S" in L[0], "the line does not name the store: " + L[0]
assert f"pid {{p1.pid}}" in L[0], "the line does not name the holder's pid: " + L[0]
all_listed("S")
from gaplab.core.regpath import RegPath
assert len(RegPath.open("S")) == all_listed("S")
print(L[0])
''', setup=_resumable_store),
        _case(Case, "lock", "path --resume S --wait while another resumes: waits, store whole", f'''
p1 = start({resume}); wait_lock("S", p1)
p2 = start({resume[:-1]}, '--wait'])
o1, e1 = p1.communicate(timeout=1800); o2, e2 = p2.communicate(timeout=600)
assert p1.returncode == 0, e1[-500:]
assert f"waiting for pid {{p1.pid}}" in e2, "no 'waiting for pid' line: " + e2[-500:]
L = [ln for ln in lines(e2) if "waiting for" not in ln]
assert p2.returncode == 0 or (len(L) == 1 and "finished" in L[0]), (p2.returncode, e2[-500:])
print(f"{{all_listed('S')}} points listed; the waiter then: {{L[0] if L else 'exit 0'}}")
''', setup=_resumable_store),
        _case(Case, "lock", "sweep twice into one store: the second is one line with the pid", f'''
p1 = start({sweep}); wait_lock("st", p1)
p2 = start({sweep}); o2, e2 = p2.communicate(timeout=300)
o1, e1 = p1.communicate(timeout=1800)
assert p1.returncode == 0, e1[-500:]
L = lines(e2)
assert p2.returncode == 1 and len(L) == 1 and "st" in L[0] and f"pid {{p1.pid}}" in L[0], (p2.returncode, e2[-500:])
r = subprocess.run(G + ["sweep", "spec.toml", "--store", "st", "--workers", "0", "--dry-run"], capture_output=True, text=True)
assert " 0 to run" in r.stdout + r.stderr, (r.stdout + r.stderr)[-500:]
print(L[0])
''', setup=_spec),
        _case(Case, "lock", "sweep --wait while another sweeps: waits, runs nothing twice", f'''
p1 = start({sweep}); wait_lock("st", p1)
p2 = start({sweep[:-1]}, '--wait'])
o1, e1 = p1.communicate(timeout=1800); o2, e2 = p2.communicate(timeout=600)
assert p1.returncode == 0 and p2.returncode == 0, (p1.returncode, e1[-300:], p2.returncode, e2[-300:])
assert f"pid {{p1.pid}}" in e2, "the waiting sweep does not say whom it waits for: " + e2[-300:]
import pyarrow.parquet as pq, glob
assert len(glob.glob("st/runs/*.parquet")) == 12, sorted(glob.glob("st/runs/*"))
''', setup=_spec),
        _case(Case, "lock", "path store locked by a killed writer: taken over, points all listed", f'''
p1 = start({resume}); wait_lock("S", p1)
p1.kill(); p1.wait()
r = subprocess.run(G + {resume}, capture_output=True, text=True, timeout=1800)
assert r.returncode == 0, r.stderr[-500:]
assert not os.path.exists(os.path.join("S", LOCK)), "the lock file stayed after the writer ended"
print(f"{{all_listed('S')}} points, all listed")
''', setup=_resumable_store),
        _case(Case, "lock", "path store with a lock file of a dead pid: taken over", f'''
d = subprocess.Popen([sys.executable, "-c", "pass"]); d.wait()
json.dump({{"pid": d.pid, "host": socket.gethostname(), "since": "2026-01-01T00:00:00Z"}}, open(os.path.join("S", LOCK), "w"))
r = subprocess.run(G + {resume}, capture_output=True, text=True, timeout=1800)
assert r.returncode == 0, r.stderr[-500:]
print(f"{{all_listed('S')}} points, all listed")
''', setup=_resumable_store),
        _case(Case, "lock", "sweep store with a lock file of a dead pid: taken over", f'''
d = subprocess.Popen([sys.executable, "-c", "pass"]); d.wait()
os.makedirs("st")
json.dump({{"pid": d.pid, "host": socket.gethostname(), "since": "2026-01-01T00:00:00Z"}}, open(os.path.join("st", LOCK), "w"))
r = subprocess.run(G + {sweep}, capture_output=True, text=True, timeout=1800)
assert r.returncode == 0, r.stderr[-500:]
''', setup=_spec),
    ]
    return cases


# ------------------------------------------------------------------------------ full disk, resumed
_FULL_DISK = r'''
import numpy as np
from gaplab.core.regpath import RegPath
# a real small disk (a tmpfs in a mount namespace of its own): room for the solver state (which a
# path keeps reserved on its disk) and FRACTION of the breakpoints of the whole path
from gaplab.core import Solver
from gaplab.core.problems import load_problem
solver = Solver(load_problem("ocr-small").model, lam=1.0, max_passes=1)
state = sum(np.asarray(a).nbytes for a in solver.S) + 16 * solver.n
r = subprocess.run(G + SHORT + ["--store", "R"], capture_output=True, text=True, timeout=1800)
assert r.returncode == 0, r.stderr[-500:]
need = sum(os.path.getsize(os.path.join("R", f)) for f in os.listdir("R"))
size = (int(1.3 * (state + 65536)) + int(need * FRACTION)) // 4096 * 4096
os.makedirs("disk")
sh = ("mount -t tmpfs -o size=$0 tmpfs disk && "
      "$1 -m gaplab $2 --store disk/S 2> full.err; echo $? > full.rc; "
      "mount -o remount,size=1G disk && "          # space freed
      "$1 -m gaplab path --resume disk/S --quiet --no-test-error 2> resume.err; echo $? > resume.rc; "
      "cp -r disk/S S")
subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", sh, str(size), sys.executable, " ".join(SHORT)],
               check=True, timeout=3600)
rc, err = int(open("full.rc").read()), open("full.err").read()
assert "Traceback" not in err, err[-800:]
assert rc != 0, f"the disk of {size} bytes never filled: the path was written whole"
L = lines(err)
assert len(L) == 1 and "No space left" in L[0], ("full disk", rc, err[-500:])
rc2, err2 = int(open("resume.rc").read()), open("resume.err").read()
assert rc2 == 0, ("resume after space is freed", L[0], err2[-500:])
got, want = RegPath.open("S"), RegPath.open("R")
assert len(got) == len(want), (len(got), len(want))
assert np.array_equal(np.asarray(got.lams).view(np.uint64), np.asarray(want.lams).view(np.uint64)), "lams differ"
assert np.array_equal(np.asarray(got.W).view(np.uint64), np.asarray(want.W).view(np.uint64)), "W differs"
all_listed("S")
print(f"disk of {size} B (state {state} B + {FRACTION:.0%} of the points): {L[0][:90]}; resumed: {len(got)} points, "
      "bitwise equal")
'''


_NO_ROOM = r'''
# a disk too small for the solver state from the start: the points are kept, and neither the
# full-disk line nor --resume promises what cannot be done
r = subprocess.run(G + SHORT + ["--store", "R"], capture_output=True, text=True, timeout=1800)
assert r.returncode == 0, r.stderr[-500:]
need = sum(os.path.getsize(os.path.join("R", f)) for f in os.listdir("R"))
size = int(need * 0.5) // 4096 * 4096
os.makedirs("disk")
sh = ("mount -t tmpfs -o size=$0 tmpfs disk && $1 -m gaplab $2 --store disk/S 2> full.err; echo $? > full.rc; "
      "mount -o remount,size=1G disk && "
      "$1 -m gaplab path --resume disk/S --quiet --no-test-error 2> resume.err; echo $? > resume.rc")
subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", sh, str(size), sys.executable, " ".join(SHORT)],
               check=True, timeout=3600)
L, L2 = lines(open("full.err").read()), lines(open("resume.err").read())
assert int(open("full.rc").read()) == 1 and len(L) == 1 and "No space left" in L[0], L
assert "continue with: gaplab path --resume" not in L[0], "the line promises a resume: " + L[0]
assert int(open("resume.rc").read()) != 0 and len(L2) == 1 and "Traceback" not in L2[0], L2
print(L[0][:150] + " | then: " + L2[0][:100])
'''


def disk_cases(Case) -> list:
    cases = [_case(Case, "disk", f"path on a disk full after {frac:.0%} of its points, resumed once freed: equal to whole",
                   f"FRACTION, SHORT = {frac!r}, {SHORT!r}\n" + _FULL_DISK)
             for frac in (0.2, 0.5, 0.8)]
    cases.append(_case(Case, "disk", "path on a disk with no room for its solver state: says it cannot be resumed",
                       f"SHORT = {SHORT!r}\n" + _NO_ROOM))
    return cases


# ------------------------------------------------------------------------------ model arrays
ARRAY_FIELDS = {
    "ChainModel": ["stat_off", "lab_off", "gt", "feat_indptr", "feat_indices", "feat_values", "gram_off", "gram"],
    "MulticlassModel": ["stat_off", "lab_off", "gt", "mc_indptr", "mc_indices", "mc_values", "mc_loss"],
    "PythonModel": ["stat_off", "lab_off", "gt"],
    "SegmentationModel": ["stat_off", "lab_off", "gt", "edge_off", "eu", "ev", "xu", "xp", "lw", "loss_const"],
    "PoseModel": ["stat_off", "lab_off", "gt", "parent", "nchild", "depth", "order", "ntype", "anchors", "pair_off",
                  "def_off", "scale2", "img_id", "bump_pos", "bump_amp"],
}

_ARRAYS = r'''
import numpy as np
from gaplab.core import Solver
from gaplab.core.problems import warmup_plan
m = {j.model_class: j for j in warmup_plan()}[KIND].model
solver = Solver(m, lam=0.1, max_passes=2)
a = getattr(m.arrays, FIELD)
unlocked = []
b = a
while isinstance(b, np.ndarray):
    try:
        b.setflags(write=True); unlocked.append("setflags")
    except ValueError:
        pass
    try:
        b.flags.writeable = True; unlocked.append("flags")
    except ValueError:
        pass
    b = b.base
for value in (10 ** 7, -1, 0):          # an index far out, a negative one, zero
    try:
        a[len(a) // 2] = value; a[-1] = value; unlocked.append("written")
    except (ValueError, OverflowError, TypeError):
        pass
try:
    object.__setattr__(m.arrays, FIELD, np.zeros(3))
    unlocked.append("replaced")
except (AttributeError, TypeError):
    pass
try:
    res = Solver(m, lam=0.1, max_passes=2).run()   # a solver built after the change
except (ValueError, TypeError) as exc:
    print("refused:", str(exc)[:200])
res = solver.run()                                 # the solver built before it
print("unlocked:", sorted(set(unlocked)) or "no", "passes", res.effective_passes)
'''


def array_cases(Case) -> list:
    cases = []
    for kind, fields in ARRAY_FIELDS.items():
        for f in fields:
            cases.append(Case("arrays", f"{kind}.arrays.{f} unlocked and written after Solver(...)",
                              code=f"KIND, FIELD = {kind!r}, {f!r}\n" + _ARRAYS, expect="succeed", timeout=600))
    return cases


# ------------------------------------------------------------------------------ Ctrl-C at once
def early_sigint_cases(Case, train_base) -> list:
    cases = []
    for t in (0.01, 0.02, 0.03, 0.04, 0.05):
        cases.append(Case("early-int", f"train, SIGINT at {t} s (python -m gaplab)", argv=train_base,
                          expect="interrupted", signal_at=t, timeout=300))
        cases.append(Case("early-int", f"train, SIGINT at {t} s (the gaplab console script)", argv=train_base,
                          expect="interrupted", signal_at=t, timeout=300, env={"GAPLAB_AUDIT_SCRIPT": "1"}))
    cases.append(Case("early-int", "train started with SIGINT ignored (nohup): SIGINTs ignored, exit 0",
                      code=_IGNORED, expect="succeed", timeout=300))
    return cases


_IGNORED = r'''
import json, signal, subprocess, sys, time
p = subprocess.Popen([sys.executable, "-m", "gaplab", "train", "--dataset", "toy", "--option", "n=10", "--max-passes",
                      "3", "--quiet", "--out", "r.json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
sent = 0
while p.poll() is None:
    p.send_signal(signal.SIGINT); sent += 1; time.sleep(0.02)
_, err = p.communicate()
assert p.returncode == 0, f"exit {p.returncode} after {sent} ignored SIGINTs: {err[-300:]}"
assert json.load(open("r.json"))["status"]
print(f"{sent} SIGINTs ignored, exit 0")
'''


# ------------------------------------------------------------------------------ one-line errors
_FIT_EMPTY = r'''
import warnings
warnings.simplefilter("error")
from gaplab.core.estimator import SSVM
try:
    SSVM().fit([], [])
except (ValueError, TypeError) as exc:
    msg = str(exc)
    assert "\n" not in msg and "max()" not in msg and ("X" in msg or "empty" in msg), msg
else:
    raise AssertionError("fit([], []) was accepted")
'''

_FIT_COMPLEX = r'''
import warnings
import numpy as np
warnings.simplefilter("error")
from gaplab.core.estimator import SSVM
rng = np.random.default_rng(0)
X = [rng.normal(size=(4, 3)).astype(np.complex128) for _ in range(5)]
Y = [rng.integers(0, 2, size=4) for _ in range(5)]
try:
    SSVM(max_passes=1).fit(X, Y)
except (ValueError, TypeError) as exc:
    msg = str(exc)
    assert "\n" not in msg and "complex" in msg and "X" in msg, msg
else:
    raise AssertionError("complex features were trained on")
'''

_READ_ONLY = r'''
import os, subprocess, sys
os.makedirs("ro", exist_ok=True)
for store in (WHERE,):
    cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c",
           'mount -t tmpfs -o ro tmpfs ro && exec "$@"', "sh", sys.executable, "-m", "gaplab", "path",
           "--dataset", "ocr-small", "--store", store, "--quiet", "--no-test-error"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert "Traceback" not in r.stderr, r.stderr[-800:]
    L = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert r.returncode != 0 and len(L) == 1, (r.returncode, r.stderr[-500:])
    assert "Read-only" in L[0] and store in L[0] and ".gaplab-store-check" not in L[0], L[0]
    print(L[0])
'''


def error_cases(Case) -> list:
    return [
        Case("errors", "SSVM().fit([], []) is one line naming X and Y", code=_FIT_EMPTY, expect="succeed", timeout=300),
        Case("errors", "SSVM().fit(complex features) is refused naming the dtype", code=_FIT_COMPLEX,
             expect="succeed", timeout=300),
        Case("errors", "path --store on a read-only folder names the store", code="WHERE = 'ro'\n" + _READ_ONLY,
             expect="succeed", timeout=600),
        Case("errors", "path --store inside a read-only folder names the store",
             code="WHERE = 'ro/new'\n" + _READ_ONLY, expect="succeed", timeout=600),
    ]


# ------------------------------------------------------------------------------ the browser's values
BROWSER_WHAT = {
    "key counts step:1000000": "counts",
    "URL ?dataset=conll2000&steps=200000": "url",
    "URL ?steps=200001 (over the bound)": "url-over",
    "Open store: a FIFO": "fifo",
    "Open store: /dev/zero": "/dev/zero",
    "Open store: /dev/stdin": "/dev/stdin",
    "student Open store outside the roots: same error, existing or not": "outside",
}


def browser_cases(Case) -> list:
    client = os.path.join(HERE, "reliability_app_client.py")
    return [Case("browser", f"app --classroom: {name}; the server keeps answering",
                 code=f"import runpy, sys\nsys.argv = [{client!r}, {what!r}]\nrunpy.run_path({client!r}, run_name='__main__')\n",
                 expect="succeed", timeout=600)
            for name, what in BROWSER_WHAT.items()]


def all_cases(Case, train_base) -> list:
    return (lock_cases(Case) + disk_cases(Case) + array_cases(Case) + early_sigint_cases(Case, train_base)
            + error_cases(Case) + browser_cases(Case))
