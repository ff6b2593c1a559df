"""horse-small load times: a first load (superpixels and features of the 328 images computed and
cached) and a cached load (the cache read, the features rebuilt), wall and CPU seconds, with the
load average. ``--cache-dir`` empty forces a first load; without it the user cache is used
(a first load only if it holds no entry yet). ``--busy``: both loads under the busy-laptop
condition (:func:`gaplab.app.testing.busy_machine`: two CPU-bound processes beside them).

    python benchmarks/horse_load_time.py --data-home ../shared/data [--cache-dir EMPTY_DIR] [--busy]
        --out benchmarks/results/horse_load_time.json
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import print_json  # noqa: E402


def timed(fn):
    w0, c0, l0 = time.perf_counter(), time.process_time(), os.getloadavg()
    fn()
    return {"wall_s": time.perf_counter() - w0, "cpu_s": time.process_time() - c0,
            "load_average_before": l0, "load_average_after": os.getloadavg()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-home", default=None)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--busy", action="store_true", help="two CPU-bound processes beside the loads")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from gaplab.app.testing import busy_machine
    from gaplab.core.datasets.horse import load_weizmann_horses

    def load():
        load_weizmann_horses(args.data_home, cache_dir=args.cache_dir, progress=True)

    res = {"busy": args.busy, "cache_dir": args.cache_dir}
    if args.cache_dir is not None:   # an empty folder: the first load computes and caches
        res["cache_dir_was_empty"] = not any(Path(args.cache_dir).iterdir()) if Path(args.cache_dir).is_dir() else True
    with busy_machine() if args.busy else contextlib.nullcontext():
        res.update(first_or_cached=timed(load), cached=timed(load))
    print_json(res, args.out or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
