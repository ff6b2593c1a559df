"""gaplab.app: the Panel app (session runner, live views, toy tab, lessons).

``build_app()`` returns an independent app object that displays in ``panel serve`` and in
Jupyter; ``serve()`` runs the server used by ``gaplab app``. :class:`Session` (settings, solver,
worker thread, snapshots) imports no Panel and can be driven headless.
"""
from __future__ import annotations

__all__ = ["Session", "Snapshot", "build_app", "GapLabApp", "serve"]


def __getattr__(name):  # lazy: importing gaplab.app must not import Panel
    if name in ("Session", "Snapshot"):
        from . import session
        return getattr(session, name)
    if name in ("build_app", "GapLabApp"):
        from . import main
        return getattr(main, name)
    if name == "serve":
        from .serve import serve
        return serve
    raise AttributeError(f"module 'gaplab.app' has no attribute {name!r}")
