"""The writer's temporary files: named as this tool's (with the writer's pid), locked while their
writer (or a worker it forked) lives, and removed by a later run only when their writer is surely
gone: a writer killed outright (SIGKILL) cannot remove its own."""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import subprocess
import sys
import textwrap
import time

from flatten import writer
from flatten.writer import (
    STALE_SECONDS,
    OutputFile,
    remove_stale_temporaries,
    temporary_writer,
    write_jsonl,
)
from tests.conftest import PROJECT, run_cli, write

_KILLED_MID_WRITE = textwrap.dedent(
    """
    import os, sys, time
    from flatten.writer import OutputFile

    with OutputFile(sys.argv[1]) as sink:
        sink.write(b"partial\\n")
        sink.flush()
        holder = ""
        if sys.argv[2] == "fork" and (holder := os.fork()) == 0:
            time.sleep(600)  # a forked worker: it holds the file open, and so its lock
            os._exit(0)
        print("written", holder, flush=True)
        time.sleep(600)
    """
)


def _killed_writer(target, fork: bool = False) -> tuple[str, int | None]:
    """The temporary file a writer of `target` left when SIGKILLed mid-write, and the pid of
    the child it forked (still running) if `fork`."""
    writer = subprocess.Popen([sys.executable, "-c", _KILLED_MID_WRITE, str(target),
                               "fork" if fork else "alone"], cwd=PROJECT,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert writer.stdout is not None
        said = writer.stdout.readline().split()
        assert said[0] == "written"
    finally:
        writer.kill()
        writer.wait(timeout=60)
        writer.stdout.close()
    (left,) = temporaries(target.parent)
    assert temporary_writer(left) == writer.pid
    return left, int(said[1]) if fork else None


def temporaries(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _age(path) -> None:
    long_ago = time.time() - STALE_SECONDS - 60
    os.utime(path, (long_ago, long_ago))


def test_a_killed_writers_file_is_removed_by_a_later_run_once_nobody_wrote_to_it_for_long(
    tmp_path,
):
    left, _ = _killed_writer(tmp_path / "out.jsonl")
    assert left.startswith(".out.jsonl.docs-flatten-")
    # Just killed: left for now (a live writer on another machine would look the same).
    write_jsonl([{"a": 1}], tmp_path / "other.jsonl", dict)
    assert temporaries(tmp_path) == [left]
    _age(tmp_path / left)
    write_jsonl([{"a": 1}], tmp_path / "other.jsonl", dict)
    assert temporaries(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.jsonl"]


def test_a_file_a_live_worker_of_the_killed_writer_holds_is_kept_until_it_ends(tmp_path):
    left, worker = _killed_writer(tmp_path / "out.jsonl", fork=True)
    assert worker is not None
    try:
        _age(tmp_path / left)
        assert remove_stale_temporaries(str(tmp_path)) == []  # its lock is held
    finally:
        os.kill(worker, signal.SIGKILL)
    deadline = time.monotonic() + 60  # the lock goes when the kernel has closed its files
    while temporaries(tmp_path) and time.monotonic() < deadline:
        remove_stale_temporaries(str(tmp_path))
        time.sleep(0.05)
    assert temporaries(tmp_path) == []


def test_only_files_of_writers_surely_gone_are_removed(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=30)  # reaped: its pid runs no more
    alive = os.getpid()
    (tmp_path / "target").write_bytes(b"x")
    names = {
        f".out.jsonl.docs-flatten-{gone.pid}-a81c_x9z.tmp": "removed",
        f".a.b.docs-flatten-{gone.pid}-q7rzw3aa.tmp": "removed",  # another target's: ours too
        f".out.jsonl.docs-flatten-{alive}-k2x9abcd.tmp": "kept",  # a writer at work
        f".out.jsonl.docs-flatten-{gone.pid}-fresh123.tmp": "kept",  # written to lately
        ".out.jsonl.q7rzw3ab.tmp": "kept",  # an older version's name: says nothing of its writer
        f".out.jsonl.docs-flatten-{gone.pid}-short.tmp": "kept",  # not a name mkstemp makes
        "notes.tmp": "kept",
    }
    for name in names:
        (tmp_path / name).write_bytes(b"partial")
        if "fresh" not in name:
            _age(tmp_path / name)
    link = f".out.jsonl.docs-flatten-{gone.pid}-link1234.tmp"
    (tmp_path / link).symlink_to(tmp_path / "target")  # never followed, never removed
    removed = remove_stale_temporaries(str(tmp_path))
    assert sorted(os.path.basename(p) for p in removed) == sorted(
        n for n, fate in names.items() if fate == "removed"
    )
    kept = sorted(n for n, fate in names.items() if fate == "kept")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*kept, link, "target"])


def test_a_writers_temporary_file_names_it_and_this_tool(tmp_path):
    for target in ("out.jsonl", "é x.jsonl", "x" * 250):
        with OutputFile(tmp_path / target) as sink:
            sink.write(b"{}\n")
            (name,) = temporaries(tmp_path)
            assert temporary_writer(name) == os.getpid()
            assert len(os.fsencode(name)) <= 255
        assert (tmp_path / target).read_bytes() == b"{}\n" and temporaries(tmp_path) == []
    assert temporary_writer(".out.jsonl.k3j4h5ab.tmp") is None
    assert temporary_writer("out.jsonl.docs-flatten-12-k3j4h5ab.tmp") is None


def test_a_leftover_temporary_of_another_output_is_not_read_as_input(tmp_path):
    # A run killed outright left `.old.jsonl.docs-flatten-<pid>-<random>.tmp` in the tree; a
    # later run writing elsewhere must not flatten those bytes as a file of the tree.
    from flatten import FlattenOptions, flatten_root

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.md").write_text("# A\n\nkept\n")
    (tree / ".old.jsonl.docs-flatten-99999-abcd1234.tmp").write_text('{"id": "x#1"}\n')
    sources = {r.source for r in flatten_root(tree, FlattenOptions(kind="auto"))}
    assert sources == {"a.md"}


def test_a_pid_past_what_can_be_checked_leaves_the_file_and_fails_no_run(tmp_path):
    # os.kill takes no pid past 2**31 - 1 (OverflowError): every -o into this folder failed,
    # with a traceback. A pid that cannot be checked is no sign its writer is gone.
    write(tmp_path / "tree", {"a.md": "# A\n\nalpha\n"})
    folder = tmp_path / "o"
    folder.mkdir()
    # The last is no name of ours: Arabic-Indic digits, never what getpid gives (it was
    # read as pid 3333333, and removed).
    names = [f".x.docs-flatten-{pid}-abcdefgh.tmp" for pid in (2**31, 9999999999, "٣" * 7)]
    for name in names:
        (folder / name).write_bytes(b"partial")
        _age(folder / name)
    done = run_cli("flatten", "--root", tmp_path / "tree", "--kind", "auto", "-q",
                   "-o", folder / "out.jsonl")  # fmt: skip
    assert done.code == 0 and "Traceback" not in done.stderr, done.stderr
    assert temporaries(folder) == sorted(names)
    assert [temporary_writer(name) for name in names] == [2**31, 9999999999, None]


def test_only_the_pids_this_tool_writes_are_read_from_a_name():
    # ASCII digits, no leading zero, at most ten of them (a pid is below 2**32).
    for pid in ("0", "0123", "9" * 11, "\u0663" * 4, "\uff11\uff12", "+12", "1_0", " 12"):
        assert temporary_writer(f".x.docs-flatten-{pid}-abcdefgh.tmp") is None, pid
    for pid in ("1", "10", "4194304", "9999999999"):
        assert temporary_writer(f".x.docs-flatten-{pid}-abcdefgh.tmp") == int(pid)


def _gone_pid() -> int:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=30)  # reaped: its pid runs no more
    return gone.pid


def _stale_temporary(folder, random: str = "abcd1234"):
    path = folder / f".out.jsonl.docs-flatten-{_gone_pid()}-{random}.tmp"
    path.write_bytes(b"partial")
    _age(path)
    return path


_IN_OPEN = 0x20  # inotify(7)


def _opens_seen(path):
    """A call that says whether `path` was opened since this one (inotify, Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert fd >= 0 and libc.inotify_add_watch(fd, os.fsencode(path), _IN_OPEN) >= 0

    def seen() -> bool:
        try:
            return bool(os.read(fd, 4096))
        except BlockingIOError:
            return False
        finally:
            os.close(fd)

    return seen


def test_a_fifo_named_as_a_stale_temporary_is_neither_opened_nor_removed(tmp_path):
    # Opening a FIFO wakes a writer waiting for its reader; a device's open may do anything.
    fifo = tmp_path / f".out.jsonl.docs-flatten-{_gone_pid()}-fifo1234.tmp"
    os.mkfifo(fifo)
    _age(fifo)
    opened = _opens_seen(fifo)
    assert remove_stale_temporaries(str(tmp_path)) == []
    assert not opened() and temporaries(tmp_path) == [fifo.name]


def test_a_file_renamed_over_a_stale_temporary_while_it_is_checked_is_kept(tmp_path, monkeypatch):
    left = _stale_temporary(tmp_path)
    theirs = tmp_path / "theirs"
    theirs.write_bytes(b"another's file")
    lock = writer._lock

    def renamed_over_meanwhile(fd: int) -> bool:  # in a shared folder, another user's rename
        os.replace(theirs, left)
        return lock(fd)

    monkeypatch.setattr(writer, "_lock", renamed_over_meanwhile)
    assert remove_stale_temporaries(str(tmp_path)) == []
    assert left.read_bytes() == b"another's file"


def test_where_locks_cannot_be_had_a_stale_looking_temporary_is_kept(tmp_path, monkeypatch):
    # NFS mounted nolock answers ENOLCK: a live writer on another host may hold the file.
    import fcntl

    def no_locks(fd: int, how: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    left = _stale_temporary(tmp_path)
    monkeypatch.setattr(fcntl, "flock", no_locks)
    assert remove_stale_temporaries(str(tmp_path)) == []
    assert temporaries(tmp_path) == [left.name]
