"""What the CLI writes, and what it refuses to touch: `-o`/`--report` targets that are not
regular files (links, FIFOs, devices, folders, sockets), a full disk under `-o`, and the
store's folder and file modes. All through the real CLI in a subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from flatten.record import end_mark
from tests.conftest import assert_clean_failure, file_size_limit, jsonl, record, run_cli, write

ROOT = os.geteuid() == 0


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    write(tmp_path / "md", {f"d{i}.md": f"# Doc {i}\n\nbody {i}\n" for i in range(3)})
    return tmp_path / "md"


@contextlib.contextmanager
def device_kept(path: str) -> Iterator[os.stat_result]:
    """Yield the device's stat; put the node back if the code under test replaced it (the old
    writer renamed a regular file over /dev/null as root)."""
    before = os.stat(path)
    try:
        yield before
    finally:
        after = os.lstat(path)
        if not stat.S_ISCHR(after.st_mode) or after.st_rdev != before.st_rdev:
            os.unlink(path)
            os.mknod(path, stat.S_IMODE(before.st_mode) | stat.S_IFCHR, before.st_rdev)
            os.chmod(path, stat.S_IMODE(before.st_mode))


def test_output_through_a_symlink_is_refused_and_neither_the_link_nor_its_target_changes(
    tmp_path, docs
):
    target = tmp_path / "target.jsonl"
    target.write_text("previous\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    result = run_cli("flatten", "--root", docs, "-o", link)
    assert_clean_failure(result, 1, "symbolic link", "neither replaced nor followed")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.jsonl", "md", "target.jsonl"]


def test_report_through_a_dangling_symlink_is_refused(tmp_path, docs):
    link = tmp_path / "report.json"
    link.symlink_to(tmp_path / "nowhere.json")
    result = run_cli("flatten", "--root", docs, "-q", "--report", link)
    assert_clean_failure(result, 1, "symbolic link")
    assert link.is_symlink() and not (tmp_path / "nowhere.json").exists()


def test_output_to_a_fifo_is_written_through_to_its_reader(tmp_path, docs):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # A second name for the same FIFO: if the CLI renamed over `pipe`, the reader would wait
    # forever; opening the FIFO for writing through this name lets it finish.
    os.link(fifo, tmp_path / "pipe-again")
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = run_cli("flatten", "--root", docs, "-q", "-o", fifo, timeout=60)
    with contextlib.suppress(OSError):  # ENXIO: the reader is done, nothing to unblock
        os.close(os.open(tmp_path / "pipe-again", os.O_WRONLY | os.O_NONBLOCK))
    reader.join(timeout=30)
    assert result.code == 0, result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    *lines, mark = received[0].decode().splitlines()  # a FIFO is a stream: it gets the mark
    assert [json.loads(line)["id"] for line in lines] == ["d0.md#1", "d1.md#1", "d2.md#1"]
    assert json.loads(mark) == end_mark(3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["md", "pipe", "pipe-again"]


@pytest.mark.skipif(not ROOT, reason="only root can rename over /dev/null, so only root can "
                    "show the old fault (the device replaced by a regular file)")  # fmt: skip
def test_output_to_dev_null_as_root_leaves_the_device_a_device(tmp_path, docs):
    report = tmp_path / "report.json"
    with device_kept("/dev/null") as before:
        result = run_cli("flatten", "--root", docs, "-q", "-o", "/dev/null", "--report", report)
        after = os.lstat("/dev/null")
    assert result.code == 0, result.stderr
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert json.loads(report.read_text())["ok"] is True


def test_a_full_device_is_a_named_disk_full_error(tmp_path, docs):
    report = tmp_path / "report.json"
    with device_kept("/dev/full"):  # writes to /dev/full fail with ENOSPC
        result = run_cli("flatten", "--root", docs, "-o", "/dev/full", "--report", report)
        assert stat.S_ISCHR(os.lstat("/dev/full").st_mode)
    assert_clean_failure(result, 1, "No space left on device")
    assert json.loads(report.read_text())["error"]["reason"] == "disk-full"


def test_output_to_a_directory_is_a_named_error_and_the_directory_is_untouched(tmp_path, docs):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    assert_clean_failure(run_cli("flatten", "--root", docs, "-o", out), 1, "is a directory")
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["md", "out"]


def test_output_to_a_socket_is_refused_and_the_socket_stays(tmp_path, docs):
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        result = run_cli("flatten", "--root", docs, "-o", path)
    assert_clean_failure(result, 1, "socket")
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


@pytest.mark.skipif(not ROOT, reason="only root may make a device node")
def test_output_to_a_block_device_is_refused_and_the_node_stays(tmp_path, docs):
    # A node of our own, never opened: a loop device number nothing here uses.
    node = tmp_path / "disk"
    os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 250))
    assert_clean_failure(run_cli("flatten", "--root", docs, "-o", node), 1, "block device")
    assert stat.S_ISBLK(os.lstat(node).st_mode)


def test_full_disk_under_output_leaves_the_previous_file_and_no_temp_files(tmp_path):
    write(
        tmp_path / "src", {f"f{i:03}.md": f"# Doc {i}\n" + "some text\n" * 200 for i in range(60)}
    )
    out = tmp_path / "out"
    out.mkdir()
    (out / "corpus.jsonl").write_text("previous good output\n")
    report = tmp_path / "report.json"
    result = run_cli(
        "flatten", "--root", tmp_path / "src", "-o", out / "corpus.jsonl", "--report", report,
        preexec_fn=file_size_limit(50_000),
    )  # fmt: skip
    assert_clean_failure(result, 1, "File too large")
    assert (out / "corpus.jsonl").read_text() == "previous good output\n"
    assert [p.name for p in out.iterdir()] == ["corpus.jsonl"]
    written = json.loads(report.read_text())
    assert written["ok"] is False and written["error"]["reason"] == "disk-full"


def test_an_existing_store_folder_keeps_its_mode(tmp_path):
    corpus = jsonl(tmp_path / "x.jsonl", [record("a.md", 1, "hello world")])
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    assert run_cli("index", corpus, "--corpus", "x", "--store", shared, "-q").code == 0
    by_env = tmp_path / "by-env"
    by_env.mkdir()
    by_env.chmod(0o755)
    assert (
        run_cli(
            "index", corpus, "--corpus", "x", "-q", env={"DOCS_FLATTEN_STORE": str(by_env)}
        ).code
        == 0
    )
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert stat.S_IMODE(by_env.stat().st_mode) == 0o755
    for store in (shared, by_env):
        assert stat.S_IMODE((store / "index.sqlite").stat().st_mode) == 0o600


def test_a_store_folder_the_tool_creates_is_0700_and_its_database_0600(tmp_path):
    corpus = jsonl(tmp_path / "x.jsonl", [record("a.md", 1, "hello world")])
    store = tmp_path / "new" / "store"
    result = run_cli(
        "index", corpus, "--corpus", "x", "--store", store, "-q", preexec_fn=lambda: os.umask(0o022)
    )
    assert result.code == 0, result.stderr
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    assert stat.S_IMODE((store / "index.sqlite").stat().st_mode) == 0o600
    assert stat.S_IMODE(store.parent.stat().st_mode) == 0o755  # a parent: an ordinary folder


@pytest.mark.parametrize("planted", ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"])
def test_a_link_planted_in_a_shared_store_folder_is_refused_and_nothing_is_written(
    tmp_path, planted
):
    corpus = jsonl(tmp_path / "x.jsonl", [record("a.md", 1, "hello world")])
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    elsewhere = tmp_path / "elsewhere.db"
    (shared / planted).symlink_to(elsewhere)
    for command in (["index", corpus, "--corpus", "x"], ["search", "hello"]):
        result = run_cli(*command, "--store", shared)
        assert result.code == 1 and "Traceback" not in result.stderr
        assert f"{planted} is a symbolic link" in result.stderr
    assert not elsewhere.exists()
    assert sorted(p.name for p in shared.iterdir()) == [planted]
