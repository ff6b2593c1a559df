"""Where the cache's gain goes (Paper: Sec. 3.3): exact gap checks scheduled every 4n
block steps (the Solver's rule: ``gap_check`` counts passes of block steps) against every 4n
oracle calls of block steps (cache hits not counted), driven from outside through the public
Solver API (``gap_check = inf``, ``Solver.steps(n)`` one pass at a time, ``Solver.gap_check()``
when due; the block-step schedule reproduces bench_pose_cache.py's runs call for call). LSP pose,
first 100 training poses, T = 4, λ = 0.1, the model's box, gap sampling, seed 0; CPU time (run
with NUMBA_NUM_THREADS=1) to exact duality gap <= 0.1, oracle calls (gap passes included),
block steps, gap checks. Without the cache both schedules are the same run.

Run from the repository root: NUMBA_NUM_THREADS=1 python benchmarks/bench_pose_schedule.py G
(prints one JSON line per run, then the whole result). Needs joints.mat ($GAPLAB_DATA).
"""
import json
import sys
import time

import numpy as np
from gaplab.core import Solver
from gaplab.core.datasets.lsp import load_lsp
from gaplab.core.models.pose import PoseModel
G = int(sys.argv[1])
n, target, every = 100, 0.1, 4
tr, te = load_lsp(G, n_types=4, seed=0, n_train=n)
model = PoseModel(tr)
lb, ub = model.bounds()
out = {"G": G, "n": n, "runs": []}
for step in ("fw", "pairwise"):
    for cache in (False, True):
        for sched in ("block steps", "oracle calls"):
            if not cache and sched == "oracle calls":
                continue  # without the cache both schedules are the same
            s = Solver(model, lam=0.1, lb=lb, ub=ub, step=step, sampling="gap", cache={"enabled": cache},
                       gap_check=float("inf"), max_passes=10**6, seed=0)
            c0 = time.process_time()
            last_calls, steps_since, checks, gap = 0, 0, 0, np.inf
            while s.iteration < 400 * n:
                s.steps(n)
                steps_since += n
                calls_since = s.oracle_calls - last_calls
                due = steps_since >= every * n if sched == "block steps" else calls_since >= every * n
                if due:
                    gap = float(s.gap_check().gap)
                    checks += 1
                    last_calls, steps_since = s.oracle_calls, 0
                    if gap <= target:
                        break
            cpu = time.process_time() - c0
            out["runs"].append(dict(method=("BCFW" if step == "fw" else "BCPFW") + (" + cache" if cache else ""),
                                    schedule=sched, cpu_to_gap_s=cpu, oracle_calls=s.oracle_calls, steps=s.iteration,
                                    gap_checks=checks, gap=gap))
            print(json.dumps(out["runs"][-1]), flush=True)
print(json.dumps(out))
