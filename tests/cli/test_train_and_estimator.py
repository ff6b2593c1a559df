"""Training a chain from outside: the scikit-learn style estimator (fit, predict, score, its
parameters) and ``gaplab train`` (the JSON result it promises, a clear error on bad input, and
``python -m gaplab``)."""
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import random_chain_data
from gaplab.cli import main
from gaplab.core.estimator import SSVM


def test_estimator_fit_predict_score():
    data = random_chain_data(n=12, T_range=(2, 5), K=3, F=4, seed=0)
    X = [data.dense_features(i) for i in range(data.n)]
    Y = [data.labels[data.tokens(i)] for i in range(data.n)]
    est = SSVM(lam=0.1, step="pairwise", gap_threshold=1e-4, max_passes=3000).fit(X, Y)
    assert est.result_.exact_gap <= 1e-4
    pred = est.predict(X)
    assert [p.shape for p in pred] == [y.shape for y in Y]
    acc = est.score(X, Y)
    assert acc == pytest.approx(np.mean(np.concatenate(pred) == np.concatenate(Y)))
    assert est.get_params()["lam"] == 0.1
    with pytest.raises(ValueError, match="unknown parameter"):
        est.set_params(lamda=1)
    with pytest.raises(ValueError, match="lam"):
        SSVM(lam=-1).fit(X, Y)
    with pytest.raises(ValueError, match="features"):
        est.predict([np.ones((2, 7))])


def test_cli_train_writes_the_promised_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    rc = main(["train", "--dataset", "ocr-small", "--lam", "0.1", "--max-passes", "3", "--gap-threshold", "0",
               "--step", "pairwise", "--cache", "--out", str(out)])
    assert rc == 0
    r = json.loads(out.read_text())
    for key in ("primal", "dual", "exact_gap", "effective_passes", "oracle_calls", "wall_time_s", "train_error",
                "test_error", "trace", "cache_hits", "step_counts"):
        assert key in r
    assert r["primal"] - r["dual"] == pytest.approx(r["exact_gap"], abs=1e-9)
    assert r["step_counts"]["pairwise"] > 0
    assert "exact duality gap" in capsys.readouterr().out


def test_cli_bad_input_is_a_clear_error(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--lam", "-1"])
    assert "--lam" in capsys.readouterr().err
    rc = main(["train", "--gap-check", "0", "--max-passes", "1"])
    assert rc == 2
    assert "gap_check" in capsys.readouterr().err


def test_module_entry_point_runs():
    r = subprocess.run([sys.executable, "-m", "gaplab", "train", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--sampling" in r.stdout
