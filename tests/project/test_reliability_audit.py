"""The reliability audit's verdicts (scripts/reliability_audit.py): a Ctrl-C case passes only with
exit 130 and one "interrupted" line, a snippet killed by a signal is a crash, a KeyboardInterrupt
in CPython's start-up is a traceback that says so, and --add-to keeps the earlier rows."""
from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture(scope="module")
def audit():
    sys.path.insert(0, str(SCRIPTS))
    try:
        import reliability_audit
        yield reliability_audit
    finally:
        sys.path.remove(str(SCRIPTS))


def _ctrl_c(audit):
    return audit.Case("early-int", "x", argv=["train"], expect="interrupted", signal_at=0.01)


def test_a_ctrl_c_passes_only_with_exit_130_and_one_interrupted_line(audit):
    case = _ctrl_c(audit)
    assert audit._verdict(case, 130, "", "gaplab: interrupted\n")[0] == "pass"
    assert audit._verdict(case, 0, "", "")[0] == "accepted"          # the Ctrl-C was lost
    assert audit._verdict(case, 1, "", "gaplab: error: x\n")[0] == "accepted"
    assert audit._verdict(case, 130, "", "gaplab: interrupted\nmore\n")[0] == "multi-line"
    # ended by SIGINT's default action before Python's handler existed: the shell shows 130
    assert audit._verdict(case, -signal.SIGINT, "", "")[0] == "pass"
    # a SIGINT death where no Ctrl-C was sent is a crash, as any other signal
    other = audit.Case("option", "y", argv=["train"], expect="refuse")
    assert audit._verdict(other, -signal.SIGINT, "", "")[0] == "crash"
    assert audit._verdict(case, -signal.SIGSEGV, "", "")[0] == "crash"


def test_a_keyboard_interrupt_in_cpythons_start_up_is_a_traceback_that_says_so(audit):
    err = ("Fatal Python error: init_import_site: Failed to import the site module\n"
           "Traceback (most recent call last):\n  File \"<frozen site>\", line 1\nKeyboardInterrupt\n")
    verdict, why = audit._verdict(_ctrl_c(audit), 1, "", err)
    assert verdict == "traceback" and "init_import_site" in why and "before gaplab" in why


def test_a_snippet_killed_by_a_signal_is_a_crash(audit, tmp_path):
    case = audit.Case("arrays", "z", code="import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
                      expect="succeed", timeout=120)
    assert audit.run_case(case, str(tmp_path))["verdict"] == "crash"
    ok = audit.Case("arrays", "w", code="print('fine')", expect="succeed", timeout=120)
    row = audit.run_case(ok, str(tmp_path))
    assert row["verdict"] == "pass" and row["why"] == "fine"


def test_add_to_keeps_the_rows_of_the_cases_not_run_and_counts_the_whole(audit, tmp_path, monkeypatch):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"rows": [
        {"kind": "option", "name": "kept", "expect": "refuse", "verdict": "pass", "why": "", "seconds": 1},
        {"kind": "sweep", "name": "figure --out bad suffix", "expect": "refuse", "verdict": "hang", "why": "",
         "seconds": 1}]}))
    out = tmp_path / "new.json"
    monkeypatch.chdir(tmp_path)
    assert audit.main(["--match", "figure --out bad suffix", "--out", str(out), "--add-to", str(old)]) == 0
    table = json.loads(out.read_text())
    names = [(r["name"], r["verdict"]) for r in table["rows"]]
    assert names == [("kept", "pass"), ("figure --out bad suffix", "pass")]   # re-run: the old row replaced
    assert table["cases"] == 2 and table["verdicts"] == {"pass": 2} and table["kept_from"]["rows"] == 1
