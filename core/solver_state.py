"""Copies and warm starts of a :class:`~gaplab.core.solver.Solver` (:class:`SolverState`, a
base class of it: ``copy``, ``warm_start`` at a new λ keeping the primal or the dual point,
``set_vertices``, ``recompute_primal``), and the checks of the arrays a Solver is built with
(box bounds, sampling weights)."""
from __future__ import annotations

import numpy as np

from . import kernels as kr
from .config import Sampling, Status
from .state import config_arrays, copy_state, grow_atoms, state_nbytes

__all__ = ["SolverState", "check_bounds", "check_sampling_weights"]


def check_bounds(lb, ub, d):
    """The box constraints on w (Paper: App. H) as float64 arrays of shape (d,), ±inf where a
    side is open; (None, None) when neither is given.

    Raises
    ------
    ValueError
        A bound of another shape than (d,), NaN, lb > ub on a coordinate, lb = +inf or ub = -inf.
    """
    if lb is None and ub is None:
        return None, None
    lb = np.full(d, -np.inf) if lb is None else np.asarray(lb, dtype=np.float64)
    ub = np.full(d, np.inf) if ub is None else np.asarray(ub, dtype=np.float64)
    if lb.shape != (d,):
        raise ValueError(f"lower bound lb must have shape ({d},), got {lb.shape}")
    if ub.shape != (d,):
        raise ValueError(f"upper bound ub must have shape ({d},), got {ub.shape}")
    if np.isnan(lb).any() or np.isnan(ub).any():
        raise ValueError("box bounds lb/ub contain NaN")
    if np.any(lb > ub):
        j = int(np.flatnonzero(lb > ub)[0])
        raise ValueError(f"box bounds need lb <= ub; coordinate {j} has lb={lb[j]} > ub={ub[j]}")
    if np.any(lb == np.inf) or np.any(ub == -np.inf):
        raise ValueError("box bounds need lb < +inf and ub > -inf")
    return lb, ub


def check_sampling_weights(sampling, sampling_weights, n):
    """The fixed sampling weights as float64 of shape (n,), required by (and only used with)
    ``sampling="weights"``; None for the other samplers. ValueError on a bad shape or value."""
    if sampling == Sampling.WEIGHTS:
        if sampling_weights is None:
            raise ValueError("sampling='weights' needs sampling_weights (shape (n,))")
        sampling_weights = np.asarray(sampling_weights, dtype=np.float64)
        if sampling_weights.shape != (n,):
            raise ValueError(f"sampling_weights must have shape ({n},), got {sampling_weights.shape}")
        if not np.all(np.isfinite(sampling_weights)) or np.any(sampling_weights < 0) or sampling_weights.sum() <= 0:
            raise ValueError("sampling_weights must be finite, >= 0 and not all 0")
    elif sampling_weights is not None:
        raise ValueError("sampling_weights is only used with sampling='weights'")
    return sampling_weights


class SolverState:
    """Copies and warm starts of a Solver (a base class of :class:`~gaplab.core.solver.Solver`)."""

    def copy(self):
        """An independent copy (state, RNG, counters and trace)."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other.S = copy_state(self.S)
        other._trace = [dict(r) for r in self._trace]
        other._trace_ids = list(self._trace_ids)
        other._ci, other._cf = self._ci.copy(), self._cf.copy()
        return other

    def warm_start(self, lam: float, *, keep: str = "primal"):
        """A new solver at regularization ``lam`` started from this solver's point.

        keep="dual": same α, w scaled by λ_old/λ (the authors' warm start on the dual).
        keep="primal": same w; α moved towards the ground truth, α(y) ← ρα(y) for y ≠ y_i with
        ρ = λ/λ_old (Paper: Proposition 1); needs λ <= λ_old and tracked atoms or FW steps.
        Counters and trace start from zero; gap estimates are kept (stale) and g^(k_0) reset.
        """
        if keep not in ("primal", "dual"):
            raise ValueError(f"keep must be 'primal' or 'dual', got {keep!r}")
        new_cfg = self.config.replace(lam=lam)
        other = self.copy()
        other.config = new_cfg
        other._ci, other._cf = config_arrays(new_cfg, bool(self._ci[kr.I_BOX]), self.track)
        S = other.S
        ratio = self.lam / new_cfg.lam
        if keep == "dual":
            S.v[:] *= ratio
            if S.w is not S.v:
                np.clip(S.v, S.lb, S.ub, out=S.w)
        else:
            rho = new_cfg.lam / self.lam
            if rho > 1:
                raise ValueError(f"keep='primal' needs lam <= {self.lam} (the current λ), got {lam}")
            _rescale_to_gt(other, rho)
        S.counters[:] = 0
        S.counters[kr.C_UNVISITED] = int(np.sum(S.gap_iter < 0))
        S.counters[kr.C_LAST_CHECK] = -1
        S.gap_iter[S.gap_iter >= 0] = 0
        S.scalars[kr.S_GLOBAL_GAP] = np.inf
        other.wall_time = 0.0
        other.compile_time = 0.0
        other.passes_since_check = 0
        other._trace = []
        other._trace_ids = []
        other._n_records = 0
        other._last_exact = None
        other._last_exact_iter = -1
        other.status = Status.RUNNING
        if new_cfg.sampling in (Sampling.GAP, Sampling.EXACT_GAP, Sampling.WEIGHTS):
            kr.tree_rebuild(S, other._cf, other.n)
        return other

    def set_vertices(self, labels) -> None:
        """Move every block to the corner α_i = e_{y~_i} of its simplex and recompute w.

        Parameters
        ----------
        labels : list of int arrays
            ``labels[i]`` is the labelling y~_i of block i (shape (T_i,) for chains, (1,) for
            multiclass), each label in range. Paper: Alg. 6 (α^∞ of the regularization path).
        """
        M = self._M
        if len(labels) != self.n:
            raise ValueError(f"labels must hold {self.n} labellings, got {len(labels)}")
        flat = []
        for i, y in enumerate(labels):
            if callable(getattr(type(self.model), "check_labelling", None)):  # the model's own labellings
                flat.append(self.model.check_labelling(i, y, f"labels[{i}]"))
                continue
            y = np.asarray(y, dtype=np.int64).ravel()
            L = int(M.lab_off[i + 1] - M.lab_off[i])
            if y.shape != (L,):
                raise ValueError(f"labels[{i}] must have shape ({L},), got {y.shape}")
            hi = int(self.model.n_labels(i))
            if y.size and (y.min() < 0 or y.max() >= hi):
                raise ValueError(f"labels[{i}] must lie in [0, {hi}), got {y.tolist()}")
            flat.append(y)
        kr.set_vertices(M, self.S, self._ci, self._cf, np.concatenate(flat))
        self._last_exact = None
        self._last_exact_iter = -1

    def recompute_primal(self) -> None:
        """Recompute w = Aα from the block statistics (removes accumulated round-off)."""
        kr.recompute_primal(self._M, self.S, self._ci, self._cf)

    def memory_bytes(self) -> int:
        return state_nbytes(self.S)


def _rescale_to_gt(solver, rho: float):
    """α(y) ← ρ α(y) for y ≠ y_i, the rest on y_i (w unchanged; Paper: Prop. 1). Grows the atom
    pools when a block has no room for its ground-truth atom, and keeps a free slot after."""
    done_upto = 0
    while True:
        # the kernel stops at the first full block, before touching it; blocks before it are done
        sub = kr.rescale_to_gt_from(solver._M, solver.S, solver._ci, rho, done_upto)
        if sub < 0:
            break
        solver.S = grow_atoms(solver._M, solver.S)
        done_upto = sub
    if solver.S.counters[kr.C_GROW]:
        solver.S = grow_atoms(solver._M, solver.S, cache_size=solver._cache_slots())
