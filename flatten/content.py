"""Read a file's bytes once, consistently, and decide what text they hold.

`open_beneath` is the one way a source file is opened: component by component below the root,
never through a symbolic link (`read_snapshot` and the .gitignore reader use it).
`read_snapshot` returns bytes that match one state of the file (a file that changes while it is
read is read again, then given up on with a reason). `decode` tells binary from text by content
(a NUL byte, or a high share of control characters) and never loses a text file to a stray byte:
invalid UTF-8 in an otherwise UTF-8 file is replaced and noted; a legacy 8-bit file is read as
cp1252 and noted. Line endings become `\\n` (CRLF and lone CR alike).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass

LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/v1"
_PROBE = 8192
_READ_ATTEMPTS = 3
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class Unreadable(Exception):
    """A file that cannot be turned into text; `reason` names why, for the run report."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def open_beneath(root: str, inner: str) -> int:
    """A read-only descriptor for `root/inner`, opened without following any symbolic link.

    Each directory of `inner` is opened relative to the one before with O_NOFOLLOW, and so is
    the file: a directory or file swapped for a link after the listing (a race, or a work tree
    whose tracked directory became a link to /etc) is refused, never read. So the file opened
    is always inside `root`. `inner` is a POSIX path below `root` with no `.`/`..` parts.
    """
    parts = inner.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise Unreadable("outside-root", "not a plain path below the root")
    try:
        dir_fd = os.open(root, os.O_RDONLY | _DIRECTORY)
    except OSError as exc:
        raise Unreadable("unreadable", f"root: {exc.strerror or exc}") from exc
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                next_fd = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=dir_fd)
            except OSError as exc:
                linked = _is_link(part, dir_fd)
                raise _refused(exc, "/".join(parts[: i + 1]), linked=linked) from exc
            os.close(dir_fd)
            dir_fd = next_fd
        # O_NONBLOCK: a FIFO or device in the tree must not hang the run on open().
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | _NOFOLLOW
        try:
            return os.open(parts[-1], flags, dir_fd=dir_fd)
        except OSError as exc:
            raise _refused(exc, inner, linked=None) from exc
    finally:
        os.close(dir_fd)


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def _refused(exc: OSError, where: str, *, linked: bool | None) -> Unreadable:
    """The reason an open below the root failed; `linked` is None for the file itself."""
    if linked:
        return Unreadable("symlink-parent", f"{where}/ is a symbolic link; not followed")
    if linked is None and exc.errno == errno.ELOOP:
        return Unreadable("symlink", "a symbolic link at read time; not followed")
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return Unreadable("missing", "listed but not on disk")
    if exc.errno == errno.ENOENT:
        return Unreadable("missing", "listed but not on disk")
    if exc.errno == errno.EISDIR:
        return Unreadable("not-a-file", "a directory (a submodule?)")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return Unreadable("unreadable", "permission denied")
    return Unreadable("unreadable", exc.strerror or str(exc))


def read_snapshot(root: str, inner: str, max_size: int) -> bytes:
    """The bytes of `root/inner` (opened by `open_beneath`), at most `max_size` of them."""
    for _ in range(_READ_ATTEMPTS):
        fd = open_beneath(root, inner)
        try:
            # What was opened must be a regular file: checked on the descriptor, not the path.
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
    # One line-ending convention, as editors count lines: CRLF (Windows) and a lone CR (classic
    # Mac OS) both end a line. Leaving a lone CR would make a whole old-Mac file one line.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return Decoded(text, note)


def _decode_impure(data: bytes) -> tuple[str, str]:
    replaced = data.decode("utf-8", errors="replace")
    has_multibyte_utf8 = any(ord(c) > 0x7F and c != "\ufffd" for c in replaced)
    if has_multibyte_utf8:
        bad = replaced.count("\ufffd")
        return replaced, f"mixed-encoding: {bad} invalid UTF-8 sequence(s) replaced"
    return data.decode("cp1252", errors="replace"), "not-utf8: decoded as cp1252"


_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f]")  # not \t \n \v \f \r or ESC
_CONTROL_BYTES = bytes(b for b in range(32) if _CONTROL.match(chr(b)))


def _control_share(text: str) -> float:
    if not text:
        return 0.0
    if text.isascii():  # most text: its bytes are its characters, deleted in one C pass
        ascii_bytes = text.encode("ascii")
        return (len(ascii_bytes) - len(ascii_bytes.translate(None, _CONTROL_BYTES))) / len(text)
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
