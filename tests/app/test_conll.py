"""CoNLL-2000 in the app: selectable mid-run with a visible loading state, the step
anatomy shows the sentence with gold, FW-corner and away-corner chunks, and the per-block gap
bars use the binned drawing of OCR-large. Needs the data: $GAPLAB_DATA, else the shared
development copy, else the tests are skipped."""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

import numpy as np
import pytest

from gaplab.app.session import Session
from gaplab.app.views import AnatomyView, BlockGapsView, chunk_row_html, iob_chunks, is_iob

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "conll2000"


def _data_dir():
    env = os.environ.get("GAPLAB_DATA", "").strip()
    for d in ([Path(env), Path(env) / "conll2000"] if env else []) + [SHARED]:
        if (d / "train.txt").exists() and (d / "test.txt").exists():
            return d
    return None


DATA = _data_dir()


def test_iob_chunks_group_b_and_i_tags():
    tags = ["B-NP", "I-NP", "O", "B-VP", "I-VP", "I-NP", "B-PP", "B-NP", "I-NP"]
    assert iob_chunks(tags) == [(0, 2, "NP"), (2, 3, None), (3, 5, "VP"), (5, 6, "NP"), (6, 7, "PP"),
                                (7, 9, "NP")]
    assert is_iob(tags) and not is_iob(["a", "b"]) and not is_iob(["0", "1"])
    words = ["The", "cat", ",", "has", "sat", "mat", "on", "the", "<mat>"]
    fw = ["B-NP", "B-NP", "O", "B-VP", "I-VP", "I-NP", "B-PP", "B-NP", "I-NP"]
    h = chunk_row_html(words, fw, tags)
    assert h.count("class='gaplab-chunk'") == 6 and "&lt;mat&gt;" in h
    # "cat" has a wrong tag (red, underlined); both NP chunks around it are not gold chunks
    assert re.search(r"title='B-NP \(gold I-NP\)' style='color:#d7191c", h)
    assert h.count("2px solid #d7191c") == 2


needs_data = pytest.mark.skipif(DATA is None, reason="CoNLL-2000 not found ($GAPLAB_DATA or ../shared/data)")


@needs_data
def test_conll_selected_mid_run_then_anatomy_shows_chunks(monkeypatch):
    monkeypatch.setenv("GAPLAB_DATA", str(DATA))
    s = Session(max_passes=1e6)
    try:
        assert s.wait_idle(60)
        s.run()
        time.sleep(0.3)
        t0 = time.perf_counter()
        s.param.update(dataset="conll2000", step_kind="pairwise")
        assert time.perf_counter() - t0 < 1.0            # the UI thread does not wait for the data
        snap = s.snapshot
        if s.status == "loading":                         # (the data may already be cached)
            assert snap.n == 0 and snap.dataset == "conll2000" and "reading the data" in snap.note
            s.step()
            assert s.messages()[-1][0] == "warning" and "loading" in s.messages()[-1][1]
        assert s.wait_idle(120) and s.status == "idle", s.messages()
        assert s.snapshot.n == 8936 and s.solver.config.step.name == "PAIRWISE"
        s.step_n(3 * 8936 // 2)
        assert s.wait_idle(120)
        st = s.step().last_step
        train = s.problem.train
        words = train.extras["words"][st.block]
        assert st.tokens == tuple(words) and len(st.truth) == len(words)
        assert set(st.truth) <= set(train.label_names) and st.away_corner is not None
        view = AnatomyView()
        view.update(s.snapshot)
        html_ = view.word.object
        for w in words:
            assert html_.count(">" + w.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                               .replace("'", "&#x27;").replace('"', "&quot;") + "<") >= 3
        types = {t[2:] for t in st.truth if t != "O"}
        for typ in types:
            assert f"data-type='{typ}'" in html_
        for cls in ("gaplab-gold", "gaplab-fw", "gaplab-away"):
            assert f"class='{cls}'" in html_
        assert f"<span class='gaplab-block'>{st.block}</span>" in html_ and f"{st.block:,} of 8,936" in view.table.object
        assert view.word.height > 235   # the chunked sentence gets a taller (scrolling) pane
        # per-block gaps: binned like OCR-large (max ĝ per bin of b blocks, at most MAX_BARS bars)
        blocks = BlockGapsView()
        blocks.update(s.snapshot)
        b = int(np.ceil(8936 / BlockGapsView.MAX_BARS))
        assert len(blocks.src.data["x"]) == int(np.ceil(8936 / b)) <= BlockGapsView.MAX_BARS
        assert f"bins of {b} blocks" in blocks.fig.title.text
        assert np.all(np.asarray(blocks.src.data["hi"]) - np.asarray(blocks.src.data["lo"]) <= b - 1)
    finally:
        s.close()
