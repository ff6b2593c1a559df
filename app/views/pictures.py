"""Pictures of a block for the step anatomy: a model's picture panel (an image, or an inline SVG
with points and segments over it) and a chunked sentence (IOB tags as coloured chunk boxes,
mistakes marked)."""
from __future__ import annotations

import numpy as np

from ..safe_html import esc
from .figures import _png

#: the labellings' colours: ground truth, the step's corner (FW or cache), away corner
ROLE_COLORS = {"truth": "#ffc800", "fw": "#00aaff", "away": "#ff3ca0"}


def panel_html(panel, key: str, px: int) -> str:
    """One of the model's pictures (a :func:`gaplab.core.models.display.image_panel`, composited
    by the session) as inline HTML ``px`` pixels high, scaled to fit its column with its aspect
    ratio kept (small pictures are enlarged): an ``<img>``, or an SVG when the
    panel has points: the segments joining them and a dot per point in the labelling's colour
    (``key``: "input", "truth", "fw" or "away"), the ``mark`` point ringed, and ``under`` (the
    ground truth's points) thin and dashed beneath. A point (x, y) is in pixel units of the
    image (a pixel's centre at +0.5)."""
    img = np.asarray(panel["image"])
    h, w = img.shape[:2]
    render = "image-rendering:pixelated;" if panel.get("pixelated") else ""
    if panel.get("points") is None:
        return (f"<img class='gaplab-panel' data-key='{esc(key)}' src='{_png(img)}' style='width:100%;"
                f"height:{px}px;object-fit:contain;{render}'>")
    seg = panel.get("segments")
    seg = np.zeros((0, 2), np.int64) if seg is None else np.asarray(seg, dtype=np.int64)
    lw = max(max(h, w) / 70, 0.25)

    def lines(pts, color, width, dash=""):
        c = np.asarray(pts, dtype=np.float64)
        segs = "".join(f"<line x1='{c[a, 0]:.1f}' y1='{c[a, 1]:.1f}' x2='{c[b, 0]:.1f}' y2='{c[b, 1]:.1f}'/>"
                       for a, b in seg)
        dots = "".join(f"<circle cx='{x:.1f}' cy='{y:.1f}' r='{1.3 * width:.2f}'/>" for x, y in c) if not dash else ""
        return (f"<g stroke='{color}' stroke-width='{width:.2f}' stroke-linecap='round' fill='{color}'"
                + (f" stroke-dasharray='{dash}'" if dash else "") + f">{segs}{dots}</g>")

    pts = np.asarray(panel["points"], dtype=np.float64)
    body = ""
    under = panel.get("under")
    if under is not None and len(under) == len(pts):
        body += lines(under, ROLE_COLORS["truth"], 0.6 * lw, dash=f"{2 * lw:.2f}")
    body += lines(pts, ROLE_COLORS.get(key, "#ffffff"), lw)
    if panel.get("mark") is not None:
        mx, my = pts[int(panel["mark"])]
        body += (f"<circle class='gaplab-mark' cx='{mx:.1f}' cy='{my:.1f}' r='{max(max(h, w) / 18, 0.8):.2f}' "
                 f"fill='none' stroke='white' stroke-width='{0.8 * lw:.2f}'/>")
    return (f"<svg class='gaplab-panel' data-key='{esc(key)}' viewBox='0 0 {w} {h}' "
            f"style='width:100%;height:{px}px'>"
            f"<image href='{_png(img)}' x='0' y='0' width='{w}' height='{h}' preserveAspectRatio='none' "
            f"style='{render}'/>{body}</svg>")


CHUNK_COLORS = {"NP": "#d4e6f7", "VP": "#d6efd0", "PP": "#fde2c8", "ADVP": "#eadcf5", "ADJP": "#f8d5e5",
                "SBAR": "#fff1b0", "PRT": "#d3f0ef", "CONJP": "#e8e0d0", "INTJ": "#e0e0e0", "LST": "#e0e0e0",
                "UCP": "#e0e0e0"}
CHUNK_OTHER = "#e4e4e4"
MISTAKE = "#d7191c"


def is_iob(tags) -> bool:
    """True if every tag is "O" or "B-X" / "I-X" (a chunking, e.g. CoNLL-2000)."""
    return bool(tags) and all(t == "O" or (len(t) > 2 and t[:2] in ("B-", "I-")) for t in tags)


def iob_chunks(tags) -> list[tuple[int, int, str | None]]:
    """Chunks of an IOB2 tag sequence as (start, end, type), end exclusive; type None for an "O"
    token (one token each). B-X starts a chunk of type X, I-X continues a chunk of type X (an
    I-X that follows anything else starts one, as the CoNLL evaluation script does)."""
    out = []
    cur = None
    for t, tag in enumerate(tags):
        if tag == "O" or len(tag) < 3:
            if cur is not None:
                out.append(cur)
                cur = None
            out.append((t, t + 1, None))
            continue
        kind, typ = tag[0], tag[2:]
        if kind == "I" and cur is not None and cur[2] == typ:
            cur = (cur[0], t + 1, typ)
        else:
            if cur is not None:
                out.append(cur)
            cur = (t, t + 1, typ)
    if cur is not None:
        out.append(cur)
    return out


def chunk_row_html(words, tags, gold=None) -> str:
    """One chunked sentence as wrapping HTML: every chunk a coloured box with its type; "O" words
    plain. With ``gold``, a chunk that is not a gold chunk (same span and type) gets a red
    border and a word whose tag differs from the gold tag is red and underlined."""
    gold_set = {c for c in iob_chunks(gold) if c[2] is not None} if gold is not None else None
    parts = []
    for a, b, typ in iob_chunks(tags):
        ws = []
        for t in range(a, b):
            wrong = gold is not None and t < len(gold) and tags[t] != gold[t]
            word = esc(str(words[t]) if t < len(words) else "?")
            title = esc(f"{tags[t]}" + (f" (gold {gold[t]})" if wrong else ""))
            style = f"color:{MISTAKE};text-decoration:underline;font-weight:600" if wrong else ""
            ws.append(f"<span class='gaplab-word' title='{title}' style='{style}'>{word}</span>")
        inner = " ".join(ws)
        if typ is None:
            parts.append(f"<span class='gaplab-o' style='padding:1px 1px'>{inner}</span>")
            continue
        bad = gold_set is not None and (a, b, typ) not in gold_set
        border = f"2px solid {MISTAKE}" if bad else "1px solid #b9b9b9"
        parts.append(
            f"<span class='gaplab-chunk' data-type='{esc(typ)}' style='background:"
            f"{CHUNK_COLORS.get(typ, CHUNK_OTHER)};border:{border};border-radius:4px;padding:0 3px;"
            f"white-space:nowrap'><b style='font-size:9.5px;color:#333;margin-right:3px;"
            f"vertical-align:1px'>{esc(typ)}</b>{inner}</span>")
    return ("<div style='display:flex;flex-wrap:wrap;gap:3px 4px;line-height:1.45;align-items:center'>"
            + "".join(parts) + "</div>")

