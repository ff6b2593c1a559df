"""CoNLL-2000 at scale: seconds per effective pass and peak RSS for BCFW + gap
sampling and BCPFW + gap sampling + cache at λ = 1/n (medians over repeated runs, each in a
fresh process), and test chunk F1 (conlleval) over a small λ grid.

Usage: python benchmarks/conll_bench.py [--data-home DIR] [--repeats 3] [--passes 10]
                                         [--grid-passes 40]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import run_child, write_json  # noqa: E402

SPEED = r"""
import json
from gaplab.core import ChainModel, Solver
from gaplab.core.datasets.conll import load_conll2000
train, _ = load_conll2000(data_home={data_home!r})
model = ChainModel(train)
s = Solver(model, lam=1.0 / model.n, sampling="gap", step="{step}", cache={{"enabled": {cache}}},
           gap_check=10, max_passes=1e9, seed={seed})
s.steps(10)
t0 = s.wall_time
r = s.run(max_passes={passes}, final_gap_check=False)
print(json.dumps({{"s_per_effective_pass": (s.wall_time - t0) / s.effective_passes, "n": model.n, "d": model.d,
                  "n_attributes": train.n_features, "effective_passes": s.effective_passes,
                  "cache_hits": r.cache_hits, "state_mb": s.memory_bytes() / 2**20}}))
"""

GRID = r"""
import json
from gaplab.core import ChainModel, Solver
from gaplab.core.datasets.conll import conlleval, load_conll2000
train, test = load_conll2000(data_home={data_home!r})
model = ChainModel(train)
out = []
for lam in [0.01, 1.0 / model.n, 0.0001]:
    s = Solver(model, lam=lam, sampling="gap", step="pairwise", cache={{"enabled": True}}, gap_check=10,
               max_passes={passes}, gap_threshold=1e-4)
    r = s.run()
    pred = model.predict(r.w, test)
    gold = test.extras.get("chunks")
    names = test.label_names
    seqs_p, seqs_g = [], []
    for i in range(test.n):
        sl = test.tokens(i)
        seqs_p.append([names[k] for k in pred[sl]])
        seqs_g.append(list(gold[i]) if gold is not None else [names[k] for k in test.labels[sl]])
    ev = conlleval(seqs_g, seqs_p)
    out.append({{"lam": lam, "exact_gap": r.exact_gap, "primal": r.primal, "effective_passes": r.effective_passes,
                "time_s": r.wall_time_s, "f1": ev["f1"], "precision": ev["precision"], "recall": ev["recall"],
                "token_accuracy": ev.get("token_accuracy", ev.get("accuracy"))}})
print(json.dumps({{"grid": out}}))
"""


def main(argv=None):
    import os

    import numpy as np
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-home", default=os.environ.get("GAPLAB_DATA"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--passes", type=float, default=10)
    ap.add_argument("--grid-passes", type=float, default=40)
    args = ap.parse_args(argv)
    configs = {"bcfw_gap": ("fw", False), "bcpfw_gap_cache": ("pairwise", True)}
    res = {}
    for name, (step, cache) in configs.items():
        runs = [run_child(SPEED.format(data_home=args.data_home, step=step, cache=cache, seed=s, passes=args.passes))
                for s in range(args.repeats)]
        res[name] = {"median_s_per_effective_pass": float(np.median([r["s_per_effective_pass"] for r in runs])),
                     "median_peak_rss_mb": float(np.median([r["peak_rss_mb"] for r in runs])),
                     "max_peak_rss_mb": float(np.max([r["peak_rss_mb"] for r in runs])),
                     "d": runs[0]["d"], "n": runs[0]["n"], "n_attributes": runs[0]["n_attributes"], "runs": runs}
    grid = run_child(GRID.format(data_home=args.data_home, passes=args.grid_passes))
    best = max(grid["grid"], key=lambda g: g["f1"])
    out = {"dataset": "conll2000", "lam": "1/n", "speed": res, "grid": grid["grid"], "best": best,
           "grid_peak_rss_mb": grid["peak_rss_mb"],
           "targets": {"s_per_effective_pass": 3.0, "peak_rss_mb": 6144},
           "meets_targets": all(r["median_s_per_effective_pass"] <= 3.0 and r["max_peak_rss_mb"] <= 6144
                                for r in res.values())}
    path = write_json("conll_bench.json", out)
    print(json.dumps({k: (v if k != "speed" else {kk: {x: y for x, y in vv.items() if x != "runs"} for kk, vv in v.items()})
                      for k, v in out.items()}, indent=1))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
