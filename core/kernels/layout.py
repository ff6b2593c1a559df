"""Layout of the solver state: the indices of the counters, scalars and configuration arrays,
the sampling / step codes, the step-record kinds and flags, the ring log's columns and the
:class:`StateArrays` namedtuple every kernel reads and writes (built by ``gaplab.core.state``).
"""
from __future__ import annotations

from collections import namedtuple

from ..config import Sampling, StepKind


# counters (int64)
C_ITER = 0          # block steps done (iterations k)
C_ORACLE = 1        # max-oracle calls, gap passes included
C_HIT = 2           # cache hits
C_FW = 3            # FW steps
C_AWAY = 4          # away steps
C_PAIR = 5          # pairwise steps
C_DROP = 6          # drop steps (an away corner's mass reached 0)
C_GAPPASS = 7       # exact gap passes done
C_PERM_POS = 8      # position in the current permutation (permutation sampler)
C_UNVISITED = 9     # number of blocks whose gap was never computed
C_LOG_POS = 10      # number of step records written to the ring log
C_GROW = 11         # 1 when a block's atom pool is full and must grow before the next step
C_LAST_CHECK = 12   # iteration k_0 of the last exact gap pass (-1: none)
C_PURGE = 13        # atoms purged for α <= drop_tol
C_STEP_ORACLE = 14  # oracle calls made by block steps
C_BATCH = 15        # batch FW steps taken
C_DIAG_ORACLE = 16  # diagnostic oracle calls (app: gap after a step), not counted as work
C_SAMPLER_ORACLE = 17  # oracle calls of the idealized exact-gap sampler (reported separately)
N_COUNTERS = 24

# scalars (float64)
S_ELL = 0           # ℓ = Σ ℓ_i
S_GLOBAL_GAP = 1    # g^(k_0): exact duality gap of the last gap pass (inf before any)
S_LAST_PRIMAL = 2   # primal objective at the last gap pass
S_GAP_REF = 3       # gap sampling with p != 1: leaf weights are (g_i / S_GAP_REF)^p (no under/overflow)
N_SCALARS = 8

# int config
I_SAMPLING = 0
I_STEP = 1
I_CACHE = 2
I_CACHE_SIZE = 3
I_TRACK = 4
I_BOX = 5
N_CFG_I = 8
# float config
F_LAM = 0
F_P = 1
F_CACHE_F = 2
F_CACHE_NU = 3
F_DROP_TOL = 4
N_CFG_F = 8

# sampling / step codes: the values of the config enums (named once, in gaplab.core.config)
SAMPLE_UNIFORM = int(Sampling.UNIFORM)
SAMPLE_PERM = int(Sampling.PERMUTATION)
SAMPLE_GAP = int(Sampling.GAP)
SAMPLE_MAXGAP = int(Sampling.MAXGAP)
SAMPLE_WEIGHTS = int(Sampling.WEIGHTS)
SAMPLE_EXACT_GAP = int(Sampling.EXACT_GAP)
STEP_FW = int(StepKind.FW)
STEP_PAIRWISE = int(StepKind.PAIRWISE)
STEP_AWAY = int(StepKind.AWAY)
STEP_COMBINED = int(StepKind.COMBINED)
# step record kinds
KIND_FW, KIND_AWAY, KIND_PAIRWISE, KIND_NONE = 0, 1, 2, 3
FLAG_HIT, FLAG_DROP, FLAG_ORACLE = 1, 2, 4

# log columns (float64 ring log, one row per step)
L_ITER, L_BLOCK, L_KIND, L_FLAGS, L_GAMMA, L_GAMMA_MAX, L_GAP, L_CORNER_GAP, L_IMPROVE, L_ACTIVE = range(10)
N_LOG = 10

StateArrays = namedtuple(
    "StateArrays",
    [
        "w", "v", "lb", "ub",      # primal w = clip(v) (w is v when there is no box)
        "mu", "ell",               # block statistics and block losses ℓ_i
        "gap_est", "gap_iter", "gap_exact",
        "tree", "unv", "unv_pos", "perm", "rng",
        "counters", "scalars",
        "a_lab", "a_alpha", "a_loss", "a_hash", "a_used", "a_count",
        "h", "dlt", "tmp", "ybuf", "yaway", "vit_f", "vit_i", "zbuf",
        "log", "last_fw", "last_away", "batch_lab",
        "weights",                 # fixed sampling weights (curvature / Lipschitz samplers)
        "mark",                    # int8 work mask over a block's statistics (cache-hit scoring)
        "step_i", "step_f",        # a step's locals between the pre- and post-oracle kernels (Python oracle tier)
    ],
)
