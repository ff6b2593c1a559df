"""One of each in the kernels: the dispatch stubs and their overloads are made from the
registry's one signature table; a kind without an optional primitive gets its default; the pose
kind's ‖B_i δ‖² and update of w are the dense kind's; the reference solver's xoshiro256** is the
kernels' own functions, run uncompiled."""
import inspect
import json
import subprocess
import sys

import numpy as np
import pytest

from cli_runs import ENV
from gaplab.core.kernels import dispatch
from gaplab.core.kernels.registry import _KINDS, _SIGNATURES, OPTIONAL_PRIMITIVES, REQUIRED_PRIMITIVES


def test_every_primitive_has_one_stub_with_the_tables_argument_names():
    assert set(_SIGNATURES) == set(REQUIRED_PRIMITIVES + OPTIONAL_PRIMITIVES)
    for name, args in _SIGNATURES.items():
        stub = getattr(dispatch, f"_m_{name}")
        assert stub.__name__ == f"_m_{name}"
        assert tuple(inspect.signature(stub).parameters) == args


def test_a_kind_without_a_compiled_oracle_gets_the_default_that_says_so():
    from gaplab.core.models import PythonModel
    from gaplab.toy_examples.multilabel import MultiLabel, make_multilabel
    model = PythonModel(MultiLabel(8, 4), make_multilabel(3))
    M = model.arrays
    assert "oracle" not in _KINDS[type(M)]
    h, y = np.zeros(model.d + 1), np.zeros(64, dtype=np.int64)
    with pytest.raises(RuntimeError, match="no compiled max oracle"):
        dispatch.block_oracle(M, 0, h, y, np.zeros(8), np.zeros(8, dtype=np.int64))


def test_the_pose_kind_updates_w_with_the_dense_kinds_primitives():
    from gaplab.core.models.dense import DenseArrays
    from gaplab.core.models.pose import PoseArrays
    for name in ("sqnorm", "axpy"):
        assert _KINDS[PoseArrays][name] is _KINDS[DenseArrays][name]


CHILD = """
import json
from gaplab.core.rng import Xoshiro, rng_next, rng_randint, rng_uniform, seed_state
py = Xoshiro(11)
draws = [py.randint(n) for n in (626, 5, 1, 1000) for _ in range(200)] + [py.uniform() for _ in range(50)]
compiled_before = len(rng_next.signatures) + len(rng_uniform.signatures) + len(rng_randint.signatures)
s = seed_state(11)
nb = [int(rng_randint(s, n)) for n in (626, 5, 1, 1000) for _ in range(200)] + [rng_uniform(s) for _ in range(50)]
print(json.dumps({"same": draws == nb, "compiled_before": compiled_before, "state": py.s.tolist() == s.tolist()}))
"""


def test_xoshiro_in_python_draws_the_kernels_numbers_without_compiling():
    """The reference solver steps while the kernels compile (numba compiles one function at a
    time): its draws must need no compiled function."""
    r = subprocess.run([sys.executable, "-W", "error", "-c", CHILD], capture_output=True, text=True, env=ENV,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {"same": True, "compiled_before": 0, "state": True}
