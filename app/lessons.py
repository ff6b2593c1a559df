"""Lesson mode: a short guided sequence through the paper (Osokin et al., ICML 2016, Sec. 2-4
and App. C), each page with its live view of the same session.

The texts are data (:data:`LESSONS`); :class:`LessonPanel` shows one page at a time with
Previous / Next, an optional "Set up" button that applies the page's settings to the session,
the page's live view (a view object updated from the session's snapshots like the tabs) and,
for a page that explains an algorithm, the source of the functions of the readable reference
solver (:mod:`gaplab.core.reference`) that implement it.
"""
from __future__ import annotations

import functools
import html
import inspect
from dataclasses import dataclass, field

__all__ = ["Lesson", "LESSONS", "LessonPanel", "lesson_code"]


@dataclass(frozen=True)
class Lesson:
    title: str
    text: str
    views: tuple            # keys of live views ("anatomy", "blocks", "gap", "primal_dual", "cache", "toy", "path", "simplex")
    setup: dict = field(default_factory=dict)   # Session settings applied by "Set up this page"
    try_this: str = ""
    code: tuple = ()        # gaplab.core.reference functions shown next to the text: drivers first


LESSONS = (
    Lesson(
        "1 · The structured SVM and its dual",
        r"""
A linear model predicts $h_w(x) = \arg\max_{y \in \mathcal{Y}(x)} \langle w, \phi(x, y)\rangle$ —
for OCR, $y$ is the word (one letter per 16×8 image) and the argmax is a Viterbi pass.
Training solves the **primal**

$$\min_w \; \frac{\lambda}{2}\|w\|^2 + \frac1n \sum_{i=1}^n \max_{y \in \mathcal{Y}_i} H_i(y; w),$$

$$H_i(y;w) = L_i(y) - \langle w, \psi_i(y)\rangle,$$

with $\psi_i(y) = \phi(x_i, y_i) - \phi(x_i, y)$. The inner max is the **max oracle**
(loss-augmented decoding). The paper writes the **dual** as a minimization (Eq. (3): $f$ is the
negative of a Fenchel dual), with one simplex per training example (a *block*):

$$\min_{\alpha \ge 0} \; f(\alpha) = \frac{\lambda}{2}\|A\alpha\|^2 - b^\top\alpha \quad \text{s.t.}\; \sum_{y} \alpha_i(y) = 1 \;\; \forall i,$$

and $w(\alpha) = A\alpha$. The plots show the dual *value* $D(\alpha) = -f(\alpha) = \ell - \frac{\lambda}{2}\|w\|^2$
(with $\ell = b^\top\alpha$), which lies below the primal at every $w$. BCFW (Alg. 1) stores
only $w$, $\ell$ and, per block, $w_i$ and $\ell_i$ (gaplab: statistics $\mu_i$ for $w_i$);
pairwise/away steps and the cache also keep $\alpha_i$ (pages 5, 6).
""",
        views=("primal_dual", "gap"),
        setup={"dataset": "ocr-small", "sampling": "uniform", "step_kind": "fw", "cache": False},
        code=("corner", "dual_objective"),
        try_this="Press **Run**: the dual value $D = -f$ (blue) never falls (each step's line "
                 "search decreases $f$, or leaves it at γ = 0); the primal (red, at gap checks) comes down overall but "
                 "may rise between two checks: only the dual is monotone. Their difference is the "
                 "duality gap, shown on the right in log scale.",
    ),
    Lesson(
        "2 · One block-coordinate Frank-Wolfe step",
        r"""
BCFW (Alg. 1) picks a block $i$, calls the max oracle $y_i^* = \arg\max_y H_i(y; w)$ — the
**FW corner** of block $i$'s simplex — and moves block $i$ towards it:

$$w_s = \tfrac{1}{\lambda n}\psi_i(y_i^*), \qquad \ell_s = \tfrac1n L_i(y_i^*),$$

$$g_i = \lambda (w_i - w_s)^\top w - \ell_i + \ell_s,$$

$$\gamma = \mathrm{clip}_{[0,1]}\Big(\frac{g_i}{\lambda\|w_i - w_s\|^2}\Big),$$

$$w_i \leftarrow (1-\gamma) w_i + \gamma w_s, \qquad w \leftarrow w + \Delta w_i .$$

The line search is exact because $f$ is quadratic. $g_i$ is the **block gap**: a by-product of
the oracle call that measures how far block $i$ is from optimal. If $g_i \le 0$ the step has
$\gamma = 0$ and nothing moves.

On the box datasets (horse, pose; App. H, Alg. 9) the solver keeps the *untruncated*
$v = \sum_i v_i$ and uses $w = \mathrm{clip}(v)$: the gap and $\gamma$ use $v_i$ and $v_s$ in place of
$w_i$ and $w_s$, against the clipped $w$. That $\gamma$ is exact for the dual with the box
multipliers $\beta$ held fixed; re-clipping afterwards lowers $f$ further, so the "dual
improvement" the anatomy shows is a lower bound there.
""",
        views=("anatomy",),
        setup={"dataset": "ocr-small", "sampling": "uniform", "step_kind": "fw", "cache": False},
        code=("bcfw_step", "fw_candidate", "block_gap", "line_search", "apply_step"),
        try_this="Press **Step** a few times. The anatomy shows the word image, its ground truth and "
                 "the FW corner $y^*$ (red letters differ from the truth), γ and the block gap "
                 "before and after the step.",
    ),
    Lesson(
        "3 · The duality gap is a sum of block gaps",
        r"""
The Frank-Wolfe gap equals the Lagrange duality gap between primal and dual, and it splits over
blocks (Eq. (5)-(7)):

$$g(\alpha) = \sum_{i=1}^n g_i(\alpha),$$

$$g_i(\alpha) = \frac1n\Big(\max_{y} H_i(y; w) - \sum_y \alpha_i(y) H_i(y; w)\Big) \ge 0 .$$

$g_i = 0$ exactly when every support labelling of block $i$ is a tied solution of the max
oracle. Computing all $g_i$ costs a full pass of $n$ oracle calls; BCFW gets **one** of them
for free at every step.
""",
        views=("blocks",),
        setup={"sampling": "uniform"},
        code=("exact_gap", "block_gap"),
        try_this="Run a few passes, then press **Compute exact gaps**: the red dashes are the exact "
                 "$g_i$, the bars the estimates $\\hat g_i = g_i^{(k_i)}$ remembered from the last time "
                 "each gap was computed (the block's last oracle call, or the last exact gap pass). An "
                 "estimate is the gap *before* that block's step; the step usually lowers the block's "
                 "gap, so the estimate usually overestimates it, but not always: the step moves $w$ and "
                 "with it every score, and after a long step ($\\gamma > 0.5$) the gap was more often "
                 "higher than lower. Between gap passes $\\sum_i \\hat g_i$ is no bound on the duality "
                 "gap (Fig. 1b: it can be far above or below it).",
    ),
    Lesson(
        "4 · Gap sampling and staleness",
        r"""
Sec. 3.1: sample blocks in proportion to their gap estimates,
$p_i \propto \hat g_i = g_i^{(k_i)} = g_i(\alpha^{(k_i)})$, where $k_i$ is the last iteration at
which gap $i$ was computed (Alg. 2): a step on block $i$ that called the max oracle, or an exact gap pass, which
refreshes every $k_i$ (a cache hit, page 6, does not). Before its first visit a block's
estimate is $+\infty$ (Alg. 2 line 1), so the first draws are uniform over the unvisited blocks.

Theorem 2 assumes **exact** gaps at every step (not the stale estimates) and bounds

$$\mathbb{E} f(\alpha^{(k)}) - f^* \le \frac{2n}{k + 2n}\big(C_f^\otimes \,\chi^\otimes + h_0\big),
\qquad \chi^\otimes \ge \max_k \mathbb{E}\Big[\frac{\chi(C_f^{(:)})}{\chi(g_{:}(\alpha^{(k)}))^{3}}\Big],$$

$$\chi(x) = \sqrt{1 + n^2 \operatorname{Var}[x / \|x\|_1]} \in [1, \sqrt n],$$

where uniform sampling has $C_f^\otimes$ alone (Theorem 1). The constant is better only when
$\chi(g)^3 > \chi(C_f)$ along the run: always when the curvatures are equal ($\chi(C_f) = 1$),
otherwise when the gaps are non-uniform enough (at worst $\chi(g) \ge n^{1/6}$, App. E). It is a
bound for exact gaps, not a promise for every run; the sampler here draws from the stored
estimates, which Theorem 2 does not cover. The estimates get **stale**: the bar colours show how many iterations ago each $g_i$ was computed.
An exact gap pass every 10 passes refreshes them all (the paper's default). Never refreshing
("Gap Inf") lets them drift low: on the paper's OCR runs (Sec. 3.1, Fig. 1a-b) the gap became
significantly underestimated and the run did not converge. On OCR-small here it does not stall:
after 400 effective passes (every oracle call counted, the gap passes' too; seed 0) the duality
gap is $1.37\cdot10^{-2}$ without refreshes and $1.44\cdot10^{-2}$ with a gap pass every 10
passes at $\lambda = 0.01$, $3.97\cdot10^{-2}$ and $3.68\cdot10^{-2}$ at $\lambda = 0.001$. The
estimates do drift low: without refreshes $\sum_i \hat g_i$ is about 0.84 of the true gap at
$\lambda = 0.01$ and about 0.53 at $\lambda = 0.001$, so a run stopped on it stops too early.

The app's setting $p$ samples $p_i \propto \hat g_i^{\,p}$; the paper uses $p = 1$ only, and
Theorem 2 covers $p = 1$ with exact gaps: other values are an experiment, with no guarantee.
""",
        views=("blocks",),
        setup={"sampling": "gap", "gap_power": 1.0, "step_kind": "fw", "cache": False},
        code=("solve", "sample_block", "gap_sampling_probabilities", "record_oracle_call"),
        try_this="Run with gap sampling, **Add run to comparison**, switch to uniform sampling and "
                 "run again: the Convergence tab overlays both. Try the gap check 'never (Gap Inf)' "
                 "(it also turns the cache of page 6 off: a cache hit needs a full gap $g^{(k_0)}$): "
                 "on OCR-small it keeps converging, about as fast as with gap checks, not the stall "
                 "the paper saw on OCR (a manual exact gap pass refreshes every estimate and so ends "
                 "the experiment).",
    ),
    Lesson(
        "5 · Pairwise and away steps",
        r"""
A FW step moves block $i$ to $(1-\gamma)\alpha_i + \gamma e_{y^*}$: it shrinks *every* atom
by the same factor $(1-\gamma)$ and cannot take mass from one bad atom alone (Sec. 3.2). To
remove a bad labelling it must shrink the good ones with it, so near a sparse optimum BCFW
zig-zags. A block **pairwise** step (Alg. 3, BCPFW) moves mass from the **away corner**
$y_i^a = \arg\min_{y \in S_i} H_i(y; w)$ — the worst labelling of the active set
$S_i = \{y : \alpha_i(y) > 0\}$ — to the FW corner:

$$\gamma = \mathrm{clip}_{[0,\, \alpha_i(y^a)]}\Big(\frac{\lambda(w_a - w_s)^\top w + \ell_s - \ell_a}{\lambda \|w_a - w_s\|^2}\Big).$$

When $\gamma$ hits $\alpha_i(y^a)$ the away atom leaves the active set (a **drop step**). The
away-step variant (BCAFW, Alg. 4) takes either the FW or the away direction. These need the
dual variables $\alpha_i$ explicitly (the active sets).

What is proven: App. G shows a geometric decrease in expectation for BCPFW and BCAFW with
**uniform** sampling (its lemma draws the block uniformly; gap sampling, which this page keeps
from page 4, is not covered) and only at iterates where **no block could take a drop step** (a
drop step's γ is cut at $\alpha_i(y^a)$, which can be tiny). Unlike the batch algorithms, one block that could drop can spoil this at
every iteration, so no global linear rate is proven; the paper observes it empirically for
large enough λ.
""",
        views=("simplex", "anatomy", "cache"),
        setup={"step_kind": "pairwise", "cache": False},
        code=("bcpfw_step", "bcafw_step", "away_corner", "pairwise_candidate", "away_candidate",
              "apply_step"),
        try_this="The triangle is one block's simplex (three labellings): the black dot is "
                 "$\\alpha_i$, the circle the FW corner, the square the away corner, the arrow the "
                 "next step and the cross $\\gamma_{\\max}$. Press **Step this block** with each step "
                 "kind: a pairwise step stopping at the cross is a drop step. Then **Step** the "
                 "session: the anatomy shows the away corner too; watch 'drop step' and the "
                 "active-set sizes in the plot below.",
    ),
    Lesson(
        "6 · Caching oracle calls",
        r"""
Sec. 3.3: keep a working set $C_i$ of labellings per block. The **cache corner**
$y_i^c = \arg\max_{y \in C_i} H_i(y; w)$ is cheap. Its gap is the block gap's formula with the
cache corner in place of the FW corner (Sec. 3.3, Alg. 5 line 8),

$$g_i^{c} = \lambda (w_i - w_c)^\top w - \ell_i + \ell_c, \qquad w_c = \tfrac{1}{\lambda n}\psi_i(y_i^c),\;\; \ell_c = \tfrac1n L_i(y_i^c),$$

(here $g_i^c$, to keep $\hat g_i$ for the stored estimate $g_i^{(k_i)}$ of pages 3-4); it is at
most the block gap $g_i$, since $C_i$ is part of $\mathcal{Y}_i$. Use the cache corner when

$$g_i^{c} \;\ge\; \max\Big(F\, g_i^{(k_i)},\; \frac{\nu}{n}\, g^{(k_0)}\Big),$$

the local term comparing with the block's stored gap $\hat g_i = g_i^{(k_i)}$ (from its last
oracle call or exact gap pass), the global term with the last full gap $g^{(k_0)}$. Otherwise call the max oracle (a **miss**). Defaults: $F = 0.25$,
$\nu = 0.01$.

**No hit before the first exact gap pass.** Alg. 5 starts with $g^{(0)} = +\infty$, so the
threshold is infinite and every step misses until the first exact gap pass sets $g^{(k_0)}$
(with gap checks every 10 passes: a hit rate of 0 for passes 1–10, then typically most steps
hit). With gap checks set to "never" the cache never hits.

**A hit changes no estimate.** On a hit, $g_i^{(k_i)}$ and $k_i$ stay as they were (Alg. 5
updates them only on a miss), so gap sampling with a cache draws from staler estimates.

**Theorem 3 is a safety net, not a trade-off.** It bounds
$\mathbb{E} f(\alpha^{(k)}) - f^* \le \frac{2n}{\tilde\nu k + 2n}\big(\frac{C_f^\otimes}{\tilde\nu} + h_0\big)$
with $\tilde\nu = \nu/n$: with $\nu = 0.01$, $1/\tilde\nu = 100n$ — a worst case that still
converges, not a prediction of the speed. Its proof (App. F) covers BCFW with uniform sampling
only; pairwise steps and gap sampling with a cache are not covered.
""",
        views=("cache",),
        setup={"cache": True, "cache_factor": 0.25, "cache_nu": 0.01, "gap_check": 10.0,
               "sampling": "gap", "step_kind": "fw"},
        code=("bcfw_cache_step", "fw_corner", "cache_corner", "cache_hit_rule", "trim_cache"),
        try_this="Run with the cache on: the hit rate is 0 until the first exact gap pass (pass 10), "
                 "then jumps. Raise F to 2 (hits become rare) or lower both F and ν to 1e-3 (almost "
                 "always hits once $g^{(k_0)}$ is known).",
    ),
    Lesson(
        "7 · A toy example where adaptivity wins n-fold",
        r"""
App. C builds one **hard** object whose optimum spreads the dual mass over $K$ labels and
$n-1$ **easy** objects that are all solved by one step on any of them. After $t < K$ FW steps
the hard block's gap is at least $1/(2nt)$, so a duality gap $\varepsilon$ needs about
$t \approx \min(K, 1/(2n\varepsilon))$ steps on it (Eq. (16): $t \ge \Omega(\min\{K, 1/(n\varepsilon)\})$).
All curvature constants are equal (Eq. (18)-(19)), so curvature sampling is uniform sampling: it
cannot tell hard from easy and needs about $n\,t$ oracle calls. Lipschitz sampling is worse:
the $\ell_2$ Lipschitz constants are $K/n$ for an easy block and $1/(2n)$ for the hard one, so
it draws the hard block with probability $1/(1 + 2K(n-1))$ and needs about $2K(n-1)\,t$ calls.
Gap sampling visits the easy objects once and then only the hard one: about $n + t$ calls,

$$\text{speed-up over uniform} \approx \frac{n\,t}{n + t} \approx \min(n, t),$$

the paper's $\min(n, K, 1/(n\varepsilon))$ up to constants.
""",
        views=("toy",),
        setup={"dataset": "toy", "sampling": "gap", "step_kind": "fw", "cache": False,
               "gap_check": 10.0},
        try_this="Press **Run comparison**; change n and K. 'Step this problem in the solver' loads "
                 "it into the main session (labels are shown as numbers; block 0 is the hard one).",
    ),
    Lesson(
        "8 · The regularization path",
        r"""
Sec. 4: instead of solving for one $\lambda$, compute an **$\varepsilon$-approximate path**:
for every $\lambda \ge \lambda_{\min}$ a $w(\lambda)$ with duality gap $\le \varepsilon$. The path
is piecewise constant except for its **first piece, which is linear**: the dual point
$\alpha_i^\infty = e_{\tilde y_i}$, $\tilde y_i = \arg\max_y L_i(y)$ (the max oracle at $w = 0$),
with $\lambda^\infty = \frac{1}{\kappa\varepsilon}\big(\|\tilde\psi\|^2 + \frac1n\sum_i\theta_i\big)$
(Alg. 6 line 11, which gaplab follows; $\kappa < 1$, see below) makes $w(\lambda) = \frac{\lambda^\infty}{\lambda}\, w^\infty$
$\kappa\varepsilon$-approximate, hence $\varepsilon$-approximate, for every $\lambda \ge \lambda^\infty$.
Sec. 4 writes $\frac1\varepsilon$ instead: the smallest $\lambda^\infty$ for which the bound gives
$\varepsilon$; Alg. 6's $\kappa\varepsilon$ leaves the first breakpoint the same room
$\varepsilon - g \ge (1-\kappa)\varepsilon$ as the later ones. Below $\lambda^\infty$ the path walks down
breakpoints $\lambda_{j+1} = \rho_{j+1} \lambda_j$.

**Proposition 1.** *Assume* $L_i(y_i) = 0$ for every $i$ (no loss on the ground truth; as
$\psi_i(y_i) = 0$ by definition, then $H_i(y_i; w) = L_i(y_i) - \langle w, \psi_i(y_i)\rangle = 0$). Keep $w$ and move every $\alpha_i$ towards its ground truth,
$\alpha_i(y) \leftarrow \rho\,\alpha_i(y)$ for $y \ne y_i$, with $\rho = \lambda_{\text{new}}/\lambda$. Then
$w$ is unchanged and the gap at the new $\lambda$ is known without any oracle call:

$$g_{\lambda_{\text{new}}} = g_\lambda + (1-\rho)\,\Delta,$$

$$\Delta = \ell - \lambda\|w\|^2 = \frac1n\sum_i\sum_y \alpha_i(y) H_i(y; w) .$$

So after solving to $g_j \le \kappa\varepsilon$ at $\lambda_j$, the same $w_j$ stays
$\varepsilon$-approximate while $g_j + (1-\rho)\Delta_j \le \varepsilon$, i.e. down to

$$\rho_{j+1} = 1 - \frac{\varepsilon - g_j}{\Delta_j}, \qquad w(\lambda) = w_j \;\text{ on } [\lambda_{j+1}, \lambda_j] .$$

If $\Delta_j \le \varepsilon - g_j$ ($\rho \le 0$), $w_j$ is $\varepsilon$-approximate for **every**
smaller $\lambda$ and the path ends. Each breakpoint is a warm start: a few passes instead of a
solve from scratch. $\kappa$ trades the number of breakpoints (larger $\kappa$: smaller steps)
against the work per breakpoint; the paper uses $\kappa = 0.9$.

The **heuristic path** (App. K, $\kappa = 0.7$) stops each solve on the stale gap estimates
$\sum_i \hat g_i \le \kappa\varepsilon$ (no exact gap pass): cheaper, but without a certificate —
its true gap (purple triangles) can exceed $\varepsilon$.

On the box datasets (horse, pose: $w = \mathrm{clip}(v)$, App. H) Proposition 1 holds for any
bounds: the rescaling keeps $v = A\alpha$, hence $w = \mathrm{clip}(v)$ and the optimal $\beta$,
and the change of the box term $\lambda(\beta_u^\top ub - \beta_l^\top lb)$ is absorbed exactly by
$\Delta = \frac1n\sum_i\sum_y \alpha_i(y) H_i(y; w) = \ell - \lambda\langle w, v\rangle$. What needs
every finite bound to be 0 is the rest of the path: the shortcut $\Delta = \ell - \lambda\|w\|^2$
(with bounds 0 a clipped coordinate has $w_j = 0$, so $\langle w, v\rangle = \|w\|^2$) and the
linear first piece $\frac{\lambda^\infty}{\lambda} w^\infty$ (clipping at 0 commutes with scaling,
so $w = \mathrm{clip}(\tilde\psi)/\lambda$ for $\lambda \ge \lambda^\infty$). The path refuses
other bounds.
""",
        views=("path",),
        setup={"dataset": "ocr-small", "sampling": "gap", "step_kind": "fw", "cache": False},
        try_this="Press **Start path**: breakpoints appear as they are computed. Left to right λ "
                 "decreases; in the gap plot each piece rises from $g_j$ (dot) to $\\varepsilon$ (red line) — "
                 "Proposition 1 exactly. Drag the λ slider (or click a plot) to load $w(\\lambda)$ into "
                 "the solver, then look at the **Step** and **Convergence** tabs. Tick *Heuristic path* "
                 "and start again.",
    ),
)


def lesson_code(lesson: Lesson) -> str:
    """Markdown with the source of the reference-solver functions a lesson names (``code``),
    each under its qualified name, so that a student reads the step next to its code; "" when
    the lesson names none."""
    if not lesson.code:
        return ""
    from gaplab.core import reference
    parts = ["**The code** — the readable reference solver, `gaplab.core.reference`:"]
    for name in lesson.code:
        parts.append(f"`reference.{name}`\n\n```python\n{inspect.getsource(getattr(reference, name))}```")
    return "\n\n".join(parts)


_MATH_CSS = """
mjx-container[display="true"], mjx-container[jax="CHTML"][display="true"], .MathJax_Display {
  overflow-x: auto; overflow-y: hidden; max-width: 100%; }
"""


_TITLE_CSS = ".header-anchor { display: none; }"


def _math_renderer(content: str, opts: dict) -> str:
    """dollarmath -> the delimiters Bokeh's MathJax finds: \\( \\) inline, $$ $$ display."""
    body = html.escape(content.strip(), quote=False)
    if opts.get("display_mode"):
        return f"<div style='margin:8px 0'>$${body}$$</div>"
    return f"\\({body}\\)"


def markdown_with_math(text: str, **kw):
    """A Markdown pane whose $...$ / $$...$$ are passed to MathJax untouched (no Markdown
    escaping of backslashes or underscores inside the math)."""
    import panel as pn
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    plugin = functools.partial(dollarmath_plugin, renderer=_math_renderer, allow_labels=False)
    return pn.pane.Markdown(text, plugins=[plugin], renderer="markdown-it", **kw)


class LessonPanel:
    """Pages of :data:`LESSONS` with Previous / Next and a live view area.

    Parameters
    ----------
    session : Session
    view_factory : callable(key) -> view with ``.panel`` and ``.update(snapshot, force)``
    """

    def __init__(self, session, view_factory, on_page=None):
        import panel as pn

        self.session = session
        self.page = 0
        self._views = {}
        self._factory = view_factory
        self._on_page = on_page
        # no "¶" header anchor: invisible, it still took a second line under a title that just
        # fits the column (about 60 px of blank space under the title of page 1)
        self.title = pn.pane.Markdown("", styles={"font-size": "15px"}, margin=(0, 10),
                                      stylesheets=[_TITLE_CSS])
        self.text = markdown_with_math("", sizing_mode="stretch_width",
                                       styles={"font-size": "14px", "line-height": "1.45"})
        self.try_this = markdown_with_math("", sizing_mode="stretch_width", visible=False,
                                           styles={"font-size": "13.5px", "background": "#e8f4fa",
                                                   "border-left": "4px solid #2c7fb8",
                                                   "padding": "2px 10px"})
        self.prev = pn.widgets.Button(label="◀ Previous", width=110)
        self.next = pn.widgets.Button(label="Next ▶", width=110, color="primary")
        self.setup = pn.widgets.Button(label="Set up this page", width=160, color="success")
        self.pager = pn.pane.HTML("", margin=(8, 10))
        self.prev.on_click(lambda e: self.go(self.page - 1))
        self.next.on_click(lambda e: self.go(self.page + 1))
        self.setup.on_click(lambda e: self.apply_setup())
        self.live = pn.Column(sizing_mode="stretch_width")
        # the reference solver's functions for this page (plain Markdown: no math in code)
        self.code = pn.pane.Markdown("", sizing_mode="stretch_width", styles={"font-size": "12px"})
        self.code_card = pn.Card(self.code, title="The code of this step (gaplab.core.reference)",
                                 collapsed=False, sizing_mode="stretch_width", visible=False)
        # the navigation stays above the scrolling text (visible on long pages); equations wider
        # than the column scroll sideways instead of being cut off
        self.text.stylesheets = [_MATH_CSS]
        self.try_this.stylesheets = [_MATH_CSS]
        self.nav = pn.Row(self.prev, self.next, self.pager, css_classes=["gaplab-lesson-nav"])
        self.body = pn.Column(self.title, self.text, self.try_this, self.setup, width=480, scroll=True,
                              height=720, css_classes=["gaplab-lesson-body"])
        left = self.left = pn.Column(self.nav, self.body, width=490)
        self.panel = pn.Row(left, pn.Column(self.live, self.code_card, sizing_mode="stretch_width"),
                            sizing_mode="stretch_width")
        self.go(0)

    def set_width(self, width: int):
        """Width of the text column (projector mode widens it for its larger text)."""
        if self.body.width != width:
            self.body.width = width
            self.left.width = width + 10

    def views(self):
        """The live views of the current page."""
        return [self._view(k) for k in LESSONS[self.page].views]

    def _view(self, key):
        if key not in self._views:
            import panel as pn
            from .views.figures import legend_samples
            view = self._views[key] = self._factory(key)
            for pane in view.panel.select(pn.pane.Bokeh):   # a sample in every legend entry,
                if hasattr(pane.object, "legend"):         # also before its curve has data
                    legend_samples(pane.object)
        return self._views[key]

    def go(self, page: int):
        page = max(0, min(len(LESSONS) - 1, int(page)))
        self.page = page
        lesson = LESSONS[page]
        self.title.object = f"## {lesson.title}"
        self.text.object = lesson.text.strip()
        self.try_this.object = ("**Try this.** " + lesson.try_this) if lesson.try_this else ""
        self.try_this.visible = bool(lesson.try_this)
        self.setup.visible = bool(lesson.setup)
        self.code.object = lesson_code(lesson)
        self.code_card.visible = bool(lesson.code)
        self.pager.object = f"page {page + 1} of {len(LESSONS)}"
        self.prev.disabled = page == 0
        self.next.disabled = page == len(LESSONS) - 1
        if lesson.views:
            self.live.objects = [self._view(k).panel for k in lesson.views]
        else:
            import panel as pn
            self.live.objects = [pn.pane.Markdown(
                "*No live view yet for this page.*", styles={"color": "#888", "font-size": "14px"})]
        if self._on_page is not None:
            self._on_page()

    def apply_setup(self):
        """Apply the page's settings and start the solver afresh with them (a run that had used
        its pass budget, or was stopped, never leaves the next page stuck)."""
        lesson = LESSONS[self.page]
        sess = self.session
        changes = {k: v for k, v in lesson.setup.items() if getattr(sess, k) != v}
        if changes:
            sess.param.update(**changes)   # a solver setting rebuilds the solver; a dataset reloads
        if sess.status != "loading" and sess.snapshot.iteration:
            sess.reset()
        what = ", ".join(f"{k}={v}" for k, v in changes.items()) or "settings already in place"
        sess.notify(f"Lesson set-up: {what}; the solver starts from α⁰.", "info")
