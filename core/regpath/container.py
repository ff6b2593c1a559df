"""The :class:`RegPath` container: the points of a regularization path or grid search, in memory
or backed by an on-disk path store, with ``w_at(λ)``, ``gap_at(λ)`` and the columns (Paper:
Sec. 4: (λ_0/λ)·w_0 above λ_0, then piecewise constant).

Saving and loading (single-file ``.npz``, opening a store) live in
:mod:`gaplab.core.regpath.persist`; the store's on-disk format in
:mod:`gaplab.core.regpath.store`.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator

import numpy as np

from .. import jsonsafe, validate
from ..solver import Solver
from . import persist
from . import store as pst
from .points import _BOOL_COLS, _FLOAT_COLS, _INT_COLS, _STR_COLS, PathPoint
from .solverstate import _STATE_PREFIX, _solver_state

__all__ = ["RegPath"]


class RegPath:
    """A regularization path (kind "eps" or "heuristic") or a grid search (kind "grid").

    Build it from :func:`~gaplab.core.regpath.epspath.regularization_path` /
    :func:`~gaplab.core.regpath.grid.grid_search`, or incrementally with :meth:`append` while
    consuming :func:`~gaplab.core.regpath.epspath.iter_path` / :func:`~gaplab.core.regpath.grid.iter_grid`.

    Arrays (one entry per point, in computation order, λ decreasing): ``lams``, ``W`` (J, d) and
    the columns of :class:`~gaplab.core.regpath.points.PathPoint` through :meth:`column`
    (``cum_passes``, ``cum_time_s``, ``test_error``, ...).

    A path backed by an on-disk store (:mod:`gaplab.core.regpath.store`; written with ``store=``
    by :func:`~gaplab.core.regpath.epspath.regularization_path` / :func:`~gaplab.core.regpath.grid.grid_search`,
    opened with :meth:`open`) keeps only its rows in memory: ``w_at(λ)`` and :meth:`point` read
    the one breakpoint file they need (the last two read are cached), iteration
    (``for p in path``) reads one breakpoint at a time, and only :attr:`W` materializes all of
    them.
    """

    #: breakpoint weights read from a store kept in memory (w_at near one λ reads nothing twice)
    STORE_CACHE = 2

    def __init__(self, kind: str, meta: dict | None = None, points=()):
        if kind not in ("eps", "heuristic", "grid"):
            raise ValueError(f"kind must be 'eps', 'heuristic' or 'grid', got {kind!r}")
        self.kind = kind
        self.meta = dict(meta or {})
        self._rows: list[dict] = []
        self._W: list[np.ndarray] = []
        #: solver of the last point, kept on an interrupted or checkpointed path (saved with it)
        self.resume_solver: Solver | None = None
        self._resume_arrays: dict | None = None
        self._store: Path | None = None       # the directory of an on-disk store (lazy weights)
        self._files: list[dict] = []          # its manifest's file entries, one per point
        self._writer = None                   # PathStoreWriter while the path is being written
        self._cache: dict[int, np.ndarray] = {}
        for p in points:
            self.append(p)

    # ------------------------------------------------------------------ building
    def append(self, point: PathPoint) -> None:
        """Add the next point (its λ below the last one's); a store-backed path writes it now."""
        if self._rows and not point.lam < self._rows[-1]["lam"]:
            raise ValueError(f"points must have decreasing λ; got {point.lam} after {self._rows[-1]['lam']}")
        row = point.row()
        if self._writer is not None:  # streamed to the store: nothing of w stays in memory
            # the writer owns the rows (self._rows is its list): the row is listed in memory only
            # once it is on disk, so no copy can fall out of step with the store
            self._writer.append(row, point.w, meta=jsonsafe.encode(self.meta))
            self._W.append(None)
            return
        self._rows.append(row)
        self._W.append(np.array(point.w, dtype=np.float64))

    def _sync_store(self) -> None:
        """Rewrite the store's manifest after a change of the metadata or of the last row (the
        rows are the writer's own)."""
        if self._writer is not None:
            self._writer.update(meta=jsonsafe.encode(self.meta))

    def _w(self, j: int) -> np.ndarray:
        """w_j (read from the store when the path is backed by one; do not modify)."""
        w = self._W[j] if j < len(self._W) else None
        if w is not None:
            return w
        w = self._cache.get(j)
        if w is None:
            w = pst.read_weights(self._store, j, self._files[j], int(self.meta["d"]), float(self._rows[j]["lam"]))
            w.setflags(write=False)
            while len(self._cache) >= self.STORE_CACHE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[j] = w
        return w

    def __iter__(self) -> Iterator[PathPoint]:
        """The points in order, each with its w (a store-backed path reads one at a time)."""
        for j in range(len(self._rows)):
            yield self.point(j)

    @property
    def store(self) -> Path | None:
        """The directory of the on-disk store backing this path (None: in memory)."""
        return self._store

    def __len__(self) -> int:
        return len(self._rows)

    def snapshot(self) -> "RegPath":
        """A consistent copy of the points appended so far (for a UI thread reading while a worker
        thread appends)."""
        if self._store is not None:
            k = min(len(self._rows), len(self._files))
            W = [None] * k
        else:
            k = min(len(self._rows), len(self._W))
            W = list(self._W[:k])
        out = RegPath(self.kind, self.meta)
        out._rows = [dict(r) for r in self._rows[:k]]
        out._W = W
        out._store, out._files = self._store, list(self._files[:k])
        return out

    def __repr__(self) -> str:
        if not self._rows:
            return f"RegPath(kind={self.kind!r}, empty)"
        return (f"RegPath(kind={self.kind!r}, {len(self)} points, λ {self.lams[0]:.4g} -> {self.lams[-1]:.4g}, "
                f"{self.column('cum_passes')[-1]:.1f} passes, {self.column('cum_time_s')[-1]:.2f} s, "
                f"end={self.end_reason!r})")

    # ------------------------------------------------------------------ arrays
    @property
    def lams(self) -> np.ndarray:
        """λ_j of every point, float64 (J,), decreasing."""
        return np.array([r["lam"] for r in self._rows], dtype=np.float64)

    @property
    def W(self) -> np.ndarray:
        """w_j of every point, float64 (J, d) (a store-backed path reads every breakpoint file)."""
        if not self._W:
            return np.zeros((0, int(self.meta.get("d", 0))))
        return np.vstack([self._w(j) for j in range(len(self._W))])

    def column(self, name: str) -> np.ndarray:
        """One column of :class:`~gaplab.core.regpath.points.PathPoint` over the points, shape (J,);
        KeyError for an unknown name."""
        if name in _FLOAT_COLS:
            return np.array([r[name] for r in self._rows], dtype=np.float64)
        if name in _INT_COLS:
            return np.array([r[name] for r in self._rows], dtype=np.int64)
        if name in _BOOL_COLS:
            return np.array([r[name] for r in self._rows], dtype=bool)
        if name in _STR_COLS:
            return np.array([r[name] for r in self._rows], dtype=str)
        raise KeyError(f"unknown column {name!r}")

    def rows(self) -> list[dict]:
        """The points' scalar fields, one dict per point (copies)."""
        return [dict(r) for r in self._rows]

    def point(self, j: int) -> PathPoint:
        """Point ``j`` with its w (a copy)."""
        r = dict(self._rows[j])
        return PathPoint(w=np.array(self._w(j), dtype=np.float64), **r)

    @property
    def total_passes(self) -> float:
        return float(sum(r["passes"] for r in self._rows))

    @property
    def total_time_s(self) -> float:
        return float(sum(r["time_s"] for r in self._rows))

    @property
    def lam_inf(self) -> float:
        """λ_∞ (first breakpoint) of a path."""
        return float(self._rows[0]["lam"]) if self._rows else math.nan

    @property
    def end_reason(self) -> str:
        """Why the path ended ("stopped" when the generator was abandoned)."""
        if not self._rows:
            return str(self.meta.get("end", "empty"))
        return self._rows[-1]["end"] or "stopped"

    @property
    def lam_end(self) -> float:
        """Smallest λ the path covers: w_at works on [lam_end, ∞) (NaN for a grid)."""
        if self.kind == "grid" or not self._rows:
            return math.nan
        for r in reversed(self._rows):
            if r["certified"]:
                return float(r["next_lam"]) if math.isfinite(r["next_lam"]) else float(r["lam"])
        return float(self._rows[0]["lam"])

    # ------------------------------------------------------------------ queries
    def piece_at(self, lam: float) -> tuple[int, float]:
        """(j, scale) with w_at(lam) = scale · W[j] (Paper: Sec. 4: (λ_1/λ)·w_1 above the first
        breakpoint, then piecewise constant).

        Raises
        ------
        ValueError
            For λ <= 0, an empty path, a λ not on a grid, or a λ below the path's end.
        """
        lam = validate.positive("lam", lam)
        if not self._rows:
            raise ValueError("the path is empty")
        lams = self.lams
        if self.kind == "grid":
            j = int(np.argmin(np.abs(np.log(lams) - math.log(lam))))
            if abs(lams[j] - lam) > 1e-12 * lam:
                raise ValueError(f"λ={lam} is not on the grid (nearest {lams[j]})")
            return j, 1.0
        if lam >= lams[0]:
            return 0, float(lams[0] / lam)
        cert = self.column("certified")
        ok = np.flatnonzero((lams >= lam) & cert)
        j = int(ok[-1])
        lo = self._rows[j]["next_lam"]
        if not (lam >= lo or (math.isnan(lo) and lam >= lams[j])):
            raise ValueError(f"λ={lam} is below the end of the path (λ_end = {self.lam_end})")
        return j, 1.0

    def w_at(self, lam: float) -> np.ndarray:
        """The path's weights at λ (ε-approximate for λ >= lam_end on an ε-path), float64 (d,)."""
        j, scale = self.piece_at(lam)
        return scale * self._w(j)

    def gap_at(self, lam: float) -> float:
        """Duality gap at λ of the path's primal-dual pair (Proposition 1): g_j + (1 − λ/λ_j)Δ_j on
        [λ_{j+1}, λ_j]; above λ_∞, the bound (λ_∞/λ)·g_0. Exact for an ε-path, where g_j is exact."""
        j, scale = self.piece_at(lam)
        r = self._rows[j]
        if self.kind != "grid" and j == 0 and lam >= r["lam"]:
            return float(r["gap"] * scale)
        return float(r["gap"] + (1.0 - lam / r["lam"]) * r["delta"])

    def duality_gap(self, model, lam: float) -> tuple[float, float, float]:
        """(gap, primal, dual) at λ, computed afresh: primal of w_at(λ) from n max-oracle calls,
        dual of the path's dual point at λ (α_j rescaled by Proposition 1: D = ρℓ_j − λ/2‖w_j‖²;
        above λ_∞ the dual point α_∞ is kept: D = ℓ_0 − λ/2‖w‖²)."""
        from ..models import label_score, max_oracle
        j, scale = self.piece_at(lam)
        w = scale * self._w(j)
        n = model.arrays.n
        hinge = 0.0
        for i in range(n):
            _, val = max_oracle(model, i, w)
            hinge += val - label_score(model, i, w, model.ground_truth(i))
        primal = 0.5 * lam * float(w @ w) + hinge / n
        r = self._rows[j]
        rho = 1.0 if (j == 0 and lam >= r["lam"]) else lam / r["lam"]
        dual = rho * r["ell"] - 0.5 * lam * float(w @ w)
        return primal - dual, primal, dual

    def best(self, column: str = "test_error") -> PathPoint:
        """The point with the smallest value of a column (default test error)."""
        vals = self.column(column)
        if not np.isfinite(vals).any():
            raise ValueError(f"no finite {column} on this path")
        return self.point(int(np.nanargmin(vals)))

    def summary(self) -> dict:
        """JSON-ready counts: points, λ range, end reason, passes and time, and the points
        accepted on exact gaps (``certified``) apart from those accepted on stale gap sums."""
        stale = (np.array([r["status"] == "converged_heuristic" for r in self._rows], dtype=bool)
                 if len(self) else np.zeros(0, dtype=bool))
        return jsonsafe.encode({
            "kind": self.kind, "points": len(self), "lam_first": self.lams[0] if len(self) else None,
            "lam_last": self.lams[-1] if len(self) else None, "lam_end": self.lam_end,
            "end": self.end_reason, "total_passes": self.total_passes, "total_time_s": self.total_time_s,
            # points whose gap <= ε is exact; a heuristic path's points pass on stale sums only
            "certified": int(np.sum(self.column("certified") & ~stale)) if len(self) else 0,
            "accepted_on_stale_gaps": int(np.sum(self.column("certified") & stale)) if len(self) else 0,
        })

    # ------------------------------------------------------------------ files (no pickle)
    def save(self, file, *, solver: Solver | None = None) -> Path | None:
        """np.savez with λ_j, W (J×d), one array per column and the JSON metadata.

        Parameters
        ----------
        file : str, os.PathLike or binary file object
            A path gets ``.npz`` appended when missing (as ``np.savez`` does) and is written
            atomically (temporary file, fsync, ``os.replace``): a failed write leaves the previous
            file intact. A file object is written as it is.
        solver : Solver, optional
            The solver of the last point (``point.solver``). Its whole state is saved with the
            path so that :func:`~gaplab.core.regpath.resume.resume_path` (``gaplab path --resume``) can
            continue it exactly. ``resume_solver`` is used when not given (set on an interrupted
            path).

        Returns
        -------
        Path or None
            The path written (None for a file object).
        """
        return persist.save_npz(self, file, solver if solver is not None else self.resume_solver)

    @classmethod
    def load(cls, file) -> "RegPath":
        """Load a path saved by :meth:`save`.

        Raises
        ------
        PathFileError
            (a ValueError) naming the file and the problem, for anything that is not a valid
            path file: not an npz, missing or misshapen arrays, broken metadata, an unknown kind
            or version, λ not finite, not > 0 or not strictly decreasing, W with the wrong shape.
        FileNotFoundError
            If the file does not exist.
        """
        return persist.load_npz(cls, file)

    @classmethod
    def open(cls, path, *, model=None, dataset: str | None = None) -> "RegPath":
        """Open a saved path: a path store (a directory, :mod:`gaplab.core.regpath.store`) lazily,
        its rows only (``lams``, ``gap_at``, columns; ``w_at(λ)`` reads the one breakpoint file it
        needs), or a single-file ``.npz`` of :meth:`save` (loaded whole, as :meth:`load`).

        Parameters
        ----------
        path : str or os.PathLike
        model : optional
            If given, the store must have been computed on a model with the same n and d.
        dataset : str, optional
            If given, the store's ``meta["dataset"]`` must be this name.

        Raises
        ------
        PathStoreError
            Naming the store: not a store, broken manifest, another dataset, n or d.
        PathFileError
            For a bad ``.npz`` file (see :meth:`load`).
        FileNotFoundError
            If ``path`` does not exist.
        """
        return persist.open_path(cls, path, model=model, dataset=dataset)

    # ------------------------------------------------------------------ the on-disk store
    def to_store(self, store, *, overwrite: bool = False) -> "RegPath":
        """Write this path to an on-disk path store breakpoint by breakpoint (e.g. to convert a
        single-file ``.npz``) and return it opened lazily (:meth:`open`)."""
        out = RegPath(self.kind, self.meta)
        out._attach_writer(store, overwrite=overwrite)
        try:
            for j in range(len(self)):
                out.append(self.point(j))
        finally:
            out._close_writer()
        return RegPath.open(out.store)

    def save_resume_state(self, solver: Solver | None = None) -> None:
        """Store-backed path: write the solver state of the last point into the store (for
        :func:`~gaplab.core.regpath.resume.resume_path`); ``resume_solver`` when not given."""
        solver = solver if solver is not None else self.resume_solver
        if self._writer is None or solver is None or not self._rows:
            return
        if solver.lam != self._rows[-1]["lam"]:
            return  # not the last breakpoint's solver: a state saved under the wrong breakpoint would resume wrongly
        info, arrays = _solver_state(solver)
        info["point"] = len(self) - 1
        self._writer.write_resume_state(info, {k[len(_STATE_PREFIX):]: v for k, v in arrays.items()},
                                        meta=jsonsafe.encode(self.meta))

    def _reserve_state_space(self) -> None:
        """Store-backed path: keep disk space reserved for the solver state of the last point and
        a manifest rewrite (:meth:`~gaplab.core.regpath.store.PathStoreWriter.reserve`), so that
        a full disk still leaves the path resumable from its last breakpoint."""
        solver = self.resume_solver
        if self._writer is None or solver is None or self.kind == "grid" or getattr(self, "_no_reserve", False):
            return
        state = sum(np.asarray(a).nbytes for a in solver.S) + 16 * solver.n  # + the last gap pass's block arrays
        members = len(solver.S) + 2
        self._writer.reserve(state + 512 * members + 2 * self._writer.manifest_bytes + (1 << 16))

    @property
    def io_stats(self) -> dict:
        """{"io_time_s", "bytes_written"} of the store writes made by this process (zeros for an
        in-memory path): encoding, writing and fsync of breakpoints, manifests and solver states."""
        w = self._writer
        if w is not None:
            return {"io_time_s": w.io_time_s, "bytes_written": w.bytes_written}
        return dict(self._io_stats) if hasattr(self, "_io_stats") else {"io_time_s": 0.0, "bytes_written": 0}

    def attach_store(self, store, *, overwrite: bool = False, compress_values: bool = False,
                     reserve_space: bool = True) -> None:
        """Stream every point appended from now on to the path store ``store`` (a directory; see
        :mod:`gaplab.core.regpath.store`): :meth:`append` writes it atomically and keeps only its
        row in memory. Call :meth:`close_store` when done. ``reserve_space=False``: keep no disk
        space for the solver state (a scratch store; on a memory-backed file system such as a
        tmpfs ``/tmp`` the reserve, as large as the solver state, takes memory)."""
        self._attach_writer(store, overwrite=overwrite, compress_values=compress_values)
        self._no_reserve = not reserve_space

    def close_store(self) -> None:
        """Stop writing (the path stays readable from its store)."""
        self._close_writer()

    def _attach_writer(self, store, *, mode: str = "new", overwrite: bool = False,
                       compress_values: bool = False) -> None:
        """Stream the points appended from now on to the store ``store`` (a directory)."""
        if len(self) and mode == "new":
            raise ValueError("attach a store before the first point")
        writer = pst.PathStoreWriter(store, self.kind, jsonsafe.encode(self.meta), mode=mode, overwrite=overwrite,
                                     compress_values=compress_values)
        if mode == "new":
            self._rows, self._files = writer.man["rows"], writer.man["files"]
        else:  # continue from this path's rows (a prefix of the store's; the later files are removed)
            writer.adopt(self._rows, self._files)
        del self._W[len(self._rows):]
        self._writer = writer
        self._store = writer.root

    def _close_writer(self) -> None:
        if self._writer is not None:
            self._io_stats = {"io_time_s": self._writer.io_time_s, "bytes_written": self._writer.bytes_written}
            writer, self._writer = self._writer, None
            writer.close()  # the store's writer lock
