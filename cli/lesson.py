"""``gaplab lesson export N --out FILE``: one lesson as one self-contained HTML page (its text, its
explorable figures replaying recorded solver runs, BokehJS inlined) that opens offline from a
file (:mod:`gaplab.app.textbook.page`)."""
from __future__ import annotations

__all__ = ["add_commands", "cmd_lesson_export"]


def cmd_lesson_export(args) -> int:
    import time

    from gaplab.app.lessons import LESSONS
    from gaplab.app.textbook.page import export_lesson
    if not 1 <= args.lesson <= len(LESSONS):
        raise ValueError(f"N must be a lesson number in [1, {len(LESSONS)}], got {args.lesson}")
    t0 = time.perf_counter()
    path = export_lesson(args.lesson, args.out, seed=args.seed, cache_folder=args.cache_dir,
                         figures_only=args.figures_only)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB) in {time.perf_counter() - t0:.1f} s")
    return 0


def _int(lo: int):
    import argparse

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {lo}; got {text!r}") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"must be an integer >= {lo}; got {text!r}")
        return v
    return parse


def add_commands(sub) -> None:
    """Register ``gaplab lesson`` (sub-command ``export``)."""
    p = sub.add_parser("lesson", help="the lessons as static pages that need no install")
    lsub = p.add_subparsers(dest="lesson_command", required=True)
    e = lsub.add_parser("export", help="write lesson N as one self-contained HTML file (text, explorable "
                                       "figures from recorded solver runs, BokehJS inlined; opens offline)")
    e.add_argument("lesson", type=_int(1), metavar="N", help="the lesson page number (as in the app's Lessons tab)")
    e.add_argument("--out", required=True, metavar="FILE", help="the HTML file to write (replaced atomically)")
    e.add_argument("--seed", type=_int(0), default=0, help="seed of the recorded runs (default 0)")
    e.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="where the recorded runs are cached between builds (default: $GAPLAB_TEXTBOOK_CACHE, "
                        "then the user cache directory)")
    e.add_argument("--figures-only", action="store_true",
                   help="the figures without the lesson's text (the documentation site frames them)")
    e.set_defaults(func=cmd_lesson_export)
