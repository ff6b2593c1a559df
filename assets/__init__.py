"""gaplab.assets: data files shipped with the package, read by the loaders in
:mod:`gaplab.core.datasets`: the OCR letters (``ocr_letters.npz``, provenance in
``OCR_PROVENANCE.md``) and the checksums of the Weizmann horse images
(``weizmann_horse_sha256.json``). No Python code lives here."""
