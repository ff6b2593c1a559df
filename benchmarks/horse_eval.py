"""horse-small on the Solver: λ grid, test pixel accuracy / foreground IoU against the
unary-only baseline (w_P fixed at 0 by ub = 0 on the pairwise weights), seconds per effective
pass with and without the cache, peak RSS, and a figure of test images, truth and prediction.

Paper: App. I (HorseSeg), App. H (box constraints), Sec. 5.

Usage: GAPLAB_DATA=DIR python benchmarks/horse_eval.py [--passes 30] [--lams 1,0.1,...]
Writes benchmarks/results/horse_eval.json and benchmarks/results/horse_eval.png.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

from gaplab.core import Solver
from gaplab.core.problems import load_problem, model_box

OUT = Path(__file__).resolve().parent / "results"


def solve(model, lam, *, step="pairwise", cache=True, passes=30.0, time_limit=300.0, ub_pairwise=None, eps=1e-3):
    box = model_box(model)
    if ub_pairwise is not None:
        box["ub"] = box["ub"].copy()
        box["ub"][model.d_u:] = ub_pairwise
    s = Solver(model, lam=lam, step=step, sampling="gap", cache={"enabled": cache}, gap_check=5,
               max_passes=passes, time_limit=time_limit, gap_threshold=eps, **box)
    res = s.run()
    return s, res


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--passes", type=float, default=30.0)
    ap.add_argument("--lams", default="100,30,10,3,1,0.1,0.01")
    ap.add_argument("--time-limit", type=float, default=240.0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    p = load_problem("horse-small")
    model, test = p.model, p.test
    load_s = time.perf_counter() - t0
    out = {"n_train": model.n, "n_test": test.n, "d": model.d, "d_u": model.d_u, "d_p": model.d_p,
           "load_s": load_s, "passes": args.passes, "runs": []}
    # warm the kernels on a couple of passes (not timed below)
    solve(model, 0.1, passes=2, cache=False, step="fw")
    solve(model, 0.1, passes=2, cache=True, step="pairwise")
    best = None
    for lam in [float(x) for x in args.lams.split(",")]:
        for name, ub in (("potts", None), ("unary_only", 0.0)):
            s, res = solve(model, lam, passes=args.passes, time_limit=args.time_limit, ub_pairwise=ub)
            ev = model.evaluate(res.w, test)
            ev_train = model.evaluate(res.w)
            row = {"lam": lam, "model": name, "gap": res.exact_gap, "primal": res.primal, "dual": res.dual,
                   "passes": res.effective_passes, "solver_s": res.wall_time_s,
                   "s_per_pass": res.wall_time_s / max(res.effective_passes, 1e-9),
                   "test": ev, "train": ev_train, "w_P_min": float(res.w[model.d_u:].min()),
                   "w_P_nonzero": int(np.sum(res.w[model.d_u:] > 0))}
            out["runs"].append(row)
            print(json.dumps({k: row[k] for k in ("lam", "model", "gap", "passes", "s_per_pass")}),
                  {k: round(v, 4) for k, v in ev.items()}, flush=True)
            if name == "potts" and (best is None or ev["loss"] < best[1]["loss"]):
                best = (lam, ev, res.w)
    # cache or not, FW vs pairwise, at the best λ: seconds per effective pass and per unit of gap
    lam_best = best[0]
    out["best_lam"] = lam_best
    timing = []
    for step in ("fw", "pairwise"):
        for cache in (False, True):
            s, res = solve(model, lam_best, step=step, cache=cache, passes=args.passes, time_limit=args.time_limit)
            tr = [(r["wall_time_s"], r["effective_passes"], r["exact_gap"]) for r in res.trace
                  if r["exact_gap"] == r["exact_gap"]]
            to_gap = {}
            for target in (0.2, 0.1, 0.05):
                hit = [t for t in tr if t[2] <= target]
                to_gap[str(target)] = {"s": hit[0][0], "passes": hit[0][1]} if hit else None
            timing.append({"step": step, "cache": cache, "gap": res.exact_gap, "passes": res.effective_passes,
                           "solver_s": res.wall_time_s, "s_per_pass": res.wall_time_s / max(res.effective_passes, 1e-9),
                           "iterations": s.iteration, "oracle_calls": s.oracle_calls,
                           "cache_hits": int(res.trace[-1]["cache_hits"]), "to_gap": to_gap,
                           "trace": [{"s": a, "passes": b, "gap": c} for a, b, c in tr]})
            print({k: v for k, v in timing[-1].items() if k != "trace"}, flush=True)
    out["timing_at_best_lam"] = timing
    # step anatomy: n oracle calls alone vs n Python-tier block steps (oracle + compiled halves)
    s, _ = solve(model, lam_best, step="fw", cache=False, passes=3)
    t = time.perf_counter()
    for i in range(model.n):
        model.max_oracle(i, s.S.w)
    oracle_pass = time.perf_counter() - t
    t = time.perf_counter()
    s.steps(model.n)
    out["anatomy"] = {"oracle_pass_s": oracle_pass, "step_pass_s": time.perf_counter() - t}
    print(out["anatomy"], flush=True)
    out["load_average"] = list(__import__("os").getloadavg())
    out["cpus"] = __import__("os").cpu_count()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    OUT.mkdir(exist_ok=True)
    from gaplab.core.atomic import write_text_atomic
    write_text_atomic(OUT / "horse_eval.json", json.dumps(out, indent=1, default=float))
    figure(model, test, best[2], OUT / "horse_eval.png")
    print("peak RSS MB", out["peak_rss_mb"], "total s", time.perf_counter() - t0)
    return 0


def figure(model, test, w, path, n_show=4):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from skimage.segmentation import find_boundaries

    from gaplab.core.models.graphcut import SegmentationModel
    tm = SegmentationModel(test)
    rng = np.random.default_rng(0)
    idx = np.sort(rng.choice(test.n, n_show, replace=False))
    fig, axes = plt.subplots(n_show, 3, figsize=(9, 2.6 * n_show))
    for r, i in enumerate(idx):
        y = tm.decode(int(i), w)
        photo = test.photo(int(i))
        seg = test.segment_map(int(i))
        b = find_boundaries(seg, mode="inner")
        img = photo.copy() if photo is not None else np.zeros(seg.shape + (3,), np.uint8)
        img[b] = (255, 255, 0)
        axes[r, 0].imshow(img)
        axes[r, 1].imshow(test.mask_map(int(i)), cmap="gray")
        axes[r, 2].imshow(test.labels_to_mask(int(i), y), cmap="gray")
        for a in axes[r]:
            a.axis("off")
    for a, t in zip(axes[0], ("photo + superpixels", "truth", "prediction")):
        a.set_title(t)
    fig.tight_layout()
    from gaplab.core.atomic import save_figure
    save_figure(fig, path, dpi=60)


if __name__ == "__main__":
    sys.exit(main())
