"""The problems a server process shares between its sessions: each data set and its model is
loaded once (read-only arrays) and kept for every session, the ``PROBLEM_CACHE_SIZE`` most
recently used of them (:class:`ProblemCache`; the server log names them whenever they change).

A load runs in a thread of its own: every session that asks for the same data set meanwhile
waits for that one load and is told its progress (stage, images done / total, seconds) twice a
second, and may stop waiting (its session switched dataset or closed) without stopping the load.
"""
from __future__ import annotations

import collections
import sys
import threading
import time

from gaplab.core.config import GAP_CHECK_PRESETS
from gaplab.core.problems import Problem, get_problem, problem_names

#: datasets offered by the app when this module was imported (the registry's names; the picker
#: itself re-reads the registry whenever a Session is made)
DATASETS = problem_names()

#: the gap-check choices of Fig. 1 ("Gap 1, 5, 10, 100, Inf"): the presets of SolverConfig.gap_check
GAP_CHECK_CHOICES = GAP_CHECK_PRESETS

#: data sets a server process keeps loaded for all its sessions (the most recently used ones;
#: a dropped one stays in memory only while a session still shows it)
PROBLEM_CACHE_SIZE = 2


class LoadStopped(Exception):
    """Waiting for a load was given up (the session asked to stop); the load itself goes on."""


class _Loading:
    """One load in progress: its latest progress report and, once done, its problem or error."""

    def __init__(self):
        self.t0 = time.perf_counter()
        self.stage = ("", 0, 0)   # (stage words, done, total) as the loader last told
        self.finished = threading.Event()
        self.problem = None
        self.error = None


class ProblemCache:
    """The loaded problems shared by the sessions of a process: at most ``size`` (least recently
    used dropped first), each loaded once even when several sessions ask at once.

    Parameters
    ----------
    size : int
        Problems kept (>= 1).
    log : callable(str), optional
        Told which data sets are kept whenever that changes (default: a line on stderr, the
        server log).
    """

    def __init__(self, size: int = PROBLEM_CACHE_SIZE, log=None):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be an int >= 1 (problems kept), got {size!r}")
        self.size = size
        self._log = log if log is not None else _stderr
        self._lock = threading.Lock()
        self._kept: collections.OrderedDict = collections.OrderedDict()   # key -> Problem, newest last
        self._loading: dict = {}   # key -> _Loading

    def kept(self) -> list:
        """(name, options) of the problems kept, least recently used first."""
        with self._lock:
            return list(self._kept)

    def clear(self) -> None:
        """Forget every kept problem (loads in progress finish and are kept)."""
        with self._lock:
            self._kept.clear()

    def get(self, name: str, options: tuple = (), *, progress=None, should_stop=None,
            poll_s: float = 0.5) -> Problem:
        """The problem ``name`` loaded with ``options`` (sorted (option, value) pairs).

        Parameters
        ----------
        progress : callable(stage: str, done: int, total: int, seconds: float), optional
            Called in the caller's thread about every ``poll_s`` while the load goes on (stage
            "" and 0 / 0 until the loader tells more; seconds since the load began).
        should_stop : callable() -> bool, optional
            Checked as often: True stops waiting (:class:`LoadStopped`); the load goes on and
            its problem is kept for the next session that asks.

        Raises
        ------
        LoadStopped
            ``should_stop()`` became true.
        Exception
            Whatever the loader raised (an unknown name: ValueError; missing files:
            FileNotFoundError).
        """
        key = (name, tuple(options))
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
            rec = self._loading.get(key)
            if rec is None:
                rec = self._loading[key] = _Loading()
                threading.Thread(target=self._load, args=(key, rec), name=f"gaplab-load-{name}",
                                 daemon=True).start()
        while not rec.finished.wait(poll_s):
            if should_stop is not None and should_stop():
                raise LoadStopped(name)
            if progress is not None:
                progress(*rec.stage, time.perf_counter() - rec.t0)
        if rec.error is not None:
            raise rec.error
        return rec.problem

    def _load(self, key, rec: _Loading) -> None:
        name, options = key

        def tell(stage, done, total):
            rec.stage = (str(stage), int(done), int(total))

        try:
            problem = get_problem(name).load(progress=tell, **dict(options))
        except Exception as exc:   # handed to every waiter
            rec.error = exc
        else:
            rec.problem = problem
            with self._lock:
                self._kept[key] = problem
                while len(self._kept) > self.size:
                    self._kept.popitem(last=False)
                names = [_label(k) for k in self._kept]
            self._log(f"datasets kept loaded for all sessions (at most {self.size}, most recent last): "
                      f"{', '.join(names)}; {name} loaded in {time.perf_counter() - rec.t0:.1f} s")
        finally:
            with self._lock:
                self._loading.pop(key, None)
            rec.finished.set()


def _label(key) -> str:
    name, options = key
    return name + (f" ({', '.join(f'{k}={v}' for k, v in options)})" if options else "")


def _stderr(line: str) -> None:
    print(f"gaplab app: {line}", file=sys.stderr, flush=True)


#: the problems shared by every session of this process
PROBLEMS = ProblemCache(PROBLEM_CACHE_SIZE)


def load_problem(name: str, *, progress=None, should_stop=None, **options) -> Problem:
    """The :class:`~gaplab.core.problems.Problem` of a registered name (cached per name and
    loader options; ValueError listing the registered problems for an unknown name).

    What the sessions of one process share: each data set and its model (read-only arrays) is
    loaded once and kept for every session, the ``PROBLEM_CACHE_SIZE`` most recently used of
    them (:data:`PROBLEMS`); one that is dropped stays in memory only while a session still
    shows it. Everything a session changes (solver, α, traces, its worker thread, its Bokeh
    document) is its own and freed when the session is destroyed. ``progress`` and
    ``should_stop``: see :meth:`ProblemCache.get`."""
    spec = get_problem(name)
    return PROBLEMS.get(name, tuple(sorted(spec.parse_options(options).items())), progress=progress,
                        should_stop=should_stop)
