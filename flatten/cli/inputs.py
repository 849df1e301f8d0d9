"""What an input named on the command line is (a PATH of `index`, its stdin, the file of
--config, --queries, --qrels or --sources), and a named pipe read without hanging on it.

A path is a folder, a regular file, a pipe (a named one, or a process substitution's
`/dev/fd/N`: read once) or the null device (an empty input, refused as any empty input is).
Anything else (`/dev/zero`, a socket, a block device) is no input to read to its end: refused,
never opened.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from flatten.errors import FlattenError, UsageError

FOLDER, FILE, PIPE = "folder", "file", "pipe"
# How long a named pipe may wait for a program to open it for writing. A writer started first
# waits for its reader; one started beside `index` (`producer > pipe &`) opens it at once.
PIPE_PATIENCE = 5.0
_POLL = 0.05


def input_kind(raw: str) -> str:
    """`FOLDER`, `FILE` or `PIPE` for a PATH of `index` (links followed); `UsageError` naming
    what it is otherwise: `path-missing`, `not-a-file`, `path-unreadable`."""
    try:
        found = os.stat(raw)
    except FileNotFoundError:
        raise UsageError(f"no such file or directory: {raw}", reason="path-missing") from None
    except OSError as exc:
        raise UsageError(f"cannot read {raw}: {exc.strerror}", reason="path-unreadable") from None
    return _kind(raw, found)


def check_stdin() -> None:
    """`index -`: standard input redirected from a device other than the null device or a
    terminal (`< /dev/zero`) would be copied to a temporary file until the disk is full;
    refused unread (`not-a-file`), as the device named as a PATH is."""
    found = os.fstat(0)
    if stat.S_ISCHR(found.st_mode) and not os.isatty(0) and found.st_rdev != _null_device():
        raise UsageError(
            "stdin is a character device, not a file, a pipe or a terminal",
            reason="not-a-file",
            hint="redirect a JSONL file or a producer's output into it, or name the file",
        )


@contextlib.contextmanager
def option_file(path: Path | None) -> Iterator[Path | None]:
    """The file an option names (--config, --queries, --qrels, --sources) ready for its reader
    to open: a file or folder as it is (the reader says what is wrong with a folder or a
    missing path), a pipe (`--queries <(...)`) copied to a temporary file first, anything else
    refused unread (`not-a-file`). The reader's own open would wait forever for a pipe no
    program writes to, and read /dev/zero forever."""
    try:
        found = os.stat(path) if path is not None else None
    except OSError:
        found = None
    if path is None or found is None or _kind(str(path), found) != PIPE:
        yield path
        return
    copy = spool_named_pipe(path)
    try:
        yield copy
    finally:
        copy.unlink(missing_ok=True)


def _kind(raw: str, found: os.stat_result) -> str:
    if stat.S_ISDIR(found.st_mode):
        return FOLDER
    if stat.S_ISREG(found.st_mode):
        return FILE
    if stat.S_ISFIFO(found.st_mode):
        return PIPE
    if stat.S_ISCHR(found.st_mode) and found.st_rdev == _null_device():
        return FILE  # reads as empty: the load says `empty-input`, as for an empty file
    what = ("a character device" if stat.S_ISCHR(found.st_mode) else
            "a block device" if stat.S_ISBLK(found.st_mode) else
            "a socket" if stat.S_ISSOCK(found.st_mode) else "not a regular file")  # fmt: skip
    raise UsageError(
        f"{raw} is {what}, not a file, a folder or a pipe",
        reason="not-a-file",
        hint="name a file; - reads stdin where a command takes it",
    )


def _null_device() -> int | None:
    try:
        return os.stat(os.devnull).st_rdev
    except OSError:
        return None


def spool_named_pipe(path: Path, patience: float = PIPE_PATIENCE) -> Path:
    """A named pipe's stream in a temporary file (the caller removes it). The pipe is opened
    without blocking, so one that no program opens for writing within `patience` seconds is
    refused (`pipe-no-writer`) instead of waiting forever; once a writer came, the stream is
    read to its end however slow the writer is."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        first = _first_byte(fd, path, patience)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as stream:
            from index.loader import spool_stream  # the loader's own temporary copy

            return spool_stream(stream, "pipe", first)
    finally:
        os.close(fd)


def _first_byte(fd: int, path: Path, patience: float) -> bytes:
    """The stream's first byte (b"" for a writer that wrote nothing) once a writer has opened
    the pipe; b"" too, without waiting, when a writer is there but has not written yet."""
    deadline = time.monotonic() + patience
    while True:
        try:
            first = os.read(fd, 1)
        except BlockingIOError:
            return b""  # a writer holds the pipe open: the blocking reads wait for it
        if first:
            return first
        # b"": no writer holds the pipe now. One that came and went leaves a hang-up; a pipe
        # that never had one does not.
        if _hung_up(fd):
            return b""
        if time.monotonic() >= deadline:
            raise FlattenError(
                f"no program opened the named pipe {path} for writing in {patience:g} s",
                reason="pipe-no-writer",
                hint="start the program that writes to it first (it waits for its reader)",
            )
        time.sleep(_POLL)


def _hung_up(fd: int) -> bool:
    import select

    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return any(events & select.POLLHUP for _, events in poller.poll(0))
