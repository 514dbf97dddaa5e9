"""The window account and the critical path: what held the window at each instant."""
