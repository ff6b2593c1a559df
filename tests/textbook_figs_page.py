"""What the browser tests of the textbook's explorable figures need: a figure saved as one
standalone HTML file (BokehJS inlined), opened from ``file://`` with every other request aborted,
console errors collected, and page-side access to the document's models by name."""
import contextlib
import math
from pathlib import Path

#: page JS: the JSON-able data of a named ColumnDataSource (typed arrays as lists, NaN as null)
SOURCE_JS = """(name) => {
  const m = Bokeh.documents[0].get_model_by_name(name);
  if (m === null) { return null; }
  const out = {};
  for (const [k, v] of m.data.entries ? m.data.entries() : Object.entries(m.data)) {
    out[k] = Array.from(v, (x) => (typeof x === 'number' && !isFinite(x)) ? null : x);
  }
  return out;
}"""

#: page JS: set a property of a named model (the CustomJS callbacks run as on a user's input)
SET_JS = """([name, attr, value]) => {
  const m = Bokeh.documents[0].get_model_by_name(name);
  if (m === null) { throw new Error('no model named ' + name); }
  m[attr] = value;
  return true;
}"""

#: page JS: a property of a named model
GET_JS = """([name, attr]) => {
  const m = Bokeh.documents[0].get_model_by_name(name);
  return m === null ? null : m[attr];
}"""

#: page JS: true when the page is wider than the window (a horizontal scroll bar)
HSCROLL_JS = "() => document.documentElement.scrollWidth > window.innerWidth + 1"


#: page JS: the rightmost edge (px) of every canvas and text block, shadow roots included (a
#: figure or a sentence cut off at the window's right edge shows here even without a scroll bar)
RIGHT_EDGE_JS = """() => {
  let right = 0;
  const walk = (root) => {
    for (const e of root.querySelectorAll('*')) {
      if (e.tagName === 'CANVAS' || (e.children.length === 0 && e.textContent.trim() !== '')) {
        const r = e.getBoundingClientRect();
        if (r.width > 0) { right = Math.max(right, r.right); }
      }
      if (e.shadowRoot) { walk(e.shadowRoot); }
    }
  };
  walk(document);
  return right;
}"""


@contextlib.contextmanager
def only_used_external_resources(layout):
    """Within the block, Bokeh's resources name the external scripts and stylesheets
    (``__javascript__``, ``__css__``) of the models ``layout`` uses only. Bokeh collects those
    of every model class imported in the process: once Panel is imported, a standalone file
    would load Panel's ES-module shim from a relative path (a console error offline)."""
    from bokeh.resources import Resources
    used = sorted({type(m) for m in layout.references()}, key=lambda c: c.__qualified_model__)
    original = Resources._collect_external_resources

    def collect(self, resource_attr):
        out = []
        for cls in used:
            ext = getattr(cls, resource_attr, None)
            for e in ([ext] if isinstance(ext, str) else list(ext or [])):
                if e not in out:
                    out.append(e)
        return out

    Resources._collect_external_resources = collect
    try:
        yield
    finally:
        Resources._collect_external_resources = original


def save_standalone(layout, path: Path, title: str) -> Path:
    """``layout`` as one self-contained HTML file (BokehJS inlined, no external resource of a
    model it does not use): ``path``."""
    from bokeh.embed import file_html
    from bokeh.resources import INLINE
    with only_used_external_resources(layout):
        html = file_html(layout, resources=INLINE, title=title)
    path.write_text(html, encoding="utf-8")
    return path


@contextlib.contextmanager
def offline_page(browser, html: Path, viewport=(1280, 800), ready_source: str | None = None):
    """A page on ``html`` from file:// with every non-file request aborted; yields
    (page, errors, blocked): console errors and page errors, and the URLs that were refused.
    Waits for BokehJS and, when ``ready_source`` is given, for that source to hold data."""
    ctx = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    blocked = []

    def route(r):
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(html.resolve().as_uri())
        page.wait_for_function("() => window.Bokeh !== undefined && Bokeh.documents.length > 0")
        if ready_source:
            page.wait_for_function("(n) => { const m = Bokeh.documents[0].get_model_by_name(n);"
                                   " return m !== null && m.get_length() > 0; }", arg=ready_source)
        yield page, errors, blocked
    finally:
        ctx.close()


def source(page, name: str) -> dict:
    return page.evaluate(SOURCE_JS, name)


def set_model(page, name: str, attr: str, value) -> None:
    page.evaluate(SET_JS, [name, attr, value])


def get_model(page, name: str, attr: str):
    return page.evaluate(GET_JS, [name, attr])


def close(a, b, rel=1e-9, abs_=1e-12) -> bool:
    """Two floats (or None for NaN) equal to round-off."""
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=abs_)
