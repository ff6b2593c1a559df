"""Saving and loading a :class:`~gaplab.core.regpath.container.RegPath` without pickle: the single-file
``.npz`` (λ_j, W, one array per column, JSON metadata and optionally the solver state of the
last point) and the lazy opening of an on-disk path store (:mod:`gaplab.core.regpath.store`).
"""
from __future__ import annotations

import json
import math
import os
import stat
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .. import jsonsafe
from ..atomic import atomic_write, npz_path
from . import store as pst
from .points import _BOOL_COLS, _FLOAT_COLS, _INT_COLS, _OPTIONAL_COLS, _STR_COLS
from .solverstate import _STATE_FIELDS, _STATE_PREFIX, _solver_state
from .store import PathStoreError

__all__ = ["PathFileError", "FORMAT_VERSION"]

#: version of the single-file .npz format written by RegPath.save
FORMAT_VERSION = 1
_KINDS = ("eps", "heuristic", "grid")


class PathFileError(ValueError):
    """A path file (``RegPath.load``, ``resume_path``) that is not valid; the message names the
    file and the problem."""


# ============================================================================ single-file .npz
def save_npz(path, file, solver):
    """Write ``path`` to ``file`` (see :meth:`~gaplab.core.regpath.container.RegPath.save`), with
    the state of ``solver`` (the last point's, or None) for
    :func:`~gaplab.core.regpath.resume.resume_path`; returns the file written (None for a file
    object)."""
    arrays = {"lams": path.lams, "W": path.W}
    for c in _FLOAT_COLS + _INT_COLS + _BOOL_COLS:
        arrays[c] = path.column(c)
    for c in _STR_COLS:
        arrays[c] = np.array([r[c] for r in path._rows], dtype="U32").reshape(len(path))
    meta = dict(path.meta)
    meta.update(kind=path.kind, format_version=FORMAT_VERSION)
    if solver is not None and len(path):
        info, state = _solver_state(solver)
        info["point"] = len(path) - 1
        meta["resume_state"] = info
        arrays.update(state)
    arrays["meta_json"] = np.array(json.dumps(jsonsafe.encode(meta), allow_nan=False))
    if hasattr(file, "write"):
        np.savez(file, **arrays)
        return None
    target = npz_path(file)
    with atomic_write(target, "wb") as fh:
        np.savez(fh, **arrays)
    return target


def load_npz(cls, file):
    """A ``cls`` (RegPath) read from the ``.npz`` ``file`` (see :meth:`~gaplab.core.regpath.container.RegPath.load`).

    Raises
    ------
    PathFileError
        Naming the file and the problem.
    FileNotFoundError
        If the file does not exist.
    """
    name = str(file) if not hasattr(file, "read") else getattr(file, "name", "<file object>")

    def bad(problem):
        return PathFileError(f"{name}: not a valid gaplab path file: {problem}")

    try:
        if not hasattr(file, "read") and zipfile.is_zipfile(file):
            pst.check_npz_members(file)  # sizes from the headers, before anything is allocated
        z = np.load(file, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise bad(f"cannot read it as .npz ({type(exc).__name__}: {exc})") from None
    if not hasattr(z, "files"):
        raise bad("it holds a single array, not an npz archive")
    with z:
        try:
            return _from_npz(cls, z, bad)
        except PathFileError:
            raise
        except (KeyError, IndexError, ValueError, TypeError, OSError, EOFError, zipfile.BadZipFile,
                zlib.error, RecursionError) as exc:
            raise bad(f"{type(exc).__name__}: {exc}") from None


def _npz_meta(z, bad) -> tuple[str, dict]:
    """(kind, metadata) of an opened path .npz, checked: the arrays present, valid JSON, the
    format version and kind."""
    needed = ("meta_json", "lams", "W") + _FLOAT_COLS + _INT_COLS + _BOOL_COLS + _STR_COLS
    missing = [k for k in needed if k not in z.files and k not in _OPTIONAL_COLS]
    if missing:
        raise bad(f"missing arrays {', '.join(missing)}")
    try:
        meta = json.loads(str(z["meta_json"]))
    except (json.JSONDecodeError, ValueError) as exc:
        raise bad(f"the metadata is not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise bad("the metadata is not a JSON object")
    kind = meta.pop("kind", None)
    version = meta.pop("format_version", None)
    if version != FORMAT_VERSION:
        raise bad(f"unsupported format version {version!r} (expected {FORMAT_VERSION})")
    if kind not in _KINDS:
        raise bad(f"unknown kind {kind!r} (expected 'eps', 'heuristic' or 'grid')")
    return kind, meta


def _npz_arrays(z, meta: dict, bad):
    """(λ (J,), W (J, d), columns {name: (J,)}) of an opened path .npz, checked: dtypes, shapes,
    λ finite, > 0 and strictly decreasing, W finite; columns added later read as NaN."""
    W = z["W"]
    lams = z["lams"]
    if lams.ndim != 1 or not np.issubdtype(lams.dtype, np.floating):
        raise bad(f"lams must be a 1-D float array, got shape {lams.shape} dtype {lams.dtype}")
    J = lams.shape[0]
    if W.ndim != 2 or W.shape[0] != J or not np.issubdtype(W.dtype, np.floating):
        raise bad(f"W must be a float array of shape ({J}, d), got shape {W.shape} dtype {W.dtype}")
    if "d" in meta and isinstance(meta["d"], int) and J and W.shape[1] != meta["d"]:
        raise bad(f"W has {W.shape[1]} columns, the metadata says d = {meta['d']}")
    if not np.all(np.isfinite(lams)) or np.any(lams <= 0):
        raise bad("every λ must be finite and > 0")
    if J > 1 and not np.all(np.diff(lams) < 0):
        raise bad("λ must be strictly decreasing")
    if not np.all(np.isfinite(W)):
        raise bad("W holds NaN or inf")
    cols = {c: z[c] if c in z.files else np.full(J, math.nan)
            for c in _FLOAT_COLS + _INT_COLS + _BOOL_COLS + _STR_COLS}
    for c, a in cols.items():
        if a.shape != (J,):
            raise bad(f"column {c!r} has shape {a.shape}, expected ({J},)")
    if not np.array_equal(cols["lam"], lams):
        raise bad("the lam column differs from lams")
    return lams, W, cols


def _from_npz(cls, z, bad):
    """The path held by the opened .npz ``z``; ``bad(problem)`` makes the error raised."""
    kind, meta = _npz_meta(z, bad)
    out = cls(kind, meta)
    lams, W, cols = _npz_arrays(z, meta, bad)
    for j in range(lams.shape[0]):
        r = {}
        for c in _FLOAT_COLS:
            r[c] = float(cols[c][j])
        for c in _INT_COLS:
            r[c] = int(cols[c][j])
        r["certified"] = bool(cols["certified"][j])
        for c in _STR_COLS:
            r[c] = str(cols[c][j])
        out._rows.append(r)
        out._W.append(W[j].astype(np.float64))
    state = meta.get("resume_state")
    if state is not None:
        miss = [k for k in _STATE_FIELDS if _STATE_PREFIX + k not in z.files]
        if miss or not isinstance(state, dict):
            raise bad(f"the saved solver state is incomplete (missing {', '.join(miss[:5])})")
        out._resume_arrays = {k[len(_STATE_PREFIX):]: np.array(z[k]) for k in z.files
                              if k.startswith(_STATE_PREFIX)}
    return out


# ============================================================================ opening a store
def open_path(cls, path, *, model=None, dataset: str | None = None):
    """A ``cls`` (RegPath) opened from a store directory (lazily) or a ``.npz`` file (see
    :meth:`~gaplab.core.regpath.container.RegPath.open`), checked against ``dataset`` and the model's n and d."""
    p = Path(os.fspath(path))
    if not p.exists():
        raise FileNotFoundError(f"{str(p)!r} does not exist (expected a path store directory or a path .npz file)")
    _check_kind(p, PathFileError, "a path store directory or a path .npz file")
    if p.is_dir():
        _check_kind(p / pst.MANIFEST, PathStoreError, "a path store's manifest (a regular file)", missing_ok=True)
    out = _open_store(cls, p) if p.is_dir() else cls.load(path)
    name = f"path store {str(p)!r}" if p.is_dir() else str(p)
    err = PathStoreError if p.is_dir() else PathFileError
    if dataset is not None and out.meta.get("dataset") not in (None, dataset):
        raise err(f"{name} was computed on the dataset {out.meta.get('dataset')!r}, not {dataset!r}")
    if model is not None:
        n, d = int(model.arrays.n), int(model.arrays.d)
        if out.meta.get("n") != n or out.meta.get("d") != d:
            raise err(f"{name} was computed on a model with n = {out.meta.get('n')}, d = {out.meta.get('d')}; "
                      f"this model has n = {n}, d = {d} (another dataset?)")
    return out


def _check_kind(p: Path, err, expected: str, missing_ok: bool = False) -> None:
    """``err`` unless ``p`` is a regular file or a directory (checked with ``os.stat``, before
    any open: an open of a FIFO blocks until a writer comes, a device such as /dev/zero reads
    without end)."""
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        if missing_ok:
            return
        raise
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise err(f"{str(p)!r} is not a regular file or a directory (expected {expected}; a FIFO, socket "
                  "or device is not opened)")


def _store_row(root: Path, j: int, r) -> dict:
    """Row ``j`` of a store's manifest with typed columns (NaN for columns added later)."""
    try:
        row = {c: float(r[c] if c in r or c not in _OPTIONAL_COLS else math.nan) for c in _FLOAT_COLS}
        row.update({c: int(r[c]) for c in _INT_COLS})
        row["certified"] = bool(r["certified"])
        row.update({c: str(r[c]) for c in _STR_COLS})
    except (KeyError, TypeError, ValueError) as exc:
        raise PathStoreError(f"path store {str(root)!r}, breakpoint {j}: broken row in the manifest "
                             f"({type(exc).__name__}: {exc})") from None
    return row


def _open_store(cls, root: Path):
    """The path of the store ``root`` with its rows in memory and its weights left on disk;
    PathStoreError for a broken manifest or a missing breakpoint file."""
    man = pst.read_manifest(root)
    meta = dict(man["meta"])
    if meta.get("d") != man["d"]:
        raise PathStoreError(f"path store {str(root)!r}: the metadata says d = {meta.get('d')}, the manifest "
                             f"d = {man['d']}")
    out = cls(man["kind"], meta)
    for j, r in enumerate(man["rows"]):
        row = _store_row(root, j, r)
        f = man["files"][j]
        if not isinstance(f, dict) or not isinstance(f.get("file"), str) or f["file"] != pst.bp_name(j):
            raise PathStoreError(f"path store {str(root)!r}, breakpoint {j}: broken file entry {f!r}")
        if not (root / f["file"]).is_file():
            raise PathStoreError(f"path store {str(root)!r}, breakpoint {j} (λ = {row['lam']:.6g}): the "
                                 f"breakpoint file {f['file']} is missing")
        out._rows.append(row)
        out._W.append(None)
        out._files.append(f)
    out._store = root
    if isinstance(man.get("resume_state"), dict):
        out.meta["resume_state"] = man["resume_state"]
    return out
