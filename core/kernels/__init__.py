"""numba kernels of the solver core, one concern per module.

=============  ==============================================================================
module         what lives there
=============  ==============================================================================
``registry``   model kinds: the primitives and fields a kind provides, their argument names,
               :func:`register_model_kind`, :func:`model_kind_name`, :class:`primitive_errors`
``dispatch``   the ``_m_<primitive>`` stubs resolved at compile time to a kind's primitive
               (``numba.extending.overload``), made from the registry's signature table
               with the optional primitives' defaults, and their Python-callable forms
               (:func:`block_scores`, :func:`label_dot`, :func:`block_axpy`, ...)
``layout``     the state layout: counter, scalar, config and log indices, sampling / step
               codes, step-record kinds and flags, :class:`StateArrays`
``atoms``      atoms of the active set and the cache: find, insert (LRU), remove, trim, purge,
               resync of μ_i and ℓ_i (Paper: Alg. 3-5)
``samplers``   block samplers and the gap-sampling sum tree (Paper: Alg. 1 line 3, Alg. 2)
``phases``     the phases of one block step, each citing its lines of Alg. 1, 3, 4, 5
``step``       the block-step drivers: :func:`run_steps` (compiled oracle, one fused loop),
               :func:`pre_step` / :func:`post_step` (Python oracle tier), :func:`sample_block`
``gaps``       exact gap passes (Paper: Alg. 2, "update global gap") and one block's exact gap
``batch``      kernels that move every block at once: :func:`batch_fw_step` (Alg. 8),
               :func:`recompute_primal`, :func:`set_vertices` (Alg. 6), :func:`rescale_to_gt_from`
               (Prop. 1)
=============  ==============================================================================

Every name other modules use is re-exported here (``from gaplab.core import kernels as kr``;
``kr.run_steps``, ``kr.C_HIT``, ...).

Representation (see DESIGN.md, Paper App. G): a block's dual point α_i only enters w through its
*statistics* μ_i = Σ_y α_i(y) m(y), where m(y) is the statistics of a labelling y chosen by the
model (for a chain: one-hot node marginals (T, K) and transition counts (K, K); for the
multiclass model: the one-hot vector of the label). The joint feature map is linear in them,
ψ(x_i, y) = B_i m(y), so

    w = (1/(λn)) Σ_i B_i (m(y_i) − μ_i),        ℓ_i = (1/n) Σ_y α_i(y) L_i(y),

and every quantity of a block step is a cheap function of a "score vector" h_i(w) in statistics
space (⟨m(y), h_i⟩ = ⟨w, ψ(x_i, y)⟩ + L_i(y)), of ‖B_i δ‖² and of an axpy w += c B_i δ. Each
model kind provides these as numba primitives (see :mod:`.registry`); the shared kernels get one
specialization per model kind. All state lives in plain arrays (see gaplab.core.state).
"""
from __future__ import annotations

from .registry import (REQUIRED_PRIMITIVES, OPTIONAL_PRIMITIVES, REQUIRED_FIELDS,
                       register_model_kind, model_kind_name, primitive_errors,
                       has_compiled_oracle)
from .dispatch import (block_scores, block_oracle, label_dot, label_add, label_loss, gt_label, block_sqnorm,
                       block_axpy)
from .layout import (C_ITER, C_ORACLE, C_HIT, C_FW, C_AWAY, C_PAIR, C_DROP, C_GAPPASS, C_PERM_POS,
                     C_UNVISITED, C_LOG_POS, C_GROW, C_LAST_CHECK, C_PURGE, C_STEP_ORACLE, C_BATCH,
                     C_DIAG_ORACLE, C_SAMPLER_ORACLE, N_COUNTERS, S_ELL, S_GLOBAL_GAP, S_LAST_PRIMAL,
                     S_GAP_REF, N_SCALARS, I_SAMPLING, I_STEP, I_CACHE, I_CACHE_SIZE, I_TRACK, I_BOX,
                     N_CFG_I, F_LAM, F_P, F_CACHE_F, F_CACHE_NU, F_DROP_TOL, N_CFG_F, SAMPLE_UNIFORM,
                     SAMPLE_PERM, SAMPLE_GAP, SAMPLE_MAXGAP, SAMPLE_WEIGHTS, SAMPLE_EXACT_GAP, STEP_FW,
                     STEP_PAIRWISE, STEP_AWAY, STEP_COMBINED, KIND_FW, KIND_AWAY, KIND_PAIRWISE, KIND_NONE,
                     FLAG_HIT, FLAG_DROP, FLAG_ORACLE, L_ITER, L_BLOCK, L_KIND, L_FLAGS, L_GAMMA,
                     L_GAMMA_MAX, L_GAP, L_CORNER_GAP, L_IMPROVE, L_ACTIVE, N_LOG, StateArrays)
from .atoms import (label_hash, atom_base, atom_find, atom_remove, atom_insert, atom_insert_arr, atoms_trim,
                    pool_full, resync_block, purge_small)
from .samplers import (tree_update_arr, tree_rebuild_arr, tree_rebuild, mark_visited_arr, mark_visited,
                       set_block_gap_arr)
from .phases import (cache_hit_rule, phase_prefetch, phase_score, phase_scan_label_space, phase_scan_dense,
                     phase_cache_lookup, phase_fw_corner, phase_away_corner, phase_candidates, phase_apply,
                     phase_log)
from .step import (sample_block, run_steps, pre_step, post_step)
from .gaps import (gap_pass_blocks, gap_pass_finish, exact_gap_pass, block_gap_now, gap_block_given_corner,
                   exact_gap_pass_python)
from .batch import (batch_fw_step, recompute_primal, set_vertices, rescale_to_gt_from)
# private names the model modules and the tests use
from .dispatch import _clip  # noqa: F401
from .registry import _KINDS  # noqa: F401

__all__ = [
    "REQUIRED_PRIMITIVES", "OPTIONAL_PRIMITIVES", "REQUIRED_FIELDS", "register_model_kind",
    "model_kind_name", "primitive_errors", "has_compiled_oracle", "block_scores", "block_oracle",
    "label_dot", "label_add", "label_loss", "gt_label", "block_sqnorm", "block_axpy", "C_ITER", "C_ORACLE",
    "C_HIT", "C_FW", "C_AWAY", "C_PAIR", "C_DROP", "C_GAPPASS", "C_PERM_POS", "C_UNVISITED", "C_LOG_POS",
    "C_GROW", "C_LAST_CHECK", "C_PURGE", "C_STEP_ORACLE", "C_BATCH", "C_DIAG_ORACLE", "C_SAMPLER_ORACLE",
    "N_COUNTERS", "S_ELL", "S_GLOBAL_GAP", "S_LAST_PRIMAL", "S_GAP_REF", "N_SCALARS", "I_SAMPLING", "I_STEP",
    "I_CACHE", "I_CACHE_SIZE", "I_TRACK", "I_BOX", "N_CFG_I", "F_LAM", "F_P", "F_CACHE_F", "F_CACHE_NU",
    "F_DROP_TOL", "N_CFG_F", "SAMPLE_UNIFORM", "SAMPLE_PERM", "SAMPLE_GAP", "SAMPLE_MAXGAP",
    "SAMPLE_WEIGHTS", "SAMPLE_EXACT_GAP", "STEP_FW", "STEP_PAIRWISE", "STEP_AWAY", "STEP_COMBINED",
    "KIND_FW", "KIND_AWAY", "KIND_PAIRWISE", "KIND_NONE", "FLAG_HIT", "FLAG_DROP", "FLAG_ORACLE", "L_ITER",
    "L_BLOCK", "L_KIND", "L_FLAGS", "L_GAMMA", "L_GAMMA_MAX", "L_GAP", "L_CORNER_GAP", "L_IMPROVE",
    "L_ACTIVE", "N_LOG", "StateArrays", "label_hash", "atom_base", "atom_find", "atom_remove", "atom_insert",
    "atom_insert_arr", "atoms_trim", "pool_full", "resync_block", "purge_small", "tree_update_arr",
    "tree_rebuild_arr", "tree_rebuild", "mark_visited_arr", "mark_visited", "set_block_gap_arr",
    "cache_hit_rule", "phase_prefetch", "phase_score", "phase_scan_label_space", "phase_scan_dense",
    "phase_cache_lookup", "phase_fw_corner", "phase_away_corner", "phase_candidates", "phase_apply",
    "phase_log", "sample_block", "run_steps", "pre_step", "post_step", "gap_pass_blocks", "gap_pass_finish",
    "exact_gap_pass", "block_gap_now", "gap_block_given_corner", "exact_gap_pass_python", "batch_fw_step",
    "recompute_primal", "set_vertices", "rescale_to_gt_from",
]
