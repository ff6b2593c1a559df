import os
import sys

try:
    from gaplab.cli import main
except KeyboardInterrupt:  # Ctrl-C while Python starts gaplab: one line, no traceback
    print("gaplab: interrupted", file=sys.stderr)
    raise SystemExit(130)

code = main()
if code == 130:
    # Ctrl-C, already reported in one line. After a KeyboardInterrupt caught during the imports
    # CPython can still end the process by SIGINT (status -2) instead of the status raised:
    # exit with 130 directly.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)
raise SystemExit(code)
