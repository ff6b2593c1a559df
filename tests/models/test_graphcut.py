"""Binary segmentation: graph-cut oracle, statistics primitives, horse loader and features.

Paper: App. I (HorseSeg model, class-balanced Hamming loss, graph cut), App. H (box constraints).
"""
from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest

from gaplab.core.datasets import horse
from gaplab.core.datasets.horse import (HORSE_SMALL_TRAIN, HorseFeatureParams, find_image_pairs,
                                        load_weizmann_horses)
from gaplab.core.datasets.segmentation import SegmentationData, make_synthetic_segmentation
from gaplab.core.models.graphcut import (SegmentationModel, graph_cut, seg_axpy, seg_gt_label,
                                         seg_label_add, seg_label_dot, seg_label_loss,
                                         seg_sqnorm)
from gaplab.core.models.protocol import check_model

skimage_io = pytest.importorskip("skimage.io")


# --------------------------------------------------------------------------- helpers
def random_graph_data(rng, n_images=3, vmax=12, d_u=4, d_p=3, p_edge=0.4):
    """Images whose superpixels form random graphs (not grids), with random features, areas and
    ground truth; pixel maps are one row per image (superpixel p covers area[p] pixels)."""
    sp, ed, edges, xu, xp, gt, area, shapes, segs = [0], [0], [], [], [], [], [], [], []
    for _ in range(n_images):
        V = int(rng.integers(2, vmax + 1))
        pairs = [(p, q) for p in range(V) for q in range(p + 1, V) if rng.random() < p_edge]
        e = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        a = rng.integers(1, 6, size=V)
        g = rng.integers(0, 2, size=V)
        sp.append(sp[-1] + V)
        ed.append(ed[-1] + len(e))
        edges.append(e)
        xu.append(rng.standard_normal((V, d_u)))
        xp.append(rng.random((len(e), d_p)))
        gt.append(g)
        area.append(a)
        shapes.append((1, int(a.sum())))
        segs.append(np.repeat(np.arange(V), a))
    gt, area = np.concatenate(gt), np.concatenate(area)
    return SegmentationData(
        sp_off=np.array(sp), edge_off=np.array(ed), edges=np.concatenate(edges).reshape(-1, 2),
        xu=np.concatenate(xu).astype(np.float32), xp=np.concatenate(xp).reshape(-1, d_p).astype(np.float32),
        gt=gt, area=area, fg_area=gt * area, img_shape=np.array(shapes),
        segments=np.concatenate(segs).astype(np.int32),
        mask=np.repeat(gt, area).astype(bool), name="random-graphs")


def random_w(rng, model, scale=1.0):
    w = scale * rng.standard_normal(model.d)
    w[model.d_u:] = np.abs(w[model.d_u:])
    return w


def all_labellings(V):
    return np.array(list(itertools.product([0, 1], repeat=V)), dtype=np.int64)


def dense_B(model, i):
    """B_i with ψ(x_i, y) = B_i m(y), columns built from the features (nodes, then edges)."""
    M = model.arrays
    a, b = M.lab_off[i], M.lab_off[i + 1]
    e0, e1 = M.edge_off[i], M.edge_off[i + 1]
    V, E = b - a, e1 - e0
    B = np.zeros((model.d, V + E))
    B[:model.d_u, :V] = M.xu[a:b].astype(np.float64).T
    B[model.d_u:, V:] = -M.xp[e0:e1].astype(np.float64).T
    return B


# --------------------------------------------------------------------------- graph cut
@pytest.mark.parametrize("seed", range(6))
def test_model_meets_its_dense_definition(seed):
    """check_model on random graphs (up to 12 superpixels, every labelling enumerated): the
    statistics, the graph-cut max oracle and decoding agree with joint_feature and loss."""
    rng = np.random.default_rng(seed)
    model = SegmentationModel(random_graph_data(rng, n_images=4))
    check_model(model, blocks=4, labellings=10, enumerate_up_to=4096, seed=seed)


def test_graph_cut_alone_equals_enumeration():
    rng = np.random.default_rng(7)
    for _ in range(20):
        V = int(rng.integers(1, 11))
        pairs = np.array([(p, q) for p in range(V) for q in range(p + 1, V) if rng.random() < 0.5],
                         dtype=np.int64).reshape(-1, 2)
        unary = rng.standard_normal(V)
        pair = rng.random(len(pairs)) * 2
        Y = all_labellings(V)
        vals = (2 * Y - 1) @ unary - (Y[:, pairs[:, 0]] != Y[:, pairs[:, 1]]) @ pair
        y = graph_cut(unary, pairs[:, 0], pairs[:, 1], pair)
        got = (2 * y - 1) @ unary - (y[pairs[:, 0]] != y[pairs[:, 1]]) @ pair
        assert got == pytest.approx(vals.max(), abs=1e-9)


def test_oracle_refuses_negative_pairwise_weight():
    model = SegmentationModel(make_synthetic_segmentation(2))
    w = np.zeros(model.d)
    w[model.d_u + 1] = -1e-3
    with pytest.raises(ValueError, match=r"w_P\[1\].*negative"):
        model.max_oracle(0, w)
    with pytest.raises(ValueError, match="negative"):
        model.decode(0, w)
    with pytest.raises(ValueError, match="shape"):
        model.max_oracle(0, np.zeros(model.d + 1))
    with pytest.raises(ValueError, match="negative"):
        graph_cut(np.zeros(3), np.array([0, 1]), np.array([1, 2]), np.array([1.0, -0.5]))


# --------------------------------------------------------------------------- primitives
def test_statistics_are_linear_in_m():
    rng = np.random.default_rng(3)
    model = SegmentationModel(random_graph_data(rng, n_images=3))
    M = model.arrays
    for i in range(model.n):
        B = dense_B(model, i)
        V = model.label_len(i)
        for _ in range(5):
            y = rng.integers(0, 2, V)
            m = model.statistics(i, y)
            np.testing.assert_allclose(B @ m, model.joint_feature(i, y), atol=1e-12)
            vec = rng.standard_normal(m.size)
            assert seg_label_dot(M, i, y, vec) == pytest.approx(m @ vec)
            acc = vec.copy()
            seg_label_add(M, i, y, 0.7, acc)
            np.testing.assert_allclose(acc, vec + 0.7 * m)
        g = np.empty(V, dtype=np.int64)
        seg_gt_label(M, i, g)
        np.testing.assert_array_equal(g, model.ground_truth(i))
        assert seg_label_loss(M, i, g) == 0.0
        both = 0 < g.sum() < V
        assert seg_label_loss(M, i, 1 - g) == pytest.approx(1.0 if both else 0.5)


def test_loss_is_the_class_balanced_area_loss():
    rng = np.random.default_rng(5)
    data = random_graph_data(rng, n_images=5)
    model = SegmentationModel(data)
    for i in range(model.n):
        a = data.area[data.sp_off[i]:data.sp_off[i + 1]]
        g = model.ground_truth(i)
        y = rng.integers(0, 2, g.size)
        A1, A0 = a[g == 1].sum(), a[g == 0].sum()
        missed = a[(g == 1) & (y == 0)].sum() / A1 if A1 else 0.0
        false = a[(g == 0) & (y == 1)].sum() / A0 if A0 else 0.0
        assert model.loss(i, y) == pytest.approx((missed + false) / 2)


def test_loss_per_superpixel_sums_to_the_loss():
    """The per-superpixel contributions the app's loss heat map draws: ω_p [y_p ≠ g_p] with
    ω_p = a_p / (2 A_{g_p}), summing to loss(i, y) for random labellings (random areas)."""
    rng = np.random.default_rng(11)
    data = random_graph_data(rng, n_images=6)
    model = SegmentationModel(data)
    for i in range(model.n):
        a = data.area[data.sp_off[i]:data.sp_off[i + 1]].astype(float)
        g = model.ground_truth(i)
        for _ in range(10):
            y = rng.integers(0, 2, g.size)
            per = model.loss_per_superpixel(i, y)
            assert per.shape == (g.size,) and per.dtype == np.float64
            assert per.sum() == pytest.approx(model.loss(i, y), abs=1e-12)
            assert np.all(per[y == g] == 0.0)
            wrong = y != g
            Ag = np.array([a[g == c].sum() for c in (0, 1)])[g]
            np.testing.assert_allclose(per[wrong], a[wrong] / (2 * Ag[wrong]))
            info = model.describe_block(i, y)
            np.testing.assert_array_equal(info["loss_per_superpixel"], per)
            assert np.all(info["loss_weight"] >= per)
    with pytest.raises(ValueError, match="shape"):
        model.loss_per_superpixel(0, np.zeros(model.label_len(0) + 1, dtype=np.int64))


def test_sqnorm_matches_dense():
    rng = np.random.default_rng(4)
    model = SegmentationModel(random_graph_data(rng, n_images=3))
    M = model.arrays
    zbuf = np.zeros(model.d)
    for i in range(model.n):
        B = dense_B(model, i)
        V = model.label_len(i)
        p = int(model.stat_sizes[i])
        y1, y2 = rng.integers(0, 2, V), rng.integers(0, 2, V)
        directions = [model.statistics(i, y1) - model.statistics(i, y2), rng.standard_normal(p),
                      np.zeros(p)]
        sparse = np.zeros(p)
        sparse[rng.integers(0, p)] = 1.5
        directions.append(sparse)
        for dlt in directions:
            assert seg_sqnorm(M, i, dlt, zbuf) == pytest.approx(np.sum((B @ dlt) ** 2), rel=1e-12, abs=1e-12)
            assert not zbuf.any()  # left zero


def test_axpy_matches_dense_and_clips():
    rng = np.random.default_rng(6)
    model = SegmentationModel(random_graph_data(rng, n_images=3))
    M = model.arrays
    lb, ub = model.bounds()
    assert np.all(lb[model.d_u:] == 0) and np.all(np.isneginf(lb[:model.d_u])) and np.all(np.isposinf(ub))
    for i in range(model.n):
        B = dense_B(model, i)
        p = int(model.stat_sizes[i])
        V = model.label_len(i)
        dlt = model.statistics(i, rng.integers(0, 2, V)) - model.statistics(i, rng.integers(0, 2, V))
        dlt[V:] += rng.random(p - V)  # make sure the pairwise part moves
        v0 = rng.standard_normal(model.d)
        v0[model.d_u] = -100.0  # stays negative: the box must clip it
        # without a box: v moves, w is not written
        v, w = v0.copy(), np.full(model.d, 7.0)
        seg_axpy(M, i, -0.8, dlt, v, w, lb, ub, False)
        np.testing.assert_allclose(v, v0 - 0.8 * B @ dlt, atol=1e-12)
        assert np.all(w == 7.0)
        # with the box: w = clip(v) on the touched coordinates (all of w_U, all of w_P here)
        v, w = v0.copy(), np.full(model.d, 7.0)
        seg_axpy(M, i, -0.8, dlt, v, w, lb, ub, True)
        if p > V:  # an image with edges: all of w_U and w_P touched
            np.testing.assert_allclose(w, np.clip(v, lb, ub))
            assert v[model.d_u] < 0 and np.all(w[model.d_u:] >= 0)
        else:  # no edge: w_P untouched
            np.testing.assert_allclose(w[:model.d_u], v[:model.d_u])
            assert np.all(w[model.d_u:] == 7.0)
        # only the superpixel part moves: w_P is not touched
        dn = dlt.copy()
        dn[V:] = 0.0
        v, w = v0.copy(), np.full(model.d, 7.0)
        seg_axpy(M, i, 2.0, dn, v, w, lb, ub, True)
        assert np.all(w[model.d_u:] == 7.0) and np.all(v[model.d_u:] == v0[model.d_u:])
        np.testing.assert_allclose(w[:model.d_u], v[:model.d_u])


def test_model_protocol_and_describe_block():
    model = SegmentationModel(make_synthetic_segmentation(3, grid=(3, 4), cell=4))
    check_model(model)
    assert model.oracle_tier == "python" and model.n_labels(0) == 2
    y = model.ground_truth(1)
    info = model.describe_block(1, y)
    assert info["kind"] == "mask" and info["superpixels"].shape == (12, 16)
    np.testing.assert_array_equal(info["mask"], info["truth"])  # grid cells: GT is exact
    assert info["loss_per_superpixel"].sum() == 0.0
    y2 = 1 - y
    assert model.describe_block(1, y2)["loss_per_superpixel"].sum() == pytest.approx(model.loss(1, y2))
    with pytest.raises(ValueError, match="shape"):
        model.describe_block(1, y[:-1])


def test_learnable_synthetic_unary_weight_predicts_well():
    """With w_U weighting the informative feature, decoding recovers most of the foreground and
    a Potts weight smooths it (the model can express the task)."""
    data = make_synthetic_segmentation(8, grid=(5, 6), noise=0.3, seed=2)
    model = SegmentationModel(data)
    w = np.zeros(model.d)
    w[0], w[1] = -0.5, 1.0  # s_p (x_p1 − 0.5): foreground iff the noisy indicator > 0.5
    ev = model.evaluate(w)
    assert ev["pixel_accuracy"] > 0.85
    w[model.d_u] = 0.05
    assert model.evaluate(w)["pixel_accuracy"] > 0.85


# --------------------------------------------------------------------------- data container
def test_container_rejects_mismatched_shapes():
    good = make_synthetic_segmentation(2)
    kw = {f: getattr(good, f) for f in ("sp_off", "edge_off", "edges", "xu", "xp", "gt", "area",
                                         "fg_area", "img_shape", "segments", "mask")}
    for field, bad, msg in [
        ("xu", good.xu[:-1], "xu .*unary"), ("xp", good.xp[:-2], "xp .*pairwise"),
        ("edges", good.edges[:, :1], "edges"), ("gt", good.gt[:-1], "gt"),
        ("xp", -good.xp, ">= 0"), ("xu", np.full_like(good.xu, np.nan), "NaN"),
        ("segments", good.segments[:-1], "segments"),
    ]:
        with pytest.raises(ValueError, match=msg):
            SegmentationData(**dict(kw, **{field: bad}))
    e = good.edges.copy()
    e[0] = e[1]
    with pytest.raises(ValueError, match="duplicated"):
        SegmentationData(**dict(kw, edges=e))
    model = SegmentationModel(good)
    other = make_synthetic_segmentation(2, d_u=6)
    with pytest.raises(ValueError, match="d_u"):
        model.predict(np.zeros(model.d), other)


# --------------------------------------------------------------------------- horse loader
TINY = HorseFeatureParams(n_segments=12, compactness=10.0, n_colour_words=6, n_texture_words=10,
                          daisy_step=3, daisy_radius=4, daisy_rings=1, daisy_histograms=4,
                          daisy_orientations=4, samples_per_image=150, seed=0)


def _write_images(root, n=6, seed=0):
    """n photos 48x72 (a brown ellipse on a textured background) with masks at half size."""
    rng = np.random.default_rng(seed)
    (root / "rgb").mkdir(parents=True)
    (root / "figure_ground").mkdir()
    H, W = 48, 72
    yy, xx = np.mgrid[0:H, 0:W]
    for k in range(1, n + 1):
        cy, cx = rng.uniform(15, 33), rng.uniform(20, 52)
        ry, rx = rng.uniform(8, 14), rng.uniform(12, 20)
        fg = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
        img = np.empty((H, W, 3))
        img[...] = (60, 140, 60) + 40 * np.sin(xx / 3.0)[..., None]
        img[fg] = (120, 80, 40)
        img += rng.normal(0, 8, img.shape)
        skimage_io.imsave(root / "rgb" / f"horse{k:03d}.png", np.clip(img, 0, 255).astype(np.uint8),
                          check_contrast=False)
        mask = (fg[::2, ::2] * 255).astype(np.uint8)
        skimage_io.imsave(root / "figure_ground" / f"horse{k:03d}.png", mask, check_contrast=False)
    return root


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = _write_images(tmp_path_factory.mktemp("horses") / "weizmann_horse")
    cache = tmp_path_factory.mktemp("cache")
    train, test = load_weizmann_horses(root.parent, params=TINY, cache_dir=cache, verify=False, progress=False)
    return root, cache, train, test


def test_tiny_split_sizes_and_shapes(tiny):
    _, _, train, test = tiny
    assert (train.n, test.n) == (3, 3)  # round(147 / 328 * 6) = 3
    assert set(train.image_names) | set(test.image_names) == {f"horse{k:03d}" for k in range(1, 7)}
    for d in (train, test):
        assert d.xu.dtype == np.float32 and d.xp.dtype == np.float32
        assert d.xu.shape[1] == TINY.d_u == 1 + 3 * (16 + 6 + 10)
        assert d.xp.shape[1] == TINY.d_p == 100
        assert np.all(d.img_shape == (24, 36))  # photos resized to their masks


def test_superpixel_areas_and_truth_sum_to_the_masks(tiny):
    _, _, train, test = tiny
    for d in (train, test):
        for i in range(d.n):
            a, b = d.sp_off[i], d.sp_off[i + 1]
            seg, mask = d.segment_map(i), d.mask_map(i)
            assert d.area[a:b].sum() == seg.size
            assert d.fg_area[a:b].sum() == mask.sum()
            np.testing.assert_array_equal(np.bincount(seg.ravel(), minlength=b - a), d.area[a:b])
            np.testing.assert_array_equal(d.gt[a:b], 2 * d.fg_area[a:b] > d.area[a:b])
            # every edge joins superpixels with 4-adjacent pixels
            e = d.edges[d.edge_off[i]:d.edge_off[i + 1]]
            adj = set(zip(seg[:, :-1].ravel(), seg[:, 1:].ravel())) | set(zip(seg[:-1].ravel(), seg[1:].ravel()))
            adj = {(min(p, q), max(p, q)) for p, q in adj if p != q}
            assert adj == set(map(tuple, e.tolist()))


def test_features_finite_and_normalised(tiny):
    _, _, train, test = tiny
    lay = TINY.layout()
    for d in (train, test):
        assert np.all(np.isfinite(d.xu)) and np.all(np.isfinite(d.xp))
        assert np.all(d.xu[:, 0] == 1) and np.all(d.xp[:, 0] == 1)
        for name, (s, e) in lay.items():
            if name.startswith("unary/") and name != "unary/constant":
                np.testing.assert_allclose(d.xu[:, s:e].sum(axis=1), 1.0, rtol=1e-5)
        assert d.xp.min() >= 0 and d.xp.max() <= 1


def _reference_features(counts, prm):
    """Histograms and χ² features with dense numpy algebra (neighbourhoods as 0/1 matrices)."""
    sp_off, edge_off, edges = counts["sp_off"], counts["edge_off"], counts["edges"]
    V, E = int(sp_off[-1]), int(edge_off[-1])
    xu, xp = np.ones((V, prm.d_u)), np.ones((E, prm.d_p))
    etas = np.asarray(prm.etas)
    full = []
    for key, k in zip(("loc", "col", "tex"), prm.hist_sizes):
        C = np.zeros((V, k))
        np.add.at(C, (counts[f"{key}_row"], counts[f"{key}_col"]), counts[f"{key}_cnt"])
        full.append(C)
    for i in range(sp_off.size - 1):
        a, b, e0, e1 = sp_off[i], sp_off[i + 1], edge_off[i], edge_off[i + 1]
        ed = edges[e0:e1]
        N1 = np.eye(b - a)
        N1[ed[:, 0], ed[:, 1]] = N1[ed[:, 1], ed[:, 0]] = 1
        N2 = (N1 @ N1 > 0).astype(float)
        j, jp = 1, 1
        for N in (np.eye(b - a), N1, N2):
            for C in full:
                Hh = N @ C[a:b]
                Hh /= Hh.sum(axis=1, keepdims=True)
                xu[a:b, j:j + Hh.shape[1]] = Hh
                j += Hh.shape[1]
                A, Bq = Hh[ed[:, 0]], Hh[ed[:, 1]]
                sm, df = A + Bq, (A - Bq) ** 2
                chi = 0.5 * np.sum(np.divide(df, sm, out=np.zeros_like(df), where=sm > 0), axis=1)
                xp[e0:e1, jp:jp + etas.size] = np.exp(-chi[:, None] * etas[None, :])
                jp += etas.size
    return xu, xp


def test_features_match_a_dense_reference(tiny):
    _, cache, train, _ = tiny
    (path,) = cache.glob("weizmann_horse-*.npz")
    with np.load(path, allow_pickle=False) as z:
        counts = {k: z[k] for k in z.files}
    sub = horse._subset_counts(counts, train.extras["image_index"])
    xu, xp = _reference_features(sub, TINY)
    np.testing.assert_allclose(train.xu, xu, atol=1e-6)
    np.testing.assert_allclose(train.xp, xp, atol=1e-6)


def test_cache_is_reused(tiny, monkeypatch):
    root, cache, train, _ = tiny
    assert len(list(cache.glob("weizmann_horse-*.npz"))) == 1

    def boom(*a, **k):
        raise AssertionError("features recomputed instead of read from the cache")
    monkeypatch.setattr(horse, "extract_superpixel_counts", boom)
    tr2, _ = load_weizmann_horses(root, params=TINY, cache_dir=cache, verify=False, progress=False)
    np.testing.assert_array_equal(tr2.xu, train.xu)
    np.testing.assert_array_equal(tr2.segments, train.segments)
    # other parameters are another cache entry: computed, not read
    with pytest.raises(AssertionError, match="recomputed"):
        load_weizmann_horses(root, params=HorseFeatureParams(**{**TINY.__dict__, "n_colour_words": 5}),
                             cache_dir=cache, verify=False, progress=False)


def test_first_load_tells_each_image_done_and_a_cached_load_computes_none(tiny, tmp_path):
    """A callable ``progress`` hears every image of both passes of a first load (what the app's
    status line shows as "images done / total"), in order; a load from the cache reads it
    instead (no image counted)."""
    root, cache, train, _ = tiny
    heard = []
    tr, _ = load_weizmann_horses(root, params=TINY, cache_dir=tmp_path, verify=False,
                                 progress=lambda *a: heard.append(a))
    for stage in ("superpixels", "word histograms"):
        assert [d for s, d, t in heard if s == stage] == list(range(7)), heard
        assert {t for s, d, t in heard if s == stage} == {6}
    stages = list(dict.fromkeys(s for s, _, _ in heard))
    assert stages == ["checking the image files", "superpixels", "vocabularies", "word histograms",
                      "features"], stages
    np.testing.assert_array_equal(tr.xu, train.xu)
    heard.clear()
    load_weizmann_horses(root, params=TINY, cache_dir=tmp_path, verify=False, progress=lambda *a: heard.append(a))
    assert [s for s, _, _ in heard] == ["checking the image files", "reading the cached superpixels", "features"]


def test_broken_cache_file_is_recomputed(tiny, tmp_path):
    root, cache, train, _ = tiny
    (path,) = cache.glob("weizmann_horse-*.npz")
    cdir = tmp_path / "c"
    cdir.mkdir()
    (cdir / path.name).write_bytes(b"not a zip file")
    tr2, _ = load_weizmann_horses(root, params=TINY, cache_dir=cdir, verify=False, progress=False)
    np.testing.assert_array_equal(tr2.xu, train.xu)
    with np.load(cdir / path.name) as z:  # rewritten
        assert "segments" in z.files


def test_failed_cache_write_leaves_no_partial_file(tiny, tmp_path, monkeypatch):
    """Disk full (or Ctrl-C) while the feature cache is written: the load fails, and neither a
    cut cache file nor a temporary file is left in the cache directory (on
    main the temporary .tmpPID.npz stayed)."""
    root, _, _, _ = tiny

    def disk_full(file, **arrays):  # half an archive, then no space left
        if hasattr(file, "write"):
            file.write(b"PK\x03\x04 half an archive")
        else:
            Path(str(file)).write_bytes(b"PK\x03\x04 half an archive")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", disk_full)
    cdir = tmp_path / "c"
    with pytest.raises(OSError, match="No space"):
        load_weizmann_horses(root, params=TINY, cache_dir=cdir, verify=False, progress=False)
    assert sorted(p.name for p in cdir.iterdir()) == []


def test_vocabulary_never_sees_a_test_image(tiny, tmp_path):
    root, _, train, test = tiny
    copy = tmp_path / "weizmann_horse"
    shutil.copytree(root, copy)
    rng = np.random.default_rng(1)
    noise = lambda: rng.integers(0, 256, (48, 72, 3)).astype(np.uint8)  # noqa: E731
    skimage_io.imsave(copy / "rgb" / f"{test.image_names[0]}.png", noise(), check_contrast=False)
    tr2, te2 = load_weizmann_horses(copy, params=TINY, use_cache=False, verify=False, progress=False)
    np.testing.assert_array_equal(tr2.extras["colour_vocab"], train.extras["colour_vocab"])
    np.testing.assert_array_equal(tr2.extras["texture_vocab"], train.extras["texture_vocab"])
    np.testing.assert_array_equal(tr2.xu, train.xu)
    a, b = te2.xu[: te2.sp_off[1]], test.xu[: test.sp_off[1]]
    assert a.shape != b.shape or not np.array_equal(a, b)  # the altered test image did change
    assert tr2.extras["sha256"] != train.extras["sha256"]
    # the check can fail: a changed training image changes the vocabulary
    skimage_io.imsave(copy / "rgb" / f"{train.image_names[0]}.png", noise(), check_contrast=False)
    tr3, _ = load_weizmann_horses(copy, params=TINY, use_cache=False, verify=False, progress=False)
    assert not np.array_equal(tr3.extras["colour_vocab"], train.extras["colour_vocab"])


def test_model_on_tiny_horses(tiny):
    _, _, train, test = tiny
    model = SegmentationModel(train)
    check_model(model)
    rng = np.random.default_rng(0)
    w = random_w(rng, model, 0.1)
    for i in range(model.n):
        y = model.max_oracle(i, w)
        best = model.loss(i, y) + model.joint_feature(i, y) @ w
        for _ in range(20):  # no random labelling beats the oracle
            z = rng.integers(0, 2, model.label_len(i))
            assert model.loss(i, z) + model.joint_feature(i, z) @ w <= best + 1e-9
        info = model.describe_block(i, y)
        assert info["photo"].shape == info["mask"].shape + (3,) and info["photo"].dtype == np.uint8
    ev = model.evaluate(w, test)
    assert 0 <= ev["pixel_accuracy"] <= 1 and 0 <= ev["iou"] <= 1


def test_loader_bad_input(tmp_path, tiny):
    root, _, _, _ = tiny
    # not found: the message lists where it looked
    with pytest.raises(FileNotFoundError, match="not found.*rgb"):
        load_weizmann_horses(tmp_path / "nowhere", params=TINY, verify=False, progress=False)
    # missing masks
    bad = tmp_path / "missing" / "weizmann_horse"
    shutil.copytree(root, bad)
    (bad / "figure_ground" / "horse002.png").unlink()
    (bad / "figure_ground" / "horse005.png").unlink()
    with pytest.raises(ValueError, match="2 photo.*no mask.*horse002, horse005"):
        load_weizmann_horses(bad, params=TINY, use_cache=False, verify=False, progress=False)
    with pytest.raises(ValueError, match="no mask"):
        find_image_pairs(bad)
    # a mask of a different size (not the photo scaled by one factor)
    bad2 = tmp_path / "size" / "weizmann_horse"
    shutil.copytree(root, bad2)
    skimage_io.imsave(bad2 / "figure_ground" / "horse003.png", np.zeros((24, 24), np.uint8), check_contrast=False)
    with pytest.raises(ValueError, match="horse003.*mask is 24x24"):
        load_weizmann_horses(bad2, params=TINY, use_cache=False, verify=False, progress=False)
    # checksum: the synthetic PNGs are not files of the database (verify=True is the default)
    with pytest.raises(ValueError, match="horse001.png is not a file of the Weizmann Horse Database"):
        load_weizmann_horses(root, params=TINY, progress=False)
    with pytest.raises(ValueError, match="n_train"):
        load_weizmann_horses(root, params=TINY, n_train=6, verify=False, progress=False)
    with pytest.raises(ValueError, match="n_colour_words"):
        HorseFeatureParams(n_colour_words=0)


def test_horse_small_split_is_the_seeded_rule():
    assert len(HORSE_SMALL_TRAIN) == 147 and len(set(HORSE_SMALL_TRAIN)) == 147
    assert min(HORSE_SMALL_TRAIN) >= 1 and max(HORSE_SMALL_TRAIN) <= 328
    stems = [f"horse{k:03d}" for k in range(1, 329)]
    np.testing.assert_array_equal(horse._split(stems, None) + 1, HORSE_SMALL_TRAIN)
    np.testing.assert_array_equal(horse._split(stems, 147) + 1, HORSE_SMALL_TRAIN)  # the rule
    assert HorseFeatureParams().d_u == 1969 and HorseFeatureParams().d_p == 100  # the paper's sizes
