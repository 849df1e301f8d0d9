"""One error hierarchy; the CLI maps it to messages and exit codes in one place.

FlattenError            a run failed (exit 1): says what was wrong and what to do
├── UsageError          the command line or config is wrong (exit 2)
├── SourceError         a root, repository or ref cannot be read
├── NothingToFlatten    the source holds nothing the chosen --kind takes
└── OutputError         the output or report file cannot be written
"""

from __future__ import annotations

import errno


class FlattenError(Exception):
    exit_code = 1

    def __init__(self, message: str, *, reason: str = "error", hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason  # a stable, machine-readable name for the failure
        self.hint = hint  # what the user can do about it

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\nhint: {self.hint}"


class UsageError(FlattenError):
    exit_code = 2


class SourceError(FlattenError):
    pass


class NothingToFlatten(FlattenError):
    pass


class OutputError(FlattenError):
    pass


# Out of space, out of quota, or past a file size limit (RLIMIT_FSIZE): all "no room to write".
_NO_ROOM = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def write_failed(name: str, error: OSError) -> OutputError:
    """The named error for a write that the system refused (the writer's output, a spool)."""
    if error.errno in _NO_ROOM:
        return OutputError(
            f"cannot write {name}: {error.strerror}",
            reason="disk-full",
            hint="free some space or write somewhere else, then run again",
        )
    return OutputError(f"cannot write {name}: {error.strerror}", reason="output-write-failed")
