"""What the MCP server may read (issue 36): a hard link is the same file as a name that
may lie outside the root, so a file with more than one link is refused."""

from __future__ import annotations

import os

import pytest

from kinetoscope.agent import tools
from kinetoscope.agent.paths import readable
from kinetoscope.errors import UsageError

from ..conftest import corpus

BERT = "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz"


def test_a_hard_link_to_a_file_outside_the_root_is_refused(tmp_path):
    outside, root = tmp_path / "outside", tmp_path / "root"
    outside.mkdir()
    root.mkdir()
    secret = outside / "secret.json.gz"
    secret.write_bytes(corpus(BERT).read_bytes())
    os.link(secret, root / "linked.json.gz")
    with pytest.raises(UsageError, match="has 2 hard links"):
        readable(root, "linked.json.gz")
    with pytest.raises(UsageError, match="hard links"):
        tools.summary(root, "linked.json.gz")


def test_a_file_with_one_link_is_read(tmp_path):
    (tmp_path / "t.json.gz").write_bytes(corpus(BERT).read_bytes())
    assert readable(tmp_path, "t.json.gz") == tmp_path / "t.json.gz"
