"""Lesson pages that explain an algorithm show the reference solver's source of that step
(gaplab.core.reference), without a browser."""
from __future__ import annotations

import inspect
from types import SimpleNamespace

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
