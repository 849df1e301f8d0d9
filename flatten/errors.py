"""One error hierarchy; the CLI maps it to messages and exit codes in one place.

FlattenError            a run failed (exit 1): says what was wrong and what to do
├── UsageError          the command line or config is wrong (exit 2)
├── SourceError         a root, repository or ref cannot be read
├── NothingToFlatten    the source holds nothing the chosen --kind takes
└── OutputError         the output or report file cannot be written
"""

from __future__ import annotations


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
