"""The solver's own random number generator, kept as 4 uint64 words in the solver state.

xoshiro256** (Blackman and Vigna, 2018) seeded by splitmix64. Kept in plain arrays so that
numba kernels and Python draw from one stream: the same seed gives the same trace whether a
run is made of single steps or of whole passes. No global RNG is touched.

The generator is written once, as plain functions of numpy uint64 values (:func:`_next_bits`,
:func:`_unit_of`, :func:`_index_of`); the kernels call their compiled forms (:func:`rng_next`,
:func:`rng_uniform`, :func:`rng_randint`), and :class:`Xoshiro` calls the same functions in
Python, with no compile: the reference solver draws the kernels' numbers while they compile
(numba compiles one function at a time).
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["seed_state", "rng_next", "rng_uniform", "rng_randint", "Xoshiro"]

_M64 = (1 << 64) - 1
_U5, _U9, _U11, _U17 = np.uint64(5), np.uint64(9), np.uint64(11), np.uint64(17)
_U7, _U57, _U45, _U19 = np.uint64(7), np.uint64(57), np.uint64(45), np.uint64(19)
_INV_2_53 = 1.0 / 9007199254740992.0


def seed_state(seed: int) -> np.ndarray:
    """Return a fresh RNG state (uint64, shape (4,)) from a non-negative integer seed."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    x = int(seed) & _M64
    out = np.empty(4, dtype=np.uint64)
    for j in range(4):
        x = (x + 0x9E3779B97F4A7C15) & _M64
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        out[j] = z ^ (z >> 31)
    return out


def _next_bits(s):
    """Next uint64 of xoshiro256** and advance the state ``s`` (uint64[4]) in place (the
    rotations rotl(x, 7) and rotl(s3, 45) written out: the function calls nothing)."""
    x = s[1] * _U5
    result = ((x << _U7) | (x >> _U57)) * _U9
    t = s[1] << _U17
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = (s[3] << _U45) | (s[3] >> _U19)
    return result


def _unit_of(bits):
    """A float64 uniform in [0, 1) from a uint64's top 53 bits."""
    return float(bits >> _U11) * _INV_2_53


def _index_of(u, n):
    """An int uniform in [0, n) from a uniform u in [0, 1) (n >= 1)."""
    j = int(u * n)
    return j if j < n else n - 1


rng_next = njit(cache=True, nogil=True)(_next_bits)
rng_next.__doc__ = "Next uint64 of xoshiro256** and advance the state ``s`` (uint64[4]) in place."
_unit_nb = njit(cache=True, nogil=True, inline="always")(_unit_of)
_index_nb = njit(cache=True, nogil=True, inline="always")(_index_of)


@njit(cache=True, nogil=True)
def rng_uniform(s):
    """A float64 uniform in [0, 1) (53 random bits)."""
    return _unit_nb(rng_next(s))


@njit(cache=True, nogil=True)
def rng_randint(s, n):
    """An int uniform in [0, n) (n >= 1)."""
    return _index_nb(rng_uniform(s), n)


class Xoshiro:
    """The solver's stream in Python: the same functions as the kernels' :func:`rng_uniform` /
    :func:`rng_randint`, run uncompiled on a uint64[4] state, so the same draws from the same
    seed without waiting for a compile.

    Parameters
    ----------
    seed : int >= 0
    """

    def __init__(self, seed: int):
        self.s = seed_state(seed)

    def next(self) -> int:
        """The next uint64 (as a Python int)."""
        with np.errstate(over="ignore"):  # uint64 arithmetic wraps modulo 2^64, as in the kernels
            return int(_next_bits(self.s))

    def uniform(self) -> float:
        """A float64 uniform in [0, 1) (53 random bits)."""
        with np.errstate(over="ignore"):
            return _unit_of(_next_bits(self.s))

    def randint(self, n: int) -> int:
        """An int uniform in [0, n) (n >= 1)."""
        return _index_of(self.uniform(), n)
