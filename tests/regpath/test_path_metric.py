"""The path records the problem's headline test metric at every breakpoint (CoNLL-2000:
chunk F1 as conlleval computes it), in the store's rows, so that the app plots it without loading
any w; stores and npz files written before that column existed still open (NaN)."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from gaplab.core import ChainModel
from gaplab.core.datasets.base import SequenceData
from gaplab.core.datasets.conll import conlleval, make_conll_datasets, parse_conll
from gaplab.core.problems import get_problem
from gaplab.core.regpath import PathConfig, PathMetric, RegPath, grid_search, regularization_path

TESTS = Path(__file__).resolve().parents[1]
CONLL = next((d for d in ([Path(os.environ["GAPLAB_DATA"]), Path(os.environ["GAPLAB_DATA"]) / "conll2000"]
                          if os.environ.get("GAPLAB_DATA") else []) + [TESTS.parents[1] / "shared" / "data" / "conll2000",
                                                                      Path("/work/shared/data/conll2000")]
              if (d / "train.txt").is_file() and (d / "test.txt").is_file()), None)


def _first_sentences(file: Path, k: int) -> list:
    """The first k sentences of a CoNLL file (read only up to the k-th blank line)."""
    lines = []
    with open(file, encoding="utf-8") as fh:
        for line in fh:
            lines.append(line)
            if not line.strip():
                k -= 1
                if k == 0:
                    break
    return parse_conll(lines)


# ---------------------------------------------------------------------------- conlleval by hand
def test_chunk_f1_by_hand_through_the_path_metric():
    # gold chunks NP[0,1] VP[3] NP[4]; predicted NP[0] NP[1] VP[3] NP[4]: 2 of 4 predicted chunks are
    # gold chunks (VP[3], NP[4]) and 2 of 3 gold chunks are found, while 4 of 5 tags are right
    gold = ["B-NP", "I-NP", "O", "B-VP", "B-NP"]
    pred = ["B-NP", "B-NP", "O", "B-VP", "B-NP"]
    r = conlleval([gold], [pred])
    assert (r["n_gold"], r["n_pred"], r["n_correct"]) == (3, 4, 2)
    assert r["precision"] == pytest.approx(0.5) and r["recall"] == pytest.approx(2 / 3)
    assert r["f1"] == pytest.approx(4 / 7) and r["accuracy"] == pytest.approx(0.8)

    # the same through the CoNLL problem's PathMetric: a chain model whose w predicts `pred`
    names = ("B-NP", "B-VP", "I-NP", "O")
    lab = {t: k for k, t in enumerate(names)}
    T = len(gold)
    data = SequenceData.from_dense([np.eye(T)], [np.array([lab[t] for t in gold])], names, name="hand")
    model = ChainModel(data)
    w = np.zeros(model.d)
    for t, tag in enumerate(pred):  # emission block (F+1, K) row-major: feature t votes for pred[t]
        w[t * model.K + lab[tag]] = 10.0
    assert [names[k] for k in model.predict(w, data)] == pred
    metric = get_problem("conll2000").path_metric(model, data)
    assert isinstance(metric, PathMetric) and metric.name == "chunk F1" and metric.higher_is_better
    assert metric.fn(w) == pytest.approx(4 / 7)
    assert model.error(w, data) == pytest.approx(0.2)   # the token error, kept for comparison
    # problems whose headline metric is the test error record no extra column
    assert get_problem("ocr-small").path_metric(model, data) is None
    assert get_problem("conll2000").path_metric(model, None) is None


# ---------------------------------------------------------------------------- F1 in the store's rows
@pytest.mark.skipif(CONLL is None, reason="CoNLL-2000 data not found ($GAPLAB_DATA or ../shared/data)")
def test_f1_in_the_store_metadata_equals_f1_of_w_at_lam_on_a_conll_subset(tmp_path):
    train, test = make_conll_datasets(_first_sentences(CONLL / "train.txt", 40),
                                      _first_sentences(CONLL / "test.txt", 25))
    model = ChainModel(train)
    spec = get_problem("conll2000")
    metric = spec.path_metric(model, test)
    path = regularization_path(model, PathConfig(eps=0.3, lam_min=0.02, max_passes_per_breakpoint=20),
                               test_data=test, test_metric=metric, meta={"dataset": "conll2000"},
                               store=tmp_path / "s")
    opened = RegPath.open(tmp_path / "s", model=model)
    assert opened.meta["test_metric"] == {"name": "chunk F1", "higher_is_better": True}
    f1 = opened.column("test_metric")
    assert len(opened) >= 4 and np.all(np.isfinite(f1)) and np.array_equal(f1, path.column("test_metric"))
    assert f1.max() > f1.min()           # it moves along the path (not a constant)
    lams = opened.lams
    rng = np.random.default_rng(0)
    for j in range(len(opened)):         # a random λ inside every piece [λ_{j+1}, λ_j]
        lo = lams[j + 1] if j + 1 < len(opened) else max(opened.lam_end, lams[j] / 10)  # 0: ρ <= 0
        lam = float(np.exp(rng.uniform(math.log(lo), math.log(lams[j]))))
        k, scale = opened.piece_at(lam)
        assert k == j and scale == 1.0
        value, details = spec.test_metric(model, opened.w_at(lam), test)
        assert value == f1[j], (j, value, f1[j])
        assert details["conlleval"]["f1"] == value
        # the token error is a different number from 1 - F1 (not a renamed column)
        assert opened.column("test_error")[j] == pytest.approx(model.error(opened.w_at(lam), test))
    assert not np.allclose(1.0 - f1, opened.column("test_error"))
    # the grid search records it too
    grid = grid_search(model, lams[:3], eps=0.3, test_data=test, test_metric=metric, max_passes_per_point=20)
    for g in grid:
        assert g.test_metric == spec.test_metric(model, g.w, test)[0]


# ---------------------------------------------------------------------------- old files
def test_stores_and_npz_files_without_the_metric_column_still_open(tmp_path, tiny_chain):
    model = ChainModel(tiny_chain)
    metric = PathMetric("twice the error", lambda w: 2 * model.error(w, tiny_chain), higher_is_better=False)
    path = regularization_path(model, PathConfig(eps=0.3, lam_min=0.05), test_data=tiny_chain,
                               test_metric=metric, store=tmp_path / "s")
    assert np.allclose(path.column("test_metric"), 2 * path.column("test_error"))
    # an old store: its manifest rows have no test_metric (and no metric in the metadata)
    man_file = tmp_path / "s" / "manifest.json"
    man = json.loads(man_file.read_text())
    for r in man["rows"]:
        del r["test_metric"]
    del man["meta"]["test_metric"]
    man_file.write_text(json.dumps(man))
    old = RegPath.open(tmp_path / "s")
    assert len(old) == len(path) and np.all(np.isnan(old.column("test_metric")))
    assert np.array_equal(old.column("test_error"), path.column("test_error"))
    # an old single-file npz: no test_metric array
    f = path.to_store(tmp_path / "s2").save(tmp_path / "p.npz")
    with np.load(f) as z:
        arrays = {k: z[k] for k in z.files if k != "test_metric"}
    np.savez(tmp_path / "old.npz", **arrays)
    old = RegPath.open(tmp_path / "old.npz")
    assert np.all(np.isnan(old.column("test_metric"))) and np.array_equal(old.lams, path.lams)
    lam = float(path.lams[1])
    assert np.array_equal(old.w_at(lam), path.w_at(lam))


def test_bad_metric_is_a_clear_error(tiny_chain):
    model = ChainModel(tiny_chain)
    with pytest.raises(TypeError, match="test_metric must be a PathMetric"):
        regularization_path(model, PathConfig(eps=0.3, lam_min=0.05), test_metric=lambda w: 0.0)
    with pytest.raises(TypeError, match="fn must be callable"):
        PathMetric("F1", 0.5)
    with pytest.raises(ValueError, match="non-empty string"):
        PathMetric("", lambda w: 0.0)
