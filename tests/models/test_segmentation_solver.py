"""The segmentation model (graph-cut max oracle, Python oracle tier) on the one Solver.

Paper: App. I (HorseSeg model), App. H (box constraints w_P >= 0), Sec. 4 (regularization path).
Synthetic data (3x4 or 2x3 superpixel grids), so that every labelling can be enumerated: the
structured hinge terms of the primal are computed here by brute force, independently of the
graph cut and of the solver's statistics-space scores (which leave out a constant of the loss).
"""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from gaplab.core import Solver
from gaplab.core import reference as ref
from gaplab.core.config import SAMPLING_CHOICES, STEP_CHOICES
from gaplab.core.datasets.segmentation import make_synthetic_segmentation
from gaplab.core.models import SegmentationModel
from gaplab.core.problems import get_problem, load_problem, model_box
from gaplab.core.regpath import grid_search, regularization_path

pytest.importorskip("maxflow")


@pytest.fixture(scope="module")
def small():
    """4 images of 2x3 superpixels (64 labellings each): brute force is cheap."""
    return SegmentationModel(make_synthetic_segmentation(4, grid=(2, 3), cell=3, d_u=4, d_p=3, noise=1.0,
                                                         seed=3, name="seg-2x3"))


@pytest.fixture(scope="module")
def tiny():
    return load_problem("seg-tiny").model


def brute_hinge(model, i, w):
    """max_y L_i(y) + ⟨w, ψ(x_i, y)⟩ − ⟨w, ψ(x_i, y_i)⟩ by enumerating every labelling."""
    V = model.label_len(i)
    gt_score = w @ model.joint_feature(i, model.ground_truth(i))
    best = -np.inf
    for bits in itertools.product((0, 1), repeat=V):
        y = np.array(bits, dtype=np.int64)
        best = max(best, model.loss(i, y) + w @ model.joint_feature(i, y) - gt_score)
    return best


def lagrange_gap(model, solver):
    """Primal at w = clip(v) (brute-force hinge) minus the box dual of App. H (Eq. (52)), from the
    solver's v, ℓ and box only."""
    lam = solver.lam
    S = solver.S
    w, v = S.w, S.v
    primal = 0.5 * lam * w @ w + np.mean([brute_hinge(model, i, w) for i in range(model.n)])
    bu = np.maximum(v - S.ub, 0.0)
    bl = np.maximum(S.lb - v, 0.0)
    box = float(bu[bu > 0] @ S.ub[bu > 0]) - float(bl[bl > 0] @ S.lb[bl > 0])
    dual = S.ell.sum() - 0.5 * lam * w @ w - lam * box
    return primal, dual


def check_invariants(model, solver):
    ex = solver.exact_gap(count=False)
    assert ex.gap >= -1e-12
    assert ex.primal >= ex.dual - 1e-12
    assert ex.gap == pytest.approx(ex.primal - ex.dual, abs=1e-10)
    assert np.all(solver.w[model.d_u:] >= 0.0)
    return ex


# ---------------------------------------------------------------------------- registration
def test_registered_kind_and_problems(tiny):
    from gaplab.core import kernels as kr
    assert kr.model_kind_name(tiny.arrays) == "segmentation"
    assert not kr.has_compiled_oracle(tiny.arrays)
    box = model_box(tiny)
    assert np.all(box["lb"][tiny.d_u:] == 0) and np.all(np.isneginf(box["lb"][:tiny.d_u]))
    spec = get_problem("horse-small")
    assert not spec.bundled and spec.lam() > 0


def test_exact_gap_sampler_is_refused_for_the_python_oracle(tiny):
    with pytest.raises(ValueError, match="compiled max oracle"):
        Solver(tiny, lam=0.1, sampling="exact_gap", **model_box(tiny))


# ---------------------------------------------------------------------------- the gap is right
def test_exact_gap_equals_independent_primal_minus_dual(small):
    """Solver.exact_gap with the scores' constant left out: primal from the brute-force hinge,
    dual ℓ − λ/2‖w‖² (− box term), at several iterates, with the box active on w_P."""
    lam = 0.05
    s = Solver(small, lam=lam, step="combined", sampling="gap", max_passes=1e9, **model_box(small))
    active = False
    for steps in (0, 3, 20, 200):
        s.steps(steps)
        ex = s.exact_gap(count=False)
        primal, dual = lagrange_gap(small, s)
        assert ex.primal == pytest.approx(primal, rel=1e-10, abs=1e-12)
        assert ex.dual == pytest.approx(dual, rel=1e-10, abs=1e-12)
        assert ex.gap == pytest.approx(primal - dual, abs=1e-10)
        assert ex.gap >= 0
        active |= bool(np.any(s.S.v[small.d_u:] < 0))
    assert active, "the box never clipped w_P: the test would not see the App. H terms"


def test_box_gap_equals_lagrange_gap_at_a_clipped_point(small):
    """App. H: the FW gap (sum of block gaps) equals the Lagrange gap at a point where v_P < 0."""
    s = Solver(small, lam=0.05, step="combined", sampling="gap", max_passes=1e9, **model_box(small))
    for _ in range(100):  # stop at an iterate where the box clips some pairwise weight
        s.steps(2)
        if np.any(s.S.v[small.d_u:] < 0):
            break
    assert np.any(s.S.v[small.d_u:] < 0) and np.all(s.w[small.d_u:] >= 0)
    ex = s.exact_gap(count=False)
    primal, dual = lagrange_gap(small, s)
    assert ex.gap == pytest.approx(primal - dual, abs=1e-10)
    # the sum of the exact block gaps (FW gap) is that gap
    assert sum(s.block_gap_now(i) for i in range(small.n)) == pytest.approx(ex.gap, abs=1e-12)


# ---------------------------------------------------------------------------- every variant runs
@pytest.mark.parametrize("sampling", SAMPLING_CHOICES)
@pytest.mark.parametrize("cache", [False, True], ids=["nocache", "cache"])
@pytest.mark.parametrize("step", STEP_CHOICES)
def test_every_step_cache_sampler_runs(tiny, step, cache, sampling):
    s = Solver(tiny, lam=10.0, step=step, sampling=sampling, cache={"enabled": cache}, gap_check=2,
               batch_step=cache, max_passes=8, gap_threshold=0.0, **model_box(tiny))
    g0 = s.exact_gap(count=False).gap
    res = s.run()
    assert res.effective_passes >= 8
    ex = check_invariants(tiny, s)
    assert ex.gap < 0.5 * g0


@pytest.mark.parametrize("step", STEP_CHOICES)
def test_pairwise_weights_stay_nonnegative_after_1e4_steps(step):
    model = SegmentationModel(make_synthetic_segmentation(3, grid=(2, 3), cell=2, d_u=3, d_p=2, noise=1.5,
                                                          seed=7))
    s = Solver(model, lam=1e-3, step=step, sampling="uniform", max_passes=1e9, **model_box(model))
    clipped = 0
    for _ in range(10):
        s.steps(1000)
        assert np.all(s.w[model.d_u:] >= 0.0)
        clipped += int(np.any(s.S.v[model.d_u:] < 0))
    assert s.iteration >= 10_000
    assert clipped > 0, "the box was never active"
    check_invariants(model, s)


def test_warm_starts_keep_the_box(tiny):
    s = Solver(tiny, lam=10.0, step="pairwise", max_passes=1e9, **model_box(tiny))
    s.steps(100)
    for keep in ("primal", "dual"):
        t = s.warm_start(5.0, keep=keep)
        t.steps(50)
        check_invariants(tiny, t)


# ---------------------------------------------------------------------------- reference solver
@pytest.mark.parametrize("kind,cache", [("fw", False), ("pairwise", True), ("away", False), ("combined", True)])
def test_reference_and_fast_solver_agree_step_by_step(small, kind, cache):
    from follow_reference import follow, pair
    lb, ub = small.bounds()
    solver, state = pair(small, 0.05, kind, cache=cache, lb=lb, ub=ub, batch=cache)
    c = follow(solver, state, kind, 60)
    assert c["steps"] >= 30 and c["gap_checks"] >= 3, c
    assert np.all(state.w[small.d_u:] >= 0)


# ---------------------------------------------------------------------------- path, grid, CLI
def test_regularization_path_and_grid_with_python_oracle(tiny):
    path = regularization_path(tiny, eps=0.1, lam_min=300.0, max_breakpoints=40)
    assert len(path) >= 2
    assert np.all(path.W[:, tiny.d_u:] >= 0)
    gaps = path.column("exact_gap")[1:]
    assert np.all(gaps[np.isfinite(gaps)] <= 0.1 + 1e-9)
    # the certified gap of a breakpoint is the true gap of its w at its λ (brute-force primal)
    j = len(path) - 1
    lam, w = path.lams[j], path.W[j]
    gap, primal, dual = path.duality_gap(tiny, lam)
    assert 0 <= gap <= 0.1 + 1e-9
    hinge = np.mean([brute_hinge(tiny, i, w) for i in range(tiny.n)])
    assert primal == pytest.approx(0.5 * lam * w @ w + hinge, rel=1e-9)
    grid = grid_search(tiny, [100.0, 50.0, 25.0], eps=0.1, warm_start="primal")
    assert len(grid) == 3 and np.all(grid.column("exact_gap") <= 0.1 + 1e-12)
    assert np.all(grid.W[:, tiny.d_u:] >= 0)


def test_cli_train_path_grid_on_synthetic_segmentation(tmp_path, capsys):
    from gaplab.cli import main
    from gaplab.core.regpath import RegPath
    out = tmp_path / "r.json"
    assert main(["train", "--dataset", "seg-tiny", "--lam", "10", "--max-passes", "5", "--step", "pairwise",
                 "--cache", "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["primal"] - r["dual"] == pytest.approx(r["exact_gap"], abs=1e-9)
    assert r["exact_gap"] >= 0
    p = tmp_path / "p.npz"
    assert main(["path", "--dataset", "seg-tiny", "--eps", "0.2", "--lam-min", "300", "--out", str(p)]) == 0
    path = RegPath.load(p)
    assert path.kind == "eps" and np.all(path.W[:, 5:] >= 0)
    g = tmp_path / "g.npz"
    assert main(["grid", "--dataset", "seg-tiny", "--lams", "100,50", "--out", str(g)]) == 0
    assert len(RegPath.load(g)) == 2
    assert "exact duality gap" in capsys.readouterr().out


# ---------------------------------------------------------------------------- real horses
@pytest.mark.slow
def test_horse_small_trains_with_the_box():
    from cli_runs import shared_data
    problem = pytest.importorskip("gaplab.core.problems").get_problem("horse-small")
    data_home = shared_data()  # $GAPLAB_DATA or the shared ../shared/data beside the checkout
    if not problem.installed(data_home):
        pytest.skip(problem.install_hint(data_home))
    p = problem.load(data_home)
    m = p.model
    assert m.n == 147 and p.test.n == 181
    s = Solver(m, lam=p.default_lam, step="pairwise", sampling="gap", max_passes=3, **model_box(m))
    res = s.run()
    assert res.exact_gap >= 0 and np.all(res.w[m.d_u:] >= 0)
    r = m.evaluate(res.w, p.test)
    assert 0.5 < r["pixel_accuracy"] <= 1.0


# ---------------------------------------------------------------------------- app
def test_app_anatomy_shows_mask_overlays():
    pytest.importorskip("panel")
    from gaplab.app.session import Session
    from gaplab.app.views import AnatomyView
    s = Session(dataset="seg-tiny", step_kind="pairwise")
    try:
        assert s.wait_idle(60) and s.status == "idle", s.messages()
        s.step_n(20)
        assert s.wait_idle(60)
        st = s.step().last_step
        keys = [k for k, _, _ in st.panels]
        caps = {k: [c for kk, c, _ in st.panels if kk == k] for k in keys}
        assert keys[0] == "input" and caps["input"] == ["photo and superpixels"]
        assert caps["truth"] == ["ground truth"]
        model = s.problem.model
        for key, y in (("fw", st.fw_corner), ("away", st.away_corner)):
            loss = model.loss(st.block, np.array([int(t) for t in y]))
            name = "FW corner" if key == "fw" else "away corner"
            assert caps[key][0].startswith(name)
            # a labelling with a loss also shows its per-superpixel loss heat map
            assert (len(caps[key]) == 2 and caps[key][1].startswith(f"{name} loss per superpixel")) == (loss > 0)
        H, W = model.data.segment_map(st.block).shape
        assert all(p["image"].shape == (H, W, 3) and p["image"].dtype == np.uint8 for _, _, p in st.panels)
        # the overlay of the FW corner is tinted exactly on the pixels its labelling calls horse
        y = np.array([int(t) for t in st.fw_corner])
        fg = model.data.labels_to_mask(st.block, y)
        img = next(p for k, _, p in st.panels if k == "fw")["image"].astype(int)
        blue = img[..., 2] - img[..., 0]
        if fg.any() and (~fg).any():
            assert blue[fg].mean() > blue[~fg].mean()
        view = AnatomyView()
        view.update(s.snapshot)
        assert view.word.object.count("class='gaplab-panel'") == len(st.panels) >= 4
        assert "Loss heat map" in view.word.object
        assert f"<span class='gaplab-block'>{st.block}</span>" in view.word.object
    finally:
        s.close()


def test_loss_heat_overlay_colours_each_superpixel_by_its_loss(tiny):
    """The anatomy's loss heat map: superpixels the FW corner gets right stay grey; every wrong
    one is filled with one colour, redder (less green) the more it adds to the loss, and the
    contributions it draws sum to the block's loss."""
    rng = np.random.default_rng(4)
    for i in range(3):
        g = tiny.ground_truth(i)
        y = np.where(rng.random(g.size) < 0.3, 1 - g, g)
        d = tiny.describe_block(i, y)
        ov = {p["caption"]: p["image"] for p in d["panels"]}
        name = next(k for k in ov if k.startswith("{who} loss per superpixel"))
        assert f"(Σ {tiny.loss(i, y):.3f};" in name
        img = ov[name].astype(int)
        seg = tiny.data.segment_map(i)
        per = tiny.loss_per_superpixel(i, y)
        grey = (img[..., 0] == img[..., 1]) & (img[..., 1] == img[..., 2])
        assert np.all(grey[(per == 0)[seg]]) and not np.any(grey[(per > 0)[seg]])
        inner = ~d["boundaries"]
        green = {p: np.unique(img[..., 1][(seg == p) & inner]) for p in np.flatnonzero(per > 0)}
        green = {p: v for p, v in green.items() if v.size}
        assert all(v.size == 1 for v in green.values())  # one colour per superpixel
        ps = sorted(green, key=lambda p: per[p])
        gs = [int(green[p][0]) for p in ps]
        assert all(a >= b - 1 for a, b in zip(gs, gs[1:]))  # more loss: less green (±1 rounding)
        if len(set(per[ps])) > 1:
            assert gs[0] > gs[-1]


def test_path_checkpoint_restores_a_boxed_solver_exactly(tiny):
    """A saved path solver with the box (v ≠ w) continues step for step as the original."""
    from gaplab.core.regpath.solverstate import _STATE_PREFIX, _restore_solver, _solver_state
    s = Solver(tiny, lam=10.0, step="pairwise", max_passes=1e9, **model_box(tiny))
    s.steps(200)
    s.exact_gap()
    info, arrays = _solver_state(s)
    t = _restore_solver(tiny, info, {k[len(_STATE_PREFIX):]: v for k, v in arrays.items()}, ValueError)
    assert np.array_equal(t.S.v, s.S.v) and np.array_equal(t.w, s.w) and t.S.v is not t.S.w
    s.steps(60)
    t.steps(60)
    assert np.array_equal(s.w, t.w)
    # a box-free model cannot take a boxed checkpoint
    info_nobox = dict(info, has_box=False)
    with pytest.raises(ValueError, match="box"):
        _restore_solver(tiny, info_nobox, {k[len(_STATE_PREFIX):]: v for k, v in arrays.items()}, ValueError)
