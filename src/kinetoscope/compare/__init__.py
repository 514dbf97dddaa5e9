"""Comparing runs: `diff` of two traces, `sweep` over a parameter, `check` expectations for CI."""
