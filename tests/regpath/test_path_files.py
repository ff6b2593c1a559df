"""Saved paths lose nothing: a failed save keeps the previous file, a tampered path file or path
store is refused with one error type naming the file, and a path checkpointed every k breakpoints
resumes to the same end as an uninterrupted one (Paper: Alg. 7)."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from gaplab.core import ChainModel, load_ocr
from gaplab.core.regpath import PathConfig, RegPath, regularization_path


@pytest.fixture(scope="module")
def small():
    """A chain model on the first 40 OCR-small words, and the test set."""
    train, test = load_ocr("small")
    return ChainModel(train.subset(np.arange(40))), test


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
