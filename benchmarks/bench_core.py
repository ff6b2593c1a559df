"""Speed and memory of the solver core on OCR-large.

Prints JSON (medians over repeated runs) and writes benchmarks/out/bench_core.json:
  - numba compile time (cold cache, separate),
  - seconds per effective pass: BCFW uniform, BCFW gap sampling, BCPFW + gap + cache,
  - microseconds per max-oracle call (Viterbi + scores, from exact gap passes),
  - peak RSS of each configuration (each in its own process).

The exact gap passes run on numba's threads (``--threads``, default: numba's default, one per
core; the solver's steps are sequential whatever the setting, and the results do not depend on it).

Usage: python benchmarks/bench_core.py [--repeats 5] [--passes 20] [--lam 0.001] [--threads N]
                                       [--out bench_core.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import run_child, write_json  # noqa: E402

CHILD = r"""
import time, json, numpy as np
from gaplab.core import ChainModel, Solver, load_ocr
train, _ = load_ocr("large")
model = ChainModel(train)
s = Solver(model, lam={lam}, sampling="{sampling}", step="{step}", cache={{"enabled": {cache}, "size": {cache_size}}},
           gap_check=10, max_passes=1e9, seed={seed})
s.steps(10)  # kernels loaded from the numba cache
t0 = s.wall_time
r = s.run(max_passes={passes}, final_gap_check=False)
dt = s.wall_time - t0
passes = s.effective_passes
# two phases: before the first exact gap pass no cache hit is possible (g^(k0) = +inf, Alg. 5)
first = next(rec for rec in r.trace if rec["kind"] == "gap_check")
ph1_t, ph1_p = first["wall_time_s"] - t0, first["effective_passes"]
ph2_t, ph2_p = s.wall_time - first["wall_time_s"], passes - first["effective_passes"]
ph2_oracle_steps = (r.oracle_calls - first["oracle_calls"]) - model.n * sum(
    1 for rec in r.trace if rec["kind"] == "gap_check" and rec["iteration"] > first["iteration"])
# oracle cost: exact gap passes (n oracle calls each) on the final iterate
t = time.perf_counter()
for _ in range(3):
    s.exact_gap(count=False)
oracle_us = (time.perf_counter() - t) / (3 * model.n) * 1e6
import numba
print(json.dumps({{"numba_threads": numba.get_num_threads(), "s_per_effective_pass": dt / passes,
                  "effective_passes": passes, "steps": s.iteration,
                  "cache_hits": r.cache_hits, "oracle_us": oracle_us, "state_mb": s.memory_bytes() / 2**20,
                  "n": model.n, "d": model.d,
                  "phase_until_first_gap_check": {{"s_per_effective_pass": ph1_t / ph1_p, "effective_passes": ph1_p}},
                  "phase_after_first_gap_check": {{"s_per_effective_pass": ph2_t / ph2_p, "effective_passes": ph2_p,
                                                  "cache_hits_per_step_oracle_call": (r.cache_hits - first["cache_hits"]) / max(ph2_oracle_steps, 1)}}}}))
"""

COMPILE = r"""
import time, json
t = time.perf_counter()
from gaplab.core.warmup import warmup
secs = warmup()
print(json.dumps({"warmup_s": secs, "import_and_warmup_s": time.perf_counter() - t}))
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--passes", type=float, default=20)
    ap.add_argument("--lam", type=float, default=0.001)
    ap.add_argument("--cache-size", type=int, default=100, help="CacheConfig.size of the cached configuration")
    ap.add_argument("--threads", type=int, default=None, help="NUMBA_NUM_THREADS of the runs")
    ap.add_argument("--out", default="bench_core.json", help="file name under benchmarks/out/")
    args = ap.parse_args(argv)
    env = {"NUMBA_NUM_THREADS": str(args.threads)} if args.threads else None
    import numpy as np

    with tempfile.TemporaryDirectory() as cache_dir:
        cold = run_child(COMPILE, {"NUMBA_CACHE_DIR": cache_dir})
    warm = run_child(COMPILE)
    configs = {
        "bcfw_uniform": dict(sampling="uniform", step="fw", cache=False),
        "bcfw_gap": dict(sampling="gap", step="fw", cache=False),
        "bcpfw_gap_cache": dict(sampling="gap", step="pairwise", cache=True),
    }
    # interleaved (seed-major), so that a drift of the machine's speed during the benchmark affects
    # every configuration alike
    all_runs = {name: [] for name in configs}
    for seed in range(args.repeats):
        for name, cfg in configs.items():
            all_runs[name].append(run_child(CHILD.format(lam=args.lam, passes=args.passes, seed=seed, cache_size=args.cache_size, **cfg), env))
    results = {}
    for name, runs in all_runs.items():
        results[name] = {
            "median_s_per_effective_pass": float(np.median([r["s_per_effective_pass"] for r in runs])),
            "min_s_per_effective_pass": float(np.min([r["s_per_effective_pass"] for r in runs])),
            "max_s_per_effective_pass": float(np.max([r["s_per_effective_pass"] for r in runs])),
            "median_us_per_oracle_call": float(np.median([r["oracle_us"] for r in runs])),
            "median_peak_rss_mb": float(np.median([r["peak_rss_mb"] for r in runs])),
            "max_peak_rss_mb": float(np.max([r["peak_rss_mb"] for r in runs])),
            "median_state_mb": float(np.median([r["state_mb"] for r in runs])),
            "median_cache_hits": float(np.median([r["cache_hits"] for r in runs])),
            "median_s_per_effective_pass_until_first_gap_check": float(np.median(
                [r["phase_until_first_gap_check"]["s_per_effective_pass"] for r in runs])),
            "median_s_per_effective_pass_after_first_gap_check": float(np.median(
                [r["phase_after_first_gap_check"]["s_per_effective_pass"] for r in runs])),
            "median_cache_hits_per_step_oracle_call_after_first_gap_check": float(np.median(
                [r["phase_after_first_gap_check"]["cache_hits_per_step_oracle_call"] for r in runs])),
            "runs": runs,
        }
    ratio = results["bcpfw_gap_cache"]["median_s_per_effective_pass"] / results["bcfw_uniform"]["median_s_per_effective_pass"]
    out = {
        "dataset": "ocr-large", "lam": args.lam, "repeats": args.repeats, "passes_per_run": args.passes,
        "numba_threads": results["bcfw_uniform"]["runs"][0]["numba_threads"],
        "compile": {"cold_cache_warmup_s": cold["warmup_s"], "warm_cache_warmup_s": warm["warmup_s"]},
        "configs": results,
        "bcpfw_cache_over_bcfw_pass_time": ratio,
        "targets": {"s_per_effective_pass": 0.25, "peak_rss_mb": 1536, "bcpfw_cache_over_bcfw": 2.0},
        "meets_targets": bool(
            all(r["median_s_per_effective_pass"] <= 0.25 and r["max_peak_rss_mb"] <= 1536 for r in results.values())
            and ratio <= 2.0),
    }
    path = write_json(args.out, out)
    summary = {k: v for k, v in out.items() if k != "configs"}
    summary["configs"] = {k: {kk: vv for kk, vv in v.items() if kk != "runs"} for k, v in results.items()}
    print(json.dumps(summary, indent=1))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
