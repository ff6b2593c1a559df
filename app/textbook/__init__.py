"""gaplab.app.textbook: the lessons as an explorable textbook that needs no install — static HTML
pages whose figures replay real runs of gaplab's solver in the browser (BokehJS callbacks, no
Python at view time), exported one self-contained file per lesson (``gaplab lesson export N``)
and built into the documentation site.

What lives where:

- ``registry``: which figure modules each lesson page has (lesson number -> module names,
  imported lazily).
- Figure modules, each with ``LESSON``, ``build_data(seed)`` (JSON-able data computed by the
  solver, with the recorded trace) and ``build_figure(data)`` (a standalone Bokeh layout):
  ``race_fig`` (App. C's toy: uniform against gap sampling, scrubbed by oracle call),
  ``ocr_fig`` (OCR-small step by step: the block drawn, its word and FW corner, the gap
  estimates with their staleness, the sampling probabilities and the app's narration),
  ``simplex_fig`` (lesson 5's block simplex) and ``path_fig`` (the ε-path).
- ``player``: the scrubber, play/pause and switches shared by the figures (CustomJS only).
- ``datacache``: the figures' data cached on disk, keyed by a hash of the code and settings.
- ``text``: a lesson's Markdown with its LaTeX converted to MathML (no MathJax, no network).
- ``page``: one lesson as one self-contained HTML page (text, figures, BokehJS inlined).
"""
