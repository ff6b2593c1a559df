"""``gaplab train --dataset conll-file --data-file FILE``: a user's CoNLL-style column file trains
to a certified gap and reports token accuracy and chunk F1; every bad file is refused in one line
naming the file and the line (exit 2)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gaplab.cli import main
from gaplab.core.datasets.conll_file import load_conll_file, read_column_file
from gaplab.core.problems import problem_names

FIRST = ["Anna", "Boris", "Clara", "Dmitri", "Emma"]
LAST = ["Smith", "Ivanova", "Lee"]
VERBS = ["sees", "meets", "calls"]
THINGS = ["the", "dog", "a", "house", "today"]


def _sentence(rng) -> list:
    """[(word, POS, tag)]: PER names (one or two words) around a verb and other words."""
    def name():
        out = [(FIRST[rng.integers(len(FIRST))], "NNP", "B-PER")]
        if rng.random() < 0.5:
            out.append((LAST[rng.integers(len(LAST))], "NNP", "I-PER"))
        return out
    s = name() + [(VERBS[rng.integers(len(VERBS))], "VBZ", "O")]
    s += name() if rng.random() < 0.6 else [(THINGS[rng.integers(2)], "DT", "O"), (THINGS[1 + rng.integers(4)], "NN", "O")]
    if rng.random() < 0.3:
        s.append((THINGS[4], "NN", "O"))
    return s


def _write(path, sentences, pos=True, docstart=False):
    lines = ["-DOCSTART- -X- O", ""] if docstart else []
    for s in sentences:
        lines += [" ".join((w, p, t) if pos else (w, t)) for w, p, t in s] + ["", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _ner(tmp_path, n=30, seed=0, name="ner.txt", **kw):
    rng = np.random.default_rng(seed)
    return _write(tmp_path / name, [_sentence(rng) for _ in range(n)], **kw)


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    return lines[0]


def test_conll_file_is_registered():
    assert "conll-file" in problem_names()


def test_reader_keeps_sentences_words_and_tags(tmp_path):
    f = _ner(tmp_path, n=5, docstart=True)
    sents, lines, n_cols = read_column_file(f)
    rng = np.random.default_rng(0)
    want = [_sentence(rng) for _ in range(5)]
    assert n_cols == 3 and len(sents) == 5
    assert [list(zip(*s)) for s in sents] == want
    # line numbers: 2 lines of -DOCSTART- and blank, then each sentence and two blank lines
    assert lines[0][0] == 3 and lines[1][0] == 3 + len(want[0]) + 2


@pytest.mark.parametrize("with_test", [True, False])
def test_a_user_file_trains_to_a_certified_gap_with_accuracy_and_chunk_f1(tmp_path, with_test):
    train = _ner(tmp_path, n=30, seed=0, docstart=True)
    test = _ner(tmp_path, n=20, seed=1, name="ner_test.txt")
    out = tmp_path / "r.json"
    argv = ["train", "--dataset", "conll-file", "--data-file", str(train), "--lam", "0.1",
            "--gap-threshold", "1e-3", "--max-passes", "400", "--quiet", "--out", str(out)]
    if with_test:
        argv += ["--test-file", str(test)]
    assert main(argv) == 0
    r = json.loads(out.read_text())
    assert r["status"] == "converged" and 0 <= r["exact_gap"] <= 1e-3
    assert r["n"] == 30
    key = "test_metric" if with_test else "train_metric"
    assert r[key]["name"] == "chunk F1" and r[key]["value"] == r["chunk_f1"]
    # the grammar is learnable: names are names whatever their place
    assert r["token_accuracy"] > 0.9 and r["chunk_f1"] > 0.8
    assert r["conlleval"]["n_gold"] > 20
    if with_test:
        assert abs(r["token_accuracy"] - (1 - r["test_error"])) < 1e-12


def test_a_file_without_pos_column_loads(tmp_path):
    f = _ner(tmp_path, n=10, pos=False)
    train, test, info = load_conll_file(f)
    assert test is None and info["has_pos"] is False and train.n == 10
    assert train.label_names == ("B-PER", "I-PER", "O")


def test_tags_that_are_not_iob_give_token_accuracy_only(tmp_path, capsys):
    rng = np.random.default_rng(0)
    sents = [[(w, p, t.replace("B-", "").replace("I-", "")) for w, p, t in _sentence(rng)] for _ in range(12)]
    f = _write(tmp_path / "plain.txt", sents)
    out = tmp_path / "r.json"
    code = main(["train", "--dataset", "conll-file", "--data-file", str(f), "--test-file", str(f),
                 "--max-passes", "20", "--quiet", "--out", str(out)])
    assert code == 0
    note = _one_line(capsys.readouterr().err)
    assert f"{f}, line 1: tag 'PER' is not IOB" in note and "token accuracy only" in note
    r = json.loads(out.read_text())
    assert r["test_metric"]["name"] == "token accuracy" and r["chunk_f1"] is None
    assert r["test_metric"]["value"] == r["token_accuracy"] and "not IOB" in r["chunk_f1_note"]


def _bad_cases(tmp_path):
    ok = "Anna NNP B-PER\nsees VBZ O\nBoris NNP B-PER\n\n"
    return {
        "ragged": (ok + "Clara NNP B-PER\nmeets O\n", 6, "2 columns, but the file's first token line has 3"),
        "one column": ("Anna\nsees O\n", 1, "at least 2 columns"),
        "not utf-8": (ok.encode() + b"Cl\xe4ra NNP B-PER\n", 5, "not UTF-8 (byte 0xe4 at column 3)"),
        "one label": ("\n\nAnna NNP O\nsees VBZ O\n\nhi UH O\n", 3, "every tag of the file is 'O'"),
    }


@pytest.mark.parametrize("case", ["ragged", "one column", "not utf-8", "one label"])
def test_a_bad_file_is_one_line_naming_file_and_line(tmp_path, capsys, case):
    text, line, what = _bad_cases(tmp_path)[case]
    f = tmp_path / "bad.txt"
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    code = main(["train", "--dataset", "conll-file", "--data-file", str(f), "--max-passes", "2", "--quiet"])
    msg = _one_line(capsys.readouterr().err)
    assert code == 2
    assert msg.startswith(f"gaplab train: error: {f}, line {line}: ") and what in msg, msg


def test_a_file_with_no_sentence_is_an_error_but_empty_sentences_are_skipped(tmp_path, capsys):
    f = tmp_path / "blank.txt"
    f.write_text("\n\n-DOCSTART- -X- O\n\n  \n")
    code = main(["train", "--dataset", "conll-file", "--data-file", str(f), "--max-passes", "2", "--quiet"])
    msg = _one_line(capsys.readouterr().err)
    assert code == 2 and f"{f}: no sentence" in msg and "5 lines" in msg
    g = tmp_path / "gaps.txt"
    g.write_text("\n\n\nAnna NNP B-PER\nsees VBZ O\n\n\n\n\nBoris NNP B-PER\n")
    sents, lines, _ = read_column_file(g)
    assert len(sents) == 2 and lines == [[4, 5], [10]]


def test_a_test_file_with_another_column_count_or_unseen_tag_is_one_line(tmp_path, capsys):
    train = _ner(tmp_path, n=5)
    test = tmp_path / "t.txt"
    test.write_text("\nAnna B-PER\n")
    code = main(["train", "--dataset", "conll-file", "--data-file", str(train), "--test-file", str(test),
                 "--max-passes", "2", "--quiet"])
    msg = _one_line(capsys.readouterr().err)
    assert code == 2 and f"{test}, line 2: 2 columns" in msg
    test.write_text("Anna NNP B-PER\n\n\nParis NNP B-LOC\n")
    code = main(["train", "--dataset", "conll-file", "--data-file", str(train), "--test-file", str(test),
                 "--max-passes", "2", "--quiet"])
    msg = _one_line(capsys.readouterr().err)
    assert code == 2 and f"{test}, sentence 2 (starting at line 4)" in msg and "'B-LOC'" in msg


def test_conll_file_without_data_file_says_how(capsys):
    code = main(["train", "--dataset", "conll-file", "--max-passes", "2", "--quiet"])
    msg = _one_line(capsys.readouterr().err)
    assert code == 2 and "--data-file FILE" in msg


def test_data_file_for_another_problem_is_refused(tmp_path, capsys):
    f = _ner(tmp_path, n=3)
    code = main(["train", "--dataset", "toy", "--data-file", str(f), "--max-passes", "2", "--quiet"])
    msg = _one_line(capsys.readouterr().err)
    assert code == 2 and "--data-file" in msg and "toy" in msg


def test_app_data_file_offers_conll_file_in_the_picker(tmp_path, capsys, monkeypatch):
    from gaplab.app.settings import installed_problems, missing_problems
    from gaplab.core import builtin_problems
    from gaplab.core.problems import get_problem, register_problem
    original = get_problem("conll-file")
    assert "conll-file" in missing_problems() and "--data-file" in missing_problems()["conll-file"]
    train, test = _ner(tmp_path, n=8), _ner(tmp_path, n=4, seed=1, name="t.txt")
    try:
        builtin_problems.bind_conll_file(train, test)
        assert "conll-file" in installed_problems() and str(train) in get_problem("conll-file").description
        problem = get_problem("conll-file").load()
        assert problem.model.n == 8 and problem.test.n == 4
        # a bad file is refused before the app would start, in one line naming file and line
        bad = tmp_path / "bad.txt"
        bad.write_text("Anna NNP B-PER\nsees O\n")
        seen = []
        import importlib
        monkeypatch.setattr(importlib.import_module("gaplab.app.serve"), "serve", lambda **kw: seen.append(kw) or 0)
        assert main(["app", "--data-file", str(bad)]) == 2 and not seen
        assert f"{bad}, line 2: 2 columns" in _one_line(capsys.readouterr().err)
    finally:
        register_problem(original.name, original.loader, original.model_factory, default_lam=original.default_lam,
                         description=original.description, bundled=original.bundled, check=original.check,
                         metric=original.metric, higher_is_better=original.higher_is_better,
                         evaluate=original.evaluate, warmup=original.warmup, replace=True)
    assert "conll-file" in missing_problems()
