"""Every tab has a name in the URL, and the Race tab's settings travel in it (issue 24 item 11)."""
import pytest

pytest.importorskip("panel")


def test_every_tab_of_the_app_has_a_url_slug():
    """One slug per tab, in the tabs' order, each naming its tab: a tab added to the app without
    a slug fails here."""
    from gaplab.app import main
    from gaplab.app.urlstate import TAB_SLUGS
    names = main.GapLabApp.TAB_NAMES
    assert len(TAB_SLUGS) == len(names) == len(set(TAB_SLUGS))
    for slug, name in zip(TAB_SLUGS, names):
        assert slug in name.lower(), (slug, name)
    # the module's tab indices agree with the slugs
    for const in ("STEP", "CONVERGENCE", "CACHE", "PATH", "TOY", "LESSONS", "SWEEPS", "RACE"):
        assert TAB_SLUGS[getattr(main, const)] in names[getattr(main, const)].lower()


def test_the_race_tab_and_its_settings_parse_from_a_url():
    from gaplab.app.session import Session
    from gaplab.app.urlstate import TAB_SLUGS, parse_query
    req = parse_query("?dataset=ocr-small&tab=race", Session)
    assert req.notices == [] and req.tab == TAB_SLUGS.index("race")
    req = parse_query("?tab=race&race=toy&race_n=8&race_k=30&race_seed=3", Session)
    assert req.notices == [] and req.race == {"problem": "toy", "n": 8, "K": 30, "seed": 3}
    for bad, key in (("race=mnist", "race"), ("race_n=1", "race_n"), ("race_k=x", "race_k"),
                     ("race_seed=-2", "race_seed")):
        req = parse_query("?" + bad, Session)
        assert req.race == {} and len(req.notices) == 1 and repr(key) in req.notices[0]


def test_the_race_tab_keeps_its_url_and_opens_from_it():
    from gaplab.app.main import RACE, build_app
    from gaplab.app.urlstate import parse_query, query_string
    app = build_app(dataset="toy", periodic=False)
    try:
        req = app.open_url("?dataset=toy&tab=race&race=toy&race_n=8&race_k=30&race_seed=3")
        assert req.notices == [] and app.tabs.active == RACE
        race = app.race_view.race
        assert (race.problem, race.n, race.seed) == ("toy", 8, 3) and not race.running
        assert race.model.n == 8
        q = app.url_query()
        assert q["tab"] == "race" and (q["race"], q["race_n"], q["race_k"], q["race_seed"]) == ("toy", "8", "30", "3")
        again = parse_query(query_string(q), type(app.session))
        assert again.notices == [] and again.race == app.race_view.settings()
        app.race_view.w_problem.value = "ocr-small"   # n and K mean nothing there: not written
        q = app.url_query()
        assert q["race"] == "ocr-small" and "race_n" not in q and "race_k" not in q
    finally:
        app.close()
