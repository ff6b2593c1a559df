"""The CoNLL-2000 text-chunking data set (Tjong Kim Sang and Buchholz, 2000).

WSJ sections 15-18 form the training set (8,936 sentences, 211,727 tokens), section 20 the
test set (2,012 sentences, 47,377 tokens). Every token carries a word, a part-of-speech tag
(from the Brill tagger) and a chunk tag in IOB2 notation; 22 chunk tags occur in training.

The files are **not** shipped with gaplab. :func:`load_conll2000` reads ``train.txt`` and
``test.txt`` from a directory given by the user, by ``$GAPLAB_DATA`` or from the user cache
directory, and downloads them from the original site only on request (``download=True``).

What lives where: this module reads the files (:func:`parse_conll`, :func:`load_conll2000`,
locating, downloading and checking them); :mod:`gaplab.core.datasets.conll_features` turns
parsed sentences into attributes and :class:`~gaplab.core.datasets.base.SequenceData` (the
attribute templates, the counts on CoNLL-2000 and the label set are documented there);
:mod:`gaplab.core.datasets.conll_eval` scores predicted chunks (:func:`conlleval`).
"""
from __future__ import annotations

import gzip
import hashlib
import os
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import platformdirs

from .base import SequenceData
from .conll_eval import conlleval
from .conll_features import ATTRIBUTE_TEMPLATES, make_conll_datasets, sentence_attributes

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
        _verify_files(paths)
    train_sents, _, train_src = _parse(paths[0])
    test_sents, test_starts, test_src = _parse(paths[1])
    train, test = make_conll_datasets(
        train_sents, test_sents, min_count=min_count, padding=padding, name="conll2000",
        train_source=train_src, test_source=test_src, unknown_test_labels=unknown_test_labels,
        _test_start_lines=test_starts,
    )
    assert test is not None
    return train, test


def _verify_files(paths) -> None:
    """ValueError naming the first file whose sha256 is not the official one."""
    for p in paths:
        got = _sha256_file(p)
        expected = CONLL2000_SHA256[p.name]
        if got != expected:
            raise ValueError(
                f"sha256 mismatch for {p}: expected {expected} (the official CoNLL-2000 "
                f"{p.name}), got {got}. The file is damaged (cut or edited): download it again, "
                "or pass verify=False (gaplab: --no-verify) to load a modified copy on purpose"
            )
