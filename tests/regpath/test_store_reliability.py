"""Path and grid stores that no Ctrl-C, full disk or tampered file can corrupt or make
unreadable; every certified breakpoint stays readable and a path resumes from it."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import warnings
from pathlib import Path

import numpy as np
import pytest

from conftest import random_chain_data
from gaplab.core import ChainModel
from gaplab.core.regpath import store as pst
from gaplab.core.interrupt import Interrupted
from gaplab.core.regpath import (PathConfig, PathStoreError, RegPath, grid_search, regularization_path,
                                 resume_path)

CFG = PathConfig(eps=0.3, lam_min=0.3)
GRID = [2.0 ** k for k in range(3, -4, -1)]
_WRITER_CALLS = ("append", "update", "truncate", "write_resume_state", "drop_resume_state")


@pytest.fixture(scope="module")
def model():
    return ChainModel(random_chain_data(n=12, T_range=(1, 4), K=3, F=30, seed=3, density=0.15))


@pytest.fixture(scope="module")
def ref_path(model):
    return regularization_path(model, CFG, meta={"dataset": "random"})


@pytest.fixture(scope="module")
def ref_grid(model):
    return grid_search(model, GRID, eps=0.05, meta={"dataset": "random"})


def _bits(a):
    return np.asarray(a, dtype=np.float64).view(np.uint64)


class _SigintAfter:
    """Send SIGINT to this process right after the k-th store write: after the k-th ``os.replace``
    into the store (a file made durable) or after the k-th return of a PathStoreWriter method."""

    def __init__(self, monkeypatch, store, hook: str, k: int):
        self.count, self.k, self.fired = 0, k, False
        self.store = str(store)
        if hook == "replace":
            real = os.replace

            def replace(src, dst, *a, **kw):
                real(src, dst, *a, **kw)
                if str(dst).startswith(self.store):
                    self._tick()
            monkeypatch.setattr(os, "replace", replace)
        else:
            for name in _WRITER_CALLS:
                real_m = getattr(pst.PathStoreWriter, name)

                def method(obj, *a, _real=real_m, **kw):
                    out = _real(obj, *a, **kw)
                    self._tick()
                    return out
                monkeypatch.setattr(pst.PathStoreWriter, name, method)

    def _tick(self):
        self.count += 1
        if self.count == self.k:
            self.fired = True
            os.kill(os.getpid(), signal.SIGINT)


def _count_writes(monkeypatch, store, hook, run):
    with monkeypatch.context() as m:
        counter = _SigintAfter(m, store, hook, k=-1)
        run(store)
    return counter.count


def _check_prefix(opened: RegPath, ref: RegPath):
    """The store's breakpoints are a prefix of the uninterrupted path, bitwise."""
    assert len(opened) <= len(ref)
    assert np.all(np.diff(opened.lams) < 0)
    assert np.array_equal(_bits(opened.lams), _bits(ref.lams[:len(opened)]))
    for j in range(len(opened)):
        assert np.array_equal(_bits(opened.point(j).w), _bits(ref.point(j).w)), j


@pytest.mark.parametrize("every", [0, 3])
@pytest.mark.parametrize("hook", ["replace", "writer"])
def test_sigint_after_every_store_write_of_a_path_leaves_it_open_and_resumable(model, ref_path, tmp_path,
                                                                               monkeypatch, hook, every):
    def run(store):
        return regularization_path(model, CFG, meta={"dataset": "random"}, store=store, checkpoint_every=every)

    total = _count_writes(monkeypatch, tmp_path / "count", hook, run)
    assert total >= (2 if hook == "replace" else 1) * len(ref_path)
    for k in range(1, total + 1):
        store = tmp_path / f"s{k}"
        with monkeypatch.context() as m:
            sig = _SigintAfter(m, store, hook, k)
            try:
                run(store)
            except KeyboardInterrupt:
                pass
        assert sig.fired
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a store this process wrote is never damaged
            opened = RegPath.open(store)
        _check_prefix(opened, ref_path)
        if len(opened) == len(ref_path) and opened.end_reason == ref_path.end_reason:
            continue  # finished before the Ctrl-C took effect
        if not len(opened):
            continue  # nothing certified yet: nothing to keep
        assert "resume_state" in opened.meta, (k, len(opened), opened.end_reason)
        done = resume_path(store, model)
        again = RegPath.open(store)
        assert len(done) == len(again) == len(ref_path), k
        assert np.array_equal(_bits(again.lams), _bits(ref_path.lams))
        assert np.array_equal(_bits(again.W), _bits(ref_path.W)), k
        assert again.end_reason == ref_path.end_reason and "resume_state" not in again.meta


def test_sigint_after_every_store_write_of_a_grid_leaves_a_valid_prefix(model, ref_grid, tmp_path, monkeypatch):
    def run(store):
        return grid_search(model, GRID, eps=0.05, meta={"dataset": "random"}, store=store)

    for hook in ("replace", "writer"):
        total = _count_writes(monkeypatch, tmp_path / f"count_{hook}", hook, run)
        for k in range(1, total + 1):
            store = tmp_path / f"{hook}{k}"
            with monkeypatch.context() as m:
                _SigintAfter(m, store, hook, k)
                try:
                    run(store)
                except KeyboardInterrupt:
                    pass
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                opened = RegPath.open(store)
            _check_prefix(opened, ref_grid)
            if len(opened) < len(ref_grid):
                assert opened.end_reason == "interrupted" or not len(opened), (hook, k)


def test_sigint_after_the_4th_append_leaves_an_openable_prefix(model, ref_path, tmp_path, monkeypatch):
    real = pst.PathStoreWriter.append
    calls = []

    def append(self, *a, **kw):
        real(self, *a, **kw)
        calls.append(1)
        if len(calls) == 4:
            os.kill(os.getpid(), signal.SIGINT)
    monkeypatch.setattr(pst.PathStoreWriter, "append", append)
    with pytest.raises(Interrupted):
        regularization_path(model, CFG, meta={"dataset": "random"}, store=tmp_path / "race")
    opened = RegPath.open(tmp_path / "race")
    _check_prefix(opened, ref_path)
    assert len(opened) >= 3 and opened.end_reason == "interrupted"


def test_a_store_damaged_by_the_old_race_opens_with_its_valid_prefix_and_resumes(model, ref_path, tmp_path,
                                                                                monkeypatch):
    full, store = tmp_path / "full", tmp_path / "damaged"
    regularization_path(model, CFG, meta={"dataset": "random"}, store=full)
    real = pst.PathStoreWriter.append
    calls = []

    def append(self, *a, **kw):
        real(self, *a, **kw)
        calls.append(1)
        if len(calls) == 5:
            os.kill(os.getpid(), signal.SIGINT)
    with monkeypatch.context() as m:
        m.setattr(pst.PathStoreWriter, "append", append)
        with pytest.raises(Interrupted):
            regularization_path(model, CFG, meta={"dataset": "random"}, store=store)
    # what the old Ctrl-C handler left: breakpoint 5 written, then row 4 copied over row 5
    man = json.loads((store / pst.MANIFEST).read_text())
    assert len(man["rows"]) == 5 and man["resume_state"]["point"] == 4
    man["rows"][4]["end"] = ""
    man["rows"].append(dict(man["rows"][4], end="interrupted"))
    man["files"].append(json.loads((full / pst.MANIFEST).read_text())["files"][5])
    (store / "bp_000005.npz").write_bytes((full / "bp_000005.npz").read_bytes())
    (store / pst.MANIFEST).write_text(json.dumps(man))

    with pytest.warns(pst.PathStoreWarning, match=r"breakpoint 5: .* is not below .* first 5 breakpoints"):
        opened = RegPath.open(store)
    assert len(opened) == 5 and "resume_state" in opened.meta
    _check_prefix(opened, ref_path)
    with pytest.warns(pst.PathStoreWarning):
        done = resume_path(store, model)
    assert len(done) == len(ref_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # repaired by the resume
        again = RegPath.open(store)
    assert np.array_equal(_bits(again.W), _bits(ref_path.W)) and again.end_reason == ref_path.end_reason


# ---------------------------------------------------------------------------- one line, never a traceback
def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _enospc_from(monkeypatch, first_bad: int, resume_state_fits: bool):
    """Breakpoint files from ``first_bad`` on (and from then on the solver state too unless
    ``resume_state_fits``) fail as on a full disk: some bytes written, then ENOSPC."""
    real_npz, real_savez = pst._write_npz, pst.np.savez
    full = [first_bad < 0]

    def write_npz(fh, arrays, compress):
        if json.loads(str(arrays["header"]))["index"] >= first_bad:
            full[0] = True
            fh.write(b"\0" * 100)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_npz(fh, arrays, compress)

    def savez(fh, **arrays):
        if full[0] and not resume_state_fits:
            fh.write(b"\0" * 100)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_savez(fh, **arrays)
    monkeypatch.setattr(pst, "_write_npz", write_npz)
    monkeypatch.setattr(pst.np, "savez", savez)


@pytest.mark.parametrize("resume_state_fits, every", [(True, 0), (False, 3)])
def test_full_disk_in_a_streamed_path_keeps_the_certified_breakpoints_and_resumes(model, ref_path, tmp_path,
                                                                                  monkeypatch, resume_state_fits,
                                                                                  every):
    store = tmp_path / "s"
    with monkeypatch.context() as m:
        _enospc_from(m, 5, resume_state_fits)
        with pytest.raises(OSError) as exc:
            regularization_path(model, CFG, meta={"dataset": "random"}, store=store, checkpoint_every=every)
    assert exc.value.errno == errno.ENOSPC
    assert not list(store.glob(".*.tmp"))  # nothing half-written
    kept = RegPath.open(store)
    assert len(kept) == 5 and not kept.end_reason.startswith("done")
    _check_prefix(kept, ref_path)
    # the solver state of breakpoint 4 (saved after the failure), or of the checkpoint at breakpoint 2
    assert kept.meta["resume_state"]["point"] == (4 if resume_state_fits else 2)
    done = resume_path(store, model)
    again = RegPath.open(store)
    assert len(done) == len(again) == len(ref_path)
    assert np.array_equal(_bits(again.W), _bits(ref_path.W)) and again.end_reason == ref_path.end_reason


def test_cli_full_disk_in_path_and_grid_is_one_line_and_resumable(tmp_path, monkeypatch, capsys):
    from gaplab.cli import main
    common = ["--dataset", "ocr-small", "--eps", "0.5", "--lam-min", "0.1", "--no-test-error", "--quiet"]
    store = tmp_path / "s"
    with monkeypatch.context() as m:
        _enospc_from(m, 4, True)
        assert main(["path", *common, "--store", str(store)]) == 1
        line = _one_line(capsys.readouterr().err)
        assert "No space left on device" in line and f"--resume {store}" in line and "4 certified" in line
        assert main(["grid", *common[:-4], "--quiet", "--lams", "1,0.5,0.25,0.125,0.0625",
                     "--store", str(tmp_path / "g")]) == 1
        assert "No space left on device" in _one_line(capsys.readouterr().err)
        # an in-memory path whose --out cannot be written: one line, the old file intact
        out = tmp_path / "p.npz"
        out.write_bytes(b"old")
        _enospc_from(m, -1, resume_state_fits=False)  # np.savez: RegPath.save too
        assert main(["path", *common, "--out", str(out)]) == 1
        assert "No space left on device" in _one_line(capsys.readouterr().err)
        assert out.read_bytes() == b"old" and not list(tmp_path.glob(".p.npz*"))
    assert main(["path", "--resume", str(store), "--quiet", "--no-test-error"]) == 0
    assert RegPath.open(store).end_reason in ("rho<=0", "lam_min")


def test_cli_full_disk_without_room_for_the_solver_state_says_it_cannot_be_resumed(tmp_path, monkeypatch,
                                                                                   capsys):
    """The solver state is much larger than a breakpoint (OCR-small: 5 MB against 33 kB): a disk
    that fills before the state fits keeps the certified points, and the one line says the path
    cannot be resumed instead of promising a --resume."""
    from gaplab.cli import main
    common = ["--dataset", "ocr-small", "--eps", "0.5", "--lam-min", "0.1", "--no-test-error", "--quiet"]
    store = tmp_path / "s"
    with monkeypatch.context() as m:
        _enospc_from(m, 4, resume_state_fits=False)
        assert main(["path", *common, "--store", str(store)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "No space left on device" in line and "4 certified" in line, line
    assert "cannot continue it" in line and "continue with: gaplab path --resume" not in line, line
    assert "resume_state" not in json.loads((store / pst.MANIFEST).read_text())
    assert main(["path", "--resume", str(store), "--quiet", "--no-test-error"]) == 2
    assert "no solver state" in _one_line(capsys.readouterr().err)


def test_cli_bad_lams_eps_and_resume_files_are_one_line(tmp_path, capsys, model, ref_path):
    from gaplab.cli import main
    assert main(["grid", "--dataset", "ocr-small", "--lams", "2^2000"]) == 2
    assert "2^2000" in _one_line(capsys.readouterr().err)
    assert main(["path", "--dataset", "ocr-small", "--eps", "1e308", "--quiet", "--no-test-error"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "eps" in line and "lam must be" not in line
    # a truncated single-file path
    f = ref_path.save(tmp_path / "p.npz")
    trunc = tmp_path / "trunc.npz"
    trunc.write_bytes(Path(f).read_bytes()[: Path(f).stat().st_size // 2])
    assert main(["path", "--resume", str(trunc), "--quiet"]) == 2
    assert "trunc.npz" in _one_line(capsys.readouterr().err)
    # a deeply nested manifest
    store = tmp_path / "deep"
    store.mkdir()
    (store / pst.MANIFEST).write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(PathStoreError, match="nested too deeply"):
        RegPath.open(store)
    assert main(["path", "--resume", str(store), "--quiet"]) == 2
    assert "nested too deeply" in _one_line(capsys.readouterr().err)


def _npz_claiming(path: Path, name: str, shape, members: dict):
    """An npz whose member ``name`` has an npy header claiming ``shape`` (float64) over 16 bytes."""
    import zipfile
    with zipfile.ZipFile(path, "w") as zf:
        for k, v in members.items():
            with zf.open(k + ".npy", "w") as fh:
                if k == name:
                    np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False,
                                                              "shape": shape})
                    fh.write(b"\0" * 16)
                else:
                    np.lib.format.write_array(fh, np.asanyarray(v), allow_pickle=False)


def test_npy_header_claiming_2_to_the_40_is_a_path_store_error_before_any_allocation(model, tmp_path,
                                                                                    monkeypatch):
    store = tmp_path / "s"
    with monkeypatch.context() as m:
        m.setattr(pst.PathStoreWriter, "drop_resume_state", lambda self: None)  # keep a solver state
        regularization_path(model, CFG, meta={"dataset": "random"}, store=store, checkpoint_every=1,
                            max_breakpoints=4)
    single = tmp_path / "p.npz"
    RegPath.open(store).save(single)
    f = store / "bp_000001.npz"
    with np.load(f) as z:
        members = {k: z[k] for k in z.files}
    _npz_claiming(f, "val" if "val" in members else "w", (2 ** 40,), members)
    allocs = []
    real_zeros = np.zeros
    monkeypatch.setattr(pst.np, "zeros", lambda *a, **k: allocs.append(a) or real_zeros(*a, **k))
    opened = RegPath.open(store)
    with pytest.raises(PathStoreError, match=r"breakpoint 1 .*1099511627776"):
        opened.point(1)
    assert not allocs
    # the same for a saved solver state and a single-file path
    man = json.loads((store / pst.MANIFEST).read_text())
    rf = store / man["resume_state"]["file"]
    with np.load(rf) as z:
        members = {k: z[k] for k in z.files}
    _npz_claiming(rf, "w", (2 ** 40,), members)
    with pytest.raises(PathStoreError, match="1099511627776"):
        pst.read_resume_arrays(store, man["resume_state"])
    with np.load(single) as z:
        members = {k: z[k] for k in z.files}
    _npz_claiming(single, "W", (2 ** 40, 8), members)
    with pytest.raises(ValueError, match="1099511627776"):
        RegPath.load(single)


def test_a_large_path_streams_to_a_store_by_default_and_says_so_up_front(tmp_path, monkeypatch, capsys):
    """One breakpoint's w of LARGE_W_BYTES or more (CoNLL-2000: d in the millions) no longer keeps
    every breakpoint in memory: the path streams to ``<out>.store`` and says so before any work."""
    import gaplab.cli.path as cp
    from gaplab.cli import main
    import gaplab.core.regpath as rp
    kept = []
    real = rp.RegPath.append
    monkeypatch.setattr(rp.RegPath, "append", lambda self, p: (real(self, p), kept.append(
        sum(w is not None for w in self._W)))[0])
    common = ["--dataset", "ocr-small", "--eps", "0.5", "--lam-min", "0.1", "--no-test-error"]
    out = tmp_path / "p.npz"
    assert main(["path", *common, "--out", str(out)]) == 0  # ocr-small: small w, in memory as before
    assert out.is_file() and not (tmp_path / "p.store").exists() and max(kept) > 1
    capsys.readouterr()
    monkeypatch.setattr(cp, "LARGE_W_BYTES", 8 * 1000)  # as if ocr-small's d were CoNLL's
    kept.clear()
    out2 = tmp_path / "q.npz"
    assert main(["path", *common, "--out", str(out2)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "stream" in lines[0] and f"{tmp_path / 'q.store'}/" in lines[0] and "--in-memory" in lines[0]
    assert max(kept) == 0 and not out2.exists()
    assert len(RegPath.open(tmp_path / "q.store")) == len(RegPath.open(out))
    # --in-memory: the old behaviour, asked for
    kept.clear()
    assert main(["path", *common, "--out", str(tmp_path / "r.npz"), "--in-memory", "--quiet"]) == 0
    assert (tmp_path / "r.npz").is_file() and not (tmp_path / "r.store").exists() and max(kept) > 1


def test_cli_resumes_a_damaged_store_with_one_warning_line(tmp_path, monkeypatch, capsys):
    from gaplab.cli import main
    common = ["--dataset", "ocr-small", "--eps", "0.5", "--lam-min", "0.1", "--no-test-error", "--quiet"]
    full, store = tmp_path / "full", tmp_path / "damaged"
    assert main(["path", *common, "--store", str(full)]) == 0
    real = pst.PathStoreWriter.append
    calls = []

    def append(self, *a, **kw):
        real(self, *a, **kw)
        calls.append(1)
        if len(calls) == 5:
            os.kill(os.getpid(), signal.SIGINT)
    with monkeypatch.context() as m:
        m.setattr(pst.PathStoreWriter, "append", append)
        assert main(["path", *common, "--store", str(store)]) == 130
    man = json.loads((store / pst.MANIFEST).read_text())
    man["rows"][4]["end"] = ""
    man["rows"].append(dict(man["rows"][4], end="interrupted"))
    man["files"].append(json.loads((full / pst.MANIFEST).read_text())["files"][5])
    (store / "bp_000005.npz").write_bytes((full / "bp_000005.npz").read_bytes())
    (store / pst.MANIFEST).write_text(json.dumps(man))
    capsys.readouterr()
    assert main(["path", "--resume", str(store), "--quiet", "--no-test-error"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("gaplab path: warning: ") and "first 5 breakpoints" in err
    done, ref = RegPath.open(store), RegPath.open(full)
    assert np.array_equal(_bits(done.lams), _bits(ref.lams)) and np.array_equal(_bits(done.W), _bits(ref.W))


# ---------------------------------------------------------------------------- a disk that fills up
class _FullDisk:
    """A disk that is full after the k-th atomic write into ``store`` (core/atomic.py): from then
    on a write fails with ENOSPC (some bytes written, then the temporary file removed, as on a real
    disk) unless files removed from the store since have freed the room it needs. Space is
    allocated with posix_fallocate the same way."""

    def __init__(self, monkeypatch, store, k: int):
        from gaplab.core import atomic
        self.store, self.k, self.writes, self.free = str(store), k, 0, 0
        real_path, real_unlink, real_falloc = atomic.atomic_path, os.unlink, os.posix_fallocate
        disk = self

        @contextlib.contextmanager
        def atomic_path(file, *, suffix=".tmp"):
            mine = str(file).startswith(disk.store)
            old = os.path.getsize(file) if mine and os.path.isfile(file) else 0
            with real_path(file, suffix=suffix) as tmp:
                yield tmp
                if mine:
                    disk.writes += 1
                    if disk.full:  # the new file needs its whole size while the old one still exists
                        size = os.path.getsize(tmp)
                        if size > disk.free:
                            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file))
                        disk.free += old - size

        def unlink(path, *a, **kw):  # a store file removed frees its room (a failed temporary file took none)
            name = os.path.basename(str(path))
            size = os.path.getsize(path) if str(path).startswith(disk.store) and os.path.isfile(path) \
                and (not name.startswith(".") or name == pst.RESERVE_FILE) else 0
            real_unlink(path, *a, **kw)
            disk.free += size if disk.full else 0

        def posix_fallocate(fd, offset, length):
            if disk.full:
                have = os.fstat(fd).st_size
                if offset + length - have > disk.free:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                disk.free -= max(offset + length - have, 0)
            return real_falloc(fd, offset, length)
        monkeypatch.setattr(atomic, "atomic_path", atomic_path)
        monkeypatch.setattr(os, "unlink", unlink)
        monkeypatch.setattr(os, "posix_fallocate", posix_fallocate)

    @property
    def full(self) -> bool:
        return self.writes >= self.k


def _writes_of(monkeypatch, store, run) -> int:
    with monkeypatch.context() as m:
        disk = _FullDisk(m, store, k=10 ** 9)
        run(store)
    return disk.writes


@pytest.mark.parametrize("every", [0, 4])
def test_a_disk_full_at_any_write_keeps_the_path_resumable_to_the_same_end(model, ref_path, tmp_path, monkeypatch,
                                                                         every):
    """Whichever write of a streamed path finds the disk full (a breakpoint, a manifest, a
    checkpoint): the store keeps the solver state of its last certified breakpoint (written into
    the space the store kept in reserve), and once space is free the resumed path equals the
    uninterrupted one bitwise. (Was: the certified points kept, then --resume refused with "holds
    no solver state".)"""
    def run(store):
        return regularization_path(model, CFG, meta={"dataset": "random"}, store=store, checkpoint_every=every)

    total = _writes_of(monkeypatch, tmp_path / "count", run)
    assert total >= 2 * len(ref_path)
    resumed = 0
    for k in range(2, total):
        store = tmp_path / f"s{k}"
        with monkeypatch.context() as m:
            _FullDisk(m, store, k)
            with pytest.raises(OSError) as exc:
                run(store)
        assert exc.value.errno == errno.ENOSPC, (k, exc.value)
        assert not list(store.glob(".*.tmp")) and not (store / pst.RESERVE_FILE).exists()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            kept = RegPath.open(store)
        _check_prefix(kept, ref_path)
        if not len(kept):
            continue  # nothing certified yet: nothing to keep
        if len(kept) == len(ref_path) and kept.end_reason == ref_path.end_reason:
            continue  # every breakpoint written; a write after the last one failed
        assert "resume_state" in kept.meta, (k, len(kept))
        done = resume_path(store, model)
        again = RegPath.open(store)
        assert len(done) == len(again) == len(ref_path), k
        assert np.array_equal(_bits(again.lams), _bits(ref_path.lams))
        assert np.array_equal(_bits(again.W), _bits(ref_path.W)), k
        assert again.end_reason == ref_path.end_reason and "resume_state" not in again.meta
        resumed += 1
    assert resumed >= len(ref_path) - 1


def test_cli_disk_full_then_resume_once_space_is_free(tmp_path, monkeypatch, capsys):
    from gaplab.cli import main
    common = ["--dataset", "ocr-small", "--eps", "0.5", "--lam-min", "0.1", "--no-test-error", "--quiet"]
    ref = tmp_path / "ref.npz"
    assert main(["path", *common, "--out", str(ref)]) == 0
    store = tmp_path / "s"
    with monkeypatch.context() as m:
        _FullDisk(m, store, 7)
        assert main(["path", *common, "--store", str(store)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "No space left on device" in line and f"--resume {store}" in line, line
    assert main(["path", "--resume", str(store), "--quiet", "--no-test-error"]) == 0
    got, want = RegPath.open(store), RegPath.load(ref)
    assert np.array_equal(_bits(got.lams), _bits(want.lams)) and np.array_equal(_bits(got.W), _bits(want.W))
