"""The pose model on the one Solver (Paper: App. I, App. H): every step kind with and
without the cache, the box that keeps the quadratic deformation weights >= 0, the invariants of
the dual point, the App. H duality gap computed independently, the reference solver step by
step, the problem registry and the CLI."""
import json

import numpy as np
import pytest

from gaplab.core import CacheConfig, Solver
from gaplab.core import kernels as kr
from gaplab.core import reference as ref
from gaplab.core.datasets.lsp import make_pose_data
from gaplab.core.models import PoseArrays, PoseModel
from gaplab.core.problems import get_problem, load_problem, model_box, warmup_plan

from pose_data import LSP_DIR, needs_lsp, tiny_data
from follow_reference import follow
from solver_checks import gap_pass_outputs_by_chunking

KINDS = ["fw", "pairwise", "away", "combined"]
LAM = 0.1


def stick_model(n=5, G=8, T=2, seed=0):
    """n generated stick figures (LSP's 14 joints, 26 nodes) on a G×G grid: no file needed."""
    rng = np.random.default_rng(seed)
    base = np.array([[3, 10], [3, 7], [3, 5], [5, 5], [5, 7], [5, 10], [1, 4], [2, 3], [3, 2], [5, 2],
                     [6, 3], [7, 4], [4, 1.5], [4, 0]], dtype=np.float64)
    xy = base[None] + rng.normal(0, 0.6, size=(n, 14, 2))
    return PoseModel(make_pose_data(xy, np.zeros((n, 14), bool), G, n_types=T, seed=seed, name="sticks"))


def random_tree_model(seed=0, n=5, G=5):
    """Random poses on a 6-node tree (positions uniform on the grid, so the ground truth is often
    farther from the anchors than the loss-augmented corners are: v's quadratic weights go
    negative and the box acts, which it rarely does on the stick figures)."""
    return PoseModel(tiny_data(G=G, parent=(-1, 0, 1, 0, 3, 0), T=2, n=n, seed=seed, noise=0.3))


@pytest.fixture(scope="module")
def model():
    return random_tree_model()


def dense_hinge_primal(model, w, lam):
    """P(w) = λ/2‖w‖² + (1/n) Σ_i max_y L_i(y) + ⟨w, ψ(x_i, y) − ψ(x_i, y_i)⟩ with dense ψ."""
    total = 0.0
    for i in range(model.n):
        y = model.max_oracle(i, w)
        total += model.loss(i, y) + w @ (model.joint_feature(i, y) - model.joint_feature(i, model.ground_truth(i)))
    return 0.5 * lam * w @ w + total / model.n


def check_dual_point(solver, lb, ub):
    """α_i on the simplex, μ_i = Σ α m(y), v = Aα from dense ψ, w = clip(v, lb, ub)."""
    m, S, M = solver.model, solver.S, solver.model.arrays
    v = np.zeros(m.d)
    for i in range(m.n):
        atoms = solver.atoms(i)
        a = np.array([al for _, al, _ in atoms])
        assert np.all(a >= 0) and a.sum() == pytest.approx(1.0, abs=1e-12)
        so, se = M.stat_off[i], M.stat_off[i + 1]
        mu = np.zeros(se - so)
        gt = m.joint_feature(i, m.ground_truth(i))
        for y, al, loss in atoms:
            kr.label_add(M, i, y, al, mu)
            assert loss == pytest.approx(m.loss(i, y), abs=1e-12)
            v += al * (gt - m.joint_feature(i, y))
        np.testing.assert_allclose(mu, S.mu[so:se], atol=1e-10)
    v /= solver.lam * m.n
    scale = max(1.0, np.abs(v).max())
    assert np.abs(S.v - v).max() <= 1e-9 * scale
    np.testing.assert_allclose(S.w, np.clip(v, lb, ub), atol=1e-9 * scale)


def test_pose_kind_is_registered(model):
    assert kr.model_kind_name(model.arrays) == "pose" and kr.has_compiled_oracle(model.arrays)
    assert isinstance(model.arrays, PoseArrays)
    M = model.arrays
    # the solver's oracle scratch (label length × K, float64 and int64) holds the oracle's tables
    L = 2 * M.N
    assert L * M.K >= M.scr_f and L * M.K >= M.scr_i
    kw = model_box(model)
    np.testing.assert_array_equal(kw["lb"][model.quadratic_index()], 0.0)
    assert model_box(get_problem("toy").load().model) == {}


@pytest.mark.parametrize("cache", [False, True], ids=["nocache", "cache"])
@pytest.mark.parametrize("kind", KINDS)
def test_every_step_kind_keeps_the_box_and_the_invariants(model, kind, cache):
    lb, ub = model.bounds()
    q = model.quadratic_index()
    s = Solver(model, lam=LAM, step=kind, sampling="gap", gap_check=3, cache=CacheConfig(enabled=cache, size=4),
               track_active_set=True, lb=lb, ub=ub, batch_step=cache, max_passes=1e9, log_size=600)
    D = s.dual_objective()
    went_negative = False
    for _ in range(20):
        s.steps(30)
        assert np.all(s.w[q] >= 0.0)  # what the distance transform needs (Paper: App. H)
        went_negative |= bool(np.any(s.S.v[q] < 0))
        D2 = s.dual_objective()
        assert D2 >= D - 1e-12  # block steps never decrease the dual
        D = D2
    assert s.iteration == 600
    assert went_negative, "the box never acted: v's quadratic weights stayed >= 0 (test too weak)"
    log = s.S.log[:600]
    assert np.all(log[:, kr.L_GAMMA] >= 0) and np.all(log[:, kr.L_IMPROVE] >= 0)
    if cache:
        assert s.S.counters[kr.C_HIT] > 0
    check_dual_point(s, lb, ub)
    ex = s.exact_gap()
    assert ex.gap >= 0 and np.all(ex.block_gaps >= -1e-12)
    assert ex.primal >= ex.dual
    assert ex.gap == pytest.approx(ex.primal - ex.dual, abs=1e-10)
    # App. H, independently: primal at w = clip(v) from dense ψ, dual ℓ − λ/2‖w‖² + λ β_l·lb
    w, v = s.S.w, s.S.v
    assert ex.primal == pytest.approx(dense_hinge_primal(model, w, LAM), rel=1e-9)
    fin = np.isfinite(lb)
    beta_l = np.maximum(lb - v, 0.0)
    dual = s.S.ell.sum() - 0.5 * LAM * w @ w + LAM * beta_l[fin] @ lb[fin]
    assert ex.dual == pytest.approx(dual, rel=1e-9, abs=1e-12)


def test_training_lowers_the_gap_and_the_training_loss():
    model = stick_model()
    s = Solver(model, lam=1.0, step="pairwise", sampling="gap", cache={"enabled": True}, gap_check=5,
               max_passes=40, **model_box(model))
    g0 = s.exact_gap(count=False).gap
    r = s.run()
    assert r.exact_gap < 0.2 * g0  # measured: 1.0 -> 0.078
    assert model.error(r.w) < 0.5 * model.error(np.zeros(model.d))  # measured: 0.25 against 1.0


def test_without_the_box_the_oracle_refuses(model):
    """No box (the model's default box replaced by an unbounded one): a quadratic deformation
    weight goes negative and the compiled oracle stops the run with a clear error instead of
    returning a wrong labelling."""
    s = Solver(model, lam=LAM, step="fw", sampling="uniform", max_passes=1e9, lb=np.full(model.d, -np.inf))
    with pytest.raises(ValueError, match="quadratic deformation weight"):
        s.steps(200)


@pytest.mark.parametrize("kind,cache", [("fw", False), ("pairwise", True), ("combined", True), ("away", False)])
def test_reference_solver_agrees_step_by_step(kind, cache):
    model = random_tree_model(seed=1, n=4, G=5)
    lb, ub = model.bounds()
    solver = Solver(model, lam=LAM, step=kind, sampling="gap", gap_check=1, max_passes=1e9,
                    cache=CacheConfig(enabled=cache, size=6, factor=0.25), lb=lb, ub=ub)
    state = ref.init_state(model, LAM, atoms=solver.config.needs_atoms, cache=cache, cache_size=6,
                           cache_factor=0.25)  # the reference takes model.bounds() itself
    np.testing.assert_array_equal(state.lb, lb)
    c = follow(solver, state, kind, 40)
    assert c["steps"] >= 20 and c["gap_checks"] >= 4, c
    assert np.any(state.v[model.quadratic_index()] < 0)  # the box was active


def test_regularization_path_keeps_the_pose_box(model):
    """The pose box has only zero finite bounds (quadratic weights >= 0), which the path supports
    (Proposition 1 holds, see regpath.check_path_box): every breakpoint's w keeps them >= 0."""
    from gaplab.core.regpath import regularization_path
    path = regularization_path(model, eps=0.3, lam_min=1e-2, max_breakpoints=4)
    q = model.quadratic_index()
    for lam in path.lams:
        assert np.all(path.w_at(lam)[q] >= 0.0)
    with pytest.raises(ValueError, match="box constraints"):  # a box with other finite bounds is refused
        from gaplab.core.regpath import check_path_box
        check_path_box(np.full(model.d, -1.0), np.full(model.d, np.inf))


def test_warmup_plan_has_the_pose_model():
    jobs = {j.model_class: j for j in warmup_plan(["lsp-pose", "lsp-tiny"])}
    assert set(jobs) == {"PoseModel"} and jobs["PoseModel"].problems == ("lsp-pose", "lsp-tiny")


def test_problem_options_are_checked():
    spec = get_problem("lsp-pose")
    assert spec.parse_options({"G": "16"})["G"] == 16
    with pytest.raises(ValueError, match="G"):
        spec.parse_options({"G": 1})
    with pytest.raises(ValueError, match="n_types"):
        spec.parse_options({"n_types": 0})


@needs_lsp
def test_lsp_problems_load():
    p = load_problem("lsp-pose", data_home=LSP_DIR, G=8, n_types=2, n_train=20)
    assert p.model.n == 20 and p.model.G == 8 and p.test.n == 1000 and p.default_lam == 0.1
    t = load_problem("lsp-tiny", data_home=LSP_DIR)
    assert t.model.n == 8 and t.test.n == 8 and t.model.G == 12


@needs_lsp
def test_cli_train_on_lsp_tiny(tmp_path, capsys):
    from gaplab.cli import main
    out = tmp_path / "r.json"
    rc = main(["train", "--dataset", "lsp-tiny", "--data-home", str(LSP_DIR), "--lam", "0.1", "--max-passes", "6",
               "--gap-threshold", "0", "--step", "pairwise", "--cache", "--out", str(out)])
    assert rc == 0
    r = json.loads(out.read_text())
    assert r["dataset"] == "lsp-tiny" and r["n"] == 8
    assert r["primal"] - r["dual"] == pytest.approx(r["exact_gap"], abs=1e-9) and r["exact_gap"] >= 0
    assert 0 <= r["test_error"] <= 1 and 0 <= r["train_error"] <= 1
    assert "exact duality gap" in capsys.readouterr().out


def test_app_anatomy_describes_a_pose(model):
    """The app's step anatomy reads describe_block: one text per labelling entry, no crash on
    a model whose labels are cells (PoseData has no label names)."""
    from gaplab.app.session import Session
    y = model.max_oracle(0, np.zeros(model.d))
    d = Session._describe(model, 0, y, model.data.label_names)
    assert len(d["labels"]) == model.label_len(0) == 2 * model.arrays.N
    G = model.G
    assert d["labels"][0].endswith(f"({y[0] % G},{y[0] // G})") and d["labels"][1] == f"type {y[1]}"
    b = model.describe_block(0, y)
    assert b["score_map"].shape == (G, G) and b["skeleton"].shape == (model.arrays.N, 2)


def test_exact_gap_pass_threads_share_no_scratch():
    """The exact gap pass runs chunks of blocks in parallel, each chunk with its own oracle
    scratch (PoseArrays holds only the sizes): any chunking gives bitwise the same block gaps
    and FW corners, equal to one oracle call per block by hand."""
    model = random_tree_model(seed=2, n=12, G=6)
    s = Solver(model, lam=LAM, step="pairwise", sampling="gap", cache={"enabled": True}, max_passes=3, seed=0,
               **model_box(model))
    s.run()
    M, S = s._M, s.S
    g, _, _, lab = gap_pass_outputs_by_chunking(s, (1, 3, M.n))
    for i in range(M.n):
        y = model.max_oracle(i, S.w)
        np.testing.assert_array_equal(lab[M.lab_off[i]:M.lab_off[i + 1]], y)
        assert g[i] == pytest.approx(s.block_gap_now(i), rel=1e-12, abs=1e-15)


def test_app_pose_anatomy_draws_the_tree_over_the_chosen_part():
    """What the step anatomy draws for a pose block, through the model's own
    picture (describe_block's panels): the chosen part's score map, and per labelling (ground
    truth, FW corner, away corner) one SVG line per tree edge joining the centres of the two
    nodes' cells, every coordinate inside the G×G map, the chosen part ringed; the corners'
    panels repeat the ground truth (dashed). Bad parts are refused with a clear error."""
    import re

    from gaplab.app.session import Session, role_panels
    from gaplab.app.views import panel_html
    model = stick_model(n=3, G=8)
    M, G, part = model.arrays, model.G, 7
    rng = np.random.default_rng(3)
    w = rng.normal(0, 0.5, size=model.d)
    w[model.quadratic_index()] = rng.uniform(0, 1, size=model.quadratic_index().size)
    ys = [model.ground_truth(1), model.max_oracle(1, w), model.max_oracle(1, np.zeros(model.d))]
    desc = [Session._describe(model, 1, y, None, ("part", part)) for y in ys]
    assert desc[0]["picker"] == {"name": "part", "label": "score map of part",
                                 "options": tuple(model.data.node_names), "value": part}
    panels = role_panels(*desc)
    tree = {(q, int(M.parent[q])) for q in range(M.N) if M.parent[q] >= 0}
    smap = model.score_map(1, part)
    grey = np.round(255 * (smap - smap.min()) / (smap.max() - smap.min())).astype(np.uint8)
    assert [k for k, _, _ in panels] == ["truth", "fw", "away"]
    for k, (key, cap, p) in enumerate(panels):
        assert {tuple(e) for e in p["segments"]} == tree and len(p["segments"]) == M.N - 1 == 25
        assert p["mark"] == part
        np.testing.assert_array_equal(p["image"], grey)
        cells = p["points"] - 0.5
        np.testing.assert_array_equal(cells[:, 1] * G + cells[:, 0], ys[k][0::2])
        differs = not np.array_equal(ys[k], ys[0])
        assert (f"(loss {model.loss(1, ys[k]):.3f})" in cap) == differs
        svg = panel_html(p, key, 150)
        lines = [tuple(map(float, m)) for m in
                 re.findall(r"<line x1='([\d.]+)' y1='([\d.]+)' x2='([\d.]+)' y2='([\d.]+)'/>", svg)]
        assert len(lines) == (25 if key == "truth" else 50)       # + the dashed ground truth
        centres = cells + 0.5
        want = {(*np.round(centres[a], 1), *np.round(centres[b], 1)) for a, b in p["segments"]}
        assert set(lines[-25:]) == want
        assert all(0 < v < G for ln in lines for v in ln)
        ring = re.search(r"class='gaplab-mark' cx='([\d.]+)' cy='([\d.]+)'", svg)
        assert (float(ring[1]), float(ring[2])) == tuple(np.round(centres[part], 1))
    s = Session(load=False)
    with pytest.raises(ValueError, match="value must be None or an int >= 0.*-1"):
        s.set_display_option("part", -1)
    with pytest.raises(IndexError, match=r"part must lie in \[0, 26\)"):
        model.describe_block(0, ys[0], part=26)
