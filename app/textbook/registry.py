"""Which explorable figures each lesson page has: lesson number (as in
:data:`gaplab.app.lessons.LESSONS`, from 1) -> names of figure modules of this package, imported
only when a page is built."""
from __future__ import annotations

import importlib

__all__ = ["FIGURES", "figure_modules", "lessons_with_figures"]

#: lesson number -> figure modules (in page order)
FIGURES = {
    4: ("ocr_fig",),
    5: ("simplex_fig",),
    7: ("race_fig",),
    8: ("path_fig",),
}

def figure_modules(lesson: int) -> list:
    """The figure modules of lesson page ``lesson`` (imported), in page order; [] for a page
    without figures.

    Raises
    ------
    ValueError
        If ``lesson`` is not a lesson number (1 .. the number of lessons).
    """
    from gaplab.app.lessons import LESSONS
    if isinstance(lesson, bool) or not isinstance(lesson, int) or not 1 <= lesson <= len(LESSONS):
        raise ValueError(f"lesson must be an int in [1, {len(LESSONS)}], got {lesson!r}")
    mods = []
    for name in FIGURES.get(lesson, ()):
        mod = importlib.import_module(f"{__package__}.{name}")
        if int(mod.LESSON) != lesson:
            raise ValueError(f"{name}.LESSON is {mod.LESSON}, but the registry lists it under lesson {lesson}")
        mods.append(mod)
    return mods


def lessons_with_figures() -> list[int]:
    """The lesson numbers whose pages have at least one figure available in this tree."""
    return [k for k in sorted(FIGURES) if figure_modules(k)]
