"""Reference SSVM optimum on OCR-small with the independent dense BCFW (tests/reference_ssvm.py).

Runs textbook BCFW (Alg. 1 of Osokin et al., ICML 2016) with dense per-block w_i, exact line
search and uniform sampling at lam = 0.1 until the exact duality gap is <= 1e-4 (or 300
passes), then prints one JSON object: primal, dual, gap, passes, train/test Hamming error
(fraction of wrong letters) and seconds.  Used to check the fast numba core's optimum.

Usage:  python scripts/reference_ocr_small.py [--lam 0.1] [--tol 1e-4] [--max-passes 300]
                                              [--seed 0] [--verbose] [--history]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import reference_ssvm as ref  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lam", type=float, default=0.1)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--max-passes", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verbose", action="store_true", help="print the gap after every pass (stderr)")
    ap.add_argument("--history", action="store_true", help="include the per-pass gap history")
    args = ap.parse_args(argv)

    from gaplab.core.datasets.ocr import load_ocr

    train, test = load_ocr("small")

    def report(p, w, gap):
        if args.verbose:
            print(f"pass {p + 1:4d}  gap {gap:.6e}  ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)

    t0 = time.perf_counter()
    w, gaps, st = ref.dense_bcfw(
        train, args.lam, args.max_passes, seed=args.seed, gap_tol=args.tol,
        return_state=True, callback=report,
    )
    seconds = time.perf_counter() - t0
    out = {
        "dataset": "ocr-small",
        "n_train": train.n,
        "n_test": test.n,
        "d": int(w.size),
        "lam": args.lam,
        "seed": args.seed,
        "solver": "reference dense BCFW (uniform sampling, exact line search)",
        "primal": st["primal"],
        "dual": st["dual"],
        "gap": gaps[-1],
        "passes": st["passes"],
        "converged": bool(gaps[-1] <= args.tol),
        "train_error": ref.hamming_error(train, w),
        "test_error": ref.hamming_error(test, w),
        "w_norm": float(np.linalg.norm(w)),
        "seconds": seconds,
        # the primal recomputed through the separate viterbi_decode/joint_feature code path
        "primal_recomputed": ref.primal_objective(train, w, args.lam),
    }
    if args.history:
        out["gap_history"] = gaps
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
