"""Helpers for driving the served app from tests and benchmarks: a free port, a server
subprocess on 127.0.0.1, and the headless Chromium settings (Debian's chromium + Playwright).

Nothing here is imported by the app itself.
"""
from __future__ import annotations

import os
import queue
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["CHROMIUM_ARGS", "find_chromium", "free_port", "AppServer", "JupyterLabServer", "text_layout",
           "layout_problems", "shadow_texts_js", "busy_machine", "BUSY_PROCESSES"]

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium() -> str | None:
    """Path of a Chromium executable ($GAPLAB_CHROMIUM, /usr/bin/chromium, chromium on PATH)."""
    for cand in (os.environ.get("GAPLAB_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser")):
        if cand and Path(cand).exists():
            return cand
    return None


#: the busy laptop of a lecture (a browser, slides and a video call beside the app): this many
#: CPU-bound processes, a load of about this much on top of whatever runs
BUSY_PROCESSES = 2

#: a CPU-bound loop that stops by itself when the process that started it is gone (its parent
#: id is no longer the one it was given: it was re-parented, also before it started), so a killed test or benchmark leaves no spinning process
_SPIN = ("import os, sys\nparent = int(sys.argv[1])\nx = 0\n"
         "while os.getppid() == parent:\n    for i in range(200000):\n        x = (x * 31 + i) & 0xFFFF\n")


class busy_machine:
    """Context manager: ``n`` CPU-bound processes run for its duration (the busy-laptop condition
    of the lecture targets: a load of about ``n`` on top of the app), stopped on exit (terminated,
    killed after 5 s); a process whose parent died stops by itself within a fraction of a second.

    Parameters
    ----------
    n : int, default BUSY_PROCESSES
        Number of spinning processes, 1 … 64.

    Raises
    ------
    ValueError
        ``n`` outside 1 … 64.
    """

    def __init__(self, n: int = BUSY_PROCESSES):
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 64:
            raise ValueError(f"busy_machine: n must be an integer in 1 … 64, got {n!r}")
        self.n = n
        self.procs: list[subprocess.Popen] = []

    def __enter__(self):
        try:
            for _ in range(self.n):
                self.procs.append(subprocess.Popen([sys.executable, "-c", _SPIN, str(os.getpid())], stdin=subprocess.DEVNULL,
                                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    @property
    def pids(self) -> list[int]:
        """Process ids of the spinning processes."""
        return [p.pid for p in self.procs]

    def running(self) -> int:
        """How many of the spinning processes are still running."""
        return sum(p.poll() is None for p in self.procs)

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        return False


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


class AppServer:
    """``gaplab.app.serve.serve`` in a subprocess on 127.0.0.1 (stderr to a log file).

    Use as a context manager; ``url`` is ready when ``__enter__`` returns. With ``wait_warm``
    ``__enter__`` also waits (up to ``timeout`` seconds) until the server has compiled its solver
    kernels and loaded the default dataset in the background.
    """

    def __init__(self, log_path, port: int | None = None, *, session_lifetime_ms: int = 1000,
                 timeout: float = 90.0, env: dict | None = None, wait_warm: bool = False):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = Path(log_path)
        self.timeout = timeout
        self.env = dict(os.environ, **(env or {}))
        self.proc: subprocess.Popen | None = None
        self.ready_s = float("nan")
        self.wait_warm = wait_warm
        code = (f"import sys; from gaplab.app.serve import serve; sys.exit(serve(port={self.port}, "
                f"address='127.0.0.1', unused_session_lifetime_ms={session_lifetime_ms}, "
                f"check_unused_sessions_ms={max(200, session_lifetime_ms // 2)}))")
        self.cmd = [sys.executable, "-c", code]

    def __enter__(self):
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "w")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT, env=self.env)
        deadline = t0 + self.timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"app server exited with {self.proc.returncode}:\n{self.log()}")
            log = self.log()
            # "serving on" is printed once the port is bound (no session made); with wait_warm
            # also wait for the background compile of the solver kernels to finish
            if "serving on" in log and (not self.wait_warm or "solver kernels and default dataset ready" in log):
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=2):
                        self.ready_s = time.perf_counter() - t0
                        return self
                except OSError:
                    pass
            time.sleep(0.1)
        self.__exit__(None, None, None)
        raise TimeoutError(f"app server not ready after {self.timeout} s:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text()
        except OSError:
            return ""

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if getattr(self, "_log", None):
            self._log.close()
        return False


#: JavaScript: ``find(root, sel)``, the first element matching ``sel`` in ``root`` or in any
#: shadow root below it (Panel renders each pane in a shadow root), and ``text(el)``, its text
#: (a pane's host element: the text of its shadow root), null for no element.
_SHADOW_FIND_JS = """
    const find = (root, sel) => {
        const hit = root.querySelector(sel);
        if (hit) { return hit; }
        for (const el of root.querySelectorAll('*')) {
            if (el.shadowRoot) { const h = find(el.shadowRoot, sel); if (h) { return h; } }
        }
        return null;
    };
    const text = (e) => e ? (e.shadowRoot ? e.shadowRoot.textContent : e.textContent) : null;"""


def shadow_texts_js(**selectors: str) -> str:
    """A JavaScript function for Playwright's ``page.evaluate``: ``{name: text}`` with, for each
    ``name=selector``, the text of the first element matching the CSS selector in the page or in
    any shadow root (None when there is none)."""
    import json
    fields = ", ".join(f"{json.dumps(k)}: text(find(document, {json.dumps(sel)}))" for k, sel in selectors.items())
    return "() => {" + _SHADOW_FIND_JS + "\n    return {" + fields + "};\n}"


#: JavaScript run in the page by :func:`text_layout`: every visible text fragment of the page
#: (shadow roots included), one box per line fragment, with its computed font size, the boxes
#: of the ancestors that clip it (overflow other than "visible") and what the browser shows at
#: its shown part's centre and corners when that is another element (``document.elementFromPoint``
#: followed into shadow roots): the element that covers it.
_TEXT_LAYOUT_JS = r"""
([skipSel, within]) => {
  const out = [];
  const skipTags = new Set(["STYLE", "SCRIPT", "NOSCRIPT", "TEMPLATE", "OPTION", "TITLE", "TEXTAREA"]);
  const parentOf = (el) => el.parentElement || (el.parentNode && el.parentNode.host) || null;
  const clipOf = (el) => {
    let r = null;
    for (let a = parentOf(el); a; a = parentOf(a)) {
      const cs = getComputedStyle(a);
      if (cs.position === "fixed") break;
      const ox = cs.overflowX, oy = cs.overflowY;
      if ((ox !== "visible" || oy !== "visible") && a !== document.documentElement && a !== document.body) {
        const b = a.getBoundingClientRect();
        // a scroll box's content box; text below it is reachable by its vertical scrollbar
        const box = {x0: b.left + a.clientLeft, y0: b.top + a.clientTop,
                     x1: b.left + a.clientLeft + a.clientWidth, y1: b.top + a.clientTop + a.clientHeight,
                     scrollX: ox === "auto" || ox === "scroll", scrollY: oy === "auto" || oy === "scroll",
                     cls: (a.className && a.className.baseVal === undefined ? a.className : a.tagName),
                     cue: !!(a.classList && a.classList.contains("gaplab-scroll-cue"))};
        r = r || []; r.push(box);
      }
    }
    return r;
  };
  // what the browser shows at (x, y): the topmost element, followed into shadow roots
  const hitAt = (x, y) => {
    let h = document.elementFromPoint(x, y);
    while (h && h.shadowRoot) {
      const inner = h.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === h) break;
      h = inner;
    }
    return h;
  };
  const within_ = (a, b) => {   // a is b or inside b (across shadow roots)
    for (let e = a; e; e = parentOf(e)) if (e === b) return true;
    return false;
  };
  const describe = (e) => e.tagName.toLowerCase() + (typeof e.className === "string" && e.className.trim()
      ? "." + e.className.trim().split(/\s+/).slice(0, 2).join(".") : "");
  // the element covering the shown part of a text fragment of el: sampled at its centre and
  // four corners (inset, so a neighbouring line's box does not count); null when the text is
  // on top (or out of the viewport, where the browser cannot tell)
  const coverOf = (el, r, clips) => {
    let x0 = r.left, y0 = r.top, x1 = r.right, y1 = r.bottom;
    for (const c of clips) { x0 = Math.max(x0, c.x0); y0 = Math.max(y0, c.y0); x1 = Math.min(x1, c.x1); y1 = Math.min(y1, c.y1); }
    x0 = Math.max(x0, 0); y0 = Math.max(y0, 0); x1 = Math.min(x1, window.innerWidth - 1); y1 = Math.min(y1, window.innerHeight - 1);
    if (x1 - x0 < 2 || y1 - y0 < 2) return null;
    const dx = Math.min(3, (x1 - x0) / 4), dy = (y1 - y0) / 4;
    const pts = [[(x0 + x1) / 2, (y0 + y1) / 2], [x0 + dx, y0 + dy], [x1 - dx, y0 + dy], [x0 + dx, y1 - dy], [x1 - dx, y1 - dy]];
    let by = null, n = 0;
    for (const [x, y] of pts) {
      const h = hitAt(x, y);
      if (!h || within_(h, el) || within_(el, h)) continue;   // the text itself, or an ancestor (pointer-events: none)
      if (skipSel && h.closest && h.closest(skipSel)) continue;   // a toast or tooltip: transient
      n += 1; by = by || h;
    }
    return n >= 2 ? describe(by) : null;
  };
  const visit = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) visit(el.shadowRoot);
      if (skipTags.has(el.tagName)) continue;
      if (skipSel && el.closest(skipSel)) continue;
      let texts = [];
      for (const n of el.childNodes) {
        if (n.nodeType === 3 && n.textContent.trim()) texts.push(n);
      }
      if (!texts.length) continue;
      if (!el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) continue;
      const cs = getComputedStyle(el);
      const font = parseFloat(cs.fontSize);
      let clips = null;
      for (const n of texts) {
        const range = document.createRange();
        range.selectNodeContents(n);
        for (const r of range.getClientRects()) {
          if (r.width < 1 || r.height < 1) continue;
          if (clips === null) clips = clipOf(el) || [];
          out.push({text: n.textContent.trim().slice(0, 60), x0: r.left, y0: r.top, x1: r.right,
                    y1: r.bottom, font: font, tag: el.tagName,
                    cls: (typeof el.className === "string" ? el.className : ""),
                    covered: coverOf(el, r, clips),
                    clips: clips.map(c => [c.x0, c.y0, c.x1, c.y1, c.scrollX, c.scrollY, String(c.cls).slice(0, 40), c.cue])});
        }
      }
    }
  };
  // text inside input boxes and dropdowns is not DOM text: measure each visible one's shown
  // value (a select's chosen option) in its computed font against the box's inner width
  const inputs = [];
  const canvas = document.createElement("canvas").getContext("2d");
  const textTypes = new Set(["", "text", "number", "search", "email", "url", "tel", "password"]);
  const visitInputs = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) visitInputs(el.shadowRoot);
      const isSelect = el.tagName === "SELECT" && !el.multiple;
      if (!(isSelect || (el.tagName === "INPUT" && textTypes.has((el.getAttribute("type") || "").toLowerCase())))) continue;
      if (skipSel && el.closest(skipSel)) continue;
      if (!el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) continue;
      const text = isSelect ? (el.selectedIndex >= 0 ? el.options[el.selectedIndex].text : "") : el.value;
      if (!text || !text.trim()) continue;
      const cs = getComputedStyle(el);
      canvas.font = `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      if (cs.letterSpacing && cs.letterSpacing !== "normal") canvas.letterSpacing = cs.letterSpacing;
      const need = canvas.measureText(text).width;
      // a select's arrow is drawn in its right padding (Bokeh) or, native, beside the text
      const arrow = isSelect && cs.appearance !== "none" ? 20 : 0;
      const have = el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - arrow;
      const b = el.getBoundingClientRect();
      inputs.push({text: text.slice(0, 60), need: need, have: have, font: parseFloat(cs.fontSize),
                   tag: el.tagName, x0: b.left, y0: b.top, x1: b.right, y1: b.bottom});
    }
  };
  // drawn boxes that are not DOM text: canvases (Bokeh plots with their axis labels),
  // images and SVGs, each with its box in the viewport
  const pictures = [];
  const visitPictures = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) visitPictures(el.shadowRoot);
      if (!(el.tagName === "CANVAS" || el.tagName === "IMG" || el.tagName === "svg")) continue;
      if (skipSel && el.closest(skipSel)) continue;
      if (!el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) continue;
      const b = el.getBoundingClientRect();
      if (b.width < 4 || b.height < 4) continue;
      pictures.push({tag: el.tagName, x0: b.left, y0: b.top, x1: b.right, y1: b.bottom,
                     cls: (typeof el.className === "string" ? el.className : "")});
    }
  };
  for (const root of (within ? document.querySelectorAll(within) : [document])) {
    visit(root);
    visitInputs(root);
    visitPictures(root);
  }
  const se = document.scrollingElement || document.documentElement;
  return {boxes: out, inputs: inputs, pictures: pictures, vw: window.innerWidth, vh: window.innerHeight,
          scrollW: document.documentElement.scrollWidth, scrollH: se.scrollHeight, scrollY: window.scrollY};
}
"""


def text_layout(page, skip: str | None = ".notyf, .notyf-announcer, .bk-tooltip, .bk-tool-overflow, .Toastify, .jp-toast-message",
                within: str | None = None) -> dict:
    """Every visible DOM text fragment of a Playwright ``page`` (shadow roots included): a dict
    with ``boxes`` (one per line fragment: ``text``, ``x0 y0 x1 y1`` in CSS px of the viewport,
    computed ``font`` size in px, the clipping ancestors' boxes ``clips``), ``inputs`` (one per
    visible text input box or dropdown with a value: the shown ``text``, its width ``need`` in
    the input's computed font, the input's inner width ``have`` (a dropdown's arrow excluded),
    ``font``, ``tag`` and its box ``x0 y0 x1 y1``), the viewport size
    ``vw``, ``vh`` and the document's ``scrollW``. Text drawn in canvases (Bokeh plots) is not
    DOM text and is not here. ``skip``: a CSS selector of subtrees left out (transient toasts:
    Panel's and JupyterLab's notifications, and notyf's screen-reader announcer, a clipped 1-px
    live region that repeats a toast's text and is never drawn; tooltips, the "⋯" glyph of a plot toolbar's overflow button: an icon like the tool icons).
    ``within``: a CSS selector of the elements whose text is measured (default: the page)."""
    return page.evaluate(_TEXT_LAYOUT_JS, [skip, within])


def _fold_problems(layout: dict, tol: float) -> list[str]:
    """What is below the fold of a page that must fit its viewport (see :func:`layout_problems`)."""
    vh, out = layout["vh"], []
    sh = layout.get("scrollH")
    if sh is not None and sh > vh + tol:
        out.append(f"the page scrolls: scrollHeight {sh:.0f} px > the viewport's {vh} px")
    sy = layout.get("scrollY", 0)   # boxes are measured in the viewport as scrolled: from its top unscrolled
    items = [(b, repr(b["text"])) for b in layout["boxes"]]
    items += [(b, f"{b['tag'].lower()} value {b['text']!r}") for b in layout.get("inputs", ())]
    items += [(b, f"a {b['tag'].lower()}" + (f".{b['cls'].split()[0]}" if b.get("cls", "").strip() else ""))
              for b in layout.get("pictures", ())]
    for b, what in items:
        y0, y1 = b["y0"] + sy, b["y1"] + sy
        if y1 > vh + tol:
            how = "below the viewport's bottom" if y0 >= vh - tol else "cut by the viewport's bottom"
            out.append(f"{how} ({vh} px): {what} at ({b['x0']:.0f}, {y0:.0f})–({b['x1']:.0f}, {y1:.0f})")
    return out


def layout_problems(layout: dict, *, min_font: float | None = None, tol: float = 1.5,
                    fold: bool = False) -> list[str]:
    """What is wrong with a :func:`text_layout`: text fragments that overlap each other (more
    than ``tol`` px wide and 40 % of the lower one's height), text cut by a clipping ancestor
    (``overflow: hidden`` or a horizontal scroll; a line cut part-way by the edge of a vertical
    scroll box, e.g. the lower half of a row of words; lines hidden whole by a vertical scroll
    box that ends above the viewport's bottom, unless the box shows that more is there: the
    CSS class ``gaplab-scroll-cue``, see :data:`gaplab.app.styles.SCROLL_CUE_STYLES`), text
    covered by another element (what the browser shows at two or more of the shown part's
    centre and corners is not the text: a later sibling drawn over it), text outside the viewport's width, text smaller than ``min_font``
    px, and the value of an input box or dropdown wider than the box's inner width (cut or
    scrolled inside it). One line per problem.

    With ``fold`` (a page meant to fit its viewport: projector mode at 1280×720) also: a page
    taller than the viewport (``document.scrollingElement.scrollHeight`` over ``vh``: it
    scrolls), and every text fragment, input, canvas (a Bokeh plot with its axis labels), image
    or SVG cut by the viewport's bottom or wholly below it."""
    boxes, vw = layout["boxes"], layout["vw"]
    out = []
    if fold:
        out += _fold_problems(layout, tol)
    for b in layout.get("inputs", ()):
        where = f"{b['text']!r} in a {b['tag'].lower()} at ({b['x0']:.0f}, {b['y0']:.0f})–({b['x1']:.0f}, {b['y1']:.0f})"
        if min_font is not None and b["font"] < min_font - 0.05:
            out.append(f"font {b['font']:.1f} px < {min_font:g} px: {where}")
        if b["need"] > b["have"] + tol:
            out.append(f"input text cut: {b['need']:.0f} px of text in {b['have']:.0f} px: {where}")
    for b in boxes:
        where = f"{b['text']!r} at ({b['x0']:.0f}, {b['y0']:.0f})–({b['x1']:.0f}, {b['y1']:.0f})"
        if min_font is not None and b["font"] < min_font - 0.05:
            out.append(f"font {b['font']:.1f} px < {min_font:g} px: {where}")
        if b["x0"] < -tol or b["x1"] > vw + tol:
            out.append(f"outside the viewport's width {vw}: {where}")
        if b.get("covered"):
            out.append(f"covered by {b['covered']}: {where}")
        scrolled = False   # inside a vertical scroll box: what it scrolls away is not cut
        for x0, y0, x1, y1, sx, sy, cls, *cue in b["clips"]:   # innermost first
            # a line cut at the side is cut even in a horizontal scroll box (no one scrolls
            # sideways in a lecture); a vertical scroll box, and the boxes around it (e.g. a
            # notebook's page), only hide what is scrolled away, but a line its edge cuts
            # part-way is shown cut
            cut_x = b["x0"] < x0 - tol or b["x1"] > x1 + tol
            cut_y = b["y0"] < y0 - tol or b["y1"] > y1 + tol
            # a scroll box that reaches the viewport's bottom is a page: what is under it is
            # below the fold; one ending above it, with something else under it, hides lines
            if sy and not scrolled and not (cue and cue[0]) and y1 < layout["vh"] - tol \
                    and (b["y0"] > y1 - tol or b["y1"] < y0 + tol):
                out.append(f"hidden in a scroll box {cls} ({x0:.0f}, {y0:.0f})–({x1:.0f}, {y1:.0f}) that "
                           f"shows no cue: {where}")
                break
            if sy:
                cut_y = any(b["y0"] < edge - tol and b["y1"] > edge + tol for edge in (y0, y1))
            elif scrolled:
                cut_y = False
            if cut_x or cut_y:
                out.append(f"cut by its container {cls} ({x0:.0f}, {y0:.0f})–({x1:.0f}, {y1:.0f}): {where}")
                break
            scrolled = scrolled or sy
    # overlaps between what is shown: each fragment cut to its clipping boxes (text scrolled out
    # of a scroll box is not drawn over its neighbours)
    shown = []
    for b in boxes:
        x0, y0, x1, y1 = b["x0"], b["y0"], b["x1"], b["y1"]
        for cx0, cy0, cx1, cy1, *_ in b["clips"]:
            x0, y0, x1, y1 = max(x0, cx0), max(y0, cy0), min(x1, cx1), min(y1, cy1)
        if x1 - x0 > tol and y1 - y0 > tol:
            shown.append(dict(b, x0=x0, y0=y0, x1=x1, y1=y1))
    for i, a in enumerate(shown):
        for b in shown[i + 1:]:
            w = min(a["x1"], b["x1"]) - max(a["x0"], b["x0"])
            h = min(a["y1"], b["y1"]) - max(a["y0"], b["y0"])
            hmin = min(a["y1"] - a["y0"], b["y1"] - b["y0"], 1.2 * min(a["font"], b["font"]))
            if w > tol and h > 0.4 * hmin:
                out.append(f"overlap: {a['text']!r} at ({a['x0']:.0f}, {a['y0']:.0f}) and {b['text']!r} "
                           f"at ({b['x0']:.0f}, {b['y0']:.0f}) ({w:.0f}×{h:.0f} px)")
    return out


class JupyterLabServer:
    """JupyterLab (``python -m jupyterlab``) on 127.0.0.1 serving a copy of ``notebook`` from
    the directory ``root`` (its own config, workspace and runtime directories there; no news,
    no update check); output to ``log_path``. ``url`` opens the notebook. A context manager;
    ``__enter__`` raises RuntimeError when JupyterLab exits or does not answer in ``timeout`` s."""

    def __init__(self, notebook, root, log_path, *, timeout: float = 90.0):
        self.notebook, self.root, self.log_path = Path(notebook), Path(root), Path(log_path)
        self.timeout = timeout
        self.port, self.token = free_port(), "gaplab-test"
        self.proc = None
        self.url = (f"http://127.0.0.1:{self.port}/lab/tree/{self.notebook.name}?token={self.token}")

    def __enter__(self):
        import urllib.request
        self.root.mkdir(parents=True, exist_ok=True)
        shutil.copy(self.notebook, self.root / self.notebook.name)   # JupyterLab may save it
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "w")
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(self.root / ".jupyter"),
                   JUPYTERLAB_WORKSPACES_DIR=str(self.root / ".workspaces"),
                   JUPYTER_RUNTIME_DIR=str(self.root / ".runtime"))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
             "--ServerApp.open_browser=False", "--allow-root", "--LabApp.news_url=None",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=self.root)
        deadline = time.time() + self.timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self.__exit__()
                raise RuntimeError("JupyterLab exited:\n" + self.log_path.read_text()[-3000:])
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/status?token={self.token}", timeout=3)
                return self
            except OSError:
                time.sleep(0.3)
        self.__exit__()
        raise RuntimeError(f"JupyterLab did not start within {self.timeout:g} s")

    def kernel_run(self, code: str, timeout: float = 60.0) -> str:
        """Run ``code`` in the notebook's kernel (the newest one this JupyterLab started) from a
        second client, as a test's probe of the kernel's side (the page's cells are untouched:
        JupyterLab shows only the replies to its own requests). Returns what ``code`` printed
        (stdout and stderr) and the traceback of an error; RuntimeError when no kernel runs."""
        from jupyter_client import BlockingKernelClient
        deadline = time.time() + timeout
        while True:   # the page may show its kernel as idle before the kernel's file is written
            files = sorted((self.root / ".runtime").glob("kernel-*.json"), key=lambda p: p.stat().st_mtime)
            if files:
                break
            if time.time() > deadline:
                raise RuntimeError("no kernel runs in this JupyterLab")
            time.sleep(0.2)
        kc = BlockingKernelClient(connection_file=str(files[-1]))
        kc.load_connection_file()
        kc.start_channels(hb=False)
        # a new subscriber misses what is published before its subscription is in place: ask
        # for the kernel's info until its busy/idle status for that request comes on iopub
        while True:
            mid = kc.kernel_info()
            kc.get_shell_msg(timeout=timeout)
            try:
                while kc.get_iopub_msg(timeout=1.0)["parent_header"].get("msg_id") != mid:
                    pass
                break
            except queue.Empty:
                if time.time() > deadline:
                    kc.stop_channels()
                    raise RuntimeError("the kernel's iopub channel does not answer") from None
        out = []

        def keep(msg):
            c, kind = msg["content"], msg["msg_type"]
            if kind == "stream":
                out.append(c["text"])
            elif kind == "error":
                out.append("\n".join(c["traceback"]))
            elif kind in ("execute_result", "display_data"):
                out.append(c["data"].get("text/plain", ""))
        try:
            reply = kc.execute_interactive(code, store_history=False, timeout=timeout, output_hook=keep)
            if reply["content"].get("status") != "ok" and not out:
                out.append(f"{reply['content'].get('ename')}: {reply['content'].get('evalue')}")
        finally:
            kc.stop_channels()
        return "".join(out)

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if getattr(self, "_log", None):
            self._log.close()
        return False
