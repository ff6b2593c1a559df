"""The CoNLL-2000 token attributes (CRFsuite's chunking templates) and the encoding of parsed
sentences as :class:`~gaplab.core.datasets.base.SequenceData` (the attribute dictionary, the
label set). Reading the files: :mod:`gaplab.core.datasets.conll`.

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
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from .base import SequenceData

__all__ = ["ATTRIBUTE_TEMPLATES", "BOS", "EOS", "sentence_attributes", "make_conll_datasets"]

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
    ids, dicts, names = _train_dictionary(train_sentences, padding, min_count)
    n_features = len(names)
    label_names = tuple(sorted({c for s in train_sentences for c in s[2]}))
    train_arrays = _encode(train_sentences, ids, label_names, train_source)
    del ids
    train = _sequence_data(train_sentences, train_arrays, n_features, label_names, f"{name}/train",
                           attribute_names=tuple(names))
    del train_arrays
    if test_sentences is None:
        return train, None

    _check_sentences(test_sentences, test_source)
    ids = _test_ids(test_sentences, padding, dicts)
    test = _sequence_data(test_sentences,
                          _encode(test_sentences, ids, label_names, test_source, _test_start_lines,
                                  unknown_test_labels),
                          n_features, label_names, f"{name}/test")
    return train, test


def _train_dictionary(train_sentences: Sequence, padding: bool, min_count: int):
    """The attribute dictionary of the training sentences, one local dict per column (template):
    (ids (n_tokens, n_columns) int64, -1 for no attribute; [(dict name -> local id, offset)]
    per column; the attribute names in index order). ValueError when no attribute occurs at
    ``min_count`` or more training tokens."""
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
    if offset == 0:
        raise ValueError(
            f"no attribute occurs at {min_count} or more training tokens; lower min_count"
        )
    return ids, dicts, names


def _test_ids(test_sentences: Sequence, padding: bool, dicts: list) -> np.ndarray:
    """The (n_tokens, n_columns) attribute ids of the test sentences in the training dictionary
    (-1: absent or unseen in training)."""
    columns = _attribute_columns(test_sentences, padding)
    n_tok = sum(len(s[0]) for s in test_sentences)
    ids = np.empty((n_tok, _n_columns(padding)), dtype=np.int64)
    for c, (col, (d, off)) in enumerate(zip(columns, dicts)):
        get = d.get
        local = np.fromiter((get(s, -1) for s in col), dtype=np.int64, count=n_tok)
        ids[:, c] = np.where(local >= 0, local + off, -1)
        del col, local
    return ids


def _encode(sentences, ids_, label_names, source, start_lines=None, policy="raise"):
    """(seq_offsets, indptr, indices, values, labels) of the sentences; chunk tags by
    ``label_names`` (an unseen ``I-X`` becomes ``B-X`` with policy "begin", any other unseen
    tag raises ValueError naming the source, sentence and tag)."""
    label_index = {lab: k for k, lab in enumerate(label_names)}
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


def _sequence_data(sentences, arrays, n_features, label_names, name, **extras) -> SequenceData:
    """The :class:`SequenceData` of encoded sentences, with their words, POS and chunk tags in
    ``extras``."""
    so, ip, ind, val, lab = arrays
    return SequenceData(
        seq_offsets=so, feat_indptr=ip, feat_indices=ind, feat_values=val, labels=lab,
        n_features=n_features, label_names=label_names, name=name,
        extras={"words": tuple(s[0] for s in sentences), "pos": tuple(s[1] for s in sentences),
                "chunks": tuple(s[2] for s in sentences), **extras},
    )
