"""A model's arrays are what the compiled kernels index with, without bounds checks: they are
read-only once built, and the offsets, sizes and indices are checked again when a Solver is
built (an unlocked or replaced array gives an error naming the field, never a crash)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from gaplab.core import Solver
from gaplab.core.models.protocol import ArraysError, check_arrays
from gaplab.core.problems import warmup_plan

KINDS = {job.model_class: job for job in warmup_plan()}


@pytest.fixture(params=sorted(KINDS))
def model(request):
    return KINDS[request.param].model


def _fields(M):
    return [(f, a) for f, a in zip(M._fields, M) if isinstance(a, np.ndarray) and a.size]


def test_every_array_of_every_model_kind_is_read_only(model):
    assert {"ChainModel", "MulticlassModel", "SegmentationModel", "PoseModel"} <= set(KINDS)
    for f, a in _fields(model.arrays):
        assert not a.flags.writeable, f"{type(model).__name__}.arrays.{f} is writable"
        with pytest.raises(ValueError, match="read-only"):
            a.reshape(-1)[0] = a.reshape(-1)[0]


def test_the_built_arrays_pass_the_check(model):
    check_arrays(model)


def test_no_array_of_any_model_kind_can_be_made_writable_and_the_solver_still_runs(model):
    """setflags(write=True) on a model array (or on its base) raises: the arrays are views of an
    immutable buffer, so no write can reach the memory the kernels index without bounds checks."""
    M = model.arrays
    fields = _fields(M)
    assert fields
    for f, a in fields:
        with pytest.raises(ValueError):
            a.setflags(write=True)
        base = a.base
        while isinstance(base, np.ndarray):
            with pytest.raises(ValueError):
                base.setflags(write=True)
            base = base.base
        assert not a.flags.writeable, f
    res = Solver(model, lam=0.1, max_passes=1).run()
    assert res.effective_passes >= 1 and np.isfinite(res.primal)


@pytest.mark.parametrize("field", ["stat_off", "lab_off", "gt"])
def test_a_changed_shared_offset_is_refused_when_a_solver_is_built(model, field):
    if field == "gt" and type(model).__name__ == "PythonModel":
        # the dense kind's gt holds the encoded (ψ bits, loss, labels) of each ground truth: data the
        # kernels copy, never an index they read with; its offsets are checked above
        return
    M = model.arrays
    a = getattr(M, field)
    bad = a.copy()
    bad[1 if field != "gt" else 0] = 10 ** 7
    model.arrays = M._replace(**{field: bad})
    try:
        with pytest.raises(ArraysError, match=field):
            Solver(model, lam=0.1, max_passes=1)
    finally:
        model.arrays = M


KIND_FIELDS = {  # an index array or offset each kind's kernels read, with an out-of-range value
    "ChainModel": [("gram_off", 1, 10 ** 7), ("feat_indptr", 1, 10 ** 7), ("feat_indices", 0, 10 ** 6)],
    "MulticlassModel": [("mc_indptr", 1, 10 ** 7), ("mc_indices", 0, 10 ** 6)],
    "SegmentationModel": [("edge_off", 1, 10 ** 7), ("eu", 0, 10 ** 6), ("ev", 0, -1)],
    "PoseModel": [("pair_off", 1, 10 ** 7), ("parent", 1, 10 ** 4), ("ntype", 1, 10 ** 4)],
}


@pytest.mark.parametrize("kind,field,pos,value",
                         [(k, f, p, v) for k, lst in KIND_FIELDS.items() for f, p, v in lst])
def test_a_changed_kind_specific_index_is_refused(kind, field, pos, value):
    model = KINDS[kind].model
    M = model.arrays
    bad = getattr(M, field).copy()
    bad.reshape(-1)[pos] = value
    model.arrays = M._replace(**{field: bad})
    try:
        with pytest.raises(ArraysError, match=field):
            Solver(model, lam=0.1, max_passes=1)
    finally:
        model.arrays = M


_CRASH = textwrap.dedent("""
    import sys
    import numpy as np
    from gaplab.core import Solver
    from gaplab.core.datasets.ocr import load_ocr
    from gaplab.core.models import ChainModel
    m = ChainModel(load_ocr("small")[0])
    field = sys.argv[1]
    a = getattr(m.arrays, field)
    solver = Solver(m, lam=0.1, max_passes=2)  # built first: a later write was a double free / segfault
    for unlock in (lambda: a.setflags(write=True), lambda: setattr(a.flags, "writeable", True),
                   lambda: a.base.setflags(write=True)):
        try:
            unlock()
        except ValueError as exc:
            print("locked:", exc)
        else:
            print("UNLOCKED")
    try:
        a[len(a) // 2] = 10 ** 7
    except ValueError as exc:
        print("read-only:", exc)
    else:
        print("WRITTEN")
    res = solver.run()
    print("ran", res.effective_passes)
""")


@pytest.mark.parametrize("field", ["stat_off", "gram_off"])
def test_a_chain_offset_cannot_be_unlocked_after_the_solver_is_built(field):
    """In a child process (a crash there is an exit code, not a dead test run)."""
    p = subprocess.run([sys.executable, "-c", _CRASH, field], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert p.stdout.count("locked:") == 3 and "UNLOCKED" not in p.stdout, p.stdout
    assert "read-only:" in p.stdout and "WRITTEN" not in p.stdout
    assert "ran " in p.stdout


def test_writing_gram_cannot_silently_change_a_result():
    from gaplab.core.datasets.ocr import load_ocr
    from gaplab.core.models import ChainModel
    m = ChainModel(load_ocr("small")[0])
    with pytest.raises(ValueError, match="read-only"):
        m.arrays.gram[0] = 123.0


def test_the_model_does_not_freeze_the_callers_arrays():
    from gaplab.core.models import MulticlassModel
    gt = np.array([0, 1], dtype=np.int64)
    MulticlassModel([np.eye(2), np.eye(2)], [np.array([0.0, 1]), np.array([1.0, 0])], gt)
    gt[0] = 1  # still the caller's, writable
