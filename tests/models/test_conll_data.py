"""CoNLL-2000 chunking: parser, CRFsuite attributes, loader (lookup, download), conlleval."""
from __future__ import annotations

import gzip
import hashlib
import io
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from gaplab.core.datasets import SequenceData
from gaplab.core.datasets import conll
from gaplab.core.datasets.conll import (
    conlleval,
    make_conll_datasets,
    parse_conll,
    sentence_attributes,
)

SHARED = Path(__file__).resolve().parents[3] / "shared/data/conll2000"


def load_conll2000(*args, verify=False, **kwargs):
    """The loader on this file's small hand-made corpora, which are not the official files: the
    checksum check (on by default) is off unless a test asks for it."""
    return conll.load_conll2000(*args, verify=verify, **kwargs)

# ------------------------------------------------------------------ small hand-made corpora
TRAIN_TXT = """\
He PRP B-NP
reckons VBZ B-VP
the DT B-NP
deficit NN I-NP

The DT B-NP
deficit NN I-NP
will MD B-VP
narrow VB I-VP
. . O

Look VB B-VP
"""
TEST_TXT = """\
The DT B-NP
surplus NN I-NP
. . O

He PRP B-NP
"""


def write_corpus(directory: Path, train: str = TRAIN_TXT, test: str = TEST_TXT) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "train.txt").write_text(train)
    (directory / "test.txt").write_text(test)
    return directory


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """No GAPLAB_DATA, and a user cache directory inside tmp_path."""
    monkeypatch.delenv("GAPLAB_DATA", raising=False)
    cache = tmp_path / "user-cache"
    monkeypatch.setattr(conll, "_cache_root", lambda: cache)
    return cache


def token_names(data: SequenceData, tok: int) -> list[str]:
    names = data.extras["attribute_names"]
    a, b = data.feat_indptr[tok], data.feat_indptr[tok + 1]
    return [names[j] for j in data.feat_indices[a:b]]


# ------------------------------------------------------------------ attributes
def test_sentence_attributes_four_tokens_exact():
    words = ["He", "reckons", "the", "deficit"]
    pos = ["PRP", "VBZ", "DT", "NN"]
    expected = [
        [
            "w[0]=He", "w[1]=reckons", "w[2]=the", "w[0]|w[1]=He|reckons",
            "pos[0]=PRP", "pos[1]=VBZ", "pos[2]=DT",
            "pos[0]|pos[1]=PRP|VBZ", "pos[1]|pos[2]=VBZ|DT",
            "pos[0]|pos[1]|pos[2]=PRP|VBZ|DT",
            "__BOS__",
        ],
        [
            "w[-1]=He", "w[0]=reckons", "w[1]=the", "w[2]=deficit",
            "w[-1]|w[0]=He|reckons", "w[0]|w[1]=reckons|the",
            "pos[-1]=PRP", "pos[0]=VBZ", "pos[1]=DT", "pos[2]=NN",
            "pos[-1]|pos[0]=PRP|VBZ", "pos[0]|pos[1]=VBZ|DT", "pos[1]|pos[2]=DT|NN",
            "pos[-1]|pos[0]|pos[1]=PRP|VBZ|DT", "pos[0]|pos[1]|pos[2]=VBZ|DT|NN",
        ],
        [
            "w[-2]=He", "w[-1]=reckons", "w[0]=the", "w[1]=deficit",
            "w[-1]|w[0]=reckons|the", "w[0]|w[1]=the|deficit",
            "pos[-2]=PRP", "pos[-1]=VBZ", "pos[0]=DT", "pos[1]=NN",
            "pos[-2]|pos[-1]=PRP|VBZ", "pos[-1]|pos[0]=VBZ|DT", "pos[0]|pos[1]=DT|NN",
            "pos[-2]|pos[-1]|pos[0]=PRP|VBZ|DT", "pos[-1]|pos[0]|pos[1]=VBZ|DT|NN",
        ],
        [
            "w[-2]=reckons", "w[-1]=the", "w[0]=deficit",
            "w[-1]|w[0]=the|deficit",
            "pos[-2]=VBZ", "pos[-1]=DT", "pos[0]=NN",
            "pos[-2]|pos[-1]=VBZ|DT", "pos[-1]|pos[0]=DT|NN",
            "pos[-2]|pos[-1]|pos[0]=VBZ|DT|NN",
            "__EOS__",
        ],
    ]
    assert sentence_attributes(words, pos) == expected


def test_sentence_attributes_padding_variant():
    attrs = sentence_attributes(["Hi", "there"], ["UH", "RB"], padding=True)
    assert attrs[0] == [
        "w[-2]=__BOS__", "w[-1]=__BOS__", "w[0]=Hi", "w[1]=there", "w[2]=__EOS__",
        "w[-1]|w[0]=__BOS__|Hi", "w[0]|w[1]=Hi|there",
        "pos[-2]=__BOS__", "pos[-1]=__BOS__", "pos[0]=UH", "pos[1]=RB", "pos[2]=__EOS__",
        "pos[-2]|pos[-1]=__BOS__|__BOS__", "pos[-1]|pos[0]=__BOS__|UH",
        "pos[0]|pos[1]=UH|RB", "pos[1]|pos[2]=RB|__EOS__",
        "pos[-2]|pos[-1]|pos[0]=__BOS__|__BOS__|UH", "pos[-1]|pos[0]|pos[1]=__BOS__|UH|RB",
        "pos[0]|pos[1]|pos[2]=UH|RB|__EOS__",
    ]
    assert all(len(a) == 19 for a in attrs)  # every template, no separate BOS/EOS
    # one-token sentence without padding: both boundary attributes
    assert sentence_attributes(["Yes"], ["UH"]) == [["w[0]=Yes", "pos[0]=UH", "__BOS__", "__EOS__"]]
    # case is kept
    assert "w[0]=The" in sentence_attributes(["The"], ["DT"])[0]


def test_sentence_attributes_rejects_bad_input():
    with pytest.raises(ValueError, match="same length"):
        sentence_attributes(["a", "b"], ["DT"])
    with pytest.raises(ValueError, match="at least one token"):
        sentence_attributes([], [])


# ------------------------------------------------------------------ parser
def test_parse_conll_file(tmp_path):
    p = tmp_path / "mini.txt"
    # tabs, trailing spaces, several blank lines, whitespace-only line, no final newline
    p.write_text("\n\nHe\tPRP  B-NP \nsleeps VBZ B-VP\n\n  \n\n. . O")
    sents = parse_conll(p)
    assert sents == [
        (("He", "sleeps"), ("PRP", "VBZ"), ("B-NP", "B-VP")),
        ((".",), (".",), ("O",)),
    ]
    assert parse_conll(str(p)) == sents
    assert parse_conll(p.read_text().splitlines()) == sents
    assert parse_conll(io.StringIO(p.read_text())) == sents  # any iterable of lines
    assert parse_conll([]) == []


def test_parse_conll_malformed_line_names_file_and_line(tmp_path):
    p = tmp_path / "broken.txt"
    p.write_text("He PRP B-NP\nsleeps VBZ\n\n. . O\n")
    with pytest.raises(ValueError) as err:
        parse_conll(p)
    msg = str(err.value)
    assert str(p) in msg and "line 2" in msg and "'sleeps VBZ'" in msg
    with pytest.raises(ValueError, match=r"<lines>, line 3: .*4.*'a b c d'"):
        parse_conll(["x X O", "", "a b c d"])


def test_malformed_line_through_loader(tmp_path, isolated):
    d = write_corpus(tmp_path / "data", train=TRAIN_TXT + "\noops\n")
    with pytest.raises(ValueError, match=r"train\.txt, line 14: .*'oops'"):
        load_conll2000(d)


def test_parse_real_file_head():
    if not SHARED.is_dir():
        pytest.skip(f"CoNLL-2000 data not available at {SHARED}")
    sents = parse_conll(SHARED / "train.txt")
    assert sents[0][0][:3] == ("Confidence", "in", "the")
    assert sents[0][2][:3] == ("B-NP", "B-PP", "B-NP")


# ------------------------------------------------------------------ data sets from small files
def test_small_corpus_features_labels_extras(tmp_path, isolated):
    train, test = load_conll2000(write_corpus(tmp_path / "data"))
    assert (train.n, train.n_tokens, test.n, test.n_tokens) == (3, 10, 2, 4)
    assert train.name == "conll2000/train" and test.name == "conll2000/test"
    assert train.label_names == ("B-NP", "B-VP", "I-NP", "I-VP", "O")
    assert test.label_names == train.label_names
    np.testing.assert_array_equal(train.labels, [0, 1, 0, 2, 0, 2, 1, 3, 4, 1])
    np.testing.assert_array_equal(test.labels, [0, 2, 4, 0])
    assert train.extras["words"][1] == ("The", "deficit", "will", "narrow", ".")
    assert test.extras["pos"] == (("DT", "NN", "."), ("PRP",))
    assert test.extras["chunks"][0] == ("B-NP", "I-NP", "O")
    assert np.all(train.feat_values == 1.0) and np.all(test.feat_values == 1.0)

    names = train.extras["attribute_names"]
    assert len(names) == train.n_features == test.n_features
    assert len(set(names)) == len(names)
    # grouped by template (template order), first-occurrence order inside a template
    assert names[:4] == ("w[-2]=He", "w[-2]=reckons", "w[-2]=The", "w[-2]=deficit")
    assert names.index("__BOS__") == len(names) - 2 and names[-1] == "__EOS__"
    # every training token has exactly its documented attributes
    for i, (w, p) in enumerate(zip(train.extras["words"], train.extras["pos"])):
        sl = train.tokens(i)
        for t, expected in zip(range(sl.start, sl.stop), sentence_attributes(w, p)):
            assert token_names(train, t) == expected
    # CSR rows are sorted (canonical)
    for t in range(train.n_tokens):
        row = train.feat_indices[train.feat_indptr[t]:train.feat_indptr[t + 1]]
        assert np.all(np.diff(row) > 0)
    # test: attributes unseen in training are dropped, the seen ones kept
    known = set(names)
    for i, (w, p) in enumerate(zip(test.extras["words"], test.extras["pos"])):
        sl = test.tokens(i)
        for t, attrs in zip(range(sl.start, sl.stop), sentence_attributes(w, p)):
            a, b = test.feat_indptr[t], test.feat_indptr[t + 1]
            got = [names[j] for j in test.feat_indices[a:b]]
            assert got == [x for x in attrs if x in known]
    first = [names[j] for j in test.feat_indices[test.feat_indptr[0]:test.feat_indptr[1]]]
    assert "w[0]=The" in first and "w[1]=surplus" not in first and "__BOS__" in first


def test_min_count_and_padding_options(tmp_path, isolated):
    d = write_corpus(tmp_path / "data")
    sents = parse_conll(d / "train.txt")
    counts = Counter(a for w, p, _ in sents for attrs in sentence_attributes(w, p) for a in attrs)
    for k in (1, 2, 3):
        train, _ = load_conll2000(d, min_count=k)
        assert train.n_features == sum(v >= k for v in counts.values())
        assert set(train.extras["attribute_names"]) == {a for a, v in counts.items() if v >= k}
    train2, _ = load_conll2000(d, min_count=2)
    assert set(train2.extras["attribute_names"]) >= {"w[0]=deficit", "pos[0]=DT", "__BOS__"}
    with pytest.raises(ValueError, match="no attribute occurs"):
        load_conll2000(d, min_count=100)
    with pytest.raises(ValueError, match="min_count"):
        load_conll2000(d, min_count=0)
    padded, _ = load_conll2000(d, padding=True)
    pcounts = {a for w, p, _ in sents for attrs in sentence_attributes(w, p, True) for a in attrs}
    assert set(padded.extras["attribute_names"]) == pcounts
    assert "__BOS__" not in pcounts and "w[-1]=__BOS__" in pcounts


def test_unknown_test_label_raises(tmp_path, isolated):
    bad = TEST_TXT + "\nHe PRP B-NP\nrests VBZ B-FOO\n"
    d = write_corpus(tmp_path / "data", test=bad)
    with pytest.raises(ValueError) as err:
        load_conll2000(d)
    msg = str(err.value)
    assert "test.txt" in msg and "sentence 3" in msg and "line 7" in msg and "'B-FOO'" in msg


def test_unseen_inside_tag_policy(tmp_path, isolated):
    # I-VP appears at test time only ("I-X" whose "B-X" is known), like I-LST in CoNLL-2000
    train_txt = "He PRP B-NP\nsleeps VBZ B-VP\n. . O\n"
    test_txt = "He PRP B-NP\nwill MD B-VP\nsleep VB I-VP\n"
    d = write_corpus(tmp_path / "data", train=train_txt, test=test_txt)
    train, test = load_conll2000(d)  # default "begin"
    assert train.label_names == ("B-NP", "B-VP", "O")
    np.testing.assert_array_equal(test.labels, [0, 1, 1])
    assert test.extras["chunks"] == (("B-NP", "B-VP", "I-VP"),)  # original tags kept
    with pytest.raises(ValueError, match=r"test\.txt, sentence 1 .*'I-VP' was not seen"):
        load_conll2000(d, unknown_test_labels="raise")
    with pytest.raises(ValueError, match="unknown_test_labels"):
        load_conll2000(d, unknown_test_labels="drop")
    # an I-X without a known B-X still raises
    d2 = write_corpus(tmp_path / "data2", train=train_txt, test="x NN I-ADJP\n")
    with pytest.raises(ValueError, match="'I-ADJP'"):
        load_conll2000(d2)


def test_make_conll_datasets_without_test():
    sents = parse_conll(TRAIN_TXT.splitlines())
    train, test = make_conll_datasets(sents)
    assert test is None and train.n == 3
    with pytest.raises(ValueError, match="no sentence"):
        make_conll_datasets([])


# ------------------------------------------------------------------ locating files
def test_missing_directory_lists_where_it_looked(tmp_path, isolated):
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError) as err:
        load_conll2000(missing)
    msg = str(err.value)
    assert str(missing) in msg and str(missing / "conll2000") in msg
    assert "data_home=" in msg and "GAPLAB_DATA" in msg and "download=True" in msg
    assert "does not exist" in msg


def test_missing_everywhere_lists_env_and_cache(tmp_path, isolated, monkeypatch):
    env_dir = tmp_path / "env"
    env_dir.mkdir()
    (env_dir / "train.txt").write_text(TRAIN_TXT)  # test.txt missing
    monkeypatch.setenv("GAPLAB_DATA", str(env_dir))
    with pytest.raises(FileNotFoundError) as err:
        load_conll2000()
    msg = str(err.value)
    for place in (env_dir, env_dir / "conll2000", isolated / "conll2000"):
        assert str(place) in msg
    assert "missing test.txt" in msg and "$GAPLAB_DATA" in msg and "user cache" in msg


@pytest.mark.parametrize("sub", ["", "conll2000"])
def test_gaplab_data_env_var(tmp_path, isolated, monkeypatch, sub):
    root = tmp_path / "shared"
    write_corpus(root / sub if sub else root)
    monkeypatch.setenv("GAPLAB_DATA", str(root))
    train, test = load_conll2000()
    assert train.n == 3 and test.n == 2


def test_data_home_subfolder_and_cache_dir(tmp_path, isolated):
    write_corpus(tmp_path / "home" / "conll2000")
    assert load_conll2000(tmp_path / "home")[0].n == 3
    write_corpus(isolated / "conll2000")  # found in the user cache when nothing else is given
    assert load_conll2000()[1].n == 2


def test_verify_local_checksums(tmp_path, isolated, monkeypatch):
    d = write_corpus(tmp_path / "data")
    with pytest.raises(ValueError) as err:
        load_conll2000(d, verify=True)
    assert str(d / "train.txt") in str(err.value) and "sha256" in str(err.value)
    good = {n: hashlib.sha256((d / n).read_bytes()).hexdigest() for n in ("train.txt", "test.txt")}
    monkeypatch.setattr(conll, "CONLL2000_SHA256", good)
    assert load_conll2000(d, verify=True)[0].n == 3


# ------------------------------------------------------------------ download (no network)
class _FakeResponse(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


@pytest.fixture
def fake_urlopen(monkeypatch):
    payloads = {
        conll.CONLL2000_URLS["train.txt"]: gzip.compress(TRAIN_TXT.encode()),
        conll.CONLL2000_URLS["test.txt"]: gzip.compress(TEST_TXT.encode()),
    }
    requested = []

    def urlopen(url, timeout=None):
        requested.append(url)
        return _FakeResponse(payloads[url])

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    return requested


def test_download_with_good_checksum(isolated, fake_urlopen, monkeypatch):
    good = {
        "train.txt": hashlib.sha256(TRAIN_TXT.encode()).hexdigest(),
        "test.txt": hashlib.sha256(TEST_TXT.encode()).hexdigest(),
    }
    monkeypatch.setattr(conll, "CONLL2000_SHA256", good)
    with pytest.raises(FileNotFoundError):
        load_conll2000()  # never downloads unless asked
    assert fake_urlopen == []
    train, test = load_conll2000(download=True)
    assert sorted(fake_urlopen) == sorted(conll.CONLL2000_URLS.values())
    assert (isolated / "conll2000" / "train.txt").read_text() == TRAIN_TXT
    assert (isolated / "conll2000" / "test.txt").read_text() == TEST_TXT
    assert not list((isolated / "conll2000").glob("*.part"))
    assert train.n == 3 and test.n == 2
    load_conll2000(download=True, verify=True)  # files now present: no second download
    assert len(fake_urlopen) == 2


def test_download_into_data_home(tmp_path, isolated, fake_urlopen, monkeypatch):
    good = {
        "train.txt": hashlib.sha256(TRAIN_TXT.encode()).hexdigest(),
        "test.txt": hashlib.sha256(TEST_TXT.encode()).hexdigest(),
    }
    monkeypatch.setattr(conll, "CONLL2000_SHA256", good)
    home = tmp_path / "mydata"
    load_conll2000(home, download=True)
    assert (home / "train.txt").is_file() and (home / "test.txt").is_file()
    assert not (isolated / "conll2000").exists()


def test_download_with_bad_checksum(isolated, fake_urlopen):
    # the real checksums do not match the small fake payload
    with pytest.raises(ValueError) as err:
        load_conll2000(download=True)
    msg = str(err.value)
    assert "sha256 mismatch" in msg and "train.txt" in msg
    assert conll.CONLL2000_SHA256["train.txt"] in msg
    assert not (isolated / "conll2000" / "train.txt").exists()
    assert not list((isolated / "conll2000").glob("*.part"))


def test_download_network_error_and_bad_gzip(isolated, monkeypatch):
    def offline(url, timeout=None):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(OSError, match="could not download.*data_home"):
        load_conll2000(download=True)
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=None: _FakeResponse(b"nope"))
    with pytest.raises(ValueError, match="not valid gzip"):
        load_conll2000(download=True)


# ------------------------------------------------------------------ conlleval
def test_conlleval_hand_counts():
    # gold chunks: NP[0,1] VP[3,4]; predicted: NP[0,1] VP[3] VP[4]
    r = conlleval([["B-NP", "I-NP", "O", "B-VP", "I-VP"]], [["B-NP", "I-NP", "O", "B-VP", "B-VP"]])
    assert (r["n_gold"], r["n_pred"], r["n_correct"]) == (2, 3, 1)
    assert r["precision"] == pytest.approx(1 / 3) and r["recall"] == pytest.approx(1 / 2)
    assert r["f1"] == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))
    assert r["accuracy"] == pytest.approx(4 / 5) and r["n_tokens"] == 5
    assert r["per_type"]["NP"]["n_correct"] == 1 and r["per_type"]["VP"]["n_pred"] == 2
    assert r["per_type"]["VP"]["precision"] == 0.0


def test_conlleval_inside_after_outside_starts_a_chunk():
    # I-NP after O starts an NP chunk: gold NP[1,2] equals predicted NP[1,2]
    r = conlleval([["O", "I-NP", "I-NP", "O"]], [["O", "B-NP", "I-NP", "O"]])
    assert (r["n_gold"], r["n_pred"], r["n_correct"]) == (1, 1, 1)
    assert r["f1"] == 1.0 and r["accuracy"] == pytest.approx(3 / 4)
    # an I- at the sentence start also starts a chunk
    r = conlleval([["I-PP"]], [["B-PP"]])
    assert (r["n_gold"], r["n_pred"], r["n_correct"]) == (1, 1, 1)


def test_conlleval_type_mismatch():
    # I-VP after B-NP: the NP ends, a VP starts -> predicted NP[0] VP[1], gold NP[0,1]
    r = conlleval([["B-NP", "I-NP"]], [["B-NP", "I-VP"]])
    assert (r["n_gold"], r["n_pred"], r["n_correct"]) == (1, 2, 0)
    assert r["f1"] == 0.0 and r["accuracy"] == pytest.approx(1 / 2)
    # same span, different type
    r = conlleval([["B-NP", "I-NP", "O"]], [["B-VP", "I-VP", "O"]])
    assert (r["n_gold"], r["n_pred"], r["n_correct"]) == (1, 1, 0)


def test_conlleval_boundaries_and_lengths():
    # chunks never cross sentences: I-NP at the start of sentence 2 is a new chunk
    r = conlleval([["B-NP"], ["I-NP"]], [["B-NP"], ["I-NP"]])
    assert (r["n_gold"], r["n_pred"], r["n_correct"]) == (2, 2, 2)
    # predicted chunk longer than the gold one is wrong
    r = conlleval([["B-NP", "O"]], [["B-NP", "I-NP"]])
    assert (r["n_gold"], r["n_pred"], r["n_correct"]) == (1, 1, 0)
    # predicted chunk shorter than gold one, then the rest as a separate chunk
    r = conlleval([["B-NP", "I-NP", "I-NP"]], [["B-NP", "I-NP", "B-NP"]])
    assert (r["n_gold"], r["n_pred"], r["n_correct"]) == (1, 2, 0)
    # nothing to find: all zero, no division error
    r = conlleval([["O", "O"]], [["O", "O"]])
    assert (r["precision"], r["recall"], r["f1"], r["accuracy"]) == (0.0, 0.0, 0.0, 1.0)
    assert conlleval([], [])["n_tokens"] == 0
    with pytest.raises(ValueError, match="sentences"):
        conlleval([["O"]], [])
    with pytest.raises(ValueError, match="sentence 0"):
        conlleval([["O", "O"]], [["O"]])
    with pytest.raises(TypeError):
        conlleval(["B-NP"], ["B-NP"])


def test_conlleval_with_integer_labels():
    names = ("B-NP", "I-NP", "O")
    r = conlleval([np.array([0, 1, 2])], [np.array([0, 1, 2])], label_names=names)
    assert (r["n_gold"], r["n_correct"], r["f1"]) == (1, 1, 1.0)


def _spans(tags):
    """Independent IOB2 chunker: (start, end, type) spans, conlleval's convention."""
    out, start, typ = set(), None, None
    for k, tag in enumerate(list(tags) + ["O"]):
        pre, _, t = tag.partition("-")
        if start is not None and (pre in ("B", "O") or t != typ):
            out.add((start, k, typ))
            start = None
        if pre == "B" or (pre == "I" and start is None):
            start, typ = k, t
    return out


def test_conlleval_matches_span_matching_on_random_sequences():
    rng = np.random.default_rng(0)
    tags = ["O", "B-NP", "I-NP", "B-VP", "I-VP", "I-PP"]
    for _ in range(300):
        n_sent = int(rng.integers(1, 4))
        lengths = rng.integers(1, 9, size=n_sent)
        gold = [[tags[i] for i in rng.integers(0, len(tags), n)] for n in lengths]
        pred = [[tags[i] for i in rng.integers(0, len(tags), len(g))] for g in gold]
        r = conlleval(gold, pred)
        gs = [_spans(g) for g in gold]
        ps = [_spans(p) for p in pred]
        assert r["n_gold"] == sum(map(len, gs))
        assert r["n_pred"] == sum(map(len, ps))
        assert r["n_correct"] == sum(len(a & b) for a, b in zip(gs, ps))


# ------------------------------------------------------------------ the real data set
needs_data = pytest.mark.skipif(
    not SHARED.is_dir(),
    reason=f"CoNLL-2000 files not found at {SHARED} (shared development data directory)",
)


@pytest.fixture(scope="module")
def real():
    return load_conll2000(SHARED, verify=True)


@needs_data
def test_real_data_sizes_and_attribute_count(real):
    train, test = real
    assert (train.n, train.n_tokens) == (8936, 211727)
    assert (test.n, test.n_tokens) == (2012, 47377)
    assert train.n_labels == 22 and test.label_names == train.label_names
    assert train.label_names == tuple(sorted(train.label_names))
    # CRFsuite template, no padding, all attributes (CRFsuite's attribute count)
    assert train.n_features == test.n_features == 335_674
    assert len(train.extras["attribute_names"]) == 335_674
    assert train.feat_indices.size == 3_808_439 and test.feat_indices.size == 792_628
    # d = (n_features + 1 constant) * 22 + 22^2 (transitions) + 2 * 22 (first/last biases)
    assert (train.n_features + 1) * 22 + 22**2 + 2 * 22 == 7_385_378


@needs_data
def test_real_data_tokens_match_documented_attributes(real):
    train, test = real
    known = set(train.extras["attribute_names"])
    cases = ((train, lambda attrs: attrs), (test, lambda attrs: [a for a in attrs if a in known]))
    for data, check in cases:
        for i in (0, 1, data.n // 2, data.n - 1):
            sl = data.tokens(i)
            attrs = sentence_attributes(data.extras["words"][i], data.extras["pos"][i])
            for t, expected in zip(range(sl.start, sl.stop), attrs):
                assert token_names_of(train, data, t) == check(expected)


def token_names_of(train: SequenceData, data: SequenceData, t: int) -> list[str]:
    names = train.extras["attribute_names"]
    return [names[j] for j in data.feat_indices[data.feat_indptr[t]:data.feat_indptr[t + 1]]]


@needs_data
def test_real_data_i_lst_in_test(real):
    train, test = real
    assert "I-LST" not in train.label_names
    flat = [c for s in test.extras["chunks"] for c in s]
    idx = [k for k, c in enumerate(flat) if c == "I-LST"]
    assert len(idx) == 2
    assert all(test.labels[k] == train.label_names.index("B-LST") for k in idx)
    where = r"test\.txt, sentence 1504 \(starting at line 36802\).*'I-LST'"
    with pytest.raises(ValueError, match=where):
        load_conll2000(SHARED, unknown_test_labels="raise")


@needs_data
def test_real_data_other_variants():
    assert load_conll2000(SHARED, min_count=3)[0].n_features == 75_289  # within 1% of 74,658
    assert load_conll2000(SHARED, padding=True)[0].n_features == 338_547


@needs_data
def test_conlleval_reproduces_conll2000_baseline(real):
    """The shared task's baseline (most frequent chunk per POS tag): P 72.58, R 82.14, F 77.07."""
    train, test = real
    by_pos: dict = defaultdict(Counter)
    for pos, chunks in zip(train.extras["pos"], train.extras["chunks"]):
        for p, c in zip(pos, chunks):
            by_pos[p][c] += 1
    best = {p: c.most_common(1)[0][0] for p, c in by_pos.items()}
    pred = [[best.get(p, "O") for p in pos] for pos in test.extras["pos"]]
    r = conlleval(test.extras["chunks"], pred)
    assert r["n_gold"] == 23852 and r["n_tokens"] == 47377
    assert round(100 * r["precision"], 2) == 72.58
    assert round(100 * r["recall"], 2) == 82.14
    assert round(100 * r["f1"], 2) == 77.07
    perfect = conlleval(test.extras["chunks"], test.extras["chunks"])
    assert perfect["f1"] == 1.0 and perfect["accuracy"] == 1.0


def test_cut_train_file_is_refused_by_default(tmp_path):
    """A train.txt cut in the middle of a line (inside the chunk tag) used to load without a
    word; the official checksums are now checked by default and the message names the file."""
    import os
    env = os.environ.get("GAPLAB_DATA")
    cands = [SHARED] + ([Path(env), Path(env) / "conll2000"] if env else [])
    src = next((c for c in cands if (c / "train.txt").is_file() and (c / "test.txt").is_file()), None)
    if src is None:
        pytest.skip(f"CoNLL-2000 data not available at {SHARED} or $GAPLAB_DATA")
    d = tmp_path / "cut"
    d.mkdir()
    raw = (src / "train.txt").read_bytes()
    cut = raw.index(b" B-NP\n", len(raw) // 2) + 3  # inside "B-NP" of a line half-way through
    (d / "train.txt").write_bytes(raw[:cut])
    (d / "test.txt").write_bytes((src / "test.txt").read_bytes())
    with pytest.raises(ValueError) as err:
        conll.load_conll2000(d)
    msg = str(err.value)
    assert str(d / "train.txt") in msg and "sha256" in msg and "verify=False" in msg
    train, _ = conll.load_conll2000(d, verify=False)  # the opt-out still loads it
    assert train.n < 8936


def test_cli_no_verify_flag(tmp_path):
    from gaplab.cli import build_parser
    args = build_parser().parse_args(["train", "--dataset", "conll2000", "--no-verify"])
    assert args.verify is False
    assert build_parser().parse_args(["train"]).verify is True
