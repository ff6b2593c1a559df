"""A/B cost of one block step between two checkouts, in thread CPU time (robust to other load on
the machine, unlike wall time), interleaved in one run.

Each child loads OCR-large, runs ``--warm`` passes of the configuration (so a cached run has hit
its steady state after exact gap checks), then times ``kernels.run_steps`` for ``--steps`` steps
on fresh copies of that state (``time.thread_time``; median of ``--reps``). Both checkouts run the
same trajectory (their traces are bitwise equal), so the same steps are timed.

    python benchmarks/ab_step.py --old ROOT_OLD --new ROOT_NEW [--rounds 3] [--out ab_step.json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import describe_root, run_child, write_json  # noqa: E402

CHILD = r"""
import time, json, numpy as np
from gaplab.core import ChainModel, Solver, load_ocr
from gaplab.core import kernels as kr
from gaplab.core.state import copy_state
train, _ = load_ocr("large")
model = ChainModel(train)
s = Solver(model, lam=0.001, sampling="{sampling}", step="{step}", cache={{"enabled": {cache}}}, gap_check=5,
           max_passes=1e9, seed=0)
s.run(max_passes={warm}, final_gap_check=False)
s._grow_if_needed()
times, hits = [], []
for r in range({reps}):
    S = copy_state(s.S)
    h0 = int(S.counters[kr.C_HIT])
    t = time.thread_time()
    done = kr.run_steps(s._M, S, s._ci, s._cf, {steps})
    times.append((time.thread_time() - t) / done * 1e6)
    hits.append(int(S.counters[kr.C_HIT]) - h0)
print(json.dumps({{"us_per_step": float(np.median(times)), "all_us": times, "hits": hits[0], "steps": done}}))
"""

CONFIGS = {
    "bcfw_uniform": dict(sampling="uniform", step="fw", cache=False),
    "bcfw_gap": dict(sampling="gap", step="fw", cache=False),
    "bcpfw_gap_cache": dict(sampling="gap", step="pairwise", cache=True),
    "combined_gap_cache": dict(sampling="gap", step="combined", cache=True),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--warm", type=float, default=12)
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="comma-separated subset of " + ", ".join(CONFIGS))
    ap.add_argument("--out", default="ab_step.json")
    a = ap.parse_args(argv)
    roots = {"old": a.old, "new": a.new}
    configs = {c: CONFIGS[c] for c in a.configs.split(",")}
    res = {(k, c): [] for k in roots for c in configs}
    for rnd in range(a.rounds):
        for c, cfg in configs.items():
            for k in (("old", "new") if rnd % 2 == 0 else ("new", "old")):
                r = run_child(CHILD.format(warm=a.warm, reps=a.reps, steps=a.steps, **cfg), {"PYTHONPATH": roots[k]})
                res[(k, c)].append(r)
                print(rnd, k, c, round(r["us_per_step"], 3), r["hits"], file=sys.stderr, flush=True)
    out = {"roots": {k: describe_root(r) for k, r in roots.items()},
           "dataset": "ocr-large", "lam": 0.001, "warm_passes": a.warm, "steps": a.steps, "rounds": a.rounds,
           "clock": "time.thread_time (CPU time of the stepping thread)", "configs": {}}
    for c in configs:
        o = float(np.median([r["us_per_step"] for r in res[("old", c)]]))
        n = float(np.median([r["us_per_step"] for r in res[("new", c)]]))
        out["configs"][c] = {"old_us_per_step": o, "new_us_per_step": n, "new_over_old": n / o,
                             "same_hits": [r["hits"] for r in res[("old", c)]] == [r["hits"] for r in res[("new", c)]],
                             "hits_per_timed_run": res[("new", c)][0]["hits"]}
    path = write_json(a.out, out)
    print(json.dumps(out, indent=1))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
