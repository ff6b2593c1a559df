"""The indices of the app's tabs, in the order of ``GapLabApp.TAB_NAMES`` (and of
:data:`gaplab.app.urlstate.TAB_SLUGS`)."""
from __future__ import annotations

__all__ = ["STEP", "CONVERGENCE", "CACHE", "PATH", "TOY", "LESSONS", "SWEEPS", "RACE"]

# tab indices (in TAB_NAMES order)
STEP, CONVERGENCE, CACHE, PATH, TOY, LESSONS, SWEEPS, RACE = range(8)
