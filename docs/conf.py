"""Sphinx configuration of the gaplab documentation site.

Build (from the repository root, with the ``docs`` extra installed)::

    python -m sphinx -W -b html docs docs/_build/html

The lesson pages and the API reference are generated at build time from the code
(``docs/_ext/gaplab_docs.py``): nothing is downloaded while building.
"""
from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "gaplab"
author = "the gaplab developers"
copyright = "gaplab developers; paper: Osokin et al., ICML 2016"
try:
    from gaplab import __version__ as release
except ImportError:  # pragma: no cover - the build needs gaplab installed (pip install -e ".[docs]")
    raise SystemExit("the documentation build imports gaplab: pip install -e \".[docs]\" first")
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "gaplab_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "Thumbs.db", ".DS_Store"]
templates_path = []

# MyST: $...$ / $$...$$ math as in the app's lesson texts, ::: fences, heading anchors for links
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# every cross-reference must resolve (with -W a dangling one fails the build); re-exported and
# short names are resolved by gaplab_docs.resolve_reexports
nitpicky = True

# autodoc + numpydoc: members follow each module's __all__; no per-member stub pages
autodoc_member_order = "bysource"
autodoc_typehints = "none"          # numpydoc's Parameters sections give the types
autodoc_default_options = {"members": True, "show-inheritance": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()

html_theme = "pydata_sphinx_theme"
html_title = f"gaplab {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = []

# Formulas (the lessons are full of them): MathJax from the jupyter-server-mathjax package, copied
# into the site, so that the pages render their math offline too; MathJax's CDN only when that
# package is missing.
try:
    import jupyter_server_mathjax
except ImportError:  # pragma: no cover - the docs extra installs it
    pass
else:
    html_static_path.append(str(Path(jupyter_server_mathjax.__file__).parent / "static"))
    mathjax_path = "MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"   # the config the package ships
    mathjax2_config = {"tex2jax": {"inlineMath": [["\\(", "\\)"]],
                                   "displayMath": [["\\[", "\\]"]],
                                   "processEscapes": True,
                                   # MyST marks the page ignored and the math elements processed
                                   "processClass": "tex2jax_process|mathjax_process|math|output_area"},
                        # the package ships the STIX-Web fonts only
                        "HTML-CSS": {"availableFonts": [], "imageFont": None,
                                     "preferredFont": None, "webFont": "STIX-Web"},
                        "SVG": {"font": "STIX-Web"}}
html_last_updated_fmt = None
# pages without sub-pages: no empty "Section Navigation" column
html_sidebars = {page: [] for page in ("index", "figures", "benchmarks", "guide/adding_a_model")}
