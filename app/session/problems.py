"""The problems a server process shares between its sessions: each data set and its model is
loaded once (read-only arrays) and kept for every session (at most ``PROBLEM_CACHE_SIZE``)."""
from __future__ import annotations

import functools

from gaplab.core.config import GAP_CHECK_PRESETS
from gaplab.core.problems import Problem, get_problem, problem_names

#: datasets offered by the app when this module was imported (the registry's names; the picker
#: itself re-reads the registry whenever a Session is made)
DATASETS = problem_names()

#: the gap-check choices of Fig. 1 ("Gap 1, 5, 10, 100, Inf"): the presets of SolverConfig.gap_check
GAP_CHECK_CHOICES = GAP_CHECK_PRESETS

PROBLEM_CACHE_SIZE = 4   # data sets a server process keeps loaded for all its sessions


@functools.lru_cache(maxsize=PROBLEM_CACHE_SIZE)
def _load_problem_cached(name: str, options: tuple) -> Problem:
    # A read-only cache of models: two sessions on OCR-large share the feature arrays (the
    # solver states, which the sessions mutate, are never shared).
    return get_problem(name).load(**dict(options))


def load_problem(name: str, **options) -> Problem:
    """The :class:`~gaplab.core.problems.Problem` of a registered name (cached per name and
    loader options; ValueError listing the registered problems for an unknown name).

    What the sessions of one process share: each data set and its model (read-only arrays) is
    loaded once and kept for every session, at most ``PROBLEM_CACHE_SIZE`` of them (the least
    recently used is dropped first), so a server that has shown CoNLL, horse and LSP keeps them
    after their sessions close. Everything a session changes (solver, α, traces, its worker
    thread, its Bokeh document) is its own and freed when the session is destroyed."""
    spec = get_problem(name)
    return _load_problem_cached(name, tuple(sorted(spec.parse_options(options).items())))
