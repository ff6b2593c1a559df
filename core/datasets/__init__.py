"""Sequence-labelling data sets (containers and loaders).

Import-light: loaders read their bundled assets only when called.
"""
from .base import SequenceData
from .conll import conlleval, load_conll2000, parse_conll
from .lsp import PoseData, load_lsp
from .ocr import load_ocr

__all__ = ["SequenceData", "load_ocr", "load_conll2000", "parse_conll", "conlleval", "PoseData", "load_lsp"]
