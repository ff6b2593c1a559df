"""Validated data cannot change under the solver: sequence, segmentation and pose data sets copy
the caller's arrays and are read-only, and labels, offsets or flags of the wrong type are refused
naming the field."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gaplab.core import ChainModel, Solver, load_ocr
from gaplab.core.datasets import SequenceData


def test_validated_sequence_data_is_read_only():
    train, _ = load_ocr("small")
    for arr, val in ((train.labels, 10 ** 9), (train.feat_indices, 10 ** 6), (train.feat_values, math.nan),
                     (train.seq_offsets, 0), (train.feat_indptr, 0)):
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = val
    # the caller's arrays are copied: changing them afterwards does not reach the data set
    X = [np.ones((3, 2)), np.ones((2, 2))]
    labels = np.array([0, 1, 0, 1, 1])
    d = SequenceData(seq_offsets=np.array([0, 3, 5]), feat_indptr=np.arange(6) * 2,
                     feat_indices=np.tile([0, 1], 5), feat_values=np.ones(10), labels=labels, n_features=2,
                     label_names=("a", "b"))
    labels[0] = 10 ** 9
    assert d.labels[0] == 0
    Solver(ChainModel(d), max_passes=2).run()  # still runs on the validated copy
    assert X  # (dense inputs are covered by from_dense)


def test_float_labels_or_offsets_are_refused():
    base = dict(seq_offsets=np.array([0, 2]), feat_indptr=np.array([0, 1, 2]), feat_indices=np.array([0, 1]),
                feat_values=np.ones(2), labels=np.array([0, 1]), n_features=2, label_names=("a", "b"))
    for field, bad in (("labels", np.array([0.0, 1.7])), ("seq_offsets", np.array([0.0, 2.0])),
                       ("feat_indices", np.array([0.5, 1.0]))):
        with pytest.raises(TypeError, match=field):
            SequenceData(**{**base, field: bad})


def test_validated_segmentation_data_cannot_change_under_the_model():
    from gaplab.core.datasets.segmentation import SegmentationData, make_synthetic_segmentation
    from gaplab.core.models.graphcut import SegmentationModel
    good = make_synthetic_segmentation(2, grid=(2, 3), cell=2, d_u=3, d_p=2)
    kw = {f: getattr(good, f).copy() for f in ("sp_off", "edge_off", "edges", "xu", "xp", "gt", "area",
                                               "fg_area", "img_shape", "segments", "mask")}
    data = SegmentationData(**kw)
    model = SegmentationModel(data)
    for name, idx, val in (("gt", 0, 7), ("xu", (0, 0), np.nan), ("edges", (0, 1), 10 ** 6), ("area", 0, 0),
                           ("sp_off", 1, 10 ** 6)):
        with pytest.raises(ValueError, match="read-only"):
            getattr(data, name)[idx] = val
    kw["gt"][0], kw["xu"][0, 0] = 7, np.nan  # the caller's arrays were copied
    assert data.gt[0] in (0, 1) and np.isfinite(data.xu[0, 0])
    assert np.all(np.isin(model.arrays.gt, (0, 1))) and np.all(np.isfinite(model.arrays.xu))
    with pytest.raises(TypeError, match="gt must hold integers"):
        SegmentationData(**{**kw, "gt": good.gt.astype(np.float64) + 0.5})


def test_validated_pose_data_cannot_change_under_the_model():
    import dataclasses

    from gaplab.core.datasets.lsp import PoseData
    from gaplab.core.models.pose import PoseModel
    from gaplab.core.builtin_problems import _tiny_pose
    data = _tiny_pose().data
    model = PoseModel(data)
    before = model.arrays.bump_amp.copy()
    for name, idx, val in (("bump_amp", (0, 0, 0), np.nan), ("pos", (0, 0, 0), 10 ** 6), ("parent", 0, 5),
                           ("scale", 0, -1.0)):
        with pytest.raises(ValueError, match="read-only"):
            getattr(data, name)[idx] = val
    with pytest.raises(AttributeError, match="cannot be reassigned"):
        data.bump_amp = np.full_like(data.bump_amp, np.nan)
    np.testing.assert_array_equal(model.arrays.bump_amp, before)
    fields = {f.name: getattr(data, f.name) for f in dataclasses.fields(data)}
    for name, bad, msg in (("scale", np.full(data.n, np.nan), "scale"), ("bump_amp", data.bump_amp[:, :, :2], "bump_amp"),
                           ("bump_pos", np.full_like(data.bump_pos, np.inf), "finite"),
                           ("types", data.types + 5, "types"), ("parent", np.roll(data.parent, 1) * 0, "parent"),
                           ("img_id", data.img_id.astype(float), "img_id"),
                           ("occluded", np.where(np.arange(data.occluded.size).reshape(data.occluded.shape) == 3, 0.5,
                                                    data.occluded), r"occluded must hold bools \(or 0/1\), got 0\.5 at index \(0, 3\)")):
        with pytest.raises((ValueError, TypeError), match=msg):
            PoseData(**{**fields, name: bad})
    # 0/1 numbers (joints.mat stores floats) are flags
    again = PoseData(**{**fields, "occluded": data.occluded.astype(float)})
    np.testing.assert_array_equal(again.occluded, data.occluded)
