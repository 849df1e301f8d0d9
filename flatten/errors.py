"""One error hierarchy; the CLI maps it to messages and exit codes in one place.

FlattenError            a run failed (exit 1): says what was wrong and what to do
├── UsageError          the command line or config is wrong (exit 2)
├── SourceError         a root, repository or ref cannot be read
├── NothingToFlatten    the source holds nothing the chosen --kind takes
└── OutputError         the output or report file cannot be written

Interrupted (a KeyboardInterrupt) is SIGTERM's stop: Ctrl-C's clean-up, its own exit code.
"""

from __future__ import annotations

import errno
import signal


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


class Interrupted(KeyboardInterrupt):
    """A stop asked by a signal (SIGTERM): raised as a KeyboardInterrupt, so that every clean-up
    written for Ctrl-C runs, and carrying the signal for the exit code."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def interrupted_exit_code(stop: KeyboardInterrupt) -> int:
    """128 + the stopping signal's number, as a shell reports a process a signal ended: 130 for
    Ctrl-C (SIGINT), 143 for SIGTERM (a CI runner's or a container's stop)."""
    return 128 + getattr(stop, "signum", signal.SIGINT)
