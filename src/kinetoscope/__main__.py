"""`python -m kinetoscope` runs the CLI.

Exit 130 (a Ctrl-C the CLI handled) ends the process here, after the exit functions:
a Ctrl-C that lands while a string of code runs under `exec` (dataclasses, typing and
namedtuple build their methods that way while typer and rich import) sets CPython's
"unhandled KeyboardInterrupt" flag even though the CLI caught it, and under `-m` the
interpreter then kills itself with SIGINT after the one line (exit -2, not 130).
"""

from .entry import main, quit_now

try:
    main()
except SystemExit as done:
    if done.code == 130:
        quit_now(130)
    raise
