"""`-o -` is stdout, as most tools read it: no file named `-` is made."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli, write


@pytest.mark.parametrize("command", ["flatten", "pack"])
def test_dash_as_the_output_writes_to_stdout_and_makes_no_file(command, tmp_path, monkeypatch):
    write(tmp_path / "docs", {"guide.md": "# Guide\n\nHow to start.\n"})
    monkeypatch.chdir(tmp_path)
    to_dash = run_cli(command, "--root", "docs", "-o", "-", "-q")
    to_stdout = run_cli(command, "--root", "docs", "-q", real=True)  # a pipe, as `-o -` is
    assert to_dash.code == 0, to_dash.stderr
    assert "How to start." in to_dash.stdout and to_dash.stdout == to_stdout.stdout
    assert not (tmp_path / "-").exists()
