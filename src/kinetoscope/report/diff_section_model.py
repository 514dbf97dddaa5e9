"""One section of the diff report as every renderer lays it out: a title, sentences,
a table and how many rows were left out (report/diff_sections.py builds them)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Section:
    title: str
    text: list[str] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    more: int = 0  # rows left out
