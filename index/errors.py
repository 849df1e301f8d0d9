"""Errors of the index, in the project's one hierarchy."""

from __future__ import annotations

from flatten.errors import FlattenError, UsageError


class StoreError(FlattenError):
    """The index store is missing, busy, unreadable or of an unknown version."""


class ConfigError(FlattenError):
    """docs-flatten.yaml is wrong; the message names the entry (`citations[0].pattern`)."""

    exit_code = 2


class QueryError(UsageError):
    """A query's argument or setting is wrong. `reason` names which (`unknown-corpus`,
    `bad-tier`...) and `value` is the value at fault; the message names no CLI flag (the CLI
    maps reasons to its flags)."""

    def __init__(
        self, message: str, *, reason: str, value: object = None, hint: str | None = None
    ) -> None:
        super().__init__(message, reason=reason, hint=hint)
        self.value = value
