"""What every source yields: files to read, or entries skipped with a reason."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    """A file to read: `rel_path` (POSIX, relative to the source root) becomes `source`."""

    rel_path: str
    abs_path: str


@dataclass(frozen=True)
class Skip:
    """A path left out. A directory ends with '/', and `files` counts what it held when known."""

    path: str
    reason: str
    detail: str = ""
    files: int = 1
    directory: bool = False
