"""Seconds per effective pass of block steps on horse-small (target: <= 0.1 s), without
exact gap passes (gap_check = inf): min and median over 6 timed passes after 5 warm passes, for
BCFW, BCPFW and BCPFW + cache at λ = 10, and one pass of 147 graph-cut max-oracle calls alone.

Usage: GAPLAB_DATA=DIR python benchmarks/horse_step_time.py
Writes benchmarks/results/horse_step_time.json.
"""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import numpy as np

from gaplab.core import Solver
from gaplab.core.problems import load_problem, model_box


def main():
    p = load_problem("horse-small")
    m = p.model
    out = {"lam": 10.0, "runs": []}
    for step, cache in (("fw", False), ("pairwise", False), ("pairwise", True)):
        s = Solver(m, lam=10.0, step=step, sampling="gap", cache={"enabled": cache}, gap_check=math.inf,
                   max_passes=1e9, **model_box(m))
        s.steps(5 * m.n)
        ts = []
        for _ in range(6):
            c0 = s.oracle_calls
            t = time.perf_counter()
            s.steps(m.n)
            ts.append((time.perf_counter() - t) / max((s.oracle_calls - c0) / m.n, 1e-9))
        out["runs"].append({"step": step, "cache": cache, "s_per_pass_min": min(ts),
                            "s_per_pass_median": float(np.median(ts))})
        print(out["runs"][-1], flush=True)
    w = s.w
    o = []
    for _ in range(6):
        t = time.perf_counter()
        for i in range(m.n):
            m.max_oracle(i, w)
        o.append(time.perf_counter() - t)
    out["oracle_pass_s_min"], out["oracle_pass_s_median"] = min(o), float(np.median(o))
    out["load_average"] = list(os.getloadavg())
    print(out)
    path = Path(__file__).resolve().parent / "results" / "horse_step_time.json"
    from gaplab.core.atomic import write_text_atomic
    write_text_atomic(path, json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
