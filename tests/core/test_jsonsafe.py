"""One JSON convention for inf/NaN ("inf", "-inf", "nan"), and files of the old conventions still load."""
import json
import math

import numpy as np
import pytest

from gaplab.core import jsonsafe


def _strict(text):
    def refuse(token):
        raise AssertionError(f"bare {token} in JSON")
    return json.loads(text, parse_constant=refuse)


def test_encode_is_strict_json_and_decode_round_trips():
    obj = {"a": math.inf, "b": [-math.inf, math.nan, 1.5], "c": np.float64(np.inf), 3: np.arange(2),
           "s": "x", "n": None}
    text = json.dumps(jsonsafe.encode(obj), allow_nan=False)
    assert _strict(text)["a"] == "inf" and _strict(text)["b"][:2] == ["-inf", "nan"]
    back = jsonsafe.decode(json.loads(text))
    assert back["a"] == math.inf and back["b"][0] == -math.inf and math.isnan(back["b"][1])
    assert back["c"] == math.inf and back["3"] == [0, 1] and back["s"] == "x" and back["n"] is None


def test_decode_reads_the_old_spellings():
    old = json.loads('{"t": "Infinity", "u": "-Infinity", "v": "NaN", "w": Infinity, "x": NaN}')
    d = jsonsafe.decode(old)
    assert d["t"] == d["w"] == math.inf and d["u"] == -math.inf and math.isnan(d["v"]) and math.isnan(d["x"])


def test_cli_json_report_spells_infinity(tmp_path):
    from gaplab.cli.train import _write_json
    _write_json(tmp_path / "r.json", {"lam_end": math.inf, "gap": math.nan, "n": np.int64(3)})
    assert _strict((tmp_path / "r.json").read_text()) == {"lam_end": "inf", "gap": "nan", "n": 3}


def test_old_sweep_store_manifest_with_infinity_strings_loads(tmp_path):
    from gaplab.core.sweep import STORE_FORMAT, Store
    (tmp_path / Store.MANIFEST).write_text(json.dumps(
        {"store_format": STORE_FORMAT, "runs": {}, "budget": {"time_limit": "Infinity", "lo": "-Infinity",
                                                              "x": "NaN"}}))
    b = Store(tmp_path).manifest["budget"]
    assert b["time_limit"] == math.inf and b["lo"] == -math.inf and math.isnan(b["x"])


@pytest.fixture(scope="module")
def small_path(tmp_path_factory):
    from gaplab.core import ChainModel, load_ocr
    from gaplab.core.regpath import PathConfig, regularization_path
    train, _ = load_ocr("small")
    root = tmp_path_factory.mktemp("p")
    path = regularization_path(ChainModel(train.subset(np.arange(30))), PathConfig(eps=0.5, lam_min=1.0),
                               store=root / "s")
    return path, root


def test_path_store_writes_strict_json_and_old_bare_tokens_still_load(small_path):
    from gaplab.core.regpath import RegPath
    path, root = small_path
    mp = root / "s" / "manifest.json"
    new = _strict(mp.read_text())
    assert new["meta"]["path_config"]["time_limit"] == "inf" and new["rows"][0]["primal"] == "nan"
    rows = jsonsafe.decode(new["rows"])
    old = json.dumps({**new, "rows": rows}, allow_nan=True)   # the format before: bare NaN in the rows
    assert "NaN" in old
    mp.write_text(old)
    again = RegPath.open(root / "s")
    assert math.isnan(again.rows()[0]["primal"]) and again.meta == path.meta
    np.testing.assert_array_equal(again.lams, path.lams)
    same = lambda a, b: a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)  # noqa: E731
    for r, s in zip(again.rows(), path.rows(), strict=True):
        assert r.keys() == s.keys() and all(same(r[k], s[k]) for k in r), (r, s)


def test_path_npz_round_trip_keeps_meta_and_rows(small_path, tmp_path):
    from gaplab.core.regpath import RegPath
    path, _ = small_path
    f = path.save(tmp_path / "p.npz") or tmp_path / "p.npz"
    back = RegPath.load(f)
    assert back.meta["path_config"]["time_limit"] == "inf" and back.meta == path.meta
    np.testing.assert_array_equal(back.lams, path.lams)
