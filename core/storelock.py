"""One writer per store: an OS file lock on a lock file inside a path store or a sweep store.

Two processes appending to one store would each keep their own list of breakpoints (or runs)
and overwrite the other's manifest: breakpoints orphaned on disk, runs computed twice. A writer
therefore holds :func:`store_lock` for as long as it writes. The lock is ``fcntl.flock`` (an
exclusive lock on ``STORE/.gaplab-writer.lock``), which the kernel releases when the holder
exits, however it exits; the file records the holder's pid, host and start time so that a
second writer can say who holds the store.

- A second writer gets :class:`StoreLockedError` naming the store and the holder's pid at once,
  or, with ``wait=True``, waits until the holder is done.
- A lock file left behind (its holder killed) holds no lock: the next writer takes it over. On a
  file system without ``flock`` (some network mounts answer ENOLCK) the file itself is the lock
  (created exclusively); it is taken over when its holder's pid is dead on this host.
- The same thread may take a lock it holds again (the command line takes it before loading
  data, the store writer again): the lock is released when the last holder releases it. Another
  thread of the same process is another writer.

Readers take no lock: every store file is replaced atomically, so a reader sees a whole store.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import threading
import time
import weakref
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: the exclusive lock file alone
    fcntl = None

__all__ = ["StoreLockedError", "StoreLock", "store_lock", "LOCK_FILE", "read_holder"]

#: name of the lock file inside a store (never listed by a manifest)
LOCK_FILE = ".gaplab-writer.lock"
_POLL_S = 0.2
_registry: "weakref.WeakValueDictionary[str, _Lock]" = weakref.WeakValueDictionary()
_registry_guard = threading.Lock()


class StoreLockedError(BlockingIOError):
    """Another writer holds the store (its pid and host in ``holder``); one line naming both."""

    def __init__(self, message: str, store, holder: dict):
        super().__init__(errno.EWOULDBLOCK, message)
        self.store, self.holder = str(store), dict(holder)

    def __str__(self) -> str:
        return self.strerror


def read_holder(store) -> dict:
    """What the lock file of ``store`` says about its writer: ``{"pid", "host", "since"}`` (empty
    when there is no lock file or it cannot be read)."""
    try:
        info = json.loads((Path(os.fspath(store)) / LOCK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return {}
    return info if isinstance(info, dict) else {}


def _pid_alive(pid) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, another user's
        return True
    return True


def _holder_text(holder: dict) -> str:
    pid, host = holder.get("pid"), holder.get("host")
    if not isinstance(pid, int):
        return "another process (its pid is not recorded yet)"
    here = host in (None, socket.gethostname())
    return f"pid {pid}" + ("" if here else f" on {host}") + (f" (since {holder['since']})" if holder.get("since") else "")


class _Lock:
    """The lock of one store held by this process (shared by the holds of one thread)."""

    def __init__(self, root: Path, fd: int | None, flocked: bool, created: bool = False):
        self.root, self.fd, self.flocked, self.created = root, fd, flocked, created
        self.thread = threading.get_ident()
        self.count = 0
        self.lock_path = root / LOCK_FILE

    def close(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            st = os.fstat(self.fd)
            cur = os.stat(self.lock_path)
            if (st.st_dev, st.st_ino) == (cur.st_dev, cur.st_ino):
                os.unlink(self.lock_path)  # before unlocking: a waiter then sees a new file
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = None
        if self.created:  # made for this writer and left empty (it failed before writing): remove it
            with contextlib.suppress(OSError):
                os.rmdir(self.root)

    def __del__(self):  # a writer dropped without closing: the kernel would release it at exit anyway
        self.close()


class StoreLock:
    """A hold of a store's writer lock (:func:`store_lock`); :meth:`release` (or the end of a
    ``with`` block) gives it up, once."""

    def __init__(self, lock: _Lock):
        self._lock = lock
        lock.count += 1

    @property
    def store(self) -> Path:
        return self._lock.root

    def release(self) -> None:
        lock, self._lock = self._lock, None
        if lock is None:
            return
        with _registry_guard:
            lock.count -= 1
            if lock.count <= 0:
                _registry.pop(str(lock.root), None)
                lock.close()

    def __enter__(self) -> "StoreLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _write_holder(fd: int) -> None:
    info = {"pid": os.getpid(), "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    data = json.dumps(info).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _try_flock(lock_path: Path):
    """(fd, flocked) on success, None if another process holds the lock."""
    while True:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                return _try_exclusive(lock_path)
            raise
        try:  # the holder may have removed the file between our open and our flock: lock the new one
            st, cur = os.fstat(fd), os.stat(lock_path)
        except FileNotFoundError:
            os.close(fd)
            continue
        if (st.st_dev, st.st_ino) != (cur.st_dev, cur.st_ino):
            os.close(fd)
            continue
        _write_holder(fd)
        return fd, True


def _try_exclusive(lock_path: Path):
    """The lock file itself as the lock (no flock): created exclusively; taken over when its
    holder is a dead pid of this host."""
    for _ in range(3):
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            holder = read_holder(lock_path.parent)
            if holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int) \
                    and not _pid_alive(holder["pid"]):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(lock_path)  # stale: its writer is gone
                continue
            return None
        _write_holder(fd)
        return fd, False
    return None


def store_lock(store, *, what: str = "store", wait: bool = False, on_wait=None) -> StoreLock:
    """Take the writer lock of the store directory ``store`` (created if missing).

    Parameters
    ----------
    store : str or os.PathLike
        The store directory.
    what : str
        How messages name it ("path store", "sweep store").
    wait : bool
        Wait until the holder is done instead of raising.
    on_wait : callable(holder: dict), optional
        Called once when ``wait`` starts waiting (the command line says who it waits for).

    Returns
    -------
    StoreLock
        Release it with :meth:`StoreLock.release` or use it as a context manager.

    Raises
    ------
    StoreLockedError
        (a BlockingIOError) Another writer holds the store and ``wait`` is False: the message
        names the store and the holder's pid.
    OSError
        The directory or its lock file cannot be created (read-only, no permission).
    """
    root = Path(os.fspath(store)).expanduser()
    try:
        return _acquire(root, what, wait, on_wait)
    except (StoreLockedError, FileExistsError, NotADirectoryError):
        raise
    except OSError as exc:  # read-only, no permission: name the user's store, not the lock file
        raise OSError(exc.errno, f"{what} {str(root)!r} cannot be written "
                                 f"({exc.strerror or type(exc).__name__})") from None


def _acquire(root: Path, what: str, wait: bool, on_wait) -> StoreLock:
    waited = False
    while True:
        created = not root.exists()  # (again after a wait: a holder removes the directory it made if empty)
        root.mkdir(parents=True, exist_ok=True)
        key = str(root.resolve())
        with _registry_guard:
            held = _registry.get(key)
            if held is None:
                try:
                    got = _try_flock(root / LOCK_FILE) if fcntl is not None else _try_exclusive(root / LOCK_FILE)
                except FileNotFoundError:  # a holder that made the directory just removed it: again
                    continue
                if got is not None:
                    lock = _Lock(root, *got, created=created)
                    _registry[key] = lock
                    return StoreLock(lock)
                holder = read_holder(root)
            elif held.thread == threading.get_ident():
                return StoreLock(held)
            else:
                holder = {"pid": os.getpid(), "host": socket.gethostname(), "thread": True}
        if not wait:
            who = "another thread of this process" if holder.get("thread") else _holder_text(holder)
            raise StoreLockedError(f"{what} {str(root)!r} is being written by {who}; wait for it to finish "
                                   "(--wait waits for it)", root, holder)
        if not waited and on_wait is not None:
            on_wait(holder)
        waited = True
        time.sleep(_POLL_S)
