"""The paper's Fig. 4 on horse-small (issue 17): the ε-approximate regularization path (ε = 0.1,
κ = 0.9) against grid search with the keep-primal warm start (Proposition 1) over 2^hi … 2^lo,
cumulative effective passes and seconds to reach each λ. The box w_P >= 0 (App. H) comes from
the model's bounds(); the path supports it because its finite bounds are 0
(see gaplab.core.regpath.check_path_box).

Usage: GAPLAB_DATA=/work/shared/data python benchmarks/horse_path.py [--lam-min 1] [--budget 300]
Writes benchmarks/results/horse_path.json and horse_path.png.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

from gaplab.core.problems import load_problem
from gaplab.core.regpath import grid_search, regularization_path

OUT = Path(__file__).resolve().parent / "results"


def rows(path):
    return [{"lam": float(r["lam"]), "cum_passes": float(r["cum_passes"]), "cum_time_s": float(r["cum_time_s"]),
             "gap": float(r.get("exact_gap", r.get("gap", math.nan))), "status": r.get("status", ""),
             "test_error": float(r.get("test_error", math.nan))} for r in path.rows()]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--lam-min", type=float, default=1.0)
    ap.add_argument("--hi", type=int, default=15)
    ap.add_argument("--budget", type=float, default=300.0, help="seconds per method")
    ap.add_argument("--step", default="pairwise")
    args = ap.parse_args(argv)
    p = load_problem("horse-small")
    model, test = p.model, p.test
    scfg = {"sampling": "gap", "step": args.step}
    out = {"lam_min": args.lam_min, "solver": scfg, "budget_s": args.budget}
    t = time.perf_counter()
    path = regularization_path(model, eps=0.1, kappa=0.9, lam_min=args.lam_min, solver_config=scfg,
                               time_limit=args.budget, test_data=test)
    out["eps_path"] = {"rows": rows(path), "wall_s": time.perf_counter() - t, "end": path.end_reason}
    print("path", len(path), path.total_passes, path.total_time_s, path.end_reason, flush=True)
    lo = int(math.floor(math.log2(args.lam_min)))
    lams = 2.0 ** np.arange(args.hi, lo - 1, -1)
    t = time.perf_counter()
    grid = grid_search(model, lams, eps=0.1, warm_start="primal", solver_config=scfg, time_limit=args.budget,
                       test_data=test)
    out["grid_primal"] = {"rows": rows(grid), "wall_s": time.perf_counter() - t}
    print("grid", len(grid), grid.total_passes, grid.total_time_s, flush=True)
    out["load_average"] = list(os.getloadavg())
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    OUT.mkdir(exist_ok=True)
    (OUT / "horse_path.json").write_text(json.dumps(out, indent=1))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    for name, key in (("ε-path (ε = 0.1)", "eps_path"), ("grid, keep primal", "grid_primal")):
        r = out[key]["rows"]
        lam = [x["lam"] for x in r]
        ax[0].step(lam, [x["cum_passes"] for x in r], where="post", label=name)
        ax[1].step(lam, [x["cum_time_s"] for x in r], where="post", label=name)
    for a, yl in zip(ax, ("cumulative effective passes", "cumulative time (s)")):
        a.set_xscale("log")
        a.invert_xaxis()
        a.set_xlabel("λ")
        a.set_ylabel(yl)
        a.legend()
    fig.suptitle("horse-small: regularization path vs grid search (Paper: Fig. 4)")
    fig.tight_layout()
    fig.savefig(OUT / "horse_path.png", dpi=80)
    return 0


if __name__ == "__main__":
    sys.exit(main())
