"""The figures' data cached between builds (a docs build, an export, the tests): one JSON file per
figure module and seed, named by a hash of the code that computes it and of its settings, so a
changed solver, narration or figure module computes the data anew and an unchanged one reads it.

The folder is ``$GAPLAB_TEXTBOOK_CACHE`` when set, else ``platformdirs.user_cache_dir("gaplab")
/textbook``. A file that does not parse is computed anew (never trusted half-written: files are
written atomically). JSON only: nothing executable is read back.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

__all__ = ["cache_dir", "code_version", "data_key", "cached_data", "one_thread"]

ROOT = Path(__file__).resolve().parents[2]
#: the code a figure's data depends on: the solver, the app's session and wording, the toys,
#: this package
_CODE_DIRS = ("core", "app", "toy_examples")


def cache_dir() -> Path:
    """Where the data files are kept (see the module docstring)."""
    env = os.environ.get("GAPLAB_TEXTBOOK_CACHE")
    if env:
        return Path(env)
    import platformdirs
    return Path(platformdirs.user_cache_dir("gaplab")) / "textbook"


_VERSION: list = []


def code_version() -> str:
    """sha256 of the package's Python sources under core/, app/ and toy_examples/ (computed once
    per process)."""
    if not _VERSION:
        h = hashlib.sha256()
        for top in _CODE_DIRS:
            for p in sorted((ROOT / top).rglob("*.py")):
                if "__pycache__" in p.parts:
                    continue
                h.update(p.relative_to(ROOT).as_posix().encode())
                h.update(p.read_bytes())
        _VERSION.append(h.hexdigest())
    return _VERSION[0]


def data_key(module, seed: int) -> str:
    """The cache key of ``module``'s data at ``seed``: its name, its ``SETTINGS`` (if any), the
    seed and :func:`code_version`."""
    settings = json.dumps(getattr(module, "SETTINGS", {}), sort_keys=True, default=str)
    text = f"{module.__name__}|{settings}|{int(seed)}|{code_version()}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class one_thread:
    """Run numba's parallel kernels on one thread inside the block: the figures' runs are many
    small steps and gap passes, which spend their time starting threads on a busy machine (a
    race's gap passes took 5x longer on two threads at a load of 7). Per-block values do not
    depend on the thread count."""

    def __enter__(self):
        import numba
        self._n = numba.get_num_threads()
        numba.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        import numba
        numba.set_num_threads(self._n)
        return False


def cached_data(module, seed: int = 0, *, folder=None, refresh: bool = False) -> dict:
    """``module.build_data(seed)``, read from the cache when present (``refresh``: compute anew).

    Raises
    ------
    ValueError
        If ``seed`` is not an int >= 0.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    folder = Path(folder) if folder is not None else cache_dir()
    name = module.__name__.rsplit(".", 1)[-1]
    path = folder / f"{name}-{seed}-{data_key(module, seed)}.json"
    if not refresh and path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            pass   # unreadable: computed anew below
    with one_thread():
        data = module.build_data(seed)
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    try:
        from gaplab.core.atomic import write_text_atomic
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob(f"{name}-{seed}-*.json"):   # older code's data
            old.unlink(missing_ok=True)
        write_text_atomic(path, text)
    except OSError:
        pass   # a read-only cache: the data is still returned
    return json.loads(text)
