"""Lesson 5's explorable block simplex (gaplab.app.textbook.simplex_fig): the recorded steps obey
Paper Alg. 1, 3 and 4 (α_i on the simplex, corners that are vertices, γ in [0, γ_max] with the
paper's γ_max, the step landing at α + γ·d), and the standalone page, opened offline in headless
Chromium, draws the recorded step for every step kind and slider position."""
import math

import numpy as np
import pytest

from gaplab.app.lessons import LESSONS
from gaplab.app.textbook import simplex_fig

S3 = math.sqrt(3.0) / 2.0
VERTICES = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, S3]])


@pytest.fixture(scope="module")
def data():
    return simplex_fig.build_data(0)


def _direction(kind, alpha, ys, ya):
    e = np.eye(3)
    if kind == "fw":
        return e[ys] - alpha
    if kind == "away":
        return alpha - e[ya]
    return e[ys] - e[ya]


def _paper_gamma_max(kind, alpha, ya):
    if kind == "fw":
        return 1.0
    if kind == "pairwise":
        return alpha[ya]
    return alpha[ya] / (1.0 - alpha[ya])


def test_the_figure_belongs_to_the_lesson_on_pairwise_and_away_steps():
    lesson = LESSONS[simplex_fig.LESSON - 1]
    assert lesson.title.startswith(f"{simplex_fig.LESSON} ·") and "simplex" in lesson.views


def test_every_recorded_step_is_a_step_of_the_paper_on_the_simplex(data):
    assert data["kinds"] == ["fw", "away", "pairwise"]
    np.testing.assert_allclose(data["corners_xy"], VERTICES, atol=1e-15)
    for asked, rec in data["variants"].items():
        assert len(rec["step"]) == data["passes"]
        assert rec["step"] == sorted(rec["step"]) and len(set(rec["pass"])) == data["passes"]
        for k in range(len(rec["step"])):
            a, b = np.array(rec["alpha"][k]), np.array(rec["alpha_after"][k])
            for v in (a, b):   # α_i on the simplex before and after
                assert v.min() >= 0.0 and abs(v.sum() - 1.0) < 1e-12
            kind, ys, ya = rec["kind"][k], rec["fw_corner"][k], rec["away_corner"][k]
            assert kind == asked or (asked == "away" and kind == "fw")   # Alg. 4 may take the FW step
            assert ys in (0, 1, 2) and ya in ((-1, 0, 1, 2) if kind == "fw" else (0, 1, 2))
            if ya >= 0:
                assert a[ya] > 0.0, "the away corner is in the active set"
            g, gmax = rec["gamma"][k], rec["gamma_max"][k]
            assert gmax == pytest.approx(_paper_gamma_max(kind, a, ya), rel=1e-12)
            assert 0.0 <= g <= gmax + 1e-15
            expect = a + g * _direction(kind, a, ys, ya)
            np.testing.assert_allclose(b, np.clip(expect, 0.0, None), atol=1e-12)
            assert rec["drop"][k] == (kind != "fw" and g >= gmax and ys != ya)
            if rec["drop"][k]:
                assert b[ya] == 0.0, "a drop step removes the away atom"
            assert rec["duality_gap"][k] >= -1e-12
            if k + 1 < len(rec["step"]):   # other blocks' steps do not move this block's α_i
                assert rec["alpha"][k + 1] == rec["alpha_after"][k]


def test_pairwise_and_away_steps_drop_the_bad_labelling_where_fw_zig_zags(data):
    v = data["variants"]
    assert any(v["pairwise"]["drop"]) and any(v["away"]["drop"]) and not any(v["fw"]["drop"])
    fw_y0 = [a[0] for a in v["fw"]["alpha_after"]]
    assert all(x > 0 for x in fw_y0), "a FW step shrinks every atom by (1 − γ): y = 0 never leaves"
    assert v["pairwise"]["alpha_after"][-1][0] == 0.0 and v["away"]["alpha_after"][-1][0] == 0.0


def test_the_same_seed_gives_the_same_trace_and_bad_arguments_are_refused(data):
    assert simplex_fig.build_data(0, passes=3)["variants"]["fw"]["alpha"] == \
        {k: v[:3] for k, v in data["variants"]["fw"].items()}["alpha"]
    with pytest.raises(ValueError, match=r"block must be an int in \[0, 4\), got 4"):
        simplex_fig.build_data(0, block=4)
    with pytest.raises(ValueError, match="passes must be an int >= 1, got 0"):
        simplex_fig.build_data(0, passes=0)


def test_the_apps_live_simplex_view_draws_the_same_step_as_the_page(data):
    """One truth: the app's Lesson 5 view (gaplab.app.simplex.SimplexView), brought to the same
    state by the same block steps, previews the step the page records (point, corners, γ, γ_max
    and sentence)."""
    pytest.importorskip("panel")
    from gaplab.app.simplex import SimplexLab, SimplexView
    rec, k_want = data["variants"]["pairwise"], 3
    lab = SimplexLab("random", "pairwise", block=0, seed=data["seed"])
    rng = np.random.default_rng(data["seed"])
    seen, done = 0, False
    for _ in range(data["passes"]):
        for i in rng.permutation(data["n"]):
            if int(i) == data["block"]:
                seen += 1
                if seen == k_want:
                    done = True
                    break
            lab.set_block(int(i))
            lab.step()
        if done:
            break
    lab.set_block(data["block"])
    view = SimplexView(lab)
    i = k_want - 1
    assert view.point.data["x"][0] == pytest.approx(_xy(rec["alpha"][i])[0], abs=1e-12)
    assert view.point.data["y"][0] == pytest.approx(_xy(rec["alpha"][i])[1], abs=1e-12)
    np.testing.assert_allclose([view.gamma_src.data["x"][0], view.gamma_src.data["y"][0]],
                               _xy(rec["alpha_after"][i]), atol=1e-12)
    np.testing.assert_allclose([view.fw_src.data["x"][0], view.fw_src.data["y"][0]],
                               VERTICES[rec["fw_corner"][i]], atol=1e-15)
    np.testing.assert_allclose([view.away_src.data["x"][0], view.away_src.data["y"][0]],
                               VERTICES[rec["away_corner"][i]], atol=1e-15)
    from gaplab.app.safe_html import esc
    assert esc(rec["sentence"][i]) in view.text.object


# ----------------------------------------------------------------------------- in the browser

@pytest.fixture(scope="module")
def page_file(data, tmp_path_factory):
    from textbook_figs_page import save_standalone
    return save_standalone(simplex_fig.build_figure(data), tmp_path_factory.mktemp("simplex") / "simplex.html",
                           "Block simplex")


@pytest.fixture(scope="module")
def browser():
    from browser_env import launched_browser, require_browser
    sync_api, chromium = require_browser()
    yield from launched_browser(sync_api, chromium)


def _xy(bary):
    return np.asarray(bary, dtype=np.float64) @ VERTICES


def _check_drawn(page, rec, k):
    """The page's sources at step k (1-based) against the recorded step, recomputed here."""
    from textbook_figs_page import source
    i = k - 1
    a = np.array(rec["alpha"][i])
    kind, ys, ya, gmax = rec["kind"][i], rec["fw_corner"][i], rec["away_corner"][i], rec["gamma_max"][i]
    pt = source(page, "simplex_point")
    np.testing.assert_allclose([pt["x"][0], pt["y"][0]], _xy(a), atol=1e-12)
    gam = source(page, "simplex_gamma")
    np.testing.assert_allclose([gam["x"][0], gam["y"][0]], _xy(rec["alpha_after"][i]), atol=1e-12)
    fw = source(page, "simplex_fw")
    np.testing.assert_allclose([fw["x"][0], fw["y"][0]], VERTICES[ys], atol=1e-15)
    away = source(page, "simplex_away")
    if ya < 0:
        assert away["x"] == []
    else:
        np.testing.assert_allclose([away["x"][0], away["y"][0]], VERTICES[ya], atol=1e-15)
    gm = source(page, "simplex_gmax")
    land = a + gmax * _direction(kind, a, ys, ya)
    if kind != "fw" and ys != ya and gmax > 0:
        land[ya] = 0.0
    land = np.clip(land, 0.0, None)
    np.testing.assert_allclose([gm["x"][0], gm["y"][0]], _xy(land / land.sum()), atol=1e-9)
    trail = source(page, "simplex_trail")
    np.testing.assert_allclose(np.c_[trail["x"], trail["y"]], _xy(rec["alpha"][:k]), atol=1e-12)
    moves = np.linalg.norm(_xy(rec["alpha_after"][i]) - _xy(a)) > 1e-9
    assert len(source(page, "simplex_arrow")["x0"]) == int(moves)
    # the close-up holds α_i and where the step puts it, with room around (a square window)
    from textbook_figs_page import get_model
    x0, x1 = get_model(page, "simplex_zoom_x", "start"), get_model(page, "simplex_zoom_x", "end")
    y0, y1 = get_model(page, "simplex_zoom_y", "start"), get_model(page, "simplex_zoom_y", "end")
    assert x1 - x0 == pytest.approx(y1 - y0, rel=1e-12) and x1 - x0 >= 2 * simplex_fig.ZOOM_MIN_HALF - 1e-12
    for x, y in (_xy(a), _xy(rec["alpha_after"][i])):
        assert x0 + 0.1 * (x1 - x0) <= x <= x1 - 0.1 * (x1 - x0) and y0 + 0.1 * (y1 - y0) <= y <= y1 - 0.1 * (y1 - y0)


@pytest.mark.browser
def test_the_offline_page_draws_every_recorded_step_of_every_step_kind(browser, page_file, data):
    from textbook_figs_page import HSCROLL_JS, get_model, offline_page, set_model, source
    with offline_page(browser, page_file, (1280, 800), ready_source="simplex_point") as (page, errors, blocked):
        first = ({n: source(page, f"simplex_{n}") for n in ("point", "gamma", "fw", "away", "gmax", "arrow")},
                 [get_model(page, f"simplex_zoom_{a}", e) for a in "xy" for e in ("start", "end")])
        _check_drawn(page, data["variants"]["pairwise"], 1)   # drawn before any callback ran
        for j, kind in enumerate(data["kinds"]):
            set_model(page, "simplex_kind", "active", j)
            rec = data["variants"][kind]
            for k in (1, 2, 3, 7, len(rec["step"])):
                set_model(page, "simplex_step", "value", k)
                _check_drawn(page, rec, k)
                html = get_model(page, "simplex_text", "text")
                assert f"Step {k} of {len(rec['step'])}" in html and f"pass {rec['pass'][k - 1]}" in html
        set_model(page, "simplex_kind", "active", 2)
        set_model(page, "simplex_step", "value", 1)
        again = ({n: source(page, f"simplex_{n}") for n in first[0]},
                 [get_model(page, f"simplex_zoom_{a}", e) for a in "xy" for e in ("start", "end")])
        assert again[0] == first[0] and again[1] == pytest.approx(first[1], rel=1e-12)   # callback = first draw
        assert not page.evaluate(HSCROLL_JS)
        assert errors == [] and blocked == []


@pytest.mark.browser
def test_on_a_phone_play_advances_the_step_pause_stops_it_and_nothing_scrolls_sideways(browser, page_file):
    from textbook_figs_page import HSCROLL_JS, RIGHT_EDGE_JS, get_model, offline_page, set_model
    with offline_page(browser, page_file, (390, 844), ready_source="simplex_point") as (page, errors, _):
        assert not page.evaluate(HSCROLL_JS)
        assert 300 < page.evaluate(RIGHT_EDGE_JS) <= 390
        set_model(page, "simplex_play", "active", True)
        assert get_model(page, "simplex_play", "label") == "❚❚ Pause"
        page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('simplex_step').value >= 3",
                               timeout=30_000)
        set_model(page, "simplex_play", "active", False)
        v = get_model(page, "simplex_step", "value")
        page.wait_for_timeout(1000)
        assert get_model(page, "simplex_step", "value") == v and get_model(page, "simplex_play", "label") == "▶ Play"
        assert errors == []
