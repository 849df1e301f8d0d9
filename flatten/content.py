"""Read a file's bytes once, consistently, and decide what text they hold.

`read_snapshot` returns bytes that match one state of the file (a file that changes while it is
read is read again, then given up on with a reason). `decode` tells binary from text by content
(a NUL byte, or a high share of control characters) and never loses a text file to a stray byte:
invalid UTF-8 in an otherwise UTF-8 file is replaced and noted; a legacy 8-bit file is read as
cp1252 and noted.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/v1"
_PROBE = 8192
_READ_ATTEMPTS = 3


class Unreadable(Exception):
    """A file that cannot be turned into text; `reason` names why, for the run report."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def read_snapshot(path: str, max_size: int) -> bytes:
    for _ in range(_READ_ATTEMPTS):
        try:
            # O_NONBLOCK: a FIFO or device in the tree must not hang the run on open().
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        except FileNotFoundError as exc:
            raise Unreadable("missing", "listed but not on disk") from exc
        except IsADirectoryError as exc:
            raise Unreadable("not-a-file", "a directory (a submodule?)") from exc
        except PermissionError as exc:
            raise Unreadable("unreadable", "permission denied") from exc
        except OSError as exc:
            raise Unreadable("unreadable", exc.strerror or str(exc)) from exc
        try:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                raise Unreadable("not-a-file", "not a regular file")
            if before.st_size > max_size:
                raise Unreadable("too-large", f"{before.st_size} bytes > {max_size}")
            chunks = []
            total = 0
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total > max_size:
                    raise Unreadable("too-large", f"grew past {max_size} bytes while read")
            after = os.fstat(fd)
        except IsADirectoryError as exc:
            raise Unreadable("not-a-file", "a directory") from exc
        except OSError as exc:
            raise Unreadable("unreadable", exc.strerror or str(exc)) from exc
        finally:
            os.close(fd)
        data = b"".join(chunks)
        unchanged = (
            before.st_size == after.st_size == len(data) and before.st_mtime_ns == after.st_mtime_ns
        )
        if unchanged:
            return data
    raise Unreadable("changed-while-reading", f"changed during {_READ_ATTEMPTS} reads")


@dataclass(frozen=True)
class Decoded:
    text: str
    note: str | None = None  # set when the bytes were not clean UTF-8


def decode(data: bytes) -> Decoded:
    """Text from bytes, or `Unreadable` for binaries and LFS pointers."""
    head = data[:_PROBE]
    if head.startswith(LFS_POINTER_PREFIX):
        raise Unreadable("lfs-pointer", "Git LFS pointer; the content is not in the repository")
    if b"\x00" in head:
        raise Unreadable("binary", "NUL byte")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    note = None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text, note = _decode_impure(data)
    if looks_binary(text):
        raise Unreadable("binary", "mostly control characters")
    # One line-ending convention: line numbers stay true, CRs would only add noise.
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return Decoded(text, note)


def _decode_impure(data: bytes) -> tuple[str, str]:
    replaced = data.decode("utf-8", errors="replace")
    has_multibyte_utf8 = any(ord(c) > 0x7F and c != "\ufffd" for c in replaced)
    if has_multibyte_utf8:
        bad = replaced.count("\ufffd")
        return replaced, f"mixed-encoding: {bad} invalid UTF-8 sequence(s) replaced"
    return data.decode("cp1252", errors="replace"), "not-utf8: decoded as cp1252"


_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f]")  # not \t \n \v \f \r or ESC


def _control_share(text: str) -> float:
    if not text:
        return 0.0
    return len(_CONTROL.findall(text)) / len(text)


def looks_binary(text: str) -> bool:
    """Text that is mostly control characters: a binary decoded by mistake."""
    return _control_share(text[:_PROBE]) > 0.1


MINIFIED_MAX_SPACE_SHARE = 0.08  # prose is ~15% spaces; minified code and JSON far fewer


def looks_minified(text: str) -> bool:
    """Generated one-liners (bundles, minified JSON/CSS) that would only pollute an index.

    Long lines alone are not enough: a paragraph kept on one line (BEIR abstracts, wrapped-by-
    the-editor markdown) is prose. Minified text also has almost no spaces.
    """
    if len(text) < 4096:
        return False
    newlines = text.count("\n") + 1
    return (
        len(text) / newlines > 500
        and max(len(line) for line in text.split("\n")) > 4096
        and text.count(" ") / len(text) < MINIFIED_MAX_SPACE_SHARE
    )
