"""The busy-laptop condition: two CPU-bound processes (a load of about 2 on top of the app) until
Ctrl-C, SIGTERM or ``--seconds`` have passed; both are stopped on exit.

    python scripts/busy.py [--seconds S] [--n N]

Tests and benchmarks use the same condition in-process: ``gaplab.app.testing.busy_machine``.
"""
from __future__ import annotations

import argparse
import signal
import sys
import time

from gaplab.app.testing import BUSY_PROCESSES, busy_machine


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=None, help="stop after this many seconds (default: never)")
    ap.add_argument("--n", type=int, default=BUSY_PROCESSES, help="CPU-bound processes (default %(default)s)")
    args = ap.parse_args(argv)
    if args.seconds is not None and not args.seconds > 0:
        print(f"busy.py: --seconds must be > 0, got {args.seconds}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        with busy_machine(args.n) as busy:
            print(f"busy: {busy.n} CPU-bound processes {busy.pids}", flush=True)
            t0 = time.monotonic()
            while args.seconds is None or time.monotonic() - t0 < args.seconds:
                time.sleep(0.2)
    except ValueError as exc:
        print(f"busy.py: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
