"""House rules of the source tree: a module fits in one read (≤ 600 lines), a function outside
the numba kernels fits on a screen or two (≤ 80 lines), every package folder says in its docstring
what lives there, so the architecture shows from the file list, and no merge leftover is tracked.

The rules hold for the whole package (core/, app/, cli/, toy_examples/ and the top-level modules);
the few modules that do not hold them yet are named, each with the reason, in
:data:`LONG_FUNCTIONS_ALLOWED` and :data:`LONG_MODULES_ALLOWED`.
Each test lists every offender in its message.
"""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
#: modules not yet under the function rule (path -> why), one line each: delete the line once the
#: module is split
LONG_FUNCTIONS_ALLOWED = {
}
#: modules not yet under the module-size rule (path -> why), one line each
LONG_MODULES_ALLOWED = {
    "toy_examples/hard_easy.py": "about 740 lines: the App. C example, runnable as one file",
}
#: names of merge and patch leftovers: patch's and git's ``.orig`` / ``.rej`` and git mergetool's
#: ``main_BACKUP_1234.py`` (older git: ``main.py.BACKUP.1234.py``) and its BASE, LOCAL, REMOTE
MERGE_LEFTOVER = re.compile(r"(\.orig|\.rej)$|[._](BACKUP|BASE|LOCAL|REMOTE)[._][0-9]+[^/]*$")
#: decorators (bare or called, plain or as ``numba.<name>`` / ``numba.extending.<name>``) that
#: make numba compile the function
NUMBA_DECORATORS = {"njit", "jit", "overload", "overload_method", "intrinsic", "generated_jit", "vectorize",
                    "guvectorize", "cfunc", "stencil"}
#: calls whose function arguments become kernel primitives (compiled by numba)
PRIMITIVE_REGISTRARS = {"register_model_kind"}
#: ``overload(f)`` / ``overload_method(T, "name")`` name the Python function they implement, they
#: do not compile it
_NAMES_A_TARGET = {"overload", "overload_method"}
#: folders that are not part of the package (environments, build output, docs tooling, tests)
NOT_PACKAGES = {".venv", "build", "dist", "docs", "tests", "benchmarks", "scripts", "examples", ".git"}


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.as_posix()


def _package_files(pattern: str = "*.py"):
    """The package's files matching ``pattern``: top-level ones and those under its folders (not
    walking the environments, build output, tests and other folders that are not the package)."""
    out = list(ROOT.glob(pattern))
    for top in ROOT.iterdir():
        if top.is_dir() and top.name not in NOT_PACKAGES and not top.name.startswith((".", "_")):
            out += [p for p in top.rglob(pattern) if "__pycache__" not in p.parts]
    return sorted(out)


def _package_modules():
    """Every module of the package: the top-level ones and those under its package folders."""
    return _package_files("*.py")


def _callee_name(node) -> str | None:
    """``njit`` for ``njit``, ``njit(...)``, ``numba.njit``, ``numba.njit(...)``, ``nb.extending.overload``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _is_numba_decorated(fn) -> bool:
    return any(_callee_name(d) in NUMBA_DECORATORS for d in fn.decorator_list)


def _compiled_by_call(tree) -> set:
    """Names of module functions compiled by a call rather than a decorator:
    ``njit(f)``, ``njit(cache=True)(f)``, ``register_model_kind(Arrays, "kind", scores=f, ...)``."""
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        args = list(node.args) + [k.value for k in node.keywords]
        outer = node.func
        if _callee_name(node) in (NUMBA_DECORATORS - _NAMES_A_TARGET) | PRIMITIVE_REGISTRARS or (
                isinstance(outer, ast.Call) and _callee_name(outer) in NUMBA_DECORATORS - _NAMES_A_TARGET):
            names.update(a.id for a in args if isinstance(a, ast.Name))
    return names


def function_lengths(path: Path):
    """(qualified name, first line, lines) of every function and method of a module that numba
    does not compile; functions nested in a compiled one are compiled with it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    by_call = _compiled_by_call(tree)
    out = []

    def visit(node, prefix, compiled):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                comp = compiled or _is_numba_decorated(child) or (prefix == "" and child.name in by_call)
                if not comp:
                    out.append((name, child.lineno, child.end_lineno - child.lineno + 1))
                visit(child, name + ".", comp)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", compiled)
            else:
                visit(child, prefix, compiled)

    visit(tree, "", False)
    return out


def modules_over(paths, limit=MAX_MODULE_LINES, exempt=LONG_MODULES_ALLOWED):
    """(lines, path) of the modules over ``limit`` lines, longest first, skipping ``exempt`` paths."""
    sizes = [(len(p.read_text(encoding="utf-8").splitlines()), _rel(p)) for p in paths]
    return sorted(((n, name) for n, name in sizes if n > limit and name not in exempt), reverse=True)


def functions_over(paths, limit=MAX_FUNCTION_LINES, exempt=LONG_FUNCTIONS_ALLOWED):
    """(lines, "path:line name") of the functions over ``limit`` lines that numba does not compile,
    longest first, skipping modules in ``exempt``."""
    over = []
    for p in paths:
        if _rel(p) in exempt:
            continue
        for name, line, n in function_lengths(p):
            if n > limit:
                over.append((n, f"{_rel(p)}:{line} {name}"))
    return sorted(over, reverse=True)


def test_every_module_is_at_most_600_lines():
    over = modules_over(_package_modules())
    assert not over, (f"{len(over)} modules exceed {MAX_MODULE_LINES} lines (split them by concern):\n"
                      + "\n".join(f"  {name}: {n} lines" for n, name in over))


def test_every_function_outside_the_numba_kernels_is_at_most_80_lines():
    over = functions_over(_package_modules())
    assert not over, (f"{len(over)} functions (not compiled by numba) exceed {MAX_FUNCTION_LINES} "
                      "lines:\n" + "\n".join(f"  {where}: {n} lines" for n, where in over))


def test_the_exemptions_name_modules_that_exist():
    """An exemption outliving its module (renamed, split) would exempt whatever takes its name."""
    gone = sorted(m for m in set(LONG_FUNCTIONS_ALLOWED) | set(LONG_MODULES_ALLOWED) if not (ROOT / m).is_file())
    assert not gone, f"the exemptions name modules that do not exist: {gone}"


def tracked_merge_leftovers(names) -> list[str]:
    """The names (as ``git ls-files`` prints them) of merge and patch leftovers."""
    return sorted(n for n in names if MERGE_LEFTOVER.search(n))


def test_no_merge_leftover_is_tracked():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (an installed copy): nothing is tracked")
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    leftovers = tracked_merge_leftovers(names.decode("utf-8", "surrogateescape").split("\0"))
    assert not leftovers, ("merge or patch leftovers are tracked (git rm them; the merged file is the "
                           "source):\n  " + "\n  ".join(leftovers))


def _package_dirs():
    dirs = [ROOT]
    for init in _package_files("__init__.py"):
        if init.parent != ROOT:
            dirs.append(init.parent)
    return sorted(dirs)


def _members(pkg: Path) -> list[str]:
    """The public modules and sub-packages of a package folder."""
    names = [p.stem for p in pkg.glob("*.py") if not p.name.startswith("_")]
    if pkg == ROOT:  # the repository root is the package; its folders that are not packages do not count
        names = [n for n in names if n not in NOT_PACKAGES]
    names += [d.name for d in pkg.iterdir() if (d / "__init__.py").is_file() and d.name not in NOT_PACKAGES
              and not d.name.startswith((".", "_"))]
    return sorted(names)


def docstring_problem(pkg: Path) -> str | None:
    """What a package folder's docstring lacks: a docstring, or the names of its members."""
    doc = ast.get_docstring(ast.parse((pkg / "__init__.py").read_text(encoding="utf-8"))) or ""
    if len(doc.split()) < 8:
        return "no docstring saying what the package holds"
    unnamed = [m for m in _members(pkg) if not re.search(rf"(?<!\w){re.escape(m)}\b", doc)]
    if unnamed:
        return f"the docstring does not name {', '.join(unnamed)}"
    return None


def test_every_package_docstring_says_what_lives_there():
    problems = []
    for pkg in _package_dirs():
        problem = docstring_problem(pkg)
        if problem:
            problems.append(f"  {_rel(pkg / '__init__.py')}: {problem}")
    assert not problems, "package docstrings must say what lives where:\n" + "\n".join(problems)


def test_no_two_public_classes_share_a_name():
    """One name, one meaning: a class name found in two modules (say a step record of the app
    and one of the reference solver) makes every import and every docstring mention ambiguous."""
    where: dict[str, list[str]] = {}
    for p in _package_modules():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where.setdefault(node.name, []).append(f"{_rel(p)}:{node.lineno}")
    shared = {name: places for name, places in where.items() if len(places) > 1}
    assert not shared, "classes defined under the same name in several modules:\n" + "\n".join(
        f"  {name}: {', '.join(places)}" for name, places in sorted(shared.items()))


RESULTS = ROOT / "benchmarks" / "results"
#: a path to a recorded result in Markdown: a link, a figure directive or a code span
RESULT_PATH = re.compile(r"benchmarks/results/([A-Za-z0-9_.-]+\.[a-z0-9]+)\b")
#: a bare result-like file name in a code span (``fig8.json``)
RESULT_NAME = re.compile(r"`([A-Za-z0-9_.-]+\.(?:json|jsonl|png))`")
#: bare names the docs use for files of a path store, not for recorded results
NOT_RESULTS = {"manifest.json"}


def _doc_pages():
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def unindexed_results(results: Path = RESULTS) -> list[str]:
    """Files of the results folder that its index (README.md there) does not name in a code span."""
    index = (results / "README.md").read_text(encoding="utf-8")
    return sorted(p.name for p in results.iterdir() if p.name != "README.md" and f"`{p.name}`" not in index)


def dangling_result_links(pages, results: Path = RESULTS) -> list[str]:
    """References to recorded results in the pages that name no file of the results folder."""
    bad = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        names = set(RESULT_PATH.findall(text)) | (set(RESULT_NAME.findall(text)) - NOT_RESULTS)
        bad += [f"{_rel(page) if page.is_relative_to(ROOT) else page.name}: {n}" for n in sorted(names)
                if not (results / n).is_file()]
    return bad


def test_every_recorded_result_is_in_the_index():
    missing = unindexed_results()
    assert not missing, ("benchmarks/results/README.md is the one index of the recorded results; it does not list "
                         "(with the script, the command and what it measures):\n  " + "\n  ".join(missing))


def test_every_reference_to_a_recorded_result_resolves():
    bad = dangling_result_links(_doc_pages() + [RESULTS / "README.md"])
    assert not bad, "references to files that are not in benchmarks/results/:\n  " + "\n  ".join(bad)


# ------------------------------------------------------------------ the checks above can fail

def test_the_function_rule_counts_python_and_exempts_only_numba_compiled_code(tmp_path):
    def body(indent):
        return "".join(f"{' ' * indent}x{i} = {i}\n" for i in range(90))
    src = ("import numba\nfrom numba import njit\nfrom numba.extending import overload\n"
           f"def plain(a):\n{body(4)}    return a\n"
           f"@njit(cache=True)\ndef kernel(a):\n{body(4)}    return a\n"
           f"@numba.njit\ndef kernel2(a):\n{body(4)}    return a\n"
           "def stub(a):\n    pass\n"
           f"@overload(stub)\ndef ov(a):\n    def impl(a):\n{body(8)}        return a\n    return impl\n"
           f"def prim(M, i):\n{body(4)}    return i\n"
           "register_model_kind(A, 'k', scores=prim)\n"
           f"def later(a):\n{body(4)}    return a\n"
           "compiled_later = njit(cache=True)(later)\n"
           f"class C:\n    def method(self):\n{body(8)}        return 1\n")
    path = tmp_path / "m.py"
    path.write_text(src, encoding="utf-8")
    found = {name: n for name, _, n in function_lengths(path)}
    assert found == {"plain": 92, "stub": 2, "C.method": 92}


def test_the_docstring_rule_wants_every_member_named(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for name in ("alpha.py", "beta.py", "_private.py", "sub/__init__.py"):
        (pkg / name).write_text("", encoding="utf-8")
    assert _members(pkg) == ["alpha", "beta", "sub"]
    init = pkg / "__init__.py"
    init.write_text("", encoding="utf-8")
    assert docstring_problem(pkg) == "no docstring saying what the package holds"
    init.write_text('"""Things: ``alpha`` holds the first kind of thing, pkg.beta_x is no name."""\n', encoding="utf-8")
    assert docstring_problem(pkg) == "the docstring does not name beta, sub"
    init.write_text('"""Things: ``alpha`` the first, ``beta`` the second, ``sub`` the rest."""\n', encoding="utf-8")
    assert docstring_problem(pkg) is None


def test_the_results_checks_find_an_unlisted_file_and_a_dangling_link(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "README.md").write_text("| `a.json` | `python a.py` |\n", encoding="utf-8")
    (results / "a.json").write_text("{}", encoding="utf-8")
    (results / "b_session7.json").write_text("{}", encoding="utf-8")
    assert unindexed_results(results) == ["b_session7.json"]
    page = tmp_path / "page.md"
    page.write_text("See [a](benchmarks/results/a.json), `gone.png` and ../benchmarks/results/old_s8.json; "
                    "a store holds `manifest.json`.\n", encoding="utf-8")
    assert dangling_result_links([page], results) == ["page.md: gone.png", "page.md: old_s8.json"]


def test_the_size_checks_find_long_modules_and_functions_and_honour_the_exemptions(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(85))
    long_fn = tmp_path / "long_fn.py"
    long_fn.write_text(f"def f():\n{body}\n\ndef g():\n    return 1\n", encoding="utf-8")
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * 601, encoding="utf-8")
    assert [(n, where.rsplit("/", 1)[-1]) for n, where in functions_over([long_fn], exempt=set())] == \
        [(86, "long_fn.py:1 f")]
    assert functions_over([long_fn], exempt={_rel(long_fn): "why"}) == []
    assert [n for n, _ in modules_over([big, long_fn], exempt={})] == [601]
    assert modules_over([big], exempt={_rel(big): "why"}) == []


def test_the_leftover_check_knows_the_merge_tools_names():
    names = ["core/models/pose/model.py.orig", "app/main.py.rej", "app/main_BACKUP_1234.py",
             "app/main.BACKUP.1234.py", "app/main.BASE.1234.py", "app/main.LOCAL.1234.py",
             "app/main.REMOTE.1234.py", "app/main.py", "docs/origin.md", "core/orig.py", "tests/data/a.rejected"]
    assert tracked_merge_leftovers(names) == sorted(["core/models/pose/model.py.orig", "app/main.py.rej",
                                                     "app/main_BACKUP_1234.py", "app/main.BACKUP.1234.py", "app/main.BASE.1234.py",
                                                     "app/main.LOCAL.1234.py", "app/main.REMOTE.1234.py"])
