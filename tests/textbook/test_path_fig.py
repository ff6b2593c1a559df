"""Lesson 8's explorable ε-path (gaplab.app.textbook.path_fig): the recorded breakpoints tile λ
with certified bands (Paper: Sec. 4, Proposition 1, Alg. 7), the bands cover the duality gaps
computed afresh at the grid's λ (App. K), and the standalone page, opened offline in headless
Chromium, draws the band, the certified gap and the costs of the λ chosen on its slider.

Building even the path down to λ = 1 takes 8-16 s on the shared 2-core machine, so every test
that needs a path runs with the slow set (the default run's budget); the page's whole path is
built by one of them."""
import math

import numpy as np
import pytest

from gaplab.app.lessons import LESSONS
from gaplab.app.textbook import path_fig

LAM_MIN = 1.0


@pytest.fixture(scope="module")
def data():
    return path_fig.build_data(0, lam_min=LAM_MIN, grid_lo=LAM_MIN)


def _band(data, lam):
    """The certified gap at λ from the recorded breakpoints: g_j + (1 − λ/λ_j)Δ_j on the piece
    [λ_{j+1}, λ_j] that holds λ; (j, gap)."""
    p = data["path"]
    lams = np.array(p["lam"])
    j = int(np.flatnonzero(lams >= lam)[-1])
    nxt = p["next_lam"][j]
    assert nxt is not None and nxt <= lam * (1 + 1e-12), f"λ = {lam} is below the path's end"
    return j, p["gap"][j] + (1.0 - lam / p["lam"][j]) * p["delta"][j]


def check_path(data):
    """The properties every recorded path has (Paper: Proposition 1, Alg. 7, App. K)."""
    eps, kappa, p, gr = data["eps"], data["kappa"], data["path"], data["grid"]
    lam = p["lam"]
    assert all(a > b for a, b in zip(lam, lam[1:])), "breakpoints decrease strictly"
    assert all(p["certified"])
    for j, (lj, nj, gj, dj) in enumerate(zip(lam, p["next_lam"], p["gap"], p["delta"])):
        assert 0.0 <= gj <= kappa * eps * (1 + 1e-9), "each breakpoint is solved to κε"
        if j + 1 < len(lam):
            assert nj == pytest.approx(lam[j + 1], rel=1e-14), "the pieces tile λ"
        lo = nj if nj > 0 else 0.0
        assert gj + (1.0 - lo / lj) * dj <= eps * (1 + 1e-9), "Proposition 1: the band stays <= ε"
    assert all(b >= a for a, b in zip(p["cum_passes"], p["cum_passes"][1:]))
    assert all(g <= eps for g in gr["gap"]), "the grid solves to an exact gap <= ε"
    assert all(math.log2(x) == round(math.log2(x)) for x in gr["lam"]) and gr["lam"] == sorted(gr["lam"])[::-1]
    ck = data["check"]
    assert ck["lam"], "the grid meets the path"
    for lam_g, gap, primal, dual in zip(ck["lam"], ck["gap"], ck["primal"], ck["dual"]):
        j, band = _band(data, lam_g)
        # the gap computed afresh (n max-oracle calls at the path's w) is the band's, and <= ε
        assert gap == pytest.approx(band, rel=1e-6, abs=1e-12) and gap <= eps * (1 + 1e-9)
        assert primal - dual == pytest.approx(gap, rel=1e-9, abs=1e-12)
        k = gr["lam"].index(lam_g)
        # P(w_path) − P* <= band and P(w_grid) − P* <= the grid's gap, both >= 0
        assert -gr["gap"][k] - 1e-9 <= primal - gr["primal"][k] <= band + 1e-9
        st = path_fig.state_at(data, lam_g, min(gr["lam"]))
        assert st["j"] == j and st["bound"] == pytest.approx(band, rel=1e-12)


def test_the_figure_belongs_to_the_lesson_on_the_regularization_path():
    lesson = LESSONS[path_fig.LESSON - 1]
    assert lesson.title.startswith(f"{path_fig.LESSON} ·") and "path" in lesson.views


@pytest.mark.slow
def test_the_bands_tile_lambda_and_cover_the_gaps_computed_afresh_at_the_grid(data):
    assert data["end"] == "lam_min" and data["path"]["next_lam"][-1] < LAM_MIN
    check_path(data)


@pytest.mark.slow
def test_the_pages_whole_path_has_the_same_properties_and_the_same_seed_gives_it_again():
    full = path_fig.build_data(0)
    check_path(full)
    assert full["end"] == "rho<=0" and full["path"]["next_lam"][-1] == 0.0
    assert path_fig.build_data(0)["path"] == full["path"]


def test_bad_arguments_are_refused_before_any_solve():
    with pytest.raises(ValueError, match="grid_lo must be a finite number > 0, got 0"):
        path_fig.build_data(0, grid_lo=0)
    with pytest.raises(ValueError, match="eps"):
        path_fig.build_data(0, eps=-1.0)


# ----------------------------------------------------------------------------- in the browser

@pytest.fixture(scope="module")
def page_file(data, tmp_path_factory):
    from textbook_figs_page import save_standalone
    return save_standalone(path_fig.build_figure(data), tmp_path_factory.mktemp("path") / "path.html", "ε-path")


@pytest.fixture(scope="module")
def browser():
    from browser_env import launched_browser, require_browser
    sync_api, chromium = require_browser()
    yield from launched_browser(sync_api, chromium)


def _check_drawn(page, data, lam, lo):
    """The page's pick, band, piece and cost at λ against the recorded path and grid."""
    from textbook_figs_page import get_model, source
    p, gr = data["path"], data["grid"]
    j, band = _band(data, lam)
    pick = source(page, "path_pick")
    assert pick["x"][0] == pytest.approx(lam, rel=1e-9) and pick["j"] == [j]
    assert pick["y"][0] == pytest.approx(band, rel=1e-9)
    left = p["next_lam"][j] if p["next_lam"][j] > 0 else lo
    assert get_model(page, "path_band", "right") == pytest.approx(p["lam"][j], rel=1e-14)
    assert get_model(page, "path_band", "left") == pytest.approx(max(left, lo), rel=1e-14)
    lft = max(left, lo)   # the zoom shows the whole piece, a little more on both sides
    assert get_model(page, "path_zoom_x", "start") > p["lam"][j] and 0 <= get_model(page, "path_zoom_x", "end") < lft
    assert (get_model(page, "path_band_zoom", "left"), get_model(page, "path_band_zoom", "right")) == \
        pytest.approx((lft, p["lam"][j]), rel=1e-14)
    piece = source(page, "path_piece")
    assert piece["y"][0] == pytest.approx(p["gap"][j], rel=1e-14)
    cost = source(page, "path_cost")
    k = max((i for i, x in enumerate(gr["lam"]) if x >= lam * (1 - 1e-12)), default=-1)
    grid_passes = gr["cum_passes"][k] if k >= 0 else 0.0   # above the grid's first λ: nothing solved yet
    assert cost["y"] == pytest.approx([p["cum_passes"][j], grid_passes], rel=1e-14)


@pytest.mark.slow
@pytest.mark.browser
def test_the_offline_page_draws_the_band_and_gap_of_every_lambda_chosen(browser, page_file, data):
    from textbook_figs_page import HSCROLL_JS, get_model, offline_page, set_model, source
    lo, _ = path_fig._lam_range(data)
    with offline_page(browser, page_file, (1280, 800), ready_source="path_pick") as (page, errors, blocked):
        first = (source(page, "path_pick"), get_model(page, "path_text", "text"))
        lam0 = first[0]["x"][0]
        _check_drawn(page, data, lam0, lo)               # drawn before any callback ran
        lams = data["check"]["lam"] + [data["path"]["lam"][0], data["path"]["lam"][5] * 0.999, 3.3]
        for lam in lams:
            set_model(page, "path_lam", "value", -math.log10(lam))
            _check_drawn(page, data, lam, lo)
            assert f"piece j = {_band(data, lam)[0]}," in get_model(page, "path_text", "text")
        set_model(page, "path_lam", "value", -math.log10(lam0))
        assert (source(page, "path_pick"), get_model(page, "path_text", "text")) == first
        assert not page.evaluate(HSCROLL_JS)
        assert errors == [] and blocked == []


@pytest.mark.slow
@pytest.mark.browser
def test_play_sweeps_lambda_and_a_phone_needs_no_horizontal_scroll(browser, page_file):
    from textbook_figs_page import HSCROLL_JS, RIGHT_EDGE_JS, get_model, offline_page, set_model, source
    with offline_page(browser, page_file, (390, 844), ready_source="path_pick") as (page, errors, _):
        assert not page.evaluate(HSCROLL_JS)
        assert 300 < page.evaluate(RIGHT_EDGE_JS) <= 390
        v0 = get_model(page, "path_lam", "value")
        set_model(page, "path_play", "active", True)
        page.wait_for_function(f"() => Bokeh.documents[0].get_model_by_name('path_lam').value > {v0 + 0.1}",
                               timeout=30_000)
        set_model(page, "path_play", "active", False)
        assert source(page, "path_pick")["x"][0] == pytest.approx(
            10 ** -get_model(page, "path_lam", "value"), rel=1e-9)
        assert errors == []
