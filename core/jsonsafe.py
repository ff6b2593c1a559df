"""One JSON convention for numbers that JSON cannot spell: every file gaplab writes uses it.

Finite numbers are JSON numbers; ``inf``, ``-inf`` and NaN are the strings ``"inf"``, ``"-inf"``
and ``"nan"``: Python's own spelling of them (``str(x)``, read back by ``float(s)``), valid strict
JSON (``JSON.parse``, ``jq``) and nothing is lost (``null`` would fold an infinite λ_∞, an unbounded
budget and a missing value into one). :func:`encode` also turns numpy scalars and arrays, enums
and non-string keys into plain JSON values.

:func:`decode` turns those strings back into floats, and also the spellings of files written
before this convention: ``"Infinity"``, ``"-Infinity"``, ``"NaN"`` (sweep stores) and the bare
``NaN``/``Infinity`` tokens (path stores; :func:`json.loads` already reads them as floats).
``null`` (the command line's ``--json`` reports) stays None: it did not say which number it was.
"""
from __future__ import annotations

import enum
import math

import numpy as np

__all__ = ["encode", "decode", "NONFINITE_STRINGS"]

#: every string :func:`decode` reads as a float (the first three are what :func:`encode` writes)
NONFINITE_STRINGS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan,
                     "Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def encode(obj):
    """``obj`` with non-finite floats as ``"inf"``/``"-inf"``/``"nan"``, numpy values as Python
    ones, enums as their lower-case name and dict keys as strings (ready for ``json.dumps``
    with ``allow_nan=False``)."""
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode(v) for v in obj]
    if isinstance(obj, enum.Enum):
        return obj.name.lower()
    if isinstance(obj, np.ndarray):
        return encode(obj.tolist())
    if isinstance(obj, np.generic):
        return encode(obj.item())
    return obj


def decode(obj):
    """The inverse of :func:`encode` for numbers: the strings of :data:`NONFINITE_STRINGS` become
    floats, in nested dicts and lists; everything else is returned as it is."""
    if isinstance(obj, str):
        return NONFINITE_STRINGS.get(obj, obj)
    if isinstance(obj, dict):
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    return obj
