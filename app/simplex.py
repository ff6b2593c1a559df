"""A block's simplex in 2-D: α_i of a block with three labellings as a point of a triangle,
the FW and away corners, the direction of the next FW / away / pairwise step, γ_max and the
line search's γ; the point moves as the lecturer steps that block.

Three parts:

- :func:`step_geometry`, a pure function: α_i (barycentric coordinates on the three
  labellings) and the step's kind, corners and γ → barycentric and 2-D coordinates of the
  point, the corners, the direction, the γ_max point and the γ point (Paper: Alg. 1, 3, 4).
- :class:`SimplexLab`, a block-stepping lab on a problem whose blocks have three labels (the
  App. C toy with K = 2 wrong labels, or three labels with random features), stepped with the
  readable reference solver :mod:`gaplab.core.reference` (the lecturer chooses the block).
- :class:`SimplexView`, its Bokeh figure and controls (Lesson 5's live view); the figure's
  sources are updated in place.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from .export import figure_pane
from .safe_html import esc
from .ticks import handler as _handler

__all__ = ["CORNERS_XY", "STEP_KINDS", "PROBLEMS", "SimplexGeometry", "step_geometry", "to_xy",
           "gamma_max_of", "SimplexLab", "SimplexView"]

#: The three labellings' vertices in the plane (an equilateral triangle of side 1).
CORNERS_XY = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3.0) / 2.0]])
STEP_KINDS = ("fw", "away", "pairwise")
#: Problems of the lab: key -> label shown in the app.
PROBLEMS = {"toy": "App. C toy (n = 3, K = 2: three labels)",
            "random": "three labels, random features (n = 4)"}
_TOL = 1e-9


def to_xy(bary) -> np.ndarray:
    """2-D coordinates of barycentric coordinates on the triangle :data:`CORNERS_XY`.

    Parameters
    ----------
    bary : array_like of float, shape (3,) or (m, 3)

    Returns
    -------
    ndarray of float64, shape (2,) or (m, 2)
    """
    return np.asarray(bary, dtype=np.float64) @ CORNERS_XY


def _check_alpha(alpha) -> np.ndarray:
    a = np.asarray(alpha, dtype=np.float64)
    if a.shape != (3,):
        raise ValueError(f"alpha must have shape (3,) (one weight per labelling), got shape {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a < -_TOL) or abs(a.sum() - 1.0) > 1e-6:
        raise ValueError(f"alpha must lie on the simplex (entries >= 0, sum 1), got {a.tolist()}")
    return np.clip(a, 0.0, None)


def _check_corner(name, y, alpha=None) -> int:
    if isinstance(y, (bool, np.bool_)) or not isinstance(y, (int, np.integer)) or not 0 <= int(y) <= 2:
        raise ValueError(f"{name} must be a labelling index 0, 1 or 2, got {y!r}")
    if alpha is not None and alpha[int(y)] <= 0.0:
        raise ValueError(f"{name} must be in the active set (alpha > 0); alpha[{int(y)}] = {alpha[int(y)]!r}")
    return int(y)


def gamma_max_of(kind: str, alpha, away_corner=None) -> float:
    """The largest step size that keeps α_i on the simplex.

    FW: 1 (Alg. 1); away: α_a/(1 − α_a) (Alg. 4 line 19; 0 when α_a = 1, where the away
    direction is 0); pairwise: α_a (Alg. 3 line 11).

    Parameters
    ----------
    kind : {"fw", "away", "pairwise"}
    alpha : array_like of float, shape (3,)
        α_i on the simplex.
    away_corner : int, optional
        The away corner (needed by away and pairwise steps).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On an unknown kind, α off the simplex, or a missing / inactive away corner.
    """
    a = _check_alpha(alpha)
    if kind not in STEP_KINDS:
        raise ValueError(f"kind must be one of {STEP_KINDS}, got {kind!r}")
    if kind == "fw":
        return 1.0
    ya = _check_corner("away_corner", away_corner, a)
    if kind == "pairwise":
        return float(a[ya])
    return 0.0 if a[ya] >= 1.0 - 1e-12 else float(a[ya] / (1.0 - a[ya]))


@dataclass(frozen=True)
class SimplexGeometry:
    """Where a block step lives on the block's simplex (three labellings).

    Barycentric coordinates are float64 (3,), summing to 1; 2-D coordinates float64 (2,) on
    :data:`CORNERS_XY`. ``direction`` is d in α-space (its entries sum to 0): e_s − α_i (FW),
    α_i − e_a (away), e_s − e_a (pairwise). ``gamma_max_point = α_i + γ_max·d`` and
    ``gamma_point = α_i + γ·d`` (None when no γ is given).
    """

    kind: str
    alpha: np.ndarray
    fw_corner: int
    away_corner: int | None
    direction: np.ndarray
    gamma_max: float
    gamma: float | None
    gamma_max_bary: np.ndarray
    gamma_bary: np.ndarray | None
    point: np.ndarray
    fw_xy: np.ndarray
    away_xy: np.ndarray | None
    gamma_max_point: np.ndarray
    gamma_point: np.ndarray | None
    drop: bool


def step_geometry(alpha, kind: str, fw_corner: int, away_corner: int | None = None,
                  gamma: float | None = None, gamma_max: float | None = None) -> SimplexGeometry:
    """The geometry of one block step on a simplex of three labellings.

    Paper: Alg. 1 (FW: α_i ← (1 − γ)α_i + γ e_s, γ ∈ [0, 1]), Alg. 3 (pairwise: α_i ← α_i +
    γ(e_s − e_a), γ ∈ [0, α_a]), Alg. 4 (away: α_i ← (1 + γ)α_i − γ e_a, γ ∈ [0, α_a/(1 − α_a)]).

    Parameters
    ----------
    alpha : array_like of float, shape (3,)
        α_i before the step (on the simplex: entries >= 0, sum 1).
    kind : {"fw", "away", "pairwise"}
    fw_corner : int
        The FW corner y_s (0, 1 or 2).
    away_corner : int, optional
        The away corner y_a (in the active set, α_a > 0); needed by away and pairwise steps,
        drawn for FW steps when given.
    gamma : float, optional
        The line search's γ (in [0, γ_max]).
    gamma_max : float, optional
        γ_max reported by a solver: checked against the paper's value (relative 1e-9).

    Returns
    -------
    SimplexGeometry

    Raises
    ------
    ValueError
        α off the simplex or of the wrong shape, unknown kind, a corner out of range, an away
        corner outside the active set, γ outside [0, γ_max], or a γ_max that disagrees with
        the paper's.
    """
    a = _check_alpha(alpha)
    if kind not in STEP_KINDS:
        raise ValueError(f"kind must be one of {STEP_KINDS}, got {kind!r}")
    ys = _check_corner("fw_corner", fw_corner)
    if kind != "fw" and away_corner is None:
        raise ValueError(f"a {kind} step needs away_corner")
    ya = None if away_corner is None else _check_corner("away_corner", away_corner, a)
    gmax = gamma_max_of(kind, a, ya)
    if gamma_max is not None and not math.isclose(float(gamma_max), gmax, rel_tol=1e-9, abs_tol=1e-12):
        raise ValueError(f"gamma_max = {gamma_max!r} disagrees with the paper's {gmax!r} for a {kind} step "
                         f"at alpha = {a.tolist()}")
    e = np.eye(3)
    if kind == "fw":
        d = e[ys] - a
    elif kind == "away":
        d = a - e[ya] if gmax > 0.0 else np.zeros(3)
    else:
        d = e[ys] - e[ya]
    if gamma is not None:
        gamma = float(gamma)
        if not (math.isfinite(gamma) and -_TOL <= gamma <= gmax * (1 + 1e-9) + 1e-12):
            raise ValueError(f"gamma must be in [0, gamma_max = {gmax:g}], got {gamma!r}")
        gamma = min(max(gamma, 0.0), gmax)

    moves_mass = kind == "away" or (kind == "pairwise" and ys != ya)   # a pairwise step with y_s = y_a is d = 0

    def land(g):
        p = a + g * d
        if moves_mass and g >= gmax and gmax > 0:
            p[ya] = 0.0   # the away atom leaves the active set exactly (a drop step)
        p = np.clip(p, 0.0, None)
        return p / p.sum()

    gmax_bary = land(gmax)
    g_bary = None if gamma is None else land(gamma)
    drop = moves_mass and gamma is not None and gmax > 0 and gamma >= gmax
    return SimplexGeometry(
        kind=kind, alpha=a, fw_corner=ys, away_corner=ya, direction=d, gamma_max=gmax, gamma=gamma,
        gamma_max_bary=gmax_bary, gamma_bary=g_bary, point=to_xy(a), fw_xy=CORNERS_XY[ys].copy(),
        away_xy=None if ya is None else CORNERS_XY[ya].copy(), gamma_max_point=to_xy(gmax_bary),
        gamma_point=None if g_bary is None else to_xy(g_bary), drop=drop)


# ============================================================================ the lab

def make_problem(problem: str = "toy", seed: int = 0):
    """A problem whose blocks all have three labels: ``(model, lam)``.

    ``toy``: the App. C hard/easy problem with n = 3 and K = 2 wrong labels (block 0 is the hard
    one). ``random``: n = 4 blocks, labels {0, 1, 2} (0 correct), 0-1 loss, 2-D features drawn
    from a normal distribution with ``seed``, λ = 0.5 (FW zig-zags there; away and pairwise
    steps drop atoms).

    Raises
    ------
    ValueError
        On an unknown problem.
    """
    from gaplab.core import MulticlassModel
    from gaplab.toy_examples.hard_easy import make_hard_easy
    if problem == "toy":
        model, lam, _ = make_hard_easy(3, 2)
        return model, lam
    if problem == "random":
        rng = np.random.default_rng(seed)
        feats = [np.vstack([np.zeros(2), rng.normal(size=(2, 2))]) for _ in range(4)]
        losses = [np.array([0.0, 1.0, 1.0])] * 4
        return MulticlassModel(feats, losses, np.zeros(4, dtype=np.int64)), 0.5
    raise ValueError(f"problem must be one of {list(PROBLEMS)}, got {problem!r}")


class SimplexLab:
    """Step one chosen block of a three-label problem and see it on its simplex.

    Uses the reference solver (:func:`gaplab.core.reference.block_step`, active sets kept, no
    cache). :meth:`preview` is the next step on the chosen block, computed on a copy of the
    state (so what is drawn is exactly what Step will do).

    Parameters
    ----------
    problem : {"toy", "random"}
    kind : {"fw", "away", "pairwise"}
    block : int
    seed : int
        Seed of the random features (problem "random").
    """

    def __init__(self, problem: str = "toy", kind: str = "pairwise", block: int = 0, seed: int = 0):
        if kind not in STEP_KINDS:
            raise ValueError(f"kind must be one of {STEP_KINDS}, got {kind!r}")
        self.problem, self.seed = problem, int(seed)
        self.model, self.lam = make_problem(problem, seed)
        self.kind = kind
        self.block = 0
        self.set_block(block)
        self.reset()

    def reset(self):
        """Back to α⁰ (all mass on the ground truth of every block)."""
        from gaplab.core import reference as ref
        self.state = ref.init_state(self.model, self.lam, atoms=True)
        self.history = [[self.alpha(i)] for i in range(self.model.n)]
        self.steps = 0
        self.last = None

    def set_block(self, block: int):
        if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or not 0 <= block < self.model.n:
            raise ValueError(f"block must be an int in [0, {self.model.n}), got {block!r}")
        self.block = int(block)

    def set_kind(self, kind: str):
        if kind not in STEP_KINDS:
            raise ValueError(f"kind must be one of {STEP_KINDS}, got {kind!r}")
        self.kind = kind

    def alpha(self, i: int | None = None) -> np.ndarray:
        """α_i, float64 (3,) (labellings 0, 1, 2)."""
        i = self.block if i is None else i
        a = np.zeros(3)
        for y, v in self.state.atoms[i].items():
            a[y[0]] = v
        return a

    def _geometry(self, alpha, info, away=None) -> SimplexGeometry:
        ya = int((info.away_corner if info.away_corner is not None else away)[0]) \
            if (info.away_corner is not None or away is not None) else None
        return step_geometry(alpha, info.kind, int(info.fw_corner[0]), ya, info.gamma, info.gamma_max)

    def _away_corner(self):
        """The away corner of the chosen block now (drawn for FW steps too; read-only)."""
        from gaplab.core import reference as ref
        return ref.away_corner(self.state, self.block)

    def preview(self) -> tuple[SimplexGeometry, object]:
        """The next step on the chosen block: (geometry, the reference's ReferenceStep)."""
        from gaplab.core import reference as ref
        st = copy.deepcopy(self.state)
        info = ref.block_step(st, self.block, self.kind)
        return self._geometry(self.alpha(), info, self._away_corner()), info

    def step(self) -> tuple[SimplexGeometry, object]:
        """Step the chosen block: (geometry of the step taken, ReferenceStep); α_i moves to its γ point."""
        from gaplab.core import reference as ref
        before, away = self.alpha(), self._away_corner()
        info = ref.block_step(self.state, self.block, self.kind)
        self.steps += 1
        self.history[self.block].append(self.alpha())
        self.last = (self.block, self._geometry(before, info, away), info)
        return self.last[1], info

    def duality_gap(self) -> float:
        from gaplab.core import reference as ref
        return float(ref.exact_gap(copy.deepcopy(self.state), count=False).gap)


# ============================================================================ the view


_KIND_COLOR = {"fw": "#d62728", "away": "#1f77b4", "pairwise": "#9467bd"}
_KIND_NAME = {"fw": "FW", "away": "away", "pairwise": "pairwise"}

#: radius in screen px of the largest marker drawn on a vertex: the FW corner's circle and the
#: away corner's square (size 22, line 3)
MARKER_RADIUS_PX = 22 / 2 + 3
#: font size of the vertex labels (the projector's smallest text size)
CORNER_LABEL_PX = 18.0
#: the vertex labels "y = 0/1/2": text, alignment, baseline "middle" (the text's middle at
#: ``dy``) and screen offsets in px (``dx`` right, ``dy`` down; Bokeh's text offsets) from their
#: vertex, outward: left of the lower left vertex, right of the lower right one, above the apex
CORNER_LABELS = dict(text=["y = 0", "y = 1", "y = 2"], align=["right", "left", "center"],
                     dx=[-(MARKER_RADIUS_PX + 3), MARKER_RADIUS_PX + 3, 0.0],
                     dy=[0.0, 0.0, -(MARKER_RADIUS_PX + 0.5 * CORNER_LABEL_PX + 5)])


#: the widest vertex label ("y = 1") at :data:`CORNER_LABEL_PX`, in px, rounded up (39.5 px in
#: Chromium's sans-serif; DejaVu Sans, the widest common default, 44 px)
CORNER_LABEL_WIDTH_PX = 2.5 * CORNER_LABEL_PX
#: the figure's x range starts here (room for the legend, top left)
X_START = -0.72


def simplex_x_end(width: int) -> float:
    """The right end of the simplex figure's x range (data units; the right vertex is at 1) for a
    figure ``width`` px wide: "y = 1", left-aligned right of the lower right vertex beyond its
    markers, ends 4 px inside the plot frame (the figure's width less its 5-px borders)."""
    frame = width - 10.0
    need = CORNER_LABELS["dx"][1] + CORNER_LABEL_WIDTH_PX + 4.0    # px right of the vertex
    if need >= frame:
        raise ValueError(f"width must leave room for the vertex labels ({need:.0f} px), got {width}")
    # need = e * frame / (1 + e - X_START): the label's px at e data units right of the vertex
    return 1.0 + need * (1.0 - X_START) / (frame - need)


def simplex_title(block: int, kind: str) -> str:
    """The figure's title: short enough for the figure's width at 18 px (projector mode)."""
    return f"Block {block}: next {_KIND_NAME[kind]} step"


def geometry_sentence(g: SimplexGeometry, block: int) -> str:
    """One line saying what the drawn step is (plain text)."""
    a = ", ".join(f"{v:.3f}" for v in g.alpha)
    if g.kind == "fw":
        rule = "γ_max = 1 (FW)"
    elif g.kind == "away":
        rule = f"γ_max = α_a/(1 − α_a) = {g.gamma_max:.3g}"
    else:
        rule = f"γ_max = α_a = {g.gamma_max:.3g}"
    away = "" if g.away_corner is None else f", away corner y = {g.away_corner}"
    s = (f"block {block}: α = ({a}); next step {_KIND_NAME[g.kind]}: FW corner y = {g.fw_corner}{away}; "
         f"{rule}; line search γ = {g.gamma:.3g}")
    if g.drop:
        s += " = γ_max: a drop step (the away atom leaves the active set)"
    elif g.gamma == 0.0:
        s += ": α does not move (the block is optimal along this direction)"
    return s + "."


def _vertex_labels(f, src) -> None:
    """Draw the vertex labels of ``src`` (:data:`CORNER_LABELS` with x, y) on figure ``f``: one
    glyph per label, each with its own (scalar) alignment and the baseline "middle". BokehJS 3.9
    drew them left-aligned with a text_align column or the baseline "baseline", which put
    "y = 0" under the away-corner square and ran "y = 1" past the figure's right edge."""
    from bokeh.models import CDSView, IndexFilter
    for k, align in enumerate(CORNER_LABELS["align"]):
        f.text("x", "y", text="text", text_align=align, text_baseline="middle", x_offset="dx",
               y_offset="dy", source=src, view=CDSView(filter=IndexFilter([k])),
               text_font_size=f"{CORNER_LABEL_PX:g}px")


class SimplexView:
    """Bokeh figure of a :class:`SimplexLab` with its controls (block, step kind, problem, Step,
    Reset). ``update(snap, force)`` follows the live-view protocol (the lab is independent of
    the session, so only ``force`` redraws)."""

    def __init__(self, lab: SimplexLab | None = None, height: int = 380):
        import panel as pn
        from bokeh.models import Arrow, ColumnDataSource, Range1d, VeeHead
        from bokeh.plotting import figure

        # default: a block whose optimum lies on an edge (α(y=0) = 0), which FW approaches only
        # geometrically (zig-zag) while pairwise and away steps drop y = 0
        self.lab = lab if lab is not None else SimplexLab("random", "pairwise", block=3)
        s = math.sqrt(3.0) / 2.0
        width = int(height * 1.15)
        f = figure(height=height, width=width, match_aspect=True, tools="save",
                   toolbar_location=None, x_range=Range1d(-0.72, simplex_x_end(width)),
                   y_range=Range1d(-0.16, s + 0.2), title="Block simplex: α_i and the next step")
        f.axis.visible = False
        f.grid.visible = False
        f.outline_line_alpha = 0
        f.title.text_font_size = "15px"
        f.patch(CORNERS_XY[:, 0], CORNERS_XY[:, 1], fill_color="#f4f4f4", line_color="#555", line_width=1.5)
        # the vertex labels sit outside the triangle, offset in screen px beyond the largest
        # marker drawn at a vertex (FW / away corner, γ_max, γ), so no marker covers them
        self.corner_src = ColumnDataSource(dict(CORNER_LABELS, x=CORNERS_XY[:, 0].tolist(),
                                                y=CORNERS_XY[:, 1].tolist()))
        _vertex_labels(f, self.corner_src)
        self.trail = ColumnDataSource(dict(x=[], y=[]))
        f.line("x", "y", source=self.trail, color="#999", line_width=1.5, line_dash="dotted")
        f.scatter("x", "y", source=self.trail, size=5, color="#999")
        self.fw_src = ColumnDataSource(dict(x=[], y=[]))
        self.away_src = ColumnDataSource(dict(x=[], y=[]))
        f.scatter("x", "y", source=self.fw_src, size=22, fill_alpha=0, line_color=_KIND_COLOR["fw"],
                  line_width=3, legend_label="FW corner")
        f.scatter("x", "y", source=self.away_src, size=22, marker="square", fill_alpha=0,
                  line_color=_KIND_COLOR["away"], line_width=3, legend_label="away corner")
        self.seg = ColumnDataSource(dict(x=[], y=[]))
        f.line("x", "y", source=self.seg, color="#444", line_dash="dashed", line_width=2,
               legend_label="α + γ·d, γ ∈ [0, γ_max]")
        self.arrow_src = ColumnDataSource(dict(x0=[], y0=[], x1=[], y1=[], color=[]))
        self.arrow = Arrow(x_start="x0", y_start="y0", x_end="x1", y_end="y1", source=self.arrow_src,
                           line_width=3, line_color="color",
                           end=VeeHead(size=14, line_color="#444", fill_color="#444"))
        f.add_layout(self.arrow)
        self.gmax_src = ColumnDataSource(dict(x=[], y=[]))
        f.scatter("x", "y", source=self.gmax_src, marker="x", size=16, line_width=3, color="#444",
                  legend_label="γ_max")
        self.gamma_src = ColumnDataSource(dict(x=[], y=[]))
        f.scatter("x", "y", source=self.gamma_src, marker="star", size=18, color="#ff7f0e",
                  legend_label="line search γ")
        self.point = ColumnDataSource(dict(x=[], y=[]))
        f.scatter("x", "y", source=self.point, size=14, color="black", legend_label="α_i")
        f.legend.location = "top_left"   # in the empty corner left of the triangle's apex
        f.legend.label_text_font_size = "13px"
        f.legend.background_fill_alpha = 0.7
        f.legend.padding = 2
        f.legend.spacing = 0
        self.fig = f
        n = self.lab.model.n
        self.w_block = pn.widgets.Select(label="block", options={str(i): i for i in range(n)},
                                         value=self.lab.block, width=80, css_classes=["gaplab-simplex-block"])
        self.w_kind = pn.widgets.Select(label="step kind", options=list(STEP_KINDS), value=self.lab.kind,
                                        width=110, css_classes=["gaplab-simplex-kind"])
        self.w_problem = pn.widgets.Select(label="problem", options={v: k for k, v in PROBLEMS.items()},
                                           value=self.lab.problem, width=300,
                                           css_classes=["gaplab-simplex-problem"])
        self.b_step = pn.widgets.Button(label="Step this block", color="primary", width=140,
                                        css_classes=["gaplab-simplex-step"])
        self.b_reset = pn.widgets.Button(label="↺ α⁰", width=70, css_classes=["gaplab-simplex-reset"])
        self.b_step.on_click(_handler(lambda e: self.on_step()))
        self.b_reset.on_click(_handler(lambda e: self.on_reset()))
        self.w_block.param.watch(_handler(lambda e: self.on_block(e.new)), "value")
        self.w_kind.param.watch(_handler(lambda e: self.on_kind(e.new)), "value")
        self.w_problem.param.watch(_handler(lambda e: self.on_problem(e.new)), "value")
        self.text = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["gaplab-simplex-text"],
                                 styles={"font-size": "15px"})
        self.panel = pn.Column(
            pn.Row(self.w_problem, self.w_block),
            pn.Row(self.w_kind, pn.Column(pn.Spacer(height=18), pn.Row(self.b_step, self.b_reset), margin=0)),
            figure_pane(f, sizing_mode="fixed"), self.text, sizing_mode="stretch_width", css_classes=["gaplab-simplex"])
        self.draw()

    # ---------------------------------------------------------------- actions
    def on_step(self):
        self.lab.step()
        self.draw()

    def on_reset(self):
        self.lab.reset()
        self.draw()

    def on_block(self, block):
        self.lab.set_block(int(block))
        self.draw()

    def on_kind(self, kind):
        self.lab.set_kind(kind)
        self.draw()

    def on_problem(self, problem):
        block, kind = self.lab.block, self.lab.kind
        self.lab = SimplexLab(problem, kind, 0, self.lab.seed)
        n = self.lab.model.n
        self.w_block.options = {str(i): i for i in range(n)}
        self.w_block.value = min(block, n - 1)
        self.lab.set_block(self.w_block.value)
        self.draw()

    def update(self, snap=None, force: bool = False) -> bool:
        if force:
            self.draw()
        return bool(force)

    # ---------------------------------------------------------------- drawing
    def draw(self):
        lab = self.lab
        g, _ = lab.preview()
        trail = np.asarray(lab.history[lab.block])
        txy = to_xy(trail)
        self.trail.data = dict(x=txy[:, 0].tolist(), y=txy[:, 1].tolist())
        self.point.data = dict(x=[g.point[0]], y=[g.point[1]])
        self.fw_src.data = dict(x=[g.fw_xy[0]], y=[g.fw_xy[1]])
        self.away_src.data = (dict(x=[], y=[]) if g.away_xy is None
                              else dict(x=[g.away_xy[0]], y=[g.away_xy[1]]))
        self.seg.data = dict(x=[g.point[0], g.gamma_max_point[0]], y=[g.point[1], g.gamma_max_point[1]])
        self.gmax_src.data = dict(x=[g.gamma_max_point[0]], y=[g.gamma_max_point[1]])
        self.gamma_src.data = dict(x=[g.gamma_point[0]], y=[g.gamma_point[1]])
        moves = np.linalg.norm(g.gamma_point - g.point) > 1e-9
        self.arrow_src.data = (dict(x0=[g.point[0]], y0=[g.point[1]], x1=[g.gamma_point[0]],
                                    y1=[g.gamma_point[1]], color=[_KIND_COLOR[g.kind]])
                               if moves else dict(x0=[], y0=[], x1=[], y1=[], color=[]))
        self.fig.title.text = simplex_title(lab.block, g.kind)
        gap = lab.duality_gap()
        note = ""
        if lab.kind == "away" and g.kind == "fw":
            note = (" The away direction's gap is not larger than the FW gap, so the away-step "
                    "variant takes the FW step (Alg. 4 line 12 takes it when g^FW > g^A; on a tie, "
                    "where Alg. 4 takes the away step, gaplab takes the FW step).")
        self.text.object = (esc(geometry_sentence(g, lab.block) + note) +
                            f"<br><span style='color:#555'>{lab.steps} steps taken; duality gap "
                            f"{gap:.3g} (exact). Arrow: the step α → α + γ·d; dashed: up to γ_max.</span>")
