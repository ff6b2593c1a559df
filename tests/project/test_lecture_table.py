"""The lecture table's driver (benchmarks/lecture_table.py) builds its table from the pieces' JSON:
every item has a row, a piece that did not run says so, a missed target is marked as missed, and
a run that was not quiet is not called quiet. No benchmark is run here."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lt():
    spec = importlib.util.spec_from_file_location("lecture_table", ROOT / "benchmarks" / "lecture_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rec(result, load=0.4, quiet=True, rc=0):
    return {"argv": [], "rc": rc, "wall_s": 10.0, "load_start": [load, load, load], "load_end": [load + 1, 0, 0],
            "quiet": quiet, "result": result, "error": None if result is not None else "no JSON"}


def _switch(median, mx):
    return {"median_s": median, "max_s": mx, "min_s": median, "blank_reads": 0, "seconds": [median, mx]}


def _pieces():
    """Pieces as the scripts write them: quiet all within target; busy missing ``url`` and ``screens``,
    with the first Step and the projector switch over their busy targets and RSS kept 400 MB."""
    tabs = lambda kept, horse, log: {"tabs": {"rss_before_mb": 1000.0, "rss_with_tabs_mb": 2500.0,  # noqa: E731
                                              "rss_after_close_mb": 1000.0 + kept, "tracebacks": 0,
                                              "error_handling_message": 0, "kept_datasets_log": log,
                                              "tabs": [{"dataset": "conll2000", "ready_s": 20.0},
                                                       {"dataset": "horse-small", "ready_s": horse}]}}
    horse = lambda first, cached: {"first_or_cached": {"wall_s": first, "cpu_s": first},  # noqa: E731
                                   "cached": {"wall_s": cached, "cpu_s": cached}}
    shots = [f"projector_{d}step.png" for d in ("", "conll2000_", "horse-small_", "lsp-pose_")]
    names = [n.replace("step", t) for n in shots for t in ("step", "convergence", "cache", "regularization",
                                                           "toy", "lessons", "sweeps", "race")]
    quiet = {
        "startup": _rec({"summary": {"cold_first_step_answered_s_median": 9.5}}),
        "url": _rec({"runs": [{"a_round_trips_during_ms": [40.0, 60.0]}],
                     "summary": {"url_b_visible_s_median": 1.2, "url_b_shell_s_median": 0.5,
                                 "url_b_iteration_120_s_median": 4.0, "url_a_round_trip_during_median_ms": 50.0,
                                 "url_a_round_trip_during_max_ms": 60.0, "url_a_longest_wait_s_median": 0.1}}),
        "projector": _rec({"app": {"on": _switch(0.4, 0.6), "off": _switch(0.3, 0.5)}}),
        "horse": _rec(horse(150.0, 3.0)),
        "memory": _rec(tabs(100.0, 4.0, [])),
        "screens": _rec({"pages": {n: [] for n in names}, "written": names}),
    }
    busy = {
        "startup": _rec({"summary": {"cold_first_step_answered_s_median": 41.0}}, load=4.0, quiet=None),
        "projector": _rec({"app": {"on": _switch(2.5, 3.0), "off": _switch(1.0, 1.5)}}, load=4.0, quiet=None),
        "horse": _rec(horse(300.0, 6.0), load=4.0, quiet=None),
        "memory": _rec(tabs(400.0, 12.0, []), load=4.0, quiet=None),
    }
    return {"quiet": quiet, "busy": busy}


def _row(rows, key):
    return next(r for r in rows if r["key"] == key)


def test_every_item_of_the_issue_has_a_row_in_the_table(lt):
    rows = lt.build_rows(_pieces())
    keys = [r["key"] for r in rows]
    assert keys == ["first_step", "projector_switch", "url_visible", "url_steps", "url_other_step", "horse_first",
                    "horse_cached", "horse_tab", "rss", "tracebacks", "screens"]
    md = lt.markdown(rows, {"date": "d", "commit": "c", "cpus": 2})
    lines = [ln for ln in md.splitlines() if ln.startswith("| ") and not ln.startswith("| item")]
    assert [ln.split(" | ")[0][2:] for ln in lines] == [r["item"] for r in rows]
    assert all(ln.count(" | ") == 7 for ln in lines), "every row fills the eight columns"


def test_quiet_values_within_their_targets_are_met(lt):
    rows = lt.build_rows(_pieces())
    for key in ("first_step", "projector_switch", "url_visible", "horse_cached", "horse_tab", "rss", "tracebacks",
                "screens"):
        assert _row(rows, key)["quiet"]["met"] is True, key
    assert _row(rows, "first_step")["quiet"]["text"] == "9.5 s"
    for key in ("url_steps", "url_other_step", "horse_first"):   # measured, no target: reported only
        assert _row(rows, key)["quiet"]["met"] is None and _row(rows, key)["quiet"]["state"] == "ok"


def test_a_missed_target_is_marked_as_not_met(lt):
    rows = lt.build_rows(_pieces())
    assert _row(rows, "first_step")["busy"]["met"] is False           # 41 s against <= 30 s busy
    assert _row(rows, "projector_switch")["busy"]["met"] is False     # on 2.5 s against <= 2 s busy
    assert _row(rows, "horse_tab")["busy"]["met"] is False            # 12 s against <= 10 s
    assert _row(rows, "rss")["busy"]["met"] is False                  # 400 MB kept, no bounded cache named
    assert _row(rows, "horse_cached")["busy"]["met"] is True
    md = lt.markdown(rows, {})
    line = next(ln for ln in md.splitlines() if ln.startswith("| First Step"))
    cells = line.split(" | ")
    assert cells[1] == "9.5 s" and cells[2] == "41.0 s" and cells[4] == "yes" and cells[5] == "**no**"


def test_a_bounded_cache_named_in_the_log_meets_the_memory_target(lt):
    p = _pieces()
    p["busy"]["memory"]["result"]["tabs"]["kept_datasets_log"] = ["datasets kept loaded: 2 most recent (lsp-pose, horse-small)"]
    assert _row(lt.build_rows(p), "rss")["busy"]["met"] is True


def test_a_piece_that_did_not_run_says_not_run(lt):
    rows = lt.build_rows(_pieces())
    for key in ("url_visible", "url_steps", "url_other_step", "screens"):
        cell = _row(rows, key)["busy"]
        assert cell["state"] == "not run" and cell["met"] is None, key
    rows = lt.build_rows({"busy": _pieces()["busy"]})      # no quiet condition at all
    assert all(r["quiet"]["state"] == "not run" for r in rows)
    md = lt.markdown(rows, {})
    line = next(ln for ln in md.splitlines() if ln.startswith("| URL opened during the compile: page visible"))
    assert line.split(" | ")[1:3] == ["not run", "not run"]


def test_a_failed_or_unseen_piece_is_not_met(lt):
    p = _pieces()
    p["quiet"]["startup"] = _rec(None, rc=1)
    p["quiet"]["url"]["result"]["summary"]["url_b_visible_s_median"] = None   # B never drawn in time
    rows = lt.build_rows(p)
    assert _row(rows, "first_step")["quiet"]["state"] == "failed" and _row(rows, "first_step")["quiet"]["met"] is False
    assert _row(rows, "url_visible")["quiet"]["state"] == "not seen" and _row(rows, "url_visible")["quiet"]["met"] is False


def test_a_run_under_load_is_not_called_quiet(lt):
    p = _pieces()
    p["quiet"]["projector"] = _rec(p["quiet"]["projector"]["result"], load=3.2, quiet=False)
    rows = lt.build_rows(p)
    md = lt.markdown(rows, {})
    line = next(ln for ln in md.splitlines() if ln.startswith("| Projector switch"))
    assert "not quiet: load 3.2 > 1.0" in line and "yes (not quiet)" in line
    other = next(ln for ln in md.splitlines() if ln.startswith("| First Step"))
    assert "not quiet" not in other


def test_screens_missing_pictures_or_layout_problems_are_not_met(lt):
    p = _pieces()
    pages = p["quiet"]["screens"]["result"]["pages"]
    pages["projector_lsp-pose_step.png"] = ["text cut at the bottom: 'What just happened'"]
    rows = lt.build_rows(p)
    assert _row(rows, "screens")["quiet"]["met"] is False
    assert "projector_lsp-pose_step.png" in _row(rows, "screens")["quiet"]["text"]
    p = _pieces()
    p["quiet"]["screens"]["result"]["written"] = p["quiet"]["screens"]["result"]["written"][:30]
    assert _row(lt.build_rows(p), "screens")["quiet"]["met"] is False


def test_the_pieces_command_lines_carry_the_condition(lt, tmp_path):
    class Opts:
        cold_repeats, url_repeats, projector_repeats, data_home, shots = 2, 1, 3, tmp_path, tmp_path
    for name in lt.PIECES:
        quiet = lt.piece_argv(name, False, Opts, tmp_path / "r.json", tmp_path)
        busy = lt.piece_argv(name, True, Opts, tmp_path / "r.json", tmp_path)
        assert "--busy" not in quiet and busy == quiet + ["--busy"], name
        assert (ROOT / "benchmarks" / Path(quiet[1]).name).is_file(), name
    assert lt.piece_argv("startup", False, Opts, tmp_path / "r.json", tmp_path)[3:5] == ["--repeats", "2"]
    with pytest.raises(ValueError, match="piece must be one of"):
        lt.piece_argv("nonsense", False, Opts, tmp_path / "r.json", tmp_path)


def test_the_rows_read_what_startup_bench_summarises(lt):
    """The startup and url rows read startup_bench's summary keys (a renamed key would show "not seen")."""
    spec = importlib.util.spec_from_file_location("startup_bench", ROOT / "benchmarks" / "startup_bench.py")
    sb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sb)
    url = {"query": "?steps=120", "b_visible_s": 2.0, "b_shell_s": 0.8, "b_iteration_120_s": 5.0,
           "a_round_trip_during_median_ms": 70.0, "a_round_trip_during_max_ms": 300.0, "a_longest_wait_s": 0.4,
           "a_round_trips_during_ms": [70.0, 300.0, 60.0]}
    res = {"runs": [{"cold": True, "first_step_answered_s": 12.0}, {"cold": True, "first_step_answered_s": 14.0},
                    url, dict(url, b_visible_s=4.0, a_round_trip_during_max_ms=900.0)]}
    sb._summarise(res)
    rows = lt.build_rows({"busy": {"startup": _rec(res, quiet=None), "url": _rec(res, quiet=None)}})
    assert _row(rows, "first_step")["busy"]["value"] == 13.0
    assert _row(rows, "url_visible")["busy"]["value"] == 3.0 and _row(rows, "url_visible")["busy"]["met"] is True
    assert _row(rows, "url_steps")["busy"]["value"] == 5.0
    assert _row(rows, "url_other_step")["busy"]["value"] == 900.0
    assert _row(rows, "url_other_step")["busy"]["text"].startswith("70 ms median, 900 ms max (6 Steps")


def test_a_dataset_that_never_got_ready_is_named_and_not_met(lt):
    p = _pieces()
    res = p["quiet"]["screens"]["result"]
    res["written"] = [n for n in res["written"] if "conll2000" not in n]
    res["pages"] = {n: [] for n in res["written"]}
    res["not_ready"] = {"conll2000": "not ready after 600 s; the status said: loading conll2000"}
    cell = _row(lt.build_rows(p), "screens")["quiet"]
    assert cell["met"] is False and cell["text"].startswith("24 of 32 written") and "conll2000 not ready" in cell["text"]
