"""Errors of the index, in the project's one hierarchy."""

from __future__ import annotations

from flatten.errors import FlattenError


class StoreError(FlattenError):
    """The index store is missing, busy, unreadable or of an unknown version."""


class ConfigError(FlattenError):
    """docs-flatten.yaml is wrong; the message names the entry (`citations[0].pattern`)."""

    exit_code = 2
