"""The one JSONL writer: deterministic bytes, and a file appears whole or not at all.

A file is written to a temporary sibling and renamed over the target only when the run
succeeds, so a failed or interrupted run never leaves a truncated or partial output.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import IO, Any

from flatten.errors import OutputError


def dumps(obj: Any) -> str:
    """One JSON line: UTF-8 kept as is, compact separators, insertion-ordered keys."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class AtomicFile:
    """`with AtomicFile(path) as f:` writes bytes to `path` only if the block succeeds."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._tmp: str | None = None
        self._file: IO[bytes] | None = None

    def __enter__(self) -> IO[bytes]:
        directory = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(directory):
            raise OutputError(
                f"cannot write {self.path}: directory {directory} does not exist",
                reason="output-dir-missing",
            )
        try:
            fd, self._tmp = tempfile.mkstemp(
                dir=directory, prefix=f".{os.path.basename(self.path)}.", suffix=".tmp"
            )
        except OSError as exc:
            raise OutputError(
                f"cannot write {self.path}: {exc.strerror}", reason="output-unwritable"
            ) from exc
        self._file = os.fdopen(fd, "wb")
        return self._file

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._file is not None and self._tmp is not None
        try:
            if exc_type is None:
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(self._tmp, 0o666 & ~umask)
                os.replace(self._tmp, self.path)
                return
        except OSError as error:
            raise OutputError(
                f"cannot write {self.path}: {error.strerror}", reason="output-unwritable"
            ) from error
        finally:
            if not self._file.closed:
                self._file.close()
            if os.path.exists(self._tmp):
                os.unlink(self._tmp)


def write_jsonl(
    records: Iterable[Any],
    output: str | os.PathLike[str] | None,
    to_dict: Callable[[Any], dict[str, Any]],
) -> int:
    """Write one JSON line per record to `output` (a path) or stdout (None); return the count."""
    if output is None:
        return _write(records, sys.stdout.buffer, to_dict)
    with AtomicFile(output) as handle:
        return _write(records, handle, to_dict)


def _write(
    records: Iterable[Any], handle: IO[bytes], to_dict: Callable[[Any], dict[str, Any]]
) -> int:
    count = 0
    for record in records:
        handle.write(dumps(to_dict(record)).encode("utf-8") + b"\n")
        count += 1
    handle.flush()
    return count


def write_json(data: Any, path: str | os.PathLike[str]) -> None:
    """A JSON document (a report, say), written atomically."""
    with AtomicFile(path) as handle:
        handle.write(json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8") + b"\n")
