"""A sweep store that recomputes what it cannot trust (a foreign, swapped or truncated
run file), a local cluster that listens on this machine only, and one-line errors for an
unreachable scheduler and a full disk."""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gaplab.core import sweep as sw
from gaplab.core.sweep import dask_runner, store as sweep_store
from gaplab.core.sweep import Store, run_sweep

pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

WORDS = 12
ENV = dict(os.environ)
ENV["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)


def small_spec(**changes) -> dict:
    spec = {"name": "rel", "version": 1, "datasets": [f"ocr-small[:{WORDS}]"], "lams": [0.1], "seeds": [0, 1],
            "budget": {"max_passes": 2, "gap_check": 1},
            "methods": {"bcfw": {"sampling": "uniform", "step": "fw"}}}
    spec.update(changes)
    return spec


def _files(store: Path) -> dict:
    return {rid: store / e["file"] for rid, e in Store(store).manifest["runs"].items()}


def _gaplab(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "gaplab", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=ENV)


@pytest.mark.parametrize("damage", ["foreign", "swapped", "truncated"])
def test_a_foreign_swapped_or_truncated_run_file_is_reported_and_recomputed(tmp_path, damage):
    store = tmp_path / "s"
    rep = run_sweep(small_spec(), store, workers=0)
    assert rep.done == 2
    files = _files(store)
    (rid, f), (other, g) = sorted(files.items())
    good = Store(store).read_run(rid)
    if damage == "foreign":
        pq.write_table(pa.table({"foo": [1, 2, 3]}), f)
    elif damage == "swapped":
        f.write_bytes(g.read_bytes())
    else:
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    st = Store(store)
    assert not st.is_done(rid) and st.is_done(other)
    with pytest.raises(ValueError, match=rf"run '{rid}'.*run the sweep again"):
        st.traces()
    # the figure refuses it in one line, exit 2, and writes nothing
    r = _gaplab("figure", store, "--out", tmp_path / "fig.png")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and rid in r.stderr, r.stderr
    assert not (tmp_path / "fig.png").exists()
    # the next sweep says so and recomputes exactly that run
    rep = run_sweep(small_spec(), store, workers=0)
    assert rep.done == 1 and rep.skipped == 1 and list(rep.bad_files) == [rid]
    df = Store(store).traces()
    assert set(df["run_id"]) == {rid, other} and df["run_id"].notna().all()
    again = Store(store).read_run(rid)
    clock = [c for c in again.columns if c in sw.WALL_CLOCK_COLUMNS]
    assert again.drop(columns=clock).equals(good.drop(columns=clock))


def _listening(pids) -> list:
    import psutil
    out = []
    for pid in pids:
        try:
            conns = psutil.Process(pid).net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        out += [c.laddr for c in conns if c.status == psutil.CONN_LISTEN]
    return out


def test_local_cluster_and_its_dashboard_listen_on_localhost_only():
    import psutil
    cluster, client = dask_runner._make_cluster(1)
    try:
        me = psutil.Process()
        pids = [me.pid] + [c.pid for c in me.children(recursive=True)]
        before_dash = cluster.dashboard_link
        addrs = _listening(pids)
        port = int(before_dash.split(":")[2].split("/")[0])
        assert port in [a.port for a in addrs]  # the dashboard is one of them
        assert addrs and all(a.ip in ("127.0.0.1", "::1") for a in addrs), addrs
    finally:
        client.close()
        cluster.close()


def test_dashboard_address_option_is_checked_and_reaches_the_cluster(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="dashboard_address"):
        run_sweep(small_spec(), tmp_path / "x", dashboard_address="everywhere")
    seen = []

    def fake(workers, dashboard_address=sw.DASHBOARD_ADDRESS):
        seen.append(dashboard_address)
        raise OSError("stop here")
    monkeypatch.setattr(dask_runner, "_make_cluster", fake)
    with pytest.raises(OSError, match="stop here"):
        run_sweep(small_spec(), tmp_path / "y", workers=1, dashboard_address="0.0.0.0:0")
    with pytest.raises(OSError):
        run_sweep(small_spec(), tmp_path / "z", workers=1)
    assert seen == ["0.0.0.0:0", "127.0.0.1:0"]


def test_unreachable_scheduler_is_one_line_after_the_connect_timeout(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(f'name = "x"\ndatasets = ["ocr-small[:{WORDS}]"]\nlams = [0.1]\n[methods.a]\nsampling = "gap"\n')
    t0 = time.monotonic()
    r = _gaplab("sweep", spec, "--store", tmp_path / "st", "--scheduler", "tcp://127.0.0.1:1",
                "--connect-timeout", "2", "--quiet")
    took = time.monotonic() - t0
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "tcp://127.0.0.1:1" in lines[0] and "2 s" in lines[0], r.stderr
    assert took < 60


def test_full_disk_during_a_sweep_is_one_line_and_keeps_the_recorded_runs(tmp_path, capsys, monkeypatch):
    from gaplab.cli import main
    spec = tmp_path / "s.toml"
    spec.write_text(f'name = "disk"\ndatasets = ["ocr-small[:{WORDS}]"]\nlams = [0.1]\nseeds = [0, 1]\n'
                    '[budget]\nmax_passes = 2\n[methods.a]\nsampling = "uniform"\n')
    store = tmp_path / "st"
    real = sweep_store._atomic_write
    writes = []

    def full_after_first_run(path, write):
        writes.append(path)
        if Path(path).suffix == ".parquet" and sum(Path(p).suffix == ".parquet" for p in writes) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, write)
    monkeypatch.setattr(sweep_store, "_atomic_write", full_after_first_run)
    assert main(["sweep", str(spec), "--store", str(store), "--workers", "0", "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No space left on device" in err[0], err
    st = Store(store)
    assert len(st.manifest["runs"]) == 1 and all(st.is_done(r) for r in st.manifest["runs"])
    assert not [p for p in store.rglob("*") if p.name.endswith(".tmp")]
    monkeypatch.setattr(sweep_store, "_atomic_write", real)
    assert main(["sweep", str(spec), "--store", str(store), "--workers", "0", "--quiet"]) == 0
    assert len(Store(store).manifest["runs"]) == 2


def test_a_deeply_nested_sweep_manifest_is_refused_in_one_line(tmp_path):
    store = tmp_path / "s"
    store.mkdir()
    (store / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="manifest"):
        Store(store)
    r = _gaplab("figure", store, "--out", tmp_path / "f.png")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
