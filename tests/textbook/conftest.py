"""Shared fixtures of the textbook tests: the figures' recorded data (read from the textbook's
cache, computed once when the code changed) and the exported lesson pages, once per test run."""
import pytest


@pytest.fixture(scope="session")
def textbook_data():
    """{figure module name: (module, its data at seed 0)} of every registered figure available."""
    from gaplab.app.textbook.datacache import cached_data
    from gaplab.app.textbook.registry import FIGURES, figure_modules
    out = {}
    for lesson in sorted(FIGURES):
        for mod in figure_modules(lesson):
            out[mod.__name__.rsplit(".", 1)[-1]] = (mod, cached_data(mod, 0))
    return out


@pytest.fixture(scope="session")
def exported_pages(textbook_data, tmp_path_factory):
    """{lesson number: path of its exported standalone page} for the lessons with figures."""
    from gaplab.app.textbook.page import export_lesson
    from gaplab.app.textbook.registry import lessons_with_figures
    folder = tmp_path_factory.mktemp("textbook")
    return {k: export_lesson(k, folder / f"lesson{k}.html") for k in lessons_with_figures()}
