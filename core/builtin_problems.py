"""The built-in problems of the registry (:mod:`gaplab.core.problems`): OCR (small, large),
CoNLL-2000 chunking, a user's CoNLL-style column file (``conll-file``), the hard/easy toy (App. C), the plain-Python multi-label toy, synthetic and
Weizmann-horse segmentation, LSP pose (full and tiny), each with its loader, model factory,
tiny warm-up model and test metric. Registered when :mod:`gaplab.core.problems` is imported.

Paper: Sec. 5, App. C, App. I.
"""
from __future__ import annotations

import numpy as np

from .problems import ProblemOption, register_problem


def _tiny_chain():
    from .datasets.base import SequenceData
    from .models.chain import ChainModel
    rng = np.random.default_rng(0)
    X = [rng.random((3, 4)), rng.random((2, 4))]
    Y = [np.array([0, 1, 1]), np.array([1, 0])]
    return ChainModel(SequenceData.from_dense(X, Y, ["a", "b"], name="warmup"))


def _tiny_multiclass():
    from .models.multiclass import MulticlassModel
    return MulticlassModel([np.eye(3), np.eye(3)], [np.array([0.0, 1, 1]), np.array([0.0, 1, 1])], [0, 0])


def _chain_model(train):
    from .models.chain import ChainModel
    return ChainModel(train)


def _ocr_loader(variant):
    def load(data_home=None):
        from .datasets.ocr import load_ocr
        return load_ocr(variant)
    load.__name__ = f"load_{variant.replace('-', '_')}"
    return load


def _conll_loader(data_home=None, verify=True):
    from .datasets.conll import load_conll2000
    return load_conll2000(data_home=data_home, verify=verify)


def _conll_check(data_home=None):
    from .datasets.conll import _locate
    _locate(data_home, download=False)


def _gold_and_guess(model, w, test):
    """The gold tags (the original ones: the labels map test tags unseen in training, I-LST, to
    B-X) and the predicted tags of every sentence, as lists of str."""
    pred = model.predict(w, test)
    names = test.label_names
    chunks = test.extras.get("chunks")
    gold, guess = [], []
    for i in range(test.n):
        sl = test.tokens(i)
        gold.append(list(chunks[i]) if chunks is not None else [names[k] for k in test.labels[sl]])
        guess.append([names[k] for k in pred[sl]])
    return gold, guess


def _conll_evaluate(model, w, test):
    """(chunk F1, {"conlleval": ...}) with the original gold tags."""
    from .datasets.conll import conlleval
    r = conlleval(*_gold_and_guess(model, w, test))
    return r["f1"], {"conlleval": r}


def _conll_file_evaluate(model, w, test):
    """(chunk F1, {"token_accuracy", "chunk_f1", "conlleval"}) of a user's column file; with tags
    that are not IOB (chunks undefined) the headline is the token accuracy, ``chunk_f1`` is None
    and ``chunk_f1_note`` says why (``metric`` names the headline)."""
    from .datasets.conll import conlleval
    from .datasets.conll_file import is_iob
    gold, guess = _gold_and_guess(model, w, test)
    r = conlleval(gold, guess)
    bad = next((t for t in (*test.label_names, *(t for g in gold for t in g)) if not is_iob(t)), None)
    if bad is not None:
        note = f"tag {bad!r} is not IOB (O, B-X or I-X): chunk F1 not computed, token accuracy only"
        return r["accuracy"], {"metric": "token accuracy", "token_accuracy": r["accuracy"], "chunk_f1": None,
                               "chunk_f1_note": note}
    return r["f1"], {"token_accuracy": r["accuracy"], "chunk_f1": r["f1"], "conlleval": r}


def _conll_file_loader(data_home=None, data_file=None, test_file=None):
    """A user's CoNLL-style column file (``--data-file``, optional ``--test-file``)."""
    if data_file is None:
        raise FileNotFoundError("conll-file reads a file of yours: give --data-file FILE (one token a line, "
                                "word [POS] tag, blank lines between sentences) and optionally --test-file FILE")
    from .datasets.conll_file import load_conll_file
    return load_conll_file(data_file, test_file)


def _conll_file_check(data_home=None):
    _conll_file_loader(data_home)


def bind_conll_file(data_file, test_file=None):
    """Register ``conll-file`` again with its files fixed (``gaplab app --data-file``): the app's
    dataset picker then offers it as installed. The files are read once now, so a bad file is
    refused before the app starts.

    Parameters
    ----------
    data_file, test_file : str or os.PathLike
        As for :func:`~gaplab.core.datasets.conll_file.load_conll_file`.

    Returns
    -------
    ProblemSpec

    Raises
    ------
    FileNotFoundError, ValueError
        A missing or bad file (one line naming the file and the line).
    """
    from .datasets.conll_file import load_conll_file
    load_conll_file(data_file, test_file)

    def load(data_home=None):
        return load_conll_file(data_file, test_file)
    what = f"{data_file}" + (f", tested on {test_file}" if test_file is not None else "")
    return register_problem("conll-file", load, _chain_model, default_lam=0.01, replace=True,
                            description=f"your own tagging data: {what} (CoNLL-2000 attributes, chunk F1 of IOB tags)",
                            metric="chunk F1", higher_is_better=True, evaluate=_conll_file_evaluate,
                            warmup=_tiny_chain)


def _toy_loader(data_home=None, n=20, K=100):
    from gaplab.toy_examples.hard_easy import make_hard_easy
    model, lam, info = make_hard_easy(n, K)
    info = dict(info)
    hard = int(info.get("hard_index", 0))
    info["block_note"] = lambda i: "hard object" if i == hard else "easy object"
    return model, None, info


register_problem("ocr-small", _ocr_loader("small"), _chain_model, default_lam=0.01,
                 description="OCR letters (Taskar et al.): 626 training words, 6,251 test words",
                 warmup=_tiny_chain)
register_problem("ocr-large", _ocr_loader("large"), _chain_model, default_lam=0.01,
                 description="OCR letters: 6,251 training words, 626 test words",
                 warmup=_tiny_chain)
register_problem("toy", _toy_loader, None, default_lam=lambda n, K: 1.0 / n,
                 description="one hard and n-1 easy objects (Paper: App. C); lambda = 1/n",
                 warmup=_tiny_multiclass, quick=True,
                 options={"n": ProblemOption(20, (2, 1000), "toy n (objects)", "number of objects"),
                          "K": ProblemOption(100, (1, 1000), "toy K (labels of the hard object)",
                                             "wrong labels of each object")})
register_problem("conll2000", _conll_loader, _chain_model, default_lam=0.01,
                 description="CoNLL-2000 chunking: 8,936 training, 2,012 test sentences "
                             "(files needed: --data-home or $GAPLAB_DATA)",
                 bundled=False, check=_conll_check, metric="chunk F1", higher_is_better=True,
                 evaluate=_conll_evaluate, warmup=_tiny_chain)
register_problem("conll-file", _conll_file_loader, _chain_model, default_lam=0.01,
                 description="your own tagging data: a CoNLL-style column file (--data-file FILE, optional "
                             "--test-file FILE; word [POS] tag a line), CoNLL-2000 attributes, chunk F1 of IOB tags",
                 bundled=False, check=_conll_file_check, metric="chunk F1", higher_is_better=True,
                 evaluate=_conll_file_evaluate, warmup=_tiny_chain)


# ----------------------------------------------------------------------------- plain-Python models
def _multilabel_loader(data_home=None, n=60):
    from gaplab.toy_examples.multilabel import load_multilabel
    return load_multilabel(n=n)


def _multilabel_model(train):
    from gaplab.toy_examples.multilabel import MultiLabel
    from .models.plain import PythonModel
    return PythonModel(MultiLabel(len(train.X[0]), len(train.Y[0])), train)


def _tiny_multilabel():
    from gaplab.toy_examples.multilabel import make_multilabel
    return _multilabel_model(make_multilabel(3, 3, 2, name="warmup"))


register_problem("multilabel-toy", _multilabel_loader, _multilabel_model, default_lam=0.1,
                 description="synthetic multi-label tagging (8 features, 4 tags), a plain-Python model "
                             "(README: Adding a model)", warmup=_tiny_multilabel, quick=True,
                 options={"n": ProblemOption(60, (1, 10000), "examples", "training (and test) examples")})


# ----------------------------------------------------------------------------- segmentation (App. I)
#: default λ of horse-small: the best test loss of the grid 100 … 0.01 in benchmarks/results/horse_eval.json
#: (40 passes of BCPFW + gap sampling + cache per λ; the paper also reports its best-test λ)
HORSE_SMALL_LAM = 10.0

def _seg_model(train):
    from .models.graphcut import SegmentationModel
    return SegmentationModel(train)


def _seg_tiny_loader(data_home=None, n=6):
    from .datasets.segmentation import make_synthetic_segmentation
    train = make_synthetic_segmentation(n, grid=(3, 4), cell=4, d_u=5, d_p=3, noise=0.8, seed=0,
                                        name="seg-tiny/train")
    test = make_synthetic_segmentation(n, grid=(3, 4), cell=4, d_u=5, d_p=3, noise=0.8, seed=1,
                                       name="seg-tiny/test")
    return train, test


def _seg_tiny_warmup():
    from .datasets.segmentation import make_synthetic_segmentation
    from .models.graphcut import SegmentationModel
    return SegmentationModel(make_synthetic_segmentation(3, grid=(2, 3), cell=2, d_u=3, d_p=2, seed=0,
                                                         name="warmup"))


def _horse_loader(data_home=None, verify=True, progress=True):
    """horse-small; a first load computes the superpixels and features of every image (minutes;
    ``progress``: tqdm bars, or a callable told each image done) and caches them."""
    from .datasets.horse import load_weizmann_horses
    return load_weizmann_horses(data_home, verify=verify, progress=progress)


def _horse_check(data_home=None):
    from .datasets.horse import _locate
    _locate(data_home)


def _seg_evaluate(model, w, test):
    """(test pixel accuracy, {"iou", "mean_iou", "loss"}): pixel-level scores against the masks
    (the test error of the solver's trace is the mean class-balanced loss, ``model.error``)."""
    r = model.evaluate(w, test)
    return r["pixel_accuracy"], {k: r[k] for k in ("iou", "mean_iou", "loss")}


register_problem("seg-tiny", _seg_tiny_loader, _seg_model, default_lam=10.0,
                 description="synthetic binary segmentation (3x4 superpixel grids, graph-cut oracle; "
                             "tests and demos)",
                 metric="pixel accuracy", higher_is_better=True, evaluate=_seg_evaluate, warmup=_seg_tiny_warmup, quick=True,
                 options={"n": ProblemOption(6, (1, 1000), "images", "number of training images")})
register_problem("horse-small", _horse_loader, _seg_model, default_lam=HORSE_SMALL_LAM,
                 description="Weizmann horses as HorseSeg-small (Paper: App. I): 147 training, 181 test "
                             "images, SLIC superpixels, graph-cut oracle, w_P >= 0 "
                             "(files needed: --data-home or $GAPLAB_DATA)",
                 bundled=False, check=_horse_check, metric="pixel accuracy", higher_is_better=True, evaluate=_seg_evaluate,
                 warmup=_seg_tiny_warmup)


# ----------------------------------------------------------------------------- pose (LSP)
def _lsp_check(data_home=None):
    from .datasets.lsp import locate_lsp
    locate_lsp(data_home)


def _pose_model(train):
    from .models.pose import PoseModel
    return PoseModel(train)


def _lsp_loader(data_home=None, verify=True, G=32, n_types=4, n_train=1000):
    from .datasets.lsp import load_lsp
    return load_lsp(G, n_types=n_types, data_home=data_home, verify=verify, n_train=n_train)


def _lsp_tiny_loader(data_home=None, verify=True):
    """8 training poses and 8 test poses of LSP on a 12×12 grid with 2 types (tests, demos)."""
    from .datasets.lsp import load_lsp
    train, test = load_lsp(12, n_types=2, data_home=data_home, verify=verify, n_train=8)
    test = test.subset(np.arange(8))
    test.name = "lsp/test8/G12"
    return train, test


def _tiny_pose():
    """A 4-image pose model on a 6×6 grid from a generated stick figure (no file needed), for
    ``gaplab warmup``: numba compiles per model class and array types, not per size."""
    from .datasets.lsp import make_pose_data
    from .models.pose import PoseModel
    rng = np.random.default_rng(0)
    # LSP's 14 joints (x, y): r ankle, r knee, r hip, l hip, l knee, l ankle, r wrist, r elbow,
    # r shoulder, l shoulder, l elbow, l wrist, neck, head top
    base = np.array([[3, 10], [3, 7], [3, 5], [5, 5], [5, 7], [5, 10], [1, 4], [2, 3], [3, 2], [5, 2],
                     [6, 3], [7, 4], [4, 1.5], [4, 0]], dtype=np.float64)
    xy = base[None] + rng.normal(0, 0.3, size=(4, 14, 2))
    return PoseModel(make_pose_data(xy, np.zeros((4, 14), bool), 6, n_types=2, seed=0, name="warmup-pose"))


register_problem("lsp-pose", _lsp_loader, _pose_model, default_lam=0.1,
                 description="LSP pose (Paper: App. I): real joint geometry of 1,000 training / 1,000 test "
                             "poses on a G×G grid, generated part-score maps, tree max oracle with distance "
                             "transforms (G sets the oracle cost; joints.mat needed: --data-home or $GAPLAB_DATA)",
                 bundled=False, check=_lsp_check, metric="test error", warmup=_tiny_pose,
                 options={"G": ProblemOption(32, (2, 256), "grid side G",
                                             "positions per part: G×G (oracle cost 0.16 / 0.8 / 5.4 / 26 ms at G = 16 / 32 / 64 / 128)"),
                          "n_types": ProblemOption(4, (1, 13), "mixture types",
                                                   "mixture types per part (k-means of displacements)"),
                          "n_train": ProblemOption(1000, (1, 1000), "training poses",
                                                   "the first n_train of LSP's 1,000 training poses")})
register_problem("lsp-tiny", _lsp_tiny_loader, _pose_model, default_lam=0.1,
                 description="8 LSP poses on a 12×12 grid, 2 types (tests and demos; joints.mat needed)",
                 bundled=False, check=_lsp_check, metric="test error", warmup=_tiny_pose)
