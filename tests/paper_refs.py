"""The paper's numbering (Osokin et al., ICML 2016), parsed from its LaTeX, and the paper
citations ("Eq. (N)", "Alg. N", "App. X", "Sec. N.M") found in the repository's text.

The LaTeX is not part of the repository: :func:`paper_tex` finds it through ``$GAPLAB_PAPER_TEX``
or next to the repository (``../shared/paper/``). ``tests/paper_numbering.json`` holds the
numbering parsed from it (written by ``python tests/paper_refs.py --write``), so the citation
check runs without the LaTeX, and is compared with a fresh parse whenever the LaTeX is present.

Numbering rules (LaTeX and amsmath, article class, one equation counter that the appendix does
not reset):

* ``equation`` and ``multline`` give one number unless they contain ``\\notag`` / ``\\nonumber``;
  ``align`` (and ``gather``, ``flalign``, ``alignat``, ``eqnarray``) one number per row (rows end
  at a ``\\\\`` outside braces and nested environments) unless the row says ``\\notag``;
  starred environments and ``\\[ \\]`` give none. A ``\\label`` on an unnumbered row names the
  environment's next numbered row (the number printed next to that display).
* Algorithms are numbered in the order of their ``algorithm`` environments (their lines: every
  statement and block end of ``algorithmic[1]``), figures in the order
  of their ``figure`` / ``figure*`` environments (sub-figures are letters).
* Sections and subsections before ``\\appendix`` are numbered 1, 1.1, ...; the unstarred
  ``\\section`` s after it are lettered A, B, ...
"""
from __future__ import annotations

import json
import os
import re
import string
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NUMBERING_JSON = Path(__file__).with_name("paper_numbering.json")
TEX_NAME = "minding_the_gaps_icml2016.tex"

_ENVS = ("equation", "align", "multline", "gather", "flalign", "alignat", "eqnarray")
_BEGIN = re.compile(r"\\begin\{(" + "|".join(_ENVS) + r")(\*?)\}")
_LABEL = re.compile(r"\\label\{([^}]*)\}")
_UNNUMBERED = re.compile(r"\\(?:notag|nonumber)\b")
# the numbered lines of an algorithmic environment (with [1]: every statement and block end)
_ALG_LINE = re.compile(r"\\(?:STATE|IF|ELSIF|ELSE|ENDIF|FOR|FORALL|ENDFOR|WHILE|ENDWHILE|REPEAT|UNTIL|"
                       r"LOOP|ENDLOOP|RETURN|PRINT)\b")


def paper_tex() -> Path | None:
    """The paper's LaTeX source, or None when it is not on this machine."""
    cands = [os.environ.get("GAPLAB_PAPER_TEX", ""), REPO.parent / "shared" / "paper" / TEX_NAME,
             REPO.parents[1] / "shared" / "paper" / TEX_NAME if len(REPO.parents) > 1 else ""]
    for c in cands:
        if c and Path(c).is_file():
            return Path(c)
    return None


def _strip_comments(src: str) -> str:
    return re.sub(r"(?<!\\)%[^\n]*", "", src)


def _rows(body: str) -> list[str]:
    """Split an align-like body at top-level ``\\\\``."""
    rows, brace, env, cur, j = [], 0, 0, 0, 0
    while j < len(body):
        if body.startswith("\\begin{", j):
            env += 1
        elif body.startswith("\\end{", j):
            env -= 1
        c = body[j]
        if body.startswith("\\\\", j):
            if brace == 0 and env == 0:
                rows.append(body[cur:j])
                cur = j + 2
            j += 2
            continue
        if c == "\\":            # an escaped character (\{, \}, \%) never opens or closes a group
            j += 2
            continue
        if c == "{":
            brace += 1
        elif c == "}":
            brace -= 1
        j += 1
    rows.append(body[cur:])
    if not rows[-1].strip():
        rows.pop()
    return rows


def parse_numbering(src: str) -> dict:
    """The paper's equation, algorithm, section and appendix numbering.

    Returns ``{"equations": {label: n}, "n_equations": N, "algorithms": {label: n},
    "n_algorithms": N, "sections": {"3.1": title}, "appendices": {"C": title},
    "section_labels": {label: "3.1" or "C"}}``.
    """
    src = _strip_comments(src)
    eqs, n, pos = {}, 0, 0
    while True:
        m = _BEGIN.search(src, pos)
        if m is None:
            break
        env, star = m.group(1), m.group(2)
        end_tag = f"\\end{{{env}{star}}}"
        end = src.index(end_tag, m.end())
        body = src[m.end():end]
        pos = end + len(end_tag)
        if star:
            continue
        if env in ("equation", "multline"):
            rows = [body]
            numbered = [not _UNNUMBERED.search(body)]
        else:
            rows = _rows(body)
            numbered = [not _UNNUMBERED.search(r) for r in rows]
        numbers = []
        for ok in numbered:
            if ok:
                n += 1
            numbers.append(n if ok else None)
        for r, (row, num) in enumerate(zip(rows, numbers)):
            for lab in _LABEL.findall(row):
                if num is None:   # a label on an unnumbered row: the display's next numbered row
                    nxt = [x for x in numbers[r:] if x is not None] or [x for x in numbers[:r] if x is not None]
                    num = nxt[0] if nxt else None
                if num is not None:
                    eqs[lab] = num
    algs, k, alg_lines = {}, 0, {}
    for m in re.finditer(r"\\begin\{algorithm\*?\}(.*?)\\end\{algorithm\*?\}", src, re.S):
        k += 1
        alg_lines[str(k)] = len(_ALG_LINE.findall(m.group(1)))
        labs = [lab for lab in _LABEL.findall(m.group(1)) if ":" not in lab.split("alg:", 1)[-1]]
        for lab in labs:
            algs[lab] = k
        algs.setdefault(f"#{k}", k)
    n_fig = len(re.findall(r"\\begin\{figure\*?\}", src))
    head, _, tail = src.partition("\\appendix")
    sections, section_labels = {}, {}
    sec = sub = 0
    for m in re.finditer(r"\\(section|subsection)(\*?)\{", head):
        if m.group(2):
            continue
        title = _braced(head, m.end() - 1)
        if m.group(1) == "section":
            sec, sub = sec + 1, 0
            key = str(sec)
        else:
            sub += 1
            key = f"{sec}.{sub}"
        sections[key] = _clean(title)
        for lab in _LABEL.findall(head[m.start():m.start() + len(title) + 200].split("\n", 1)[0]):
            section_labels[lab] = key
    appendices = {}
    letters = iter(string.ascii_uppercase)
    for m in re.finditer(r"\\section(\*?)\{", tail):
        if m.group(1):
            continue
        letter = next(letters)
        title = _braced(tail, m.end() - 1)
        appendices[letter] = _clean(title)
        for lab in _LABEL.findall(tail[m.start():].split("\n", 1)[0]):
            section_labels[lab] = letter
    return {"equations": eqs, "n_equations": n, "algorithms": algs, "n_algorithms": k, "n_figures": n_fig,
            "algorithm_lines": alg_lines,
            "sections": sections, "appendices": appendices, "section_labels": section_labels}


def _braced(s: str, i: int) -> str:
    """The text of the brace group that opens at s[i]."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "{" and s[j - 1] != "\\":
            depth += 1
        elif s[j] == "}" and s[j - 1] != "\\":
            depth -= 1
            if depth == 0:
                return s[i + 1:j]
    raise ValueError("unbalanced braces")


def _clean(title: str) -> str:
    return re.sub(r"\s+", " ", _LABEL.sub("", title)).strip()


def load_numbering() -> dict:
    return json.loads(NUMBERING_JSON.read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- citations
# "Eq. (5)", "Eqs. (5)-(7)", "Eq. (4)-(6)", "Eq. (24)–(25)", "Eq. (1)-(3)"
CITE_EQ = re.compile(r"\bEqs?\.\s*\((\d+)\)(?:\s*(?:-|–|—|to|and|,)\s*\(?(\d+)\)?)?")
CITE_ALG = re.compile(r"\bAlg(?:orithm)?s?\.?\s+(\d+)(?:\s*(?:-|–|,|and)\s*(\d+)(?!\s*line))?")
CITE_ALG_LINE = re.compile(r"\bAlg\.\s+(\d+),?\s+lines?\s+(\d+)(?:\s*[-–]\s*(\d+))?")
# "Alg. 4 lines 9, 11", "Alg. 2 lines 4, 6 and 8", "Alg. 6, lines 9 and 13": every item of the list
_LINE_ITEM = r"\d+(?:\s*[-–]\s*\d+)?"
CITE_ALG_LINES = re.compile(r"\bAlg\.\s+(\d+),?\s+lines?\s+(" + _LINE_ITEM + r"(?:\s*(?:,\s*and|,|and)\s*"
                            + _LINE_ITEM + r")*)")
CITE_APP = re.compile(r"\bApp(?:endix)?\.?\s+([A-Z])(?:\.(\d+))?\b")
CITE_FIG = re.compile(r"\bFigs?\.?\s+(\d+)([a-c])?\b")
CITE_SEC = re.compile(r"\bSec(?:tion)?s?\.?\s+(\d+(?:\.\d+)?)(?:\s*(?:-|–)\s*(\d+(?:\.\d+)?))?")

# where the repository cites the paper
CITED_FILES = ("core/**/*.py", "app/**/*.py", "toy_examples/**/*.py", "cli/*.py", "plots.py",
               "README.md", "__init__.py", "docs/*.md", "docs/guide/*.md")


def cited_files():
    out = []
    for pat in CITED_FILES:
        out.extend(sorted(REPO.glob(pat)))
    return [p for p in out if ".venv" not in p.parts]


def citations(text: str):
    """Every (kind, first, last, position) cited in ``text``: kind "eq", "alg", "app", "fig",
    "sec", or "algN:line" (lines first..last of Alg. N)."""
    for m in CITE_EQ.finditer(text):
        a = int(m.group(1))
        yield "eq", a, int(m.group(2)) if m.group(2) else a, m.start()
    for m in CITE_ALG.finditer(text):
        a = int(m.group(1))
        yield "alg", a, int(m.group(2)) if m.group(2) else a, m.start()
    for m in CITE_APP.finditer(text):
        yield "app", m.group(1), m.group(1), m.start()
    for alg, a, b, pos in alg_line_citations(text):
        yield f"alg{alg}:line", a, b, pos
    for m in CITE_FIG.finditer(text):
        yield "fig", int(m.group(1)), int(m.group(1)), m.start()
    for m in CITE_SEC.finditer(text):
        yield "sec", m.group(1), m.group(2) or m.group(1), m.start()


def alg_line_citations(text: str):
    """Every (alg, first, last, position) of the algorithm lines cited in ``text``: "Alg. 4
    lines 9, 11" gives (4, 9, 9, p) and (4, 11, 11, p), "Alg. 5 lines 6-10" (5, 6, 10, p)."""
    for m in CITE_ALG_LINES.finditer(text):
        for item in re.findall(r"(\d+)(?:\s*[-–]\s*(\d+))?", m.group(2)):
            a = int(item[0])
            yield int(m.group(1)), a, int(item[1]) if item[1] else a, m.start()


def algorithm_line_texts(src: str) -> dict:
    """The numbered lines of every algorithm, as the PDF numbers them: ``{"1": [LaTeX of line 1,
    ...], ...}`` (algorithms in the order of their environments; with ``algorithmic[1]``
    every statement, block start, ``else`` and block end is one numbered line, an ``input`` line
    none; whitespace collapsed)."""
    src = _strip_comments(src)
    out = {}
    for k, m in enumerate(re.finditer(r"\\begin\{algorithm\*?\}(.*?)\\end\{algorithm\*?\}", src, re.S), 1):
        body = m.group(1)
        end = body.find("\\end{algorithmic}")
        starts = [x.start() for x in _ALG_LINE.finditer(body)]
        out[str(k)] = [re.sub(r"\s+", " ", body[s:(starts[j + 1] if j + 1 < len(starts) else end)]).strip()
                       for j, s in enumerate(starts)]
    return out


if __name__ == "__main__":
    import sys
    tex = paper_tex()
    if tex is None:
        sys.exit("paper LaTeX not found: set GAPLAB_PAPER_TEX")
    num = parse_numbering(tex.read_text(encoding="utf-8"))
    if "--write" in sys.argv:
        NUMBERING_JSON.write_text(json.dumps(num, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(num, indent=1, sort_keys=True))
