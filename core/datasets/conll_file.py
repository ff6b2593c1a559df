"""A user's own tagging data: CoNLL-style column files read into the CoNLL-2000 attributes.

One token a line, whitespace-separated columns: the word first, the tag last, and an optional
part-of-speech tag second (a third column of a four-or-more-column file and later ones, e.g. a
CoNLL-2003 chunk column, are ignored). Blank lines separate sentences; several in a row are one
break; ``-DOCSTART-`` lines (CoNLL-2003 document marks) are skipped. Every token line of a file
has the column count of its first token line. Without a POS column every token's POS is
:data:`NO_POS`, so the POS templates of :mod:`gaplab.core.datasets.conll_features` carry no
information and only the word templates (and ``__BOS__``/``__EOS__``) tell tokens apart.

The attributes, label set and encoding are those of CoNLL-2000
(:func:`~gaplab.core.datasets.conll_features.make_conll_datasets`); chunk F1 is
:func:`~gaplab.core.datasets.conll_eval.conlleval`'s, meaningful for IOB tags only
(:func:`first_non_iob` finds the first tag that is not ``O``, ``B-X`` or ``I-X``).

Every bad file raises ValueError in one line naming the file and the line: a line that is not
UTF-8, a token line with one column or another column count than the first, a file with no
token line, a training file whose tags are all one label.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .base import SequenceData
from .conll_features import make_conll_datasets

__all__ = ["read_column_file", "load_conll_file", "first_non_iob", "is_iob", "NO_POS"]

#: the POS of every token of a file without a POS column (two columns: word, tag)
NO_POS = "_"

_IOB_RE = re.compile(r"^(O|[BI]-\S+)$")


def _decode_line(raw: bytes, source: str, lineno: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{source}, line {lineno}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
            "save the file as UTF-8"
        ) from None


def read_column_file(path: Any) -> tuple[list, list, int]:
    """Read a CoNLL-style column file (see the module docstring for the format).

    Parameters
    ----------
    path : str or os.PathLike
        The file, UTF-8 (a leading byte-order mark is ignored).

    Returns
    -------
    sentences : list of tuple
        One ``(words, pos, tags)`` triple per sentence, each a tuple of str of the sentence
        length (``pos`` is :data:`NO_POS` throughout for a two-column file).
    tag_lines : list of list of int
        The 1-based line number of every token, per sentence (for messages).
    n_columns : int
        The column count of every token line.

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ValueError
        A line is not UTF-8, a token line has one column or another column count than the
        file's first token line, or the file has no token line; the message names the file and
        the line.
    """
    path = Path(os.fspath(path)).expanduser()
    source = str(path)
    if not path.is_file():
        raise FileNotFoundError(f"{source}: no such file")
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    sentences: list = []
    lines_of: list = []
    cur: list = []
    n_cols = None
    n_lines = 0
    for lineno, raw in enumerate(data.splitlines(), 1):
        n_lines = lineno
        parts = _decode_line(raw, source, lineno).split()
        if parts and parts[0] == "-DOCSTART-":
            parts = []
        if not parts:
            _close(cur, sentences, lines_of)
            cur = []
            continue
        if n_cols is None:
            if len(parts) < 2:
                raise ValueError(f"{source}, line {lineno}: a token line needs at least 2 columns "
                                 f"(word ... tag), got 1: {parts[0]!r}")
            n_cols = len(parts)
        elif len(parts) != n_cols:
            raise ValueError(f"{source}, line {lineno}: {len(parts)} columns, but the file's first token "
                             f"line has {n_cols} (ragged columns)")
        cur.append((parts[0], parts[1] if n_cols > 2 else NO_POS, parts[-1], lineno))
    _close(cur, sentences, lines_of)
    if not sentences:
        raise ValueError(f"{source}: no sentence (no token line in its {n_lines} lines)")
    return sentences, lines_of, n_cols


def _close(cur: list, sentences: list, lines_of: list) -> None:
    if cur:
        words, pos, tags, lines = zip(*cur)
        sentences.append((words, pos, tags))
        lines_of.append(list(lines))


def is_iob(tag: str) -> bool:
    """Whether ``tag`` is an IOB tag: ``O``, ``B-X`` or ``I-X`` (X any non-blank type)."""
    return bool(_IOB_RE.match(tag))


def first_non_iob(sentences: list, tag_lines: list) -> tuple | None:
    """``(line, tag)`` of the first tag that is not IOB (``O``, ``B-X`` or ``I-X``), or None."""
    for s, lines in zip(sentences, tag_lines):
        for tag, line in zip(s[2], lines):
            if not _IOB_RE.match(tag):
                return line, tag
    return None


def load_conll_file(data_file: Any, test_file: Any = None, *, min_count: int = 1,
                    check_iob: bool = True) -> tuple[SequenceData, SequenceData | None, dict]:
    """Load a user's column file (and a test file) with the CoNLL-2000 attributes.

    Parameters
    ----------
    data_file : str or os.PathLike
        The training file.
    test_file : str or os.PathLike, optional
        Encoded with the training dictionary; a test tag unseen in training is refused (an
        ``I-X`` whose ``B-X`` is known becomes ``B-X``, as for CoNLL-2000).
    min_count : int, default 1
        Keep attributes occurring at ``min_count`` or more training tokens.
    check_iob : bool, default True
        Look for a tag that is not IOB (then chunk F1 is not computed: ``info["iob"]`` is
        False and ``info["not_iob"]`` says where).

    Returns
    -------
    train, test : SequenceData
        Named ``<file stem>/train`` and ``<file stem>/test``; ``test`` is None without
        ``test_file``. ``extras`` as for CoNLL-2000 (``chunks`` holds the tags).
    info : dict
        ``files`` (the paths), ``has_pos`` (bool), ``iob`` (bool), ``metric_on_train`` (True
        without a test file: token accuracy and chunk F1 are then those of the training file)
        and, when not IOB, ``not_iob`` (one line naming the file, the line and the tag).

    Raises
    ------
    FileNotFoundError, ValueError
        See :func:`read_column_file`; also ValueError when the training tags are all one label
        (naming the file and the first token's line), or a test file has another column count
        or a tag unseen in training.
    """
    train_s, train_lines, n_cols = read_column_file(data_file)
    labels = {t for s in train_s for t in s[2]}
    if len(labels) < 2:
        raise ValueError(f"{data_file}, line {train_lines[0][0]}: every tag of the file is {next(iter(labels))!r}; "
                         "a tagger needs at least 2 labels")
    test_s = test_lines = None
    if test_file is not None:
        test_s, test_lines, n_test = read_column_file(test_file)
        if (n_test > 2) != (n_cols > 2):
            raise ValueError(f"{test_file}, line {test_lines[0][0]}: {n_test} columns, but the training file "
                             f"{data_file} has {n_cols} (a POS column in one file only)")
    info: dict = {"files": [str(data_file)] + ([str(test_file)] if test_file is not None else []),
                  "has_pos": n_cols > 2, "iob": True, "metric_on_train": test_file is None}
    if check_iob:
        for f, sents, lines in ((data_file, train_s, train_lines), (test_file, test_s, test_lines)):
            bad = first_non_iob(sents, lines) if sents is not None else None
            if bad is not None:
                info["iob"] = False
                info["not_iob"] = (f"{f}, line {bad[0]}: tag {bad[1]!r} is not IOB (O, B-X or I-X); "
                                   "chunk F1 not computed, token accuracy only")
                break
    name = Path(os.fspath(data_file)).stem or "conll-file"
    starts = [ln[0] for ln in test_lines] if test_lines is not None else None
    train, test = make_conll_datasets(train_s, test_s, min_count=min_count, name=name,
                                      train_source=str(data_file), test_source=str(test_file),
                                      _test_start_lines=starts)
    return train, test, info
