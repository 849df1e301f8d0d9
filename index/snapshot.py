"""How many documents a snapshot may remove before the load stops (rclone's --max-delete).

A load is a complete snapshot of its corpus: documents it does not mention are removed. Pointed
at the wrong corpus (another source's JSONL, a half-built tree), that silently deletes most of
it. By default a snapshot may remove at most half of a corpus's documents, or 10, whichever is
more; `--max-delete N` or `--max-delete PCT%` sets the limit instead. Past it, nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from flatten.config import removal_limit
from flatten.errors import FlattenError

DEFAULT_FLOOR = 10  # removing this many is always allowed
DEFAULT_SHARE = 50.0  # percent of the corpus's documents


class TooManyRemovals(FlattenError):
    """The snapshot would remove more documents than the limit allows; nothing was written."""

    def __init__(self, message: str, *, removing: int) -> None:
        super().__init__(message, reason="too-many-removals")
        self.removing = removing


@dataclass(frozen=True)
class RemovalLimit:
    count: int | None = None  # at most this many documents
    percent: float | None = None  # at most this share of the corpus's documents
    text: str = ""  # as given, for messages; "" for the default

    def allows(self, removing: int, documents: int) -> bool:
        if self.count is not None:
            return removing <= self.count
        if self.percent is not None:
            return removing * 100 <= self.percent * documents
        return removing <= max(DEFAULT_FLOOR, documents * DEFAULT_SHARE / 100)

    def check(self, removing: int, documents: int, corpus: str) -> None:
        """`TooManyRemovals` when removing `removing` of `documents` is past the limit."""
        if self.allows(removing, documents):
            return
        limit = f"--max-delete {self.text}" if self.text else (
            f"the default limit (at most half of the corpus, or {DEFAULT_FLOOR} documents when "
            "that is more)"
        )  # fmt: skip
        raise TooManyRemovals(
            f"this snapshot would remove {removing:,} of the {documents:,} documents of corpus "
            f"{corpus!r}, past {limit}: nothing was written (is it the right corpus?)",
            removing=removing,
        )


DEFAULT_LIMIT = RemovalLimit()


def parse_limit(text: str | int | None) -> RemovalLimit:
    """`25` (documents) or `25%` (of the corpus); None: the default limit."""
    if text is None:
        return DEFAULT_LIMIT
    number, percent = removal_limit(text)
    if percent:
        return RemovalLimit(percent=float(number), text=f"{number}%")
    return RemovalLimit(count=int(number), text=number)
