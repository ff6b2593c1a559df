"""The generated part-score maps of the LSP pose data (Paper: App. I; they stand in for the CNN
score maps of Chen and Yuille, NIPS 2014, which cannot be had here).

The input x_i of image i is, for every node p, a G×G map φ_p(l) standing in for a part
detector's score. It is the sum of (a) a Gaussian bump of amplitude ``peak_amp`` (times
``weak_amp`` for an occluded joint or, with probability ``p_weak``, a missed detection) at the
true position moved by a jitter of standard deviation ``jitter`` cells; (b) a decoy bump of
amplitude ``mirror_amp`` at the true position of the mirrored part (left/right partner), when p
has one; (c) a decoy bump of random amplitude in [0, ``clutter_amp``) at a uniformly random cell;
(d) per-cell noise of standard deviation ``noise``. Bump widths are ``sigma`` cells; jitter and
widths are given for G = 32 and scale with G/32. The bumps are drawn once, with
``numpy.random.default_rng([seed, image id])`` (:func:`draw_bumps`); the noise is a hash of
(seed, image id, node, cell) (an Irwin-Hall sum of four 16-bit uniforms, variance 1). So a map
or any single value of it is generated on demand, bit-identically, from a few numbers per image:
nothing of size n·26·G² is ever stored (1,000 images × 26 × 128² in float32 would be 1.7 GB).

Here: :class:`ScoreMapSpec` (the parameters), :func:`draw_bumps` (numpy, at data-set
construction) and the compiled generator :func:`pose_score_map` / :func:`pose_unary_value`,
which read the per-image numbers from the pose model's arrays ``M``
(:class:`~gaplab.core.models.pose.arrays.PoseArrays`: ``G``, ``N``, ``seed``, ``img_id``,
``noise``, ``sigma``, ``bump_pos``, ``bump_amp``) and are called by its max oracle and
primitives.

Paper: App. I (LSP).
"""
from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit, uint64

__all__ = ["ScoreMapSpec", "draw_bumps", "pose_score_map", "pose_unary_value"]

_GOLD = uint64(0x9E3779B97F4A7C15)


@dataclasses.dataclass(frozen=True)
class ScoreMapSpec:
    """Parameters of the generated part-score maps (see the module docstring).

    Attributes
    ----------
    peak_amp : float
        Amplitude of the bump near the true position.
    weak_amp : float
        Factor on ``peak_amp`` for occluded joints and missed detections.
    p_weak : float
        Probability of a missed (weak) detection of a visible node.
    jitter : float
        Standard deviation of the peak's offset from the truth, in cells at G = 32.
    sigma : float
        Width (standard deviation) of every bump, in cells at G = 32.
    mirror_amp : float
        Amplitude of the decoy at the mirrored part's true position.
    clutter_amp : float
        Upper bound of the random decoy's amplitude.
    noise : float
        Standard deviation of the per-cell noise.
    """

    peak_amp: float = 1.0
    weak_amp: float = 0.35
    p_weak: float = 0.15
    jitter: float = 0.7
    sigma: float = 1.0
    mirror_amp: float = 0.7
    clutter_amp: float = 0.8
    noise: float = 0.25

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
                raise ValueError(f"ScoreMapSpec.{f.name} must be a finite number >= 0, got {v!r}")
        if self.p_weak > 1:
            raise ValueError(f"ScoreMapSpec.p_weak must lie in [0, 1], got {self.p_weak!r}")
        if self.sigma <= 0:
            raise ValueError(f"ScoreMapSpec.sigma must be > 0, got {self.sigma!r}")


def draw_bumps(data):
    """Bump centres and amplitudes of every node's score map (peak, mirror decoy, clutter) of a
    :class:`~gaplab.core.datasets.lsp.PoseData` (its ``spec``, ``G``, ``seed``, ``img_id``,
    ``pos``, ``occluded`` and ``mirror``): float64 (n, N, 3, 2) cells (x, y) and float64
    (n, N, 3)."""
    sp, G = data.spec, data.G
    n, N = data.pos.shape[:2]
    unit = G / 32.0
    bpos = np.zeros((n, N, 3, 2))
    bamp = np.zeros((n, N, 3))
    for k in range(n):
        rng = np.random.default_rng([int(data.seed), int(data.img_id[k])])
        jit = rng.normal(0.0, sp.jitter * unit, size=(N, 2))
        weak = rng.random(N) < sp.p_weak
        clutter = rng.random((N, 2)) * (G - 1)
        camp = rng.random(N) * sp.clutter_amp
        bpos[k, :, 0] = np.clip(data.pos[k] + jit, 0, G - 1)
        bamp[k, :, 0] = sp.peak_amp * np.where(weak | data.occluded[k], sp.weak_amp, 1.0)
        for p in range(N):
            m = data.mirror[p]
            if m >= 0:
                bpos[k, p, 1] = data.pos[k, m]
                bamp[k, p, 1] = sp.mirror_amp
        bpos[k, :, 2] = clutter
        bamp[k, :, 2] = camp
    return bpos, bamp


# ---------------------------------------------------------------------------- compiled generator
@njit(cache=True, nogil=True, inline="always")
def _mix(z):
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    return z ^ (z >> uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _map_key(M, i, p):
    a = _mix(uint64(M.seed) * _GOLD + uint64(0x5DEECE66D))
    b = _mix(uint64(M.img_id[i]) * uint64(0xD1B54A32D192ED03) + uint64(p) + uint64(1))
    return _mix(a ^ b)


@njit(cache=True, nogil=True, inline="always")
def _noise(key, cell):
    z = _mix(key + uint64(cell + 1) * _GOLD)
    s = float(z & uint64(0xFFFF)) + float((z >> uint64(16)) & uint64(0xFFFF)) \
        + float((z >> uint64(32)) & uint64(0xFFFF)) + float(z >> uint64(48))
    return ((s + 2.0) / 65536.0 - 2.0) * 1.7320508075688772  # Irwin-Hall(4), mean 0, variance 1


@njit(cache=True, nogil=True, inline="always")
def _bump(M, i, p, k, x, y):
    """Bump k of node p's map at cell (x, y) (0 outside its window of radius 4σ)."""
    b = (i * M.N + p) * 3 + k
    amp = M.bump_amp[b]
    if amp == 0.0:
        return 0.0
    dx = x - M.bump_pos[2 * b]
    dy = y - M.bump_pos[2 * b + 1]
    r2 = dx * dx + dy * dy
    s = M.sigma
    if r2 > 16.0 * s * s:
        return 0.0
    return amp * np.exp(-r2 / (2.0 * s * s))


@njit(cache=True, nogil=True)
def pose_unary_value(M, i, p, cell):
    """φ_p(cell) of image i: the generated part-score map of node p at one cell (index
    row·G + col); bit-identical to :func:`pose_score_map` at that cell."""
    G = M.G
    x = cell % G
    y = cell // G
    v = M.noise * _noise(_map_key(M, i, p), cell)
    for k in range(3):
        v += _bump(M, i, p, k, x, y)
    return v


@njit(cache=True, nogil=True)
def pose_score_map(M, i, p, out):
    """Fill out[:G²] with node p's part-score map φ_p of image i (row-major, float64)."""
    G = M.G
    key = _map_key(M, i, p)
    nz = M.noise
    for c in range(G * G):
        out[c] = nz * _noise(key, c)
    s = M.sigma
    rad = 4.0 * s
    for k in range(3):
        b = (i * M.N + p) * 3 + k
        if M.bump_amp[b] == 0.0:
            continue
        cx = M.bump_pos[2 * b]
        cy = M.bump_pos[2 * b + 1]
        x0 = max(0, int(np.floor(cx - rad)))
        x1 = min(G - 1, int(np.ceil(cx + rad)))
        y0 = max(0, int(np.floor(cy - rad)))
        y1 = min(G - 1, int(np.ceil(cy + rad)))
        for y in range(y0, y1 + 1):
            for x in range(x0, x1 + 1):
                out[y * G + x] += _bump(M, i, p, k, x, y)
