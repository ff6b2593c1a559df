"""The results store of a sweep (:class:`Store`), a directory::

    STORE/manifest.json          store format, spec name/version, the spec, one entry per run
                                 (config, status "done"/"failed", attempts, errors, file)
    STORE/runs/<run_id>.parquet  one file per finished run: its trace rows and config columns

Every file is written to a temporary file and moved in place with ``os.replace``, so an
interrupted sweep leaves a consistent store; re-running the spec skips the runs whose status is
"done" and re-runs failed and missing ones. Read it with :class:`Store` or directly with
pandas/pyarrow (``pd.read_parquet(STORE / "runs" / f)``).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from .. import jsonsafe
from ..atomic import atomic_path
from ..storelock import LOCK_FILE, StoreLock, StoreLockedError, store_lock
from .spec import SweepSpec, _canonical

__all__ = ["Store", "STORE_FORMAT", "lock_store"]

STORE_FORMAT = 1

# ============================================================================ the store
def lock_store(path, *, wait: bool = False, on_wait=None) -> StoreLock:
    """The writer lock of the sweep store ``path`` (created if missing; one writer per store:
    :func:`gaplab.core.storelock.store_lock`). Raises ValueError when ``path`` is a file or
    cannot be created, :class:`~gaplab.core.storelock.StoreLockedError` when another process
    writes to it (unless ``wait``)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"store {str(p)!r} is a file, not a directory; give a directory for --store")
    try:
        return store_lock(p, what="sweep store", wait=wait, on_wait=on_wait)
    except StoreLockedError:
        raise
    except OSError as exc:
        raise ValueError(f"{exc.strerror or exc}; give a writable directory for --store") from None


def _atomic_write(path: Path, write: Callable[[str], None]):
    """``write(tmp)`` into a temporary file next to ``path``, fsync it, then ``os.replace``: a
    failed or interrupted write leaves the previous file intact and no temporary file
    (:func:`gaplab.core.atomic.atomic_path`)."""
    with atomic_path(path) as tmp:
        write(tmp)


def _manifest_text(manifest: dict) -> str:
    return json.dumps(jsonsafe.encode(manifest), indent=1, allow_nan=False)


class Store:
    """A results store directory: ``manifest.json`` + ``runs/<run_id>.parquet``.

    Parameters
    ----------
    path : str or Path
        The store directory (created by :meth:`open_for`, or opened if it exists).

    Raises
    ------
    ValueError
        The path is a file, or not a store (no manifest), or its format is unknown.
    """

    MANIFEST = "manifest.json"

    def __init__(self, path):
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise ValueError(f"store {str(self.path)!r} is a file, not a directory; give a directory for --store")
        mp = self.path / self.MANIFEST
        if not mp.is_file():
            raise ValueError(f"store {str(self.path)!r} has no {self.MANIFEST} (not a gaplab sweep store)")
        try:
            self.manifest = jsonsafe.decode(json.loads(mp.read_text()))
        except json.JSONDecodeError as exc:
            raise ValueError(f"store manifest {str(mp)!r} is not valid JSON: {exc}") from None
        except RecursionError:
            raise ValueError(f"store manifest {str(mp)!r} is nested too deeply to be a gaplab sweep manifest") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"store manifest {str(mp)!r} cannot be read ({type(exc).__name__}: {exc})") from None
        fmt = self.manifest.get("store_format") if isinstance(self.manifest, dict) else None
        if fmt != STORE_FORMAT:
            raise ValueError(f"store {str(self.path)!r}: field 'store_format' is {fmt!r}, this gaplab reads "
                             f"format {STORE_FORMAT}")
        self._check_manifest(mp)

    def _check_manifest(self, mp) -> None:
        """A tampered manifest is refused here, naming the file, the run and the field (instead of
        a KeyError later)."""
        runs = self.manifest.get("runs")
        if not isinstance(runs, dict):
            raise ValueError(f"store manifest {str(mp)!r}: field 'runs' must be a mapping run_id -> entry, "
                             f"got {type(runs).__name__}")
        for rid, e in runs.items():
            if not isinstance(e, dict):
                raise ValueError(f"store manifest {str(mp)!r}: run {rid!r} must be a mapping, got {type(e).__name__}")
            if e.get("status") not in ("done", "failed"):
                raise ValueError(f"store manifest {str(mp)!r}: run {rid!r} has status {e.get('status')!r} "
                                 "(expected 'done' or 'failed')")
            if not isinstance(e.get("config"), dict) or "kind" not in e["config"]:
                raise ValueError(f"store manifest {str(mp)!r}: run {rid!r} lacks its config (field 'config')")
            if e["status"] == "done" and not (isinstance(e.get("file"), str) and e["file"].startswith("runs/")
                                              and ".." not in e["file"]):
                raise ValueError(f"store manifest {str(mp)!r}: finished run {rid!r} lacks its file "
                                 f"(field 'file' = {e.get('file')!r}, expected 'runs/<run_id>.parquet')")

    # -------------------------------------------------------------- creating / checking
    @classmethod
    def open_for(cls, path, spec: SweepSpec) -> "Store":
        """Open the store of ``spec`` at ``path``, creating it if needed.

        Raises ValueError if ``path`` is a file, a non-empty directory that is not a store, or
        the store of another spec (name) or spec version (field ``version``)."""
        p = Path(path)
        if p.exists() and not p.is_dir():
            raise ValueError(f"store {str(p)!r} is a file, not a directory; give a directory for --store")
        if not (p / cls.MANIFEST).exists():
            if p.exists() and any(f.name != LOCK_FILE for f in p.iterdir()):
                raise ValueError(f"store {str(p)!r} is a non-empty directory without {cls.MANIFEST}; "
                                 "give a new or empty directory for --store")
            manifest = {"store_format": STORE_FORMAT, "spec_name": spec.name, "spec_version": spec.version,
                        "spec": spec.raw, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "runs": {}}
            try:  # an unwritable --store is refused here, before any run
                (p / "runs").mkdir(parents=True, exist_ok=True)
                _atomic_write(p / cls.MANIFEST, lambda t: Path(t).write_text(_manifest_text(manifest)))
            except OSError as exc:
                raise ValueError(f"--store {str(p)!r}: cannot create the store there "
                                 f"({exc.strerror or exc}); give a writable directory") from None
        store = cls(p)
        m = store.manifest
        if m.get("spec_name") != spec.name:
            raise ValueError(f"store {str(p)!r} belongs to spec {m.get('spec_name')!r}, not {spec.name!r} "
                             "(field 'name'); use another --store")
        if m.get("spec_version") != spec.version:
            raise ValueError(f"store {str(p)!r} was written by spec {spec.name!r} version {m.get('spec_version')!r}; "
                             f"this spec has version {spec.version} (field 'version'); use another --store")
        return store

    # -------------------------------------------------------------- writing
    def _write_manifest(self):
        _atomic_write(self.path / self.MANIFEST,
                      lambda t: Path(t).write_text(_manifest_text(self.manifest)))

    def record_done(self, cfg: dict, out: dict, attempts: int, errors: list):
        """Write a finished run's Parquet file, then its manifest entry (both atomically)."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        rid = cfg["run_id"]
        cols = dict(out["rows"])
        n = len(next(iter(cols.values()))) if cols else 0
        lam_label = "" if cfg.get("lam") is None else str(cfg["lam"])
        meta_cols = {"run_id": [rid] * n, "dataset": [cfg["dataset"]] * n, "method": [cfg["method"]] * n,
                     "label": [cfg["label"]] * n, "run_kind": [cfg["kind"]] * n, "seed": [cfg["seed"]] * n,
                     "lam_label": [lam_label] * n, "lam_value": [float(out["lam"])] * n}
        for k in list(cols):
            if k in meta_cols:
                cols[f"point_{k}"] = cols.pop(k)
        arrays = {**meta_cols, **cols}
        table = pa.table({k: pa.array(v, type=pa.float64() if _all_num(v) and k not in meta_cols else None)
                          for k, v in arrays.items()})
        table = table.replace_schema_metadata({b"gaplab_run": _canonical(cfg).encode()})
        f = self.path / "runs" / f"{rid}.parquet"
        _atomic_write(f, lambda t: pq.write_table(table, t))
        self.manifest["runs"][rid] = {"config": cfg, "status": "done", "attempts": attempts, "errors": errors,
                                      "file": f"runs/{rid}.parquet", "summary": out["summary"],
                                      "host": out.get("host"), "pid": out.get("pid"),
                                      "elapsed_s": out.get("elapsed_s"), "cpu_s": out.get("cpu_s"),
                                      "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self._write_manifest()

    def record_failed(self, cfg: dict, attempts: int, errors: list):
        """A run that failed every attempt: status "failed" with its error messages."""
        rid = cfg["run_id"]
        self.manifest["runs"][rid] = {"config": cfg, "status": "failed", "attempts": attempts, "errors": errors,
                                      "error": errors[-1]["message"] if errors else "",
                                      "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self._write_manifest()

    # -------------------------------------------------------------- reading
    def is_done(self, rid: str) -> bool:
        """Finished, with its own Parquet file (see :meth:`check_run_file`)."""
        e = self.manifest["runs"].get(rid)
        return bool(e and e["status"] == "done") and self.check_run_file(rid) is None

    def check_run_file(self, rid: str) -> str | None:
        """What is wrong with the Parquet file of the finished run ``rid`` (None: nothing): it must
        exist, be readable Parquet (its footer: a truncated file is not) and be this run's own
        file: schema metadata ``gaplab_run`` holding the run's config with this run id, and a
        ``run_id`` column. Reads the footer only."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        e = self.manifest["runs"].get(rid)
        if not (e and e["status"] == "done"):
            return "the run is not finished"
        f = self.path / e["file"]
        if not f.is_file():
            return f"its file {e['file']} is missing"
        try:
            schema = pq.read_schema(f)
        except (OSError, pa.ArrowException) as exc:
            return f"its file {e['file']} is not readable Parquet ({type(exc).__name__}: {exc})"
        raw = (schema.metadata or {}).get(b"gaplab_run")
        if raw is None:
            return f"its file {e['file']} is not a gaplab run file (no 'gaplab_run' schema metadata)"
        try:
            cfg = json.loads(raw)
        except (ValueError, RecursionError):
            cfg = None
        if not isinstance(cfg, dict):
            return f"its file {e['file']} has broken 'gaplab_run' metadata"
        if cfg.get("run_id") != rid:
            return f"its file {e['file']} holds run {cfg.get('run_id')!r}, not {rid!r}"
        if "run_id" not in schema.names:
            return f"its file {e['file']} lacks the run_id column"
        return None

    def runs(self):
        """One row per run: run_id, status, attempts, error and the config fields (pandas)."""
        import pandas as pd
        rows = []
        for rid, e in self.manifest["runs"].items():
            c = dict(e["config"])
            c["cache"] = bool(c.get("cache", {}).get("enabled", False)) if isinstance(c.get("cache"), dict) else c.get("cache")
            c["lam_label"] = "" if c.get("lam") is None else str(c.pop("lam"))
            rows.append({"run_id": rid, "status": e["status"], "attempts": e.get("attempts", 1),
                         "error": e.get("error", ""), **{k: v for k, v in c.items() if k != "run_id"}})
        return pd.DataFrame(rows)

    def read_run(self, rid: str):
        """The rows of one finished run (pandas DataFrame)."""
        import pyarrow.parquet as pq
        import pyarrow as pa
        e = self.manifest["runs"].get(rid)
        if e is None or e["status"] != "done":
            raise KeyError(f"run {rid!r} is not a finished run of store {str(self.path)!r}")
        f = self.path / e["file"]
        problem = self.check_run_file(rid)
        if problem is None:
            try:
                df = pq.read_table(f).to_pandas()
            except (OSError, pa.ArrowException) as exc:  # footer intact, data pages not: is_done cannot see it
                problem = (f"its file {e['file']} cannot be read ({type(exc).__name__}: {exc}); remove it and "
                           "run the sweep again to recompute the run")
            else:
                if not (df["run_id"] == rid).all():
                    problem = (f"its file {e['file']} holds rows of other runs; remove it and run the sweep "
                               "again to recompute the run")
        if problem is not None:
            if "run the sweep again" not in problem:
                problem += "; run the sweep again to recompute the run"
            raise ValueError(f"store {str(self.path)!r}, run {rid!r}: {problem}")
        return df

    def traces(self, kinds=("solve",)):
        """Rows of every finished run of the given run kinds, concatenated (pandas DataFrame)."""
        import pandas as pd
        frames = [self.read_run(rid) for rid, e in sorted(self.manifest["runs"].items())
                  if e["status"] == "done" and e["config"]["kind"] in kinds]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def config(self, rid: str) -> dict:
        return dict(self.manifest["runs"][rid]["config"])


def _all_num(v):
    return all((isinstance(x, (int, float)) and not isinstance(x, bool)) or x is None for x in v) and any(
        isinstance(x, float) for x in v)
