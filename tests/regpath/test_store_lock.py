"""One writer per store: a path store or a sweep store being written by one process is refused to
a second writer in one line naming the store and the holder's pid (or waited for with --wait),
and a lock left by a killed writer is taken over. (Two ``gaplab path --resume S`` at once used to
print 331 and 299 points and leave 32 certified breakpoints orphaned on disk; two ``gaplab
sweep`` into one store computed every run twice.)"""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from cli_runs import ENV, gaplab, wait_for
from conftest import random_chain_data
from gaplab.core import ChainModel, storelock
from gaplab.core.regpath import PathConfig, RegPath, regularization_path, resume_path
from gaplab.core.storelock import LOCK_FILE, StoreLockedError, store_lock

CFG = PathConfig(eps=0.3, lam_min=0.3)

_HOLDER = """
import sys
from gaplab.core.storelock import store_lock
lock = store_lock(sys.argv[1], what="test store")
print("held", flush=True)
sys.stdin.read()   # until the test closes stdin (or kills this process)
lock.release()
print("released", flush=True)
"""


class Holder:
    """Another process holding the writer lock of ``store`` until :meth:`release` or :meth:`kill`."""

    def __init__(self, store):
        self.p = subprocess.Popen([sys.executable, "-c", _HOLDER, str(store)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=ENV)
        wait_for(self.p.stdout, "held", timeout=120)
        self.pid = self.p.pid

    def release(self):
        self.p.stdin.close()
        assert "released" in self.p.stdout.read()
        self.p.wait(timeout=60)

    def kill(self):
        self.p.kill()
        self.p.wait(timeout=60)


@pytest.fixture(scope="module")
def model():
    return ChainModel(random_chain_data(n=12, T_range=(1, 4), K=3, F=30, seed=3, density=0.15))


def _bits(a):
    return np.asarray(a, dtype=np.float64).view(np.uint64)


def test_a_second_writer_is_refused_naming_the_store_and_the_holders_pid(tmp_path):
    store = tmp_path / "s"
    h = Holder(store)
    try:
        with pytest.raises(StoreLockedError) as exc:
            store_lock(store, what="path store")
        msg = str(exc.value)
        assert str(store) in msg and f"pid {h.pid}" in msg and "\n" not in msg
        assert exc.value.holder["pid"] == h.pid and isinstance(exc.value, OSError)
    finally:
        h.release()
    with store_lock(store) as lock:  # released: free again
        assert json.loads((store / LOCK_FILE).read_text())["pid"] == os.getpid()
        assert lock.store == store
    assert not (store / LOCK_FILE).exists()  # released: the lock file goes with it


def test_wait_takes_the_lock_once_the_holder_is_done(tmp_path):
    store = tmp_path / "s"
    h = Holder(store)
    seen, got = [], []
    t = threading.Thread(target=lambda: got.append(store_lock(store, wait=True, on_wait=seen.append)))
    t.start()
    try:
        t.join(1.0)
        assert not got and t.is_alive()  # still waiting while the holder lives
    finally:
        h.release()
    t.join(60)
    assert got and seen and seen[0]["pid"] == h.pid
    got[0].release()


def test_a_lock_left_by_a_killed_writer_is_taken_over(tmp_path):
    store = tmp_path / "s"
    h = Holder(store)
    h.kill()  # SIGKILL: no release, the lock file stays with the dead pid
    assert json.loads((store / LOCK_FILE).read_text())["pid"] == h.pid
    with store_lock(store):
        assert json.loads((store / LOCK_FILE).read_text())["pid"] == os.getpid()


def test_without_flock_the_lock_file_is_the_lock_and_a_dead_pid_is_taken_over(tmp_path, monkeypatch):
    """A file system without flock (ENOLCK on some network mounts): an exclusive lock file."""
    def no_flock(fd, op):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
    monkeypatch.setattr(storelock.fcntl, "flock", no_flock)
    store = tmp_path / "s"
    store.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    import socket
    (store / LOCK_FILE).write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname()}))
    with store_lock(store):  # stale: taken over
        assert json.loads((store / LOCK_FILE).read_text())["pid"] == os.getpid()
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        (store / LOCK_FILE).write_text(json.dumps({"pid": live.pid, "host": socket.gethostname()}))
        with pytest.raises(StoreLockedError, match=f"pid {live.pid}"):
            store_lock(store)
    finally:
        live.stdin.close()
        live.wait(timeout=60)


def test_another_thread_of_this_process_is_another_writer(tmp_path):
    store = tmp_path / "s"
    errors = []
    with store_lock(store):
        with store_lock(store):  # the same thread again: nested
            pass
        t = threading.Thread(target=lambda: errors.append(pytest.raises(StoreLockedError, store_lock, store)))
        t.start()
        t.join(60)
    assert errors and "another thread" in str(errors[0].value)


def test_a_path_into_a_held_store_is_refused_before_anything_is_written(model, tmp_path):
    store = tmp_path / "s"
    h = Holder(store)
    try:
        with pytest.raises(StoreLockedError, match=f"pid {h.pid}"):
            regularization_path(model, CFG, meta={"dataset": "random"}, store=store)
        assert sorted(f.name for f in store.iterdir()) == [LOCK_FILE]  # nothing of ours
    finally:
        h.release()


def test_resume_of_a_held_store_is_refused_and_leaves_it_as_it_was(model, tmp_path):
    """The lock is taken before the store is read: a second resumer cannot continue from a
    manifest the first one is rewriting."""
    store = tmp_path / "s"
    regularization_path(model, CFG, meta={"dataset": "random"}, store=store, checkpoint_every=2)
    RegPath.open(store)  # readers take no lock
    h = Holder(store)
    before = {f.name: f.read_bytes() for f in store.iterdir() if f.name != LOCK_FILE}
    try:
        with pytest.raises(StoreLockedError, match=f"pid {h.pid}"):
            resume_path(store, model)
        assert {f.name: f.read_bytes() for f in store.iterdir() if f.name != LOCK_FILE} == before
    finally:
        h.release()


# ---------------------------------------------------------------------------- the command line
_COMMON = ["--dataset", "ocr-small", "--eps", "0.3", "--lam-min", "0.05", "--no-test-error", "--quiet"]


def test_cli_resume_of_a_held_store_is_one_line_with_the_pid(tmp_path):
    store = tmp_path / "s"
    assert gaplab("path", *_COMMON, "--store", store).returncode == 0
    before = {f.name: f.read_bytes() for f in store.iterdir()}
    h = Holder(store)
    try:  # the second writer: refused at once, one line naming the store and the pid, exit 1
        r = gaplab("path", "--resume", store, "--quiet", "--no-test-error")
        assert r.returncode == 1, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and str(store) in lines[0] and f"pid {h.pid}" in lines[0], r.stderr
        assert "--wait" in lines[0]
    finally:
        h.release()
    assert {f.name: f.read_bytes() for f in store.iterdir()} == before


def test_cli_wait_continues_once_the_first_writer_is_done(tmp_path):
    """``gaplab path --store S --wait`` while another process holds S: it says whom it waits
    for, then runs once the holder is done, and the store holds the whole path, bitwise."""
    store = tmp_path / "s"
    ref = tmp_path / "ref.npz"
    assert gaplab("path", *_COMMON, "--out", ref).returncode == 0
    h = Holder(store)
    p = subprocess.Popen([sys.executable, "-m", "gaplab", "path", *_COMMON, "--store", str(store), "--wait"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        wait_for(p.stderr, f"waiting for pid {h.pid}", timeout=120)
    finally:
        h.release()
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    got, want = RegPath.open(store), RegPath.load(ref)
    assert np.array_equal(_bits(got.lams), _bits(want.lams)) and np.array_equal(_bits(got.W), _bits(want.W))
    on_disk = sorted(f.name for f in store.iterdir() if f.name.startswith("bp_"))
    assert on_disk == [f["file"] for f in json.loads((store / "manifest.json").read_text())["files"]]


def test_cli_sweep_into_a_held_store_is_one_line_with_the_pid(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "lock"\ndatasets = ["ocr-small[:6]"]\nlams = [0.1]\n[budget]\nmax_passes = 1\n'
                    '[methods.a]\nsampling = "uniform"\n')
    store = tmp_path / "st"
    h = Holder(store)
    try:
        r = gaplab("sweep", spec, "--store", store, "--workers", "0", "--quiet")
        assert r.returncode == 1, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and str(store) in lines[0] and f"pid {h.pid}" in lines[0], r.stderr
        assert not (store / "manifest.json").exists()  # nothing run, nothing written
        from gaplab.core.sweep import run_sweep
        with pytest.raises(StoreLockedError):
            run_sweep(str(spec), store, workers=0)
    finally:
        h.release()
    r = gaplab("sweep", spec, "--store", store, "--workers", "0", "--quiet")
    assert r.returncode == 0, r.stderr
