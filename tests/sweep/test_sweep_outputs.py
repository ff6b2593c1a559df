"""Sweep stores and their figures lose nothing: a failed figure write keeps the previous file,
``gaplab figure --out`` and the sweep's ``--store`` are checked before the work, and a tampered
store (manifest or a run's Parquet file) is refused naming the file."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runs import run_cli


def test_figure_write_failure_keeps_the_previous_file(tmp_path, monkeypatch):
    hv = pytest.importorskip("holoviews")
    from gaplab import plots
    out = tmp_path / "fig.svg"
    out.write_text("<svg>the previous figure</svg>")

    def broken_save(obj, filename, **kw):  # half a file, then the disk is full
        Path(filename).write_text("<svg>half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(hv, "save", broken_save)
    with pytest.raises(OSError):
        plots.save(hv.Curve([(0, 1), (1, 2)]), out)
    assert out.read_text() == "<svg>the previous figure</svg>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.svg"]


def _empty_sweep_store(path):
    from gaplab.core.sweep import Store, load_spec
    spec = load_spec({"name": "tiny", "version": 1, "datasets": ["ocr-small[:4]"], "lams": [0.1], "seeds": [0],
                      "budget": {"max_passes": 2, "gap_check": 1},
                      "methods": {"bcfw": {"sampling": "uniform", "step": "fw"}}})
    return Store.open_for(path, spec), spec


def test_sweep_and_figure_outputs_are_checked_before_the_work(tmp_path, capsys):
    from gaplab.core.sweep import run_sweep
    store, spec = _empty_sweep_store(tmp_path / "store")
    rc, _, err = run_cli(capsys, "figure", store.path, "--out", tmp_path)  # a directory
    assert rc == 2 and "--out" in err and str(tmp_path) in err
    rc, _, err = run_cli(capsys, "figure", store.path, "--out", "/proc/gaplab_fig.png")
    assert rc == 2 and "--out" in err
    with pytest.raises(ValueError, match="sweep store '/proc/gaplab_sweep' cannot be written.*--store"):
        run_sweep(spec, "/proc/gaplab_sweep", workers=0)


def test_tampered_sweep_store_is_refused_naming_the_file(tmp_path):
    from gaplab.core.sweep import Store, expand_runs
    store, spec = _empty_sweep_store(tmp_path / "store")
    cfg = expand_runs(spec)[0]
    store.record_done(cfg, {"rows": {"effective_passes": [1.0, 2.0], "exact_gap": [0.5, 0.25]},
                            "summary": {"status": "max_passes"}, "lam": 0.1}, 1, [])
    assert len(Store(store.path).read_run(cfg["run_id"])) == 2
    mp = store.path / "manifest.json"
    good = mp.read_text()
    for change, msg in ((lambda m: m.pop("runs"), "'runs'"),
                        (lambda m: m["runs"][cfg["run_id"]].pop("status"), "status"),
                        (lambda m: m["runs"][cfg["run_id"]].pop("config"), "config"),
                        (lambda m: m["runs"][cfg["run_id"]].__setitem__("file", None), "file")):
        m = json.loads(good)
        change(m)
        mp.write_text(json.dumps(m))
        with pytest.raises(ValueError, match=msg) as err:
            Store(store.path).runs()
        assert "manifest.json" in str(err.value)
    mp.write_text(good)
    f = store.path / "runs" / f"{cfg['run_id']}.parquet"
    f.write_bytes(f.read_bytes()[:40])  # a cut Parquet file
    with pytest.raises(ValueError, match=f"{cfg['run_id']}.*is not readable Parquet.*run the sweep again"):
        Store(store.path).traces()
