"""Loader of the released HorseSeg feature files (HDF5 + superpixel PNGs; Paper: App. I).

The test writes a tiny file in the authors' layout (gapBCFW's load_dataset_horseSeg.m reads it):
``features_%06d``, ``edge_structure_%06d``, ``labels_%06d``, ``superpixel_count_%06d``,
``image_name_%06d`` and ``%06d.png`` superpixel maps; small histograms (2 + 3 + 4 bins) keep it
tiny. Skipped without h5py (the optional extra ``gaplab[horseseg]``).
"""
from __future__ import annotations

import numpy as np
import pytest

h5py = pytest.importorskip("h5py", reason="h5py is not installed (optional extra gaplab[horseseg])")
skimage_io = pytest.importorskip("skimage.io")

from gaplab.core import Solver  # noqa: E402
from gaplab.core.datasets.horseseg import (horseseg_layout, horseseg_pairwise_features,  # noqa: E402
                                           load_horseseg, read_horseseg_h5)
from gaplab.core.datasets.segmentation import SegmentationData  # noqa: E402
from gaplab.core.models import SegmentationModel  # noqa: E402
from gaplab.core.problems import model_box  # noqa: E402

HIST = (2, 3, 4)
D_U = 1 + 3 * sum(HIST)


def _image(rng, H=6, W=8, gh=2, gw=4):
    """A grid of gh x gw superpixels (3 x 2 pixels each), random L2-normalised histograms."""
    seg = (np.arange(H)[:, None] // (H // gh)) * gw + np.arange(W)[None, :] // (W // gw)
    V = gh * gw
    X = [np.ones((V, 1))]
    for k in HIST:
        for _ in range(3):
            h = rng.random((V, k))
            X.append(h / np.linalg.norm(h, axis=1, keepdims=True))
    X = np.concatenate(X, axis=1)
    edges = [(r * gw + c, r * gw + c + 1) for r in range(gh) for c in range(gw - 1)]
    edges += [(r * gw + c, (r + 1) * gw + c) for r in range(gh - 1) for c in range(gw)]
    labels = (np.arange(V) % gw >= gw // 2).astype(np.uint8)
    return seg.astype(np.uint16), X, np.array(edges), labels


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("horseseg")
    rng = np.random.default_rng(0)
    written = {}
    for part, fname, spdir, n in (("train", "horse-features.bin", "horse-superpixels", 4),
                                  ("test", "horse-features-test.bin", "horse-superpixels-test", 2)):
        (root / "data" / spdir).mkdir(parents=True)
        imgs = []
        with h5py.File(root / "data" / fname, "w") as f:
            for k in range(n):
                seg, X, e, lab = _image(rng)
                key = f"{k:06d}"
                # as MATLAB's h5read sees it transposed: features d_u x V, edges 2 x E
                f[f"features_{key}"] = X.astype(np.float32) if k % 2 == 0 else X.T.astype(np.float32)
                f[f"edge_structure_{key}"] = e.astype(np.int32) if k % 2 == 0 else e.T.astype(np.int32)
                f[f"labels_{key}"] = lab
                f[f"superpixel_count_{key}"] = np.array([lab.size], dtype=np.int32)
                f[f"edge_count_{key}"] = np.array([len(e)], dtype=np.int32)
                f[f"image_name_{key}"] = np.array([f"imga_2008_{k:06d}.jpg".encode()])
                skimage_io.imsave(str(root / "data" / spdir / f"{key}.png"), seg, check_contrast=False)
                imgs.append((seg, X, e, lab))
        written[part] = imgs
    return root, written


def _chi2_reference(a, b):
    """The authors' χ² (pdist2 'chisq') on squared histogram entries, one pair at a time."""
    a, b = a ** 2, b ** 2
    return sum((x - y) ** 2 / (x + y + np.finfo(float).eps) for x, y in zip(a, b)) / 2


def test_reads_the_authors_layout_into_segmentation_data(files):
    root, written = files
    train, test = load_horseseg(root, size="small", n_train=4, n_test=2, hist_sizes=HIST, progress=False)
    assert isinstance(train, SegmentationData) and (train.n, test.n) == (4, 2)
    assert train.name == "horseseg-small/train" and test.image_names == ("imga_2008_000000", "imga_2008_000001")
    data = read_horseseg_h5(root / "data/horse-features.bin", root / "data/horse-superpixels", hist_sizes=HIST)
    assert (data.n, data.d_u, data.d_p) == (4, D_U, 1 + 9 * 11)
    np.testing.assert_array_equal(data.xp, train.xp)
    assert data.image_names[1] == "imga_2008_000001"
    for i, (seg, X, e, lab) in enumerate(written["train"]):
        a, b = data.sp_off[i], data.sp_off[i + 1]
        np.testing.assert_array_equal(data.segment_map(i), seg)
        np.testing.assert_array_equal(data.gt[a:b], lab)
        np.testing.assert_array_equal(data.area[a:b], np.bincount(seg.ravel()))
        np.testing.assert_allclose(data.xu[a:b], X.astype(np.float32))  # both orientations
        np.testing.assert_array_equal(data.mask_map(i), lab[seg] == 1)
        e0, e1 = data.edge_off[i], data.edge_off[i + 1]
        assert {tuple(p) for p in data.edges[e0:e1]} == {tuple(sorted(p)) for p in e}
        for r, (p, q) in enumerate(data.edges[e0:e1]):  # pairwise features against the formula
            assert data.xp[e0 + r, 0] == 1.0
            j = 1
            for h, k in enumerate([k for k in HIST for _ in range(3)]):
                chi = _chi2_reference(X[p, j:j + k], X[q, j:j + k])
                np.testing.assert_allclose(data.xp[e0 + r, 1 + 11 * h:1 + 11 * (h + 1)],
                                           np.exp(-chi * 2.0 ** np.arange(-5, 6)), rtol=1e-5)
                j += k
    lay = horseseg_layout(HIST)
    assert lay["unary/neighbours2/texture"] == (D_U - 4, D_U) and lay["pairwise/neighbours2/texture"][1] == D_U + 100


def test_the_solver_runs_on_it(files):
    root, _ = files
    data = read_horseseg_h5(root / "data/horse-features.bin", root / "data/horse-superpixels", hist_sizes=HIST)
    model = SegmentationModel(data)
    s = Solver(model, lam=0.1, step="pairwise", sampling="gap", max_passes=30, **model_box(model))
    res = s.run()
    assert np.isfinite(res.exact_gap) and res.exact_gap >= -1e-9
    assert np.all(res.w[model.d_u:] >= 0)  # the box of App. H
    assert res.primal < model_primal_at_zero(model, 0.1)


def model_primal_at_zero(model, lam):
    """Primal objective at w = 0: the mean of max_y L_i(y) = 1 per image with both classes."""
    return float(np.mean([model.loss(i, model.max_oracle(i, np.zeros(model.d))) for i in range(model.n)]))


def test_pairwise_features_bad_shape():
    with pytest.raises(ValueError, match=r"xu must have shape \(V, 1969\)"):
        horseseg_pairwise_features(np.zeros((3, 10)), np.array([[0, 1]]))


def test_bad_files_give_clear_errors(files, tmp_path):
    root, _ = files
    with pytest.raises(FileNotFoundError, match="horse-features.bin"):
        load_horseseg(tmp_path, progress=False)
    with pytest.raises(ValueError, match="size must be one of"):
        load_horseseg(root, size="huge")
    with pytest.raises(ValueError, match=r"n_train must be an int in \[1, 147\]"):
        load_horseseg(root, n_train=0)
    with pytest.raises(FileNotFoundError, match="000000.png"):
        read_horseseg_h5(root / "data/horse-features.bin", tmp_path, hist_sizes=HIST)
    with pytest.raises(ValueError, match=r"features_000000 must have shape \(V, d_u\) = \(8, 1969\)"):
        read_horseseg_h5(root / "data/horse-features.bin", root / "data/horse-superpixels", [0])
    bad = tmp_path / "bad.bin"
    with h5py.File(bad, "w") as f:
        f["features_000000"] = np.zeros((8, D_U), np.float32)
        f["edge_structure_000000"] = np.array([[0, 8]])
        f["labels_000000"] = np.zeros(8, np.uint8)
        f["features_000001"] = np.zeros((8, D_U), np.float32)
        f["edge_structure_000001"] = np.array([[0, 1]])
        f["labels_000001"] = np.full(8, 2, np.uint8)
        f["features_000002"] = np.zeros((8, D_U), np.float32)
    spd = root / "data/horse-superpixels"
    with pytest.raises(ValueError, match="edge_structure_000000 must join two different 0-based superpixels < 8"):
        read_horseseg_h5(bad, spd, [0], hist_sizes=HIST)
    with pytest.raises(ValueError, match="labels_000001 must be 0"):
        read_horseseg_h5(bad, spd, [1], hist_sizes=HIST)
    with pytest.raises(ValueError, match="image 000002 has no dataset"):
        read_horseseg_h5(bad, spd, [2], hist_sizes=HIST)
