"""Capture: run PyTorch code under torch.profiler and write the traces kinetoscope reads.

The only package that imports torch, and only when a capture actually runs
(`deps.require_torch`), so the analyzer works where torch is not installed.
"""
