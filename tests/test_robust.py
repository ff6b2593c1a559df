"""Issue 14: nothing lost. Atomic outputs, outputs checked before the work, partial results on
Ctrl-C (train, path, grid, Solver.run) with checkpoint/resume, and every input either works or is
refused clearly. One test (or a few) per item of the issue; item 8 (--gap-power) is elsewhere."""
from __future__ import annotations

import json
import re
import math
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from gaplab.core import CacheConfig, ChainModel, Solver, SolverConfig, load_ocr
from gaplab.core.datasets import SequenceData
from gaplab.core.estimator import SSVM
from gaplab.core.regpath import PathConfig, RegPath, regularization_path

# names added for issue 14 are imported inside the tests, so that each test fails on its own
# (rather than the whole module failing to import) on a gaplab without them

ENV = dict(os.environ)
ENV["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the same gaplab in the children


def gaplab(*args, timeout=120, **kw):
    return subprocess.run([sys.executable, "-m", "gaplab", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=ENV, **kw)


def _wait_for(stream, needle: str, timeout=120.0) -> str:
    """Read a child's stream until ``needle`` appears (returns what was read)."""
    buf = ""
    t0 = time.time()
    while needle not in buf:
        ch = stream.read(1)
        if not ch:
            raise AssertionError(f"stream ended before {needle!r}: {buf[-500:]!r}")
        buf += ch
        if time.time() - t0 > timeout:
            raise AssertionError(f"{needle!r} did not appear within {timeout} s")
    return buf


def _sigint_after(cmd_args, needle, stream="stderr", count=1, timeout=120):
    p = subprocess.Popen([sys.executable, "-m", "gaplab", *map(str, cmd_args)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV)
    s = p.stderr if stream == "stderr" else p.stdout
    for _ in range(count):
        _wait_for(s, needle)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


@pytest.fixture(scope="module")
def small():
    train, test = load_ocr("small")
    return ChainModel(train.subset(np.arange(40))), test


# =============================================================== 1. atomic outputs
_FSIZE_CHILD = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a write beyond the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
sys.argv = ["gaplab"] + sys.argv[1:]
from gaplab.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def test_failed_write_keeps_the_previous_file(tmp_path):
    """``ulimit -f`` during the final write of ``gaplab train --out``: the old result stays whole
    and no temporary file is left (was: a truncated JSON)."""
    # compile / load the numba kernels first: their on-disk cache must not hit the file size limit
    assert gaplab("train", "--dataset", "ocr-small", "--max-passes", "1", "--quiet").returncode == 0
    out = tmp_path / "result.json"
    good = {"status": "converged", "trace": ["x" * 50] * 200}  # ~10 kB, a previous good result
    out.write_text(json.dumps(good))
    r = subprocess.run([sys.executable, "-c", _FSIZE_CHILD, "train", "--dataset", "ocr-small", "--lam", "0.1",
                        "--max-passes", "12", "--gap-check", "1", "--out", str(out), "--quiet"],
                       capture_output=True, text=True, timeout=120, env=ENV)
    assert r.returncode != 0 and "File too large" in r.stderr, r.stderr  # the final write failed (EFBIG)
    assert json.loads(out.read_text()) == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_regpath_save_failure_keeps_the_previous_file(tmp_path, small, monkeypatch):
    model, _ = small
    path = regularization_path(model, PathConfig(eps=0.5, lam_min=1.0))
    f = tmp_path / "p.npz"
    path.save(f)
    before = f.read_bytes()

    def broken_savez(file, **arrays):  # writes half an archive, then the disk is full
        if hasattr(file, "write"):
            file.write(b"PK\x03\x04 half an archive")
        else:
            name = str(file) if str(file).endswith(".npz") else str(file) + ".npz"
            with open(name, "wb") as fh:
                fh.write(b"PK\x03\x04 half an archive")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", broken_savez)
    with pytest.raises(OSError):
        path.save(f)
    assert f.read_bytes() == before and len(RegPath.load(f)) == len(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.npz"]


# =============================================================== 2. outputs checked before the work
@pytest.mark.parametrize("where", ["dir", "device", "readonly", "missing-dir"])
def test_unwritable_out_is_refused_before_any_work(tmp_path, where):
    out = {"dir": tmp_path, "device": "/dev/full", "readonly": "/proc/gaplab_result.json",
           "missing-dir": tmp_path / "nope" / "r.json"}[where]
    t0 = time.time()
    r = gaplab("train", "--dataset", "ocr-small", "--max-passes", "5", "--out", out)
    assert r.returncode == 2, r.stderr
    assert "--out" in r.stderr and str(out) in r.stderr and "Traceback" not in r.stderr
    assert "primal" not in r.stdout  # no solver work was done
    assert time.time() - t0 < 30


def test_path_and_grid_outputs_are_checked_first(tmp_path):
    r = gaplab("path", "--dataset", "ocr-small", "--out", "/proc/gaplab_path.npz")
    assert r.returncode == 2 and "--out" in r.stderr and "gaplab path:" not in r.stdout
    r = gaplab("grid", "--dataset", "ocr-small", "--json", tmp_path)
    assert r.returncode == 2 and "--json" in r.stderr and "is a directory" in r.stderr


# =============================================================== 3. Ctrl-C keeps what is done
def test_sigint_during_train_writes_the_result_so_far(tmp_path):
    out = tmp_path / "r.json"
    rc, stdout, err = _sigint_after(["train", "--dataset", "ocr-small", "--lam", "0.001", "--gap-threshold", "0",
                                     "--max-passes", "100000", "--gap-check", "5", "--out", out, "--progress"],
                                    "passes [", count=3)
    assert rc == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip().splitlines()[-1].startswith("gaplab train: interrupted after")
    res = json.loads(out.read_text())
    assert res["status"] == "interrupted"
    assert 0 < res["effective_passes"] < 100000 and len(res["trace"]) >= 1
    assert isinstance(res["exact_gap_is_current"], bool)


def test_solver_run_interrupted_keeps_state_and_continues(small):
    """Ctrl-C inside Solver.run(): Interrupted with the result so far; the second run() ends where
    an uninterrupted run ends (same iterates)."""
    model, _ = small
    cfg = SolverConfig(lam=0.01, sampling="gap", step="pairwise", cache=CacheConfig(enabled=True), max_passes=12,
                       gap_threshold=0, gap_check=3, seed=5)
    ref = Solver(model, cfg).run()
    s = Solver(model, cfg)
    calls = []

    def press_ctrl_c(solver, rec):
        calls.append(rec["kind"])
        if len(calls) == 4:
            os.kill(os.getpid(), signal.SIGINT)
        return False

    from gaplab.core.interrupt import Interrupted
    with pytest.raises(Interrupted) as err:
        s.run(callback=press_ctrl_c)
    part = err.value.partial
    assert part.status.name == "INTERRUPTED" and 0 < part.effective_passes < 12
    assert isinstance(err.value, KeyboardInterrupt)
    res = s.run()
    assert res.status == ref.status and res.effective_passes == ref.effective_passes
    np.testing.assert_array_equal(res.w, ref.w)
    assert res.exact_gap == ref.exact_gap


def test_sigint_during_path_then_resume_reaches_the_same_end(tmp_path):
    args = ["--dataset", "ocr-small", "--eps", "0.2", "--lam-min", "0.1", "--no-test-error"]
    full = tmp_path / "full.npz"
    r = gaplab("path", *args, "--out", full, "--quiet")
    assert r.returncode == 0, r.stderr
    part = tmp_path / "part.npz"
    rc, out, err = _sigint_after(["path", *args, "--out", part], "converged", stream="stdout", count=5)
    assert rc == 130 and "Traceback" not in err, err
    assert "--resume" in err.strip().splitlines()[-1]
    p = RegPath.load(part)  # a valid, loadable path
    ref = RegPath.load(full)
    assert p.end_reason == "interrupted" and 5 <= len(p) < len(ref)
    np.testing.assert_array_equal(p.lams, ref.lams[:len(p)])
    r = gaplab("path", "--resume", part, "--out", tmp_path / "resumed.npz", "--quiet")
    assert r.returncode == 0, r.stderr
    done = RegPath.load(tmp_path / "resumed.npz")
    assert done.end_reason == ref.end_reason and len(done) == len(ref)
    np.testing.assert_array_equal(done.lams, ref.lams)
    np.testing.assert_array_equal(done.W, ref.W)
    np.testing.assert_array_equal(done.column("gap"), ref.column("gap"))


def test_sigint_during_grid_writes_the_finished_points(tmp_path):
    out = tmp_path / "g.npz"
    lams = ",".join(f"2^{k}" for k in range(4, -12, -1))
    rc, _, err = _sigint_after(["grid", "--dataset", "ocr-small", "--lams", lams, "--eps", "0.05", "--out", out,
                                "--no-test-error"], "converged", stream="stdout", count=2)
    assert rc == 130 and "Traceback" not in err
    g = RegPath.load(out)
    assert g.kind == "grid" and g.end_reason == "interrupted" and 2 <= len(g) < 16


def test_checkpoint_every_and_resume_in_python(tmp_path, small):
    from gaplab.core.interrupt import Interrupted
    from gaplab.core.regpath import PathFileError, resume_path
    model, _ = small
    cfg = PathConfig(eps=0.3, lam_min=0.05)
    ref = regularization_path(model, cfg)
    ck = tmp_path / "ck.npz"
    seen = []

    def stop_at_7(point):
        seen.append(point.index)
        if len(seen) == 7:
            raise KeyboardInterrupt  # as a Ctrl-C between breakpoints

    with pytest.raises(Interrupted) as err:
        regularization_path(model, cfg, callback=stop_at_7, checkpoint_every=3, checkpoint_file=ck)
    assert len(err.value.partial) == 7
    saved = RegPath.load(ck)  # the checkpoint after 6 points (not the interrupted state)
    assert len(saved) == 6 and saved.end_reason == "stopped"  # not finished: no end reason yet
    done = resume_path(ck, model)
    np.testing.assert_array_equal(done.lams, ref.lams)
    np.testing.assert_array_equal(done.W, ref.W)
    assert done.end_reason == ref.end_reason
    done.save(tmp_path / "done.npz")
    with pytest.raises(PathFileError, match="finished"):
        resume_path(tmp_path / "done.npz", model)


# =============================================================== 4. crashes and hangs
def test_max_passes_inf_with_a_time_limit_runs():
    r = gaplab("train", "--dataset", "ocr-small", "--max-passes", "inf", "--time-limit", "0.5", "--gap-threshold", "0",
               "--progress", "--quiet")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr


def test_run_override_that_never_stops_is_refused():
    code = ("from gaplab.core import ChainModel, Solver, load_ocr\n"
            "s = Solver(ChainModel(load_ocr('small')[0].subset(range(10))), max_passes=5)\n"
            "try:\n    s.run(max_passes=float('inf'), gap_threshold=0)\n"
            "except ValueError as e:\n    print('refused:', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90, env=ENV)
    assert "refused:" in r.stdout and "never stop" in r.stdout


@pytest.mark.parametrize("lam", ["1e-320", "1e-200", "1e300"])
def test_lam_whose_objective_is_not_finite_is_refused(lam):
    r = gaplab("train", "--dataset", "ocr-small", "--lam", lam, "--max-passes", "2")
    assert r.returncode == 2 and "lam" in r.stderr and "finite" in r.stderr, (r.returncode, r.stderr)
    with pytest.raises(ValueError, match="lam"):
        SolverConfig(lam=float(lam))
    if float(lam) < 1:  # a path or grid cannot go there either (refused up front, not mid-run)
        with pytest.raises(ValueError, match="lam_min"):
            PathConfig(lam_min=float(lam))
        r = gaplab("grid", "--dataset", "ocr-small", "--lams", f"1,{lam}")
        assert r.returncode == 2 and "λ of the grid" in r.stderr


# =============================================================== 5. data cannot change under the solver
def test_validated_sequence_data_is_read_only(small):
    train, _ = load_ocr("small")
    for arr, val in ((train.labels, 10 ** 9), (train.feat_indices, 10 ** 6), (train.feat_values, math.nan),
                     (train.seq_offsets, 0), (train.feat_indptr, 0)):
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = val
    # the caller's arrays are copied: changing them afterwards does not reach the data set
    X = [np.ones((3, 2)), np.ones((2, 2))]
    labels = np.array([0, 1, 0, 1, 1])
    d = SequenceData(seq_offsets=np.array([0, 3, 5]), feat_indptr=np.arange(6) * 2,
                     feat_indices=np.tile([0, 1], 5), feat_values=np.ones(10), labels=labels, n_features=2,
                     label_names=("a", "b"))
    labels[0] = 10 ** 9
    assert d.labels[0] == 0
    Solver(ChainModel(d), max_passes=2).run()  # still runs on the validated copy
    assert X  # (dense inputs are covered by from_dense)


def test_float_labels_or_offsets_are_refused():
    base = dict(seq_offsets=np.array([0, 2]), feat_indptr=np.array([0, 1, 2]), feat_indices=np.array([0, 1]),
                feat_values=np.ones(2), labels=np.array([0, 1]), n_features=2, label_names=("a", "b"))
    for field, bad in (("labels", np.array([0.0, 1.7])), ("seq_offsets", np.array([0.0, 2.0])),
                       ("feat_indices", np.array([0.5, 1.0]))):
        with pytest.raises(TypeError, match=field):
            SequenceData(**{**base, field: bad})


# =============================================================== 6. estimator
def _seqs(n=6, seed=0):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(int(rng.integers(2, 5)), 3)) for _ in range(n)]
    Y = [(x[:, 0] > 0).astype(np.int64) for x in X]
    return X, Y


def test_estimator_needs_labels_and_says_so():
    X, Y = _seqs()
    with pytest.raises(ValueError, match="needs the labels Y"):
        SSVM(max_passes=5).fit(X)
    est = SSVM(max_passes=5, gap_threshold=0).fit(X, Y)
    with pytest.raises(ValueError, match="needs the labels Y"):
        est.score(X)
    assert 0 <= est.score(X, Y) <= 1
    with pytest.raises(ValueError, match="same number of sequences"):
        SSVM().fit(X, [])
    with pytest.raises(ValueError, match=r"\[1\] (is empty|must be a non-empty)"):
        SSVM().fit([X[0], np.zeros((0, 3))], [Y[0], np.zeros(0, dtype=int)])
    with pytest.raises(TypeError, match=r"Y\[0\] must hold integer labels"):
        SSVM().fit(X, [np.array(["a"] * len(x)) for x in X])


def test_estimator_warns_when_the_budget_ends_and_reports_the_gap():
    from gaplab.core.estimator import ConvergenceWarning
    X, Y = _seqs(12)
    with pytest.warns(ConvergenceWarning, match="max_passes=2"):
        est = SSVM(lam=1e-3, max_passes=2, gap_threshold=1e-9).fit(X, Y)
    assert est.n_iter_ == est.result_.effective_passes and est.dual_gap_ == est.result_.exact_gap
    assert est.dual_gap_ > 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SSVM(lam=1.0, max_passes=500, gap_threshold=1e-2, seed=np.int64(3)).fit(X, Y)  # numpy seed, converges


# =============================================================== 7. corrupted CoNLL (see also test_conll_data.py)
def test_non_official_conll_files_are_refused_by_default(tmp_path):
    from gaplab.core.datasets.conll import load_conll2000
    (tmp_path / "train.txt").write_text("He PRP B-NP\nsleeps VBZ B-VP\n")
    (tmp_path / "test.txt").write_text("He PRP B-NP\n")
    with pytest.raises(ValueError, match=r"train\.txt.*verify=False"):
        load_conll2000(tmp_path)
    assert load_conll2000(tmp_path, verify=False)[0].n == 1
    r = gaplab("train", "--dataset", "conll2000", "--data-home", tmp_path, "--max-passes", "2")
    assert r.returncode == 2 and "train.txt" in r.stderr and "--no-verify" in r.stderr


# =============================================================== 9. RegPath.load on tampered files
def _tamper(src, dst, **changes):
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    for k, v in changes.items():
        if v is None:
            arrays.pop(k)
        else:
            arrays[k] = v
    np.savez(dst, **arrays)
    return dst


def test_regpath_load_refuses_tampered_files_with_one_error_type(tmp_path, small):
    from gaplab.core.regpath import PathFileError
    model, _ = small
    path = regularization_path(model, PathConfig(eps=0.5, lam_min=1.0))
    f = tmp_path / "p.npz"
    path.save(f)
    lams = path.lams
    cases = {
        "missing": dict(W=None),
        "json": dict(meta_json=np.array("{not json")),
        "nan": dict(lams=np.r_[np.nan, lams[1:]], lam=np.r_[np.nan, lams[1:]]),
        "negative": dict(lams=-lams, lam=-lams),
        "increasing": dict(lams=lams[::-1].copy(), lam=lams[::-1].copy()),
        "short_W": dict(W=path.W[:-1]),
        "column": dict(gap=path.column("gap")[:-1]),
    }
    for name, ch in cases.items():
        bad = _tamper(f, tmp_path / f"{name}.npz", **ch)
        with pytest.raises(PathFileError) as err:
            RegPath.load(bad)
        assert str(bad) in str(err.value), name
    (tmp_path / "garbage.npz").write_bytes(b"not an archive at all")
    with pytest.raises(PathFileError, match="garbage.npz"):
        RegPath.load(tmp_path / "garbage.npz")
    assert issubclass(PathFileError, ValueError)
    assert len(RegPath.load(f)) == len(path)


# =============================================================== 10. the smaller ones
def test_grid_out_prints_the_file_it_wrote(tmp_path):
    r = gaplab("grid", "--dataset", "ocr-small", "--lams", "1,0.5", "--eps", "0.5", "--no-test-error",
               "--out", tmp_path / "name")
    assert r.returncode == 0, r.stderr
    assert f"wrote {tmp_path / 'name.npz'}" in r.stdout and (tmp_path / "name.npz").is_file()


def test_every_zero_is_refused():
    r = gaplab("path", "--every", "0")
    assert r.returncode == 2 and "--every" in r.stderr


def test_budget_overrun_by_the_final_gap_pass_is_explained():
    r = gaplab("train", "--dataset", "ocr-small", "--max-passes", "2", "--gap-threshold", "0")
    assert r.returncode == 0
    line = next(ln for ln in r.stdout.splitlines() if "effective passes" in ln)
    assert "3.0" in line and "final exact gap pass" in line


def test_seeds_beyond_64_bits_are_refused():
    with pytest.raises(ValueError, match="2\\*\\*64"):
        SolverConfig(seed=2 ** 64)
    assert SolverConfig(seed=2 ** 64 - 1).seed == 2 ** 64 - 1
    assert SolverConfig(seed=np.uint32(7)).seed == 7


def test_app_says_why_an_invalid_lam_is_refused():
    pytest.importorskip("panel")
    from gaplab.app.main import build_app
    app = build_app(periodic=False)
    try:
        app.widgets["lam"].value = -1.0
        assert app.session.lam == 0.01
        level, text = app.session.messages()[-1]
        assert level == "error" and "λ must be" in text and "-1.0" in text
    finally:
        app.close()


# =============================================================== the models and tools added since
# (segmentation: seg-tiny / horse-small; pose: lsp-tiny; sweeps; path stores). Each test failed on
# the main of 2026-11-23 (46249a5).
def _shared(*parts):
    """A file or directory of the shared development data ($GAPLAB_DATA or ../shared/data), or None."""
    here = Path(__file__).resolve()
    roots = [Path(os.environ["GAPLAB_DATA"])] if os.environ.get("GAPLAB_DATA") else []
    roots += [here.parents[2] / "shared" / "data", here.parents[3] / "shared" / "data"]
    return next((r.joinpath(*parts) for r in roots if r.joinpath(*parts).exists()), None)


def _cli(capsys, *args):
    from gaplab.cli import main
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


# ----------------------------------------------------------------- 7. horse and LSP files
def test_damaged_horse_file_is_refused_naming_it(tmp_path, capsys):
    """A cut photo in a copy of (part of) the Weizmann database: refused by default with its name
    (was: verify=False by default, and the checksum of the whole directory named no file)."""
    src = _shared("weizmann_horse")
    if src is None:
        pytest.skip("Weizmann horses not found ($GAPLAB_DATA or ../shared/data/weizmann_horse)")
    from gaplab.core.datasets.horse import load_weizmann_horses
    root = tmp_path / "weizmann_horse"
    for sub in ("rgb", "figure_ground"):
        (root / sub).mkdir(parents=True)
        for k in (1, 2, 3):
            (root / sub / f"horse{k:03d}.jpg").write_bytes((src / sub / f"horse{k:03d}.jpg").read_bytes())
    cut = root / "rgb" / "horse002.jpg"
    cut.write_bytes(cut.read_bytes()[:3000])
    with pytest.raises(ValueError, match=r"sha256 mismatch for .*rgb/horse002\.jpg.*verify=False"):
        load_weizmann_horses(root, progress=False, cache_dir=tmp_path / "cache")
    rc, _, err = _cli(capsys, "train", "--dataset", "horse-small", "--data-home", root, "--max-passes", "1")
    assert rc == 2 and "horse002.jpg" in err and "--no-verify" in err
    # opted out: a file that cannot be decoded is still refused, naming it (not PIL's bare message)
    with pytest.raises(ValueError, match=r"photo .*horse002\.jpg cannot be read"):
        load_weizmann_horses(root, progress=False, verify=False, use_cache=False)


def test_damaged_joints_mat_is_refused_naming_it(tmp_path, capsys):
    src = _shared("lsp", "joints.mat")
    if src is None:
        pytest.skip("LSP joints.mat not found ($GAPLAB_DATA or ../shared/data/lsp)")
    bad = tmp_path / "joints.mat"
    bad.write_bytes(src.read_bytes()[:20000])  # cut
    rc, _, err = _cli(capsys, "train", "--dataset", "lsp-tiny", "--data-home", tmp_path, "--max-passes", "1")
    assert rc == 2 and str(bad) in err and "sha256" in err and "--no-verify" in err
    rc, _, err = _cli(capsys, "train", "--dataset", "lsp-tiny", "--data-home", tmp_path, "--max-passes", "1",
                      "--no-verify")
    assert rc == 2 and str(bad) in err and "not a readable MATLAB file" in err


# ----------------------------------------------------------------- 5. segmentation and pose data
def test_validated_segmentation_data_cannot_change_under_the_model():
    from gaplab.core.datasets.segmentation import SegmentationData, make_synthetic_segmentation
    from gaplab.core.models.graphcut import SegmentationModel
    good = make_synthetic_segmentation(2, grid=(2, 3), cell=2, d_u=3, d_p=2)
    kw = {f: getattr(good, f).copy() for f in ("sp_off", "edge_off", "edges", "xu", "xp", "gt", "area",
                                               "fg_area", "img_shape", "segments", "mask")}
    data = SegmentationData(**kw)
    model = SegmentationModel(data)
    for name, idx, val in (("gt", 0, 7), ("xu", (0, 0), np.nan), ("edges", (0, 1), 10 ** 6), ("area", 0, 0),
                           ("sp_off", 1, 10 ** 6)):
        with pytest.raises(ValueError, match="read-only"):
            getattr(data, name)[idx] = val
    kw["gt"][0], kw["xu"][0, 0] = 7, np.nan  # the caller's arrays were copied
    assert data.gt[0] in (0, 1) and np.isfinite(data.xu[0, 0])
    assert np.all(np.isin(model.arrays.gt, (0, 1))) and np.all(np.isfinite(model.arrays.xu))
    with pytest.raises(TypeError, match="gt must hold integers"):
        SegmentationData(**{**kw, "gt": good.gt.astype(np.float64) + 0.5})


def test_validated_pose_data_cannot_change_under_the_model():
    import dataclasses

    from gaplab.core.datasets.lsp import PoseData
    from gaplab.core.models.pose import PoseModel
    from gaplab.core.builtin_problems import _tiny_pose
    data = _tiny_pose().data
    model = PoseModel(data)
    before = model.arrays.bump_amp.copy()
    for name, idx, val in (("bump_amp", (0, 0, 0), np.nan), ("pos", (0, 0, 0), 10 ** 6), ("parent", 0, 5),
                           ("scale", 0, -1.0)):
        with pytest.raises(ValueError, match="read-only"):
            getattr(data, name)[idx] = val
    with pytest.raises(AttributeError, match="cannot be reassigned"):
        data.bump_amp = np.full_like(data.bump_amp, np.nan)
    np.testing.assert_array_equal(model.arrays.bump_amp, before)
    fields = {f.name: getattr(data, f.name) for f in dataclasses.fields(data)}
    for name, bad, msg in (("scale", np.full(data.n, np.nan), "scale"), ("bump_amp", data.bump_amp[:, :, :2], "bump_amp"),
                           ("bump_pos", np.full_like(data.bump_pos, np.inf), "finite"),
                           ("types", data.types + 5, "types"), ("parent", np.roll(data.parent, 1) * 0, "parent"),
                           ("img_id", data.img_id.astype(float), "img_id"),
                           ("occluded", np.where(np.arange(data.occluded.size).reshape(data.occluded.shape) == 3, 0.5,
                                                    data.occluded), r"occluded must hold bools \(or 0/1\), got 0\.5 at index \(0, 3\)")):
        with pytest.raises((ValueError, TypeError), match=msg):
            PoseData(**{**fields, name: bad})
    # 0/1 numbers (joints.mat stores floats) are flags
    again = PoseData(**{**fields, "occluded": data.occluded.astype(float)})
    np.testing.assert_array_equal(again.occluded, data.occluded)


# ----------------------------------------------------------------- 6. the estimator is for chains
def test_estimator_refuses_other_models_data_clearly():
    from gaplab.core.datasets.segmentation import make_synthetic_segmentation
    seg = make_synthetic_segmentation(2, grid=(2, 3), cell=2, d_u=3, d_p=2)
    with pytest.raises(TypeError, match="sequence \\(chain\\) problems.*SegmentationData"):
        SSVM(max_passes=2).fit(seg)


# ----------------------------------------------------------------- 1, 2. figures and sweep stores
def test_figure_write_failure_keeps_the_previous_file(tmp_path, monkeypatch):
    hv = pytest.importorskip("holoviews")
    from gaplab import plots
    out = tmp_path / "fig.svg"
    out.write_text("<svg>the previous figure</svg>")

    def broken_save(obj, filename, **kw):  # half a file, then the disk is full
        Path(filename).write_text("<svg>half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(hv, "save", broken_save)
    with pytest.raises(OSError):
        plots.save(hv.Curve([(0, 1), (1, 2)]), out)
    assert out.read_text() == "<svg>the previous figure</svg>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.svg"]


def _empty_sweep_store(path):
    from gaplab.core.sweep import Store, load_spec
    spec = load_spec({"name": "t14", "version": 1, "datasets": ["ocr-small[:4]"], "lams": [0.1], "seeds": [0],
                      "budget": {"max_passes": 2, "gap_check": 1},
                      "methods": {"bcfw": {"sampling": "uniform", "step": "fw"}}})
    return Store.open_for(path, spec), spec


def test_sweep_and_figure_outputs_are_checked_before_the_work(tmp_path, capsys):
    from gaplab.core.sweep import run_sweep
    store, spec = _empty_sweep_store(tmp_path / "store")
    rc, _, err = _cli(capsys, "figure", store.path, "--out", tmp_path)  # a directory
    assert rc == 2 and "--out" in err and str(tmp_path) in err
    rc, _, err = _cli(capsys, "figure", store.path, "--out", "/proc/gaplab_fig.png")
    assert rc == 2 and "--out" in err
    with pytest.raises(ValueError, match="--store '/proc/gaplab_sweep'"):
        run_sweep(spec, "/proc/gaplab_sweep", workers=0)


def test_tampered_sweep_store_is_refused_naming_the_file(tmp_path):
    from gaplab.core.sweep import Store, expand_runs
    store, spec = _empty_sweep_store(tmp_path / "store")
    cfg = expand_runs(spec)[0]
    store.record_done(cfg, {"rows": {"effective_passes": [1.0, 2.0], "exact_gap": [0.5, 0.25]},
                            "summary": {"status": "max_passes"}, "lam": 0.1}, 1, [])
    assert len(Store(store.path).read_run(cfg["run_id"])) == 2
    mp = store.path / "manifest.json"
    good = mp.read_text()
    for change, msg in ((lambda m: m.pop("runs"), "'runs'"),
                        (lambda m: m["runs"][cfg["run_id"]].pop("status"), "status"),
                        (lambda m: m["runs"][cfg["run_id"]].pop("config"), "config"),
                        (lambda m: m["runs"][cfg["run_id"]].__setitem__("file", None), "file")):
        m = json.loads(good)
        change(m)
        mp.write_text(json.dumps(m))
        with pytest.raises(ValueError, match=msg) as err:
            Store(store.path).runs()
        assert "manifest.json" in str(err.value)
    mp.write_text(good)
    f = store.path / "runs" / f"{cfg['run_id']}.parquet"
    f.write_bytes(f.read_bytes()[:40])  # a cut Parquet file
    with pytest.raises(ValueError, match=f"{cfg['run_id']}.*is not readable Parquet.*run the sweep again"):
        Store(store.path).traces()


# ----------------------------------------------------------------- 3. Ctrl-C in a sweep; resume with options
def test_ctrl_c_during_sweep_keeps_the_finished_runs_and_says_so(tmp_path, capsys, monkeypatch):
    from gaplab.core import sweep
    from gaplab.core.sweep import dask_runner
    spec = tmp_path / "s.toml"
    spec.write_text('name = "t14"\nversion = 1\ndatasets = ["ocr-small[:4]"]\nlams = [0.1]\nseeds = 3\n'
                    '[budgets.laptop]\nmax_passes = 2\ngap_check = 1\n'
                    '[methods.bcfw]\nsampling = "uniform"\nstep = "fw"\n')
    real, calls = sweep.execute_run, []

    def ctrl_c_on_the_second_run(cfg):
        calls.append(cfg["run_id"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(cfg)

    monkeypatch.setattr(dask_runner, "execute_run", ctrl_c_on_the_second_run)
    rc, _, err = _cli(capsys, "sweep", spec, "--store", tmp_path / "st", "--workers", "0", "--quiet")
    assert rc == 130 and "Traceback" not in err
    assert f"1 of 3 runs are done in {tmp_path / 'st'}" in err.strip().splitlines()[-1]
    assert sweep.Store(tmp_path / "st").is_done(calls[0])


def test_path_resume_keeps_the_loader_options(tmp_path, capsys, monkeypatch):
    """``gaplab path --dataset seg-tiny --option n=5``, Ctrl-C, ``--resume``: the resumed path is
    computed on the same problem (was: resumed with the default options and refused, n=6 != 5)."""
    from gaplab.cli import path as cli_path
    args = ["path", "--dataset", "seg-tiny", "--option", "n=5", "--eps", "0.3", "--lam-min", "0.5",
            "--no-test-error", "--quiet"]
    assert _cli(capsys, *args, "--store", tmp_path / "full")[0] == 0
    seen = []

    def ctrl_c_at_the_4th_point(self, point):
        seen.append(point.index)
        if len(seen) == 4:
            raise KeyboardInterrupt
        return False

    with monkeypatch.context() as m:
        m.setattr(cli_path._Printer, "__call__", ctrl_c_at_the_4th_point)
        rc, _, err = _cli(capsys, *args, "--store", tmp_path / "part", "--checkpoint-every", "2")
    assert rc == 130 and "--resume" in err
    # a path whose saved loader options were tampered with is refused naming the file and option
    import shutil
    shutil.copytree(tmp_path / "part", tmp_path / "tampered")
    mp = tmp_path / "tampered" / "manifest.json"
    man = json.loads(mp.read_text())
    assert man["meta"]["options"] == {"n": 5}
    man["meta"]["options"] = {"n": 5, "bogus": 1}
    mp.write_text(json.dumps(man))
    rc, _, err = _cli(capsys, "path", "--resume", tmp_path / "tampered", "--quiet")
    assert rc == 2 and "tampered" in err and "loader options" in err and "bogus" in err, err
    rc, _, err = _cli(capsys, "path", "--resume", tmp_path / "part", "--quiet")
    assert rc == 0, err
    full, part = RegPath.open(tmp_path / "full"), RegPath.open(tmp_path / "part")
    assert part.end_reason == full.end_reason and part.meta["options"] == {"n": 5}
    np.testing.assert_array_equal(part.lams, full.lams)


# ----------------------------------------------------------------- 9. path stores
def test_path_store_with_tampered_lams_raises_path_store_error(tmp_path, small):
    from gaplab.core.regpath import PathStoreError
    model, _ = small
    regularization_path(model, PathConfig(eps=0.5, lam_min=1.0), store=tmp_path / "s")
    mp = tmp_path / "s" / "manifest.json"
    good = json.loads(mp.read_text())
    expected = {"abc": "must be a number, got str 'abc'", -1.0: "must be a finite number > 0, got -1.0",
                None: "must be a number, got NoneType None", True: "must be a number, got bool True"}
    for bad, why in expected.items():
        m = json.loads(json.dumps(good))
        m["rows"][1]["lam"] = bad
        mp.write_text(json.dumps(m))
        with pytest.raises(PathStoreError, match=re.escape(f"breakpoint 1: λ {why}")):
            RegPath.open(tmp_path / "s")
