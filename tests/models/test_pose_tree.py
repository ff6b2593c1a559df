"""Pose model on a tree (Paper: App. I, App. H): the generalized distance transform,
the max-sum oracle against brute-force enumeration, the statistics-space primitives against the
dense joint feature map, the loss, the k-means types, the LSP loader and bad input."""
import dataclasses
import itertools

import numpy as np
import pytest

from pose_data import LSP_DIR, needs_lsp, tiny_data
from gaplab.core.datasets import lsp
from gaplab.core.datasets.lsp import kmeans_types, load_lsp, read_lsp_joints
from gaplab.core.models.pose import (
    PoseModel, build_pose_arrays, distance_transform_1d, distance_transform_2d, pose_axpy, pose_gt_label,
    pose_label_add, pose_label_dot, pose_label_loss, pose_oracle, pose_scores, pose_sqnorm,
)


def random_w(model, rng, scale=1.0):
    w = rng.normal(0, scale, size=model.d)
    q = model.quadratic_index()
    w[q] = np.abs(w[q]) * rng.uniform(0, 2.0, size=q.size)
    return w


def all_labellings(model):
    M = model.arrays
    cells = range(M.G * M.G)
    per_node = [list(itertools.product(cells, range(M.ntype[p]))) for p in range(M.N)]
    for combo in itertools.product(*per_node):
        yield np.array([v for pt in combo for v in pt], dtype=np.int64)


def brute_max(model, i, h):
    best, arg = -np.inf, None
    for y in all_labellings(model):
        v = pose_label_dot(model.arrays, i, y, h)
        if v > best:
            best, arg = v, y
    return best, arg


# ------------------------------------------------------------------ distance transform
@pytest.mark.parametrize("n", [1, 2, 3, 7, 32])
def test_dt1d_equals_brute_force(n):
    rng = np.random.default_rng(n)
    for a in [0.0, 1e-9, 0.05, 1.0, 30.0]:
        for _ in range(5):
            f = rng.normal(size=n) * rng.choice([0.1, 1.0, 10.0])
            b, sh = rng.normal() * 2, rng.normal() * 3
            out, arg = distance_transform_1d(f, a, b, sh)
            dd = np.arange(n)[None, :] - (np.arange(n)[:, None] + sh)
            V = f[None, :] - a * dd ** 2 - b * dd
            np.testing.assert_allclose(out, V.max(1), rtol=1e-10, atol=1e-9)
            np.testing.assert_allclose(V[np.arange(n), arg], V.max(1), rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("G", [2, 3, 5, 8, 13])
def test_dt2d_equals_brute_force(G):
    rng = np.random.default_rng(G)
    yy, xx = np.divmod(np.arange(G * G), G)
    for _ in range(6):
        f = rng.normal(size=(G, G))
        ax, ay = rng.choice([0.0, 0.02, 0.5, 3.0], size=2)
        bx, by, rx, ry = rng.normal(size=4) * [1, 1, 2, 2]
        out, arg = distance_transform_2d(f, ax, bx, ay, by, rx, ry)
        dx = xx[None, :] - xx[:, None] - rx  # [parent cell, child cell]
        dy = yy[None, :] - yy[:, None] - ry
        V = f.ravel()[None, :] - ax * dx ** 2 - bx * dx - ay * dy ** 2 - by * dy
        np.testing.assert_allclose(out.ravel(), V.max(1), rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(V[np.arange(G * G), arg.ravel()], V.max(1), rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("G", [1, 2, 3, 5, 8, 13, 33])
def test_direct_transform_equals_brute_force(G):
    """The oracle's direct 2-D transform (small G) equals the brute-force maximum over all
    source cells, from a row-major table (y pass first, result column-major) and from a
    column-major one (x pass first, result row-major); its kept first pass equals the maximum
    along the first axis alone; G not a multiple of 4 (the transposes' remainder) and G < 5
    (no four-offset sweep) included; zero quadratic weights and large ones too."""
    from gaplab.core.models.pose.transforms import _direct2d, _dt2d
    rng = np.random.default_rng(100 + G)
    GG = G * G
    yy, xx = np.divmod(np.arange(GG), G)
    for ax, ay in [(0.0, 0.0), (0.02, 0.5), (3.0, 0.0), (1e-9, 30.0)]:
        f = rng.normal(size=GG) * rng.choice([0.1, 1.0, 10.0])
        bx, by, rx, ry = rng.normal(size=4) * [1, 1, 2, 2]
        dx = xx[None, :] - xx[:, None] - rx  # [output cell, source cell]
        dy = yy[None, :] - yy[:, None] - ry
        best = (f[None, :] - ax * dx ** 2 - bx * dx - ay * dy ** 2 - by * dy).max(1)
        F = f.reshape(G, G)
        D, Y, tmp = (np.full(GG, np.nan) for _ in range(3))
        _direct2d(f, G, ay, by, ry, ax, bx, rx, D, Y, tmp, np.empty(2 * G))  # row-major in
        np.testing.assert_allclose(D.reshape(G, G).T.ravel(), best, rtol=1e-10, atol=1e-9)
        ddy = np.arange(G)[None, :] - np.arange(G)[:, None] - ry  # [yp, yq]
        Yb = (F[None, :, :] - (ay * ddy ** 2 + by * ddy)[:, :, None]).max(1)  # [yp, x]
        np.testing.assert_allclose(Y, Yb.ravel(), rtol=1e-10, atol=1e-9)
        D2, Y2 = np.full(GG, np.nan), np.full(GG, np.nan)
        _direct2d(np.ascontiguousarray(F.T).ravel(), G, ax, bx, rx, ay, by, ry, D2, Y2, tmp,
                  np.empty(2 * G))  # column-major in
        np.testing.assert_allclose(D2, best, rtol=1e-10, atol=1e-9)
        ddx = np.arange(G)[None, :] - np.arange(G)[:, None] - rx  # [xp, xq]
        Xb = (F.T[None, :, :] - (ax * ddx ** 2 + bx * ddx)[:, :, None]).max(1)  # [xp, y]
        np.testing.assert_allclose(Y2, Xb.ravel(), rtol=1e-10, atol=1e-9)
        if G >= 2:  # the envelope transform gives the same maxima
            E = np.empty(GG)
            _dt2d(f, 0, G, ax, bx, ay, by, rx, ry, E, 0, np.empty(GG, np.int64), 0, np.empty(GG),
                  np.empty(GG, np.int64), np.empty(G, np.int64), np.empty(G), np.empty(G + 2))
            np.testing.assert_allclose(D2, E, rtol=1e-12, atol=1e-12)


def test_dt_rejects_negative_quadratic_weight():
    with pytest.raises(ValueError, match="ax.*>= 0.*-0.5"):
        distance_transform_2d(np.zeros((4, 4)), -0.5, 0, 1, 0)
    with pytest.raises(ValueError, match="a .*>= 0"):
        distance_transform_1d(np.zeros(4), -1e-12)
    with pytest.raises(ValueError, match="G >= 2"):
        distance_transform_2d(np.zeros((1, 1)), 1, 0, 1, 0)


# ------------------------------------------------------------------ oracle vs brute force
@pytest.mark.parametrize("transform", ["direct", "envelope"])
@pytest.mark.parametrize("parent,G,T", [((-1, 0, 1), 3, 2), ((-1, 0, 0), 3, 2), ((1, -1, 1, 0), 2, 2),
                                        ((-1, 0), 4, 3), ((-1, 0, 1), 2, 6)])
def test_tree_max_sum_equals_enumeration(parent, G, T, transform):
    """Both distance transforms of the oracle: the maximum equals brute-force enumeration, at
    random weights and at w = 0 or sparse w (exact ties everywhere); T = 6 takes the message
    pass's branch for more than four child types."""
    data = tiny_data(G=G, parent=parent, T=T, n=2, seed=len(parent) * 10 + G)
    model = PoseModel(data, transform=transform)
    M = model.arrays
    assert (M.direct_max_G >= G) == (transform == "direct")
    rng = np.random.default_rng(1)
    for i in range(model.n):
        for loss_coef in (1.0, 0.0, 3.0):
            w = random_w(model, rng)
            if loss_coef == 3.0:
                w = w * (rng.random(model.d) < 0.3) if i == 0 else np.zeros(model.d)
            h = np.empty(model.d + 1)
            pose_scores(M, i, w, h)
            h[model.d] = loss_coef
            y = np.empty(2 * M.N, np.int64)
            sf, si = model.scratch()
            val = pose_oracle(M, i, h, y, sf, si)
            best, _ = brute_max(model, i, h)
            assert val == pytest.approx(best, rel=1e-10, abs=1e-10)
            assert pose_label_dot(M, i, y, h) == pytest.approx(best, rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("transform", ["direct", "envelope"])
def test_oracle_breaks_exact_ties_to_the_smallest_type_and_cell(transform):
    """At w = 0 and no loss every labelling scores 0: the oracle returns the root's first cell
    and every child's first type and cell (row-major), whichever transform."""
    model = PoseModel(tiny_data(G=5, parent=(-1, 0, 1, 0, 3), T=3, n=1, seed=2), transform=transform)
    M = model.arrays
    h = np.zeros(model.d + 1)
    y = np.empty(2 * M.N, np.int64)
    sf, si = model.scratch()
    assert pose_oracle(M, 0, h, y, sf, si) == 0.0
    np.testing.assert_array_equal(y, 0)
    # one child's cells tie at a nonzero value: the smallest row-major cell of its best type
    h[model.arrays.pair_off[2] + 1 * 3 + 0] = 0.5  # child 2, type 1, parent type 0
    pose_oracle(M, 0, h, y, sf, si)
    assert (y[4], y[5]) == (0, 1)


def test_transform_choice_follows_G_and_rejects_bad_names():
    from gaplab.core.models.pose import DIRECT_MAX_G
    for G, direct in ((DIRECT_MAX_G, True), (DIRECT_MAX_G + 1, False)):
        M = build_pose_arrays(tiny_data(G=G, n=1), transform="auto")
        assert (M.G <= M.direct_max_G) == direct
    with pytest.raises(ValueError, match="transform must be one of"):
        build_pose_arrays(tiny_data(G=3, n=1), transform="fast")


def test_oracle_handles_zero_quadratic_weights_and_recovers_truth():
    """With w = 0 except the unary weights, the oracle places each node at its map's maximum;
    with a dominant loss-free unary peak at the truth, decoding returns the truth."""
    data = tiny_data(G=6, parent=(-1, 0, 0, 1), T=2, n=1, seed=3, noise=0.0)
    amp, bpos = np.zeros_like(data.bump_amp), data.bump_pos.copy()  # PoseData is read-only
    amp[0, :, 0] = 1.0
    bpos[0, :, 0] = data.pos[0]
    data = dataclasses.replace(data, bump_amp=amp, bump_pos=bpos)
    model = PoseModel(data)
    w = np.zeros(model.d)
    w[:4] = 1.0
    y = model.decode(0, w)
    np.testing.assert_array_equal(y[0::2], model.ground_truth(0)[0::2])
    assert model.loss(0, y) == 0.0
    # loss-augmented: with only the loss (w = 0), every node moves far enough for loss 1
    y2 = model.max_oracle(0, np.zeros(model.d))
    assert model.loss(0, y2) == pytest.approx(1.0)


# ------------------------------------------------------------------ primitives vs dense ψ
@pytest.fixture(scope="module")
def small_model():
    return PoseModel(tiny_data(G=7, parent=(-1, 0, 1, 0, 3, 0), T=3, n=3, seed=5))


def random_labelling(model, rng):
    M = model.arrays
    y = np.empty(2 * M.N, np.int64)
    y[0::2] = rng.integers(0, M.G * M.G, size=M.N)
    y[1::2] = rng.integers(0, M.ntype)
    return y


def test_model_meets_its_dense_definition(small_model):
    """check_model: scores, statistics, the tree max oracle and decoding agree with the dense
    ψ and loss on random labellings (valid types per part)."""
    from gaplab.core.models.protocol import check_model
    for seed in range(3):
        check_model(small_model, blocks=small_model.n, labellings=50, seed=seed)


def test_label_add_sqnorm_axpy_match_dense(small_model):
    model, M = small_model, small_model.arrays
    rng = np.random.default_rng(1)
    d = model.d
    lb, ub = model.bounds()
    for i in range(model.n):
        y1, y2 = random_labelling(model, rng), random_labelling(model, rng)
        vec = np.zeros(d + 1)
        pose_label_add(M, i, y1, 0.7, vec)
        pose_label_add(M, i, y2, -0.7, vec)
        dpsi = model.joint_feature(i, y1) - model.joint_feature(i, y2)
        np.testing.assert_allclose(vec[:d], 0.7 * dpsi, atol=1e-12)
        assert vec[d] == pytest.approx(0.7 * (model.loss(i, y1) - model.loss(i, y2)), abs=1e-12)
        zbuf = np.zeros(d)
        assert pose_sqnorm(M, i, vec, zbuf) == pytest.approx(0.49 * dpsi @ dpsi, rel=1e-12)
        assert not zbuf.any()
        # axpy with the box: v += c B δ, w = clip(v) on touched coordinates
        v0 = rng.normal(size=d)
        v, w = v0.copy(), np.clip(v0, lb, ub)
        pose_axpy(M, i, -2.5, vec, v, w, lb, ub, True)
        np.testing.assert_allclose(v, v0 - 2.5 * vec[:d], atol=1e-12)
        np.testing.assert_allclose(w, np.clip(v, lb, ub), atol=1e-12)
        assert (w[model.quadratic_index()] >= 0).all()
        v2 = v0.copy()
        pose_axpy(M, i, 1.5, vec, v2, v2, lb, ub, False)
        np.testing.assert_allclose(v2, v0 + 1.5 * vec[:d], atol=1e-12)


def test_gt_label_and_loss_bounds(small_model):
    model, M = small_model, small_model.arrays
    rng = np.random.default_rng(2)
    for i in range(model.n):
        y = np.empty(2 * M.N, np.int64)
        pose_gt_label(M, i, y)
        np.testing.assert_array_equal(y, model.ground_truth(i))
        assert model.loss(i, y) == 0.0 and pose_label_loss(M, i, y) == 0.0
        for _ in range(100):
            L = model.loss(i, random_labelling(model, rng))
            assert 0.0 <= L <= 1.0


def test_quadratic_weights_stay_nonnegative_under_box_steps(small_model):
    """Many box steps w = clip(v + c B δ) along ±(m(y_i) − m(ŷ)), ŷ from the oracle at the
    current w, keep the quadratic deformation weights >= 0 although v goes negative there, and
    the oracle keeps accepting w."""
    model, M = small_model, small_model.arrays
    rng = np.random.default_rng(3)
    lb, ub = model.bounds()
    v = np.zeros(model.d)
    w = np.clip(v, lb, ub)
    for k in range(200):
        i = int(rng.integers(model.n))
        ys = model.max_oracle(i, w)
        dlt = np.zeros(model.d + 1)
        pose_label_add(M, i, model.ground_truth(i), 1.0, dlt)
        pose_label_add(M, i, ys, -1.0, dlt)
        pose_axpy(M, i, rng.choice([-1.0, 1.0]) * rng.uniform(0.01, 1.0), dlt, v, w, lb, ub, True)
        assert (w[model.quadratic_index()] >= 0).all()
    assert (v[model.quadratic_index()] < 0).any()  # the box was active: clipping mattered


def test_oracle_rejects_negative_quadratic_weight(small_model):
    model = small_model
    w = np.zeros(model.d)
    j = int(model.quadratic_index()[3])
    w[j] = -0.1
    with pytest.raises(ValueError, match=rf"w\[{j}\] = -0.1 is a quadratic deformation weight"):
        model.max_oracle(0, w)
    h = np.zeros(model.d + 1)
    h[j] = -0.1
    sf, si = model.scratch()
    with pytest.raises(ValueError, match="quadratic deformation weight is negative"):
        pose_oracle(model.arrays, 0, h, np.empty(2 * model.arrays.N, np.int64), sf, si)


def test_oracle_refuses_non_finite_scores_instead_of_an_invalid_labelling(small_model):
    # with NaN in the pairwise-type scores no child cell attains the maximum; the oracle must
    # raise rather than write cell -1 into the labelling (the kernels index with it unchecked)
    model, M = small_model, small_model.arrays
    h = np.zeros(model.d + 1)
    h[M.pair_off[1]:M.pair_off[1] + M.ntype[1] * M.ntype[M.parent[1]]] = np.nan
    sf, si = model.scratch()
    y = np.zeros(2 * M.N, np.int64)
    with pytest.raises(ValueError, match="no maximising cell"):
        pose_oracle(M, 0, h, y, sf, si)


def test_pose_model_rechecks_positions_of_unlocked_data():
    data = tiny_data(G=4)
    data.pos.flags.writeable = True   # a user who unlocks the validated array on purpose
    data.pos[0, 1, 0] = 9
    with pytest.raises(ValueError, match=r"pos must lie in \[0, G\) = \[0, 4\)"):
        PoseModel(data)


def test_score_map_point_values_match_whole_map(small_model):
    from gaplab.core.datasets.lsp_scoremaps import pose_unary_value
    model, M = small_model, small_model.arrays
    for i in range(model.n):
        for p in range(M.N):
            S = model.score_map(i, p).ravel()
            pts = np.array([pose_unary_value(M, i, p, c) for c in range(M.G * M.G)])
            np.testing.assert_array_equal(S, pts)  # bit-identical
    # the noise has mean 0 and variance noise² (Irwin-Hall sum of 4 uniforms)
    d2 = tiny_data(G=64, parent=(-1, 0), T=1, n=1, noise=1.0)
    d2 = dataclasses.replace(d2, bump_amp=np.zeros_like(d2.bump_amp))
    z = PoseModel(d2).score_map(0, 0).ravel()
    assert abs(z.mean()) < 0.05 and abs(z.var() - 1.0) < 0.05


# ------------------------------------------------------------------ data
def test_kmeans_types_reproducible_per_seed():
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(c, 0.5, size=(50, 2)) for c in [(0, 0), (5, 0), (0, 5), (5, 5)]])
    C1, l1 = kmeans_types(X, 4, seed=7)
    C2, l2 = kmeans_types(X, 4, seed=7)
    np.testing.assert_array_equal(C1, C2)
    np.testing.assert_array_equal(l1, l2)
    # well-separated clusters: every point's label is its nearest centre, 4 clusters of 50
    assert sorted(np.bincount(l1).tolist()) == [50, 50, 50, 50]
    np.testing.assert_array_equal(l1, ((X[:, None] - C1[None]) ** 2).sum(2).argmin(1))
    with pytest.raises(ValueError, match="n_types"):
        kmeans_types(X, 0, seed=0)


def test_grid_size_below_two_is_rejected():
    with pytest.raises(ValueError, match="G .*>= 2, got 1"):
        tiny_data(G=1)
    with pytest.raises(ValueError, match="G .*>= 2"):
        lsp.make_pose_data(np.zeros((2, 14, 2)), np.zeros((2, 14), bool), G=1)


def test_malformed_joints_file(tmp_path):
    import scipy.io
    J = np.random.default_rng(0).uniform(0, 100, size=(3, 14, 5))
    J[2] = 0
    J[0, 4, 3] = np.nan  # pose 3 misses its left knee
    f = tmp_path / "joints.mat"
    scipy.io.savemat(f, {"joints": J})
    with pytest.raises(ValueError, match="pose 3 has a missing joint \\(l_knee"):
        read_lsp_joints(f)
    scipy.io.savemat(f, {"joints": J[:, :13]})
    with pytest.raises(ValueError, match=r"shape \(3, 14, m\).*\(3, 13, 5\)"):
        read_lsp_joints(f)
    scipy.io.savemat(f, {"poses": J})
    with pytest.raises(ValueError, match="no 'joints' array"):
        read_lsp_joints(f)
    with pytest.raises(ValueError, match="sha256 mismatch"):
        load_lsp(32, data_home=tmp_path)
    with pytest.raises(FileNotFoundError, match="joints.mat not found"):
        load_lsp(32, data_home=tmp_path / "nowhere")


@needs_lsp
def test_load_lsp_real_poses():
    tr, te = load_lsp(32, data_home=LSP_DIR, n_types=4, seed=0)
    assert tr.n == 1000 and te.n == 1000 and tr.n_nodes == 26
    assert tr.img_id[0] == 0 and te.img_id[0] == 1000
    # the tree: 25 edges, reachable from the neck
    model = PoseModel(tr.subset(np.arange(5)))
    assert model.arrays.order[0] == 12 and sorted(model.arrays.order.tolist()) == list(range(26))
    assert model.d == 26 + (3 * 4 + 22 * 16) + 25 * 16
    # occlusion flags: 7.3 % of the joints
    assert tr.occluded[:, :14].mean() + te.occluded[:, :14].mean() == pytest.approx(2 * 0.073, abs=0.01)
    # types reproducible per seed, test types = nearest anchor
    tr2, _ = load_lsp(32, data_home=LSP_DIR, n_types=4, seed=0)
    np.testing.assert_array_equal(tr.types, tr2.types)
    np.testing.assert_array_equal(tr.anchors, tr2.anchors)
    q = 7
    disp = te.pos[:, q] - te.pos[:, lsp.LSP_PARENT[q]]
    np.testing.assert_array_equal(te.types[:, q], ((disp[:, None] - tr.anchors[q][None]) ** 2).sum(2).argmin(1))
    # the truth scores 0 loss, the per-node argmax of the maps is a decent but imperfect guess
    w = np.zeros(model.d)
    w[:26] = 1.0
    y = model.decode(0, w)
    assert 0.0 <= model.loss(0, y) <= 1.0
    assert model.loss(0, model.ground_truth(0)) == 0.0


def test_model_interface_describe_block_and_predict(small_model):
    from gaplab.core.models.protocol import check_model
    model = small_model
    check_model(model)
    assert model.oracle_tier == "compiled"
    rng = np.random.default_rng(4)
    w = random_w(model, rng)
    y = model.max_oracle(1, w)
    info = model.describe_block(1, y, part=2)
    assert info["kind"] == "pose" and info["score_map"].shape == (model.G, model.G)
    np.testing.assert_array_equal(info["score_map"], model.score_map(1, 2))
    np.testing.assert_array_equal(info["skeleton"][:, 1] * model.G + info["skeleton"][:, 0], y[0::2])
    assert info["edges"].shape == (model.arrays.N - 1, 2) and info["loss"] == model.loss(1, y)
    Y = model.predict(w)
    for i in range(model.n):
        np.testing.assert_array_equal(Y[i], model.decode(i, w))
    assert model.error(w) == pytest.approx(np.mean([model.loss(i, Y[i]) for i in range(model.n)]))
    with pytest.raises(ValueError, match="shape"):
        model.max_oracle(0, np.zeros(model.d + 1))
    bad = model.ground_truth(0)
    bad[1] = model.arrays.T  # a type out of range for node 0 (the root has 1 type)
    with pytest.raises(ValueError, match="type"):
        model.loss(0, bad)


def test_oracle_on_the_26_node_tree_beats_every_single_node_change():
    """On the full LSP tree (synthetic poses, G = 8, 3 types), no change of one node's position
    and type improves the oracle's loss-augmented score (a necessary condition of optimality
    that brute force cannot check at this size), and the score exceeds the truth's."""
    rng = np.random.default_rng(0)
    xy = rng.normal(0, 1, size=(12, 14, 2)) + np.array([[0, 3], [0, 1.5], [0, 0], [1, 0], [1, 1.5], [1, 3],
                                                         [-1, -1], [-0.5, -1.5], [0, -2], [1, -2], [1.5, -1.5],
                                                         [2, -1], [0.5, -2.3], [0.5, -3]]) * 4
    data = lsp.make_pose_data(xy, np.zeros((12, 14), bool), G=8, n_types=3, seed=1)
    model = PoseModel(data.subset(np.arange(3)))
    M = model.arrays
    for i in range(model.n):
        w = random_w(model, rng, scale=0.5)
        y = model.max_oracle(i, w)
        h = np.empty(model.d + 1)
        pose_scores(M, i, w, h)
        best = pose_label_dot(M, i, y, h)
        assert best >= pose_label_dot(M, i, model.ground_truth(i), h) - 1e-9
        for p in range(M.N):
            for c in range(M.G * M.G):
                for t in range(M.ntype[p]):
                    y2 = y.copy()
                    y2[2 * p], y2[2 * p + 1] = c, t
                    assert pose_label_dot(M, i, y2, h) <= best + 1e-9


def test_oracle_matches_the_previous_implementation_on_random_instances():
    """The oracle (direct transform for small G, envelope above, arg-max recomputed while
    back-tracking) attains the same maximal value as the implementation it replaced
    (tests/pose_oracle_reference.py: envelope transform, back-pointers), loss-augmented and
    plain, on the 26-node tree (G = 4, 13, 24 and either side of DIRECT_MAX_G) and on random
    small trees, at random weights, and on a 4×4 grid at w = 0 and sparse w where exact ties
    abound; both transforms of the new oracle are checked. Where the two labellings differ they are ties: the same value (the two oracles
    round the penalties differently, so near-ties may go either way); the values are compared
    to 1e-12 relative, and most labellings must be identical."""
    from pose_oracle_reference import old_pose_oracle, old_scratch_f, old_scratch_i
    rng = np.random.default_rng(11)
    xy = rng.normal(0, 1, size=(6, 14, 2)) + np.array([[0, 3], [0, 1.5], [0, 0], [1, 0], [1, 1.5], [1, 3],
                                                        [-1, -1], [-0.5, -1.5], [0, -2], [1, -2], [1.5, -1.5],
                                                        [2, -1], [0.5, -2.3], [0.5, -3]]) * 4
    models = [PoseModel(lsp.make_pose_data(xy, np.zeros((6, 14), bool), G=G, n_types=T, seed=G))
              for G, T in ((4, 4), (13, 3), (24, 4))]
    models += [PoseModel(tiny_data(G=G, parent=(-1, 0, 1, 0, 3, 0, 5), T=3, n=4, seed=G, noise=1.0)) for G in (2, 9)]
    from gaplab.core.models.pose import DIRECT_MAX_G
    models += [PoseModel(lsp.make_pose_data(xy, np.zeros((6, 14), bool), G=G, n_types=4, seed=G).subset(np.arange(2)))
               for G in (DIRECT_MAX_G, DIRECT_MAX_G + 1)]  # either side of the default's crossover
    same = calls = 0
    for model in models:
        M = model.arrays
        Me = build_pose_arrays(model.data, model.deform_unit, "envelope")
        Md = build_pose_arrays(model.data, model.deform_unit, "direct")
        h = np.empty(model.d + 1)
        y, y_old = np.empty(2 * M.N, np.int64), np.empty(2 * M.N, np.int64)
        sf, si = model.scratch()
        of, oi = np.empty(old_scratch_f(M)), np.empty(old_scratch_i(M), np.int64)
        for i in range(model.n):
            w = random_w(model, rng, scale=rng.choice([0.05, 1.0, 5.0]))
            if i == 1:  # some zero quadratic weights (the linear branch of the transform)
                w[model.quadratic_index()[::3]] = 0.0
            if i in (2, 3) and model.G == 4:  # many exact ties
                w = np.zeros(model.d) if i == 2 else w * (rng.random(model.d) < 0.3)
            pose_scores(M, i, w, h)
            for loss_coef in (1.0, 0.0):
                h[model.d] = loss_coef
                val_old = old_pose_oracle(M, i, h, y_old, of, oi)
                for MM in (Me, Md):
                    val = pose_oracle(MM, i, h, y, sf, si)
                    assert val == pytest.approx(val_old, rel=1e-12, abs=1e-12)
                    same += int(np.array_equal(y, y_old))
                    calls += 1
    assert same >= 0.8 * calls, f"{same} of {calls} labellings as the previous oracle's"
