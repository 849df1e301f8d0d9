"""Golden output for a realistic docs tree: titles, anchors, breadcrumbs and line ranges."""

from __future__ import annotations

import json
import os
import shutil

from flatten.record import end_mark
from tests.conftest import FIXTURES, PROJECT, run_cli

GOLDEN = PROJECT / "tests" / "golden" / "docs-tree.jsonl"


def test_docs_tree_matches_the_golden_file(tmp_path):
    # A copy outside this repository: no commit provenance, and the walker (not git) lists it.
    tree = tmp_path / "docs-tree"
    shutil.copytree(FIXTURES / "docs-tree", tree)
    result = run_cli("flatten", "--root", tree, "-q", real=True)
    assert result.code == 0, result.stderr
    # stdout is a pipe here: the records, then the closing mark that frames a piped stream.
    records, mark = result.stdout.splitlines(keepends=True)[:-1], result.stdout.splitlines()[-1]
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.write_text("".join(records), encoding="utf-8")
    assert "".join(records) == GOLDEN.read_text(encoding="utf-8")
    assert json.loads(mark) == end_mark(len(records))
