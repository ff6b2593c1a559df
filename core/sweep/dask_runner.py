"""Running a sweep (:func:`run_sweep`): the spec's unfinished runs, serially in this process or
as tasks on Dask distributed (a LocalCluster, a scheduler's address or a given client), with
retries, recorded in the store as they finish (:class:`SweepReport` says what was done).

Dask ships the run configs (plain dicts) and the trace rows between processes with its own
serialization; nothing pickled is ever written to disk.
"""
from __future__ import annotations

import os
import re
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

from .. import validate
from .runs import execute_run
from .spec import expand_runs, load_spec
from .store import Store, lock_store

__all__ = ["run_sweep", "SweepReport", "DASHBOARD_ADDRESS"]

# ============================================================================ the sweep
@dataclass
class SweepReport:
    """What :func:`run_sweep` did. ``submitted`` counts the tasks given to Dask (retries included)."""

    total: int = 0
    skipped: int = 0
    submitted: int = 0
    done: int = 0
    failed: int = 0
    retried: int = 0
    elapsed_s: float = 0.0
    workers: int = 0
    failures: dict = field(default_factory=dict)
    #: finished runs whose stored file was missing, corrupt or foreign (run id -> what was wrong), recomputed
    bad_files: dict = field(default_factory=dict)
    #: the Dask dashboard's address (a LocalCluster's), or "" when none was started
    dashboard: str = ""


def _error_entry(exc, tb_text=None) -> dict:
    msg = f"{type(exc).__name__}: {exc}"
    if tb_text is None:
        tb_text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"message": msg, "traceback": tb_text[-4000:],
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


#: where a LocalCluster's dashboard listens unless told otherwise: this machine only
DASHBOARD_ADDRESS = "127.0.0.1:0"


def _make_cluster(workers: int, dashboard_address: str | None = DASHBOARD_ADDRESS):
    """A LocalCluster of ``workers`` processes with one thread each (numba's gap passes on one
    thread too). A killed worker fails its task at once (allowed-failures 0): the sweep retries.
    Its scheduler, workers and dashboard listen on 127.0.0.1 only; ``dashboard_address``
    ("HOST:PORT", port 0: any free one) exposes the dashboard elsewhere, None starts none."""
    import logging

    import dask
    from distributed import Client, LocalCluster
    with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                          "distributed.scheduler.worker-saturation": 1.0}):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=dashboard_address, env={"NUMBA_NUM_THREADS": "1"},
                               silence_logs=logging.CRITICAL)  # errors go to the manifest
        client = Client(cluster)
    return cluster, client


def run_sweep(spec, store, *, workers: int | None = None, scheduler: str | None = None, client=None,
              budget: str | None = None, retries: int = 1, progress: bool | Callable = False,
              dashboard_address: str | None = DASHBOARD_ADDRESS, connect_timeout: float = 30.0,
              wait: bool = False, imports=()) -> SweepReport:
    """Run a spec's unfinished runs and record them in a store.

    Parameters
    ----------
    spec : SweepSpec, dict or path of a TOML file
    store : str or Path
        Store directory (created if missing; must belong to the same spec name and version).
    workers : int, optional
        Worker processes of the LocalCluster (default: CPU count). 0 runs serially in this process.
    scheduler : str, optional
        Address of an existing Dask scheduler (``tcp://host:port``) instead of a LocalCluster.
    client : distributed.Client, optional
        An existing client (tests, notebooks).
    budget : str, optional
        Which ``[budgets.NAME]`` of the spec (default: the spec's default, else "laptop").
    retries : int
        Extra attempts of a run that raised or whose worker died (default 1).
    progress : bool or callable(report, cfg, status)
        A tqdm bar over runs (True), or a callback after each finished run.
    dashboard_address : str or None
        "HOST:PORT" of the LocalCluster's Dask dashboard (default "127.0.0.1:0": this machine
        only, any free port; "0.0.0.0:8787" exposes it to the network, None: no dashboard).
        Not used with ``scheduler`` or ``client`` (their dashboard is theirs).
    connect_timeout : float
        Seconds to wait for ``scheduler`` (default 30).
    wait : bool
        When another process writes to ``store`` (one writer per store,
        :mod:`gaplab.core.storelock`), wait until it is done instead of raising.
    imports : sequence of str
        Modules that register problems (names on the Python path or .py files, as
        ``gaplab sweep --import``), imported here before the spec is read and again in every
        worker process before each run (workers are separate processes: they do not share this
        one's imports; an import already done is not repeated).

    Returns
    -------
    SweepReport

    Raises
    ------
    ValueError
        A bad spec, store or argument (naming it).
    OSError
        The scheduler cannot be reached within ``connect_timeout`` (``TimeoutError``, naming
        its address), or the store cannot be written (e.g. disk full: the runs recorded so far
        are kept, a re-run continues).
    StoreLockedError
        (an OSError) Another process writes to ``store`` and ``wait`` is False; the message
        names the store and that process's pid.
    """
    retries, workers, connect_timeout = _check_arguments(retries, workers, dashboard_address, connect_timeout)
    imports = _import_here(imports)
    spec = load_spec(spec, budget=budget)
    with lock_store(store, wait=wait):
        return _run_locked(spec, store, workers, scheduler, client, retries, progress, dashboard_address,
                           connect_timeout, imports)


def _import_here(imports) -> tuple:
    """Import the ``imports`` targets in this process (their problems then pass the spec's
    checks) and return them as the workers must import them: .py files as absolute paths (a
    worker's working directory may differ). ValueError / FileNotFoundError naming a bad one."""
    from pathlib import Path

    from ..problems import import_problems
    if isinstance(imports, str) or not all(isinstance(t, str) for t in imports):
        raise TypeError(f"imports must be a sequence of module names or .py paths (str), got {imports!r}")
    out = []
    for target in imports:
        import_problems(target)
        is_file = target.endswith(".py") or "/" in target or "\\" in target
        out.append(str(Path(target).expanduser().resolve()) if is_file else target)
    return tuple(out)


def _run_locked(spec, store, workers, scheduler, client, retries, progress, dashboard_address,
                connect_timeout, imports=()) -> SweepReport:
    """:func:`run_sweep` with the store's writer lock held."""
    st = Store.open_for(store, spec)
    runs = expand_runs(spec)
    todo, bad = _unfinished(st, runs)
    rep = SweepReport(total=len(runs), skipped=len(runs) - len(todo), bad_files=bad)
    t0 = time.perf_counter()
    bar = None
    if progress is True:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(runs), initial=rep.skipped, unit="run", desc=f"sweep {spec.name}")
    rec = _Recorder(st, rep, retries, bar, progress if callable(progress) else None)
    try:
        if not todo:
            return rep
        if workers == 0 and client is None and scheduler is None:
            _run_serial(todo, rep, rec)
            return rep
        _run_dask(todo, st, rep, rec.attempts, workers, scheduler, client, rec.handle_ok, rec.handle_error,
                  dashboard_address, float(connect_timeout), imports)
        return rep
    finally:
        rep.elapsed_s = time.perf_counter() - t0
        if bar is not None:
            bar.close()


def _check_arguments(retries, workers, dashboard_address, connect_timeout):
    """(retries, workers, connect_timeout) checked; ValueError naming a bad one."""
    retries = validate.int_at_least("retries", retries, 0)
    if workers is not None:
        workers = validate.int_at_least("workers", workers, 0)
    if dashboard_address is not None and not (isinstance(dashboard_address, str)
                                              and re.fullmatch(r"[^\s:]*:\d{1,5}", dashboard_address)):
        raise ValueError(f"dashboard_address must be 'HOST:PORT' (e.g. '127.0.0.1:8787') or None, "
                         f"got {dashboard_address!r}")
    connect_timeout = validate.positive("connect_timeout (seconds)", connect_timeout)
    return retries, workers, connect_timeout


def _unfinished(st: Store, runs: list) -> tuple[list, dict]:
    """The runs to do (not finished, or whose stored file is bad) and the bad files (run id ->
    what is wrong with it)."""
    todo, bad = [], {}
    for r in runs:
        e = st.manifest["runs"].get(r["run_id"])
        problem = st.check_run_file(r["run_id"]) if e and e["status"] == "done" else "to do"
        if problem is not None:
            todo.append(r)
            if problem != "to do":
                bad[r["run_id"]] = problem
    return todo, bad


class _Recorder:
    """Records each attempt's outcome in the store and the report: attempts and errors per run,
    retries while ``retries`` allows, the progress bar and callback after each finished run."""

    def __init__(self, st: Store, rep: SweepReport, retries: int, bar, notify):
        self.st, self.rep, self.retries, self.bar, self.notify = st, rep, retries, bar, notify
        self.attempts: dict[str, int] = {}
        self.errors: dict[str, list] = {}

    def finished(self, cfg, status):
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(done=self.rep.done, failed=self.rep.failed, refresh=False)
        if self.notify is not None:
            self.notify(self.rep, cfg, status)

    def handle_error(self, cfg, entry) -> bool:
        """Record an attempt's error; True if the run gets another attempt."""
        rid, rep = cfg["run_id"], self.rep
        self.errors.setdefault(rid, []).append(entry)
        if self.attempts[rid] <= self.retries:
            rep.retried += 1
            return True
        self.st.record_failed(cfg, self.attempts[rid], self.errors[rid])
        rep.failed += 1
        rep.failures[rid] = entry["message"]
        self.finished(cfg, "failed")
        return False

    def handle_ok(self, cfg, out):
        rid = cfg["run_id"]
        self.st.record_done(cfg, out, self.attempts[rid], self.errors.get(rid, []))
        self.rep.done += 1
        self.finished(cfg, "done")


def _run_serial(todo: list, rep: SweepReport, rec: _Recorder):
    """The runs one after the other in this process (``workers=0``), each retried as allowed."""
    rep.workers = 0
    for cfg in todo:
        while True:
            rec.attempts[cfg["run_id"]] = rec.attempts.get(cfg["run_id"], 0) + 1
            rep.submitted += 1
            try:
                out = execute_run(cfg)
            except Exception as exc:  # recorded, never fatal to the sweep
                if rec.handle_error(cfg, _error_entry(exc)):
                    continue
            else:
                rec.handle_ok(cfg, out)
            break


def _connect(scheduler: str, timeout: float):
    """A Client of the scheduler at ``scheduler``; an OSError naming it when it does not answer."""
    from distributed import Client
    try:
        return Client(scheduler, timeout=timeout)
    except (OSError, TimeoutError) as exc:  # distributed raises OSError("Timed out trying to connect ...")
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TimeoutError(f"cannot reach the Dask scheduler {scheduler!r} within {timeout:g} s ({reason})") from None


def _run_dask(todo, st, rep, attempts, workers, scheduler, client, handle_ok, handle_error,
              dashboard_address=DASHBOARD_ADDRESS, connect_timeout=30.0, imports=()):
    from distributed import as_completed
    cluster = own_client = None
    if client is None:
        if scheduler is not None:
            own_client = client = _connect(scheduler, connect_timeout)
        else:
            cluster, own_client = _make_cluster(workers or os.cpu_count() or 1, dashboard_address)
            client = own_client
            rep.dashboard = cluster.dashboard_link if dashboard_address is not None else ""
    try:
        rep.workers = len(client.scheduler_info().get("workers", {}))
        by_key = {}

        def submit(cfg):
            rid = cfg["run_id"]
            attempts[rid] = attempts.get(rid, 0) + 1
            rep.submitted += 1
            fut = client.submit(execute_run, cfg, imports=imports,
                                key=f"gaplab-run-{rid}-{attempts[rid]}-{time.time_ns()}", pure=False)
            by_key[fut.key] = cfg
            return fut

        ac = as_completed([submit(c) for c in todo])
        for fut in ac:
            cfg = by_key.pop(fut.key)
            if fut.status == "finished":
                handle_ok(cfg, fut.result())
                fut.release()
                continue
            try:
                exc = fut.exception()
                tb = fut.traceback()
                tb_text = "".join(traceback.format_tb(tb)) if tb is not None else ""
            except Exception as e2:  # cancelled futures raise here
                exc, tb_text = e2, ""
            fut.release()
            if handle_error(cfg, _error_entry(exc, tb_text)):
                ac.add(submit(cfg))
    finally:
        if own_client is not None:
            own_client.close()
        if cluster is not None:
            cluster.close()
