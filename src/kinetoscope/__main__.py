"""`python -m kinetoscope` runs the CLI."""

from .cli import main

main()
