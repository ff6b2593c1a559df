import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for reference_ssvm

from gaplab.core.datasets.base import SequenceData  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared"


def random_chain_data(n=6, T_range=(1, 5), K=3, F=4, seed=0, density=0.6) -> SequenceData:
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        T = int(rng.integers(T_range[0], T_range[1] + 1))
        x = rng.normal(size=(T, F)) * (rng.random((T, F)) < density)
        X.append(x)
        Y.append(rng.integers(0, K, size=T))
    return SequenceData.from_dense(X, Y, [str(k) for k in range(K)], name="random")


@pytest.fixture
def tiny_chain():
    return random_chain_data(n=5, T_range=(1, 3), K=3, F=3, seed=1)


@pytest.fixture(scope="session")
def ocr_small():
    from gaplab.core.datasets.ocr import load_ocr
    return load_ocr("small")
