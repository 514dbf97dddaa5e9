"""`python -m kinetoscope` runs the CLI."""

from .entry import main

main()
