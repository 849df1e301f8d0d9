"""Edges of the command line: `-` for a report, JSON failures of eval and doctor, negative or
endless durations, inputs that are not regular files, hints that fit the situation, and a stop
that lands while a command is still starting."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import FIXTURES, assert_clean_failure, run_cli

DOCS = FIXTURES / "docs-tree"


# --- --report - ------------------------------------------------------------------------------


def test_report_dash_writes_the_report_to_stdout_when_the_records_go_to_a_file(tmp_path):
    out = tmp_path / "out.jsonl"
    result = run_cli("flatten", "--root", DOCS, "-o", out, "--report", "-", "-q", cwd=tmp_path)
    assert result.code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["command"] == "flatten" and report["ok"] is True
    assert out.read_text().count("\n") == report["slices"]["total"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]  # no file named `-`


def test_report_dash_beside_records_on_stdout_is_refused_before_anything_is_written(tmp_path):
    for command in (["flatten"], ["flatten", "-o", "-"], ["pack"]):
        result = run_cli(*command, "--root", DOCS, "--report", "-", "-q", cwd=tmp_path)
        assert_clean_failure(result, 2, "--report - writes the report to stdout", "-o FILE")
        assert result.stdout == ""
        assert list(tmp_path.iterdir()) == []
