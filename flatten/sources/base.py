"""What every source yields: files to read, or entries skipped with a reason."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    """A file to read.

    `rel_path` (POSIX, relative to the source root, names escaped by `escape_name`) becomes
    `source`. The bytes are read from `inner` below `root` (the root's real path): a path with
    no symbolic link in it, opened with `flatten.content.open_beneath`. For a symlink to a file
    inside the root, `inner` is the link's target.
    """

    rel_path: str
    root: str
    inner: str

    @property
    def abs_path(self) -> str:
        return os.path.join(self.root, self.inner)


@dataclass(frozen=True)
class Skip:
    """A path left out. A directory ends with '/', and `files` counts what it held when known."""

    path: str
    reason: str
    detail: str = ""
    files: int = 1
    directory: bool = False


def escape_name(path: str) -> str:
    """A path as `source` shows it: valid UTF-8 kept, every other byte as `\\xNN`, `\\` as `\\\\`.

    File names are bytes; Python holds the undecodable ones as lone surrogates
    (surrogateescape), which no UTF-8 writer accepts. Doubling the backslash keeps the escape
    lossless: `bad\\xff.md` (a literal backslash) and `bad<0xff>.md` stay distinct.
    """
    if "\\" not in path and path.isascii():
        return path  # the common case, unchanged
    raw = path.encode("utf-8", "surrogateescape").replace(b"\\", b"\\\\")
    return raw.decode("utf-8", "backslashreplace")
