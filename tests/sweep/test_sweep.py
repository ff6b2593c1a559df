"""Experiment sweeps (gaplab.core.sweep), the store, the figures (gaplab.plots) and the CLI.

Tiny runs on the first 12 OCR-small words. One 2-worker LocalCluster is shared by the module.
"""
from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from gaplab.core.sweep import (TRACE_COLUMNS, Store, expand_runs, load_spec, run_id, run_sweep)

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

WORDS = 12


def tiny_spec(**changes) -> dict:
    spec = {
        "name": "tiny", "version": 1,
        "datasets": [f"ocr-small[:{WORDS}]"], "lams": [0.1], "seeds": [0, 1],
        "budget": {"max_passes": 6, "gap_check": 2},
        "methods": {"bcfw_uniform": {"sampling": "uniform", "step": "fw"},
                    "bcpfw_gap_cache": {"sampling": "gap", "step": "pairwise", "cache": True}},
    }
    spec.update(changes)
    return spec


@pytest.fixture(scope="module")
def client():
    from gaplab.core.sweep.dask_runner import _make_cluster
    cluster, cl = _make_cluster(2)
    yield cl
    cl.close()
    cluster.close()


@pytest.fixture(scope="module")
def swept(client, tmp_path_factory):
    """The tiny spec swept on the 2-worker cluster: (store path, report)."""
    path = tmp_path_factory.mktemp("sweep") / "store"
    rep = run_sweep(tiny_spec(), path, client=client)
    return path, rep


def _serial_trace(cfg):
    """The same run through the public API, in this process."""
    from gaplab.core import ChainModel, Solver, load_ocr
    train, _ = load_ocr("small")
    model = ChainModel(train.subset(range(WORDS)))
    s = Solver(model, lam=cfg["lam"], sampling=cfg["sampling"], step=cfg["step"], cache=dict(cfg["cache"]),
               gap_check=cfg["gap_check"], max_passes=cfg["max_passes"], seed=cfg["seed"])
    return s.run(final_gap_check=True).trace


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _frame_without_clock(df):
    return df.drop(columns=[c for c in ("wall_time_s",) if c in df.columns]).reset_index(drop=True)


# ---------------------------------------------------------------------------- execution
def test_two_workers_match_serial_runs(swept):
    path, rep = swept
    assert (rep.total, rep.submitted, rep.done, rep.failed, rep.workers) == (4, 4, 4, 0, 2)
    st = Store(path)
    pids = {e["pid"] for e in st.manifest["runs"].values()}
    assert os.getpid() not in pids  # the runs ran in the worker processes
    for rid, entry in st.manifest["runs"].items():
        cfg = entry["config"]
        assert entry["status"] == "done" and entry["attempts"] == 1
        # the run's own CPU seconds (one compute thread per worker: at most its task's wall time)
        assert 0 < entry["cpu_s"] <= 1.2 * entry["elapsed_s"] + 0.5
        stored = st.read_run(rid)
        serial = _serial_trace(cfg)
        assert len(stored) == len(serial) > 2
        for j, rec in enumerate(serial):
            for col in TRACE_COLUMNS:
                if col == "wall_time_s":
                    continue
                assert _same(stored[col].iloc[j].item() if hasattr(stored[col].iloc[j], "item") else stored[col].iloc[j],
                             rec[col]), (rid, j, col)
        # config columns ride along in every row
        assert set(stored["seed"]) == {cfg["seed"]} and set(stored["method"]) == {cfg["method"]}


def test_resume_skips_finished_runs_and_gives_the_same_store(swept, client, tmp_path):
    path, _ = swept
    full = Store(path)
    copy = tmp_path / "store"
    shutil.copytree(path, copy)
    # an interrupted sweep: two runs never finished (no manifest entry); one of them crashed
    # between its Parquet file and the manifest (file left behind), plus a stray temp file
    m = json.loads((copy / "manifest.json").read_text())
    lost = sorted(m["runs"])[:2]
    for rid in lost:
        del m["runs"][rid]
    (copy / "manifest.json").write_text(json.dumps(m))
    (copy / "runs" / f"{lost[0]}.parquet").unlink()
    (copy / ".manifest.json.abc.tmp").write_text("partial")
    rep = run_sweep(tiny_spec(), copy, client=client)
    assert (rep.skipped, rep.submitted, rep.done) == (2, 2, 2)
    again = Store(copy)
    assert set(again.manifest["runs"]) == set(full.manifest["runs"])
    for rid, e in full.manifest["runs"].items():
        assert again.manifest["runs"][rid]["config"] == e["config"]
        assert again.manifest["runs"][rid]["status"] == "done"
        a, b = _frame_without_clock(full.read_run(rid)), _frame_without_clock(again.read_run(rid))
        assert a.equals(b), rid
    # a third run has nothing to do and touches nothing
    mtimes = {p: p.stat().st_mtime_ns for p in copy.rglob("*")}
    rep = run_sweep(tiny_spec(), copy, client=client)
    assert (rep.skipped, rep.submitted) == (4, 0)
    assert {p: p.stat().st_mtime_ns for p in copy.rglob("*")} == mtimes


def test_a_run_that_raises_is_recorded_failed_and_rerun_on_resume(client, tmp_path):
    spec = tiny_spec(seeds=[0], methods={"bcfw_uniform": {"sampling": "uniform"},
                                         "broken": {"kind": "_test_raise", "message": "the oracle exploded"}})
    rep = run_sweep(spec, tmp_path / "s", client=client)
    assert (rep.done, rep.failed, rep.submitted, rep.retried) == (1, 1, 3, 1)
    st = Store(tmp_path / "s")
    runs = st.runs().set_index("method")
    assert runs.loc["broken", "status"] == "failed" and runs.loc["broken", "attempts"] == 2
    assert runs.loc["broken", "error"] == "RuntimeError: the oracle exploded"
    entry = next(e for e in st.manifest["runs"].values() if e["status"] == "failed")
    assert [x["message"] for x in entry["errors"]] == ["RuntimeError: the oracle exploded"] * 2
    assert "execute_run" in entry["errors"][0]["traceback"]
    assert runs.loc["bcfw_uniform", "status"] == "done"
    # resuming skips the finished run and tries the failed one again (twice)
    rep = run_sweep(spec, tmp_path / "s", client=client)
    assert (rep.skipped, rep.submitted, rep.failed) == (1, 2, 1)


def test_a_killed_worker_gets_its_run_retried(client, tmp_path):
    marker = tmp_path / "killed"
    spec = tiny_spec(seeds=[0], methods={"dies_once": {"kind": "_test_kill_once", "marker": str(marker),
                                                        "sampling": "uniform"}})
    rep = run_sweep(spec, tmp_path / "s", client=client)
    assert (rep.done, rep.failed, rep.submitted, rep.retried) == (1, 0, 2, 1)
    killed_pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(killed_pid, 0)  # that worker process is gone
    st = Store(tmp_path / "s")
    (entry,) = st.manifest["runs"].values()
    assert entry["status"] == "done" and entry["attempts"] == 2 and entry["pid"] != killed_pid
    assert "KilledWorker" in entry["errors"][0]["message"]
    # the retried run is the ordinary run of the same settings
    serial = _serial_trace(entry["config"])
    assert st.read_run(entry["config"]["run_id"])["exact_gap"].tolist()[-1] == serial[-1]["exact_gap"]
    assert len(client.scheduler_info()["workers"]) >= 1


def test_serial_mode_and_run_ids():
    spec = load_spec(tiny_spec())
    runs = expand_runs(spec)
    assert len(runs) == 4 and len({r["run_id"] for r in runs}) == 4
    # the key is the config: the display label does not change it, a setting does
    relabeled = tiny_spec()
    relabeled["methods"]["bcfw_uniform"]["label"] = "BCFW (uniform)"
    assert [r["run_id"] for r in expand_runs(relabeled)] == [r["run_id"] for r in runs]
    cfg = dict(runs[0])
    assert run_id(cfg) == cfg["run_id"]
    cfg["data_home"] = "/elsewhere"   # where the data lives is not part of the key
    assert run_id(cfg) == runs[0]["run_id"]
    cfg["max_passes"] = 7.0
    assert run_id(cfg) != runs[0]["run_id"]


# ---------------------------------------------------------------------------- figures
def test_comparison_figure_has_panels_curves_and_bands(swept):
    import holoviews as hv

    from gaplab import plots
    path, _ = swept
    st = Store(path)
    fig = plots.comparison(path)
    assert isinstance(fig, hv.Layout) and len(fig) == 2  # 1 dataset × 1 λ, passes row + time row
    titles = [p.label for p in fig]
    assert titles == [f"ocr-small[:{WORDS}], λ = 0.1"] * 2
    df = st.traces()
    for panel, xcol in zip(fig, ("effective_passes", "wall_time_s")):
        assert isinstance(panel, hv.Overlay)
        bands = [e for e in panel if isinstance(e, hv.Area)]
        curves = [e for e in panel if type(e) is hv.Curve]  # (hv.Area is a Curve too)
        assert sorted(e.label for e in bands) == sorted(e.label for e in curves) == ["bcfw_uniform", "bcpfw_gap_cache"]
        assert {e.group for e in bands} == {"Band"} and {e.group for e in curves} == {"Median"}
        for area, curve in zip(bands, curves):
            assert area.label == curve.label
            x = curve.dimension_values(0)
            med = curve.dimension_values(1)
            lo, hi = area.dimension_values(1), area.dimension_values(2)
            assert np.all(lo <= med * (1 + 1e-12)) and np.all(med <= hi * (1 + 1e-12))
            assert "sampling=" in curve.dimension_values("config")[0]
            if xcol == "effective_passes":
                # where both seeds have a gap check (the first one, after 2 passes + the gap
                # pass; the last one without cache) the median of the two seeds is their
                # geometric mean (log-space interpolation), the band their min and max
                sub = df[(df["method"] == curve.label) & (df["kind"] == "gap_check")]
                checked = 0
                for j, xv in ((0, x[0]), (-1, x[-1])):
                    g = sub[np.isclose(sub[xcol], xv)]["exact_gap"].to_numpy()
                    if len(g) != 2:
                        continue
                    checked += 1
                    assert med[j] == pytest.approx(math.sqrt(g[0] * g[1]), rel=1e-9)
                    assert lo[j] == pytest.approx(g.min(), rel=1e-9) and hi[j] == pytest.approx(g.max(), rel=1e-9)
                assert checked == (2 if curve.label == "bcfw_uniform" else 1)
                assert x[0] == 3.0 and np.any(lo < hi)


def test_figure_exports_png_svg_html_and_cli(swept, tmp_path):
    from gaplab import plots
    from gaplab.cli import main
    path, _ = swept
    fig = plots.figure(path)
    png = plots.save(fig, tmp_path / "f.png")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    import matplotlib.image as mpimg
    img = mpimg.imread(png)
    assert img.shape[0] > 200 and img.shape[1] > 200 and float(img[..., :3].std()) > 0.05
    assert main(["figure", str(path), "--out", str(tmp_path / "f.svg"), "--quiet"]) == 0
    assert "<svg" in (tmp_path / "f.svg").read_text()[:2000]
    assert main(["figure", str(path), "--out", str(tmp_path / "f.html"), "--kind", "convergence", "--x", "time",
                 "--quiet"]) == 0
    assert "bokeh" in (tmp_path / "f.html").read_text().lower()
    with pytest.raises(ValueError, match="method"):
        plots.convergence(path, methods=["nope"])


def test_cli_sweep_toml_serial_and_dry_run(tmp_path, capsys):
    from gaplab.cli import main
    spec = tmp_path / "s.toml"
    spec.write_text(f"""
name = "cli"
datasets = ["ocr-small[:{WORDS}]"]
lams = [0.1]
seeds = 1
metrics = ["exact_gap", "dual"]
[budgets.laptop]
max_passes = 3
gap_check = 1
[budgets.paper]
max_passes = 5
gap_check = 1
[methods.bcfw]
sampling = "uniform"
""")
    store = tmp_path / "store"
    assert main(["sweep", str(spec), "--store", str(store), "--workers", "0", "--quiet"]) == 0
    st = Store(store)
    (entry,) = st.manifest["runs"].values()
    assert entry["config"]["max_passes"] == 3.0 and entry["status"] == "done"
    cols = set(st.read_run(entry["config"]["run_id"]).columns)  # only the metrics asked for
    assert {"exact_gap", "dual", "effective_passes", "wall_time_s"} <= cols and not cols & {"primal", "cache_hits"}
    assert main(["sweep", str(spec), "--store", str(store), "--dry-run"]) == 0
    assert "1 done, 0 to run" in capsys.readouterr().out
    assert main(["sweep", str(spec), "--store", str(store), "--budget", "paper", "--dry-run"]) == 0
    assert "0 done, 1 to run" in capsys.readouterr().out


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("change, field", [
    (lambda s: s["methods"]["bcfw_uniform"].update(sampling="sideways"), "methods.bcfw_uniform.sampling"),
    (lambda s: s["methods"]["bcfw_uniform"].update(step="leap"), "methods.bcfw_uniform.step"),
    (lambda s: s["methods"]["bcfw_uniform"].update(kind="magic"), "methods.bcfw_uniform.kind"),
    (lambda s: s["methods"]["bcfw_uniform"].update(speed=3), "methods.bcfw_uniform"),
    (lambda s: s.update(datasets=["mnist"]), "datasets[0]"),
    (lambda s: s.update(lams=[0.1, 0.0]), "lams[1]"),
    (lambda s: s.update(lams=[-1e-3]), "lams[0]"),
    (lambda s: s.update(lams={"ocr-large": [0.1]}), "lams"),
    (lambda s: s.update(seeds=[0, -1]), "seeds"),
    (lambda s: s["budget"].update(max_passes=-1), "budget.max_passes"),
    (lambda s: s["budget"].update(gap_check=0.5), "budget.gap_check"),
    (lambda s: s.update(metrics=["exact_gap", "happiness"]), "metrics"),
    (lambda s: s.update(colour="red"), "colour"),
    (lambda s: s.pop("name"), "name"),
    (lambda s: s["methods"].update(again={"sampling": "uniform", "step": "fw", "label": "same"}), "methods.again"),
])
def test_bad_spec_names_the_field(change, field):
    spec = tiny_spec()
    spec["methods"] = {k: dict(v) for k, v in spec["methods"].items()}
    spec["budget"] = dict(spec["budget"])
    change(spec)
    with pytest.raises(ValueError) as exc:
        load_spec(spec)
    assert f"'{field}'" in str(exc.value)


def test_bad_store_names_the_problem(tmp_path, capsys):
    from gaplab.cli import main
    f = tmp_path / "a_file"
    f.write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        run_sweep(tiny_spec(), f, workers=0)
    with pytest.raises(ValueError, match="is a file"):
        Store(f)
    # a store written by another version of the spec, or by another spec
    store = tmp_path / "store"
    run_sweep(tiny_spec(seeds=[0], methods={"bcfw": {"sampling": "uniform"}}, budget={"max_passes": 2}), store,
              workers=0)
    with pytest.raises(ValueError, match="'version'"):
        run_sweep(tiny_spec(version=2), store, workers=0)
    with pytest.raises(ValueError, match="'name'"):
        run_sweep(tiny_spec(name="other"), store, workers=0)
    # a non-empty directory that is not a store
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="without manifest.json"):
        run_sweep(tiny_spec(), other, workers=0)
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]  # nothing written
    # the CLI reports the same errors (exit code 2)
    spec_file = tmp_path / "s.toml"
    spec_file.write_text('name = "x"\ndatasets = ["ocr-small"]\nlams = [0]\n[methods.a]\nsampling = "gap"\n')
    assert main(["sweep", str(spec_file), "--store", str(tmp_path / "new"), "--workers", "0"]) == 2
    assert "lams[0]" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    assert main(["sweep", str(tmp_path / "missing.toml"), "--store", str(tmp_path / "new")]) == 2


# ---------------------------------------------------------------------------- the app tab
def test_app_sweeps_tab_browses_a_store(swept, tmp_path):
    pn = pytest.importorskip("panel")
    import holoviews as hv

    from gaplab.app.sweeps_tab import SweepsView
    path, _ = swept
    view = SweepsView(store=path)
    assert view.store is not None and "4 runs recorded: 4 done, 0 failed" in view.info.object
    assert view.dataset.options == [f"ocr-small[:{WORDS}]"] and view.lam.options == ["0.1"]
    assert view.view.options == {"Convergence": "convergence"} and not view.view.visible
    assert sorted(view.methods.value) == ["bcfw_uniform", "bcpfw_gap_cache"]
    fig = view.figure.object
    assert isinstance(fig, hv.Layout) and len(fig) == 2
    assert sum(type(e) is hv.Curve for e in fig[0]) == 2
    # pick one method: the figure follows
    view.methods.value = ["bcfw_uniform"]
    assert [e.label for e in view.figure.object[0] if type(e) is hv.Curve] == ["bcfw_uniform"]
    assert len(view.table.object) == 4 and set(view.table.object["status"]) == {"done"}
    # the panel renders to a Bokeh model (what the browser gets)
    model = view.panel.get_root()
    assert model is not None
    # a path that is not a store: a message, no figure
    assert view.load(tmp_path / "nowhere") is False
    # the typed path is checked before anything is read (gaplab.app.typed_paths)
    assert "does not exist" in view.info.object and view.figure.object is None
    (tmp_path / "empty").mkdir()
    assert view.load(tmp_path / "empty") is False
    assert "no manifest.json" in view.info.object and view.figure.object is None


def test_app_has_a_sweeps_tab(swept, monkeypatch):
    pytest.importorskip("panel")
    from gaplab.app.main import SWEEPS, build_app
    from gaplab.app.sweeps_tab import STORE_ENV
    path, _ = swept
    monkeypatch.setenv(STORE_ENV, str(path))
    app = build_app(periodic=False)
    try:
        assert app.tabs._names[SWEEPS] == "Sweeps"
        app.tabs.active = SWEEPS
        assert app.sweeps_view.store is not None and app.sweeps_view.figure.object is not None
        app.refresh(force=True)
    finally:
        app.close()


def test_path_and_grid_runs_and_their_figures(tmp_path):
    import holoviews as hv

    from gaplab import plots
    from gaplab.core import ChainModel, SolverConfig, load_ocr
    from gaplab.core.regpath import grid_search, regularization_path
    spec = tiny_spec(seeds=[0], lams=None, budget={"time_limit": 60},
                     methods={"eps_k9": {"kind": "path", "kappa": 0.9, "lam_min": 0.01},
                              "eps_k5": {"kind": "path", "kappa": 0.5, "lam_min": 0.01},
                              "grid": {"kind": "grid", "grid_hi": 2, "grid_lo": -4, "warm_start": "primal"}})
    rep = run_sweep(spec, tmp_path / "s", workers=0)
    assert (rep.done, rep.failed) == (3, 0)
    st = Store(tmp_path / "s")
    train, _ = load_ocr("small")
    model = ChainModel(train.subset(range(WORDS)))
    direct = {"eps_k9": regularization_path(model, solver_config=SolverConfig(), eps=0.1, kappa=0.9, lam_min=0.01),
              "eps_k5": regularization_path(model, solver_config=SolverConfig(), eps=0.1, kappa=0.5, lam_min=0.01),
              "grid": grid_search(model, 2.0 ** np.arange(2, -5, -1), eps=0.1, warm_start="primal")}
    clock = {"time_s", "solver_time_s", "cum_time_s"}
    for rid, e in st.manifest["runs"].items():
        rows = st.read_run(rid)
        ref = direct[e["config"]["method"]].rows()
        assert len(rows) == len(ref) > 2
        for col in ("lam", "cum_passes", "exact_gap", "status"):
            assert all(_same(a, b) for a, b in zip(rows[col].tolist(), [r[col] for r in ref])), (rid, col)
        assert clock <= set(rows.columns)
    k = plots.kappa_study(tmp_path / "s")
    assert len(k) == 2 and [sorted(e.label for e in p if type(e) is hv.Curve) for p in k] == [["eps_k5", "eps_k9"]] * 2
    pg = plots.path_vs_grid(tmp_path / "s")
    assert [sorted(e.label for e in p if type(e) is hv.Curve) for p in pg] == [["eps_k5", "eps_k9", "grid"]] * 2
    # cumulative passes grow as λ decreases (x = log10 λ increases to the right)
    for curve in (e for e in pg[1] if type(e) is hv.Curve):
        y = curve.dimension_values(1)
        assert np.all(np.diff(y) <= 1e-9)
    assert plots.figure(tmp_path / "s") is not None  # auto: the path-vs-grid figure
    # the app's Sweeps tab offers the two path views of this store (no convergence: no solve runs)
    pytest.importorskip("panel")
    from gaplab.app.sweeps_tab import SweepsView
    view = SweepsView(store=tmp_path / "s")
    assert view.view.options == {"κ study": "kappa", "Path vs grid": "path-grid"} and view.view.value == "kappa"
    assert view.view.visible and view.lam.disabled and view.lam.options == []
    assert view.dataset.options == [f"ocr-small[:{WORDS}]"]

    def labels(fig, row=0):
        return sorted(e.label for e in fig[row] if type(e) is hv.Curve)

    assert labels(view.figure.object) == ["eps_k5", "eps_k9"] and len(view.figure.object) == 2
    view.view.value = "path-grid"
    assert labels(view.figure.object) == labels(view.figure.object, 1) == ["eps_k5", "eps_k9", "grid"]
    assert sorted(view.methods.value) == ["eps_k5", "eps_k9", "grid"]
    view.methods.value = ["grid", "eps_k9"]
    fig = view.figure.object
    assert labels(fig) == ["eps_k9", "grid"]
    # hovering a curve shows its run config (the Bokeh hover tool lists the config column)
    grid_curve = next(e for e in fig[0] if type(e) is hv.Curve and e.label == "grid")
    assert "kind=grid" in grid_curve.dimension_values("config")[0]
    assert "warm_start=primal" in grid_curve.dimension_values("config")[0]
    from bokeh.models import HoverTool
    plot = hv.render(fig[0], backend="bokeh")
    tips = [str(t.tooltips) for t in plot.select(type=HoverTool)]
    assert tips and any("config" in t for t in tips)


def test_cli_sweep_on_an_existing_scheduler(client, tmp_path):
    from gaplab.cli import main
    spec = tmp_path / "s.toml"
    spec.write_text(f'name = "sched"\ndatasets = ["ocr-small[:{WORDS}]"]\nlams = [0.1]\nseeds = [3]\n'
                    '[budget]\nmax_passes = 2\n[methods.bcfw]\nsampling = "uniform"\n')
    address = client.scheduler.address
    assert address.startswith("tcp://")
    assert main(["sweep", str(spec), "--store", str(tmp_path / "st"), "--scheduler", address, "--quiet"]) == 0
    (entry,) = Store(tmp_path / "st").manifest["runs"].values()
    assert entry["status"] == "done" and entry["pid"] != os.getpid()


# ---------------------------------------------------------------------------- the problem registry
def _lsp_dir():
    from pose_data import LSP_DIR
    return LSP_DIR


@pytest.mark.parametrize("dataset", ["seg-tiny", "lsp-tiny"])
def test_registered_problems_sweep_like_direct_solver_runs(dataset, tmp_path):
    """Sweeps load datasets through the problem registry: seg-tiny (Python-tier graph-cut oracle,
    loader option n, box w_P >= 0) and lsp-tiny (compiled tree oracle); with no λ in the spec
    each problem's own λ is used. The stored traces equal direct Solver runs with the same seeds."""
    from gaplab.core.problems import get_problem, load_problem, model_box
    from gaplab.core.solver import Solver
    data_home = None
    if dataset == "lsp-tiny":
        data_home = _lsp_dir()
        if data_home is None:
            pytest.skip("LSP joints.mat not found ($GAPLAB_DATA or ../shared/data/lsp)")
        entry, options = "lsp-tiny", {}
    else:
        entry, options = {"problem": "seg-tiny", "options": {"n": 4}}, {"n": 4}
    spec = {"name": f"reg-{dataset}", "datasets": [entry], "seeds": [0, 1],
            "data_home": None if data_home is None else str(data_home),
            "budget": {"max_passes": 4, "gap_check": 2},
            "methods": {"bcpfw_gap_cache": {"sampling": "gap", "step": "pairwise", "cache": True}}}
    rep = run_sweep(spec, tmp_path / "s", workers=0)
    assert (rep.done, rep.failed) == (2, 0)
    st = Store(tmp_path / "s")
    problem = load_problem(dataset, data_home=data_home, **options)
    assert problem.model.bounds() is not None or dataset == "lsp-tiny"
    key = "seg-tiny(n=4)" if dataset == "seg-tiny" else "lsp-tiny"
    for rid, e in st.manifest["runs"].items():
        cfg = e["config"]
        assert cfg["dataset"] == key and cfg["problem"] == dataset
        assert cfg["lam"] == get_problem(dataset).lam(**options) == problem.default_lam
        s = Solver(problem.model, lam=cfg["lam"], sampling="gap", step="pairwise", cache={"enabled": True},
                   gap_check=2, max_passes=4, seed=cfg["seed"], **model_box(problem.model))
        direct = s.run(final_gap_check=True).trace
        stored = st.read_run(rid)
        assert len(stored) == len(direct) > 2
        for j, rec in enumerate(direct):
            for col in ("kind", "effective_passes", "oracle_calls", "exact_gap", "heuristic_gap", "primal", "dual",
                        "cache_hits"):
                v = stored[col].iloc[j]
                assert _same(v.item() if hasattr(v, "item") else v, rec[col]), (rid, j, col)
    assert {e["config"]["seed"] for e in st.manifest["runs"].values()} == {0, 1}


def test_spec_datasets_from_the_registry():
    from gaplab.core.problems import problem_names
    from gaplab.core.sweep import parse_dataset
    with pytest.raises(ValueError) as exc:
        load_spec(tiny_spec(datasets=["mnist"]))
    msg = str(exc.value)
    assert "'datasets[0]'" in msg and all(n in msg for n in problem_names())
    # loader options are checked, defaults filled in, the label says what differs
    ref = parse_dataset({"problem": "lsp-pose", "options": {"G": 16, "n_train": 100}})
    assert ref.key == "lsp-pose(G=16,n_train=100)" and ref.options == {"G": 16, "n_types": 4, "n_train": 100}
    for entry, field in [({"problem": "lsp-pose", "options": {"G": 1}}, "datasets[0].options.G"),
                         ({"problem": "lsp-pose", "options": {"H": 3}}, "datasets[0].options"),
                         ({"problem": "nope"}, "datasets[0].problem"),
                         ({"problem": "seg-tiny", "first": 0}, "datasets[0].first"),
                         ("toy[:3]", "datasets[0]")]:
        with pytest.raises(ValueError) as exc:
            load_spec(tiny_spec(datasets=[entry]))
        assert f"'{field}'" in str(exc.value), (entry, str(exc.value))
    # λ omitted or "default": the problem's own λ (horse-small 10, toy 1/n)
    runs = expand_runs(tiny_spec(datasets=["horse-small", {"problem": "toy", "options": {"n": 8}}], lams=None))
    assert {(r["dataset"], r["lam"]) for r in runs} == {("horse-small", 10.0), ("toy(n=8)", 1 / 8)}
    runs = expand_runs(tiny_spec(lams=["default", 0.1]))
    assert sorted({r["lam"] for r in runs}) == [0.01, 0.1]


def test_spec_verify_reaches_the_loader_and_is_not_part_of_the_run_id(tmp_path):
    """``verify = false`` in a spec (modified copies of the data files) is passed to the problem's
    loader for every run; like ``data_home`` it is not part of a run's identity."""
    from conftest import random_chain_data

    from gaplab.core.models import ChainModel
    from gaplab.core.problems import register_problem, unregister_problem
    from gaplab.core.sweep.runs import _MODELS, _problem
    seen = []

    def loader(data_home=None, verify=True):
        seen.append(verify)
        return random_chain_data(n=3, seed=5), None

    register_problem("verify-probe", loader, ChainModel, default_lam=0.1, description="test probe")
    try:
        with pytest.raises(ValueError, match="'verify'"):
            load_spec(tiny_spec(datasets=["verify-probe"], verify="no"))
        plain = expand_runs(tiny_spec(datasets=["verify-probe"]))
        off = expand_runs(tiny_spec(datasets=["verify-probe"], verify=False))
        assert [r["run_id"] for r in plain] == [r["run_id"] for r in off]
        assert {r["verify"] for r in plain} == {True} and {r["verify"] for r in off} == {False}
        _MODELS.clear()
        _problem(off[0])
        _MODELS.clear()
        _problem(plain[0])
        assert seen == [False, True]
        # the CLI's --no-verify too (was: "problem ... has no option 'verify'", exit 2)
        from gaplab.cli import main
        assert main(["train", "--dataset", "verify-probe", "--no-verify", "--max-passes", "1", "--quiet",
                     "--out", str(tmp_path / "r.json")]) == 0
        assert seen[-1] is False
    finally:
        _MODELS.clear()
        unregister_problem("verify-probe")
