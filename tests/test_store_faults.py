"""Store faults through the real CLI: a read-only store, a full disk during `index`, a store
written by a newer version. Each is a named error with exit 1 and no traceback, and the index
afterwards is intact with its old documents.

How the faults are made real, also as root (here and in CI): root ignores file modes, so as
root the CLI runs with CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER dropped from its
bounding set (prctl, needs CAP_SETPCAP, which Docker's default set has) and then a chmod'ed
database or folder really is read-only to it (as a non-root user the modes alone do it). A full
disk is RLIMIT_FSIZE in the child: writes past the limit fail with EFBIG, which SQLite reports
as a disk I/O error. Running as `nobody` fails when the interpreter lives under /root; a small
tmpfs or a read-only mount needs CAP_SYS_ADMIN, and `chattr +i` needs CAP_LINUX_IMMUTABLE and a
file system that supports it: CI containers have neither.
"""

from __future__ import annotations

import ctypes
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flatten import __version__
from index.schema import latest
from tests.conftest import (
    PROJECT,
    assert_clean_failure,
    file_size_limit,
    jsonl,
    record,
    run_cli,
)


def big_corpus(path: Path, docs: int = 1500) -> Path:
    return jsonl(
        path,
        [
            record(f"big/{i}.md", 1, " ".join(f"word{i}x{j}" for j in range(150)))
            for i in range(docs)
        ],
    )


def indexed(store: Path) -> tuple[str, list[str]]:
    """The store's integrity check and its documents, read by a plain connection."""
    db = sqlite3.connect(f"{(store / 'index.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        check = db.execute("PRAGMA integrity_check").fetchone()[0]
        sources = [row[0] for row in db.execute("SELECT source FROM documents ORDER BY source")]
    finally:
        db.close()
    return check, sources


# Linux capabilities that let root ignore file modes, and prctl's "drop from the bounding set".
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER = 1, 2, 3
PR_CAPBSET_DROP = 24


def without_root_privileges() -> None:
    """A preexec_fn: the child, even as root, is held to file modes like any user. Dropped from
    the bounding set, the capabilities are gone from root's permitted set after exec."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.fixture
def as_a_user() -> dict[str, Any]:
    """How to run the CLI so that file modes bind it: as root, without the capabilities that
    override them; as anyone else, as it is."""
    if os.geteuid() != 0:
        return {}
    try:
        subprocess.run(
            [sys.executable, "-c", "import flatten.cli"],
            cwd=PROJECT,
            check=True,
            capture_output=True,
            preexec_fn=without_root_privileges,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot drop root's file-mode override here ({exc})")
    return {"preexec_fn": without_root_privileges}


@pytest.mark.parametrize("made_readonly", ["database", "folder"])
def test_a_read_only_store_is_a_named_error_and_keeps_its_documents(
    tmp_path, as_a_user, made_readonly
):
    store = tmp_path / "store"
    old = jsonl(tmp_path / "old.jsonl", [record("old.md", 1, "hello world")])
    new = jsonl(tmp_path / "new.jsonl", [record("new.md", 1, "goodbye world")])
    assert run_cli("index", old, "--corpus", "old", "--store", store, "-q").code == 0
    if made_readonly == "database":
        (store / "index.sqlite").chmod(0o400)
    else:
        store.chmod(0o500)
    result = run_cli(
        "index", new, "--corpus", "new", "--store", store, "--corpus", "new", **as_a_user
    )
    assert_clean_failure(result, 1, "read-only", "as it was before this run")
    if made_readonly == "database":  # the owner's read-only mode stays (it was reset to 0600)
        assert stat.S_IMODE((store / "index.sqlite").stat().st_mode) == 0o400
    store.chmod(0o700)  # for the check below and the clean-up
    assert indexed(store) == ("ok", ["old.md"])


def test_a_full_disk_during_index_is_a_named_error_and_the_old_index_survives(tmp_path):
    store = tmp_path / "store"
    old = jsonl(tmp_path / "old.jsonl", [record("old.md", 1, "hello world")])
    assert run_cli("index", old, "--corpus", "old", "--store", store, "-q").code == 0
    size = (store / "index.sqlite").stat().st_size
    result = run_cli(
        "index", big_corpus(tmp_path / "big.jsonl"), "--store", store, "--corpus", "big",
        preexec_fn=file_size_limit(size + 100_000),
    )  # fmt: skip
    assert_clean_failure(result, 1, "cannot write the index", "as it was before this run")
    assert indexed(store) == ("ok", ["old.md"])
    again = run_cli("search", "hello", "--store", store, "--json")
    assert again.code == 0 and "old.md" in again.stdout


def test_a_store_written_by_a_newer_version_is_refused_naming_both_versions(tmp_path):
    store = tmp_path / "store"
    old = jsonl(tmp_path / "old.jsonl", [record("old.md", 1, "hello world")])
    assert run_cli("index", old, "--corpus", "old", "--store", store, "-q").code == 0
    db = sqlite3.connect(store / "index.sqlite")
    with db:
        db.execute("INSERT INTO schema_migrations VALUES ('m999_future', '2099-01-01T00:00:00Z')")
    db.close()
    new = jsonl(tmp_path / "new.jsonl", [record("new.md", 1, "goodbye world")])
    versions = ("newer docs-flatten", "m999_future", __version__, latest())
    assert_clean_failure(run_cli("index", new, "--corpus", "new", "--store", store), 1, *versions)
    assert_clean_failure(run_cli("search", "hello", "--store", store), 1, *versions)
    assert indexed(store) == ("ok", ["old.md"])


def test_a_store_on_a_read_only_volume_is_searched(tmp_path, as_a_user):
    # A store mounted read-only (a Docker or Kubernetes volume) has no -shm file and no way to
    # make one: readers open it as immutable rather than fail and hint at deleting it.
    store = tmp_path / "store"
    old = jsonl(tmp_path / "old.jsonl", [record("old.md", 1, "hello world")])
    assert run_cli("index", old, "--corpus", "old", "--store", store, "-q").code == 0
    assert not (store / "index.sqlite-wal").exists() and not (store / "index.sqlite-shm").exists()
    (store / "index.sqlite").chmod(0o400)
    store.chmod(0o500)
    try:
        found = run_cli("search", "hello", "--store", store, "--json", **as_a_user)
        assert found.code == 0 and "old.md" in found.stdout, found.stderr
        stats = run_cli("stats", "--store", store, **as_a_user)
        assert stats.code == 0 and "old" in stats.stdout, stats.stderr
        refused = run_cli("index", old, "--corpus", "again", "--store", store, **as_a_user)
        assert_clean_failure(refused, 1, "read-only")
    finally:
        store.chmod(0o700)
    assert indexed(store) == ("ok", ["old.md"])
