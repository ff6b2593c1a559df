""":func:`check_model`: a model's primitives, max oracle and decoding against its own dense
``joint_feature`` and ``loss``, where the loss decides the max oracle's answer.

A max oracle that forgets the loss, or uses another loss than ``loss()`` (a sum- instead of a
mean-Hamming loss), gives the same answer as a correct one wherever ⟨w, ψ⟩ outweighs the loss:
at a random w of unit scale the scores are in the tens and the loss never changes the argmax.
So the oracle is checked along rays t·w through 0: at w = 0 (the answer must be a labelling of
maximal loss among those tried), at t in (1e-3, 1e-1, 1), and at three multiples of the scale
t* where the loss and ⟨t·w, ψ(y) − ψ(y_i)⟩ are of the same size (their medians over the
labellings tried), for several random directions w. At each point its labelling's dense score
L_i(y) + ⟨w, ψ(x_i, y) − ψ(x_i, y_i)⟩ must be at least that of every labelling tried: all of them
when the block's label space is small (brute force), else the ground truth, random labellings
(``model.random_labelling``), and the oracle's and ``decode``'s answers at every other point.
Paper: Eq. (2) (the max oracle), App. G (statistics).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from .protocol import ModelCheckError, StructuredModel, check_interface, check_labelling

__all__ = ["check_model", "ModelCheckReport", "ModelCheckWarning", "SCALES", "show_labelling"]

#: The fixed multiples t of each random direction w at which the max oracle is checked (w = 0 too).
SCALES = (1e-3, 1e-1, 1.0)
#: Multiples of the loss-decisive scale t* checked besides :data:`SCALES`.
DECISIVE = (1.0 / 3.0, 1.0, 3.0)


class ModelCheckWarning(UserWarning):
    """:func:`check_model` could not check the max oracle against other labellings of a block
    (no ``n_labels``: the label space can be neither enumerated nor sampled)."""


@dataclass
class ModelCheckReport:
    """What :func:`check_model` tried and found (``str(report)`` is what ``gaplab check`` prints).

    Attributes
    ----------
    model : str
    blocks : list of int
        The blocks checked.
    directions : int
        Random directions w per block; the oracle is checked at w = 0 and at t·w.
    points : int
        Points w (per block) at which the max oracle was compared with the labellings tried.
    labellings : int
        Distinct labellings scored, summed over the blocks (enumerated, sampled, oracle answers).
    enumerated, sampled : list of int
        Blocks whose every labelling was tried (brute force), blocks checked on sampled labellings.
    unchecked : list of int
        Blocks whose label space could be neither enumerated nor sampled (``n_labels`` missing).
    worst_violation : float
        The most a labelling tried scored above the max oracle's labelling (L + ⟨w, ψ⟩, relative
        to y_i), over every block and point; 0 when the oracle was never beaten.
    worst : str
        Where that was (block, point, labellings), "" when never.
    warnings : list of str
    """

    model: str
    blocks: list
    directions: int
    points: int = 0
    labellings: int = 0
    enumerated: list = field(default_factory=list)
    sampled: list = field(default_factory=list)
    unchecked: list = field(default_factory=list)
    worst_violation: float = 0.0
    worst: str = ""
    warnings: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No labelling tried beat the max oracle's (within the tolerance) and nothing unchecked."""
        return not self.worst and not self.unchecked

    def __str__(self) -> str:
        lines = [f"check_model: model {self.model!r}: {len(self.blocks)} blocks {self.blocks}, "
                 f"{self.directions} random directions w, {self.points} points per block "
                 f"(w = 0, t·w for t in {', '.join(f'{t:g}' for t in SCALES)} and 3 loss-decisive t)",
                 f"  labellings scored      {self.labellings} "
                 f"(all of blocks {self.enumerated or '-'}; sampled on blocks {self.sampled or '-'})",
                 f"  worst violation        {self.worst_violation:.3g}"
                 + (f" ({self.worst})" if self.worst else " (the max oracle was never beaten)")]
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def show_labelling(model, i: int, y) -> list:
    """The labelling y of block i as a user wrote it (a plain-Python model's own labels, not the
    encoded one), as a list for messages."""
    labels = getattr(model, "labels", None)
    y = labels(i, y) if callable(labels) else np.asarray(y)
    return np.asarray(y).tolist()


def check_model(model, *, blocks: int = 3, labellings: int = 64, enumerate_up_to: int = 256,
                directions: int = 3, seed: int = 0, rtol: float = 1e-9) -> ModelCheckReport:
    """Check a model (numba or plain Python) against its own ``joint_feature`` and ``loss``.

    After :func:`~gaplab.core.models.protocol.check_interface`, on up to ``blocks`` blocks (the
    first, the last and random ones), with the ground truth, ``labellings`` random labellings
    (``model.random_labelling``) and, when a block has at most ``enumerate_up_to`` labellings
    (``model.all_labellings``), every labelling:

    * L_i(y_i) = 0 and L_i(y) >= 0; the kernels' loss equals ``loss(i, y)``;
    * scores: the statistics-space score differences ⟨m(y) − m(y_i), h_i(w)⟩ equal
      L_i(y) + ⟨w, ψ(x_i, y) − ψ(x_i, y_i)⟩ (Paper: Eq. (2), App. G), and the max oracle's
      reported value is its labelling's score;
    * ‖B_i (m(y) − m(y_i))‖² = ‖ψ(x_i, y) − ψ(x_i, y_i)‖² and v += c B_i δ adds c (ψ(x_i, y) −
      ψ(x_i, y_i)) (the ``sqnorm`` and ``axpy`` primitives);
    * where the loss decides (see the module docstring: w = 0, t·w for t in :data:`SCALES` and at
      the loss-decisive scale, for ``directions`` random w), the max oracle's labelling scores
      L + ⟨w, ψ⟩ at least as much as every labelling tried, and ``decode``'s scores ⟨w, ψ⟩ at
      least as much;
    * ``predict(w)`` and ``error(w)`` run, and the error is a finite number >= 0.

    Parameters
    ----------
    model : StructuredModel
    blocks, labellings, enumerate_up_to, directions : int
        How much to try (the cost is O(blocks · (labellings + enumerated) · d) plus
        about 14·directions oracle and decode calls per block and one ``predict``).
    seed : int
        Seed of the random directions, blocks and labellings.
    rtol : float
        Relative tolerance of the comparisons (scaled by 1 + the magnitude of the values).

    Returns
    -------
    ModelCheckReport
        What was tried; a block whose label space can be neither enumerated nor sampled (a
        plain-Python model without ``n_labels``) is listed in ``unchecked`` and warned about
        (:class:`ModelCheckWarning`): its oracle was compared with its own answers only.

    Raises
    ------
    TypeError
        The interface is incomplete.
    ModelCheckError
        A check failed; the message names the model, the block, the point w, the labellings and
        the numbers; ``exc.report`` is the report so far.
    """
    check_interface(model)
    name = getattr(model, "name", None) or type(model).__name__
    rng = np.random.default_rng(seed)
    n, d = int(model.n), int(model.d)
    picks = sorted({0, n - 1, *rng.integers(0, n, size=max(0, blocks - 2)).tolist()})[:max(1, blocks)]
    report = ModelCheckReport(model=name, blocks=picks, directions=max(1, int(directions)))
    dirs = [_clip(model, rng.normal(size=d)) for _ in range(report.directions)]
    for i in picks:
        _BlockCheck(model, name, i, dirs, rng, rtol, report).run(labellings, enumerate_up_to)
    if report.worst:
        exc = ModelCheckError(f"check_model: model {name!r}, {report.worst}")
        exc.report = report
        raise exc
    if report.unchecked:
        msg = (f"model {name!r}: the label space of blocks {report.unchecked} can be neither enumerated nor "
               "sampled (n_labels is 0 or missing), so the max oracle was compared with its own answers only; "
               "give the model n_labels (labels per entry) to check it where the loss decides")
        report.warnings.append(msg)
        warnings.warn(msg, ModelCheckWarning, stacklevel=2)
    try:
        model.predict(dirs[0])
        err = float(model.error(dirs[0]))
    except NotImplementedError as exc:
        raise ModelCheckError(f"check_model: model {name!r}: predict and error must be implemented ({exc})") from None
    if not (np.isfinite(err) and err >= 0):
        raise ModelCheckError(f"check_model: model {name!r}: error(w) must be a finite number >= 0, got {err!r}")
    return report


def _clip(model, w):
    b = model.bounds()
    return np.clip(w, b[0], b[1]) if b is not None else w


class _BlockCheck:
    """:func:`check_model` on block i: the labellings tried, their dense loss and ψ − ψ(y_i),
    the primitives at the first direction, then the max oracle and ``decode`` at every point."""

    def __init__(self, model, name, i, dirs, rng, rtol, report):
        self.model, self.name, self.i, self.dirs, self.rng = model, name, i, dirs, rng
        self.rtol, self.report = rtol, report
        self.ys, self.loss, self.dpsi, self.seen = [], [], [], set()

    def fail(self, what):
        raise ModelCheckError(f"check_model: model {self.name!r}, block {self.i}: {what}")

    def close(self, a, b):
        return abs(a - b) <= self.rtol * (1.0 + abs(a) + abs(b))

    def add(self, y, what):
        """Validate y, and score it once (loss, ψ(y) − ψ(y_i)); returns its index."""
        y = check_labelling(self.model, self.i, y, what)
        key = y.tobytes()
        if key in self.seen:
            return None
        self.seen.add(key)
        loss = float(self.model.loss(self.i, y))
        psi = np.asarray(self.model.joint_feature(self.i, y), dtype=np.float64)
        if psi.shape != self.psi_gt.shape:
            self.fail(f"joint_feature must return shape {self.psi_gt.shape}, got {psi.shape}")
        if not (math.isfinite(loss) and loss >= 0):
            self.fail(f"loss must be a finite number >= 0, got {loss!r} (labelling {show_labelling(self.model, self.i, y)})")
        self.ys.append(y)
        self.loss.append(loss)
        self.dpsi.append(psi - self.psi_gt)
        return len(self.ys) - 1

    def run(self, labellings, enumerate_up_to):
        model, i, rep = self.model, self.i, self.report
        gt = check_labelling(model, i, model.ground_truth(i), "ground truth")
        if not self.close(float(model.loss(i, gt)), 0.0):
            self.fail(f"loss(i, ground truth) must be 0, got {model.loss(i, gt)!r}")
        self.psi_gt = np.asarray(model.joint_feature(i, gt), dtype=np.float64)
        if self.psi_gt.shape != (int(model.d),):
            self.fail(f"joint_feature must return shape ({int(model.d)},), got {self.psi_gt.shape}")
        self.add(gt, "ground truth")
        rand = getattr(model, "random_labelling", None) or (lambda i, r: StructuredModel.random_labelling(model, i, r))
        enum = getattr(model, "all_labellings", None) or (lambda i, k: StructuredModel.all_labellings(model, i, k))
        every = enum(i, enumerate_up_to) if _samplable(model, i) else None
        if every:
            rep.enumerated.append(i)
            for y in every:
                self.add(y, "enumerated labelling")
        elif _samplable(model, i):
            rep.sampled.append(i)
            for _ in range(labellings):
                self.add(rand(i, self.rng), "random labelling")
        else:
            rep.unchecked.append(i)
        for j in range(len(self.ys)):
            self._primitives(j, self.dirs[0])
        points = self._points()
        answers = [self._answer(w, label) for w, label in points]
        rep.points = len(points)
        rep.labellings += len(self.ys)
        for (w, label), (ja, jd, value) in zip(points, answers):
            self._judge(w, label, ja, jd, value)

    def _points(self):
        """(w, label) of every point: w = 0, then per direction t·w for t in SCALES and in
        DECISIVE·t*, t* = median loss / median abs(⟨w, ψ(y) − ψ(y_i)⟩) over the labellings tried."""
        pts = [(_clip(self.model, np.zeros(int(self.model.d))), "w = 0")]
        L = np.array(self.loss)
        for k, w in enumerate(self.dirs):
            s = np.abs(np.array([float(w @ dp) for dp in self.dpsi]))
            ts = list(SCALES)
            if (L > 0).any() and (s > 0).any():
                t_star = float(np.median(L[L > 0]) / np.median(s[s > 0]))
                ts += [c * t_star for c in DECISIVE]
            pts += [(_clip(self.model, t * w), f"{t:.3g}·w{k}") for t in ts]
        return pts

    def _answer(self, w, label):
        """The max oracle's and decode's labellings at w (added to the labellings tried) and the
        oracle's reported value relative to y_i, checked against its dense score."""
        from . import max_oracle
        y_aug, v_aug = max_oracle(self.model, self.i, w)
        y_dec, _ = max_oracle(self.model, self.i, w, loss_augmented=False)
        ja = self._index(y_aug, "max oracle's labelling")
        jd = self._index(y_dec, "decode's labelling")
        from . import label_score
        s_gt = label_score(self.model, self.i, w, self.ys[0], loss_augmented=True)
        dense = self.loss[ja] + float(w @ self.dpsi[ja])
        if not self.close(v_aug - s_gt, dense):
            self.fail(f"at {label}, the max oracle reports {v_aug - s_gt!r} (relative to y_i) but its labelling "
                      f"scores {dense!r}")
        return ja, jd, dense

    def _index(self, y, what):
        j = self.add(y, what)
        if j is None:
            key = check_labelling(self.model, self.i, y, what).tobytes()
            j = next(k for k, z in enumerate(self.ys) if z.tobytes() == key)
        else:
            self._primitives(j, self.dirs[0])
        return j

    def _judge(self, w, label, ja, jd, own):
        """Record by how much the best labelling tried beats the oracle's at w (and fail on decode)."""
        L = np.array(self.loss)
        plain = np.array([float(w @ dp) for dp in self.dpsi])
        aug = L + plain
        b = int(np.argmax(aug))
        if aug[b] > own and not self.close(aug[b], own):
            rep = self.report
            if aug[b] - own > rep.worst_violation:
                rep.worst_violation = float(aug[b] - own)
                rep.worst = (f"block {self.i}: the max oracle's labelling at {label}, "
                             f"{show_labelling(self.model, self.i, self.ys[ja])} scores {own:.6g} (loss "
                             f"{L[ja]:.4g}) but the labelling {show_labelling(self.model, self.i, self.ys[b])} "
                             f"scores {aug[b]:.6g} (loss {L[b]:.4g}), L + ⟨w, ψ⟩ relative to y_i: the oracle "
                             "is not the argmax of the model's own loss and joint_feature")
        if label != "w = 0" and plain.max() > plain[jd] and not self.close(plain.max(), plain[jd]):
            self.fail(f"at {label}, decode's labelling scores {float(plain[jd])!r} < {float(plain.max())!r} of the labelling "
                      f"{show_labelling(self.model, self.i, self.ys[int(np.argmax(plain))])}")

    def _primitives(self, j, w):
        """The kernels' loss, scores, ``sqnorm`` and ``axpy`` on labelling j against the dense ψ
        and loss, at w."""
        from .. import kernels as kr
        from . import label_score
        model, i, y, gt = self.model, self.i, self.ys[j], self.ys[0]
        M = model.arrays
        loss, dpsi = self.loss[j], self.dpsi[j]
        if not self.close(float(kr.label_loss(M, i, y)), loss):
            self.fail(f"loss {loss!r} must equal the kernels' loss {float(kr.label_loss(M, i, y))!r} "
                      f"(labelling {show_labelling(model, i, y)})")
        dense = loss + float(w @ dpsi)
        got = (label_score(model, i, w, y, loss_augmented=True)
               - label_score(model, i, w, gt, loss_augmented=True))
        if not self.close(got, dense):
            self.fail(f"scores: ⟨m(y) − m(y_i), h(w)⟩ = {got!r} but L(y) + ⟨w, ψ(y) − ψ(y_i)⟩ = {dense!r} "
                      f"(labelling {show_labelling(model, i, y)})")
        p = int(M.stat_off[i + 1] - M.stat_off[i])
        d = int(model.d)
        dlt = np.zeros(p)
        kr.label_add(M, i, y, 1.0, dlt)
        kr.label_add(M, i, gt, -1.0, dlt)
        sq = float(kr.block_sqnorm(M, i, dlt, np.zeros(d)))
        if not self.close(sq, float(dpsi @ dpsi)):
            self.fail(f"sqnorm: ‖B δ‖² = {sq!r} but ‖ψ(y) − ψ(y_i)‖² = {float(dpsi @ dpsi)!r}")
        v = np.zeros(d)
        kr.block_axpy(M, i, 0.5, dlt, v, v, np.zeros(0), np.zeros(0), False)
        if not all(self.close(a, c) for a, c in zip(v, 0.5 * dpsi)):
            self.fail(f"axpy: v += 0.5 B δ gave {v[:5]}... but 0.5 (ψ(y) − ψ(y_i)) is {0.5 * dpsi[:5]}...")


def _samplable(model, i) -> bool:
    """Whether block i's labellings can be sampled or enumerated (``n_labels(i) >= 1``)."""
    try:
        return int(model.n_labels(i)) >= 1
    except (TypeError, ValueError, NotImplementedError):
        return False
