"""Where the time of BCPFW + gap sampling + cache goes on OCR-large.

The cached run's seconds per effective pass depend on how many cache hits it takes per oracle
call, and that number grows with the run. This script separates the two costs: it runs the
cached solver to several pass counts, times windows of block steps from each saved state
(``kernels.run_steps`` on a copy, median of --repeats), and fits

    window seconds = (µs per cache-hit step) · hits + (µs per oracle step) · oracle steps

by least squares over all windows. It also reports, per phase of a --passes run, how the
oracle calls split into block steps and exact gap passes (``gap_check`` counts block steps,
hits included, as in the authors' code), so that the per-pass time can be rebuilt from parts.

Usage: python benchmarks/bench_step_cost.py [--repeats 5] [--passes 40] [--lam 0.001]
Writes benchmarks/out/bench_step_cost.json.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import run_child, write_json  # noqa: E402

CHILD = r"""
import time, json, numpy as np
from gaplab.core import ChainModel, Solver, load_ocr
from gaplab.core import kernels as kr
from gaplab.core.state import copy_state
train, _ = load_ocr("large")
model = ChainModel(train)
s = Solver(model, lam={lam}, sampling="gap", step="pairwise", cache={{"enabled": True}}, gap_check=10,
           max_passes=1e9, seed={seed})
windows = []
for P in (11.5, 15, 20, 25, 30, 38):
    if P > {passes}:
        break
    s.run(max_passes=P, final_gap_check=False)
    base = copy_state(s.S)
    for N in (3000, 30000):
        ts = []
        for _ in range({repeats}):
            S = copy_state(base)
            c0 = S.counters.copy()
            t0 = time.perf_counter()
            kr.run_steps(s._M, S, s._ci, s._cf, N)
            ts.append(time.perf_counter() - t0)
        windows.append({{"at_passes": P, "steps": N, "hits": int(S.counters[kr.C_HIT] - c0[kr.C_HIT]),
                         "oracle_steps": int(S.counters[kr.C_ORACLE] - c0[kr.C_ORACLE]),
                         "median_s": float(np.median(ts))}})
A = np.array([[w["hits"], w["oracle_steps"]] for w in windows], dtype=float)
y = np.array([w["median_s"] for w in windows])
coef, *_ = np.linalg.lstsq(A, y, rcond=None)
resid = float(np.sqrt(np.mean((A @ coef - y) ** 2)) / np.mean(y))
r = s.run(max_passes={passes}, final_gap_check=False)
checks = [rec for rec in r.trace if rec["kind"] == "gap_check"]
first = checks[0]
after_oracle = r.oracle_calls - first["oracle_calls"]
after_gap_pass_calls = model.n * (len(checks) - 1)
t = time.perf_counter()
for _ in range(3):
    s.exact_gap(count=False)
exact_pass_s = (time.perf_counter() - t) / 3
print(json.dumps({{"us_per_hit_step": coef[0] * 1e6, "us_per_oracle_step": coef[1] * 1e6,
                   "fit_relative_rms": resid, "windows": windows, "n": model.n,
                   "exact_gap_pass_s": exact_pass_s,
                   "after_first_gap_check": {{
                       "oracle_calls": int(after_oracle),
                       "of_which_exact_gap_pass_calls": int(after_gap_pass_calls),
                       "oracle_steps": int(after_oracle - after_gap_pass_calls),
                       "cache_hits": int(r.cache_hits - first["cache_hits"]),
                       "hits_per_oracle_step": (r.cache_hits - first["cache_hits"]) / max(after_oracle - after_gap_pass_calls, 1)}}}}))
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--passes", type=float, default=40)
    ap.add_argument("--lam", type=float, default=0.001)
    ap.add_argument("--seeds", type=int, default=1, help="separate processes (seeds 0..N-1)")
    args = ap.parse_args(argv)
    import numpy as np

    runs = [run_child(CHILD.format(lam=args.lam, passes=args.passes, seed=seed, repeats=args.repeats))
            for seed in range(args.seeds)]
    for r in runs:  # the per-effective-pass time of the phase after the first gap check, rebuilt from parts
        a = r["after_first_gap_check"]
        per_pass = (a["oracle_steps"] * r["us_per_oracle_step"] * 1e-6 + a["cache_hits"] * r["us_per_hit_step"] * 1e-6
                    + a["of_which_exact_gap_pass_calls"] / r["n"] * r["exact_gap_pass_s"]) / (a["oracle_calls"] / r["n"])
        a["rebuilt_s_per_effective_pass"] = per_pass
        a["share_hits"] = a["cache_hits"] * r["us_per_hit_step"] * 1e-6 / (per_pass * a["oracle_calls"] / r["n"])
    out = {"dataset": "ocr-large", "lam": args.lam, "passes": args.passes, "repeats": args.repeats,
           "median_us_per_hit_step": float(np.median([r["us_per_hit_step"] for r in runs])),
           "median_us_per_oracle_step": float(np.median([r["us_per_oracle_step"] for r in runs])),
           "runs": runs}
    path = write_json("bench_step_cost.json", out)
    print(json.dumps({k: v for k, v in out.items() if k != "runs"}
                     | {"after_first_gap_check": [r["after_first_gap_check"] for r in runs]}, indent=1))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
