"""The solver's own random number generator, kept as 4 uint64 words in the solver state.

xoshiro256** (Blackman and Vigna, 2018) seeded by splitmix64. Kept in plain arrays so that
numba kernels and Python draw from one stream: the same seed gives the same trace whether a
run is made of single steps or of whole passes. No global RNG is touched.
"""
from __future__ import annotations

import numpy as np
from numba import njit, uint64

__all__ = ["seed_state", "rng_next", "rng_uniform", "rng_randint"]

_M64 = (1 << 64) - 1


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


@njit(cache=True, inline="always")
def _rotl(x, k):
    return (x << uint64(k)) | (x >> uint64(64 - k))


@njit(cache=True, nogil=True)
def rng_next(s):
    """Next uint64 of xoshiro256** and advance the state ``s`` (uint64[4]) in place."""
    result = _rotl(s[1] * uint64(5), 7) * uint64(9)
    t = s[1] << uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@njit(cache=True, nogil=True)
def rng_uniform(s):
    """A float64 uniform in [0, 1) (53 random bits)."""
    return float(rng_next(s) >> uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True)
def rng_randint(s, n):
    """An int uniform in [0, n) (n >= 1)."""
    j = int(rng_uniform(s) * n)
    return j if j < n else n - 1
