"""``python -m gaplab``: the ``gaplab`` command (see :mod:`gaplab.console`, which holds Ctrl-C
from its first statement)."""
from gaplab.console import run

run()
