"""The ``gaplab`` console script and ``python -m gaplab``: Ctrl-C counts from the first statement.

Importing the command line (numpy, numba, the problem registry) takes a noticeable moment. A
SIGINT in that moment used to surface as a traceback from inside an import, or, when an import
swallowed the KeyboardInterrupt, be lost (the command ran to the end and exited 0). So this
module's first statement holds SIGINT: a Ctrl-C while gaplab starts is remembered, and once the
imports are done the command exits 130 with "gaplab: interrupted" instead of running. A command
started with SIGINT ignored (``nohup``, ``cmd &`` in a script) leaves it ignored.
:func:`gaplab.cli.entry.main` takes over from there (130 and one line for a Ctrl-C at any later
moment).
"""
import signal as _signal

_held = []


def _hold(signum, frame):
    _held.append(signum)


try:  # first thing: hold Ctrl-C while the command line is imported
    if _signal.getsignal(_signal.SIGINT) is _signal.SIG_IGN:
        # started with SIGINT ignored (nohup, a background job of a script): it stays ignored, as
        # Python itself leaves it, so a Ctrl-C meant for the terminal's foreground job is not ours
        _previous = None
    else:
        _previous = _signal.signal(_signal.SIGINT, _hold)
        if hasattr(_signal, "pthread_sigmask"):  # a SIGINT kept pending (blocked) while Python started: now held
            _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGINT})
except ValueError:  # not the main thread (imported by a library user's thread): leave SIGINT alone
    _previous = None


def run(argv=None) -> int:
    """Run ``gaplab`` with ``argv`` (default ``sys.argv[1:]``); exits the process with the
    command's status: 2 bad input, 1 failed system call, 130 Ctrl-C (also while starting)."""
    import sys
    try:
        try:
            from gaplab.cli.entry import main
        finally:
            if _previous is not None:
                _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        if _held:
            raise KeyboardInterrupt
        code = main(argv)  # Ctrl-C from here on: main says so in one line and returns 130
    except KeyboardInterrupt:
        print("gaplab: interrupted", file=sys.stderr, flush=True)
        code = 130
    if code == 130:  # CPython may turn a KeyboardInterrupt caught in an import into death by SIGINT
        import os
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(code)
