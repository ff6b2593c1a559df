"""Chunk-level evaluation of CoNLL-2000 predictions: :func:`conlleval` reproduces the
precision / recall / F1 of the CoNLL-2000 ``conlleval`` script (as fractions in ``[0, 1]``,
not percent).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["conlleval"]


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

    n = {"n_correct": 0, "n_gold": 0, "n_pred": 0, "n_tokens": 0, "n_correct_tags": 0}
    by_type: dict = {}
    for g_seq, p_seq in zip(gold, pred):
        _count_sentence(g_seq, p_seq, n, by_type)
    out = _prf(n["n_correct"], n["n_gold"], n["n_pred"])
    out["accuracy"] = n["n_correct_tags"] / n["n_tokens"] if n["n_tokens"] else 0.0
    out["n_tokens"] = n["n_tokens"]
    out["n_correct_tags"] = n["n_correct_tags"]
    out["per_type"] = {
        t: _prf(v["n_correct"], v["n_gold"], v["n_pred"]) for t, v in sorted(by_type.items())
    }
    return out


def _count_sentence(g_seq, p_seq, n: dict, by_type: dict) -> None:
    """Add one sentence's chunk and token counts to ``n`` (keys n_correct, n_gold, n_pred,
    n_tokens, n_correct_tags) and to ``by_type`` (chunk type -> n_gold, n_pred, n_correct), as
    conlleval counts them."""
    def bump(type_: str, key: str) -> None:
        by_type.setdefault(type_, {"n_gold": 0, "n_pred": 0, "n_correct": 0})[key] += 1

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
                n["n_correct"] += 1
                bump(last_ct, "n_correct")
            elif end_c != end_g or gt != ct:
                in_correct = False
        start_c = _start_of_chunk(last_c, c, last_ct, ct)
        start_g = _start_of_chunk(last_g, g, last_gt, gt)
        if start_c and start_g and gt == ct:
            in_correct = True
        if start_c:
            n["n_gold"] += 1
            bump(ct, "n_gold")
        if start_g:
            n["n_pred"] += 1
            bump(gt, "n_pred")
        if not boundary:
            n["n_tokens"] += 1
            if c == g and ct == gt:
                n["n_correct_tags"] += 1
        last_c, last_g, last_ct, last_gt = c, g, ct, gt
    # the trailing boundary "O" closes every chunk, so in_correct is False here


def _prf(nc: int, ng: int, npred: int) -> dict:
    p = nc / npred if npred else 0.0
    r = nc / ng if ng else 0.0
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return {
        "precision": p, "recall": r, "f1": f, "n_gold": ng, "n_pred": npred, "n_correct": nc,
    }
