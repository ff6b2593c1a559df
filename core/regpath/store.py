"""The on-disk path store: an appendable directory of a regularization path (or grid search), one
breakpoint at a time (Paper: Sec. 4, Alg. 6-7: the breakpoints λ_j, w_j and their certificates).

Layout (a directory)::

    STORE/manifest.json        format, kind, metadata (n, d, dataset, settings) and one row per
                               breakpoint (λ, gap, Δ, passes, time, test error, ...) with the name,
                               encoding, nnz and size of its weight file
    STORE/bp_000000.npz        breakpoint 0: w_0 ...
    STORE/bp_000001.npz        ... one file per breakpoint
    STORE/resume_state_NNNNNN.npz  (optional) the solver state of the last checkpointed
                               breakpoint NNNNNN (--checkpoint-every, Ctrl-C, disk full) for
                               ``resume_path`` / ``gaplab path --resume STORE``: the breakpoints
                               after it are recomputed (the solver is deterministic) and replace
                               those on disk (stores of older versions: ``resume_state.npz``)

Each breakpoint file is an ordinary ``.npz`` (a zip of ``.npy`` members, readable with
``np.load`` alone, no pickle): a **sparse** w as ``idx_delta`` (gaps between the
non-zero indices in the smallest unsigned dtype holding them, deflate-compressed) and
``val`` (float64 non-zero values), or a **dense** ``w`` when more than a third of the entries
are non-zero; plus a JSON header (index, λ, d, nnz, encoding) cross-checked against the
manifest. The values are stored raw by default: w takes few distinct values, so they deflate
well, but deflating them costs far more write time than the indices;
``compress_values=True`` (``gaplab path --store-compress``) trades that time for a smaller
store. Reading back is bitwise exact (float64 values are copied, never rounded). The zip
members carry CRC-32s that ``zipfile`` checks on every read, so a corrupt chunk is detected.

Atomicity: a breakpoint file is written to a temporary file, fsync'ed and renamed; only then is
the manifest (which lists it) rewritten the same way. A process killed at any moment leaves a
manifest listing exactly the breakpoints whose files are complete; a half-written temporary
file (``.bp_*.tmp``) is never listed and is removed by the next writer. The manifest is the
reference: a breakpoint file that the manifest does not list (killed between the two renames)
is ignored and overwritten.
The writer owns the rows: they change in memory only after the manifest that lists them is on
disk, and a SIGINT during a write is raised when the write is complete
(:func:`gaplab.core.interrupt.held_sigint`).

Why this format: ``.npz`` is numpy's own container (no new dependency; HDF5 is not appendable
atomically), one file per breakpoint makes each append atomic with a rename and each lazy read
touch exactly one file, and a JSON manifest gives the metadata (gap, test metric against λ)
without opening any weight file.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import time
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np
from numba import njit

from .. import jsonsafe, validate
from ..atomic import atomic_write
from ..interrupt import held_sigint
from ..storelock import LOCK_FILE, store_lock

__all__ = ["PathStoreError", "PathStoreWarning", "PathStoreWriter", "read_manifest", "read_weights",
           "STORE_FORMAT", "STORE_VERSION", "MANIFEST", "encode_weights"]

STORE_FORMAT = "gaplab-path-store"
STORE_VERSION = 1
MANIFEST = "manifest.json"
RESUME_FILE = "resume_state.npz"
RESERVE_FILE = ".gaplab-space-reserve"   # disk space kept free for the solver state (see PathStoreWriter.reserve)
DENSE_FRACTION = 1.0 / 3.0   # more non-zeros than this: store w dense
_BP_RE = re.compile(r"^bp_(\d{6,})\.npz$")
_RESUME_RE = re.compile(r"^resume_state(_\d{6,})?\.npz$")


class PathStoreWarning(UserWarning):
    """A path store that was damaged but still holds valid breakpoints (the message names the
    store, the first bad breakpoint and how many are kept)."""


class PathStoreError(ValueError):
    """A path store that is not valid (missing or corrupt breakpoint, another dataset or d);
    the message names the store and the breakpoint."""


def bp_name(j: int) -> str:
    return f"bp_{j:06d}.npz"


# ============================================================================ encoding
@njit(cache=True, nogil=True)
def _count_nonzero_bits(bits):
    c = 0
    for k in range(bits.size):
        if bits[k] != 0:
            c += 1
    return c


@njit(cache=True, nogil=True)
def _gather(bits, w, delta, val):
    """Non-zero bit patterns of w: gaps between their indices (the first: its index) and values;
    returns the largest gap."""
    c = 0
    prev = 0
    big = 0
    for k in range(bits.size):
        if bits[k] != 0:
            g = k - prev
            delta[c] = g
            if g > big:
                big = g
            val[c] = w[k]
            prev = k
            c += 1
    return big


def encode_weights(w: np.ndarray) -> tuple[str, dict]:
    """(encoding, arrays) of a weight vector: "sparse" (``idx_delta``: gaps between the non-zero
    indices in the smallest unsigned dtype that holds them, ``val`` float64) or "dense" (``w``).
    Non-zero means a non-zero bit pattern: -0.0 is kept and read back bitwise."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    bits = w.view(np.uint64)
    nnz = _count_nonzero_bits(bits)
    if nnz > DENSE_FRACTION * w.size or w.size >= 2**32:
        return "dense", {"w": w}
    delta = np.empty(nnz, dtype=np.uint32)
    val = np.empty(nnz, dtype=np.float64)
    big = _gather(bits, w, delta, val)
    for dt in (np.uint8, np.uint16):
        if big <= np.iinfo(dt).max:
            delta = delta.astype(dt)
            break
    return "sparse", {"idx_delta": delta, "val": val}


def _write_npz(fh, arrays: dict, compress: set) -> None:
    """An .npz (zip of .npy members) with deflate (level 1) on the members in ``compress`` and
    the others stored; np.load reads it."""
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            if name in compress:
                info.compress_type = zipfile.ZIP_DEFLATED
                for attr in ("compress_level", "_compresslevel"):  # 3.13+ / 3.7-3.12
                    with contextlib.suppress(AttributeError):
                        setattr(info, attr, 1)
            else:
                info.compress_type = zipfile.ZIP_STORED
            with zf.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(arr), allow_pickle=False)


# ============================================================================ manifest
def read_manifest(store) -> dict:
    """The store's manifest (checked: format, version, rows and files consistent).

    Raises
    ------
    FileNotFoundError
        If ``store`` is not a directory.
    PathStoreError
        If it holds no manifest or the manifest is broken.
    """
    root = Path(os.fspath(store))
    if not root.is_dir():
        raise FileNotFoundError(f"path store {str(root)!r} does not exist (or is not a directory)")
    mp = root / MANIFEST
    try:
        text = mp.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PathStoreError(f"path store {str(root)!r}: no {MANIFEST} (not a gaplab path store, or no "
                             "breakpoint was written)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PathStoreError(f"path store {str(root)!r}: {MANIFEST} cannot be read ({type(exc).__name__}: "
                             f"{exc})") from None
    try:
        man = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PathStoreError(f"path store {str(root)!r}: {MANIFEST} is not valid JSON ({exc})") from None
    except RecursionError:
        raise PathStoreError(f"path store {str(root)!r}: {MANIFEST} is nested too deeply to be a gaplab "
                             "path-store manifest") from None
    if not isinstance(man, dict) or man.get("format") != STORE_FORMAT:
        raise PathStoreError(f"path store {str(root)!r}: {MANIFEST} is not a gaplab path-store manifest")
    if man.get("format_version") != STORE_VERSION:
        raise PathStoreError(f"path store {str(root)!r}: unsupported format version "
                             f"{man.get('format_version')!r} (expected {STORE_VERSION})")
    # the rows' numbers: "inf"/"nan" (bare Infinity/NaN in stores written before jsonsafe); the metadata
    # keeps its strings, as the in-memory path's does
    man["rows"] = jsonsafe.decode(man.get("rows"))
    rows, files = man.get("rows"), man.get("files")
    if not isinstance(rows, list) or not isinstance(files, list) or len(rows) != len(files):
        raise PathStoreError(f"path store {str(root)!r}: {MANIFEST} has {len(rows or [])} rows but "
                             f"{len(files or [])} breakpoint files")
    if man.get("kind") not in ("eps", "heuristic", "grid"):
        raise PathStoreError(f"path store {str(root)!r}: unknown kind {man.get('kind')!r}")
    if not isinstance(man.get("meta"), dict) or not isinstance(man.get("d"), int):
        raise PathStoreError(f"path store {str(root)!r}: {MANIFEST} lacks the metadata or d")
    for j, r in enumerate(rows):
        lam = r.get("lam") if isinstance(r, dict) else None
        try:
            validate.positive("λ", lam)
        except ValueError as exc:
            raise PathStoreError(f"path store {str(root)!r}, breakpoint {j}: {exc}"
                                 + ("" if isinstance(r, dict) else f" (row {r!r} is not a mapping)")) from None
    lams = [r["lam"] for r in rows]
    for j in range(1, len(lams)):
        if not lams[j] < lams[j - 1]:
            # a row overwritten by an interrupted run of an older writer (row j-1 copied over
            # row j): the breakpoints before j are whole, keep them
            warnings.warn(PathStoreWarning(
                f"path store {str(root)!r}, breakpoint {j}: λ = {lams[j]} is not below λ_{j - 1} = {lams[j - 1]} "
                f"(a row overwritten by an interrupted run); using the first {j} breakpoints only"), stacklevel=2)
            del rows[j:], files[j:]
            state = man.get("resume_state")
            if isinstance(state, dict) and not (isinstance(state.get("point"), int) and state["point"] < j):
                del man["resume_state"]  # the solver state of a breakpoint no longer listed
            break
    return man


_DEFLATE_MAX_RATIO = 1032   # the most deflate can expand (zlib's bound)
_HEADER_CAP = 1 << 18        # bytes of a breakpoint's JSON header array


def check_npz_members(file, caps: dict | None = None) -> None:
    """Check every ``.npy`` member of the npz ``file`` from its header only, before ``np.load``
    allocates anything: a known npy version, no object dtype, and an array that fits in the
    member (stored: its size; deflated: what its compressed bytes can expand to) and in
    ``caps[name]`` bytes when given.

    Raises
    ------
    ValueError
        Naming the member and what it claims (e.g. a header claiming shape (2**40,)).
    zipfile.BadZipFile, OSError, EOFError
        Not a zip file, or truncated.
    """
    caps = caps or {}
    f = Path(os.fspath(file))
    size = f.stat().st_size
    with zipfile.ZipFile(f) as zf:
        for info in zf.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if info.compress_size > size:
                raise ValueError(f"member {info.filename!r} claims {info.compress_size} bytes in a file of {size}")
            room = info.file_size
            if info.compress_type != zipfile.ZIP_STORED:
                room = min(room, _DEFLATE_MAX_RATIO * info.compress_size + 64)
            elif info.file_size != info.compress_size:
                raise ValueError(f"member {info.filename!r}: stored, but {info.file_size} bytes from "
                                 f"{info.compress_size}")
            with zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    shape, _fortran, dtype = np.lib.format.read_array_header_1_0(fh)
                elif version == (2, 0):
                    shape, _fortran, dtype = np.lib.format.read_array_header_2_0(fh)
                else:
                    raise ValueError(f"member {info.filename!r}: unsupported .npy version {version}")
                head_len = fh.tell()
            if dtype.hasobject:
                raise ValueError(f"member {info.filename!r} holds Python objects (dtype {dtype})")
            nbytes = math.prod(int(k) for k in shape) * dtype.itemsize
            cap = caps.get(name)
            if nbytes > room - head_len or (cap is not None and nbytes > cap):
                raise ValueError(f"member {info.filename!r} claims an array of shape {tuple(shape)} and dtype "
                                 f"{dtype} ({nbytes} bytes), more than it can hold "
                                 f"({max(room - head_len, 0) if cap is None else min(room - head_len, cap)} bytes)")


def read_weights(store, j: int, entry: dict, d: int, lam: float) -> np.ndarray:
    """w_j of breakpoint ``j`` (float64 (d,)), checked against its manifest ``entry``.

    Raises
    ------
    PathStoreError
        Naming the store and the breakpoint: missing file, not an npz, corrupt member (CRC),
        header or shape not matching the manifest.
    """
    root = Path(os.fspath(store))
    f = root / entry["file"]

    def bad(problem):
        return PathStoreError(f"path store {str(root)!r}, breakpoint {j} ({entry['file']}, λ = {lam:.6g}): "
                              f"{problem}")

    if not f.is_file():
        raise bad("the breakpoint file is missing")
    try:
        check_npz_members(f, {"header": _HEADER_CAP, "w": 8 * d, "val": 8 * d, "idx_delta": 8 * d})
        with np.load(f, allow_pickle=False) as z:
            head = jsonsafe.decode(json.loads(str(z["header"])))
            enc = head.get("encoding")
            if head.get("index") != j or head.get("lam") != lam or head.get("d") != d:
                raise bad(f"its header (index {head.get('index')}, λ = {head.get('lam')}, d = {head.get('d')}) does "
                          f"not match the manifest (index {j}, λ = {lam}, d = {d})")
            if enc == "dense":
                w = z["w"]
                if w.dtype != np.float64 or w.shape != (d,):
                    raise bad(f"w has dtype {w.dtype} and shape {w.shape}, expected float64 ({d},)")
                return np.array(w, dtype=np.float64)
            if enc != "sparse":
                raise bad(f"unknown encoding {enc!r}")
            delta, val = z["idx_delta"], z["val"]
    except PathStoreError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error, RecursionError) as exc:
        raise bad(f"cannot be read (corrupt or truncated chunk: {type(exc).__name__}: {exc})") from None
    nnz = int(head.get("nnz", -1))
    if delta.dtype not in (np.uint8, np.uint16, np.uint32) or val.dtype != np.float64 or delta.shape != (nnz,) \
            or val.shape != (nnz,):
        raise bad(f"sparse arrays idx_delta {delta.dtype}{delta.shape} / val {val.dtype}{val.shape} do not "
                  f"match nnz = {nnz}")
    idx = np.cumsum(delta, dtype=np.int64)
    if nnz and (idx[-1] >= d or (nnz > 1 and np.any(delta[1:] == 0))):
        raise bad(f"sparse indices out of range or repeated (d = {d})")
    w = np.zeros(d, dtype=np.float64)
    w[idx] = val
    return w


# ============================================================================ writer
def _json_dumps(obj) -> str:
    return json.dumps(jsonsafe.encode(obj), allow_nan=False, separators=(",", ":"))


class PathStoreWriter:
    """Appends breakpoints to a path store, each one durable as soon as :meth:`append` returns.

    Parameters
    ----------
    store : str or os.PathLike
        The directory (created if missing).
    kind : {"eps", "heuristic", "grid"}
    meta : dict
        JSON-ready metadata; must hold ``n`` and ``d``.
    mode : {"new", "append"}
        "new": the directory must not hold a manifest (or ``overwrite=True``: its breakpoint files
        are removed first). "append": continue an existing store (a resumed path): its kind and
        d must match.
    overwrite : bool
    compress_values : bool
        Deflate the float64 values (and dense w) too: a smaller store, more write time.

    Raises
    ------
    StoreLockedError
        Another process (or thread) writes to ``store`` (:mod:`gaplab.core.storelock`): one
        writer per store. The lock is held until :meth:`close`.
    """

    def __init__(self, store, kind: str, meta: dict, *, mode: str = "new", overwrite: bool = False,
                 compress_values: bool = False):
        self.root = Path(os.fspath(store))
        self.compress = {"idx_delta", "val", "w"} if compress_values else {"idx_delta"}
        if mode not in ("new", "append"):
            raise ValueError(f"mode must be 'new' or 'append', got {mode!r}")
        if not isinstance(meta.get("d"), int) or not isinstance(meta.get("n"), int):
            raise ValueError("the store's meta must hold the model's n and d (ints)")
        self.d = int(meta["d"])
        self.io_time_s = 0.0   # seconds spent encoding and writing (RegPath.io_stats)
        self.bytes_written = 0
        if self.root.exists() and not self.root.is_dir():
            raise PathStoreError(f"path store {str(self.root)!r} exists and is not a directory")
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = store_lock(self.root, what="path store")  # before anything is read or cleaned
        try:
            self._open(kind, meta, mode, overwrite)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop writing: remove the disk-space reserve, release the store's writer lock."""
        self.free_reserve()
        lock, self._lock = getattr(self, "_lock", None), None
        if lock is not None:
            lock.release()

    def reserve(self, nbytes: int) -> bool:
        """Keep at least ``nbytes`` of disk space allocated to the store's reserve file, so that a
        full disk (ENOSPC while writing a breakpoint) still leaves room for the solver state of
        the last written breakpoint: :meth:`free_reserve` gives the space back just before that
        state is written. Grows only; returns False when the space cannot be allocated (the
        disk is already full: best effort)."""
        nbytes = int(nbytes)
        if nbytes <= getattr(self, "_reserved", 0):
            return True
        target = nbytes + nbytes // 4  # room to grow with the manifest
        try:
            fd = os.open(self.root / RESERVE_FILE, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.posix_fallocate(fd, 0, target)
            finally:
                os.close(fd)
        except (OSError, AttributeError):  # no posix_fallocate (not POSIX) or no space
            return False
        self._reserved = target
        return True

    def free_reserve(self) -> None:
        """Remove the reserve file (its space becomes free for the solver state)."""
        self._reserved = 0
        with contextlib.suppress(OSError):
            os.unlink(self.root / RESERVE_FILE)

    @property
    def manifest_bytes(self) -> int:
        """Size of the manifest last written (a rewrite needs that much room next to it)."""
        return getattr(self, "_manifest_bytes", 0)

    def _open(self, kind: str, meta: dict, mode: str, overwrite: bool) -> None:
        self._clean_tmp()
        if mode == "append":
            with warnings.catch_warnings():  # a damaged store was already reported when it was opened
                warnings.simplefilter("ignore", PathStoreWarning)
                man = read_manifest(self.root)
            if man["kind"] != kind:
                raise PathStoreError(f"path store {str(self.root)!r} holds a {man['kind']!r} path, not {kind!r}")
            if man["d"] != self.d or man["meta"].get("n") != meta["n"]:
                raise PathStoreError(f"path store {str(self.root)!r} was written for n = {man['meta'].get('n')}, "
                                     f"d = {man['d']}; this model has n = {meta['n']}, d = {self.d}")
            self.man = man
            self.man["meta"] = dict(meta)
        else:
            if (self.root / MANIFEST).exists() and not overwrite:
                raise PathStoreError(f"path store {str(self.root)!r} already holds a path (give another "
                                     "directory, or overwrite)")
            self.man = {"format": STORE_FORMAT, "format_version": STORE_VERSION, "kind": kind, "d": self.d,
                        "meta": dict(meta), "rows": [], "files": []}
            # nothing is written (nor an old path replaced) before the first breakpoint: a run that
            # fails or is stopped before it leaves the directory as it was
            self._started = False

    def _start(self) -> None:
        """Before the first write of a new store: the empty manifest, then an old path's files go."""
        if getattr(self, "_started", True):
            return
        with held_sigint():
            self._write_manifest(dict(self.man, rows=[], files=[]))
            self._started = True
        for f in self.root.iterdir():
            if _BP_RE.match(f.name) or _RESUME_RE.match(f.name):
                with contextlib.suppress(OSError):
                    f.unlink()

    def _clean_tmp(self):
        for f in self.root.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                f.unlink()

    def __len__(self) -> int:
        return len(self.man["rows"])

    def _write_manifest(self, man: dict | None = None):
        text = _json_dumps(self.man if man is None else man)
        with atomic_write(self.root / MANIFEST, "w") as fh:
            fh.write(text)
        self._manifest_bytes = len(text.encode("utf-8"))

    def append(self, row: dict, w: np.ndarray, meta: dict | None = None) -> None:
        """Write the next breakpoint (its file, then the manifest listing it; both atomic), with
        new metadata ``meta`` if given.

        The writer owns the rows: :attr:`rows` (and the manifest's file entries) get the new
        breakpoint only once the manifest listing it is on disk, and a Ctrl-C during the write
        is raised after that (:func:`~gaplab.core.interrupt.held_sigint`), so the rows in memory
        are always those on disk. A failed write (disk full) changes neither."""
        t0 = time.perf_counter()
        j = len(self.man["rows"])
        w = np.asarray(w)
        if w.shape != (self.d,):
            raise ValueError(f"w must have shape ({self.d},), got {w.shape}")
        enc, arrays = encode_weights(w)
        nnz = int(arrays["val"].size) if enc == "sparse" else int(np.count_nonzero(w))
        head = {"index": j, "lam": float(row["lam"]), "d": self.d, "nnz": nnz, "encoding": enc}
        arrays["header"] = np.array(_json_dumps(head))
        name = bp_name(j)
        row = dict(row)
        self._start()
        with held_sigint():
            with atomic_write(self.root / name, "wb") as fh:
                _write_npz(fh, arrays, compress=self.compress)
                size = fh.tell()
            entry = {"file": name, "encoding": enc, "nnz": nnz, "bytes": int(size)}
            man = dict(self.man, rows=self.man["rows"] + [row], files=self.man["files"] + [entry])
            if meta is not None:
                man["meta"] = dict(meta)
            self._write_manifest(man)  # a saved solver state of an earlier breakpoint stays valid (see truncate)
            self.man["meta"] = man["meta"]
            self.man["rows"].append(row)
            self.man["files"].append(entry)
        self.bytes_written += int(size)
        self.io_time_s += time.perf_counter() - t0

    def truncate(self, k: int) -> None:
        """Keep breakpoints 0..k-1 only (a path resumed from the solver state of breakpoint k-1
        recomputes the later ones): the manifest first, then the files it no longer lists."""
        if not 0 <= k <= len(self.man["rows"]):
            raise ValueError(f"truncate needs 0 <= k <= {len(self.man['rows'])}, got {k}")
        self.adopt(self.man["rows"][:k], self.man["files"][:k])

    def adopt(self, rows: list, files: list) -> None:
        """Continue from ``rows`` and their ``files`` (a prefix of this store's breakpoints, whose
        rows may differ, e.g. in the end reason): the manifest lists them, the breakpoint files
        it no longer lists are removed, and these very lists become the writer's rows (a
        :class:`~gaplab.core.regpath.container.RegPath` shares them: one owner, no copy to fall out of step)."""
        k = len(rows)
        if len(files) != k or k > len(self.man["rows"]):
            raise ValueError(f"adopt needs a prefix of the store's {len(self.man['rows'])} breakpoints, got "
                             f"{k} rows and {len(files)} files")
        for j in range(k):
            if files[j].get("file") != bp_name(j) or rows[j].get("lam") != self.man["rows"][j].get("lam"):
                raise PathStoreError(f"path store {str(self.root)!r}, breakpoint {j}: the rows to continue from "
                                     "are not those of the store")
        dropped = [f["file"] for f in self.man["files"][k:]]
        with held_sigint():
            self._write_manifest(dict(self.man, rows=rows, files=files))
            self.man["rows"], self.man["files"] = rows, files
        for name in dropped:
            with contextlib.suppress(OSError):
                (self.root / name).unlink()

    def drop_resume_state(self) -> None:
        """Forget the saved solver state (the path is finished)."""
        if "resume_state" in self.man:
            with held_sigint():
                self._write_manifest({k: v for k, v in self.man.items() if k != "resume_state"})
                self.man.pop("resume_state", None)
        self._remove_resume_files()

    def update(self, meta: dict | None = None) -> None:
        """Rewrite the manifest with new metadata and the rows as they are now (the last one's
        end reason may have changed)."""
        t0 = time.perf_counter()
        if not getattr(self, "_started", True):  # nothing on disk yet: only the memory changes
            if meta is not None:
                self.man["meta"] = dict(meta)
            return
        with held_sigint():
            man = self.man if meta is None else dict(self.man, meta=dict(meta))
            self._write_manifest(man)
            self.man["meta"] = man["meta"]
        self.io_time_s += time.perf_counter() - t0

    def write_resume_state(self, info: dict, arrays: dict, meta: dict | None = None) -> None:
        """The solver state of the last breakpoint (for ``resume_path``), then the manifest."""
        t0 = time.perf_counter()
        # a file of its own per breakpoint: the manifest's state entry and the arrays it names
        # always belong together, even when the manifest write fails (disk full)
        name = RESUME_FILE if info.get("point") is None else f"resume_state_{int(info['point']):06d}.npz"
        with held_sigint():
            with atomic_write(self.root / name, "wb") as fh:
                np.savez(fh, **arrays)
            man = dict(self.man, resume_state=dict(info, file=name))
            if meta is not None:
                man["meta"] = dict(meta)
            self._write_manifest(man)
            self.man["meta"], self.man["resume_state"] = man["meta"], man["resume_state"]
        self._remove_resume_files(keep=name)
        self.io_time_s += time.perf_counter() - t0

    def _remove_resume_files(self, keep: str | None = None) -> None:
        for f in self.root.iterdir():
            if _RESUME_RE.match(f.name) and f.name != keep:
                with contextlib.suppress(OSError):
                    f.unlink()

    @property
    def rows(self):
        return self.man["rows"]


def read_resume_arrays(store, info: dict) -> dict:
    """The saved solver arrays named in the manifest's ``resume_state``."""
    name = info.get("file", RESUME_FILE)
    if not isinstance(name, str) or not _RESUME_RE.match(name):
        raise PathStoreError(f"path store {str(Path(os.fspath(store)))!r}: the saved solver state's file name "
                             f"{name!r} is not a resume_state file")
    f = Path(os.fspath(store)) / name
    try:
        check_npz_members(f)
        with np.load(f, allow_pickle=False) as z:
            return {k: np.array(z[k]) for k in z.files}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise PathStoreError(f"path store {str(Path(os.fspath(store)))!r}: the saved solver state {f.name} cannot "
                             f"be read ({type(exc).__name__}: {exc})") from None


def store_size_bytes(store) -> int:
    """Bytes of the store's files (its writer's lock file and space reserve left out)."""
    root = Path(os.fspath(store))
    return sum(f.stat().st_size for f in root.iterdir() if f.is_file() and f.name not in (LOCK_FILE, RESERVE_FILE))
