"""Cost of the horse-small segmentation model (Paper: App. I): feature extraction, feature memory and
the graph-cut max oracle.

* feature extraction: seconds of the first (uncached) load -- resizing, SLIC, DAISY, the two
  k-means vocabularies, word assignment -- with ``--cold`` (a fresh cache directory), and of a
  cached load (features rebuilt from the cached counts);
* memory: bytes of the float32 features of the training and test sets, peak RSS;
* oracle: µs per ``SegmentationModel.max_oracle`` call (median and 90th percentile over all
  training images x --repeats), split into the score computation (``seg_potentials``: the
  V_i x d_u unary products) and the PyMaxflow graph cut, at a few w (random unary weights of
  two scales, w_P >= 0);
* the other primitives: µs per ``seg_sqnorm`` / ``seg_axpy`` for the direction between two
  labellings (a FW step), and per ``seg_label_dot``.

Usage: python benchmarks/bench_graphcut.py [--data-home DIR] [--cold] [--repeats 5]
Writes benchmarks/out/bench_graphcut.json.
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_json  # noqa: E402

from gaplab.core.datasets.horse import load_weizmann_horses  # noqa: E402
from gaplab.core.models.graphcut import (SegmentationModel, graph_cut, seg_axpy,  # noqa: E402
                                         seg_label_add, seg_label_dot, seg_potentials, seg_sqnorm)


def _stats(us):
    us = np.asarray(us)
    return {"median_us": float(np.median(us)), "p90_us": float(np.percentile(us, 90)),
            "mean_us": float(us.mean()), "calls": int(us.size)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-home", default=None)
    ap.add_argument("--cold", action="store_true", help="time the uncached extraction too")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    out = {}
    if args.cold:
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            load_weizmann_horses(args.data_home, cache_dir=tmp, progress=True)
            out["extract_cold_s"] = time.perf_counter() - t
    t = time.perf_counter()
    train, test = load_weizmann_horses(args.data_home, progress=False)
    out["load_cached_s"] = time.perf_counter() - t
    if args.cold:
        # the first load above also rebuilt the features: cold = extraction + feature build
        out["extract_only_s"] = out["extract_cold_s"] - out["load_cached_s"]
    out["data"] = {
        "train_images": train.n, "test_images": test.n,
        "superpixels_per_image_mean": float(train.n_superpixels.mean()),
        "superpixels_per_image_range": [int(train.n_superpixels.min()), int(train.n_superpixels.max())],
        "edges_per_image_mean": float(train.n_edges.mean()),
        "d_u": train.d_u, "d_p": train.d_p, "d": train.d_u + train.d_p,
        "feature_dtype": str(train.xu.dtype),
        "train_features_mb": (train.xu.nbytes + train.xp.nbytes) / 1e6,
        "test_features_mb": (test.xu.nbytes + test.xp.nbytes) / 1e6,
        "train_all_arrays_mb": train.nbytes / 1e6, "test_all_arrays_mb": test.nbytes / 1e6,
        "train_features_mb_if_float64": 2 * (train.xu.nbytes + train.xp.nbytes) / 1e6,
        "train_fg_superpixel_fraction": float(train.gt.mean()),
    }
    model = SegmentationModel(train)
    M = model.arrays
    rng = np.random.default_rng(0)
    model.max_oracle(0, np.zeros(model.d))  # compile
    zbuf = np.zeros(model.d)
    h = np.empty(int(model.stat_sizes.max()))
    res = {}
    for tag, su, sp in (("w_small", 0.01, 0.01), ("w_large", 1.0, 0.3)):
        w = su * rng.standard_normal(model.d)
        w[model.d_u:] = sp * np.abs(rng.standard_normal(model.d_p))
        tot, sc, cut = [], [], []
        for _ in range(args.repeats):
            for i in range(model.n):
                t0 = time.perf_counter()
                model.max_oracle(i, w)
                t1 = time.perf_counter()
                seg_potentials(M, i, w, h, True)
                t2 = time.perf_counter()
                V, e0, e1 = M.lab_off[i + 1] - M.lab_off[i], M.edge_off[i], M.edge_off[i + 1]
                graph_cut(h[:V], M.eu[e0:e1], M.ev[e0:e1], -h[V:V + e1 - e0])
                t3 = time.perf_counter()
                tot.append(1e6 * (t1 - t0))
                sc.append(1e6 * (t2 - t1))
                cut.append(1e6 * (t3 - t2))
        res[tag] = {"max_oracle": _stats(tot), "scores_only": _stats(sc), "graph_cut_only": _stats(cut)}
    out["oracle"] = res
    # primitives on a FW-like direction m(y*) − m(y_gt)
    w = 0.01 * rng.standard_normal(model.d)
    w[model.d_u:] = np.abs(w[model.d_u:])
    lb, ub = model.bounds()
    v = np.zeros(model.d)
    wb = np.zeros(model.d)
    sq, ax, dot = [], [], []
    for i in range(model.n):
        ys = model.max_oracle(i, w)
        dlt = np.zeros(int(model.stat_sizes[i]))
        seg_label_add(M, i, ys, 1.0, dlt)
        seg_label_add(M, i, model.ground_truth(i), -1.0, dlt)
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            seg_sqnorm(M, i, dlt, zbuf)
            t1 = time.perf_counter()
            seg_axpy(M, i, 1e-3, dlt, v, wb, lb, ub, True)
            t2 = time.perf_counter()
            seg_label_dot(M, i, ys, dlt)
            t3 = time.perf_counter()
            sq.append(1e6 * (t1 - t0))
            ax.append(1e6 * (t2 - t1))
            dot.append(1e6 * (t3 - t2))
    out["primitives_from_python"] = {"seg_sqnorm": _stats(sq), "seg_axpy_box": _stats(ax),
                                     "seg_label_dot": _stats(dot),
                                     "note": "timed through numba's Python dispatch (a few µs each)"}
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    p = write_json("bench_graphcut.json", out)
    import json
    print(json.dumps(out, indent=1))
    print(f"wrote {p}")


if __name__ == "__main__":
    main()
