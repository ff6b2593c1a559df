"""Atomic file outputs and output-path checks made before any work.

Every file gaplab writes (``gaplab train --out``, ``gaplab path/grid --out/--json``,
:meth:`~gaplab.core.regpath.RegPath.save`, benchmark JSON and figures) goes through :func:`atomic_write`: the bytes
are written to a temporary file in the target's directory, flushed and fsync'ed, and only then
moved over the target with ``os.replace`` (atomic on POSIX and Windows). A write that fails
midway (disk full, ``ulimit -f``, Ctrl-C) leaves the previous file intact and no temporary file
behind.

:func:`check_output_path` refuses, before any solver work, an output path that could not be
written at the end: a directory, a device or other special file, a missing or unwritable
directory.
"""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["OutputPathError", "atomic_write", "atomic_path", "write_text_atomic", "save_figure",
           "check_output_path", "npz_path"]


class OutputPathError(ValueError):
    """An output path that cannot be written (raised before the work starts)."""


def npz_path(file) -> Path:
    """The path ``np.savez`` writes for ``file``: ``.npz`` is appended when missing."""
    p = Path(os.fspath(file))
    return p if p.name.endswith(".npz") else p.with_name(p.name + ".npz")


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


def check_output_path(file, what: str = "output") -> Path:
    """Check that ``file`` can be written atomically; return it as a Path.

    Parameters
    ----------
    file : str or os.PathLike
        The output file.
    what : str
        How the message names it (e.g. ``"--out"``).

    Raises
    ------
    OutputPathError
        If ``file`` is a directory, an existing non-regular file (a device such as /dev/full,
        a FIFO, ...), its directory does not exist, or a file cannot be created in that
        directory (read-only directory or file system, no permission). The check creates and
        removes an empty temporary file in the directory, so it holds for root too.
    """
    p = Path(os.fspath(file)).expanduser()
    if str(p) == "" or p.name in ("", ".", ".."):
        raise OutputPathError(f"{what} {str(file)!r} is not a file name")
    if p.is_dir():
        raise OutputPathError(f"{what} {str(p)!r} is a directory; give a file name")
    if p.exists() or p.is_symlink():
        try:
            mode = p.stat().st_mode
        except OSError as exc:
            raise OutputPathError(f"{what} {str(p)!r} cannot be inspected: {exc.strerror or exc}") from None
        if not stat.S_ISREG(mode):
            raise OutputPathError(f"{what} {str(p)!r} exists and is not a regular file (a device, FIFO or "
                                  "socket); gaplab writes regular files only")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OutputPathError(f"{what} {str(p)!r}: the directory {str(parent)!r} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".check", dir=parent)
    except OSError as exc:
        raise OutputPathError(f"{what} {str(p)!r}: cannot write in the directory {str(parent)!r} "
                              f"({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(tmp)
    return p


@contextlib.contextmanager
def atomic_path(file, *, suffix: str = ".tmp"):
    """Context manager for writers that take a file *name* (HoloViews, pyarrow): yields the name
    of a temporary file next to ``file`` (ending in ``suffix``); on a normal exit that file is
    fsync'ed and moved over ``file`` (``os.replace``) with ``file``'s permissions (or the umask's
    for a new file), on an exception it is removed and ``file`` is left untouched.

    Parameters
    ----------
    file : str or os.PathLike
    suffix : str
        End of the temporary name (a writer that infers the format from it needs e.g. ".tmp.png").
    """
    target = Path(os.fspath(file))
    parent = target.parent if str(target.parent) else Path(".")
    try:
        perm = stat.S_IMODE(target.stat().st_mode) if target.is_file() else (0o666 & ~_umask())
    except OSError:
        perm = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=parent)
    os.close(fd)
    ok = False
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, perm)
        os.replace(tmp, target)
        ok = True
    finally:
        if not ok:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    with contextlib.suppress(OSError):  # make the rename itself durable (best effort)
        dfd = os.open(parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


@contextlib.contextmanager
def atomic_write(file, mode: str = "w", *, encoding: str | None = "utf-8"):
    """Context manager: a file object on a temporary file next to ``file``; on a normal exit it
    is flushed, fsync'ed and moved over ``file`` (``os.replace``), on an exception it is removed
    and ``file`` is left untouched (see :func:`atomic_path`).

    Parameters
    ----------
    file : str or os.PathLike
    mode : {"w", "wb"}
    encoding : str, optional
        Text mode only.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    with atomic_path(file) as tmp:
        with open(tmp, mode, **({"encoding": encoding} if mode == "w" else {})) as fh:
            yield fh
            fh.flush()


def write_text_atomic(file, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``file`` atomically (see :func:`atomic_write`); returns the path."""
    with atomic_write(file, "w", encoding=encoding) as fh:
        fh.write(text)
    return Path(os.fspath(file))


def save_figure(fig, file, **savefig_kwargs) -> Path:
    """``fig.savefig`` written atomically (the format from the file's suffix, e.g. .png/.pdf/.svg)."""
    p = Path(os.fspath(file))
    fmt = savefig_kwargs.pop("format", None) or (p.suffix.lstrip(".").lower() or "png")
    with atomic_write(p, "wb") as fh:
        fig.savefig(fh, format=fmt, **savefig_kwargs)
    return p
