"""Serve one trace file to the Perfetto UI from 127.0.0.1: nothing is uploaded."""
