"""The wheel holds every sub-package: pyproject lists packages by name (the repository root is
the package ``gaplab``), so a new package folder that is not listed would be missing from an
installed gaplab while the editable checkout still imports it."""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"gaplab"}
    for top in ("core", "app", "cli", "toy_examples", "assets"):
        for init in (ROOT / top).rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            found.add(".".join(("gaplab",) + init.parent.relative_to(ROOT).parts))
    assert found - listed == set(), f"package folders missing from pyproject's packages: {sorted(found - listed)}"
    assert listed - found == set(), f"pyproject lists packages that do not exist: {sorted(listed - found)}"
