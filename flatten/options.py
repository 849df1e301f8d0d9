"""The flatten pipeline's options, apart from the pipeline: the CLI reads their defaults for
--help without importing the walker, the slicers and the redaction patterns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from flatten.config import MAX_CHARS, MIN_CHARS
from flatten.errors import UsageError
from slicers.base import DEFAULT_MAX_CHARS

if TYPE_CHECKING:
    from flatten.secrets import RedactionRules

KINDS = ("docs", "code", "auto")
DEFAULT_MAX_FILE_SIZE = 1 << 20  # 1 MiB


def _default_rules() -> RedactionRules:
    from flatten.secrets import DEFAULT_RULES

    return DEFAULT_RULES


@dataclass(frozen=True)
class FlattenOptions:
    kind: str = "docs"  # docs | code | auto
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    max_chars: int = DEFAULT_MAX_CHARS
    workers: int = 0  # 0: one per core on large trees
    outputs: tuple[str, ...] = ()  # files this run writes (-o, --report): never read as input
    # The config's additions to the built-in rules (loaded on first use: their patterns compile).
    redaction: RedactionRules = field(default_factory=_default_rules)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UsageError(
                f"--kind must be one of {', '.join(KINDS)}, not {self.kind!r}", reason="bad-kind"
            )
        if self.max_file_size <= 0:
            raise UsageError("--max-file-size must be positive", reason="bad-size")
        if not MIN_CHARS <= self.max_chars <= MAX_CHARS:
            raise UsageError(f"--max-chars must be from {MIN_CHARS:,} to {MAX_CHARS:,}",
                             reason="bad-size")  # fmt: skip
