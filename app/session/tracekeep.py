"""What a session keeps of its run's trace for plotting, bounded however long the run.

The solver makes a record per pass and per gap check; a run at unlimited speed makes dozens a
second for hours. The session keeps them in buckets of effective passes whose width doubles as
the run grows (at most ``buckets`` buckets over the run, so a bucket is narrower than a pixel of
a plot about ``buckets / 2`` pixels wide or less). In each bucket it keeps, per kind (the pass
records and the gap checks), the first and the last record and those with the smallest and
the largest gap (heuristic gap Σᵢ ĝᵢ of a pass, exact gap of a check). A line through the kept
records therefore covers, in every bucket, the same vertical range between the same end points
as a line through all of them: the convergence plots look the same at their resolution. The
run's first and last record are always kept, and every gap check is kept until there are more
than ``2 * buckets`` of them (a check every few passes of a run of thousands of passes); then
the checks are thinned the same way. Since buckets of
a doubled width are unions of the previous ones, thinning again keeps the same extremes.

The same is done for the active-set history (one point per published snapshot) keyed on its
passes, its mean active-set size as the value.
"""
from __future__ import annotations

import math

TRACE_BUCKETS = 1024   # buckets over the run: a bucket spans at most 1/512 of the passes so far


def _extreme_keep(items, x, y, group, width: float) -> list:
    """The items to keep (in order): in each bucket ``floor(x / width)`` of each ``group``, the
    first, the last and the ones of smallest and largest ``y`` (NaN values are never extremes)."""
    keep = set()
    first: dict = {}
    last: dict = {}
    lo: dict = {}
    hi: dict = {}
    for j, it in enumerate(items):
        key = (group(it), math.floor(x(it) / width))
        first.setdefault(key, j)
        last[key] = j
        v = y(it)
        if v != v:   # NaN
            continue
        if key not in lo or v < y(items[lo[key]]):
            lo[key] = j
        if key not in hi or v > y(items[hi[key]]):
            hi[key] = j
    for d in (first, last, lo, hi):
        keep.update(d.values())
    return [items[j] for j in sorted(keep)]


def _width_for(x_last: float, buckets: int, width: float) -> float:
    """A power of two (so that wider buckets are unions of narrower ones) ≥ ``width`` with at
    most ``buckets / 2`` buckets up to ``x_last``."""
    want = max(x_last, 1e-300) / max(buckets // 2, 1)
    w = 2.0 ** math.ceil(math.log2(want))
    return max(w, width)


class TraceKeeper:
    """The trace records of the session's current run kept for plotting (bounded).

    ``records`` holds at most ``8 * buckets`` records (at most about ``4 * buckets`` after each
    thinning: 4 pass records in each of at most ``buckets / 2 + 1`` buckets, and the gap
    checks, all of them up to ``2 * buckets``) however many the solver made; ``seen`` is the number of solver records consumed so far
    (``Solver.n_trace_records``), so fetching again gives only the new ones.
    """

    def __init__(self, buckets: int = TRACE_BUCKETS):
        if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 2:
            raise ValueError(f"buckets must be an int >= 2, got {buckets!r}")
        self.buckets = buckets
        self.limit = 8 * buckets
        self.clear()

    def clear(self) -> None:
        """Forget the run (a new solver, a warm start, the session closed)."""
        self.records: list[dict] = []
        self.seen = 0
        self.width = 0.0        # bucket width in effective passes (0: nothing thinned yet)

    def restart(self, records, seen: int) -> None:
        """Keep ``records`` (e.g. the trace of a solver taken back to an earlier step), of which
        ``seen`` solver records were made."""
        self.clear()
        self.extend(list(records))
        self.seen = int(seen)

    def fetch(self, solver) -> list[dict]:
        """Take the solver's records made since the last fetch; returns them (all of them,
        before any thinning)."""
        new = solver.trace(since=self.seen)
        self.seen = int(solver.n_trace_records)
        self.extend(new)
        return new

    def extend(self, new) -> None:
        self.records.extend(new)
        if len(self.records) > self.limit:
            self.thin()

    def thin(self) -> None:
        """Thin to the extremes of each bucket (see the module's docstring)."""
        recs = self.records
        if not recs:
            return
        x_last = float(recs[-1].get("effective_passes", 0.0))
        if not x_last > 0:
            return
        self.width = _width_for(x_last, self.buckets, self.width)
        self.records = thin_records(recs, self.width, 2 * self.buckets)

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    def __reversed__(self):
        return reversed(self.records)

    def snapshot(self) -> tuple:
        return tuple(self.records)


def thin_records(records: list, width: float, max_checks: int = 2 * TRACE_BUCKETS) -> list:
    """Trace records thinned to the extremes of each ``width``-wide bucket of effective passes:
    the pass records by heuristic gap; the gap checks (points on the plots, each one drawn)
    only when there are more than ``max_checks`` of them, then by exact gap. The first and the
    last record are kept."""
    def gap(r):
        v = r.get("exact_gap" if r["kind"] == "gap_check" else "heuristic_gap", math.nan)
        return float(v)

    n_checks = sum(1 for r in records if r["kind"] == "gap_check")
    if n_checks <= max_checks:   # every check kept: a group of its own per record
        group = (lambda r: id(r) if r["kind"] == "gap_check" else None)
    else:
        group = (lambda r: r["kind"] == "gap_check")
    return _extreme_keep(records, lambda r: float(r["effective_passes"]), gap, group, width)


def thin_points(points: list, buckets: int = TRACE_BUCKETS) -> list:
    """The active-set history (tuples starting (passes, mean size, ...)) thinned the same way
    once it holds more than ``8 * buckets`` points; returned unchanged below that."""
    if len(points) <= 8 * buckets or not points[-1][0] > 0:
        return points
    w = _width_for(float(points[-1][0]), buckets, 0.0)
    return _extreme_keep(points, lambda p: float(p[0]), lambda p: float(p[1]), lambda p: 0, w)
