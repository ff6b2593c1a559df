"""Live views of a session: Bokeh figures built once, whose ColumnDataSources are replaced in
place from :class:`~gaplab.app.session.Snapshot` objects (no re-rendering, no flicker).

Why Bokeh sources rather than HoloViews ``Pipe``/``Buffer`` streams: the app refreshes up to
10 times per second while the solver runs on the same two cores. Replacing a source's data
costs ~0.1 ms per plot, a HoloViews ``Pipe.send`` ~8 ms (it rebuilds the element and its plot
options), i.e. ~0.6 s of CPU per second for the eight live plots of the app at 10 Hz — which
would be taken from the solver (``benchmarks/app_bench.py`` measures the throughput ratio).

Every number drawn comes from a snapshot (computed by the core); log axes use a positive floor.

Modules, one concern each:

* :mod:`~gaplab.app.views.figures` — the figure style, log axes, source updates, number
  formats, projector fonts, inline PNGs (shared by every view and by the path tab);
* :mod:`~gaplab.app.views.base` — the view base classes and :func:`trace_columns`;
* :mod:`~gaplab.app.views.anatomy` — the Step tab's anatomy of the last step;
* :mod:`~gaplab.app.views.pictures` — a model's picture panels and chunked sentences drawn in it;
* :mod:`~gaplab.app.views.narration` — the step sentence and the status line's test words;
* :mod:`~gaplab.app.views.blocks` — the per-block bars of the Step tab;
* :mod:`~gaplab.app.views.convergence` — the Convergence tab's plots;
* :mod:`~gaplab.app.views.cache` — the Cache & active sets tab;
* :mod:`~gaplab.app.views.status` — the status line.

Every name the app and the tests import from ``gaplab.app.views`` is available here.
"""
from __future__ import annotations

# re-exported: every name of the former single module gaplab.app.views (other app modules and
# the tests import them from here)
from .anatomy import AnatomyView
from .base import _Base, _ComparisonPlot, _RunSlots, trace_columns
from .blocks import BlockGapsView, _block_ranges, _nice_up
from .cache import CacheView
from .convergence import GapView, PrimalDualView, TestErrorView
from .figures import (_BOLD, _FIG_FONTS, _LOG_MAJOR_JS, _LOG_MINOR_JS, _LOG_TICK_JS, BIG_PX, CURRENT_COLOR,
                      FONT, GAP_FLOOR, MAX_SLOTS, ROUND_OFF, RUN_COLORS, TOOLS, LiveHTML, _bold, _fig,
                      _figure_pane, _fmt, _fmt_gap, _gap_word, _log_formatter, _log_range, _png, _pos, _same,
                      _scale_px, _set, _set_range, fig_fonts, legend_above, log_ticker)
from .narration import (_TIP_BEFORE, _TIP_BEFORE_HIT, _TIP_DIRECTION_HIT, _TIP_IMPROVEMENT_BOX,
                        SAMPLER_WORDS, _drawn_words, _fw_row_label, _sampler_words, corner_name,
                        status_test_words, step_sentence)
from .pictures import (CHUNK_COLORS, CHUNK_OTHER, MISTAKE, ROLE_COLORS, chunk_row_html, iob_chunks, is_iob,
                       panel_html)
from .status import StatusView

__all__ = ["AnatomyView", "BlockGapsView", "GapView", "PrimalDualView", "TestErrorView",
           "CacheView", "StatusView", "trace_columns", "GAP_FLOOR"]
