"""The Step tab's anatomy of the last block step: the block's input and labellings (word
images, a chunked sentence, the model's pictures), the step's numbers in a
table and one sentence saying what happened."""
from __future__ import annotations

import html
import math
import re

import panel as pn

from ..safe_html import esc
from ..wording import block_gap_tol, count
from .base import _Base
from .figures import BIG_PX, LiveHTML, _fmt, _fmt_gap, _png, _scale_px
from .narration import (_TIP_BEFORE, _TIP_BEFORE_HIT, _TIP_DIRECTION_HIT, _TIP_IMPROVEMENT_BOX,
                        _fw_row_label, corner_name, step_sentence, step_short)
from .pictures import chunk_row_html, is_iob, panel_html
from ..styles import (NARRATION_CUE_STYLES, NARRATION_LINE_PX, NARRATION_PROJECTOR_LINE_PX, NARRATION_PROJECTOR_LINES,
                      SCROLL_CUE_BAND, SCROLL_CUE_CLASS, SCROLL_CUE_STYLES, narration_height)

#: projector mode: the numbers grid's height (px; four rows of 18-px text, a fifth for the
#: active set or a lagging step)
PROJECTOR_TABLE_PX = 140


class AnatomyView(_Base):
    """The last block step: the input (e.g. letter images), its ground truth, the FW corner and the
    away corner decoded, step kind, γ, cache hit or miss, block gap before and after.

    Drawn as HTML (pixel-exact letter images, real text the browser tests can read)."""

    MAX_TOKENS = 16
    # while a run goes: at the bars' pace (a frame draws every visible view from one snapshot at
    # the slowest one's pace, views/frame.py; at 0.45 s the Step tab refreshed twice per second)
    RUNNING_MIN_INTERVAL_S = 0.15

    def __init__(self, stacked: bool = False, name=None, compact: bool = False, on_choice=None):
        super().__init__()
        # a model that offers a choice about its pictures (its describe_block's "picker", e.g.
        # the part whose score map is drawn): on_choice(name, index) asks the session to
        # describe the last step again with that choice
        self._on_choice = on_choice
        self._picker_guard = False
        self._picker_name = None
        self.picker = pn.widgets.Select(name="", options={}, width=230, margin=(0, 10),
                                        visible=False, css_classes=["gaplab-picker"])
        self.picker.param.watch(self._chosen, "value")
        # fixed heights: content that changes 10x/s must not make the browser re-layout the page
        # (a long CoNLL sentence chunked three times may need more: the word pane then scrolls)
        self._stacked = stacked
        # compact: projector mode (text at least 18 px, the table in two columns)
        self._scale = 1.3 if compact else 1.0
        self._compact = compact
        # a long sentence's rows of chunks that do not fit scroll, with a visible cue
        self.word = LiveHTML("", sizing_mode="stretch_width", margin=(5, 10), height=self._height(False),
                                 css_classes=[SCROLL_CUE_CLASS],
                                 styles={"font-size": "14px", "overflow-x": "hidden", "overflow-y": "auto",
                                         **SCROLL_CUE_STYLES})
        # projector mode: the numbers in two columns of label-value pairs (four or five rows)
        self.table = LiveHTML("", width=430 if not stacked else None, margin=(5, 10),
                                  height=235 if not compact else PROJECTOR_TABLE_PX,
                                  sizing_mode=None if not stacked else "stretch_width",
                                  styles={"font-size": "14px", "overflow": "hidden"})
        layout = pn.Column if stacked else pn.Row
        # "what just happened": one sentence about the last step, under it (a long one, e.g. a
        # cache hit's, scrolls rather than being cut off)
        # (whole lines: one cut part-way is what a class reads first)
        self._line_px = NARRATION_PROJECTOR_LINE_PX if compact else NARRATION_LINE_PX
        self.sentence = LiveHTML("", sizing_mode="stretch_width", margin=(0, 10),
                                     height=narration_height(self._lines(False), self._line_px),
                                     css_classes=["gaplab-sentence", "gaplab-narration", SCROLL_CUE_CLASS],
                                     styles={"font-size": "13.5px", "overflow-x": "hidden", "overflow-y": "auto",
                                             **NARRATION_CUE_STYLES, "line-height": f"{self._line_px}px",
                                             "border-left": "4px solid #1f3b57", "padding": "2px 8px"})
        self.panel = pn.Column(self.picker, layout(self.word, self.table, sizing_mode="stretch_width"),
                               self.sentence, sizing_mode="stretch_width", css_classes=["gaplab-anatomy"])

    def _chosen(self, event):
        if self._picker_guard or event.new is None or self._on_choice is None or self._picker_name is None:
            return
        self._on_choice(self._picker_name, int(event.new))

    def _height(self, chunks: bool, panels: bool = False, picker: bool = False) -> int:
        """Height of the input pane: taller for a chunked sentence (three wrapped rows; in
        projector mode the rows below scroll, with the cue) and, in projector mode, for a
        model's pictures (18-px captions of up to three lines, the legend on one line; a model
        with a picker above the pane, e.g. the pose model's part, gets 60 px less), so that the
        pane, the short narration and the numbers grid fit a 1280×720 screen; it only changes
        when the kind of data changes, never from one step to the next."""
        if self._compact:
            return 260 if chunks else ((200 if picker else 260) if panels else 215)
        if self._stacked:
            return 250 if chunks else 190
        return 290 if chunks else 235

    def _lines(self, chunks: bool, panels: bool = False, picker: bool = False) -> int:
        """Whole lines the narration shows without scrolling: five in the normal layout; in
        projector mode the short form's (:func:`~gaplab.app.views.narration.step_short`,
        the full sentence one click away)."""
        if not self._compact:
            return 5
        return NARRATION_PROJECTOR_LINES

    def _set_height(self, chunks: bool, panels: bool = False, picker: bool = False):
        h = self._height(chunks, panels, picker)
        if self.word.height != h:
            self.word.height = h
        h = narration_height(self._lines(chunks, panels, picker), self._line_px)
        if self.sentence.height != h:
            self.sentence.height = h

    @staticmethod
    def _cell(text, color="#222", size="22px", weight="bold"):
        return (f"<td style='text-align:center;padding:0 3px;font-size:{size};font-weight:{weight};"
                f"color:{color};font-family:monospace'>{esc(str(text))}</td>")

    def _draw(self, snap):
        st = snap.last_step
        if st is None and snap.status == "loading" and not snap.n:
            self.word.object = self._big("<div style='font-weight:600;font-size:15px'>Anatomy of the last step</div>"
                                f"<p style='color:#8a5a00'>Loading <b>{esc(snap.dataset)}</b>: "
                                f"{esc(snap.note or 'reading the data')} The buttons come back when "
                                "the solver is ready.</p>")
            self.table.object = ""
            self.sentence.object = ""
            return
        if st is None:
            self.word.object = self._big("<div style='font-weight:600;font-size:15px'>Anatomy of the last step</div>"
                                "<p style='color:#666'>No step yet. <b>Step</b> takes one block step: "
                                "sample a block, find its FW corner (the max oracle; with the cache on, "
                                "a cache hit takes the cache corner and calls no oracle) and move its "
                                "dual variables: towards that corner (FW step), away from the away "
                                "corner (away step) or from the away corner to it (pairwise step).</p>")
            self.table.object = ""
            self.sentence.object = self._big("<div style='font-size:13.5px;color:#666'><b>What just happened:</b> "
                                             "a sentence about each step appears here.</div>")
            return
        chunks = st.tokens is not None and is_iob(st.truth)
        self._set_height(chunks, bool(st.panels), st.picker is not None)
        self._show_picker(st.picker)
        if st.panels:
            self._draw_panels(snap, st)
        elif chunks:
            self._draw_chunks(snap, st)
        else:
            self._draw_tokens(snap, st)
        self._draw_table(snap, st)

    def _draw_chunks(self, snap, st):
        """A sentence (CoNLL chunking): the words, chunked by the ground truth, the FW corner and
        the away corner (Paper: App. I.2); long sentences wrap, the pane scrolls if needed."""
        label = ("<td style='vertical-align:top;text-align:right;padding:3px 8px 0 0;color:#555;"
                 "font-size:12.5px;white-space:nowrap;width:96px'>{}</td>")
        rows = [("ground truth y<sub>i</sub>", "gaplab-gold", chunk_row_html(st.tokens, st.truth))]
        rows.append((_fw_row_label(st), "gaplab-fw", chunk_row_html(st.tokens, st.fw_corner, st.truth)))
        if st.away_corner is not None:
            rows.append(("away corner y<sup>a</sup>", "gaplab-away",
                         chunk_row_html(st.tokens, st.away_corner, st.truth)))
        body = "".join(f"<tr class='{cls}'>{label.format(name)}<td style='padding:2px 0 5px 0'>{row}</td></tr>"
                       for name, cls, row in rows)
        errs = [sum(a != b for a, b in zip(y, st.truth)) for y in (st.fw_corner, st.away_corner) if y is not None]
        note = f" — {esc(st.note)}" if st.note else ""
        self.word.object = self._big(
            f"<div style='font-weight:600;font-size:15px;margin-bottom:4px'>Anatomy of the last step: "
            f"block <span class='gaplab-block'>{st.block}</span>{note} "
            f"<span style='font-weight:normal;font-size:12.5px;color:#555'>({len(st.truth)} words; "
            f"{corner_name(st)}: {errs[0]} wrong tag(s)"
            + (f", away corner: {errs[1]}" if len(errs) > 1 else "") + ")</span></div>"
            f"<table style='border-collapse:collapse;font-size:12.5px;width:100%'>{body}</table>"
            "<div style='color:#666;font-size:11.5px;margin-top:2px'>box: a chunk (B-X starts a chunk of "
            "type X, I-X continues it); red box: not a gold chunk; red word: its tag differs from the "
            "gold tag (adds loss); hover a word for its tag</div>" + SCROLL_CUE_BAND)

    def _show_picker(self, pk):
        """The model's picker (its describe_block's "picker"): shown when the model offers one
        and a session listens, its options the model's, its value the one drawn (set without
        calling back)."""
        want = pk is not None and self._on_choice is not None
        if self.picker.visible != want:
            self.picker.visible = want
        if not want:
            return
        self._picker_name = pk["name"]
        opts = {f"{k}: {nm}": k for k, nm in enumerate(pk["options"])}
        self._picker_guard = True
        try:
            if self.picker.name != pk["label"]:
                self.picker.name = pk["label"]
            if self.picker.options != opts:
                self.picker.options = opts
            if self.picker.value != pk["value"]:
                self.picker.value = pk["value"]
        finally:
            self._picker_guard = False

    def _draw_panels(self, snap, st):
        """The model's pictures of the block (its describe_block's panels, Paper: App. I for the
        segmentation and pose models): the input once, then the ground truth's, the step's
        corner's and the away corner's pictures in one row of equal columns (every one stays in
        view, scaled down), each with its caption; the model's legend under them."""
        # the pictures get what the title, captions and legend leave (more text room at 18 px;
        # projector mode: the legend on one line, the picked part in the picker above)
        px = max(90, self.word.height - 165) if self._compact else max(100, self.word.height - 95)
        cells = "".join(
            f"<td style='text-align:center;padding:0 3px;vertical-align:top'>{panel_html(p, key, px)}"
            f"<div style='font-size:11.5px;line-height:1.2;color:#444'>{esc(cap)}</div></td>"
            for key, cap, p in st.panels)
        note = f" — {esc(st.note)}" if st.note else ""
        sub = f" <span style='font-weight:normal;font-size:12.5px;color:#555'>({esc(st.subtitle)})</span>" \
            if st.subtitle else ""
        pk = st.picker
        chosen = (f"<div style='color:#444;font-size:12px'>{esc(pk['label'])}: <b class='gaplab-picked'>"
                  f"{esc(pk['options'][pk['value']])}</b></div>") if pk is not None else ""
        legend = f"; {esc(st.legend)}" if st.legend else ""
        if self._compact:   # the model's legend on hover: one line under the pictures
            chosen = ""
            legend = (f" <span title='{esc(st.legend)}' style='cursor:help;border-bottom:1px dotted #666'>"
                      "· more (hover)</span>") if st.legend else ""
        self.word.object = self._big(
            f"<div style='font-weight:600;font-size:15px;margin-bottom:4px'>Anatomy of the last step: "
            f"block <span class='gaplab-block'>{st.block}</span>{note}{sub}</div>{chosen}"
            f"<div style='overflow-x:auto'><table style='width:100%;table-layout:fixed'><tr>{cells}</tr></table></div>"
            f"<div style='color:#666;font-size:11.5px;line-height:1.25'>gold: ground truth; blue: "
            f"{corner_name(st)}; pink: away corner{legend}</div>")

    def _draw_tokens(self, snap, st):
        T = len(st.truth)
        show = min(T, self.MAX_TOKENS)
        multi = any(len(s) > 1 for s in st.truth)
        size = "13px" if multi else "22px"
        label = ("<td style='text-align:right;padding-right:10px;color:#555;font-size:13px;"
                 "white-space:nowrap'>{}</td>")
        rows = []
        if st.image is not None:
            # 24×48 px letters, narrower when the pane cannot hold them all (max-width: a long
            # word's last letters were cut by the pane's edge; the table shrinks to the pane)
            cells = "".join(
                f"<td style='padding:0 3px'><img class='gaplab-letter' src='{_png(st.image[t])}' "
                f"style='width:24px;max-width:100%;height:auto;aspect-ratio:1/2;image-rendering:pixelated;"
                f"border:1px solid #ddd'></td>"
                for t in range(show))
            rows.append("<tr>" + label.format("input x<sub>i</sub>") + cells + "</tr>")
        elif st.tokens is not None:
            cells = "".join(self._cell(st.tokens[t], "#444", "12px", "normal") for t in range(show))
            rows.append("<tr>" + label.format("words") + cells + "</tr>")

        def row(name, seq):
            cells = []
            for t in range(show):
                if t >= len(seq):
                    cells.append("<td></td>")
                    continue
                ok = seq[t] == st.truth[t]
                cells.append(self._cell(seq[t], "#1a9641" if ok else "#d7191c", size))
            return "<tr>" + label.format(name) + "".join(cells) + "</tr>"

        rows.append("<tr>" + label.format("ground truth y<sub>i</sub>")
                    + "".join(self._cell(st.truth[t], "#222", size) for t in range(show)) + "</tr>")
        rows.append(row(_fw_row_label(st), st.fw_corner))
        if st.away_corner is not None:
            rows.append(row("away corner y<sup>a</sup>", st.away_corner))
        more = f" (first {show} of {T} tokens)" if show < T else ""
        note = f" — {esc(st.note)}" if st.note else ""
        self.word.object = self._big(
            f"<div style='font-weight:600;font-size:15px;margin-bottom:6px'>Anatomy of the last step: "
            f"block <span class='gaplab-block'>{st.block}</span>{note}{more}</div>"
            f"<table style='border-collapse:separate;border-spacing:0 4px'>{''.join(rows)}</table>"
            "<div style='color:#666;font-size:12px;margin-top:4px'>green: equals the ground truth; "
            "red: differs (adds loss)</div>")

    def _draw_table(self, snap, st):
        hit = ("cache hit (no oracle call)" if st.cache_hit else
               "cache miss → max oracle" if snap.config.get("cache") else "max oracle call")
        items = [
            ("block i", f"{count(st.block)} of {count(snap.n)}" + (f" ({esc(st.note)})" if st.note else "")),
            # StepRecord.iteration is k, the steps done before this one; the status line counts
            # steps done, so this step took the solver from iteration k to k + 1
            ("step", f"#{st.iteration + 1:,} &nbsp;<span style='font-weight:normal;color:#666'>(iteration "
                     f"{st.iteration:,} → {st.iteration + 1:,})</span>{_lag_words(snap, st)}"),
            ("step kind", st.kind + (" (drop step)" if st.drop else "")),
            ("γ (step size)", f"{_fmt(st.gamma, '.4g')} &nbsp;(γ<sub>max</sub> = {_fmt(st.gamma_max, '.4g')})"),
            ("oracle", hit),
            (_TIP_BEFORE_HIT if st.cache_hit else _TIP_BEFORE,
             _fmt_gap(st.gap_before, tol=block_gap_tol(snap)) + (" (stale, unchanged)" if st.cache_hit else "")),
            (_TIP_DIRECTION_HIT if st.cache_hit and st.kind == "fw" else "direction gap ⟨−∇<sub>i</sub>f, d⟩",
             _fmt_gap(st.direction_gap, tol=block_gap_tol(snap))),
            *([(_TIP_DIRECTION_HIT, _fmt_gap(st.cache_gap, tol=block_gap_tol(snap)))]
              if st.cache_hit and st.kind == "away" and math.isfinite(getattr(st, "cache_gap", math.nan)) else []),
            ("block gap after (diagnostic)", _fmt_gap(st.gap_after, tol=block_gap_tol(snap))),
            (_TIP_IMPROVEMENT_BOX if getattr(st, "box", False) else "dual improvement",
             _fmt(st.improvement, ".3e")),
        ]
        if st.active_set_size >= 0:
            items.append(("active set |S<sub>i</sub>|", str(st.active_set_size)))
        if self._compact:
            self._draw_compact(snap, st, items)
            return
        body = "".join(f"<tr><td style='padding:0 12px 0 0;color:#555;line-height:1.45'>{k}</td>"
                       f"<td style='padding:0'><b>{v}</b></td></tr>" for k, v in items)
        self.table.object = self._big(f"<table style='border-collapse:collapse;font-size:14px'>{body}</table>")
        self.sentence.object = self._big(f"<div style='font-size:13.5px'>{step_sentence(snap, st)}</div>")

    def _draw_compact(self, snap, st, items):
        """Projector mode: the numbers as a grid of two label-value columns (the block number is
        in the title above, the iteration in the status line: the "block i" row goes, the
        "step" row only says when the step shown lags the snapshot); the narration in its short
        form, which opens to the full sentence on a click (the full sentence is also its
        tooltip)."""
        lag = _lag_words(snap, st)
        short = {"γ (step size)": "γ", "block gap after (diagnostic)": "block gap after",
                 "direction gap ⟨−∇<sub>i</sub>f, d⟩": "direction gap"}
        items = [(short.get(k, k), v) for k, v in items if k not in ("block i", "step")]
        # γ_max its own cell, the oracle in a word (the narration says it in full), the stale
        # estimate's note left to its label (two columns of pairs fit the 620-px column)
        items = [(k, re.sub(r" &nbsp;\(γ<sub>max</sub> = .*\)$", "", v).replace(" (stale, unchanged)", ""))
                 for k, v in items]
        items = [(k, {"cache hit (no oracle call)": "cache hit", "cache miss → max oracle": "cache miss",
                      "max oracle call": "max oracle"}.get(v, v)) for k, v in items]
        k_gamma = next(i for i, (k, _) in enumerate(items) if k == "γ")
        items.insert(k_gamma + 1, ("γ<sub>max</sub>", _fmt(st.gamma_max, ".4g")))
        # column-major: the left column step kind, γ, gap before, gap after; the right one the rest
        rows = (len(items) + 1) // 2
        order = [i for r in range(rows) for i in (r, r + rows) if i < len(items)]
        cells = "".join(f"<div style='color:#555;white-space:nowrap'>{k}</div>"
                        f"<div style='white-space:nowrap'><b>{v}</b></div>" for k, v in (items[i] for i in order))
        self.table.object = self._big(
            "<div style='display:grid;grid-template-columns:auto auto auto auto;column-gap:10px;"
            f"row-gap:2px;font-size:14px;line-height:1.4'>{cells}</div>"
            # subscripts (γ_max, g_i) do not make their row taller than the others
            "<style>sub, sup { line-height: 0; } sub { vertical-align: -0.25em; }</style>"
            + (f"<div style='font-size:14px'>{lag[4:]}</div>" if lag else ""))
        full = step_sentence(snap, st)
        tip = esc(html.unescape(re.sub(r"<[^>]+>", "", full)))
        self.sentence.object = self._big(
            f"<details style='font-size:13.5px'><summary title='{tip}' style='cursor:pointer'>"
            f"{step_short(snap, st)}</summary>{full}</details>")

    def _big(self, text):
        return _scale_px(text, self._scale, BIG_PX if self._compact else 0.0)



def _lag_words(snap, st) -> str:
    """When the snapshot's iteration has moved past the step described (its last step was not
    captured with it), say which step this is and how far behind: the numbers on screen come
    from one snapshot, or say which step they describe."""
    lag = snap.iteration - (st.iteration + 1)
    if lag <= 0:
        return ""
    return (f"<br><span class='gaplab-anatomy-lag' style='font-weight:normal;color:#8a5a00'>last drawn step: "
            f"#{st.iteration + 1:,}, {lag:,} step{'s' if lag != 1 else ''} ago</span>")
