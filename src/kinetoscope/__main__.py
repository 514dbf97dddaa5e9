"""`python -m kinetoscope`: the same as the `kinetoscope` command."""

from .cli import main

main()
