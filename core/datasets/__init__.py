"""Data sets (containers and loaders): sequence labelling, superpixel segmentation and pose.

What lives where: ``base`` (:class:`SequenceData`); ``ocr``; ``conll`` (reading CoNLL-2000)
with ``conll_features`` (its attributes and encoding) and ``conll_eval`` (:func:`conlleval`);
``conll_file`` (a user's CoNLL-style column file with the same attributes: :func:`load_conll_file`);
``segmentation`` (:class:`SegmentationData`, synthetic sets); ``horse`` (the Weizmann horses:
files, split, cache, loader) with ``horse_features`` (superpixels and features); ``horseseg``
(the released HorseSeg files); ``lsp`` (LSP poses, :class:`PoseData`) with ``lsp_scoremaps``
(the generated part-score maps).

Import-light: loaders read their bundled assets (or the user's files) only when called;
scikit-image and scikit-learn are imported by the horse loader only when it computes features;
h5py (optional extra ``horseseg``) only when the HorseSeg feature files are read.
"""
from .base import SequenceData
from .conll import conlleval, load_conll2000, parse_conll
from .conll_file import load_conll_file, read_column_file
from .lsp import PoseData, load_lsp
from .horse import HorseFeatureParams, load_weizmann_horses
from .horseseg import load_horseseg, read_horseseg_h5
from .ocr import load_ocr
from .segmentation import SegmentationData, make_synthetic_segmentation

__all__ = ["SequenceData", "load_ocr", "load_conll2000", "parse_conll", "conlleval", "load_conll_file", "read_column_file", "PoseData", "load_lsp",
           "SegmentationData", "make_synthetic_segmentation", "load_weizmann_horses", "HorseFeatureParams",
           "load_horseseg", "read_horseseg_h5"]
