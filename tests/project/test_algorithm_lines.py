"""Algorithm lines cited by content: every "Alg. N line M" in the code, the documentation and the
lessons names a line that says what the citing sentence says it does.

The table is :mod:`gaplab.core.reference.citations` (each cited line with a pattern of its
LaTeX and the words a citing sentence uses). The test numbers the lines of each
``algorithmic`` environment of the paper's LaTeX as the PDF does, checks each table entry's
pattern on the line its number names (Alg. 3 line 11 is the pairwise line search), checks
every citation in the repository against the table, and checks that the compiled kernels'
phases cite exactly the table's lines for their phase.
"""
from __future__ import annotations

import re

import pytest

from gaplab.core.reference.citations import LINES, PHASES, cite, phase_lines
from paper_refs import (algorithm_line_texts, alg_line_citations, cited_files, load_numbering,
                        paper_tex, REPO)

NUM = load_numbering()


@pytest.fixture(scope="module")
def alg_lines():
    tex = paper_tex()
    if tex is None:
        pytest.skip("the paper's LaTeX is not on this machine (set GAPLAB_PAPER_TEX)")
    return algorithm_line_texts(tex.read_text(encoding="utf-8"))


def test_line_numbers_match_the_committed_numbering(alg_lines):
    """The line parser and the committed numbering agree on each algorithm's length."""
    assert {k: len(v) for k, v in alg_lines.items()} == NUM["algorithm_lines"]


def test_parser_numbers_lines_like_algorithmicx():
    """With algorithmic[1]: statements, block starts, else and block ends are numbered lines;
    input lines, comments and a line break inside a statement are not."""
    tex = r"""
\begin{algorithm}\caption{X}\begin{algorithmic}[1]
\INPUT $\kappa$
\STATE a \COMMENT{c}
\FOR{$k$}
\IF{$x > y$} \COMMENT{FW step}
\STATE b \\ \quad continued
\ELSE
\STATE c
\ENDIF
\ENDFOR
\REPEAT \STATE d \UNTIL{e}
\end{algorithmic}\end{algorithm}"""
    lines = algorithm_line_texts(tex)["1"]
    assert [ln.split()[0] for ln in lines] == [r"\STATE", r"\FOR{$k$}", r"\IF{$x", r"\STATE", r"\ELSE",
                                               r"\STATE", r"\ENDIF", r"\ENDFOR", r"\REPEAT", r"\STATE",
                                               r"\UNTIL{e}"]
    assert "continued" in lines[3]


def test_each_table_line_says_what_the_table_says(alg_lines):
    """The content of every cited line: e.g. Alg. 1 line 7 and Alg. 3 line 11 are line searches,
    Alg. 5 line 6 the cache corner, Alg. 3/4 line 8 the away corner, Alg. 2 line 5 the oracle."""
    bad = []
    for key, x in LINES.items():
        lines = alg_lines[str(x.alg)]
        if not 1 <= x.first <= x.last <= len(lines):
            bad.append(f"{x}: Alg. {x.alg} has {len(lines)} lines")
            continue
        if not re.search(x.latex, lines[x.first - 1]):
            bad.append(f"{x} ({x.what}) is: {lines[x.first - 1][:120]}")
        if x.last != x.first and not (x.latex_last and re.search(x.latex_last, lines[x.last - 1])):
            bad.append(f"{x} ({x.what}) ends with: {lines[x.last - 1][:120]}")
    assert not bad, "\n".join(bad)


def test_the_old_wrong_kernel_citations_are_rejected(alg_lines):
    """The lines the compiled kernels used to cite do not say what the kernels do there."""
    a = alg_lines
    assert "stepsize" not in a["1"][6 - 1] and "stepsize" not in a["3"][7 - 1]   # not line searches
    assert "outputvarv_i^c" not in a["5"][3 - 1]                                 # not the cache corner
    assert "argmin" not in a["3"][4 - 1] and "argmin" not in a["4"][4 - 1]       # not the away corner
    assert "argmax" not in a["2"][7 - 1]                                         # not the oracle call
    assert "awayv" not in a["4"][5 - 1] and r"\bm{d}" not in a["3"][5 - 1]        # not directions
    assert "Update" not in " ".join(a["4"][8 - 1:12]) + " ".join(a["3"][8 - 1:10])   # not updates
    # and the right ones do
    assert "stepsize" in a["1"][7 - 1] and "stepsize" in a["3"][11 - 1]
    assert "outputvarv_i^c" in a["5"][6 - 1] and "argmin" in a["3"][8 - 1] and "argmin" in a["4"][8 - 1]


def _texts():
    for path in cited_files():
        if path.name == "citations.py":      # the table itself
            continue
        yield path.relative_to(REPO).as_posix(), path.read_text(encoding="utf-8")
    from gaplab.app.lessons import LESSONS
    for lesson in LESSONS:
        yield f"lesson {lesson.title}", lesson.text + "\n" + lesson.try_this


def _window(text, pos, before=170, after=90):
    """The text around a citation: ``before`` characters before it, the rest of its line after."""
    line_end = text.find("\n", pos)
    tail = text[pos:min(pos + after, line_end if line_end >= 0 else len(text))]
    return re.sub(r"\s+", " ", text[max(0, pos - before):pos] + tail)


def check_line_citations(where, text):
    """Problems with the algorithm-line citations of ``text`` (one message each): a single line
    (or a range) the table does not know, or a citing sentence without the words of the line."""
    bad = []
    for alg, a, b, pos in alg_line_citations(text):
        at = f"{where}:{text.count(chr(10), 0, pos) + 1}"
        key = (alg, a, b)
        if key not in LINES:
            if a == b:
                bad.append(f"{at}: Alg. {alg} line {a} is not in core/reference/citations.py LINES")
            elif not 1 <= a < b <= NUM["algorithm_lines"].get(str(alg), 0):
                bad.append(f"{at}: Alg. {alg} lines {a}-{b} are not lines of the algorithm")
            continue
        if not re.search(LINES[key].words, _window(text, pos), re.I):
            bad.append(f"{at}: {LINES[key]} ({LINES[key].what}) cited in: {_window(text, pos)!r}")
    return bad


def test_every_cited_line_is_the_line_its_sentence_means():
    bad, n = [], 0
    for where, text in _texts():
        n += sum(1 for _ in alg_line_citations(text))
        bad.extend(check_line_citations(where, text))
    assert n > 100, "the scan found too few line citations: is the pattern broken?"
    assert not bad, "\n".join(bad)


def test_checker_rejects_the_old_kernel_sentences():
    old = ["returns (γ, dual improvement). Paper: Alg. 1 line 6, Alg. 3 line 7.",
           "the best cached labelling (the cache corner, Alg. 5 line 3)",
           "Phase *FW corner from the oracle* (Paper: Alg. 1 line 4, Alg. 2 line 7): count the",
           "the away corner (argmin over the active set; Alg. 3 line 4, Alg. 4 line 4)"]
    for text in old:
        assert check_line_citations("old", text), text
    good = ["the exact line search (Paper: Alg. 1 line 7, Alg. 3 line 11)",
            "the best cached labelling (the cache corner, Alg. 5 line 6)",
            "Phase *FW corner from the oracle* (Paper: Alg. 1 line 4, Alg. 2 line 5): count the",
            "the away corner (argmin over the active set; Alg. 3 line 8, Alg. 4 line 8)"]
    for text in good:
        assert check_line_citations("good", text) == [], text


# the compiled phases and the table phases they implement
KERNEL_PHASES = {
    "_line": ("line_search",),
    "cache_hit_rule": ("cache_rule", "cache_init"),
    "phase_score": ("oracle",),
    "phase_scan_label_space": ("cache_corner", "away_corner"),
    "phase_scan_dense": ("cache_corner",),
    "phase_cache_lookup": ("cache_lookup", "cache_gap"),
    "phase_fw_corner": ("oracle", "store_gap", "cache_insert"),
    "phase_away_corner": ("away_corner",),
    "phase_candidates": ("fw_direction", "away_direction", "pairwise_direction", "line_search", "fw_or_away"),
    "phase_apply": ("apply_fw", "apply_away", "apply_pairwise"),
}


def test_kernel_phases_cite_exactly_their_table_lines():
    """Each compiled phase's docstring cites the lines :data:`PHASES` gives for it, no others."""
    from gaplab.core.kernels import phases
    bad = []
    for name, keys in KERNEL_PHASES.items():
        doc = getattr(phases, name).__doc__ or ""
        cited = {(alg, a, b) for alg, a, b, _ in alg_line_citations(doc)}
        want = {(x.alg, x.first, x.last) for x in phase_lines(*keys)}
        if cited != want:
            bad.append(f"{name}: cites {sorted(cited)}, the table says {sorted(want)}")
    assert not bad, "\n".join(bad)


def test_cite_writes_the_table():
    assert cite("line_search").startswith("Alg. 1 line 7, Alg. 3 line 11")
    assert cite("cache_lookup") == "Alg. 5 lines 6-10"
    assert cite("away_corner") == "Alg. 3 line 8, Alg. 4 line 8"
    assert cite("fw_or_away") == "Alg. 4 line 12"
    assert set(k for ph in PHASES.values() for k in ph) <= set(LINES)
    with pytest.raises(KeyError):
        cite("no such phase")
