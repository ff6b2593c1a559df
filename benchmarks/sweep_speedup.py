"""Speed-up of ``gaplab sweep`` with 1 vs 2 LocalCluster workers (and in-process serial) on a
small sweep: the 8 combinations of benchmarks/specs/ocr_small.toml at λ = 0.01, 2 seeds,
60 passes on OCR-small (16 runs). Each configuration writes a fresh store; the wall time
includes starting the cluster. Configurations are interleaved over ``--repeats`` rounds.

    python benchmarks/sweep_speedup.py --repeats 2      # JSON to benchmarks/out/sweep_speedup.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_json  # noqa: E402

SPEC = Path(__file__).resolve().parent / "specs" / "ocr_small.toml"


def small_spec(passes, seeds):
    d = tomllib.loads(SPEC.read_text())
    d.update(name="speedup", lams=[0.01], seeds=seeds)
    d.pop("budgets")
    d["budget"] = {"max_passes": passes, "gap_check": 10}
    return d


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--passes", type=float, default=60)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--no-serial", action="store_true", help="only 1 and 2 workers")
    args = ap.parse_args(argv)
    from gaplab.core.sweep import Store, run_sweep
    spec = small_spec(args.passes, args.seeds)
    results = {"serial (in process)": [], "1 worker": [], "2 workers": []}
    runs_s = {k: [] for k in results}
    configs = [("serial (in process)", 0), ("1 worker", 1), ("2 workers", 2)]
    if args.no_serial:
        configs = configs[1:]
        del results["serial (in process)"], runs_s["serial (in process)"]
    for r in range(args.repeats):
        for label, workers in (configs if r % 2 == 0 else configs[::-1]):  # alternate the order
            d = Path(tempfile.mkdtemp(prefix="gaplab-speedup-"))
            try:
                t0 = time.perf_counter()
                rep = run_sweep(spec, d / "store", workers=workers)
                wall = time.perf_counter() - t0
                assert rep.done == rep.total and rep.failed == 0
                st = Store(d / "store")
                runs_s[label].append(sum(e["summary"]["wall_time_s"] for e in st.manifest["runs"].values()))
            finally:
                shutil.rmtree(d, ignore_errors=True)
            results[label].append(wall)
            print(f"{label:>20}: {wall:6.1f} s ({rep.total} runs)", file=sys.stderr, flush=True)
    import statistics
    best = {k: min(v) for k, v in results.items()}
    median = {k: statistics.median(v) for k, v in results.items()}
    out = {"spec": "ocr_small.toml methods, lam 0.01", "runs": rep.total, "passes": args.passes,
           "seeds": args.seeds, "cpu_count": os.cpu_count(), "machine": platform.platform(),
           "wall_s": results, "best_wall_s": best, "median_wall_s": median, "solver_s_sum": runs_s,
           "speedup_2_vs_1_workers_best": best["1 worker"] / best["2 workers"],
           "speedup_2_vs_1_workers_median": median["1 worker"] / median["2 workers"],
           "load_avg_at_end": os.getloadavg()}
    path = write_json("sweep_speedup.json", out)
    print(json.dumps(out, indent=1))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
