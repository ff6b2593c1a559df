"""Sphinx extension of the gaplab site: pages generated from the code at build time.

- ``lessons/``: one page per lesson of the app, read from :data:`gaplab.app.lessons.LESSONS`
  (title, text, try-this line, settings, the reference-solver code it shows), so
  the site cannot drift from the app. A lesson with explorable figures
  (:mod:`gaplab.app.textbook`) frames them, and links its standalone page: both are written to
  ``_static/textbook/`` after the build (:func:`write_textbook`).
- ``api/``: the API reference, one page per public module, its members taken from the
  module's ``__all__``; a name re-exported from another module links to the module that
  defines it (which is documented too), so every object is described once.
- Two fenced blocks usable in any Markdown page, replaced before parsing:
  ````` ```{results-index} ````` inserts the index of ``benchmarks/results/`` grouped by what
  each file measures (:data:`RESULT_GROUPS`), and ````` ```{module-map} ````` the repository's
  folders and modules with the first sentence of each docstring (:func:`module_map`).

Generated files are written only when their text changes (incremental builds stay cheap), a
generated folder holds nothing else (:func:`write_pages`), and they are ignored by git.
Nothing here touches the network.
"""
from __future__ import annotations

import fnmatch
import importlib
import inspect
import re
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent

# The public API, by section; modules that define a name re-exported here are added to the
# same section automatically.
API_SECTIONS = (
    ("The package", ("gaplab",)),
    ("Solver core", ("gaplab.core", "gaplab.core.config", "gaplab.core.solver",
                     "gaplab.core.solver_state", "gaplab.core.problems", "gaplab.core.estimator",
                     "gaplab.core.reference",
                     "gaplab.core.warmup", "gaplab.core.certify")),
    ("Models", ("gaplab.core.models", "gaplab.core.models.protocol", "gaplab.core.models.display")),
    ("Data sets", ("gaplab.core.datasets",)),
    ("Regularization path", ("gaplab.core.regpath", "gaplab.core.regpath.store")),
    ("Sweeps and figures", ("gaplab.core.sweep", "gaplab.plots")),
    ("Files and Ctrl-C", ("gaplab.core.atomic", "gaplab.core.interrupt", "gaplab.core.storelock")),
    ("Teaching examples", ("gaplab.toy_examples",)),
    ("The app", ("gaplab.app", "gaplab.app.session")),
)

# benchmarks/results/: (what is measured, file patterns, the scripts that write them)
RESULT_GROUPS = (
    ("Solver speed per effective pass and per oracle call (OCR-large)",
     ("bench_core*",), "benchmarks/bench_core.py"),
    ("Cost of one block step split by kind (cache hit, oracle step, gap pass)",
     ("bench_step_cost*",), "benchmarks/bench_step_cost.py"),
    ("A/B of the step, of whole runs and of a cold compile against an older checkout",
     ("ab_step*", "ab_core*", "ab_compile*"),
     "benchmarks/ab_step.py, benchmarks/ab_core.py, benchmarks/ab_compile.py"),
    ("Convergence: duality gap against passes and time (Sec. 5, App. J)",
     ("convergence_*",), "benchmarks/fig_convergence.py"),
    ("CoNLL-2000: speed, memory and test chunk F1",
     ("conll_bench*",), "benchmarks/conll_bench.py"),
    ("Regularization path against grid search (Fig. 4, 7, 8)",
     ("regpath_*", "fig8*"), "benchmarks/regpath_bench.py, benchmarks/fig8_combine.py"),
    ("Path stores: memory, size and I/O of a CoNLL ε-path on disk",
     ("path_store_*",), "benchmarks/path_store_bench.py"),
    ("Picking λ on a stored path (w_at against replay)",
     ("path_pick_*",), "benchmarks/path_pick_bench.py"),
    ("Binary segmentation (horse-small, App. I): graph cut, accuracy, step time, path",
     ("bench_graphcut*", "horse_*"),
     "benchmarks/bench_graphcut.py, benchmarks/horse_eval.py, benchmarks/horse_step_time.py, "
     "benchmarks/horse_path.py"),
    ("Pose (LSP): oracle time, the cache's cost dial, gap-check schedule",
     ("bench_pose*", "pose_*"),
     "benchmarks/bench_pose.py, benchmarks/bench_pose_cache.py, benchmarks/bench_pose_schedule.py"),
    ("The app: start-up, page-ready, Step round trip, screenshots",
     ("app_bench*", "projector_*", "simplex_view*", "race_view*"),
     "benchmarks/app_bench.py, benchmarks/app_screens.py, benchmarks/simplex_race_screens.py"),
    ("The explorable textbook: page sizes, scrubber redraw time, data build time, screenshots",
     ("textbook*",), "benchmarks/textbook_bench.py"),
    ("Sweeps: speed-up of Dask workers",
     ("sweep_speedup*",), "benchmarks/sweep_speedup.py"),
    ("Teaching examples (App. C, Fig. 1)",
     ("hard_easy*", "sweep.png", "sweep_table*", "staleness*", "theorem2*"),
     "python -m gaplab.toy_examples.<name>"),
)


def _write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def write_pages(folder: Path, pages: dict[str, str]) -> None:
    """Make ``folder`` hold exactly ``pages`` ({file name: text}): every other file or folder in
    it is removed first (whatever its suffix: the pages of a module that moved, or of an older
    generator, would otherwise be built too), then each page is written when its text changed."""
    import shutil
    folder.mkdir(parents=True, exist_ok=True)
    for p in folder.iterdir():
        if p.name not in pages:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
    for name, text in pages.items():
        _write_if_changed(folder / name, text)


# --------------------------------------------------------------------------------------------
# lessons

_HEADING = re.compile(r"^(#{1,6})(\s)", re.M)


def _headings_below_title(text: str) -> str:
    """Shift a lesson text's Markdown headings so that its highest one is a level-2 heading
    under the page title (code fences untouched)."""
    lines, fence, levels = text.split("\n"), False, []
    for line in lines:
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence and (m := _HEADING.match(line)):
            levels.append(len(m.group(1)))
    if not levels:
        return text
    shift, fence, out = 2 - min(levels), False, []
    for line in lines:
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence and (m := _HEADING.match(line)):
            line = "#" * min(6, len(m.group(1)) + shift) + line[len(m.group(1)):]
        out.append(line)
    return "\n".join(out)


#: where the lessons' explorable pages go in the built site (under _static)
TEXTBOOK_DIR = "textbook"


def textbook_embed(k: int) -> str:
    """The Markdown that frames lesson ``k``'s explorable figures (the figures-only page the
    build writes to ``_static/textbook/``) and links its standalone page. The frame takes the
    height its page reports (postMessage), so it never scrolls inside the page."""
    name = f"lesson_{k:02d}"
    src = f"../_static/{TEXTBOOK_DIR}/{name}_figures.html"
    return "\n".join([
        "## Explore it", "",
        "```{raw} html",
        "<p>The figures below replay runs of gaplab's solver recorded when this site was built: move "
        "the scrubber, press play, flip the switches (no Python runs while you do). "
        f"<a href=\"../_static/{TEXTBOOK_DIR}/{name}.html\">Open this lesson as one page that works "
        f"offline</a> (the same as <code>gaplab lesson export {k} --out {name}.html</code>).</p>",
        f"<iframe class=\"gaplab-textbook\" src=\"{src}\" title=\"Explorable figures of lesson {k}\" "
        "style=\"width:100%;height:1400px;border:0\" loading=\"lazy\"></iframe>",
        "<script>window.addEventListener('message', function (e) {",
        "  var h = e.data && e.data.gaplabTextbookHeight; if (!h) return;",
        "  document.querySelectorAll('iframe.gaplab-textbook').forEach(function (f) {",
        "    if (f.contentWindow === e.source) f.style.height = (h + 8) + 'px'; }); });</script>",
        "```", ""])


def lesson_pages(lessons, figure_lessons=()) -> dict[str, str]:
    """Markdown of the lesson pages: {file name: text}, with ``index.md`` listing them all;
    the pages of ``figure_lessons`` (lesson numbers) frame their explorable figures."""
    from gaplab.app import lessons as lessons_mod
    code_of = getattr(lessons_mod, "lesson_code", None)
    pages: dict[str, str] = {}
    names = []
    for k, lesson in enumerate(lessons, start=1):
        name = f"lesson_{k:02d}"
        names.append(name)
        parts = [f"({name})=", f"# {lesson.title}", "", _headings_below_title(str(lesson.text).strip()), ""]
        if k in figure_lessons:
            parts.append(textbook_embed(k))
        try_this = str(getattr(lesson, "try_this", "") or "").strip()
        if try_this:
            parts += ["```{admonition} Try this in the app", ":class: tip", "", try_this, "```", ""]
        setup = dict(getattr(lesson, "setup", {}) or {})
        if setup:
            shown = ", ".join(f"{key} = `{value}`" for key, value in setup.items())
            parts += [f"*Set up this page* applies: {shown}.", ""]
        if code_of is not None:
            code = code_of(lesson)
            if code:
                parts += [code, ""]
        pages[name + ".md"] = "\n".join(parts)
    index = ["# Lessons", "",
             "The app's **Lessons** tab, page by page (generated from `app/lessons.py` when "
             "the site is built). In the app each page has *Set up this page*, which applies the "
             "page's settings and restarts the solver from α⁰, next to the live plots the page explains.",
             "", "```{toctree}", ":maxdepth: 1", ""]
    index += names + ["```", ""]
    pages["index.md"] = "\n".join(index)
    return pages


def generate_lessons(app) -> None:
    from gaplab.app.lessons import LESSONS
    figure_lessons = _figure_lessons() if app.builder.format == "html" else ()
    write_pages(DOCS / "lessons", lesson_pages(LESSONS, figure_lessons))


def _figure_lessons() -> list[int]:
    from gaplab.app.textbook.registry import lessons_with_figures
    return lessons_with_figures()


def write_textbook(app, exception) -> None:
    """After an HTML build: each lesson with figures as a standalone page and as its figures
    alone (framed by the lesson's page) in ``_static/textbook/``; their data come from the
    textbook's cache (computed on a first build, then read)."""
    if exception is not None or app.builder.format != "html":
        return
    from gaplab.app.textbook.page import export_lesson
    out = Path(app.outdir) / "_static" / TEXTBOOK_DIR
    out.mkdir(parents=True, exist_ok=True)
    for k in _figure_lessons():
        export_lesson(k, out / f"lesson_{k:02d}.html")
        export_lesson(k, out / f"lesson_{k:02d}_figures.html", figures_only=True)


# --------------------------------------------------------------------------------------------
# API reference

def _kind(obj) -> str:
    if inspect.isclass(obj):
        return "class"
    if inspect.isroutine(obj) or callable(getattr(obj, "py_func", None)):
        return "function"
    return "data"


def _public(mod, reexported: dict[str, list[str]]) -> list[str]:
    """A module's public names: its ``__all__``, else the names other public modules
    re-export from it (a module without ``__all__`` that defines e.g. the app's Session)."""
    names = getattr(mod, "__all__", None)
    if names is None:
        return list(reexported.get(mod.__name__, []))
    return list(names)


def api_pages() -> dict[str, str]:
    """reST of the API pages: {file name: text}, with ``index.rst``."""
    sections: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    reexported: dict[str, list[str]] = {}   # module -> the names defined there that others re-export
    for title, modnames in API_SECTIONS:
        mods: list[str] = []
        queue = list(modnames)
        while queue:
            modname = queue.pop(0)
            if modname in seen:
                continue
            seen.add(modname)
            try:
                mod = importlib.import_module(modname)
            except ModuleNotFoundError as exc:
                if exc.name != modname:
                    raise
                logger.warning(f"API reference: module {modname} not found; update API_SECTIONS "
                               f"in docs/_ext/gaplab_docs.py")
                continue
            mods.append(modname)
            for name in _public(mod, reexported):
                obj = getattr(mod, name)
                home = getattr(obj, "__module__", None) or modname
                if home != modname and home.startswith("gaplab") and not inspect.ismodule(obj):
                    own = getattr(obj, "__name__", name)
                    if own not in reexported.setdefault(home, []):
                        reexported[home].append(own)
                    if home not in seen:
                        queue.append(home)
        sections.append((title, mods))

    pages: dict[str, str] = {}
    for _, mods in sections:
        for modname in mods:
            mod = importlib.import_module(modname)
            lines = [modname, "=" * len(modname), "", f".. automodule:: {modname}",
                     "   :no-members:", ""]
            own, elsewhere = [], []
            for name in _public(mod, reexported):
                obj = getattr(mod, name)
                home = getattr(obj, "__module__", None) or modname
                if inspect.ismodule(obj):
                    continue
                (own if home == modname or not home.startswith("gaplab") else elsewhere).append(
                    (name, obj, home))
            if elsewhere:
                lines += ["Also importable from here (documented where they are defined):", ""]
                for name, obj, home in elsewhere:
                    role = {"class": "class", "function": "func", "data": "data"}[_kind(obj)]
                    target = f"{home}.{getattr(obj, '__qualname__', name)}"
                    lines.append(f"- :py:{role}:`{modname}.{name} <{target}>`")
                lines.append("")
            for name, obj, _ in own:
                kind = _kind(obj)
                if kind == "class":
                    # a class built from gaplab base classes (the Solver) lists their members too
                    inherits = any(b.__module__.startswith("gaplab") for b in obj.__mro__[1:])
                    lines += [f".. autoclass:: {modname}.{name}", "   :members:",
                              "   :show-inheritance:"] + (["   :inherited-members:"] if inherits else []) + [""]
                elif kind == "function":
                    lines += [f".. autofunction:: {modname}.{name}", ""]
                else:   # constants: their value when it is short, their #: comment if any
                    short = len(repr(obj)) <= 100
                    lines += [f".. autodata:: {modname}.{name}"] + ([] if short else ["   :no-value:"]) + [""]
            pages[f"{modname}.rst"] = "\n".join(lines)

    index = ["API reference", "=============", "",
             "Generated from the docstrings (numpydoc) of the public modules: each lists the",
             "names of its ``__all__``. Shapes, dtypes, raised errors and the paper's source",
             "(*Paper: Alg. N* / *Eq. (N)*) are in each entry.", ""]
    for title, mods in sections:
        index += [title, "-" * len(title), "", ".. toctree::", "   :maxdepth: 1", ""]
        index += [f"   {m}" for m in mods] + [""]
    pages["index.rst"] = "\n".join(index)
    return pages


def generate_api(app) -> None:
    write_pages(DOCS / "api", api_pages())


# --------------------------------------------------------------------------------------------
# fenced blocks replaced before parsing

_FENCE = re.compile(r"^```\{(results-index|module-map)\}[ \t]*(.*?)\n```[ \t]*$", re.M)

# the folders and top-level modules of the repository's layout, in reading order
LAYOUT = ("core", "app", "toy_examples", "cli", "plots.py", "assets", "benchmarks", "scripts",
          "tests", "examples", "docs")
# folders that are not Python packages say what they hold here
LAYOUT_NOTES = {
    "assets": "data files shipped inside the package: the OCR letters (.npz), checksums, provenance",
    "benchmarks": "speed, memory and convergence benchmarks (JSON medians, figures); "
                  "`benchmarks/specs/` holds the sweep specs of the paper's figures and "
                  "`benchmarks/results/` the recorded results",
    "scripts": "one-off data conversion, the independent reference run, trace fingerprints",
    "tests": "pytest, one folder per area (core, models, regpath, sweep, cli, app, browser, project); "
             "shared helpers at the top (conftest.py puts tests/ on the import path)",
    "examples": "notebooks (the app tour)",
    "docs": "this site (Sphinx)",
}
_ROLE = re.compile(r":[\w:]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`")


def _summary(path: Path) -> str:
    """The first sentence of a module's docstring (read with ast: nothing is imported)."""
    import ast
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    first = _ROLE.sub(lambda m: f"`{m.group(1).split('.')[-1] if '~' in m.group(0) else m.group(1)}`", first)
    return first.replace("``", "`")


def module_map(root: Path = ROOT) -> str:
    """Markdown list of the package layout: each folder and module with its docstring's first
    paragraph, read from the files, so the list follows the code."""
    out = []

    def walk(folder: Path, depth: int) -> None:
        for path in sorted(folder.iterdir()):
            if path.name.startswith((".", "_")) and path.name != "__init__.py":
                continue
            if path.name == "__init__.py":
                continue
            indent = "  " * depth
            rel = path.relative_to(root).as_posix()
            if path.is_dir() and (path / "__init__.py").exists():
                out.append(_item(indent, f"{rel}/", _summary(path / "__init__.py")))
                walk(path, depth + 1)
            elif path.suffix == ".py":
                out.append(_item(indent, rel, _summary(path)))

    ordered: list[Path] = []
    for entry in LAYOUT:
        ordered += [p for p in sorted(root.glob(entry)) if p not in ordered]
    # any other top-level package or module (e.g. one added after this list was written)
    ordered += [p for p in sorted(root.iterdir())
                if p not in ordered and not p.name.startswith((".", "_"))
                and ((p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py")]
    for path in ordered:
        rel = path.relative_to(root).as_posix()
        if not path.is_dir():
            out.append(_item("", rel, _summary(path)))
        elif (path / "__init__.py").exists() and path.name not in LAYOUT_NOTES:
            out.append(_item("", f"{rel}/", _summary(path / "__init__.py")))
            walk(path, 1)
        else:
            out.append(_item("", f"{rel}/", LAYOUT_NOTES.get(path.name, "")))
    return "\n".join(out) + "\n"


def _item(indent: str, name: str, text: str) -> str:
    return f"{indent}- `{name}`" + (f": {text}" if text else "")


def results_index(results: Path = ROOT / "benchmarks" / "results") -> str:
    """Markdown tables of benchmarks/results/ grouped by :data:`RESULT_GROUPS`."""
    files = sorted(p.name for p in results.iterdir()
                   if p.is_file() and not p.name.startswith(".") and p.name != "README.md")
    placed: set[str] = set()
    out = []
    for what, patterns, scripts in RESULT_GROUPS:
        hits = [f for f in files if f not in placed and any(fnmatch.fnmatch(f, p) for p in patterns)]
        if not hits:
            continue
        placed.update(hits)
        out += [f"### {what}", "", f"Written by: {', '.join(f'`{s.strip()}`' for s in scripts.split(','))}", ""]
        out += [f"- `{f}`" for f in hits] + [""]
    rest = [f for f in files if f not in placed]
    if rest:
        out += ["### Other recorded files", ""] + [f"- `{f}`" for f in rest] + [""]
    return "\n".join(out)


def replace_blocks(app, docname, source) -> None:
    def repl(m):
        kind = m.group(1)
        if kind == "module-map":
            return module_map()
        return results_index()
    source[0] = _FENCE.sub(repl, source[0])


def drop_type_docstrings(app, what, name, obj, options, lines) -> None:
    """A constant without a doc comment would show its type's docstring ("Built-in immutable
    sequence."): show nothing instead."""
    if what in ("data", "attribute") and lines:
        own = inspect.getdoc(type(obj)) or ""
        if "\n".join(lines).strip() == own.strip():
            lines.clear()


# --------------------------------------------------------------------------------------------
# cross-references to re-exported names

def _import_target(target: str, modname: str | None, clsname: str | None):
    """The object a docstring's ``target`` names, read as Python code does from ``modname``
    (and ``clsname``): a dotted path, or a name of the class, the module or a package above it.
    Returns ``(object, its owner class or None, attribute name)``, or None when nothing fits."""
    target = target.lstrip("~.")
    prefixes = []
    if modname:
        parts = modname.split(".")
        if clsname:
            prefixes.append(f"{modname}.{clsname}")
        prefixes += [".".join(parts[:k]) for k in range(len(parts), 0, -1)]
    for dotted in [target] + [f"{p}.{target}" for p in prefixes]:
        parts = dotted.split(".")
        for k in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:k]))
            except Exception:   # not a module (or one that does not import): a shorter prefix
                continue
            owner = None
            try:
                for attr in parts[k:]:
                    if inspect.isclass(obj) and attr in getattr(obj, "__dataclass_fields__", {}) \
                            and not hasattr(obj, attr):   # a dataclass field without a default
                        owner, obj = obj, None
                    else:
                        owner, obj = obj, getattr(obj, attr)
            except AttributeError:
                break
            return obj, owner if inspect.isclass(owner) else None, parts[-1]
    return None


def _home(obj, owner, attr: str) -> str | None:
    """The dotted name under which ``obj`` is documented: where it is defined."""
    if inspect.ismodule(obj):
        return obj.__name__
    if owner is not None:   # a method or attribute: on the class that defines it
        for base in owner.__mro__:
            if attr in vars(base) or attr in vars(base).get("__annotations__", {}):
                return f"{base.__module__}.{base.__qualname__}.{attr}"
    mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{mod}.{qual}" if isinstance(mod, str) and isinstance(qual, str) else None


def resolve_reexports(app, env, node, contnode):
    """A Python cross-reference Sphinx did not find (a name re-exported by a package, e.g.
    ``gaplab.core.Solver``, or a short name in a docstring, e.g. ``Solver.run``) links to the
    entry of the object where it is defined, found by importing it; a name that imports but has
    no entry is shown as code; a name that does not import is left to Sphinx's warning."""
    if node.get("refdomain") != "py":
        return None
    found = _import_target(node["reftarget"], node.get("py:module"), node.get("py:class"))
    if found is None:   # a name that does not exist: Sphinx warns (-n -W: the build fails)
        return None
    home = _home(*found)
    if home is not None and home != node["reftarget"]:
        domain = env.get_domain("py")
        hits = domain.resolve_any_xref(env, node["refdoc"], app.builder, home, node, contnode)
        if hits:
            return hits[0][1]
    # it exists but has no entry (an internal module, the standard library, Panel): shown as
    # code, without a link
    return contnode


def setup(app):
    app.connect("missing-reference", resolve_reexports)
    app.connect("autodoc-process-docstring", drop_type_docstrings, priority=400)  # before numpydoc
    app.connect("builder-inited", generate_lessons)
    app.connect("build-finished", write_textbook)
    app.connect("builder-inited", generate_api)
    app.connect("source-read", replace_blocks)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
