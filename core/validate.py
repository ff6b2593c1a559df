"""Number validators shared by the settings, the path, the sweep spec and the command line.

Every check names the argument, states the expected range and shows what was received:
``"eps must be a finite number > 0, got -1"``. A value that is not a number at all (a string,
None, a bool) raises :class:`NotANumberError`, which is both a TypeError (the wrong kind of
value) and a ValueError (so code that reports bad input by catching ValueError still sees it).

The command-line parsers use :func:`arg_type`, which turns one of these checks into an argparse
``type=`` (text parsed with ``float``/``int``; ValueError becomes ArgumentTypeError).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["NotANumberError", "as_number", "number", "positive", "nonnegative", "finite", "int_at_least",
           "arg_type"]


class NotANumberError(TypeError, ValueError):
    """The value is not a real number (str, None, bool, ...)."""


def as_number(name: str, value) -> float:
    """``float(value)`` for a real number (Python or numpy int/float); NotANumberError for
    anything else, bools included (``True`` is not a setting's value)."""
    if isinstance(value, (bool, np.bool_)) or not (
            isinstance(value, numbers.Real) or hasattr(value, "__float__") and not isinstance(value, (str, bytes))):
        raise NotANumberError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    return float(value)


def number(name: str, value, *, lo: float | None = None, lo_open: bool = True, hi: float | None = None,
           hi_open: bool = False, allow_inf: bool = False, integer: bool = False) -> float:
    """The value as a float, checked.

    Parameters
    ----------
    name : str
        The argument's name as the user wrote it (it starts the message).
    value : int, float or numpy scalar
        What was received.
    lo : float, optional
        Lower bound: ``value > lo`` (``lo_open``) or ``value >= lo``.
    hi : float, optional
        Upper bound: ``value < hi`` (``hi_open``) or ``value <= hi``.
    allow_inf : bool
        Accept +inf (never NaN, never -inf when there is a lower bound).
    integer : bool
        Finite values must be whole numbers.

    Raises
    ------
    NotANumberError
        ``value`` is not a number.
    ValueError
        NaN, an infinity that is not allowed, a value outside the range or a fraction where a
        whole number is needed; the message names ``name``, the range and ``value``.
    """
    v = as_number(name, value)
    ok = not math.isnan(v) and (allow_inf and v == math.inf or math.isfinite(v))
    if ok and lo is not None:
        ok = v > lo if lo_open else v >= lo
    if ok and hi is not None:
        ok = v < hi if hi_open else v <= hi
    if ok and integer and math.isfinite(v):
        ok = v == int(v)
    if not ok:
        raise ValueError(f"{name} must be {_describe(lo, lo_open, hi, hi_open, allow_inf, integer)}, got {value!r}")
    return v


def _describe(lo, lo_open, hi, hi_open, allow_inf, integer) -> str:
    kind = "a whole number" if integer else "a number" if allow_inf or hi is not None else "a finite number"
    if lo is not None and hi is not None:
        return kind + f" in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    if hi is not None:
        return kind + f" {'<' if hi_open else '<='} {hi:g}"
    if lo is not None:
        kind += f" {'>' if lo_open else '>='} {lo:g}"
    return kind + (" (or inf)" if allow_inf else "")


def positive(name: str, value, *, allow_inf: bool = False) -> float:
    """A number > 0 (finite unless ``allow_inf``)."""
    return number(name, value, lo=0.0, allow_inf=allow_inf)


def nonnegative(name: str, value, *, allow_inf: bool = False) -> float:
    """A number >= 0 (finite unless ``allow_inf``)."""
    return number(name, value, lo=0.0, lo_open=False, allow_inf=allow_inf)


def finite(name: str, value) -> float:
    """Any finite number."""
    return number(name, value)


def int_at_least(name: str, value, k: int = 0) -> int:
    """A whole number >= k, returned as int (a float such as 3.0 is accepted)."""
    return int(number(name, value, lo=k, lo_open=False, integer=True))


def arg_type(check, name: str, *args, parse=float, **kwargs):
    """An argparse ``type=`` running ``check(name, parse(text), *args, **kwargs)``.

    ``parse`` turns the text into a number (``float`` or ``int``); text it cannot parse and every
    ValueError of ``check`` become ``argparse.ArgumentTypeError`` with the check's message
    (argparse prints it on one line after the option's name).
    """
    import argparse

    def parse_arg(text):
        try:
            value = parse(text)
        except ValueError:
            what = "a whole number" if parse is int else "a number"
            raise argparse.ArgumentTypeError(f"{name} must be {what}, got {text!r}") from None
        try:
            return check(name, value, *args, **kwargs)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse_arg.__name__ = getattr(check, "__name__", "number")  # argparse names the type in some errors
    return parse_arg
