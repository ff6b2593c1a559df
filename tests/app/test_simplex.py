"""The block simplex view: the geometry of FW / away / pairwise steps on a
block with three labellings against the paper's definitions (Alg. 1, 3, 4) and against the
steps the reference and the fast solver take."""
import math

import numpy as np
import pytest

from gaplab.app.simplex import (CORNERS_XY, SimplexLab, gamma_max_of, make_problem, step_geometry,
                                to_xy)


@pytest.mark.parametrize("alpha, ya, expect", [
    ([0.2, 0.5, 0.3], 1, {"fw": 1.0, "away": 0.5 / 0.5, "pairwise": 0.5}),
    ([0.7, 0.1, 0.2], 0, {"fw": 1.0, "away": 0.7 / 0.3, "pairwise": 0.7}),
    ([0.0, 0.25, 0.75], 2, {"fw": 1.0, "away": 3.0, "pairwise": 0.75}),
])
def test_gamma_max_is_the_papers(alpha, ya, expect):
    for kind, gm in expect.items():
        assert math.isclose(gamma_max_of(kind, alpha, ya), gm, rel_tol=1e-12)
        g = step_geometry(alpha, kind, fw_corner=(ya + 1) % 3, away_corner=ya)
        assert math.isclose(g.gamma_max, gm, rel_tol=1e-12)
        # at γ_max the point is on the boundary: FW at its corner, away / pairwise drop y_a
        if kind == "fw":
            np.testing.assert_allclose(g.gamma_max_bary, np.eye(3)[(ya + 1) % 3], atol=1e-12)
        else:
            assert g.gamma_max_bary[ya] == 0.0


def test_away_step_from_a_vertex_cannot_move():
    g = step_geometry([1.0, 0.0, 0.0], "away", fw_corner=1, away_corner=0, gamma=0.0)
    assert g.gamma_max == 0.0 and not g.direction.any()
    np.testing.assert_array_equal(g.gamma_bary, [1.0, 0.0, 0.0])


@pytest.mark.parametrize("kind", ["fw", "away", "pairwise"])
def test_barycentric_coordinates_and_points(kind):
    rng = np.random.default_rng(0)
    for _ in range(50):
        a = rng.dirichlet(np.ones(3))
        ys, ya = rng.integers(3), rng.integers(3)
        gmax = gamma_max_of(kind, a, ya)
        gamma = rng.uniform(0, gmax)
        g = step_geometry(a, kind, ys, ya, gamma)
        for b in (g.alpha, g.gamma_max_bary, g.gamma_bary):
            assert math.isclose(b.sum(), 1.0, rel_tol=1e-12) and b.min() >= 0.0
        assert abs(g.direction.sum()) < 1e-12
        np.testing.assert_allclose(g.gamma_bary, a + gamma * g.direction, atol=1e-12)
        np.testing.assert_allclose(g.point, a @ CORNERS_XY)
        np.testing.assert_allclose(g.gamma_point, to_xy(g.gamma_bary))
        # the γ point lies on the segment from α_i to the γ_max point
        t = gamma / gmax
        np.testing.assert_allclose(g.gamma_point, (1 - t) * g.point + t * g.gamma_max_point, atol=1e-12)
    for k in range(3):
        np.testing.assert_allclose(to_xy(np.eye(3)[k]), CORNERS_XY[k])


@pytest.mark.parametrize("kwargs, word", [
    (dict(alpha=[0.5, 0.5], kind="fw", fw_corner=0), "shape"),
    (dict(alpha=[0.5, 0.6, 0.0], kind="fw", fw_corner=0), "simplex"),
    (dict(alpha=[0.5, 0.5, 0.0], kind="jump", fw_corner=0), "kind"),
    (dict(alpha=[0.5, 0.5, 0.0], kind="fw", fw_corner=3), "fw_corner"),
    (dict(alpha=[0.5, 0.5, 0.0], kind="away", fw_corner=0, away_corner=2), "active set"),
    (dict(alpha=[0.5, 0.5, 0.0], kind="pairwise", fw_corner=2), "away_corner"),
    (dict(alpha=[0.5, 0.5, 0.0], kind="pairwise", fw_corner=2, away_corner=0, gamma=0.6), "gamma"),
    (dict(alpha=[0.5, 0.5, 0.0], kind="pairwise", fw_corner=2, away_corner=0, gamma_max=1.0), "gamma_max"),
])
def test_bad_input_is_named(kwargs, word):
    with pytest.raises(ValueError, match=word):
        step_geometry(**kwargs)


@pytest.mark.parametrize("problem", ["toy", "random"])
@pytest.mark.parametrize("kind", ["fw", "away", "pairwise"])
def test_previewed_gamma_point_is_where_the_reference_step_lands(problem, kind):
    lab = SimplexLab(problem, kind)
    rng = np.random.default_rng(1)
    drops = 0
    for _ in range(30):
        lab.set_block(int(rng.integers(lab.model.n)))
        preview, _ = lab.preview()
        taken, info = lab.step()
        np.testing.assert_allclose(preview.gamma_bary, lab.alpha(), atol=1e-12)
        np.testing.assert_allclose(taken.gamma_bary, lab.alpha(), atol=1e-12)
        assert taken.drop == info.drop
        drops += taken.drop
    if kind == "pairwise":
        assert drops > 0   # both problems have drop steps (the toy's first pairwise step is one)


def test_geometry_of_the_fast_solvers_steps():
    """The γ point of each step the fast solver reports is the α_i it holds afterwards."""
    from gaplab.core import Solver
    seen = set()
    for problem in ("toy", "random"):
        model, lam = make_problem(problem)
        for kind in ("away", "pairwise"):
            s = Solver(model, lam=lam, seed=3, sampling="uniform", step=kind, track_active_set=True,
                       max_passes=1e9, gap_check=math.inf)

            def alpha(i):
                a = np.zeros(3)
                for lab, al, _ in s.atoms(i):
                    a[int(lab[0])] += al
                return a

            before = [alpha(i) for i in range(model.n)]
            for _ in range(40):
                s.step()
                r = s.last_steps(1)[-1]
                i = r.block
                ya = None if r.away_corner is None else int(r.away_corner[0])
                g = step_geometry(before[i], r.kind, int(r.fw_corner[0]), ya, r.gamma, r.gamma_max)
                before[i] = alpha(i)
                np.testing.assert_allclose(g.gamma_bary, before[i], atol=1e-9)
                assert g.drop == r.drop
                seen.add((r.kind, r.drop))
    assert {("away", True), ("pairwise", True), ("pairwise", False), ("fw", False)} <= seen


def test_view_moves_with_the_lecturers_steps():
    pytest.importorskip("panel")
    from gaplab.app.simplex import SimplexView
    v = SimplexView(SimplexLab("random", "pairwise"))
    v.w_block.value = 2
    for _ in range(4):
        before = (v.gamma_src.data["x"][0], v.gamma_src.data["y"][0])
        v.b_step.clicks += 1
        # the point moved to the previewed γ point; a new step is previewed from there
        assert (v.point.data["x"][0], v.point.data["y"][0]) == pytest.approx(before)
        np.testing.assert_allclose([v.point.data["x"][0], v.point.data["y"][0]], to_xy(v.lab.alpha(2)))
    assert v.lab.steps == 4 and len(v.trail.data["x"]) == 5
    assert "block 2" in v.text.object and "γ_max" in v.text.object
    v.w_kind.value = "fw"
    assert "next FW step" in v.fig.title.text
    v.b_reset.clicks += 1
    np.testing.assert_allclose([v.point.data["x"][0], v.point.data["y"][0]], CORNERS_XY[0])


def test_lesson_5_shows_the_simplex():
    pytest.importorskip("panel")
    from types import SimpleNamespace

    from gaplab.app.lessons import LESSONS
    from gaplab.app.main import GapLabApp
    from gaplab.app.simplex import SimplexView
    page = next(lesson for lesson in LESSONS if "Pairwise and away steps" in lesson.title)
    assert "simplex" in page.views
    view = GapLabApp._new_lesson_view(SimpleNamespace(), "simplex")   # the app's live-view factory
    assert isinstance(view, SimplexView) and view.lab.kind == page.setup["step_kind"]


def test_fw_steps_show_the_away_corner_too():
    lab = SimplexLab("random", "fw")
    lab.set_block(1)
    for _ in range(3):
        g, info = lab.preview()
        assert info.away_corner is None and g.away_corner is not None
        assert lab.alpha()[g.away_corner] > 0          # in the active set
        lab.step()


def test_away_kind_says_when_it_takes_the_fw_step():
    pytest.importorskip("panel")
    from gaplab.app.simplex import SimplexView
    v = SimplexView(SimplexLab("random", "away", block=3))
    assert v.lab.preview()[0].kind == "fw"      # at α⁰ the away direction is 0: Alg. 4 takes FW
    assert "takes the FW step (Alg. 4 line 12 takes it when g^FW &gt; g^A" in v.text.object
    assert "on a tie, where Alg. 4 takes the away step, gaplab takes the FW step" in v.text.object
    v.w_kind.value = "pairwise"
    assert "Alg. 4" not in v.text.object


_FONTS = {w: next((p for p in (f"/usr/share/fonts/truetype/dejavu/DejaVuSans{s}.ttf",
                               f"/usr/share/fonts/truetype/liberation/LiberationSans-{t}.ttf")
                   if __import__("os").path.exists(p)), None)
          for w, s, t in (("normal", "", "Regular"), ("bold", "-Bold", "Bold"))}


@pytest.mark.skipif(None in _FONTS.values(), reason="no DejaVu/Liberation font to measure text with")
def test_vertex_labels_lie_outside_the_triangle_and_its_markers():
    """Each "y = k" label's text box (in screen px from its vertex, measured in its font) lies
    outside the triangle and outside the largest marker drawn on a vertex (the FW corner's
    circle covered "y = 2" at the apex)."""
    pytest.importorskip("panel")
    from PIL import ImageFont
    from gaplab.app.simplex import CORNER_LABEL_PX, MARKER_RADIUS_PX, SimplexView
    view = SimplexView(height=330)
    src = view.corner_src.data
    assert np.allclose(np.c_[src["x"], src["y"]], CORNERS_XY)
    font = ImageFont.truetype(_FONTS["normal"], int(CORNER_LABEL_PX))
    ascent, descent = font.getmetrics()
    for k in range(3):
        w = font.getlength(src["text"][k])
        x0 = {"left": 0.0, "right": -w, "center": -w / 2}[src["align"][k]] + src["dx"][k]
        h = ascent + descent
        y0, y1 = src["dy"][k] - h / 2, src["dy"][k] + h / 2     # screen px, y down (baseline "middle")
        # nearest point of the box to the vertex: farther than the marker's radius
        nx, ny = min(max(0.0, x0), x0 + w), min(max(0.0, y0), y1)
        assert math.hypot(nx, ny) > MARKER_RADIUS_PX, (k, nx, ny)
        # no corner of the box inside the triangle's cone at this vertex (screen y is down)
        v = CORNERS_XY[k]
        e1, e2 = (CORNERS_XY[j] - v for j in range(3) if j != k)
        m = np.array([[e1[0], e2[0]], [-e1[1], -e2[1]]])
        for px, py in ((x0, y0), (x0 + w, y0), (x0, y1), (x0 + w, y1)):
            c = np.linalg.solve(m, [px, py])
            assert not (c[0] > 0 and c[1] > 0), (src["text"][k], px, py)


@pytest.mark.skipif(None in _FONTS.values(), reason="no DejaVu/Liberation font to measure text with")
@pytest.mark.parametrize("kind", ["fw", "away", "pairwise"])
def test_title_fits_the_figure_in_projector_mode(kind):
    """"Block 3's simplex (3 labellings): next pairwise step" was cut at the figure's right
    edge at 18 px (Lesson 5 in projector mode)."""
    pytest.importorskip("panel")
    from PIL import ImageFont
    from gaplab.app.simplex import SimplexView
    from gaplab.app.styles import BIG_PX
    view = SimplexView(SimplexLab("random", kind, block=3), height=330)
    px = max(BIG_PX, float(view.fig.title.text_font_size.rstrip("px")), 20.0)
    font = ImageFont.truetype(_FONTS["bold"], int(px))
    width = font.getlength(view.fig.title.text)
    assert width <= view.fig.width - 20, (view.fig.title.text, width, view.fig.width)
    assert view.fig.title.text.startswith("Block 3: next ")
