"""A/B cold compile of one model kind between two checkouts, interleaved.

Each round runs, for each checkout (alternating which goes first), the command a user's first
run pays the compile for,

    python -m gaplab train --dataset ocr-small --max-passes 1 --quiet

in a fresh interpreter with an empty ``NUMBA_CACHE_DIR`` (so every kernel of the chain kind is
compiled), and records its wall time and its CPU time (user + sys of the child, which is less
sensitive than the wall time to other jobs on a shared machine), with the 1-minute load average
before and after.

    python benchmarks/ab_compile.py --old ROOT_OLD --new ROOT_NEW [--rounds 2] [--out ab_compile.json]

A package root is a directory whose ``gaplab`` entry is the checkout (a symlink is fine).
Writes the JSON to benchmarks/out/.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import describe_root, write_json  # noqa: E402

COMMAND = ["-m", "gaplab", "train", "--dataset", "ocr-small", "--max-passes", "1", "--quiet"]


def cold_run(root: str) -> dict:
    """One cold-cache run of :data:`COMMAND` with ``root`` first on the path."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as cwd:
        env = dict(os.environ, PYTHONPATH=root, NUMBA_CACHE_DIR=cache)
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, *COMMAND], cwd=cwd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"ab_compile: {' '.join(COMMAND)} failed with {root}: {proc.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "load_1min_before": load0,
            "load_1min_after": os.getloadavg()[0]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default="ab_compile.json", help="file name under benchmarks/out/")
    a = ap.parse_args(argv)
    roots = {"old": a.old, "new": a.new}
    runs = []
    for rnd in range(a.rounds):
        for k in (("old", "new") if rnd % 2 == 0 else ("new", "old")):
            r = dict(round=rnd, checkout=k, **cold_run(roots[k]))
            runs.append(r)
            print(rnd, k, r["wall_s"], r["cpu_s"], file=sys.stderr, flush=True)
    summary = {k: {"median_wall_s": float(np.median([r["wall_s"] for r in runs if r["checkout"] == k])),
                   "median_cpu_s": float(np.median([r["cpu_s"] for r in runs if r["checkout"] == k]))}
               for k in roots}
    out = {"what": "cold compile of one model kind (the OCR-small chain, default settings), interleaved",
           "command": "python " + " ".join(COMMAND), "roots": {k: describe_root(r) for k, r in roots.items()},
           "summary": summary,
           "new_over_old_cpu": summary["new"]["median_cpu_s"] / summary["old"]["median_cpu_s"],
           "new_over_old_wall": summary["new"]["median_wall_s"] / summary["old"]["median_wall_s"],
           "runs": runs}
    path = write_json(a.out, out)
    print(json.dumps(out, indent=1))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
