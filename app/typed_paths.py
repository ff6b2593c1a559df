"""Paths typed into the page (a path store to open, a sweep store to browse) are client input.

:func:`check_typed_path` decides whether the app may open one, from ``os.stat`` alone (nothing
is opened to find out): only a regular file or a folder, never a FIFO, a socket or a device (an
open of a FIFO blocks until a writer comes; ``/dev/zero`` reads without end; ``/dev/stdin`` of
a server started in a terminal is that terminal), nothing under ``/proc``, ``/sys`` or ``/dev``;
and, when ``roots`` are given (classroom mode: the folders the lecturer names), only a path that
resolves (symbolic links followed) under one of them. The refusal of a path outside the roots
says the same whether the path exists or not, so a visitor learns nothing of the server's files.
:func:`read_limited` reads a checked file with a size limit (opened with ``O_NONBLOCK``, its
kind checked again on the open descriptor). No Panel import.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["MAX_TYPED_LEN", "MAX_READ_BYTES", "SYSTEM_DIRS", "TypedPathError", "check_typed_path",
           "read_limited"]

#: the longest typed path read (longer ones are refused unread)
MAX_TYPED_LEN = 4096
#: the most bytes :func:`read_limited` reads by default (a path store's manifest is far smaller)
MAX_READ_BYTES = 64 * 2 ** 20
#: folders whose entries are never opened from a typed path (kernel and device files)
SYSTEM_DIRS = ("/proc", "/sys", "/dev")


class TypedPathError(ValueError):
    """A typed path the app refuses to open (the message is safe to show to the visitor)."""


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _roots_text(roots) -> str:
    return ", ".join(str(r) for r in roots)


def check_typed_path(text, roots=None, *, kind: str | None = None) -> Path:
    """The resolved path of ``text`` if the app may open it, else :class:`TypedPathError`.

    Parameters
    ----------
    text : str or os.PathLike
        What was typed (surrounding blanks are ignored; ``~`` is the server user's home).
    roots : sequence of str or os.PathLike, optional
        Folders the path must resolve under (symbolic links followed, in ``text`` and in the
        roots). None: any folder but the system ones (``SYSTEM_DIRS``).
    kind : {"file", "dir", None}
        A regular file only, a folder only, or either (default).

    Returns
    -------
    pathlib.Path
        The resolved absolute path (a regular file or a folder when it was checked).

    Raises
    ------
    TypedPathError
        (a ValueError) empty, too long (> ``MAX_TYPED_LEN`` characters) or holding a NUL; outside
        the roots ("not allowed: paths must be under ...", the same words whether it exists or
        not); missing; under ``/proc``, ``/sys`` or ``/dev``; not a regular file or folder (a
        FIFO, a socket, a device); not the ``kind`` asked for.
    """
    if kind not in (None, "file", "dir"):
        raise ValueError(f"kind must be 'file', 'dir' or None, got {kind!r}")
    if isinstance(text, os.PathLike):
        text = os.fspath(text)
    if not isinstance(text, str):
        raise TypedPathError(f"a typed path must be text, got {type(text).__name__}")
    text = text.strip()
    if not text:
        raise TypedPathError("no path given")
    if len(text) > MAX_TYPED_LEN or "\x00" in text:
        raise TypedPathError(f"not a path (longer than {MAX_TYPED_LEN} characters, or holding a NUL character)")
    real = os.path.realpath(os.path.expanduser(text))
    if roots is not None:
        allowed = [os.path.realpath(os.path.expanduser(os.fspath(r))) for r in roots]
        if not any(_under(real, r) for r in allowed):
            # the same words for a path that exists and one that does not
            raise TypedPathError(f"not allowed: paths must be under {_roots_text(roots) or '(no folder)'}")
    if any(_under(real, d) for d in SYSTEM_DIRS):
        raise TypedPathError(f"not allowed: {', '.join(SYSTEM_DIRS)} hold system and device files")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise TypedPathError(f"{text!r} does not exist") from None
    except OSError as exc:
        raise TypedPathError(f"{text!r} cannot be read ({exc.strerror or type(exc).__name__})") from None
    is_dir, is_reg = stat.S_ISDIR(st.st_mode), stat.S_ISREG(st.st_mode)
    if not (is_dir or is_reg):
        raise TypedPathError(f"{text!r} is not a regular file or folder (a FIFO, socket or device is not opened)")
    if kind == "dir" and not is_dir:
        raise TypedPathError(f"{text!r} is a file, not a folder")
    if kind == "file" and not is_reg:
        raise TypedPathError(f"{text!r} is a folder, not a file")
    return Path(real)


def read_limited(path, limit: int = MAX_READ_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    The file is opened with ``O_NONBLOCK`` (an open of a FIFO never waits for a writer) and its
    kind is checked on the open descriptor (a file swapped for a FIFO or a device after a check
    is refused too).

    Raises
    ------
    TypedPathError
        Not a regular file, or larger than ``limit`` bytes.
    OSError
        It cannot be opened or read.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit must be an int >= 0 (bytes), got {limit!r}")
    fd = os.open(os.fspath(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TypedPathError(f"{str(path)!r} is not a regular file (a FIFO, socket or device is not read)")
        if st.st_size > limit:
            raise TypedPathError(f"{str(path)!r} is larger than {limit:,} bytes ({st.st_size:,}); not read")
        chunks, got = [], 0
        while got <= limit:
            b = os.read(fd, min(1 << 20, limit + 1 - got))
            if not b:
                break
            chunks.append(b)
            got += len(b)
        if got > limit:
            raise TypedPathError(f"{str(path)!r} is larger than {limit:,} bytes; not read")
        return b"".join(chunks)
    finally:
        os.close(fd)
