"""A live race: uniform against gap sampling on the same problem, stepping side by side on one
clock of oracle calls, each with its visit heat map and its duality-gap curve, so the n-fold gain
of gap sampling on the App. C toy is watched, not only read.

:class:`Race` holds two solvers with the same seed and settings except the sampler and advances
them in lockstep: every tick gives both the same number of counted oracle calls (no cache, so a
block step is one oracle call; both make their exact gap passes at the same iterations).
Stepping in ticks does not change the mathematics (the solver's traces equal one run made with
``steps`` in one go). :class:`RaceView` draws it; the app's periodic refresh calls
:meth:`RaceView.update`, which advances a running race by one tick.

Each side *stops at ε*: at the first oracle call after which its exact duality gap is <= ε
(found to the call, not to the tick), its solver, visit counts and curve are frozen. The race
ends when both sides have stopped or at a budget of effective passes. Why stop: App. C's
point is the visits *up to* ε (gap sampling visits each easy block once, then only the hard
one). On the toy, when ε <= 1/(2nK) (the defaults: n = 20, K = 50, ε = 1e-4 <= 5e-4),
reaching ε means the hard block is solved: before it has had K steps its gap is at least
1/(2nt) > 1/(2nK) (App. C). From then on every block gap is 0 and gap sampling, with nothing
left to prefer, draws uniformly, so a map kept running would fill up like uniform's. With a
larger n·K (ε > 1/(2nK)) a side may reach ε with the hard block not yet solved; the readout
says so (:meth:`Race.eps_solves_hard_block`).

Paper: App. C (gap sampling needs O(n + t) oracle calls where uniform sampling needs O(n·t)),
Sec. 3.1 (gap sampling, Alg. 2).
"""
from __future__ import annotations

import math

import numpy as np

from .export import figure_pane
from .views import legend_above
from .safe_html import esc
from .ticks import handler as _handler

__all__ = ["SIDES", "RACE_PROBLEMS", "SPEEDS", "Race", "RaceView", "calls_to_reach", "heat_title"]

#: The two samplers of the race, left to right.
SIDES = ("uniform", "gap")
#: Problems of the race: key -> label shown in the app.
RACE_PROBLEMS = {"toy": "App. C toy (1 hard + n−1 easy)", "ocr-small": "OCR-small"}
#: Effective passes per tick (the speed control): label -> passes.
SPEEDS = {"0.05 pass / tick": 0.05, "0.2 pass / tick": 0.2, "0.5 pass / tick": 0.5,
          "1 pass / tick": 1.0, "3 passes / tick": 3.0}
COLORS = {"uniform": "#7570b3", "gap": "#d95f02"}


#: the toy's sizes and the seeds a race takes (the URL's race_n, race_k and race_seed agree)
TOY_N, TOY_K, MAX_SEED = (2, 400), (1, 1000), 2 ** 31 - 1


def _problem(problem, n, K):
    if problem == "toy":
        from gaplab.toy_examples.hard_easy import make_hard_easy
        model, lam, _ = make_hard_easy(n, K)
        return model, lam
    if problem == "ocr-small":
        from gaplab.core.problems import load_problem
        p = load_problem("ocr-small")
        return p.model, p.default_lam
    raise ValueError(f"problem must be one of {list(RACE_PROBLEMS)}, got {problem!r}")


class Race:
    """Uniform and gap sampling in lockstep on one problem.

    Parameters
    ----------
    problem : {"toy", "ocr-small"}
        The App. C toy (``n``, ``K``; λ = 1/n) or OCR-small (λ = 0.01).
    n, K : int
        Size of the toy (n >= 2 objects, K >= 1 wrong labels).
    seed : int
        Seed of both solvers.
    gap_check : float
        Passes between exact gap passes (both solvers; inf: never). Gap sampling refreshes its
        estimates there; the passes count as oracle calls on both sides.
    passes_per_tick : float
        Effective passes each side makes per tick (> 0): ``max(1, round(passes_per_tick·n))``
        oracle calls.
    eps : float
        Target duality gap: each side stops (frozen) at the first oracle call after which its
        exact duality gap is <= ``eps``.
    max_passes : float
        Budget of the race in effective passes (oracle calls / n) per side (> 0): a side that
        has not reached ``eps`` by then stops there.
    model : (model, lam), optional
        A problem to race on instead of ``problem``.

    Raises
    ------
    ValueError
        On an unknown problem or an argument out of range.
    """

    def __init__(self, problem: str = "toy", *, n: int = 20, K: int = 50, seed: int = 0,
                 gap_check: float = 10, passes_per_tick: float = 0.2, eps: float = 1e-4,
                 max_passes: float = 200, model=None):
        from gaplab.core import Solver
        if not (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and 0 <= seed <= MAX_SEED):
            raise ValueError(f"seed must be an int in [0, {MAX_SEED}], got {seed!r}")
        if problem == "toy" and model is None:   # the toy's arrays grow with n and K: bounded
            for name, v, (lo, hi) in (("n", n, TOY_N), ("K", K, TOY_K)):
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                    raise ValueError(f"{name} must be an int in [{lo}, {hi}] for the toy, got {v!r}")
        if not (isinstance(eps, (int, float)) and eps > 0):
            raise ValueError(f"eps must be a number > 0, got {eps!r}")
        if not (isinstance(max_passes, (int, float)) and not isinstance(max_passes, bool)
                and math.isfinite(max_passes) and max_passes > 0):
            raise ValueError(f"max_passes must be a finite number > 0, got {max_passes!r}")
        self.problem = problem if model is None else "custom"
        self.model, self.lam = _problem(problem, n, K) if model is None else model
        self.n = int(self.model.n)
        self.K = int(K) if self.problem == "toy" else None   # the toy's wrong labels
        self.max_calls = max(1, int(math.ceil(max_passes * self.n)))
        self.seed, self.gap_check, self.eps = int(seed), gap_check, float(eps)
        self.set_speed(passes_per_tick)
        self.solvers = {side: Solver(self.model, lam=self.lam, seed=self.seed, sampling=side,
                                     gap_check=gap_check, max_passes=1e12) for side in SIDES}
        self.visits = {side: np.zeros(self.n, dtype=np.int64) for side in SIDES}
        g0 = self._gap(SIDES[0])
        self.curves = {side: [(0, g0)] for side in SIDES}
        self.reached = {side: (0 if g0 <= self.eps else None) for side in SIDES}
        self.ticks = 0
        self.target = 0
        self.finished = {side: False for side in SIDES}
        self.running = False

    def set_speed(self, passes_per_tick: float):
        """Effective passes per tick (> 0)."""
        if not (isinstance(passes_per_tick, (int, float)) and not isinstance(passes_per_tick, bool)
                and math.isfinite(passes_per_tick) and passes_per_tick > 0):
            raise ValueError(f"passes_per_tick must be a number > 0, got {passes_per_tick!r}")
        self.calls_per_tick = max(1, int(round(passes_per_tick * self.n)))

    def _gap(self, side) -> float:
        # observed without side effects: no oracle call counted, no estimate changed
        return max(float(self.solvers[side].exact_gap(count=False).gap), 0.0)

    def _advance(self, side, target):
        s, visits = self.solvers[side], self.visits[side]
        cap = 4096   # the solver's step log (Solver(log_size=4096))
        while s.oracle_calls < target and not self.finished[side] and self.reached[side] is None:
            k = min(target - s.oracle_calls, cap)
            it0 = s.iteration
            s.steps(k)
            done = s.iteration - it0
            if done == 0:        # the solver stopped (converged): nothing more to step
                self.finished[side] = True
                break
            for r in s.last_steps(done):
                visits[r.block] += 1

    def _at_eps(self, g: float) -> bool:
        return g <= self.eps * (1 + 1e-9)

    def stopped(self, side) -> bool:
        """Whether ``side`` makes no more steps (it reached ε, hit the budget or converged)."""
        return (self.reached[side] is not None or self.finished[side]
                or self.solvers[side].oracle_calls >= self.max_calls)

    @property
    def over(self) -> bool:
        """The race has ended: both sides stopped."""
        return all(self.stopped(side) for side in SIDES)

    def _first_at_eps(self, side, target):
        """The side's state has gap > ε and reaches gap <= ε by ``target`` oracle calls: leave it
        at the first call where the gap is <= ε as seen at chunk ends (chunks of 1/16 of the
        span, then of the chunk that crossed, replayed from a copy, down to single calls)."""
        while True:
            lo = self.solvers[side].oracle_calls
            chunk = max(1, -(-(target - lo) // 16))
            while True:
                before, before_visits = self.solvers[side].copy(), self.visits[side].copy()
                stop = min(self.solvers[side].oracle_calls + chunk, target)
                self._advance(side, stop)
                now = self.solvers[side].oracle_calls
                if now >= target or self.finished[side] or self._at_eps(self._gap(side)):
                    break
            if chunk == 1 or now - before.oracle_calls <= 1 or self.finished[side]:
                return   # one step (with the exact gap pass it may end with): found
            # the gap fell to ε inside this chunk: replay it more finely
            self.solvers[side], self.visits[side], target = before, before_visits, now

    def tick(self, calls: int | None = None):
        """Advance both sides to the same count of counted oracle calls (``calls_per_tick`` more
        by default, at most to the budget), then observe each side's exact duality gap. A side
        whose gap falls to ε during the tick stops at the first call where it does (its state
        and visits frozen there); a stopped side does not move."""
        calls = self.calls_per_tick if calls is None else int(calls)
        if calls < 1:
            raise ValueError(f"calls must be >= 1, got {calls!r}")
        self.target = min(self.target + calls, self.max_calls)
        for side in SIDES:
            if self.stopped(side):
                continue
            start, start_visits = self.solvers[side].copy(), self.visits[side].copy()
            self._advance(side, self.target)
            g = self._gap(side)
            if self._at_eps(g):
                self.solvers[side], self.visits[side] = start, start_visits
                self._first_at_eps(side, self.target)
                g = self._gap(side)
            s = self.solvers[side]
            self.curves[side].append((s.oracle_calls, g))
            if self._at_eps(g):
                self.reached[side] = s.oracle_calls
        self.ticks += 1

    @property
    def oracle_calls(self) -> dict:
        return {side: self.solvers[side].oracle_calls for side in SIDES}

    def gaps(self) -> dict:
        return {side: self.curves[side][-1][1] for side in SIDES}

    def ratio(self) -> float:
        """Duality gap of uniform over that of gap sampling, now (inf when gap sampling is at 0)."""
        g = self.gaps()
        if g["gap"] <= 0.0:
            return math.inf if g["uniform"] > 0.0 else 1.0
        return g["uniform"] / g["gap"]

    def eps_solves_hard_block(self) -> bool | None:
        """On the toy: whether reaching ε implies the hard block is solved, ε <= 1/(2nK) (after
        t < K steps its gap is at least 1/(2nt), App. C). None on another problem."""
        if self.problem != "toy":
            return None
        return self.eps <= 1.0 / (2 * self.n * self.K)

    def readout(self) -> str:
        """Plain text: calls, passes, both gaps, their ratio, where each side stopped."""
        c = self.oracle_calls
        g = self.gaps()
        r = self.ratio()
        rtxt = "∞ (gap sampling is at 0)" if math.isinf(r) else f"{r:.3g}"
        s = f"tick {self.ticks}: "
        if c["uniform"] == c["gap"]:
            s += (f"{c['uniform']:,} oracle calls each ({c['uniform'] / self.n:.2f} effective passes); "
                  f"duality gap uniform {g['uniform']:.3g}, gap sampling {g['gap']:.3g}; "
                  f"ratio uniform / gap = {rtxt}.")
        else:   # one side stopped: the gaps are at different clocks, no ratio
            s += "; ".join(f"{'gap sampling' if side == 'gap' else side}: {c[side]:,} oracle calls "
                           f"({c[side] / self.n:.2f} passes), duality gap {g[side]:.3g}" for side in SIDES) + "."
        for side in SIDES:
            name = "gap sampling" if side == "gap" else side
            if self.reached[side] is not None:
                s += (f" {name} reached ε = {self.eps:g} at {self.reached[side]:,} calls and stopped "
                      f"there (its map shows the visits up to ε).")
            elif self.stopped(side):
                why = "converged" if self.finished[side] else "used the budget"
                s += f" {name} {why} at {c[side]:,} calls without reaching ε = {self.eps:g}."
        ru, rg = self.reached["uniform"], self.reached["gap"]
        if ru and rg:
            s += f" Gap sampling needed ×{ru / rg:.2f} fewer oracle calls."
        if self.eps_solves_hard_block() is False:
            s += (f" Here ε = {self.eps:g} > 1/(2nK) = {1 / (2 * self.n * self.K):.3g}: a side may reach ε "
                  "before the hard block is solved (App. C).")
        if self.over:
            s += " The race is over."
        return s


def calls_to_reach(race: Race, max_calls: int) -> dict:
    """Tick ``race`` one oracle call at a time until both sides reach its ε (or ``max_calls``,
    or the race's budget): side -> counted oracle calls at the first gap <= ε (None if not
    reached)."""
    while not race.over and race.target < max_calls:
        race.tick(1)
    return dict(race.reached)


# ============================================================================ the view


def _grid(n):
    cols = max(1, int(math.ceil(math.sqrt(n))))
    i = np.arange(n)
    return cols, (i % cols).astype(float), (i // cols).astype(float)


def heat_title(race: Race, side: str) -> str:
    """The title of ``side``'s visit heat map: always two lines, what the map counts and the
    side's state (its oracle calls so far, frozen at ε or stopped). BokehJS sizes a title's
    space when the figure is first drawn and only repaints when its text changes, so a second
    line added later was drawn over the first, which went above the figure's top edge."""
    what = f"{side}: visits" + (" (0 = hard)" if race.problem == "toy" else " per block")
    if race.reached[side] is not None:
        state = f"frozen at ε ({race.reached[side]:,} calls)"   # the visits up to ε
    elif race.stopped(side):
        state = f"stopped ({race.oracle_calls[side]:,} calls)"
    else:
        state = f"{race.oracle_calls[side]:,} oracle calls"
    return f"{what}\n{state}"


class RaceView:
    """Controls, two visit heat maps and the gap curves of a :class:`Race`.

    ``update(snap, force)`` (called by the app's periodic refresh while the tab is shown)
    advances a running race by one tick and redraws."""

    GAP_FLOOR = 1e-12   # a duality gap of exactly 0 is drawn here (log axis)

    def __init__(self, race: Race | None = None):
        import panel as pn
        from bokeh.models import ColumnDataSource, LinearColorMapper, Range1d
        from bokeh.palettes import Viridis256
        from bokeh.plotting import figure

        self.race = race if race is not None else Race()
        self.heat, self.hsrc, self.mappers = {}, {}, {}
        for side in SIDES:
            src = ColumnDataSource(dict(x=[], y=[], visits=[], block=[], label=[], tcolor=[]))
            mapper = LinearColorMapper(palette=Viridis256[::-1], low=0, high=1)
            f = figure(height=250, width=240, tools="hover", toolbar_location=None, match_aspect=True,
                       tooltips=[("block", "@block"), ("visits", "@visits")],
                       title=heat_title(self.race, side))   # two lines from the start
            f.rect("x", "y", 0.95, 0.95, source=src, fill_color={"field": "visits", "transform": mapper},
                   line_color=None)
            f.text("x", "y", text="label", source=src, text_align="center", text_baseline="middle",
                   text_font_size="11px", color="tcolor")
            f.axis.visible = False
            f.grid.visible = False
            f.y_range.flipped = True
            f.title.text_font_size = "15px"
            self.heat[side], self.hsrc[side], self.mappers[side] = f, src, mapper
        c = figure(height=280, sizing_mode="stretch_width", y_axis_type="log", tools="save",
                   toolbar_location=None, x_range=Range1d(0, 1), y_range=Range1d(1e-6, 1),
                   title="Exact duality gap (0 drawn at the bottom)", x_axis_label="effective passes "
                   "(oracle calls / n), the same on both sides", y_axis_label="duality gap")
        self.csrc = {}
        for side in SIDES:
            self.csrc[side] = ColumnDataSource(dict(x=[], y=[]))
            c.line("x", "y", source=self.csrc[side], color=COLORS[side], line_width=3,
                   legend_label=f"{side} sampling")
        self.eps_src = ColumnDataSource(dict(x=[], y=[]))
        c.line("x", "y", source=self.eps_src, color="#999", line_dash="dotted", line_width=2, legend_label="ε")
        legend_above(c).label_text_font_size = "13px"     # never over the data
        c.title.text_font_size = "15px"
        self.curves = c
        self.w_problem = pn.widgets.Select(label="problem", options={v: k for k, v in RACE_PROBLEMS.items()},
                                           value=self.race.problem if self.race.problem in RACE_PROBLEMS else "toy",
                                           width=250)   # the toy label fits in JupyterLab's wider UI font too
        self.w_n = pn.widgets.IntInput(label="n (toy)", value=self.race.n if self.race.problem == "toy" else 20,
                                       start=2, end=400, width=90)
        self.w_K = pn.widgets.IntInput(label="K (toy)", value=self.race.K or 50, start=1, end=1000, width=90)
        self.w_seed = pn.widgets.IntInput(label="seed", value=self.race.seed, start=0, width=90)
        self.w_speed = pn.widgets.Select(label="speed", options=SPEEDS, value=0.2, width=150)
        self.b_run = pn.widgets.Toggle(label="▶ Start", value=False, color="success", width=110,
                                       css_classes=["gaplab-race-run"])
        self.b_reset = pn.widgets.Button(label="↺ New race", width=110, css_classes=["gaplab-race-reset"])
        self.b_run.param.watch(_handler(lambda e: self.set_running(e.new)), "value")
        self.b_reset.on_click(_handler(lambda e: self.new_race()))
        self.w_speed.param.watch(_handler(lambda e: self._speed(e.new)), "value")
        # a changed problem, size or seed starts a new race (paused): both sides must share them
        for w in (self.w_problem, self.w_n, self.w_K, self.w_seed):
            w.param.watch(_handler(lambda e: self._setting_changed()), "value")
        self.readout = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["gaplab-race-readout"],
                                    styles={"font-size": "16px"})
        # n and K size the toy only: on a data set they are disabled, and this note says why
        self.size_note = pn.pane.HTML("", css_classes=["gaplab-race-size-note"], styles={"font-size": "14px"},
                                      margin=(28, 5, 5, 5), visible=False)
        self._sync_size_inputs()
        self._figs = pn.Row(figure_pane(self.heat["uniform"], sizing_mode="fixed"),
                            figure_pane(self.heat["gap"], sizing_mode="fixed"), figure_pane(c),
                            sizing_mode="stretch_width")
        self.projector = False
        self.panel = pn.Column(*self._controls(False), self.readout, self._figs,
                               sizing_mode="stretch_width", css_classes=["gaplab-race"])
        self.draw()

    def _controls(self, projector: bool) -> list:
        """The rows of controls: two, or one that wraps in projector mode (the tab then fits
        1280×720 under the projector bar)."""
        import panel as pn
        buttons = pn.Column(pn.Spacer(height=18), pn.Row(self.b_run, self.b_reset), margin=0)
        if projector:
            return [pn.Row(self.w_problem, self.w_n, self.w_K, self.w_seed, self.w_speed, buttons, self.size_note,
                           stylesheets=[":host { flex-wrap: wrap !important; }"])]
        return [pn.Row(self.w_problem, self.w_n, self.w_K, self.w_seed, self.size_note),
                pn.Row(self.w_speed, buttons)]

    def set_projector(self, on: bool) -> None:
        """Projector mode's layout (one row of controls) on or off (the app's projector switch,
        when the tab is shown)."""
        on = bool(on)
        if on != self.projector:
            self.projector = on
            self.panel.objects = [*self._controls(on), self.readout, self._figs]

    # ---------------------------------------------------------------- actions
    def set_running(self, on: bool):
        self.race.running = bool(on)
        label = "❚❚ Pause" if on else "▶ Start"
        if self.b_run.label != label:
            self.b_run.label = label
        if self.b_run.value != bool(on):
            self.b_run.value = bool(on)
        self.draw()   # the readout says running / paused at once

    def _sync_size_inputs(self):
        """Enable n and K on the toy; on a data set disable them and say why."""
        toy = self.w_problem.value == "toy"
        for w in (self.w_n, self.w_K):
            w.disabled = not toy
            w.description = (None if toy else
                             f"Sizes the App. C toy only: {RACE_PROBLEMS[self.w_problem.value]} has its own "
                             f"blocks (n = {self.race.n:,}) and labellings.")
        self.size_note.object = "" if toy else esc(
            f"n and K size the toy only: {RACE_PROBLEMS[self.w_problem.value]} has n = {self.race.n:,} blocks.")
        self.size_note.visible = not toy

    def _speed(self, passes):
        try:
            self.race.set_speed(passes)
        except (ValueError, TypeError) as exc:
            self.readout.object = f"<b style='color:#d7191c'>Speed not changed:</b> {esc(exc)}"

    def _revert_controls(self):
        """Show the current race's problem, n, K and seed in the controls (no new race)."""
        r = self.race
        self._configuring = True
        try:
            for w, v in ((self.w_problem, r.problem if r.problem in RACE_PROBLEMS else self.w_problem.value),
                         (self.w_n, r.n if r.problem == "toy" else self.w_n.value),
                         (self.w_K, r.K if r.K is not None else self.w_K.value), (self.w_seed, r.seed)):
                try:
                    if w.value != v:
                        w.value = v
                except (ValueError, TypeError):
                    pass
        finally:
            self._configuring = False

    def settings(self) -> dict:
        """The race's settings that make it (deterministic): problem, n, K, seed."""
        return {"problem": self.w_problem.value, "n": int(self.w_n.value), "K": int(self.w_K.value),
                "seed": int(self.w_seed.value)}

    def configure(self, **settings):
        """Set some of :meth:`settings` (e.g. from a URL) and start one new race (paused) with
        them. Raises ValueError naming an unknown setting."""
        widgets = {"problem": self.w_problem, "n": self.w_n, "K": self.w_K, "seed": self.w_seed}
        unknown = sorted(set(settings) - set(widgets))
        if unknown:
            raise ValueError(f"race settings are {sorted(widgets)}, got {unknown}")
        self._configuring = True
        try:
            for k, v in settings.items():
                widgets[k].value = v
        finally:
            self._configuring = False
        self.new_race()

    def _setting_changed(self):
        # a changed problem, size or seed starts a new race (one, after configure())
        if not getattr(self, "_configuring", False):
            self.new_race()

    def new_race(self):
        """A new race (paused) with the controls' problem, n, K, seed and speed. A value the
        race refuses (a page can send any value to a widget) keeps the current race, says why in
        the readout and shows the race's own values in the controls again."""
        self.set_running(False)
        try:
            race = Race(self.w_problem.value, n=self.w_n.value, K=self.w_K.value,
                        seed=self.w_seed.value, passes_per_tick=self.w_speed.value)
        except (ValueError, TypeError) as exc:
            self._revert_controls()
            self.readout.object = f"<b style='color:#d7191c'>Race not changed:</b> {esc(exc)}"
            return
        self.race = race
        self._sync_size_inputs()
        self.draw()

    def update(self, snap=None, force: bool = False) -> bool:
        if self.race.running:
            if not self.race.over:
                self.race.tick()
            if self.race.over:   # both stopped (at ε or the budget): the race ends here
                self.set_running(False)
            self.draw()
            return True
        if force:
            self.draw()
        return bool(force)

    # ---------------------------------------------------------------- drawing
    def draw(self):
        r = self.race
        cols, gx, gy = _grid(r.n)
        hi = max(1, max(int(v.max()) for v in r.visits.values()))
        for side in SIDES:
            v = r.visits[side]
            self.mappers[side].high = hi   # one colour scale for both sides
            label = [str(int(x)) for x in v] if r.n <= 64 else [""] * r.n
            tcolor = ["white" if x > 0.6 * hi else "#222" for x in v]   # readable on dark cells
            self.hsrc[side].data = dict(x=gx.tolist(), y=gy.tolist(), visits=v.tolist(),
                                        block=list(range(r.n)), label=label, tcolor=tcolor)
            self.heat[side].title.text = heat_title(r, side)
        lo, top, xmax = math.inf, 0.0, 1.0
        for side in SIDES:
            c = np.asarray(r.curves[side], dtype=float)
            y = c[:, 1]
            pos = y[y > 0]
            if pos.size:
                lo, top = min(lo, float(pos.min())), max(top, float(pos.max()))
            xmax = max(xmax, float(c[-1, 0]) / r.n)
        floor = max(self.GAP_FLOOR, 0.1 * min(lo, r.eps)) if math.isfinite(lo) else 0.1 * r.eps
        for side in SIDES:
            c = np.asarray(r.curves[side], dtype=float)
            self.csrc[side].data = dict(x=(c[:, 0] / r.n).tolist(), y=np.maximum(c[:, 1], floor).tolist())
        self.eps_src.data = dict(x=[0, xmax], y=[r.eps, r.eps])
        self.curves.x_range.start, self.curves.x_range.end = 0, xmax * 1.02
        self.curves.y_range.start, self.curves.y_range.end = floor * 0.5, max(top, r.eps) * 2
        state = "running" if r.running else "paused"
        self.readout.object = (f"<b>{state}</b> · " + esc(r.readout()))
