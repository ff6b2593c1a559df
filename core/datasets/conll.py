"""The CoNLL-2000 text-chunking data set (Tjong Kim Sang and Buchholz, 2000).

WSJ sections 15-18 form the training set (8,936 sentences, 211,727 tokens), section 20 the
test set (2,012 sentences, 47,377 tokens). Every token carries a word, a part-of-speech tag
(from the Brill tagger) and a chunk tag in IOB2 notation; 22 chunk tags occur in training.

The files are **not** shipped with gaplab. :func:`load_conll2000` reads ``train.txt`` and
``test.txt`` from a directory given by the user, by ``$GAPLAB_DATA`` or from the user cache
directory, and downloads them from the original site only on request (``download=True``).

Attributes (the unary token features)
-------------------------------------
The attributes are those of CRFsuite's CoNLL-2000 chunking example (``chunking.py``, after
Sha and Pereira, 2003), which the paper (Osokin et al., 2016, App. I.2) uses. With ``w[i]``
and ``pos[i]`` the word and POS tag at offset ``i`` from the token ``t``, every token gets, in
this order, the attributes (written ``name=value``, the value of a conjunction joined by
``|``):

====  ==========================  ==================================================
 #    template                    example (token "the" in "He reckons the deficit")
====  ==========================  ==================================================
 1    ``w[-2]``                   ``w[-2]=He``
 2    ``w[-1]``                   ``w[-1]=reckons``
 3    ``w[0]``                    ``w[0]=the``
 4    ``w[1]``                    ``w[1]=deficit``
 5    ``w[2]``                    (absent: beyond the sentence end)
 6    ``w[-1]|w[0]``              ``w[-1]|w[0]=reckons|the``
 7    ``w[0]|w[1]``               ``w[0]|w[1]=the|deficit``
 8    ``pos[-2]``                 ``pos[-2]=PRP``
 9    ``pos[-1]``                 ``pos[-1]=VBZ``
 10   ``pos[0]``                  ``pos[0]=DT``
 11   ``pos[1]``                  ``pos[1]=NN``
 12   ``pos[2]``                  (absent)
 13   ``pos[-2]|pos[-1]``         ``pos[-2]|pos[-1]=PRP|VBZ``
 14   ``pos[-1]|pos[0]``          ``pos[-1]|pos[0]=VBZ|DT``
 15   ``pos[0]|pos[1]``           ``pos[0]|pos[1]=DT|NN``
 16   ``pos[1]|pos[2]``           (absent)
 17   ``pos[-2]|pos[-1]|pos[0]``  ``pos[-2]|pos[-1]|pos[0]=PRP|VBZ|DT``
 18   ``pos[-1]|pos[0]|pos[1]``   ``pos[-1]|pos[0]|pos[1]=VBZ|DT|NN``
 19   ``pos[0]|pos[1]|pos[2]``    (absent)
 20   ``__BOS__``                 only on the first token of a sentence
 21   ``__EOS__``                 only on the last token of a sentence
====  ==========================  ==================================================

As in CRFsuite, a template that reaches outside the sentence yields **no** attribute (there is
no padding), and the separate attributes ``__BOS__`` / ``__EOS__`` mark the first / last token
(a one-token sentence has both). Words are used as they are (case-sensitive). This is the
default, ``padding=False``. With ``padding=True`` positions outside the sentence take the value
``__BOS__`` (left) or ``__EOS__`` (right), e.g. ``w[-1]=__BOS__`` or
``pos[-2]|pos[-1]=__BOS__|__BOS__``, every template is always present, and the separate
``__BOS__`` / ``__EOS__`` attributes (rows 20-21) are not added.

Every attribute is an indicator (value 1.0). The attribute dictionary is built from the
training set only: attribute ``j`` exists if it occurs at ``min_count`` training tokens or more.
Attribute indices are grouped by template, in the table's order, and within a template follow
the order of first occurrence in the training file; ``train.extras["attribute_names"][j]``
names attribute ``j``. Attributes of the test set that are not in the dictionary are dropped.
No constant attribute is added: the chain model appends its own constant-1 attribute.

Counts on the CoNLL-2000 training set (``n_features``):

* ``padding=False`` (default), ``min_count=1``: **335,674** attributes -- what CRFsuite's
  own extraction gives (same templates, no padding, no frequency cut-off);
* ``padding=True``, ``min_count=1``: 338,547;
* ``padding=False``, ``min_count=3``: 75,289 (``padding=True``: 76,324).

The paper reports a unary representation of dimension 74,658, i.e.
``d = 74,658 * 22 + 22**2 + 3 * 22 = 1,643,026`` where ``3 * 22`` are the per-label bias
(the chain model's constant attribute, so ``n_features + 1`` emission rows) and the
first/last-token biases. With the default attributes ``d = 335,674 * 22 + 22**2 + 3 * 22 =
7,385,378``. Neither boundary scheme of the documented CRFsuite template reproduces the
paper's size without a frequency cut-off; ``min_count=3`` comes within 1% of it (75,289,
``d = 1,656,908``).

Labels
------
The label set is the set of chunk tags seen in training, in Python's sorted (code point)
order: ``B-ADJP, B-ADVP, B-CONJP, B-INTJ, B-LST, B-NP, B-PP, B-PRT, B-SBAR, B-UCP, B-VP,
I-ADJP, I-ADVP, I-CONJP, I-INTJ, I-NP, I-PP, I-PRT, I-SBAR, I-UCP, I-VP, O`` for CoNLL-2000.
A test chunk tag outside this set raises ``ValueError``, with one exception by default
(``unknown_test_labels="begin"``): an ``I-X`` whose ``B-X`` is a training label is encoded as
``B-X``. The CoNLL-2000 test file needs it: it has two ``I-LST`` tokens (both in test sentence
1504, lines 36816 and 36850) while training has ``B-LST`` only. The original tags are kept in
``extras["chunks"]``; score predictions against them with :func:`conlleval`.

Evaluation
----------
:func:`conlleval` reproduces the chunk-based precision / recall / F1 of the CoNLL-2000
``conlleval`` script (as fractions in ``[0, 1]``, not percent).
"""
from __future__ import annotations

import gzip
import hashlib
import os
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs

from .base import SequenceData

__all__ = [
    "load_conll2000",
    "parse_conll",
    "make_conll_datasets",
    "sentence_attributes",
    "conlleval",
    "ATTRIBUTE_TEMPLATES",
    "CONLL2000_URLS",
    "CONLL2000_SHA256",
    "CONLL2000_FILES",
]

#: file names looked for in every candidate directory
CONLL2000_FILES = ("train.txt", "test.txt")

#: where ``download=True`` fetches the gzipped files from
CONLL2000_URLS = {
    "train.txt": "https://www.clips.uantwerpen.be/conll2000/chunking/train.txt.gz",
    "test.txt": "https://www.clips.uantwerpen.be/conll2000/chunking/test.txt.gz",
}

#: sha256 of the *uncompressed* files; checked on every download and with ``verify=True``
CONLL2000_SHA256 = {
    "train.txt": "82033cd7a72b209923a98007793e8f9de3abc1c8b79d646c50648eb949b87cea",
    "test.txt": "73b7b1e565fa75a1e22fe52ecdf41b6624d6f59dacb591d44252bf4d692b1628",
}

#: the 19 CRFsuite templates, in order: a tuple of (field, offset) per template
ATTRIBUTE_TEMPLATES: tuple = (
    (("w", -2),),
    (("w", -1),),
    (("w", 0),),
    (("w", 1),),
    (("w", 2),),
    (("w", -1), ("w", 0)),
    (("w", 0), ("w", 1)),
    (("pos", -2),),
    (("pos", -1),),
    (("pos", 0),),
    (("pos", 1),),
    (("pos", 2),),
    (("pos", -2), ("pos", -1)),
    (("pos", -1), ("pos", 0)),
    (("pos", 0), ("pos", 1)),
    (("pos", 1), ("pos", 2)),
    (("pos", -2), ("pos", -1), ("pos", 0)),
    (("pos", -1), ("pos", 0), ("pos", 1)),
    (("pos", 0), ("pos", 1), ("pos", 2)),
)
_TEMPLATE_PREFIXES = tuple(
    "|".join(f"{field}[{off}]" for field, off in tmpl) + "=" for tmpl in ATTRIBUTE_TEMPLATES
)
BOS = "__BOS__"
EOS = "__EOS__"
_MAX_OFFSET = 2  # largest |offset| in the templates
_DOWNLOAD_TIMEOUT = 60.0


# --------------------------------------------------------------------------- parsing
def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _parse(path_or_lines: Any) -> tuple[list, list, str]:
    """Parse; return (sentences, 1-based first line of each sentence, source name)."""
    if isinstance(path_or_lines, (str, os.PathLike)):
        path = Path(path_or_lines)
        source = str(path)
        lines: Iterable[str] = _decode(path.read_bytes()).splitlines()
    elif isinstance(path_or_lines, bytes):
        raise TypeError("parse_conll takes a path or an iterable of str lines, not bytes")
    else:
        source = "<lines>"
        lines = path_or_lines
    sentences: list = []
    starts: list = []
    words: list = []
    pos: list = []
    chunks: list = []
    start = 0
    for lineno, line in enumerate(lines, 1):
        if not isinstance(line, str):
            raise TypeError(f"{source}: line {lineno} is {type(line).__name__}, expected str")
        parts = line.split()
        if not parts:
            if words:
                sentences.append((tuple(words), tuple(pos), tuple(chunks)))
                starts.append(start)
                words, pos, chunks = [], [], []
            continue
        if len(parts) != 3:
            raise ValueError(
                f"{source}, line {lineno}: expected 3 whitespace-separated columns "
                f"(word POS chunk), got {len(parts)}: {line.rstrip(chr(10) + chr(13))!r}"
            )
        if not words:
            start = lineno
        words.append(parts[0])
        pos.append(parts[1])
        chunks.append(parts[2])
    if words:
        sentences.append((tuple(words), tuple(pos), tuple(chunks)))
        starts.append(start)
    return sentences, starts, source


_Sentence = tuple  # (words, pos, chunks), each a tuple of str


def parse_conll(path_or_lines: Any) -> list[_Sentence]:
    """Parse a CoNLL-2000 chunking file.

    One token a line, ``word POS chunk`` separated by whitespace; blank (or whitespace-only)
    lines separate sentences. Several blank lines in a row and a missing final blank line are
    accepted.

    Parameters
    ----------
    path_or_lines : str, os.PathLike or iterable of str
        A file path (read as UTF-8, falling back to Latin-1) or the lines themselves.

    Returns
    -------
    list of tuple
        One ``(words, pos, chunks)`` triple per sentence, each a tuple of str of the sentence
        length.

    Raises
    ------
    ValueError
        If a non-blank line does not have exactly three columns; the message names the file
        (``<lines>`` for an iterable), the 1-based line number and the line.
    FileNotFoundError
        If the path does not exist.
    """
    return _parse(path_or_lines)[0]


# --------------------------------------------------------------------------- attributes
def sentence_attributes(
    words: Sequence[str], pos: Sequence[str], padding: bool = False
) -> list[list[str]]:
    """Attribute names of every token of one sentence (see the module docstring).

    Parameters
    ----------
    words, pos : sequence of str
        Words and part-of-speech tags of the sentence (same length, at least one token).
    padding : bool, default False
        ``False``: CRFsuite's scheme (templates reaching outside the sentence are absent, plus
        ``__BOS__`` / ``__EOS__`` on the first / last token). ``True``: outside positions take
        the values ``__BOS__`` / ``__EOS__`` and every template is present.

    Returns
    -------
    list of list of str
        ``attrs[t]`` are the attribute names of token ``t``, in template order.
    """
    n = len(words)
    if len(pos) != n:
        raise ValueError(f"words and pos must have the same length, got {n} and {len(pos)}")
    if n == 0:
        raise ValueError("a sentence needs at least one token")
    cols = {"w": list(words), "pos": list(pos)}
    out = []
    for t in range(n):
        attrs = []
        for prefix, tmpl in zip(_TEMPLATE_PREFIXES, ATTRIBUTE_TEMPLATES):
            vals = []
            for field, off in tmpl:
                p = t + off
                if 0 <= p < n:
                    vals.append(cols[field][p])
                elif padding:
                    vals.append(BOS if p < 0 else EOS)
                else:
                    vals = None
                    break
            if vals is not None:
                attrs.append(prefix + "|".join(vals))
        if not padding:
            if t == 0:
                attrs.append(BOS)
            if t == n - 1:
                attrs.append(EOS)
        out.append(attrs)
    return out


def _n_columns(padding: bool) -> int:
    return len(ATTRIBUTE_TEMPLATES) + (0 if padding else 2)


def _attribute_columns(sentences: Sequence, padding: bool) -> Iterator[list]:
    """Attribute strings column by column (one column per template, then BOS/EOS).

    Yields ``_n_columns(padding)`` lists over all tokens of the corpus, holding the attribute
    string or None. Built with list comprehensions over the whole corpus (no per-token Python
    loop body); a generator, so that only one column of strings is alive at a time.
    """
    lay_w: list = []
    lay_p: list = []
    left = [BOS if padding else None] * _MAX_OFFSET
    right = [EOS if padding else None] * _MAX_OFFSET
    tok_pos: list = []
    first: list = []
    last: list = []
    for words, pos, _ in sentences:
        lay_w += left
        lay_p += left
        base = len(lay_w)
        n = len(words)
        tok_pos.extend(range(base, base + n))
        lay_w += words
        lay_p += pos
        lay_w += right
        lay_p += right
        first.append(len(tok_pos) - n)
        last.append(len(tok_pos) - 1)
    lay = {"w": np.array(lay_w, dtype=object), "pos": np.array(lay_p, dtype=object)}
    idx = np.asarray(tok_pos, dtype=np.int64)
    shifted: dict = {}

    def get(field: str, off: int) -> list:
        key = (field, off)
        if key not in shifted:
            shifted[key] = lay[field][idx + off].tolist()
        return shifted[key]

    for prefix, tmpl in zip(_TEMPLATE_PREFIXES, ATTRIBUTE_TEMPLATES):
        vals = [get(f, o) for f, o in tmpl]
        if len(vals) == 1:
            (a,) = vals
            col = [None if x is None else prefix + x for x in a]
        elif len(vals) == 2:
            a, b = vals
            col = [None if (x is None or y is None) else prefix + x + "|" + y for x, y in zip(a, b)]
        else:
            a, b, c = vals
            col = [
                None if (x is None or y is None or z is None) else prefix + x + "|" + y + "|" + z
                for x, y, z in zip(a, b, c)
            ]
        yield col
        del col
    if not padding:
        n_tok = len(tok_pos)
        bos = [None] * n_tok
        eos = [None] * n_tok
        for i in first:
            bos[i] = BOS
        for i in last:
            eos[i] = EOS
        yield bos
        yield eos


# --------------------------------------------------------------------------- datasets
def _check_sentences(sentences: Sequence, what: str) -> None:
    if len(sentences) == 0:
        raise ValueError(f"{what} contains no sentence")
    for i, s in enumerate(sentences):
        if len(s) != 3 or not (len(s[0]) == len(s[1]) == len(s[2])) or len(s[0]) == 0:
            raise ValueError(
                f"{what}: sentence {i} must be a (words, pos, chunks) triple of equal, "
                "non-zero lengths"
            )


def _csr_from_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR of a (n_tokens, n_columns) id matrix where -1 means 'no attribute'."""
    mask = ids >= 0
    indptr = np.zeros(ids.shape[0] + 1, dtype=np.int64)
    np.cumsum(mask.sum(axis=1), out=indptr[1:])
    indices = ids[mask]  # row-major: grouped by token, increasing (column offsets increase)
    return indptr, indices, np.ones(indices.size, dtype=np.float64)


def make_conll_datasets(
    train_sentences: Sequence,
    test_sentences: Sequence | None = None,
    *,
    min_count: int = 1,
    padding: bool = False,
    name: str = "conll2000",
    train_source: str = "train",
    test_source: str = "test",
    unknown_test_labels: str = "begin",
    _test_start_lines: Sequence[int] | None = None,
) -> tuple[SequenceData, SequenceData | None]:
    """Build train (and test) :class:`SequenceData` from parsed sentences.

    The attribute dictionary and the label set come from the training sentences only.

    Parameters
    ----------
    train_sentences : sequence of (words, pos, chunks)
        As returned by :func:`parse_conll`.
    test_sentences : sequence of (words, pos, chunks), optional
        Encoded with the training dictionary (unseen attributes dropped).
    min_count : int, default 1
        Keep an attribute only if it occurs at ``min_count`` or more training tokens.
    padding : bool, default False
        Boundary scheme, see :func:`sentence_attributes`.
    name : str, default "conll2000"
        The data sets are named ``f"{name}/train"`` and ``f"{name}/test"``.
    train_source, test_source : str
        Names (e.g. file paths) used in error messages.
    unknown_test_labels : {"begin", "raise"}, default "begin"
        What to do with a test chunk tag that does not occur in training. ``"raise"``: raise
        ``ValueError``. ``"begin"``: a tag ``I-X`` whose ``B-X`` is a training label is encoded
        as ``B-X`` (the CoNLL-2000 test file has two ``I-LST`` tokens, a tag absent from
        training); any other unseen tag still raises. The original tags stay in
        ``extras["chunks"]``, so :func:`conlleval` against them scores the true gold chunks.

    Returns
    -------
    train : SequenceData
        ``extras``: ``words``, ``pos``, ``chunks`` (a tuple per sentence of tuples of str) and
        ``attribute_names`` (tuple of str, attribute index -> name).
    test : SequenceData or None
        Same ``n_features`` and ``label_names`` as ``train``; ``extras``: ``words``, ``pos``,
        ``chunks``. ``None`` if ``test_sentences`` is None.

    Raises
    ------
    ValueError
        If ``min_count < 1``, a sentence is malformed, no attribute survives ``min_count``, or a
        test chunk tag was not seen in training and ``unknown_test_labels`` does not map it
        (the message names the source, the sentence and the tag).
    """
    if isinstance(min_count, bool) or not isinstance(min_count, (int, np.integer)) or min_count < 1:
        raise ValueError(f"min_count must be an int >= 1, got {min_count!r}")
    if unknown_test_labels not in ("begin", "raise"):
        raise ValueError(
            f"unknown_test_labels must be 'begin' or 'raise', got {unknown_test_labels!r}"
        )
    _check_sentences(train_sentences, train_source)

    # ---- training dictionary, one local dict per column
    columns = _attribute_columns(train_sentences, padding)
    n_tok = sum(len(s[0]) for s in train_sentences)
    ids = np.empty((n_tok, _n_columns(padding)), dtype=np.int64)
    dicts = []
    names: list = []
    offset = 0
    for c, col in enumerate(columns):
        d: dict = {}
        local = np.fromiter(
            (-1 if s is None else d.setdefault(s, len(d)) for s in col), dtype=np.int64, count=n_tok
        )
        keys = list(d)  # insertion order == local id
        if min_count > 1:
            counts = np.bincount(local[local >= 0], minlength=len(keys))
            keep = counts >= min_count
            remap = np.full(len(keys) + 1, -1, dtype=np.int64)  # last slot maps -1 -> -1
            remap[:-1][keep] = np.arange(int(keep.sum()), dtype=np.int64)
            local = remap[local]
            keys = [k for k, kp in zip(keys, keep) if kp]
            d = {k: i for i, k in enumerate(keys)}
        ids[:, c] = np.where(local >= 0, local + offset, -1)
        dicts.append((d, offset))
        names.extend(keys)
        offset += len(keys)
        del col, local
    n_features = offset
    if n_features == 0:
        raise ValueError(
            f"no attribute occurs at {min_count} or more training tokens; lower min_count"
        )

    label_names = tuple(sorted({c for s in train_sentences for c in s[2]}))
    label_index = {lab: k for k, lab in enumerate(label_names)}

    def encode(sentences, ids_, source, start_lines=None, policy="raise"):
        lookup = dict(label_index)
        unseen = {c for s in sentences for c in s[2]} - set(label_index)
        for c in sorted(unseen):
            if policy == "begin" and c.startswith("I-") and "B-" + c[2:] in label_index:
                lookup[c] = label_index["B-" + c[2:]]
                continue
            i = next(i for i, s in enumerate(sentences) if c in s[2])
            where = f"sentence {i + 1}"
            if start_lines is not None:
                where += f" (starting at line {start_lines[i]})"
            raise ValueError(
                f"{source}, {where}: chunk label {c!r} was not seen in training "
                f"(known labels: {', '.join(label_names)})"
            )
        labels = np.fromiter(
            (lookup[c] for s in sentences for c in s[2]), dtype=np.int64, count=ids_.shape[0]
        )
        lengths = np.fromiter((len(s[0]) for s in sentences), dtype=np.int64, count=len(sentences))
        seq_offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
        np.cumsum(lengths, out=seq_offsets[1:])
        indptr, indices, values = _csr_from_ids(ids_)
        return seq_offsets, indptr, indices, values, labels

    train_arrays = encode(train_sentences, ids, train_source)
    del ids

    def split(sentences, arrays, suffix, **extras):
        so, ip, ind, val, lab = arrays
        return SequenceData(
            seq_offsets=so, feat_indptr=ip, feat_indices=ind, feat_values=val, labels=lab,
            n_features=n_features, label_names=label_names, name=f"{name}/{suffix}",
            extras={"words": tuple(s[0] for s in sentences), "pos": tuple(s[1] for s in sentences),
                    "chunks": tuple(s[2] for s in sentences), **extras},
        )

    train = split(train_sentences, train_arrays, "train", attribute_names=tuple(names))
    del train_arrays
    if test_sentences is None:
        return train, None

    _check_sentences(test_sentences, test_source)
    columns = _attribute_columns(test_sentences, padding)
    n_tok = sum(len(s[0]) for s in test_sentences)
    ids = np.empty((n_tok, _n_columns(padding)), dtype=np.int64)
    for c, (col, (d, off)) in enumerate(zip(columns, dicts)):
        get = d.get
        local = np.fromiter((get(s, -1) for s in col), dtype=np.int64, count=n_tok)
        ids[:, c] = np.where(local >= 0, local + off, -1)
        del col, local
    test = split(test_sentences, encode(test_sentences, ids, test_source, _test_start_lines, unknown_test_labels),
                 "test")
    return train, test


# --------------------------------------------------------------------------- locating files
def _cache_root() -> Path:
    """The user cache directory of gaplab (``platformdirs.user_cache_dir("gaplab")``)."""
    return Path(platformdirs.user_cache_dir("gaplab"))


def _candidate_dirs(data_home: Any) -> list[tuple[Path, str]]:
    if data_home is not None:
        p = Path(data_home).expanduser()
        return [(p, "data_home"), (p / "conll2000", "data_home")]
    out = []
    env = os.environ.get("GAPLAB_DATA", "").strip()
    if env:
        p = Path(env).expanduser()
        out += [(p, "$GAPLAB_DATA"), (p / "conll2000", "$GAPLAB_DATA")]
    out.append((_cache_root() / "conll2000", "user cache"))
    return out


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _download(dest: Path) -> None:
    """Fetch the missing files into ``dest``, gunzip and check sha256 before saving."""
    dest.mkdir(parents=True, exist_ok=True)
    for fname in CONLL2000_FILES:
        target = dest / fname
        if target.is_file():
            continue
        url = CONLL2000_URLS[fname]
        try:
            with urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT) as resp:
                payload = resp.read()
        except OSError as exc:  # URLError, HTTPError, timeouts
            raise OSError(
                f"could not download CoNLL-2000 {fname} from {url}: {exc}. Download it by hand, "
                f"gunzip it and pass its directory as data_home=... or set GAPLAB_DATA"
            ) from exc
        try:
            raw = gzip.decompress(payload)
        except (OSError, EOFError) as exc:
            raise ValueError(
                f"the file downloaded from {url} is not valid gzip data: {exc}"
            ) from exc
        got = hashlib.sha256(raw).hexdigest()
        expected = CONLL2000_SHA256[fname]
        if got != expected:
            raise ValueError(
                f"sha256 mismatch for {fname} downloaded from {url}: expected {expected}, "
                f"got {got}; the file was not saved"
            )
        part = target.with_name(fname + ".part")
        part.write_bytes(raw)
        os.replace(part, target)


def _locate(data_home: Any, download: bool) -> Path:
    cands = _candidate_dirs(data_home)
    for d, _ in cands:
        if all((d / f).is_file() for f in CONLL2000_FILES):
            return d
    if download:
        dest = cands[0][0] if data_home is not None else _cache_root() / "conll2000"
        _download(dest)
        return dest
    lines = []
    for d, why in cands:
        missing = [f for f in CONLL2000_FILES if not (d / f).is_file()]
        state = "directory does not exist" if not d.is_dir() else f"missing {', '.join(missing)}"
        lines.append(f"  - {d}  [{why}; {state}]")
    raise FileNotFoundError(
        "CoNLL-2000 files train.txt and test.txt not found. Looked in:\n"
        + "\n".join(lines)
        + "\nTo get the data, either pass load_conll2000(data_home=DIR) with DIR holding "
        "train.txt and test.txt (or a conll2000/ subfolder with them), or set the environment "
        "variable GAPLAB_DATA to such a directory, or call load_conll2000(download=True) to fetch "
        f"them from {CONLL2000_URLS['train.txt'].rsplit('/', 1)[0]}/ into "
        f"{_cache_root() / 'conll2000'}."
    )


def load_conll2000(
    data_home: Any = None,
    download: bool = False,
    min_count: int = 1,
    *,
    verify: bool = True,
    padding: bool = False,
    unknown_test_labels: str = "begin",
) -> tuple[SequenceData, SequenceData]:
    """Load the CoNLL-2000 chunking data set with CRFsuite's chunking attributes.

    ``train.txt`` and ``test.txt`` (uncompressed) are looked for

    1. if ``data_home`` is given: in ``data_home`` or ``data_home/conll2000`` (and nowhere
       else);
    2. otherwise in ``$GAPLAB_DATA`` or ``$GAPLAB_DATA/conll2000``, then in
       ``platformdirs.user_cache_dir("gaplab")/conll2000``.

    The first directory holding both files is used. Nothing is downloaded unless
    ``download=True``.

    Parameters
    ----------
    data_home : str or os.PathLike, optional
        Directory with ``train.txt`` and ``test.txt`` (or with a ``conll2000/`` subfolder
        holding them).
    download : bool, default False
        If the files are not found, download ``train.txt.gz`` and ``test.txt.gz`` from
        ``CONLL2000_URLS``, gunzip them into ``data_home`` (if given) or the user cache
        directory, after checking their sha256 against ``CONLL2000_SHA256``.
    min_count : int, default 1
        Keep attributes occurring at ``min_count`` or more training tokens. ``1`` keeps all
        335,674 CRFsuite attributes; ``3`` keeps 75,289, within 1% of the 74,658 unary
        attributes reported in the paper.
    verify : bool, default True
        Check the sha256 of the files found locally against ``CONLL2000_SHA256`` (the official
        files; about 0.05 s). A cut or edited file is refused with a message naming it, instead
        of loading silently with fewer sentences. ``verify=False`` (``--no-verify`` on the
        command line) loads modified or home-made files.
    padding : bool, default False
        Boundary scheme of the attributes, see the module docstring.
    unknown_test_labels : {"begin", "raise"}, default "begin"
        Handling of test tags absent from training, see :func:`make_conll_datasets`. The
        CoNLL-2000 test file has two ``I-LST`` tokens (absent from training), which
        ``"begin"`` encodes as ``B-LST``; ``"raise"`` refuses to load it.

    Returns
    -------
    train, test : SequenceData
        Named ``conll2000/train`` and ``conll2000/test``; see :func:`make_conll_datasets`.

    Raises
    ------
    FileNotFoundError
        If the files are not found and ``download`` is False; the message lists every
        directory searched and how to provide the data.
    ValueError
        On a checksum mismatch (downloaded files, or local files unless ``verify=False``), a
        malformed line, or a test chunk tag unseen in training.
    OSError
        If a download fails.
    """
    d = _locate(data_home, download)
    paths = [d / f for f in CONLL2000_FILES]
    if verify:
        for p in paths:
            got = _sha256_file(p)
            expected = CONLL2000_SHA256[p.name]
            if got != expected:
                raise ValueError(
                    f"sha256 mismatch for {p}: expected {expected} (the official CoNLL-2000 "
                    f"{p.name}), got {got}. The file is damaged (cut or edited): download it again, "
                    "or pass verify=False (gaplab: --no-verify) to load a modified copy on purpose"
                )
    train_sents, _, train_src = _parse(paths[0])
    test_sents, test_starts, test_src = _parse(paths[1])
    train, test = make_conll_datasets(
        train_sents, test_sents, min_count=min_count, padding=padding, name="conll2000",
        train_source=train_src, test_source=test_src, unknown_test_labels=unknown_test_labels,
        _test_start_lines=test_starts,
    )
    assert test is not None
    return train, test


# --------------------------------------------------------------------------- evaluation
def _split_tag(tag: str) -> tuple[str, str]:
    # conlleval: /^([^-]*)-(.*)$/ -> (prefix, type); otherwise (tag, "")
    head, sep, tail = tag.partition("-")
    return (head, tail) if sep else (tag, "")


def _end_of_chunk(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    return (
        (prev_tag == "B" and tag == "B")
        or (prev_tag == "B" and tag == "O")
        or (prev_tag == "I" and tag == "B")
        or (prev_tag == "I" and tag == "O")
        or (prev_tag == "E" and tag in ("E", "I", "O"))
        or (prev_tag != "O" and prev_tag != "." and prev_type != type_)
        or prev_tag in ("]", "[")
    )


def _start_of_chunk(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    return (
        (prev_tag == "B" and tag == "B")
        or (prev_tag == "I" and tag == "B")
        or (prev_tag == "O" and tag == "B")
        or (prev_tag == "O" and tag == "I")
        or (prev_tag == "E" and tag in ("E", "I"))
        or (prev_tag == "O" and tag == "E")
        or (tag != "O" and tag != "." and prev_type != type_)
        or tag in ("[", "]")
    )


def _as_tag_sequences(seqs: Any, label_names: Sequence[str] | None, what: str) -> list:
    if isinstance(seqs, (str, bytes)):
        raise TypeError(f"{what} must be a list of sequences of tags, not a single string")
    out = []
    for i, s in enumerate(seqs):
        if isinstance(s, str):
            raise TypeError(f"{what}[{i}] is a str; pass a sequence of tags per sentence")
        tags = list(s.tolist() if isinstance(s, np.ndarray) else s)
        if label_names is not None:
            try:
                tags = [label_names[int(k)] if not isinstance(k, str) else k for k in tags]
            except (IndexError, ValueError, TypeError) as exc:
                raise ValueError(f"{what}[{i}]: label index out of range of label_names") from exc
        for t in tags:
            if not isinstance(t, str):
                raise TypeError(
                    f"{what}[{i}] holds {type(t).__name__} tags; pass str tags or label_names"
                )
        out.append(tags)
    return out


def conlleval(gold_tags: Any, pred_tags: Any, label_names: Sequence[str] | None = None) -> dict:
    """Chunk precision, recall and F1 exactly as the CoNLL-2000 ``conlleval`` script.

    A tag ``X-TYPE`` is split at its first hyphen into prefix ``X`` and chunk type ``TYPE``;
    ``O`` has no type. With IOB2 tags a chunk of type ``T`` starts at ``B-T``, and also at an
    ``I-T`` that follows ``O``, the sentence start or a tag of another type (as conlleval does);
    it continues over ``I-T`` and ends before ``O``, ``B-*``, a tag of another type or the
    sentence end. A predicted chunk is correct if a gold chunk has the same type, start and
    end. Sentences are evaluated independently (conlleval's blank-line boundary).

    Parameters
    ----------
    gold_tags, pred_tags : sequence of sequences of str
        Gold and predicted tags, one sequence per sentence, of matching lengths. With
        ``label_names``, sequences of integer label indices (e.g. arrays) are also accepted.
    label_names : sequence of str, optional
        Maps integer labels to tag strings.

    Returns
    -------
    dict
        ``precision``, ``recall``, ``f1`` (chunk level, fractions in ``[0, 1]``, ``0.0`` when
        undefined), ``accuracy`` (fraction of tokens whose tag is exactly right),
        ``n_gold``, ``n_pred``, ``n_correct`` (chunk counts), ``n_tokens``,
        ``n_correct_tags`` and ``per_type`` (a dict type -> dict with the same chunk-level
        keys). Multiply by 100 for conlleval's percentages.

    Raises
    ------
    ValueError
        If the numbers of sentences or the lengths of a sentence differ.
    """
    gold = _as_tag_sequences(gold_tags, label_names, "gold_tags")
    pred = _as_tag_sequences(pred_tags, label_names, "pred_tags")
    if len(gold) != len(pred):
        raise ValueError(f"gold_tags has {len(gold)} sentences but pred_tags has {len(pred)}")
    for i, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted tags")

    n_correct = n_gold = n_pred = 0
    n_tokens = n_correct_tags = 0
    by_type: dict = {}

    def bump(type_: str, key: str) -> None:
        by_type.setdefault(type_, {"n_gold": 0, "n_pred": 0, "n_correct": 0})[key] += 1

    for g_seq, p_seq in zip(gold, pred):
        last_c, last_g, last_ct, last_gt = "O", "O", "", ""
        in_correct = False
        # iterate the tokens, then one boundary token "O" (conlleval's blank line)
        for k in range(len(g_seq) + 1):
            boundary = k == len(g_seq)
            if boundary:
                c, ct, g, gt = "O", "", "O", ""
            else:
                c, ct = _split_tag(g_seq[k])
                g, gt = _split_tag(p_seq[k])
            end_c = _end_of_chunk(last_c, c, last_ct, ct)
            end_g = _end_of_chunk(last_g, g, last_gt, gt)
            if in_correct:
                if end_c and end_g and last_gt == last_ct:
                    in_correct = False
                    n_correct += 1
                    bump(last_ct, "n_correct")
                elif end_c != end_g or gt != ct:
                    in_correct = False
            start_c = _start_of_chunk(last_c, c, last_ct, ct)
            start_g = _start_of_chunk(last_g, g, last_gt, gt)
            if start_c and start_g and gt == ct:
                in_correct = True
            if start_c:
                n_gold += 1
                bump(ct, "n_gold")
            if start_g:
                n_pred += 1
                bump(gt, "n_pred")
            if not boundary:
                n_tokens += 1
                if c == g and ct == gt:
                    n_correct_tags += 1
            last_c, last_g, last_ct, last_gt = c, g, ct, gt
        # the trailing boundary "O" closes every chunk, so in_correct is False here

    def prf(nc: int, ng: int, npred: int) -> dict:
        p = nc / npred if npred else 0.0
        r = nc / ng if ng else 0.0
        f = 2 * p * r / (p + r) if p + r > 0 else 0.0
        return {
            "precision": p, "recall": r, "f1": f, "n_gold": ng, "n_pred": npred, "n_correct": nc,
        }

    out = prf(n_correct, n_gold, n_pred)
    out["accuracy"] = n_correct_tags / n_tokens if n_tokens else 0.0
    out["n_tokens"] = n_tokens
    out["n_correct_tags"] = n_correct_tags
    out["per_type"] = {
        t: prf(v["n_correct"], v["n_gold"], v["n_pred"]) for t, v in sorted(by_type.items())
    }
    return out
