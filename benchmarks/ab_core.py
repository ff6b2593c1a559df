"""A/B speed of the solver core between two checkouts, interleaved in one run (the machine's
drift and the other load hit both alike).

For each repeat and configuration, one child process per checkout (alternating which goes first)
runs OCR-large for ``--passes`` effective passes and reports seconds per effective pass, split
before/after the first exact gap check (cache hits start there). ``--compile`` also times a
fixed compile workload (both checkouts' common API: every step kind with and without the cache
on the chain and multiclass models, a box, an exact gap pass, a regularization path) with a cold
``NUMBA_CACHE_DIR``.

    python benchmarks/ab_core.py --old /path/to/pkgroot_old --new /path/to/pkgroot_new \
        [--repeats 5] [--passes 20] [--compile] [--out ab_core.json]

A package root is a directory whose ``gaplab`` entry is the checkout (a symlink is fine).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import CHILD  # noqa: E402
from common import describe_root, run_child, write_json  # noqa: E402

COMPILE_WORKLOAD = r"""
import time, json, numpy as np
t = time.perf_counter()
from gaplab.core import ChainModel, MulticlassModel, SequenceData, Solver
rng = np.random.default_rng(0)
X = [rng.random((3, 4)), rng.random((2, 4))]
Y = [np.array([0, 1, 1]), np.array([1, 0])]
chain = ChainModel(SequenceData.from_dense(X, Y, ["a", "b"], name="w"))
mc = MulticlassModel([np.eye(3), np.eye(3)], [np.array([0.0, 1, 1]), np.array([0.0, 1, 1])], [0, 0])
for m in (chain, mc):
    for step in ("fw", "pairwise", "away", "combined"):
        for cache in (False, True):
            s = Solver(m, lam=0.1, step=step, sampling="gap", cache={"enabled": cache}, gap_check=1,
                       batch_step=cache, max_passes=3)
            s.run()
            s.block_gap_now(0)
            s.exact_gap(count=False)
Solver(chain, lam=0.1, lb=np.zeros(chain.d), max_passes=2).run()
from gaplab.core.regpath import regularization_path
for m in (chain, mc):
    for step in ("fw", "pairwise"):
        regularization_path(m, solver_config={"sampling": "gap", "step": step}, eps=0.3, lam_min=1e-2,
                            max_breakpoints=3)
print(json.dumps({"compile_s": time.perf_counter() - t}))
"""

CONFIGS = {
    "bcfw_uniform": dict(sampling="uniform", step="fw", cache=False),
    "bcfw_gap": dict(sampling="gap", step="fw", cache=False),
    "bcpfw_gap_cache": dict(sampling="gap", step="pairwise", cache=True),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--passes", type=float, default=20)
    ap.add_argument("--lam", type=float, default=0.001)
    ap.add_argument("--cache-size", type=int, default=100,
                    help="CacheConfig.size of the cached configuration (16: where 89d29cd and later evict alike)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated subset of " + ",".join(CONFIGS))
    ap.add_argument("--compile", action="store_true", help="also time a cold-cache compile (each checkout, twice)")
    ap.add_argument("--out", default="ab_core.json", help="file name under benchmarks/out/")
    a = ap.parse_args(argv)
    roots = {"old": a.old, "new": a.new}
    configs = {c: CONFIGS[c] for c in a.configs.split(",")}
    runs = {(k, c): [] for k in roots for c in configs}
    for rep in range(a.repeats):
        order = ("old", "new") if rep % 2 == 0 else ("new", "old")
        for c, cfg in configs.items():
            for k in order:
                r = run_child(CHILD.format(lam=a.lam, passes=a.passes, seed=rep, cache_size=a.cache_size, **cfg), {"PYTHONPATH": roots[k]})
                runs[(k, c)].append(r)
                print(rep, k, c, round(r["s_per_effective_pass"], 4), file=sys.stderr, flush=True)
    out = {"dataset": "ocr-large", "lam": a.lam, "passes": a.passes, "repeats": a.repeats, "cache_size": a.cache_size,
           "roots": {k: describe_root(r) for k, r in roots.items()},
           "configs": {}}
    for c in configs:
        row = {}
        for k in roots:
            rs = runs[(k, c)]
            row[k] = {
                "median_s_per_effective_pass": float(np.median([r["s_per_effective_pass"] for r in rs])),
                "min_s_per_effective_pass": float(np.min([r["s_per_effective_pass"] for r in rs])),
                "median_after_first_gap_check": float(np.median(
                    [r["phase_after_first_gap_check"]["s_per_effective_pass"] for r in rs])),
                "cache_hits": [r["cache_hits"] for r in rs],
            }
        row["new_over_old_median"] = row["new"]["median_s_per_effective_pass"] / row["old"]["median_s_per_effective_pass"]
        row["new_over_old_min"] = row["new"]["min_s_per_effective_pass"] / row["old"]["min_s_per_effective_pass"]
        row["new_over_old_after_first_gap_check"] = (row["new"]["median_after_first_gap_check"]
                                                     / row["old"]["median_after_first_gap_check"])
        row["same_cache_hits"] = row["new"]["cache_hits"] == row["old"]["cache_hits"]
        out["configs"][c] = row
    if a.compile:
        comp = {k: [] for k in roots}
        for rep in range(2):
            for k in (("old", "new") if rep == 0 else ("new", "old")):
                with tempfile.TemporaryDirectory() as d:
                    comp[k].append(run_child(COMPILE_WORKLOAD, {"PYTHONPATH": roots[k], "NUMBA_CACHE_DIR": d})["compile_s"])
        out["compile_cold_s"] = comp
        out["compile_new_over_old"] = float(np.median(comp["new"]) / np.median(comp["old"]))
    path = write_json(a.out, out)
    print(json.dumps(out, indent=1))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
