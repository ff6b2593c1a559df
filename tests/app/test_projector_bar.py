"""Projector mode's top bar holds what a lecture switches mid-run (issue 24 item 9): the
sampler and the step kind (α kept, the switch marked), exact gaps and the comparison, so the
lecturer never leaves projector mode. Its fit at 1280×720 with text >= 18 px is checked in the
browser (tests/browser/test_projector_layout_page.py)."""
import pytest

pytest.importorskip("panel")


def test_projector_bar_switches_the_sampler_keeping_alpha_and_has_exact_and_compare():
    import panel as pn
    from gaplab.app.main import build_app
    app = build_app(dataset="toy", sampling="uniform", step_kind="pairwise", periodic=False)
    try:
        s = app.session
        assert s.wait_idle(120) and s.keep_alpha
        app.set_projector(True)
        assert not app.shown(app.sidebar) and app.shown(app.topbar) and not app.shown(app.header)
        bar = app.topbar
        selects = {w.name: w for w in bar.select(pn.widgets.Select)}
        buttons = {b.label: b for b in bar.select(pn.widgets.Button)}
        assert {"Step", "◀ Back", "Exact gaps", "Add to comparison"} <= set(buttons)
        sampler = app.p_widgets["sampling"]
        assert sampler in selects.values() and app.p_widgets["step_kind"] in selects.values()
        for _ in range(3):   # the sidebar's Step and the bar's (queued for the session's worker)
            app.b_step.clicks += 1
            app._bar_copies[app.b_step].clicks += 1
        assert s.wait_idle(60) and s.snapshot.iteration == 6
        w_before = s.solver.w.copy()
        sampler.value = "gap"                       # uniform -> gap mid-run, from the bar
        assert s.sampling == "gap" and app.widgets["sampling"].value == "gap"   # one parameter
        assert s.wait_idle(60)
        assert s.snapshot.iteration == 6 and (s.solver.w == w_before).all()   # α kept
        assert len(s.snapshot.switches) == 1         # the switch is marked
        app.p_widgets["step_kind"].value = "away"   # pairwise -> away: α (with its atoms) kept
        assert s.wait_idle(60) and s.step_kind == "away" and s.snapshot.iteration == 6
        assert len(s.snapshot.switches) == 2
        checks = len(s.snapshot.manual_checks)
        buttons["Exact gaps"].clicks += 1
        assert s.wait_idle(60) and len(s.snapshot.manual_checks) == checks + 1
        runs = len(s.snapshot.comparison)
        buttons["Add to comparison"].clicks += 1
        assert s.wait_idle(60) and len(s.snapshot.comparison) == runs + 1
        app.set_projector(False)                     # the sidebar shown, the bar hidden
        assert not app.shown(app.topbar) and app.shown(app.sidebar) and not app.header.objects[-1].value
    finally:
        app.close()
