"""The textbook's figures hold what the solver and the app do: the recorded race is the app's
Race, the recorded OCR steps are the app's session at ``?steps=k`` (block, γ, gaps, staleness,
probabilities and the narrated sentence), and the pages are self-contained, escaped and within
their size budget."""
import math
import re

import numpy as np
import pytest

from gaplab.app.textbook import ocr_fig, race_fig


# ------------------------------------------------------------------------ the race (App. C)

def test_the_recorded_race_is_the_apps_race(textbook_data):
    from gaplab.app.race import Race
    from gaplab.app.textbook.datacache import one_thread
    _, data = textbook_data["race_fig"]
    v = data["variants"][0]
    s = race_fig.SETTINGS
    race = Race("toy", n=v["n"], K=s["K"], seed=0, gap_check=s["gap_check"], eps=s["eps"],
                max_passes=s["max_passes"])
    with one_thread():
        for t in range(1, 121):
            race.tick(1)
            if t in (1, 40, 120):
                for side in race_fig.SIDES:
                    rec = v["sides"][side]
                    assert np.array_equal(race_fig.visits_at(rec, t, v["n"]), race.visits[side]), (side, t)
                    assert rec["calls"][t] == race.oracle_calls[side]
                    assert rec["gap"][t] == pytest.approx(race.gaps()[side], rel=1e-5, abs=1e-15)


def test_gap_sampling_reaches_eps_with_far_fewer_oracle_calls(textbook_data):
    # App. C: about n + t calls for gap sampling against n·t for uniform, t = min(K, 1/(2nε))
    _, data = textbook_data["race_fig"]
    for v in data["variants"]:
        ru, rg = v["sides"]["uniform"]["reached"], v["sides"]["gap"]["reached"]
        assert ru is not None and rg is not None, v["n"]
        t = min(v["K"], 1 / (2 * v["n"] * v["eps"]))
        assert rg <= 2 * (v["n"] + t), (v["n"], rg)      # gap pass calls included
        assert ru / rg > 0.5 * v["n"] * t / (v["n"] + t), (v["n"], ru, rg)
        # gap sampling visits each easy block about once, then only the hard one
        easy = race_fig.visits_at(v["sides"]["gap"], v["ticks"], v["n"])[1:]
        assert easy.max() <= 2 and easy.min() >= 1


# ------------------------------------------------------------------------ OCR-small steps

def _app_at(query: str, k: int):
    from gaplab.app.urlstate import session_from_query
    s, req = session_from_query(f"{query}&steps={k}" if query else f"?steps={k}")
    assert req.notices == []
    return s


@pytest.mark.parametrize("variant, stretch, offsets", [(0, 0, (1, 2, 626, 1252)), (1, 0, (700,)),
                                                       (0, 1, (60, 61, 200)), (1, 1, (61,))])
def test_a_page_step_is_the_apps_step_at_the_same_url(textbook_data, variant, stretch, offsets):
    from gaplab.app.views.narration import step_sentence
    _, data = textbook_data["ocr_fig"]
    V = data["variants"][variant]
    S = V["stretches"][stretch]
    for off in offsets:
        k = S["first"] + off if stretch else off
        j = k - S["first"] - 1
        s = _app_at(V["query"], k)
        try:
            snap = s.snapshot
            st = snap.last_step
            assert snap.iteration == k and st.block == S["block"][j]
            assert S["gamma"][j] == pytest.approx(st.gamma, rel=1e-5, abs=1e-300)
            assert S["gap_before"][j] == pytest.approx(st.gap_before, rel=1e-5)
            assert S["gap_after"][j] == pytest.approx(st.gap_after, rel=1e-5)
            assert ocr_fig.sentence_at(data, S["tpl"][j], S["nums"][j]) == step_sentence(snap, st)
            assert "".join(map(str, st.fw_corner)) == S["fw"][j]
            assert data["truth"][str(st.block)] == "".join(map(str, st.truth))
            assert data["images"][str(st.block)] == ocr_fig._strip(st.image)   # the block's own letters
            g, it = ocr_fig.state_at(V, stretch, k)
            assert np.allclose(g, snap.gap_estimates, rtol=1e-5, atol=0), k
            stale = np.where(it >= 0, k - it, -1)
            assert np.array_equal(stale, snap.staleness), k
            assert np.allclose(ocr_fig.probabilities(V["sampling"], g), snap.probabilities, rtol=1e-4, atol=1e-12)
        finally:
            s.close()


def test_the_later_stretch_holds_the_first_exact_gap_pass(textbook_data):
    _, data = textbook_data["ocr_fig"]
    for V in data["variants"]:
        S = V["stretches"][1]
        j = V["gap_pass"] - S["first"] - 1
        assert len(S["chg"][j]) == V["n"]                   # every estimate refreshed
        k = V["gap_pass"]
        it = ocr_fig.state_at(V, 1, k)[1]
        assert (k - it).max() <= 1                          # every estimate fresh after it
        before = ocr_fig.state_at(V, 1, k - 1)[1]
        assert (k - 1 - before).max() > V["n"]              # some were stale for over a pass


def test_sentences_round_trip_through_their_templates():
    text = "block <b>1,234</b> with γ = <b>0.0016</b>, gap 1.5e-05 (Eq. (6))"
    tpl, nums = ocr_fig.split_sentence(text)
    assert "1,234" not in tpl and nums == "1,234|0.0016|1.5e-05|6"
    assert ocr_fig.sentence_at({"templates": [tpl]}, 0, nums) == text
    with pytest.raises(ValueError, match="template mark"):
        ocr_fig.split_sentence("a § b")


def test_probabilities_follow_alg_2():
    g = np.array([np.inf, 0.5, np.inf, 0.1])
    assert ocr_fig.probabilities("gap", g).tolist() == [0.5, 0, 0.5, 0]
    g = np.array([0.3, 0.1, 0.0, 0.6])
    assert np.allclose(ocr_fig.probabilities("gap", g), g)
    assert np.allclose(ocr_fig.probabilities("uniform", g), 0.25)
    with pytest.raises(ValueError, match="sampling"):
        ocr_fig.probabilities("lipschitz", g)


# ------------------------------------------------------------------------ text, registry, cache, pages

def test_every_lesson_formula_becomes_mathml():
    from gaplab.app.lessons import LESSONS
    from gaplab.app.textbook.text import markdown_html
    for lesson in LESSONS:
        out = markdown_html(lesson.text)
        dollars = len(re.findall(r"\$\$.+?\$\$|\$[^$]+?\$", lesson.text, re.S))
        assert out.count("<math") == dollars, lesson.title
        assert "class='tex'" not in out and "$" not in out, lesson.title


def test_the_text_and_its_formulas_are_escaped():
    from gaplab.app.textbook.text import markdown_html
    out = markdown_html("a <script>alert(1)</script> b $\\text{<img src=x onerror=alert(1)>}$ c $x^2$")
    assert "<script>" not in out and "<img" not in out
    assert "&lt;script&gt;" in out and "&lt;img src=x" in out and "<math" in out


def test_the_registry_lists_modules_of_their_lesson():
    from gaplab.app.textbook.registry import figure_modules
    assert figure_modules(4) == [ocr_fig] and figure_modules(7) == [race_fig]
    assert figure_modules(1) == []
    for bad in (0, 9, "4", True):
        with pytest.raises(ValueError, match="lesson must be an int in"):
            figure_modules(bad)


def test_the_cache_computes_once_per_code_and_seed(tmp_path):
    from gaplab.app.textbook import datacache
    import types
    calls = []

    def build_data(seed):
        calls.append(seed)
        return {"seed": seed, "x": [1.5, None]}
    Fig = types.ModuleType("gaplab.app.textbook.fake_fig")
    Fig.SETTINGS, Fig.build_data = {"a": 1}, build_data

    assert datacache.cached_data(Fig, 3, folder=tmp_path) == {"seed": 3, "x": [1.5, None]}
    assert datacache.cached_data(Fig, 3, folder=tmp_path) == {"seed": 3, "x": [1.5, None]}
    assert calls == [3]
    datacache.cached_data(Fig, 4, folder=tmp_path)
    assert calls == [3, 4]
    (path,) = tmp_path.glob("fake_fig-3-*.json")
    path.write_text("{half", encoding="utf-8")           # unreadable: computed anew
    assert datacache.cached_data(Fig, 3, folder=tmp_path)["seed"] == 3 and calls == [3, 4, 3]
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        datacache.cached_data(Fig, -1, folder=tmp_path)


def test_exported_pages_are_self_contained_and_within_budget(exported_pages):
    from gaplab.app.lessons import LESSONS
    from gaplab.app.textbook.page import MAX_PAGE_BYTES
    assert set(exported_pages) >= {4, 7}
    for k, path in exported_pages.items():
        text = path.read_text(encoding="utf-8")
        assert path.stat().st_size <= MAX_PAGE_BYTES, (k, path.stat().st_size)
        # nothing is fetched: no script, stylesheet, image or frame from elsewhere
        assert not re.search(r"""<(script|link|img|iframe)[^>]*(src|href)\s*=\s*["']?(https?:)?//""", text, re.I), k
        assert "Bokeh.embed" in text and "<math" in text
        assert f"page {k} of {len(LESSONS)}" in text


def test_the_cli_exports_a_lesson_and_refuses_bad_input(tmp_path, capsys, textbook_data):
    from gaplab.cli.entry import main
    out = tmp_path / "lesson7.html"
    assert main(["lesson", "export", "7", "--out", str(out)]) == 0
    assert out.stat().st_size > 1_000_000 and "wrote" in capsys.readouterr().out
    assert main(["lesson", "export", "99", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "must be a lesson number in [1, " in err and "got 99" in err
    assert main(["lesson", "export", "1", "--out", str(tmp_path / "no" / "x.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
