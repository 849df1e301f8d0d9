"""`index` reads a named pipe or a process substitution (`<(...)`), which can be read once, as it
reads stdin: a complete stream loads, one without the writer's closing mark does not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from index.store import Store
from tests.conftest import PROJECT, jsonl, record, run_cli, write

DOCS = {"README.md": "# Handbook\n\nRead me.\n", "docs/install.md": "# Install\n\nRun it.\n"}


def indexed(store: Path) -> list[str]:
    with Store.open(store, readonly=True) as opened:
        return [s for (s,) in opened.db.execute("SELECT source FROM documents ORDER BY 1")]


def bash(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`script` in bash (process substitution is bash's), `df` standing for the CLI."""
    cli = f"{sys.executable} -m flatten"
    return subprocess.run(["bash", "-c", f"df() {{ {cli} \"$@\"; }}\n{script}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(PROJECT)})  # fmt: skip


def test_a_process_substitution_is_indexed_as_a_stream(tmp_path):
    write(tmp_path / "handbook", DOCS)
    done = bash("df index <(df flatten --root handbook -q) --corpus hb --store store -q", tmp_path)
    assert done.returncode == 0, done.stderr
    assert indexed(tmp_path / "store") == ["README.md", "docs/install.md"]
    # A producer that fails mid-way leaves no closing mark: nothing is loaded or removed.
    failed = bash("df index <(df flatten --root handbook -q | head -n 1) --corpus hb "
                  "--store store -q", tmp_path)  # fmt: skip
    assert failed.returncode == 1
    assert "closing mark" in failed.stderr and "Traceback" not in failed.stderr
    assert indexed(tmp_path / "store") == ["README.md", "docs/install.md"]


def test_a_named_pipe_is_read_once_and_loaded(tmp_path):
    lines = jsonl(tmp_path / "records.jsonl", [record("notes.md", 1, "Some notes.")])
    fifo = tmp_path / "records.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as out:
            out.write(lines.read_bytes())

    writer = threading.Thread(target=feed)
    writer.start()
    # Not a closed stream (no closing mark): --partial loads it, adding and updating only.
    loaded = run_cli("index", fifo, "--corpus", "notes", "--partial", "--store", tmp_path / "s")
    writer.join(timeout=60)
    assert loaded.code == 0, loaded.stderr
    assert indexed(tmp_path / "s") == ["notes.md"]


def test_stats_counts_records_without_a_kind_as_no_kind(store_url, tmp_path):
    marked = record("a.md", 1, "Some text.", kind="markdown")
    foreign = jsonl(tmp_path / "f.jsonl", [{"text": "hello"}, {"text": "again"}, marked])
    assert run_cli("index", foreign, "--corpus", "c", "--store", store_url).code == 0
    text = run_cli("stats", "--store", store_url)
    assert text.code == 0 and "kinds: (no kind) 2, markdown 1" in text.stdout, text.stdout
    kinds = json.loads(run_cli("stats", "--store", store_url, "--json").stdout)["kinds"]
    assert kinds == {"(no kind)": 2, "markdown": 1}
