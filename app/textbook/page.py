"""One lesson as one self-contained HTML page: the lesson's text (from
:data:`gaplab.app.lessons.LESSONS`, as the documentation's lesson pages), its formulas as MathML,
its explorable figures (:mod:`gaplab.app.textbook.registry`) with their data, and BokehJS inlined:
the page opens from a file, a USB stick or a course site, offline, with no server.

:func:`lesson_html` makes the page (``figures_only``: the figures alone, for the documentation
site, which frames them under its own copy of the text); :func:`export_lesson` writes it. The
lesson's text is escaped (Markdown without raw HTML); the figures' strings are escaped by their
callbacks.
"""
from __future__ import annotations

import html
from pathlib import Path

__all__ = ["MAX_PAGE_BYTES", "lesson_figures", "lesson_html", "export_lesson"]

#: the size budget of one page (bytes)
MAX_PAGE_BYTES = 3_000_000

_CSS = """
:root { color-scheme: light; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: #fff; color: #1f2328;
       font: 17px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 880px; margin: 0 auto; padding: 10px 16px 40px; overflow-wrap: break-word; }
.crumb { font-size: 13px; color: #57606a; border-bottom: 1px solid #d0d7de; padding-bottom: 6px; }
h1 { font-size: 1.55em; line-height: 1.25; margin: 0.6em 0 0.4em; }
p { margin: 0.6em 0; }
math { font-size: 1.08em; }
.math.block, .math-block { overflow-x: auto; overflow-y: hidden; max-width: 100%; margin: 0.6em 0; padding: 2px 0; }
code { font-size: 0.9em; background: #f3f4f6; padding: 0 3px; border-radius: 3px; }
pre { overflow-x: auto; font-size: 13px; line-height: 1.4; background: #f6f8fa; padding: 8px 10px; border-radius: 6px; }
pre code { background: none; padding: 0; }
.figure { margin: 22px 0 10px; border-top: 2px solid #2c7fb8; padding-top: 6px; }
.figure h2 { font-size: 1.05em; margin: 4px 0; color: #2c7fb8; }
.figure .bk-root, .figure > div { max-width: 100%; }
.caption { font-size: 14px; color: #444; margin: 4px 10px 0; }
.try { background: #e8f4fa; border-left: 4px solid #2c7fb8; padding: 4px 12px; margin: 16px 0; font-size: 15px; }
details { margin: 14px 0; } summary { cursor: pointer; color: #2c7fb8; }
footer { margin-top: 28px; font-size: 13px; color: #57606a; border-top: 1px solid #d0d7de; padding-top: 6px; }
body.figures-only main { max-width: none; padding: 4px 6px; }
@media (min-width: 1200px) { main { max-width: 1180px; } body { font-size: 19px; } }
@media (max-width: 480px) { body { font-size: 16px; } main { padding: 6px 8px 30px; } h1 { font-size: 1.35em; } }
"""

#: the figures-only page tells the page that frames it its height (the docs site sizes its iframe)
_HEIGHT_JS = """
<script>
(function () {
  function tell() { try { parent.postMessage({gaplabTextbookHeight: document.documentElement.scrollHeight,
                                             page: location.pathname.split("/").pop()}, "*"); } catch (e) {} }
  new ResizeObserver(tell).observe(document.body); window.addEventListener("load", tell);
})();
</script>"""


def lesson_figures(lesson: int, *, seed: int = 0, cache_folder=None) -> list:
    """[(figure module, its Bokeh layout)] of lesson page ``lesson``, the data read from the cache
    (:func:`gaplab.app.textbook.datacache.cached_data`) or computed."""
    from .datacache import cached_data
    from .registry import figure_modules
    return [(mod, mod.build_figure(cached_data(mod, seed, folder=cache_folder)))
            for mod in figure_modules(lesson)]


def _bokeh_parts(layouts) -> tuple[str, str, list[str]]:
    """(the inlined BokehJS, the script that renders the figures, one div per figure). Every
    CustomJS in a layout's ``tags`` runs once the document is ready (the figure's first drawing)."""
    from bokeh.document import Document
    from bokeh.embed import components
    from bokeh.embed.bundle import bundle_for_objs_and_resources
    from bokeh.models import CustomJS
    from bokeh.resources import INLINE
    if not layouts:
        return "", "", []
    doc = Document()
    for layout in layouts:
        doc.add_root(layout)
        for tag in layout.tags:
            if isinstance(tag, CustomJS):
                doc.js_on_event("document_ready", tag)
    script, divs = components(list(layouts))
    js = bundle_for_objs_and_resources(list(layouts), INLINE).scripts()
    return js, script, list(divs)


def _code_html(lesson) -> str:
    """The reference solver's functions the lesson names, as escaped code in a closed section."""
    import inspect

    from gaplab.core import reference
    if not lesson.code:
        return ""
    parts = []
    for name in lesson.code:
        src = inspect.getsource(getattr(reference, name))
        parts.append(f"<p><code>reference.{html.escape(name)}</code></p><pre><code>{html.escape(src)}</code></pre>")
    return ("<details><summary>The code of this step: the readable reference solver, "
            "<code>gaplab.core.reference</code></summary>" + "".join(parts) + "</details>")


def _figure_section(mod, div: str) -> str:
    title = html.escape(getattr(mod, "TITLE", "") or "")
    caption = html.escape(getattr(mod, "CAPTION", "") or "")
    return (f"<section class='figure'>{f'<h2>{title}</h2>' if title else ''}{div}"
            f"{f'<p class=caption>{caption}</p>' if caption else ''}</section>")


def lesson_html(lesson: int, *, seed: int = 0, cache_folder=None, figures_only: bool = False) -> str:
    """The HTML of lesson page ``lesson`` (1 .. the number of lessons), self-contained.

    Raises
    ------
    ValueError
        If ``lesson`` is not a lesson number.
    """
    import gaplab
    from gaplab.app.lessons import LESSONS

    from .text import markdown_html
    figs = lesson_figures(lesson, seed=seed, cache_folder=cache_folder)
    info = LESSONS[lesson - 1]
    js, script, divs = _bokeh_parts([layout for _, layout in figs])
    sections = "".join(_figure_section(mod, div) for (mod, _), div in zip(figs, divs))
    title = html.escape(info.title)
    if figures_only:
        body, cls, extra = sections, "figures-only", _HEIGHT_JS
    else:
        try_this = (f"<aside class='try'><b>In the app</b> (<code>gaplab app</code>, Lessons tab, page "
                    f"{lesson}): {markdown_html(info.try_this).strip()}</aside>") if info.try_this else ""
        nav = f"gaplab · lessons on Osokin et al., ICML 2016 · page {lesson} of {len(LESSONS)}"
        body = (f"<div class='crumb'>{html.escape(nav)}</div><h1>{title}</h1>{markdown_html(info.text)}"
                f"{sections}{try_this}{_code_html(info)}"
                f"<footer>Made by gaplab {html.escape(str(gaplab.__version__))}: the figures replay runs "
                f"of gaplab's solver (seed {int(seed)}) recorded when this page was built. The page needs "
                f"no network and no install.</footer>")
        cls, extra = "", ""
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{title} — gaplab</title><style>{_CSS}</style>{js}</head>"
            f"<body class='{cls}'><main>{body}</main>{script}{extra}</body></html>\n")


def export_lesson(lesson: int, out, *, seed: int = 0, cache_folder=None, figures_only: bool = False) -> Path:
    """Write lesson page ``lesson`` to ``out`` (atomically: an existing file stays whole on a
    failure). Returns the path.

    Raises
    ------
    ValueError
        If ``lesson`` is not a lesson number or the page exceeds :data:`MAX_PAGE_BYTES`.
    OSError
        If the file cannot be written.
    """
    from gaplab.core.atomic import check_output_path, write_text_atomic
    path = check_output_path(out, "--out")
    text = lesson_html(lesson, seed=seed, cache_folder=cache_folder, figures_only=figures_only)
    size = len(text.encode("utf-8"))
    if size > MAX_PAGE_BYTES:
        raise ValueError(f"lesson {lesson}'s page would be {size:,} bytes, over the budget of "
                         f"{MAX_PAGE_BYTES:,}: not written")
    return write_text_atomic(path, text)
