"""CLI verbs; each module defines `register(app)`."""
