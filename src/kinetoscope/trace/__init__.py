"""Kineto trace files -> `Trace` (columns, lanes, call tree, links, steps)."""

from .categories import Cat
from .load import load
from .model import Device, Lane, Step, Trace

__all__ = ["Cat", "Device", "Lane", "Step", "Trace", "load"]
