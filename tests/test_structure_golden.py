"""Golden titles and line ranges for the realistic code, Terraform and GitOps fixtures."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import FIXTURES, PROJECT, run_cli

GOLDEN = PROJECT / "tests" / "golden" / "structure.tsv"
TREES = ("app-repo", "gitops", "terraform")


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("structure")
    for name in TREES:
        shutil.copytree(FIXTURES / name, root / name)
    return root


def table(records: list[dict]) -> str:
    rows = [
        "\t".join([r["source"], r["title"], r.get("symbol") or "-",
                   f"{r['startLine']}-{r['endLine']}", r["kind"], r.get("lang") or "-",
                   r.get("namespace") or "-"])
        for r in records
    ]  # fmt: skip
    return "\n".join(rows) + "\n"


def test_titles_and_line_ranges_match_the_golden_table(trees):
    result = run_cli("flatten", "--root", trees, "--kind", "auto", "-q")
    assert result.code == 0, result.stderr
    got = table(result.records())
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(got, encoding="utf-8")
    assert got == GOLDEN.read_text(encoding="utf-8")


def test_kind_code_skips_nothing_that_auto_takes(trees):
    auto = run_cli("flatten", "--root", trees, "--kind", "auto", "-q")
    code = run_cli("flatten", "--root", trees, "--kind", "code", "-q")
    assert {r["source"] for r in auto.records()} <= {r["source"] for r in code.records()}


def test_every_slice_has_a_kind_and_the_kinds_are_the_structural_ones(trees):
    records = run_cli("flatten", "--root", trees, "--kind", "auto", "-q").records()
    kinds = {r["kind"] for r in records}
    assert {"code", "terraform", "yaml", "shell", "text", "markdown"} <= kinds
