"""The one JSONL writer: deterministic bytes, and a file appears whole or not at all.

What a named output (`-o`, `--report`) may be, and what happens to it:
- a regular file, or nothing yet: written to a temporary sibling that is renamed over the
  target only when the run succeeds, so a failed or interrupted run leaves the previous file
  as it was and no temporary file behind;
- a FIFO or a character device (`/dev/null`, a terminal): written through, as a shell's `>`
  would, with no temporary file: renaming over one would replace the node itself (a root run
  turned `/dev/null` into a regular file), and a stream has nothing to keep atomic;
- a symbolic link: refused, neither replaced nor followed (a link in a shared folder must not
  redirect, or lose, what the run writes);
- a directory, a block device or a socket: refused.

A temporary file is named `.<target name>.docs-flatten-<pid>-<random>.tmp` and locked (flock)
by its writer while it is open. A process killed outright (SIGKILL: the OOM killer, `kill -9`, a
CI timeout) runs no clean-up and leaves it behind: the next run writing into that folder removes
it only when all of these say its writer is gone (`remove_stale_temporaries`): its lock can be
taken (no process holds it, and the file system has locks), its pid runs no more, and nobody
has written to it for `STALE_SECONDS`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import IO, Any

from flatten.errors import FlattenError, OutputError, write_failed
from flatten.leftovers import STALE_SECONDS, may_run
from flatten.record import dumps, end_mark, error_mark, is_stream, json_line

__all__ = [
    "EncodedLines",
    "OutputFile",
    "Sink",
    "dumps",
    "json_document",
    "remove_stale_temporaries",
    "temporary_writer",
    "write_failed",
    "write_json",
    "write_jsonl",
]


@dataclass(frozen=True)
class EncodedLines:
    """`count` records as JSON lines, encoded where they were made (a worker process), so
    the process that writes them only copies bytes. `write_jsonl` writes them as they are."""

    data: bytes
    count: int


@dataclass(frozen=True)
class Sink:
    """A binary handle whose write failures are named errors; a closed pipe stays itself
    (the CLI treats a reader that went away, `| head`, as no error)."""

    handle: IO[bytes]
    name: str

    def write(self, data: bytes) -> None:
        self._guarded(self.handle.write, data)

    def flush(self) -> None:
        self._guarded(self.handle.flush)

    def _guarded(self, call: Callable[..., object], *args: object) -> None:
        try:
            call(*args)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise write_failed(self.name, error) from error


def _refusal(path: str, mode: int) -> OutputError | None:
    """Why `path` (its lstat mode) cannot be written, or None when it can."""
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return None
    if stat.S_ISLNK(mode):
        return _symlink_refusal(path)
    if stat.S_ISDIR(mode):
        return OutputError(
            f"cannot write {path}: it is a directory",
            reason="output-is-directory",
            hint="name a file inside it",
        )
    kind = "block device" if stat.S_ISBLK(mode) else "socket" if stat.S_ISSOCK(mode) else "file"
    return OutputError(
        f"refusing to write {path}: it is a {kind}, not a regular file, FIFO or character device",
        reason="output-not-regular",
    )


def _symlink_refusal(path: str) -> OutputError:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return OutputError(
        f"refusing to write {path}: it is a symbolic link (to {target}); the link is neither "
        "replaced nor followed",
        reason="output-is-symlink",
        hint="name the file itself, not a link to it",
    )


def _lstat_mode(path: str) -> int | None:
    """The target's lstat mode, or None when nothing is there."""
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as error:
        raise OutputError(
            f"cannot write {path}: {error.strerror}", reason="output-unwritable"
        ) from error


# The pid of a temporary file's writer, in its name, as getpid gives it (ASCII digits, no
# leading zero, below 2**32). The random part is mkstemp's.
_TEMPORARY = re.compile(
    r"\..+\.docs-flatten-([1-9][0-9]{0,9})-[a-z0-9_]{8}\.tmp", re.DOTALL | re.ASCII
)
# One name in a folder: at most 255 bytes on the file systems Linux and macOS use.
_NAME_MAX = 255


def temporary_writer(name: str) -> int | None:
    """The pid of the process that wrote `name` when it names one of this tool's temporary
    output files (in any folder, for any target), else None. A walk of a tree skips these:
    they are a run's bytes in flight, or a killed run's leftovers, never a file of the tree."""
    match = _TEMPORARY.fullmatch(name)
    return int(match.group(1)) if match else None


def _temporary_prefix(target: str, pid: int) -> str:
    """`.<target>.docs-flatten-<pid>-`, the target cut short where the whole name would be
    longer than a folder allows."""
    mark = f".docs-flatten-{pid}-"
    room = _NAME_MAX - len(os.fsencode(mark)) - len("xxxxxxxx.tmp") - 1
    while len(os.fsencode(target)) > room:
        target = target[:-1]
    return f".{target}{mark}"


def remove_stale_temporaries(directory: str, now: float | None = None) -> list[str]:
    """Remove the temporary files that killed writers left in `directory`; return their paths.
    A file is removed only when its lock can be taken (a live writer, or a worker it forked,
    holds it; where the file system has no locks the file stays), its writer's pid runs no
    more here, and nobody has written to it for `STALE_SECONDS`: the lock or the pid alone can
    mislead (a file system that ignores locks, a pid of another machine or container sharing
    the folder, a reused pid), and a writer that is slow or stopped keeps its file fresh or its
    pid alive. Only a regular file is opened, and removed only while its name still leads to
    it: another user's files, links, FIFOs, devices and a file renamed over the name meanwhile
    are left alone; so is an older version's `.<target>.<random>.tmp`, which says nothing of
    its writer."""
    now = time.time() if now is None else now
    removed: list[str] = []
    try:
        found = [(e.path, pid) for e in os.scandir(directory)
                 if (pid := temporary_writer(e.name)) is not None]  # fmt: skip
    except OSError:
        return removed
    for path, pid in found:
        try:
            if _remove_if_stale(path, pid, now):
                removed.append(path)
        except (OSError, ValueError, OverflowError):  # left as it is: no sweep fails a run
            continue
    return removed


def _remove_if_stale(path: str, pid: int, now: float) -> bool:
    """Remove `path` (named as a temporary file of `pid`) if its writer is surely gone; an
    OSError (gone already, not ours to read, a folder that allows no removal) leaves it."""
    if may_run(pid):
        return False
    named = os.lstat(path)
    if not stat.S_ISREG(named.st_mode):  # a link, FIFO or device is not opened at all
        return False
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not _same_file(info, named) or now - info.st_mtime <= STALE_SECONDS:
            return False
        # Removed by name: only while the name is still the file opened and checked (one
        # renamed over it meanwhile, in a shared folder, stays).
        if not _lock(fd) or not _same_file(os.lstat(path), info):
            return False
        os.unlink(path)
        return True
    finally:
        os.close(fd)


def _same_file(one: os.stat_result, other: os.stat_result) -> bool:
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino)


def _lock(fd: int) -> bool:
    """An exclusive flock on `fd`, if no process holds one: held by the open file, so by every
    process that inherited it (forked workers), and released by the kernel when the last of
    them ends, however it ends. True only when taken: False when held, and where locks are
    not to be had (no fcntl; ENOLCK from NFS mounted `nolock`, a FUSE or SMB mount's
    EOPNOTSUPP), since a lock not tested says nothing of a writer elsewhere."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held (EWOULDBLOCK), or not to be had here
        return False
    return True


class OutputFile:
    """`with OutputFile(path) as sink:` writes bytes to `path` as the module docstring says:
    a regular file only if the block succeeds, a FIFO or character device as they come."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._tmp: str | None = None  # None: writing through to the target itself
        self._file: IO[bytes] | None = None

    def __enter__(self) -> Sink:
        mode = _lstat_mode(self.path)
        if mode is not None:
            refusal = _refusal(self.path, mode)
            if refusal is not None:
                raise refusal
            if not stat.S_ISREG(mode):
                self._file = self._open_stream()
                return Sink(self._file, self.path)
        directory = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(directory):
            raise OutputError(
                f"cannot write {self.path}: directory {directory} does not exist",
                reason="output-dir-missing",
            )
        remove_stale_temporaries(directory)
        prefix = _temporary_prefix(os.path.basename(self.path), os.getpid())
        try:
            # Ctrl-C or SIGTERM between creating the temporary file and returning from here
            # would skip __exit__ and leave the file behind: signals wait until it is recorded,
            # and one that arrives as they are let through cleans up here.
            with _signals_deferred():
                fd, self._tmp = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=".tmp")
                self._file = os.fdopen(fd, "wb")
                _lock(fd)
        except OSError as exc:
            raise OutputError(
                f"cannot write {self.path}: {exc.strerror}", reason="output-unwritable"
            ) from exc
        except BaseException:
            if self._file is not None:
                self._discard()
            raise
        return Sink(self._file, self.path)

    def _open_stream(self) -> IO[bytes]:
        # O_NOFOLLOW: a link swapped in since the check is refused, not followed. Opening a
        # FIFO waits for its reader, as a shell's `>` does.
        flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags)
        except OSError as error:
            if error.errno == errno.ELOOP:  # became a link since the check
                raise _symlink_refusal(self.path) from error
            raise OutputError(
                f"cannot write {self.path}: {error.strerror}", reason="output-unwritable"
            ) from error
        return os.fdopen(fd, "wb")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._file is not None
        try:
            if exc_type is None:
                self._commit()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise write_failed(self.path, error) from error
        finally:
            self._discard()

    def _commit(self) -> None:
        assert self._file is not None
        self._file.flush()
        if self._tmp is None:
            self._file.close()
            return
        os.fsync(self._file.fileno())
        self._file.close()
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self._tmp, 0o666 & ~umask)
        # Checked again: a link or folder put there during the run is not renamed over.
        mode = _lstat_mode(self.path)
        if mode is not None and not stat.S_ISREG(mode):
            raise _refusal(self.path, mode) or OutputError(
                f"refusing to write {self.path}: a FIFO or device took its place during the run",
                reason="output-replaced",
            )
        os.replace(self._tmp, self.path)
        self._tmp = None

    def _discard(self) -> None:
        """Close quietly (a failed flush must not hide the first error) and remove the
        temporary file, whatever happened."""
        assert self._file is not None
        with contextlib.suppress(OSError):
            self._file.close()
        if self._tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._tmp)
            self._tmp = None


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM held back for the block (main thread only: where Python runs its
    handlers), delivered when it ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def write_jsonl(
    records: Iterable[Any],
    output: str | os.PathLike[str] | None,
    to_dict: Callable[[Any], dict[str, Any]],
    *,
    marked: bool = False,
    partial: Callable[[], str | None] = lambda: None,
) -> int:
    """Write one JSON line per record to `output` (a path) or stdout (None); return the count.
    An `EncodedLines` among the records is written as it is (it was encoded in `to_dict`'s
    layout where it was made).

    `marked`: when the output is a pipe or socket, end the stream with the closing mark (or, if
    the run fails, an error mark; see flatten.record), so `index -` can tell a complete snapshot
    from a cut one. A file is atomic already and gets no mark, unless the run was partial.
    `partial`, asked once the records are written: why the run saw its source only in part, if
    it did; the closing mark says so (on a file too, `marked` being set: the file's only mark),
    and `index` then removes nothing."""
    if output is None:
        return _write(records, Sink(sys.stdout.buffer, "stdout"), to_dict, marked, partial)
    with OutputFile(output) as sink:
        return _write(records, sink, to_dict, marked, partial)


def _write(
    records: Iterable[Any],
    sink: Sink,
    to_dict: Callable[[Any], dict[str, Any]],
    marked: bool,
    partial: Callable[[], str | None] = lambda: None,
) -> int:
    framed = marked and _is_stream(sink.handle)  # a pipe: a mark whatever happens
    count = 0
    try:
        for record in records:
            if type(record) is EncodedLines:
                sink.write(record.data)
                count += record.count
            else:
                sink.write(json_line(to_dict(record)))
                count += 1
    except BrokenPipeError:
        raise  # the reader went away: nobody to tell
    except BaseException as exc:
        if framed:  # best effort: the run's own error is the one that matters
            reason = exc.reason if isinstance(exc, FlattenError) else type(exc).__name__
            with contextlib.suppress(OSError, OutputError):
                sink.write(json_line(error_mark(reason)))
                sink.flush()
        raise
    # A file of a partial run (a crawl cut by a bound) carries the closing mark too: loaded
    # later with `index FILE`, it must add and update only, as it would have through a pipe.
    why = partial() if marked else None
    if framed or why is not None:
        sink.write(json_line(end_mark(count, why)))
    sink.flush()
    return count


def _is_stream(handle: IO[bytes]) -> bool:
    try:
        return is_stream(handle.fileno())
    except (OSError, ValueError, AttributeError):  # an in-memory stdout (a test runner's)
        return False


def json_document(data: Any) -> bytes:
    """A JSON document (a report, say) as `write_json` writes it."""
    return json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"


def write_json(data: Any, path: str | os.PathLike[str]) -> None:
    """A JSON document, written as `OutputFile` says."""
    with OutputFile(path) as sink:
        sink.write(json_document(data))


def write_text(text: str, output: str | os.PathLike[str] | None) -> None:
    """UTF-8 text to `output` (as `OutputFile` says) or stdout (None)."""
    data = text.encode("utf-8")
    if output is None:
        sink = Sink(sys.stdout.buffer, "stdout")
        sink.write(data)
        sink.flush()
        return
    with OutputFile(output) as sink:
        sink.write(data)
