"""The README is the users' front page: short, its commands the ones CI runs, and every link it
gives leads to a file (and heading) that exists, so nothing it points to is lost."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_is_short():
    assert len(README.splitlines()) <= 250


def test_readme_test_command_is_the_one_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = next(line for line in ci.splitlines() if "pytest -q" in line and "pip install" in line)
    assert command.strip() in README


def test_readme_links_lead_to_existing_files_and_headings():
    links = LINK.findall(README)
    assert len(links) >= 10, "the README should point to the docs and the recorded results"
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        target, _, anchor = link.partition("#")
        path = ROOT / target
        assert path.exists(), f"README links to {link}, which does not exist"
        if anchor:
            headings = [line.lstrip("#") for line in path.read_text(encoding="utf-8").splitlines()
                        if line.startswith("#")]
            assert anchor in {_slug(h) for h in headings}, f"README links to {link}: no such heading"


def test_readme_names_no_machine_path():
    assert "/work/" not in README and "/home/" not in README


def test_every_docs_guide_page_is_linked_from_the_readme():
    for page in sorted((ROOT / "docs" / "guide").glob("*.md")):
        assert f"(docs/guide/{page.name}" in README, page.name
