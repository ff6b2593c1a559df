"""The documentation site (docs/, Sphinx): it builds with warnings as errors, and the pages
generated from the code say what the code holds (every lesson, the public API, every
recorded benchmark file).

The full build takes about a minute, so it runs only with ``GAPLAB_DOCS_TEST=1`` (CI sets it:
``.ci/run``); the generator checks below it run in the default suite.
"""
from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

pytest.importorskip("sphinx", reason="the docs extra is not installed: pip install -e '.[docs]'")
sys.path.insert(0, str(DOCS / "_ext"))
import gaplab_docs  # noqa: E402

from gaplab.app.lessons import LESSONS  # noqa: E402

needs_build = pytest.mark.skipif(os.environ.get("GAPLAB_DOCS_TEST") != "1",
                                 reason="builds the whole site (~1 min): set GAPLAB_DOCS_TEST=1")


# ------------------------------------------------------------------------ generators (fast)

@dataclass(frozen=True)
class _Lesson:            # the fields the generator reads, as app.lessons.Lesson has them
    title: str
    text: str
    views: tuple = ()
    setup: dict = field(default_factory=dict)
    try_this: str = ""
    code: tuple = ()


def test_lesson_pages_follow_the_lesson_data():
    lessons = (_Lesson("1 · First", "Text with $x^2$.", views=("gap",), setup={"lam": 0.5},
                       try_this="Press **Run**."),
               _Lesson("2 · Second", "More text.", code=("block_gap",)))
    pages = gaplab_docs.lesson_pages(lessons)
    assert sorted(pages) == ["index.md", "lesson_01.md", "lesson_02.md"]
    assert pages["lesson_01.md"].splitlines()[1] == "# 1 · First"
    assert "Text with $x^2$." in pages["lesson_01.md"]
    assert "Press **Run**." in pages["lesson_01.md"] and "lam = `0.5`" in pages["lesson_01.md"]
    assert "Try this" not in pages["lesson_02.md"]
    # the code a lesson names is the reference solver's source, read when the site is built
    assert "def block_gap(" in pages["lesson_02.md"]
    assert "lesson_01\nlesson_02" in pages["index.md"]


def test_a_lesson_with_figures_frames_them_and_links_its_offline_page():
    lessons = (_Lesson("1 · First", "Text."), _Lesson("2 · Second", "More."))
    pages = gaplab_docs.lesson_pages(lessons, figure_lessons=(2,))
    assert "iframe" not in pages["lesson_01.md"]
    page = pages["lesson_02.md"]
    assert 'src="../_static/textbook/lesson_02_figures.html"' in page
    assert 'href="../_static/textbook/lesson_02.html"' in page and "gaplab lesson export 2" in page


def test_lesson_headings_sit_below_the_page_title():
    text = "Intro.\n\n### Why\n\n```python\n# a comment\n```\n\n#### Detail\n"
    page = gaplab_docs.lesson_pages((_Lesson("1 · T", text),))["lesson_01.md"]
    assert "\n## Why\n" in page and "\n### Detail\n" in page and "\n# a comment\n" in page


def test_results_index_lists_every_file_once(tmp_path):
    for name in ("bench_core.json", "fig8.png", "mystery.json", "README.md"):
        (tmp_path / name).write_text("{}", encoding="utf-8")
    text = gaplab_docs.results_index(tmp_path)
    for name in ("bench_core.json", "fig8.png", "mystery.json"):
        assert text.count(f"`{name}`") == 1, name
    assert "README.md" not in text
    assert text.index("`mystery.json`") > text.index("### Other recorded files")


# ------------------------------------------------------------------------ the whole site

@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(out / "doctrees"), str(DOCS), str(out / "html")],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"sphinx -W failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return out / "html"


def _page(site, name):
    path = site / name
    assert path.is_file(), f"{name} was not built"
    return path.read_text(encoding="utf-8")


@needs_build
def test_site_builds_with_the_user_guide(site):
    index = _page(site, "index.html")
    for page in ("guide/install", "guide/cli", "guide/app", "guide/python", "lessons/index",
                 "guide/adding_a_model", "figures", "benchmarks", "api/index"):
        assert f'href="{page}.html"' in index, page
        _page(site, f"{page}.html")
    cli = _page(site, "guide/cli.html")
    assert 'id="gaplab-train"' in cli and "--gap-threshold" in cli
    adding = _page(site, "guide/adding_a_model.html")
    source = (DOCS / "guide" / "adding_a_model.md").read_text(encoding="utf-8")
    headings = [line.lstrip("#").strip() for line in source.splitlines() if line.startswith("## ")]
    assert headings
    text = html.unescape(re.sub(r"<[^>]+>", "", adding))
    for heading in headings:
        assert re.sub(r"[`*]", "", heading) in text, heading


@needs_build
def test_lessons_pages_have_every_lesson(site):
    lesson = _page(site, "lessons/lesson_01.html")
    # the formulas go to MathJax, which is shipped with the site (offline), not fetched from a CDN
    assert 'class="math notranslate nohighlight"' in lesson
    assert 'src="../_static/MathJax.js?' in lesson and (site / "_static" / "MathJax.js").is_file()
    index = _page(site, "lessons/index.html")
    for k, lesson in enumerate(LESSONS, start=1):
        title = html.escape(lesson.title, quote=False)
        assert title in index, lesson.title
        assert title in _page(site, f"lessons/lesson_{k:02d}.html"), lesson.title


@needs_build
def test_api_reference_documents_the_solver(site):
    core = _page(site, "api/gaplab.core.html")
    assert "gaplab.core.solver.html#gaplab.core.solver.Solver" in core     # the re-export links
    solver = _page(site, "api/gaplab.core.solver.html")
    assert 'id="gaplab.core.solver.Solver"' in solver
    assert 'id="gaplab.core.solver.Solver.run"' in solver
    assert "Parameters" in solver                                        # numpydoc sections
    for page in sorted((site / "api").glob("*.html")):     # a constant never shows its type's doc
        assert "Built-in immutable sequence" not in page.read_text(encoding="utf-8"), page.name
    index = _page(site, "api/index.html")
    for mod in ("gaplab.core.models", "gaplab.core.datasets", "gaplab.core.regpath",
                "gaplab.core.sweep", "gaplab.toy_examples"):
        assert f'href="{mod}.html"' in index, mod


@needs_build
def test_figures_and_benchmarks_pages_show_the_recorded_results(site):
    figures = _page(site, "figures.html")
    assert "fig8.png" in figures and (site / "_images" / "fig8.png").is_file()
    bench = _page(site, "benchmarks.html")
    for p in sorted((ROOT / "benchmarks" / "results").iterdir()):
        if p.is_file() and p.name != "README.md":
            assert p.name in bench, p.name


def test_module_map_lists_every_module_of_the_core_once():
    text = gaplab_docs.module_map()
    for path in sorted((ROOT / "core").rglob("*.py")):
        if path.name.startswith("_"):
            continue
        rel = path.relative_to(ROOT).as_posix()
        assert text.count(f"`{rel}`") == 1, rel
    for path in sorted(ROOT.iterdir()):                 # and every top-level module and package
        if path.name.startswith((".", "_")):
            continue
        if path.suffix == ".py":
            assert f"- `{path.name}`" in text, path.name
        elif path.is_dir() and (path / "__init__.py").exists():
            assert f"- `{path.name}/`" in text, path.name


def test_generated_folder_holds_only_the_generated_pages(tmp_path):
    """Pages left from a module that moved or from an older generator (any suffix, sub-folders)
    are removed, so the site builds from the current pages only; an unchanged page is not rewritten."""
    folder = tmp_path / "api"
    (folder / "generated").mkdir(parents=True)
    (folder / "generated" / "gaplab.core.moved.rst").write_text("stale", encoding="utf-8")
    (folder / "gaplab.core.moved.rst").write_text("stale", encoding="utf-8")
    (folder / "gaplab.core.moved.md").write_text("stale", encoding="utf-8")
    (folder / "index.rst").write_text("kept", encoding="utf-8")
    before = (folder / "index.rst").stat().st_mtime_ns
    gaplab_docs.write_pages(folder, {"index.rst": "kept", "gaplab.core.rst": "new"})
    assert sorted(p.name for p in folder.iterdir()) == ["gaplab.core.rst", "index.rst"]
    assert (folder / "gaplab.core.rst").read_text(encoding="utf-8") == "new"
    assert (folder / "index.rst").stat().st_mtime_ns == before


def test_api_reference_has_the_app():
    pages = gaplab_docs.api_pages()
    assert "gaplab.app.rst" in pages and "gaplab.app.session.rst" in pages
    assert "gaplab.app" in pages["index.rst"]


@pytest.mark.parametrize("target,module,cls,home", [
    ("gaplab.core.Solver", None, None, "gaplab.core.solver.Solver"),             # a package's re-export
    ("Solver.run", "gaplab.core", None, "gaplab.core.solver.Solver.run"),        # a short name in context
    ("options", "gaplab.core.problems", "ProblemSpec", "gaplab.core.problems.ProblemSpec.options"),  # a field
    ("no_such_name", "gaplab.core", None, None),                                 # left to Sphinx's warning
])
def test_cross_references_resolve_where_the_object_is_defined(target, module, cls, home):
    found = gaplab_docs._import_target(target, module, cls)
    assert (gaplab_docs._home(*found) if found is not None else None) == home


@needs_build
def test_lesson_pages_frame_their_explorable_figures(site):
    from gaplab.app.textbook.page import MAX_PAGE_BYTES
    from gaplab.app.textbook.registry import lessons_with_figures
    shown = lessons_with_figures()
    assert shown
    for k in range(1, len(LESSONS) + 1):
        page = _page(site, f"lessons/lesson_{k:02d}.html")
        assert ("gaplab-textbook" in page) == (k in shown), k
    for k in shown:
        for name in (f"lesson_{k:02d}.html", f"lesson_{k:02d}_figures.html"):
            path = site / "_static" / "textbook" / name
            assert path.is_file() and path.stat().st_size <= MAX_PAGE_BYTES, name


@needs_build
def test_a_built_lesson_page_shows_its_figures_offline(site):
    """The lesson page from file:// with every other request refused: its frame loads the
    figures, which draw (a BokehJS document in the frame) without an error in the frame, and the
    frame takes the figures' height (no inner scroll bar)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from browser_env import launched_browser, require_browser
    from gaplab.app.textbook.registry import lessons_with_figures
    sync_api, chromium = require_browser()
    k = lessons_with_figures()[0]
    gen = launched_browser(sync_api, chromium)
    browser = next(gen)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error"
                and "_static/textbook" in (m.location or {}).get("url", "") else None)
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
        page.goto((site / "lessons" / f"lesson_{k:02d}.html").as_uri())
        frame_el = page.locator("iframe.gaplab-textbook")
        frame_el.scroll_into_view_if_needed()
        frame = frame_el.element_handle().content_frame()
        frame.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0 && "
                                "document.querySelector('.bk-Column') !== null", timeout=60_000)
        page.wait_for_function("() => parseInt(document.querySelector('iframe.gaplab-textbook').style.height) > 600",
                               timeout=30_000)
        inner = frame.evaluate("() => document.documentElement.scrollHeight")
        outer = frame_el.evaluate("(f) => f.getBoundingClientRect().height")
        assert outer >= inner, (outer, inner)
        assert errors == [], errors
    finally:
        next(gen, None)
