"""Golden output for a realistic docs tree: titles, anchors, breadcrumbs and line ranges."""

from __future__ import annotations

import os
import shutil

from tests.conftest import FIXTURES, PROJECT, run_cli

GOLDEN = PROJECT / "tests" / "golden" / "docs-tree.jsonl"


def test_docs_tree_matches_the_golden_file(tmp_path):
    # A copy outside this repository: no commit provenance, and the walker (not git) lists it.
    tree = tmp_path / "docs-tree"
    shutil.copytree(FIXTURES / "docs-tree", tree)
    result = run_cli("flatten", "--root", tree, "-q")
    assert result.code == 0, result.stderr
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(result.stdout, encoding="utf-8")
    assert result.stdout == GOLDEN.read_text(encoding="utf-8")
