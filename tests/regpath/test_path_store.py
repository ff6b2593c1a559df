"""The regularization path streamed to an on-disk path store (one npz per breakpoint
plus a JSON manifest), read back lazily, robust to SIGKILL, with bounded memory."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import random_chain_data
from gaplab.core import ChainModel
from gaplab.core.regpath import store as pst
from gaplab.core.regpath import PathConfig, PathFileError, PathStoreError, RegPath, regularization_path, resume_path

ENV = dict(os.environ)
ENV["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
TESTS = Path(__file__).resolve().parents[1]
ENV["PYTHONPATH"] = os.pathsep.join([str(TESTS), ENV["PYTHONPATH"]])

CFG = PathConfig(eps=0.05, lam_min=1e-3)


@pytest.fixture(scope="module")
def model():
    return ChainModel(random_chain_data(n=12, T_range=(1, 4), K=3, F=30, seed=3, density=0.15))


@pytest.fixture(scope="module")
def mem_path(model):
    return regularization_path(model, CFG, meta={"dataset": "random"})


def _random_lams(path, rng, k=40):
    lo = path.lam_end if path.lam_end > 0 else path.lams[-1] / 10
    return np.exp(rng.uniform(math.log(lo), math.log(path.lams[0] * 4), k))


def _bits(a):
    return np.asarray(a, dtype=np.float64).view(np.uint64)


def test_store_read_back_lazily_is_bitwise_the_in_memory_path(mem_path, model, tmp_path, monkeypatch):
    assert len(mem_path) >= 10
    # w has exact zeros (sparse features) and a -0.0 must survive too
    opened = mem_path.to_store(tmp_path / "s")
    assert opened.store == tmp_path / "s" and all(w is None for w in opened._W)  # nothing materialized
    reads = []
    real = pst.read_weights
    monkeypatch.setattr(pst, "read_weights", lambda *a, **k: reads.append(a[1]) or real(*a, **k))
    rng = np.random.default_rng(0)
    for lam in _random_lams(mem_path, rng):
        before = len(reads)
        assert np.array_equal(_bits(opened.w_at(lam)), _bits(mem_path.w_at(lam))), lam
        assert opened.gap_at(lam) == mem_path.gap_at(lam)
        assert len(reads) - before <= 1  # only the breakpoint of λ's piece is read
    assert opened.rows() == [dict(r) for r in mem_path.rows()] or _rows_equal(opened.rows(), mem_path.rows())
    assert opened.meta == json.loads(json.dumps(mem_path.meta))
    assert opened.kind == mem_path.kind and opened.lam_end == mem_path.lam_end
    for c in ("lam", "gap", "delta", "next_lam", "cum_passes", "test_error"):
        assert np.array_equal(opened.column(c), mem_path.column(c), equal_nan=True)
    for p, q in zip(opened, (mem_path.point(j) for j in range(len(mem_path)))):  # one w at a time
        assert np.array_equal(_bits(p.w), _bits(q.w)) and p.row().keys() == q.row().keys()
    assert np.array_equal(opened.W, mem_path.W)


def _rows_equal(a, b):
    assert len(a) == len(b)
    for ra, rb in zip(a, b):
        for k in rb:
            va, vb = ra[k], rb[k]
            assert va == vb or (isinstance(vb, float) and math.isnan(vb) and math.isnan(va)), (k, va, vb)
    return True


def test_streamed_path_keeps_no_w_in_memory_and_equals_the_in_memory_path(mem_path, model, tmp_path):
    seen = []
    st = regularization_path(model, CFG, meta={"dataset": "random"}, store=tmp_path / "s",
                             callback=lambda p: seen.append(p) and False)
    assert all(w is None for w in st._W) and all(p.w is None for p in seen[:-1])
    assert len(st) == len(mem_path)
    opened = RegPath.open(tmp_path / "s")
    _rows_equal(opened.rows(), st.rows())
    rng = np.random.default_rng(1)
    for lam in _random_lams(mem_path, rng, 15):  # the solver is deterministic: the same w
        assert np.array_equal(_bits(opened.w_at(lam)), _bits(mem_path.w_at(lam)))
    man = pst.read_manifest(tmp_path / "s")
    assert [f["file"] for f in man["files"]] == [f"bp_{j:06d}.npz" for j in range(len(st))]
    assert {f["encoding"] for f in man["files"]} <= {"sparse", "dense"}


def test_sparse_encoding_is_bitwise_and_compact(tmp_path):
    rng = np.random.default_rng(2)
    w = np.zeros(50_000)
    k = rng.choice(w.size, 3000, replace=False)
    w[k] = rng.standard_normal(k.size)
    w[k[:5]] = -0.0
    wr = pst.PathStoreWriter(tmp_path / "s", "grid", {"n": 1, "d": w.size})
    wr.append({"lam": 1.0}, w)
    wr.append({"lam": 0.5}, np.full(w.size, 0.25))   # dense
    man = pst.read_manifest(tmp_path / "s")
    assert [f["encoding"] for f in man["files"]] == ["sparse", "dense"]
    assert man["files"][0]["bytes"] < 0.1 * w.nbytes
    back = pst.read_weights(tmp_path / "s", 0, man["files"][0], w.size, 1.0)
    assert np.array_equal(_bits(back), _bits(w))
    with np.load(tmp_path / "s" / "bp_000000.npz") as z:   # a plain npz: numpy reads it alone
        assert set(z.files) == {"idx_delta", "val", "header"}


def test_old_single_file_npz_still_loads(mem_path, tmp_path):
    f = mem_path.save(tmp_path / "old.npz")
    a, b = RegPath.open(f), RegPath.load(f)
    assert a.store is None and len(a) == len(mem_path)
    for lam in _random_lams(mem_path, np.random.default_rng(3), 10):
        assert np.array_equal(a.w_at(lam), mem_path.w_at(lam)) and a.gap_at(lam) == b.gap_at(lam)


# ---------------------------------------------------------------------------- SIGKILL
_CHILD = textwrap.dedent("""
    import sys, time, os
    from pathlib import Path
    from conftest import random_chain_data
    from gaplab.core import ChainModel
    from gaplab.core.regpath import store as pst
    from gaplab.core.regpath import PathConfig, regularization_path
    store, mode = Path(sys.argv[1]), sys.argv[2]
    model = ChainModel(random_chain_data(n=12, T_range=(1, 4), K=3, F=30, seed=3, density=0.15))
    if mode == "during_write":  # the 4th breakpoint file: half written, then wait to be killed
        real = pst._write_npz
        count = [0]
        def slow(fh, arrays, compress):
            count[0] += 1
            if count[0] == 4:
                fh.write(b"PK\\x03\\x04 half a breakpoint")
                fh.flush()
                (store.parent / "writing").write_text("1")
                time.sleep(600)
            real(fh, arrays, compress)
        pst._write_npz = slow
    def cb(p):
        print("point", p.index, flush=True)
        time.sleep(0.3)
    regularization_path(model, PathConfig(eps=0.05, lam_min=1e-3), meta={"dataset": "random"}, store=store,
                        callback=cb, checkpoint_every=1)
""")


def _child(store, mode):
    return subprocess.Popen([sys.executable, "-c", _CHILD, str(store), mode], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV)


def _check_complete(store, mem_path):
    opened = RegPath.open(store)
    for j in range(len(opened)):   # every listed breakpoint is whole and the in-memory one
        assert np.array_equal(_bits(opened.point(j).w), _bits(mem_path.point(j).w))
        assert opened.lams[j] == mem_path.lams[j]
    return opened


def test_sigkill_between_breakpoints_keeps_every_certified_one_and_resumes(mem_path, model, tmp_path):
    store = tmp_path / "s"
    p = _child(store, "between")
    try:
        for line in p.stdout:
            if line.startswith("point 5"):
                break
        os.kill(p.pid, signal.SIGKILL)
    finally:
        p.kill()
        p.wait(30)
    opened = _check_complete(store, mem_path)
    assert len(opened) >= 6 and not opened.column("end")[-1]
    assert not list(store.glob("bp_*.npz"))[len(opened) + 1:]  # at most one unlisted file (never read)
    done = resume_path(store, model)  # checkpoint_every=1: the solver state of the last breakpoint
    assert len(done) == len(mem_path) and done.end_reason == mem_path.end_reason
    again = RegPath.open(store)
    assert len(again) == len(mem_path) and "resume_state" not in again.meta
    for lam in _random_lams(mem_path, np.random.default_rng(4), 10):
        assert np.array_equal(again.w_at(lam), mem_path.w_at(lam))


def test_sigkill_during_a_breakpoint_write_leaves_no_half_written_breakpoint(mem_path, tmp_path):
    store = tmp_path / "s"
    p = _child(store, "during_write")
    try:
        t0 = time.time()
        while not (tmp_path / "writing").exists():
            assert p.poll() is None, p.stderr.read()
            assert time.time() - t0 < 120
            time.sleep(0.05)
        os.kill(p.pid, signal.SIGKILL)
    finally:
        p.kill()
        p.wait(30)
    opened = _check_complete(store, mem_path)
    assert len(opened) == 3  # breakpoints 0-2 certified and written; the 4th never listed
    assert not (store / "bp_000003.npz").exists()
    assert list(store.glob(".bp_000003.npz.*.tmp"))  # the half-written temporary file, ignored
    wr = pst.PathStoreWriter(store, "eps", dict(opened.meta), mode="append")  # the next writer cleans up
    assert not list(store.glob(".*.tmp")) and len(wr) == 3


# ---------------------------------------------------------------------------- bad input
def test_store_from_another_dataset_or_d_is_refused_naming_it(mem_path, tmp_path):
    opened = mem_path.to_store(tmp_path / "s")
    other = ChainModel(random_chain_data(n=12, T_range=(1, 4), K=3, F=7, seed=3))
    with pytest.raises(PathStoreError, match=r"path store .*'.*s'.*d = .*this model has"):
        RegPath.open(tmp_path / "s", model=other)
    with pytest.raises(PathStoreError, match=r"path store .*computed on the dataset 'random', not 'ocr-small'"):
        RegPath.open(tmp_path / "s", dataset="ocr-small")
    with pytest.raises(PathStoreError, match="this model has"):
        resume_path(tmp_path / "s", other)
    with pytest.raises(PathStoreError, match="n = 12, d = .*this model has"):
        pst.PathStoreWriter(tmp_path / "s", "eps", {"n": 12, "d": other.d}, mode="append")
    assert len(opened) == len(mem_path)


def test_missing_breakpoint_file_is_named(mem_path, tmp_path):
    mem_path.to_store(tmp_path / "s")
    (tmp_path / "s" / "bp_000004.npz").unlink()
    with pytest.raises(PathStoreError, match=r"path store .*breakpoint 4 .*bp_000004.npz is missing"):
        RegPath.open(tmp_path / "s")


def test_corrupt_chunk_is_named_when_read(mem_path, tmp_path):
    opened = mem_path.to_store(tmp_path / "s")
    f = tmp_path / "s" / "bp_000003.npz"
    raw = bytearray(f.read_bytes())
    k = raw.find(b"val.npy")
    i = raw.find(b"\n", k + 300) + 10   # inside the values, after the .npy header
    raw[i] ^= 0xFF
    f.write_bytes(bytes(raw))
    lam = float(opened.lams[3])
    with pytest.raises(PathStoreError, match=r"path store .*breakpoint 3 \(bp_000003.npz, λ = .*corrupt"):
        opened.w_at(lam)
    f.write_bytes(bytes(raw[: len(raw) // 2]))  # truncated
    fresh = RegPath.open(tmp_path / "s")
    with pytest.raises(PathStoreError, match=r"breakpoint 3 .*(corrupt|truncated)"):
        fresh.w_at(lam)
    assert np.array_equal(fresh.w_at(float(opened.lams[5])), mem_path.w_at(float(opened.lams[5])))


def test_broken_manifest_and_swapped_files_are_refused(mem_path, tmp_path):
    mem_path.to_store(tmp_path / "s")
    s = tmp_path / "s"
    (s / "bp_000002.npz").write_bytes((s / "bp_000001.npz").read_bytes())  # a file of another breakpoint
    with pytest.raises(PathStoreError, match=r"breakpoint 2 .*header .*does not match the manifest"):
        RegPath.open(s).w_at(float(mem_path.lams[2]))
    (s / "manifest.json").write_text("{not json")
    with pytest.raises(PathStoreError, match=r"path store .*manifest.json is not valid JSON"):
        RegPath.open(s)
    with pytest.raises(FileNotFoundError):
        RegPath.open(tmp_path / "nothing.npz")
    (tmp_path / "e").mkdir()
    with pytest.raises(PathStoreError, match="no manifest.json"):
        RegPath.open(tmp_path / "e")
    with pytest.raises(PathStoreError, match="already holds a path"):
        mem_path.to_store(tmp_path / "s2").to_store(tmp_path / "s2")
    assert isinstance(PathFileError("x"), ValueError) and isinstance(PathStoreError("x"), ValueError)


# ---------------------------------------------------------------------------- memory
CONLL = next((d for d in ([Path(os.environ["GAPLAB_DATA"]), Path(os.environ["GAPLAB_DATA"]) / "conll2000"]
                          if os.environ.get("GAPLAB_DATA") else []) + [TESTS.parents[1] / "shared" / "data" / "conll2000",
                                                                      Path("/work/shared/data/conll2000")]
              if (d / "train.txt").is_file()), None)

_RSS_CHILD = textwrap.dedent("""
    import sys, json, resource, tempfile
    from gaplab.core import ChainModel
    from gaplab.core.datasets.conll import parse_conll, make_conll_datasets
    from gaplab.core.regpath import PathConfig, regularization_path
    sents = parse_conll(sys.argv[1])[:150]
    train, _ = make_conll_datasets(sents)
    model = ChainModel(train)
    nb = int(sys.argv[2])
    store = tempfile.mkdtemp() + "/s"
    path = regularization_path(model, PathConfig(eps=0.002, max_breakpoints=nb, max_passes_per_breakpoint=3),
                               store=store)
    print(json.dumps({"peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "points": len(path),
                      "d": model.d}))
""")


@pytest.mark.skipif(CONLL is None, reason="CoNLL-2000 data not found ($GAPLAB_DATA or ../shared/data)")
def test_rss_does_not_grow_with_the_number_of_breakpoints_on_a_conll_subset():
    out = {}
    for nb in (5, 40):
        r = subprocess.run([sys.executable, "-c", _RSS_CHILD, str(CONLL / "train.txt"), str(nb)],
                           capture_output=True, text=True, timeout=300, env=ENV)
        assert r.returncode == 0, r.stderr[-2000:]
        out[nb] = json.loads(r.stdout.strip().splitlines()[-1])
    assert out[5]["points"] == 5 and out[40]["points"] == 40
    d = out[5]["d"]
    growth = (out[40]["peak_kb"] - out[5]["peak_kb"]) * 1024
    w_bytes = 8 * d
    # in memory, 35 more breakpoints would hold 35 more dense w's (and np.vstack doubles that)
    assert growth < 4 * w_bytes + 8 * 2**20, (growth / 2**20, w_bytes / 2**20)
    assert 35 * w_bytes > 2 * (4 * w_bytes + 8 * 2**20)  # the margin is far below keeping every w


# ---------------------------------------------------------------------------- CLI
def _gaplab(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "gaplab", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=ENV)


def test_cli_path_store_streams_refuses_reuse_and_resumes_a_checkpoint(tmp_path):
    store = tmp_path / "s"
    common = ("--dataset", "ocr-small", "--eps", "0.5", "--lam-min", "0.1", "--no-test-error")
    r = _gaplab("path", *common, "--store", store, "--checkpoint-every", "2")
    assert r.returncode == 0, r.stderr
    assert "streamed" in r.stdout and str(store) in r.stdout
    done = RegPath.open(store)
    assert len(done) >= 5 and done.end_reason in ("rho<=0", "lam_min") and "resume_state" not in done.meta
    r = _gaplab("path", *common, "--store", store, "--quiet")
    assert r.returncode == 2 and "already holds a path" in r.stderr
    r = _gaplab("path", "--resume", store, "--quiet")
    assert r.returncode == 2 and "finished" in r.stderr and str(store) in r.stderr


def test_cli_ctrl_c_keeps_the_store_resumable(tmp_path, capsys):
    """Ctrl-C (a real SIGINT to a child process) after breakpoint 8, then ``--resume`` (in this
    process) to the path's end."""
    from cli_runs import run_cli
    store = tmp_path / "s"
    p = subprocess.Popen([sys.executable, "-m", "gaplab", "path", "--dataset", "ocr-small", "--eps", "0.1",
                          "--lam-min", "1", "--no-test-error", "--store", str(store)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        for line in p.stdout:
            if line.strip().startswith("8 "):
                break
        p.send_signal(signal.SIGINT)
        _out, err = p.communicate(timeout=120)
    finally:
        p.kill()
    assert p.returncode == 130, err
    assert f"--resume {store}" in err.strip().splitlines()[-1]
    part = RegPath.open(store)
    assert len(part) >= 9 and part.end_reason == "interrupted" and "resume_state" in part.meta
    rc, _, err = run_cli(capsys, "path", "--resume", store, "--quiet", "--no-test-error")
    assert rc == 0, err
    done = RegPath.open(store)
    assert len(done) > len(part) and done.end_reason in ("rho<=0", "lam_min")
    assert np.array_equal(done.lams[:len(part)], part.lams)
    assert np.array_equal(done.point(len(part) - 1).w, part.point(len(part) - 1).w)


def test_compressed_values_read_back_bitwise(mem_path, tmp_path):
    rng = np.random.default_rng(5)
    w = np.zeros(20_000)
    w[rng.choice(w.size, 2000, replace=False)] = rng.choice([0.5, -1.25, 3.0], 2000)  # few distinct values
    for compress in (False, True):
        wr = pst.PathStoreWriter(tmp_path / f"c{compress}", "grid", {"n": 1, "d": w.size}, compress_values=compress)
        wr.append({"lam": 1.0}, w)
        man = pst.read_manifest(tmp_path / f"c{compress}")
        assert np.array_equal(_bits(pst.read_weights(tmp_path / f"c{compress}", 0, man["files"][0], w.size, 1.0)),
                              _bits(w))
    raw, packed = (pst.read_manifest(tmp_path / f"c{c}")["files"][0]["bytes"] for c in (False, True))
    assert packed < 0.5 * raw
