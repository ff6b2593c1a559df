"""The lines of the paper's algorithms that gaplab cites, by content: one table that the
reference solver, the compiled kernels' comments and the app's narration cite from.

:data:`LINES` names every algorithm line (or range of lines) the code cites, with what the
line says: ``latex``, a pattern its LaTeX source matches (the test
``tests/project/test_algorithm_lines.py`` numbers the lines of each ``algorithmic``
environment as the PDF does and checks the pattern on the line the number names), and
``words``, a pattern a sentence that cites the line uses for it (the test checks every
"Alg. N line M" of the repository against it). :data:`PHASES` groups them by the phase of a
block step that implements them; :func:`cite` writes a phase's citation ("Alg. 1 line 7,
Alg. 3 line 11").

Line numbers are those the PDF prints: every statement and every block start, ``else`` and
block end of an ``algorithmic`` environment is a numbered line (an ``input`` line is not).

Paper: Alg. 1-9 (Osokin et al., ICML 2016).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AlgLine", "LINES", "PHASES", "cite", "phase_lines"]


@dataclass(frozen=True)
class AlgLine:
    """Lines ``first``..``last`` of Alg. ``alg``: ``what`` they do, a regex ``latex`` their
    first line's LaTeX matches (``latex_last``: the last line's, for a range), and a regex
    ``words`` that a sentence citing them uses."""

    alg: int
    first: int
    last: int
    what: str
    latex: str
    words: str
    latex_last: str = ""

    def __str__(self) -> str:
        if self.first == self.last:
            return f"Alg. {self.alg} line {self.first}"
        return f"Alg. {self.alg} lines {self.first}-{self.last}"


# words shared by several lines
_ORACLE = r"max oracle|oracle|argmax|y\*|y_s|y_fw|FW corner|score"
_SEARCH = r"line search|γ|step size|gamma"
_INIT = r"start|init|α_i = e|α⁰|w = 0|w_i = 0|ℓ_i = 0|S_i = \{y_i\}|fresh"
_AWAY = r"away corner|y\^a|y_a|argmin|worst"
_GAP_STORE = r"k_i|g_i\^\(k_i\)|stor|remember|estimate|record"

_L = [
    # Alg. 1: BCFW
    AlgLine(1, 1, 1, "start at w = w_i = 0, ℓ = ℓ_i = 0", r"^\\STATE Let .*\\weightv\^\{\(0\)\}", _INIT),
    AlgLine(1, 2, 2, "the loop over iterations k", r"^\\FOR\{\$k:=0", r"for k|loop|iteration"),
    AlgLine(1, 3, 3, "pick a block uniformly", r"Pick \$i\$ at random in", r"uniform|sampl|draw|pick|randint"),
    AlgLine(1, 4, 4, "the max oracle y* = argmax H_i(y; w)", r"Solve \$\\outputvarv_i\^\* := .*argmax", _ORACLE),
    AlgLine(1, 5, 5, "the FW corner's w_s and ℓ_s", r"Let \$\\weightv_\{\\sv\}", r"w_s|ℓ_s|corner|FW direction"),
    AlgLine(1, 6, 6, "the block gap g_i", r"Let \$g_i\^\{\(k\)\} :=", r"block gap|g_i"),
    AlgLine(1, 7, 7, "the line search γ = g_i / (λ‖w_i − w_s‖²) clipped to [0, 1]",
            r"Let \$\\stepsize := \\frac\{ g_i\^\{\(k\)\}\}", _SEARCH + r"|fraction of the block"),
    AlgLine(1, 8, 11, "the update of w_i, ℓ_i, w and ℓ", r"Update \$\{\\weightv_i\}\^\{\(k\+1\)\}",
            r"update|w_i|w ←|Δw|move|change", r"\\ell\^\{\(k\+1\)\}:= ~\\ell\^\{\(k\)\}"),
    AlgLine(1, 4, 11, "one block step", r"Solve \$\\outputvarv_i\^\*", r"step",
            r"\\ell\^\{\(k\+1\)\}:= ~\\ell\^\{\(k\)\}"),
    # Alg. 2: BCFW with gap sampling
    AlgLine(2, 1, 1, "initial gap estimates g_i^(0) = +∞", r"g_i\^\{\(0\)\}\\!\\!:=\\!\+\\infty",
            r"\+∞|\+inf|unvisited|not visited|never|first visit|Before its first"),
    AlgLine(2, 4, 4, "pick a block with probability ∝ g_i^(k_i)", r"Pick \$i\$ at random with probability \$\\propto",
            r"gap sampling|∝|proportion|p_i|P\(i\)|draw|sampl|unvisited"),
    AlgLine(2, 5, 5, "the max oracle", r"Solve \$\\outputvarv_i\^\* := .*argmax", _ORACLE),
    AlgLine(2, 6, 6, "k_i := k", r"Let \$k_i := k\$", _GAP_STORE),
    AlgLine(2, 8, 8, "the block gap g_i^(k_i), stored for sampling", r"Let \$g_i\^\{\(k_i\)\} :=", _GAP_STORE + r"|block gap"),
    AlgLine(2, 14, 14, "the 'update global gap' test", r"^\\IF \{update global gap\}", r"global gap|gap pass|gap check"),
    AlgLine(2, 14, 21, "the exact gap pass that refreshes every g_i", r"^\\IF \{update global gap\}",
            r"global gap|gap pass|gap check|exact gap", r"^\\ENDIF"),
    # Alg. 3: BCPFW
    AlgLine(3, 1, 3, "start with the active sets S_i = {y_i}", r"^\\STATE Let .*\\weightv\^\{\(0\)\}", _INIT,
            r"\\dualvar_i\^\{\(0\)\}\(\\outputvarv_i\):=1"),
    AlgLine(3, 6, 6, "the max oracle (FW corner)", r"Solve \$\\outputvarv_i\^\* := .*FW corner", _ORACLE),
    AlgLine(3, 8, 8, "the away corner y^a = argmin over S_i of H_i", r"Solve \$\\outputvarv_i\^a := .*argmin.*away corner", _AWAY),
    AlgLine(3, 10, 10, "the pairwise direction w_d = w_s − w_a", r"Let \$\\weightv_\{\\bm\{d\}\} := \\weightv_\{\\sv\}-\\weightv_\{\\awayv\}",
            r"pairwise direction|w_s − w_a|m\(y_fw\) − m\(y_a\)|direction"),
    AlgLine(3, 11, 11, "the pairwise line search, γ clipped to [0, α_i(y^a)]",
            r"Let \$\\stepsize := .*clip to \$\[0,\\dualvar_i\^\{\(k\)\}\(\\outputvarv_i\^a\)\]", _SEARCH + r"|α_a"),
    AlgLine(3, 12, 15, "the update of w_i, ℓ_i, w and ℓ along w_d", r"Update \$\{\\weightv_i\}\^\{\(k\+1\)\}:= \{\\weightv_i\}\^\{\(k\)\}\+\\stepsize",
            r"update|w_i|move", r"\\ell\^\{\(k\+1\)\}:= ~\\ell\^\{\(k\)\}"),
    AlgLine(3, 16, 16, "add the FW corner to the active set", r"Update \$\{\\activeS_i\}\^\{\(k\+1\)\}.*\\cup",
            r"active set|add|store"),
    AlgLine(3, 16, 21, "move γ from y^a to y*, and the drop step", r"Update \$\{\\activeS_i\}\^\{\(k\+1\)\}.*\\cup",
            r"α|atom|drop|active set|mass", r"^\\ENDIF"),
    # Alg. 4: BCAFW
    AlgLine(4, 8, 8, "the away corner y^a", r"Solve \$\\outputvarv_i\^a := .*argmin.*away corner", _AWAY),
    AlgLine(4, 9, 9, "the away corner's w_a and ℓ_a", r"Let \$\\weightv_\{\\awayv\}", r"w_a|ℓ_a|away direction|away corner"),
    AlgLine(4, 10, 10, "the FW gap g_i^FW", r"Let \$g_i\^\{FW\} :=", r"g_i\^FW|FW gap|g<sub>i</sub><sup>FW"),
    AlgLine(4, 11, 11, "the away gap g_i^A", r"Let \$g_i\^\{A\} :=", r"g_i\^A|away gap|g<sub>i</sub><sup>A"),
    AlgLine(4, 12, 12, "FW step if g_i^FW > g_i^A, else away step", r"^\\IF\{\$g_i\^\{FW\} > g_i\^\{A\}\$",
            r"g_i\^FW > g_i\^A|g<sub>i</sub><sup>FW</sup> &gt; g|g<sub>i</sub><sup>FW</sup> > g|FW step only when|"
            r"FW if equal|tie|larger gap|takes the FW step|exceeds"),
    AlgLine(4, 13, 13, "the FW branch's line search, γ in [0, 1]", r"Let \$\\stepsize := \\frac\{g_i\^\{FW\}\}", _SEARCH),
    AlgLine(4, 14, 17, "the FW branch's update of α_i and S_i", r"Update \$\{\\activeS_i\}\^\{\(k\+1\)\}.*\\cup",
            r"α|atom|active set|mass", r"Set \$\{\\activeS_i\}\^\{\(k\+1\)\}\\;:= \\\{\\outputvarv_i\^\* \\\}"),
    AlgLine(4, 19, 19, "the away branch's line search, γ in [0, α_a/(1 − α_a)]",
            r"Let \$\\stepsize := \\frac\{g_i\^\{A\}\}.*\\frac\{\\dualvar_i\(\\outputvarv_i\^a\)\}\{1-\\dualvar_i",
            _SEARCH + r"|α_a/\(1 − α_a\)|α/\(1 − α\)"),
    AlgLine(4, 20, 22, "the away branch's update of α_i (mass off y^a) and the drop step",
            r"Update .*\(1\+\\stepsize\)\\dualvar_i", r"α|atom|drop|active set|mass",
            r"\\setminus \\\{\\outputvarv_i\^a \\\}"),
    AlgLine(4, 24, 27, "the update of w_i, ℓ_i, w and ℓ", r"Update \$\{\\weightv_i\}\^\{\(k\+1\)\}:= \{\\weightv_i\}\^\{\(k\)\}\+\\stepsize",
            r"update|w_i|move", r"\\ell\^\{\(k\+1\)\}:= ~\\ell\^\{\(k\)\}"),
    # Alg. 5: BCFW with a cache
    AlgLine(5, 1, 3, "start: C_i = {y_i}, g = g_i = +∞, k_0 = k_i = 0", r"\\cache_i\\!:=\\!\\\{\\outputvarv_i\\\}",
            _INIT + r"|C_i|\+inf|\+∞", r"k_0\\!:=\\!k_i\\!:=\\!0"),
    AlgLine(5, 2, 2, "g^(0) = g_i^(0) = +∞", r"\$g\^\{\(0\)\}\\!:=\\!g_i\^\{\(0\)\}\\!=\\!\+\\infty",
            r"\+∞|\+inf|infinite|never computed|first exact gap pass|first gap pass"),
    AlgLine(5, 6, 6, "the cache corner y^c = argmax over C_i of H_i", r"Solve \$\\outputvarv_i\^c := \\argmax_\{\\outputvarv\\in\\cache_i\}",
            r"cache corner|cached labelling|y\^c|argmax_cache"),
    AlgLine(5, 8, 8, "the cache corner's gap", r"Let \$\\cachegap_i\^\{\(k\)\} :=", r"cache gap|cache corner|g_i\^c|g<sub>i</sub><sup>c"),
    AlgLine(5, 9, 9, "the cache hit test against max(F g_i^(k_i), (ν/n) g^(k_0))",
            r"^\\IF\{\$\\cachegap_i\^\{\(k\)\} \\geq \\max\(\\cacheF g_i\^\{\(k_i\)\},\\frac\{\\cacheN\}\{n\} g\^\{\(k_0\)\}\)",
            r"cache hit|hit criterion|hit rule|threshold"),
    AlgLine(5, 6, 10, "the cache lookup: cache corner, its gap, the hit test, the hit",
            r"Solve \$\\outputvarv_i\^c :=", r"cache", r"\\weightv_\{\\sv\}:= \\weightv_\{\\cachev\}"),
    AlgLine(5, 6, 17, "the FW corner: the cache corner on a hit, else the max oracle",
            r"Solve \$\\outputvarv_i\^c :=", r"cache", r"^\\ENDIF"),
    AlgLine(5, 12, 12, "on a miss, the max oracle", r"Solve \$\\outputvarv_i\^\* := .*FW corner", _ORACLE + r"|miss"),
    AlgLine(5, 14, 15, "on a miss, the block gap g_i^(k) and k_i := k", r"Let \$g_i\^\{\(k\)\} :=",
            _GAP_STORE + r"|block gap|miss", r"Set \$k_i := k\$"),
    AlgLine(5, 16, 16, "add the FW corner to the cache", r"Update \$\{\\cache_i\}\\;:= \{\\cache_i\} \\cup", r"cache"),
    AlgLine(5, 18, 18, "the line search with the cache gap (= g_i on a miss)",
            r"Let \$\\stepsize := \\frac\{ \\cachegap_i \}", _SEARCH),
    AlgLine(5, 23, 31, "the exact gap pass that sets g^(k_0)", r"^\\IF \{update global gap\}",
            r"global gap|gap pass|gap check|exact gap", r"^\\ENDIF"),
    # Alg. 6: init-reg-path
    AlgLine(6, 3, 3, "ỹ_i = argmax H_i(y; 0)", r"\\tilde\{\\outputvarv\}_i := \\argmax", r"ỹ_i|argmax|w = 0"),
    AlgLine(6, 6, 6, "ψ̃ += ψ(ỹ_i)/n", r"\$\\tilde\{\\featuremapdiffv\} := \\tilde\{\\featuremapdiffv\} \+", r"ψ̃"),
    AlgLine(6, 9, 9, "θ_i = max_y −ψ̃ᵀψ(y)", r"\$\\theta_i := \\max", r"θ_i|θ"),
    AlgLine(6, 11, 11, "λ^∞ = (‖ψ̃‖² + Σθ_i/n)/(κε)", r"Let \$\\regularizerweight\^\\infty := \\frac\{1\}\{\\factorRegPath\\epsilon\}",
            r"λ_∞|λ\^∞|λ\^\\infty|κε|lambda_inf|\\lambda\^\\infty|\\kappa\\varepsilon"),
    AlgLine(6, 13, 13, "the block gaps g_i at λ^∞", r"\$g_i := \\frac\{1\}\{\\numsamples \\regularizerweight\^\\infty\}",
            r"g_i|block gap|bound|δψ_i\(ỹ_i\)"),
    # Alg. 7: the regularization path
    AlgLine(7, 4, 4, "δ_i = ℓ_i − λ⟨w, w_i⟩", r"\$\\delta_i := \\ell_i\^J -\\regularizerweight\^J", r"δ_i|delta"),
    AlgLine(7, 22, 22, "run the SSVM solver to tolerance κε", r"Run SSVM-optimizer with tolerance", r"solve|solver|breakpoint|gap pass"),
    # Alg. 8 and 9: box constraints
    AlgLine(8, 7, 7, "the batch FW corner v_s, ℓ_s", r"Let \$\\notruncv_\{\\sv\} := \{\\displaystyle\\sum", r"v_s|ℓ_s"),
    AlgLine(8, 8, 8, "the batch line search", r"Let \$\\stepsize := \\frac\{\\regularizerweight \(\\notruncv\^\{\(k\)\}", _SEARCH + r"|line_search"),
    AlgLine(9, 7, 7, "the line search on the untruncated v_i against w = clip(v)",
            r"Let \$\\stepsize := \\frac\{ \\regularizerweight \(\\notruncv_i\^\{\(k\)\}-\\notruncv_\{\\sv\}\)",
            _SEARCH + r"|box|untruncated|\bv\b"),
    AlgLine(9, 12, 12, "w = clip(v) (truncation)", r"Let \$\\weightv\^\{\(k\+1\)\}:= \[ \\notruncv\^\{\(k\+1\)\} \]_\{\\lb\}\^\{\\ub\}",
            r"clip|trunc"),
]

#: (alg, first, last) -> AlgLine: every algorithm line or range the repository cites.
LINES: dict[tuple[int, int, int], AlgLine] = {(x.alg, x.first, x.last): x for x in _L}

#: phase of a block step -> the algorithm lines it implements, as (alg, first, last) keys of
#: :data:`LINES`. The compiled kernels' phases (:mod:`gaplab.core.kernels.phases`) cite exactly
#: these; the test checks their docstrings against this table.
PHASES: dict[str, tuple[tuple[int, int, int], ...]] = {
    "sample_uniform": ((1, 3, 3),),
    "sample_gap": ((2, 4, 4),),
    "gap_init": ((2, 1, 1),),
    "cache_init": ((5, 2, 2),),
    "oracle": ((1, 4, 4), (2, 5, 5)),
    "store_gap": ((2, 8, 8), (5, 14, 15)),
    "cache_corner": ((5, 6, 6),),
    "cache_gap": ((5, 8, 8),),
    "cache_rule": ((5, 9, 9),),
    "cache_lookup": ((5, 6, 10),),
    "cache_insert": ((5, 16, 16),),
    "away_corner": ((3, 8, 8), (4, 8, 8)),
    "fw_direction": ((1, 5, 5),),
    "away_direction": ((4, 9, 9), (4, 11, 11)),
    "pairwise_direction": ((3, 10, 10),),
    "fw_or_away": ((4, 12, 12),),
    "away_gap": ((4, 11, 11),),
    "line_search": ((1, 7, 7), (3, 11, 11), (4, 13, 13), (4, 19, 19), (5, 18, 18), (9, 7, 7)),
    "apply_fw": ((1, 8, 11), (4, 14, 17)),
    "apply_away": ((4, 20, 22), (4, 24, 27)),
    "apply_pairwise": ((3, 12, 15), (3, 16, 21)),
}


def phase_lines(*phases: str) -> list[AlgLine]:
    """The :class:`AlgLine` s of the named phases, in table order, each once.

    Raises
    ------
    KeyError
        For a phase not in :data:`PHASES`.
    """
    out = []
    for ph in phases:
        for key in PHASES[ph]:
            if LINES[key] not in out:
                out.append(LINES[key])
    return out


def cite(*phases: str) -> str:
    """The citation of the named phases, e.g. ``cite("line_search")`` ->
    "Alg. 1 line 7, Alg. 3 line 11, ...".

    Raises
    ------
    KeyError
        For a phase not in :data:`PHASES`.
    """
    return ", ".join(str(x) for x in phase_lines(*phases))
