"""One paper numbering everywhere: every "Eq. (N)", "Alg. N", "App. X" and "Sec. N" cited in the
code, the README, the documentation pages and the lessons exists in the paper (Osokin et al.,
ICML 2016), and the citations of the concepts the app teaches point at the right labelled
equation (the gaps are (5)-(7), the toy dual (15), ...), counted from the paper's LaTeX."""
from __future__ import annotations

import re

import pytest

from paper_refs import (cited_files, citations, load_numbering, paper_tex, parse_numbering,
                        REPO)

NUM = load_numbering()

GAPS = ("eq:duality_gap", "eq:block_gap", "eq:duality_gap_withH")
SSVM = ("eq:svmstruct_nslack_primal_nonsmooth", "eq:subproblem_loss_augm", "eq:svmstruct_nslack_dual",
        "eq:block_max_oracle")
BOX = ("eq:ssvn_nslack_dual_bounded", "eq:optimalBetaULfinal", "eq:optimalBetaULfinal+1",
       "eq:svmstruct_nslack_dual")
# (concept, words that name it, the labels a citation of it points at, [the family a cited range
# may span]). Of the concepts named within NEAR characters before a citation (or after it on the
# same line), the first in this list decides: the cited numbers must include one of its labels
# and lie within its family (default: the labels), so "the duality gap, a sum of block gaps
# (Eq. (5)-(7))" is right and "(4)-(6)" is not.
NEAR = 100
CONCEPTS = [
    ("toy curvature", r"curvature", ("eq:Cf1HardBlock", "eq:CfiEasyBlock", "eqn:CfProduct")),
    ("toy complexity", r"Ω\(min|t\s*>=\s*Ω|t ≥ Ω|\\Omega\(\\min", ("eq:HardBlockComplexity",)),
    ("toy dual", r"toy[^.]{0,40}dual|dual[^.]{0,20}toy|the 1/4 α² term", ("eq:SSVMdualSimple",)),
    ("duality gap", r"duality gap|exact[ _]gap|gap pass|Frank-Wolfe gap|FW gap|splits over",
     ("eq:duality_gap",), GAPS),
    ("block gap", r"block gaps?|\bg_i\b", ("eq:block_gap", "eq:duality_gap_withH"), GAPS),
    ("box dual", r"with a box|box[^.]{0,30}dual|dual[^.]{0,30}box|β_u|β_l", BOX, BOX + ("eq:wTruncation",)),
    ("primal", r"primal objective|\bthe primal\b", ("eq:svmstruct_nslack_primal_nonsmooth",), SSVM),
    ("max oracle", r"max oracle|loss-augmented|argmax|H_i\(y; ?w\)", ("eq:subproblem_loss_augm",
                                                                     "eq:block_max_oracle"), SSVM),
    ("dual", r"\bdual\b", ("eq:svmstruct_nslack_dual",), SSVM),
    ("primal", r"primal|Regularization λ|regularization|task loss|SSVM",
     ("eq:svmstruct_nslack_primal_nonsmooth",), SSVM),
]

# appendix concepts: (words within NEAR characters before "App. X", or in the parenthesis right
# after it; the appendices that treat them), first match decides
APP_CONCEPTS = [
    ("curvature bound 4R²/(λn²)", r"4 ?R_i²|4R²", {"B"}),
    ("gap checks (update global gap)", r"gap checks?\b|update global gap|every 10 passes", {"D"}),
    ("proof of Theorem 2", r"Theorem 2[^.]{0,25}proof|proof[^.]{0,25}Theorem 2", {"E"}),
    ("proof of Theorem 3", r"Theorem 3[^.]{0,25}proof|proof[^.]{0,25}Theorem 3", {"F"}),
]


def _texts():
    for path in cited_files():
        yield path.relative_to(REPO).as_posix(), path.read_text(encoding="utf-8")
    from gaplab.app.lessons import LESSONS
    for lesson in LESSONS:
        yield f"lesson {lesson.title}", lesson.text + "\n" + lesson.try_this


_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bcf)(?<!App)(?<!Alg)(?<!Sec)(?<!Eq)(?<!Eqs)(?<!Fig)"
                           r"(?<!Prop)(?<!al)\.\s+(?=[A-Z*$\\])")


def _context(text, pos, before=170, after=70, sentence=False):
    """The text around a citation at ``pos`` (whitespace collapsed; with ``sentence``, from the
    start of the citation's sentence) and the citation's offset."""
    head = re.sub(r"\s+", " ", text[max(0, pos - before):pos])
    ends = list(_SENTENCE_END.finditer(head)) if sentence else []
    if ends:
        start = ends[-1].end()
        if head[start:].startswith("Paper"):   # "... sentence. Paper: Eq. (N)": cites that sentence
            start = ends[-2].end() if len(ends) > 1 else 0
        head = head[start:]
    line_end = text.find("\n", pos)
    tail = re.sub(r"\s+", " ", text[pos:min(pos + after, line_end if line_end >= 0 else len(text))])
    return head + tail, len(head)


def _numbers(labels, num):
    """The equation numbers of ``labels`` ("label+1": the row after the labelled one)."""
    out = set()
    for lab in labels:
        lab, _, plus = lab.partition("+")
        out.add(num["equations"][lab] + int(plus or 0))
    return out


def check_text(where, text, num=NUM):
    """The problems with the paper citations in ``text``: a list of one-line messages."""
    n_eq, n_alg = num["n_equations"], num["n_algorithms"]
    secs, apps = num["sections"], num["appendices"]
    bad = []
    for kind, a, b, pos in citations(text):
        line = text.count("\n", 0, pos) + 1
        at = f"{where}:{line}"
        if kind == "eq":
            if not (1 <= a <= b <= n_eq):
                bad.append(f"{at}: Eq. ({a})-({b}) is not an equation of the paper (1..{n_eq})")
                continue
            ctx, at_cite = _context(text, pos, sentence=True)
            best = None
            for name, words, labels, *family in CONCEPTS:
                if any(hit.end() > at_cite - NEAR for hit in re.finditer(words, ctx, re.I)):
                    best = (0, name, labels, family[0] if family else labels)
                    break
            if best is not None:
                allowed, family = _numbers(best[2], num), _numbers(best[3], num)
                cited = set(range(a, b + 1))
                if not cited & allowed or not cited <= family:
                    bad.append(f"{at}: Eq. ({a})" + (f"-({b})" if b != a else "")
                               + f" cited for the {best[1]}, which the paper numbers {sorted(allowed)}")
        elif kind == "alg":
            if not (1 <= a <= b <= n_alg):
                bad.append(f"{at}: Alg. {a} is not an algorithm of the paper (1..{n_alg})")
        elif kind == "app":
            if a not in apps:
                bad.append(f"{at}: App. {a} is not an appendix of the paper ({', '.join(apps)})")
                continue
            ctx, at_cite = _context(text, pos)
            for name, words, letters in APP_CONCEPTS:
                if any(at_cite - NEAR < hit.end() <= at_cite or 0 <= hit.start() - at_cite <= 12
                       for hit in re.finditer(words, ctx, re.I)):
                    if a not in letters:
                        bad.append(f"{at}: App. {a} cited for the {name}, which is in App. "
                                   + "/".join(sorted(letters)))
                    break
        elif kind.endswith(":line"):
            alg = kind.split(":")[0][3:]
            lines = num["algorithm_lines"].get(alg, 0)
            if not 1 <= a <= b <= lines:
                bad.append(f"{at}: Alg. {alg} line(s) {a}-{b}: the algorithm has {lines} lines")
        elif kind == "fig":
            if not 1 <= a <= num["n_figures"]:
                bad.append(f"{at}: Fig. {a} is not a figure of the paper (1..{num['n_figures']})")
        elif kind == "sec":
            for s in {a, b}:
                if s not in secs:
                    bad.append(f"{at}: Sec. {s} is not a section of the paper")
    return bad


def test_numbering_file_matches_the_latex():
    """The committed numbering is the LaTeX's (re-parsed whenever the LaTeX is on this machine)."""
    tex = paper_tex()
    if tex is None:
        pytest.skip("the paper's LaTeX is not on this machine (set GAPLAB_PAPER_TEX)")
    assert parse_numbering(tex.read_text(encoding="utf-8")) == NUM


def test_the_numbers_the_app_teaches():
    """The numbers the lessons name, from the parsed LaTeX: the FW gap (5), the block
    gap (6) and (7), the toy dual (15), t >= Ω(min{K, 1/(nε)}) (16), the toy curvatures (18)-(19);
    nine algorithms (Alg. 5 the cache, Alg. 9 the box); appendices A-K (C the toy, F Theorem 3's
    proof, G BCPFW/BCAFW, H the box)."""
    eq = NUM["equations"]
    assert (eq["eq:svmstruct_nslack_primal_nonsmooth"], eq["eq:subproblem_loss_augm"],
            eq["eq:svmstruct_nslack_dual"]) == (1, 2, 3)
    assert (eq["eq:duality_gap"], eq["eq:block_gap"], eq["eq:duality_gap_withH"]) == (5, 6, 7)
    assert eq["eq:SSVMdualSimple"] == 15 and eq["eq:HardBlockComplexity"] == 16
    assert (eq["eq:Cf1HardBlock"], eq["eq:CfiEasyBlock"]) == (18, 19)
    alg = NUM["algorithms"]
    assert alg["alg:FW_product_SVM"] == 1 and alg["alg:FW_product_SVM_gapsampling"] == 2
    assert alg["alg:pFW_product_SVM_pairwise"] == 3 and alg["alg:aFW_product_SVM_away_steps"] == 4
    assert alg["alg:FW_product_SVM_caching"] == 5 and alg["alg:FW_product_SVM_box"] == 9
    labels = NUM["section_labels"]
    assert labels["app:toy_example"] == "C" and labels["app:caching_theorem"] == "F"
    assert labels["app:BCPFWconvergence"] == "G" and labels["sec:gap_sampling"] == "3.1"
    assert NUM["appendices"]["H"].startswith("BCFW for SSVM with box constraints")
    assert NUM["n_figures"] == 8     # Fig. 7: the κ study, Fig. 8: path against grid search
    # Alg. 1 has 12 lines (line 6: the block gap), Alg. 2 22 (lines 14-20: the global gap pass),
    # Alg. 4 line 12 is its FW-or-away test
    assert NUM["algorithm_lines"]["1"] == 12 and NUM["algorithm_lines"]["2"] == 22


def test_parser_counts_like_latex():
    """The parser on a small document: align rows, \\notag, starred environments, a label on an
    unnumbered row, multline, algorithms and appendix letters."""
    tex = r"""
\section{One \label{sec:one}}
\begin{equation}\label{e1} a \end{equation}
\begin{equation*} b \end{equation*}
\begin{align} x &= 1 \label{e2} \\ y &= \frac{1}{2} \notag \\ z_{\{a\}} &= 3 \label{e3} \end{align}
\begin{align}\label{e4} p &= q \notag \\[-3mm] r &= s \end{align}
% \begin{equation}\label{commented} c \end{equation}
\begin{multline}\label{e5} m \\ n \end{multline}
\subsection{Sub}
\begin{algorithm} \caption{A} \label{alg:a} \end{algorithm}
\appendix
\section*{Supp}
\section{First \label{app:first}}
\begin{algorithm} \caption{B} \label{alg:b} \end{algorithm}
\begin{equation} \begin{aligned} \label{e6} u \\ v \end{aligned} \end{equation}
\section{Second}
"""
    num = parse_numbering(tex)
    assert num["equations"] == {"e1": 1, "e2": 2, "e3": 3, "e4": 4, "e5": 5, "e6": 6}
    assert num["n_equations"] == 6 and num["n_figures"] == 0
    assert num["algorithms"]["alg:a"] == 1 and num["algorithms"]["alg:b"] == 2
    assert num["algorithm_lines"] == {"1": 0, "2": 0}
    assert num["sections"] == {"1": "One", "1.1": "Sub"}
    assert num["appendices"] == {"A": "First", "B": "Second"}
    assert num["section_labels"] == {"sec:one": "1", "app:first": "A"}


def test_checker_finds_the_old_wrong_citations():
    """The check fails on the sentences this repository used to have."""
    old = {
        "lessons": "The Frank-Wolfe gap ... splits over\nblocks (Eq. (4)-(6)):",
        "solver": "Duality gap g(α) = Σ_i g_i = primal − dual (Paper: Eq. (4)-(6)).",
        "solver2": "Exact block gaps g_i (Paper: Eq. (5)); NaN for an uncounted pass.",
        "solver3": '"""Exact duality gap at the current iterate (n oracle calls; Paper: Eq. (4)).',
        "toy dual": "The toy dual\n    (Eq. (23), the 1/4 α² term) agrees with the 1/√2 scaling",
        "toy curv": 'Paper: App. C, "Curvature constants" (Eq. (24)-(25): 1/n for every block).',
        "toy t": "Paper: App. C, Eq. (22) (t >= Ω(min{K, 1/(nε)})).",
        "box": "at the optimal β_u = [v − ub]_+ (Paper: Eq. (3)\n    negated; App. H, Eq. (38)).",
        "app": "Paper: App. L.", "fig": "as in Fig. 9 of the paper", "line": "(Paper: Alg. 4 line 40)",
        "theory": "C_f^(i) <= 4 R_i² / (λ n²) with R_i.\n\n    Paper: Sec. 3.1 (estimate used for "
                  "Fig. 1c) and App. D",
        "theorem 3": "Theorem 3 keeps convergence; its proof (App. E) covers",
        "config": "Paper: Sec. 3 (gap sampling, pairwise/away steps, caching), App. B (gap checks).",
        "alg": "Paper: Alg. 10.", "sec": "Sec. 3.7 says",
    }
    for where, text in old.items():
        assert check_text(where, text), where
    # and passes the corrected ones
    good = ["blocks (Eq. (5)-(7)):", "Exact duality gap (n oracle calls; Paper: Eq. (5)).",
            "The toy dual (Eq. (15), the 1/4 α² term)", "Curvature constants (Eq. (18)-(19))",
            "Paper: App. C, Eq. (16) (t >= Ω(min{K, 1/(nε)})).", "the box dual (App. H, Eq. (52))"]
    for text in good:
        assert check_text("good", text) == [], text


def test_every_citation_exists_and_points_right():
    bad = []
    n = 0
    for where, text in _texts():
        n += sum(1 for _ in citations(text))
        bad.extend(check_text(where, text))
    assert n > 100, "the scan found too few citations: is the pattern broken?"
    assert not bad, "\n".join(bad)
