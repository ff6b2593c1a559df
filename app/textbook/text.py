"""A lesson's Markdown as HTML with its formulas as MathML, converted when the page is built
(``latex2mathml``): browsers draw MathML themselves, so a page needs neither MathJax (1.8 MB
inlined) nor a network. The text's own HTML is escaped (Markdown without raw HTML); a formula
whose MathML holds anything but MathML elements and presentation attributes is shown as its
escaped LaTeX source instead.
"""
from __future__ import annotations

import functools
import html
import xml.etree.ElementTree as ET

__all__ = ["to_mathml", "markdown_html"]

#: the MathML elements a formula may hold (presentation MathML)
_TAGS = {"math", "mrow", "mi", "mo", "mn", "ms", "mtext", "mspace", "msub", "msup", "msubsup", "mfrac",
         "msqrt", "mroot", "mover", "munder", "munderover", "mstyle", "mtable", "mtr", "mtd", "mpadded",
         "mphantom", "menclose", "merror", "semantics", "annotation", "mfenced"}
#: the attributes a formula's elements may have (presentation only: no links, styles, events)
_ATTRS = {"xmlns", "display", "mathvariant", "stretchy", "fence", "separator", "width", "height", "depth",
          "minsize", "maxsize", "displaystyle", "scriptlevel", "accent", "accentunder", "columnalign",
          "rowspacing", "columnspacing", "lspace", "rspace", "form", "movablelimits", "linethickness",
          "notation", "symmetric", "largeop", "open", "close", "separators", "encoding", "columnlines",
          "rowlines", "frame", "equalrows", "equalcolumns", "align", "rowalign"}
_NS = "{http://www.w3.org/1998/Math/MathML}"
#: LaTeX that latex2mathml does not know, rewritten first
_REWRITE = ((r"\arg\max", r"\mathrm{arg\,max}"), (r"\arg\min", r"\mathrm{arg\,min}"))


def _safe(mathml: str) -> bool:
    try:
        root = ET.fromstring(mathml)
    except ET.ParseError:
        return False
    for el in root.iter():
        tag = el.tag[len(_NS):] if el.tag.startswith(_NS) else el.tag
        if tag not in _TAGS or any(a not in _ATTRS for a in el.attrib):
            return False
    return True


@functools.lru_cache(maxsize=2048)
def to_mathml(latex: str, display: bool = False) -> str:
    """MathML of a LaTeX formula (``display``: a block formula, scrolled sideways when wider than
    the column); its escaped source in ``<code>`` when it does not convert to safe MathML."""
    from latex2mathml.converter import convert
    src = latex.strip()
    for old, new in _REWRITE:
        src = src.replace(old, new)
    try:
        out = convert(src, display="block" if display else "inline")
    except Exception:   # latex2mathml raises its own errors for LaTeX it does not know
        out = ""
    if not out or not _safe(out):
        code = f"<code class='tex'>{html.escape(latex.strip())}</code>"
        return f"<div class='math-block'>{code}</div>" if display else code
    return f"<div class='math-block'>{out}</div>" if display else out


def _render_math(content: str, opts: dict) -> str:
    return to_mathml(content, bool(opts.get("display_mode")))


@functools.lru_cache(maxsize=1)
def _markdown():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    md = MarkdownIt("commonmark", {"html": False})   # raw HTML in a text is shown escaped
    md.use(dollarmath_plugin, renderer=_render_math, allow_labels=False)
    return md


def markdown_html(text: str) -> str:
    """HTML of a lesson's Markdown (``$...$`` and ``$$...$$`` as MathML)."""
    out = _markdown().render(str(text))
    return out.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "")   # HTML needs none
