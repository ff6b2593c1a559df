"""Lesson pages that explain an algorithm show the reference solver's source of that step
(gaplab.core.reference), without a browser."""
from __future__ import annotations

import inspect
from types import SimpleNamespace

import numpy as np
import pytest

pn = pytest.importorskip("panel")

from gaplab.app.lessons import LESSONS, LessonPanel, lesson_code  # noqa: E402
from gaplab.core import reference  # noqa: E402


@pytest.fixture
def panel():
    return LessonPanel(session=None, view_factory=lambda key: SimpleNamespace(panel=pn.pane.Markdown(key)))


def test_algorithm_pages_show_the_reference_source(panel):
    shown = set()
    for page, lesson in enumerate(LESSONS):
        panel.go(page)
        assert panel.code_card.visible == bool(lesson.code)
        assert panel.code.object == lesson_code(lesson)
        for name in lesson.code:
            src = inspect.getsource(getattr(reference, name))
            assert src in panel.code.object and f"reference.{name}" in panel.code.object
            assert src.lstrip().startswith(f"def {name}(")
            shown.add(name)
    # every block-step algorithm of the paper has its code on some page
    for name in ("fw_candidate", "pairwise_candidate", "away_candidate", "cache_hit_rule", "fw_corner",
                 "gap_sampling_probabilities", "exact_gap", "line_search"):
        assert name in shown


def test_pages_link_the_step_they_explain(panel):
    by_title = {lesson.title.split(" · ")[1]: page for page, lesson in enumerate(LESSONS)}
    panel.go(by_title["One block-coordinate Frank-Wolfe step"])
    assert "def fw_candidate(" in panel.code.object and "Alg. 1" in panel.code.object
    panel.go(by_title["Pairwise and away steps"])
    assert "def pairwise_candidate(" in panel.code.object and "Alg. 3" in panel.code.object
    panel.go(by_title["Caching oracle calls"])
    assert "def cache_hit_rule(" in panel.code.object and "Alg. 5" in panel.code.object
    panel.go(len(LESSONS) - 1)  # the regularization path is not in the reference solver
    assert not panel.code_card.visible and panel.code.object == ""


# ------------------------------------------------------------------ "Set up this page" does what the page says
@pytest.fixture(scope="module")
def live():
    from gaplab.app.session import Session
    s = Session(max_passes=1e6)
    assert s.wait_idle(120)
    lp = LessonPanel(session=s, view_factory=lambda key: SimpleNamespace(panel=pn.pane.Markdown(key)))
    yield lp
    s.close()


def _set_up(lp, page):
    lp.go(page)
    assert lp.setup.visible, f"page {page + 1} has no 'Set up this page'"
    lp.apply_setup()
    s = lp.session
    assert s.wait_idle(120) and s.status == "idle", s.messages()
    assert s.snapshot.iteration == 0          # the page starts from α⁰
    for k, v in LESSONS[page].setup.items():
        assert getattr(s, k) == v, (page + 1, k)
    return s


def test_every_page_has_a_set_up():
    assert all(lesson.setup for lesson in LESSONS)


def test_page_1_the_dual_value_rises_at_every_step(live):
    s = _set_up(live, 0)
    d = [s.snapshot.dual]
    for _ in range(30):
        d.append(s.step().dual)
    assert np.all(np.diff(d) >= -1e-12 * max(1.0, abs(d[-1]))) and d[-1] > d[0]
    assert "D(\\alpha) = -f(\\alpha)" in LESSONS[0].text and "only the dual is monotone" in LESSONS[0].try_this


def test_page_2_a_fw_step_and_page_3_gaps_add_up(live):
    s = _set_up(live, 1)
    st = s.step().last_step
    assert st.kind == "fw" and st.away_corner is None
    s = _set_up(live, 2)
    s.step_n(s.snapshot.n)
    assert s.wait_idle(60)
    ex = s.compute_exact_gaps()
    assert ex.gap == pytest.approx(float(np.sum(ex.block_gaps)), rel=1e-9)   # Eq. (5)-(7)


def test_page_4_first_draws_are_uniform_over_unvisited_blocks(live):
    s = _set_up(live, 3)
    n = s.snapshot.n
    st = s.step().last_step
    assert st.sampling == "gap" and st.probability == pytest.approx(1.0 / n) and st.unvisited == n


def test_page_5_pairwise_steps_have_an_away_corner(live):
    s = _set_up(live, 4)
    st = s.step().last_step
    assert st.kind == "pairwise" and st.away_corner is not None


def test_page_6_no_cache_hit_before_the_first_exact_gap_pass(live):
    """Alg. 5 starts with g^(0) = +inf: the hit rate is 0 until the first exact gap pass (pass
    10 with the page's gap checks) and positive after it, even when page 4's 'never' gap checks
    (which disable the cache) were left on."""
    live.session.gap_check = float("inf")
    s = _set_up(live, 5)
    assert s.gap_check == 10.0
    n = s.snapshot.n
    s.step_n(int(9.5 * n))
    assert s.wait_idle(120)
    assert s.snapshot.cache_hits == 0 and not any(r["kind"] == "gap_check" for r in s.snapshot.trace)
    s.step_n(2 * n)
    assert s.wait_idle(120)
    assert any(r["kind"] == "gap_check" for r in s.snapshot.trace)
    assert s.snapshot.cache_hits > 0.1 * n


def test_page_7_gap_sampling_leaves_the_solved_easy_blocks(live):
    """App. C: after one step on an easy block every easy block is optimal; gap sampling visits
    each once and then at most one stale easy estimate stays positive."""
    s = _set_up(live, 6)
    assert s.dataset == "toy"
    n = s.snapshot.n
    hard = s.problem.info["hard_index"]
    s.step_n(n)
    assert s.wait_idle(60)
    est = np.array(s.snapshot.gap_estimates)
    easy = np.delete(est, hard)
    assert np.all(np.isfinite(est)) and np.sum(easy > 1e-12) <= 1
    assert "1/(2n\\varepsilon)" in LESSONS[6].text and "2K(n-1)" in LESSONS[6].text


def test_page_8_sets_up_the_path_settings(live):
    s = _set_up(live, 7)
    assert (s.dataset, s.sampling, s.step_kind, s.cache) == ("ocr-small", "gap", "fw", False)
