"""`--shard i/n`: which of a run's sources one job of an n-job CI matrix takes.

Each source goes to the shard that scores highest for it under rendezvous (highest-random-weight)
hashing: the score of shard j for a source is sha256 of j and the source's key. A source's shard
depends on its own key and n alone, so adding or removing a source moves no other source, and
going from n to n+1 shards moves only the sources the new shard wins (about 1/(n+1) of them);
with `key mod n`, nearly every source would move and every cached shard go stale.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from flatten.errors import UsageError

T = TypeVar("T")

_SHARD = re.compile(r"^\s*(\d{1,6})\s*/\s*(\d{1,6})\s*$")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as CI matrices count (1/4 .. 4/4)
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """`i/n` with 1 <= i <= n, or a `UsageError` (reason `bad-shard`) saying what is wrong."""
    match = _SHARD.match(text)
    if match is None:
        raise UsageError(f"--shard takes i/n (e.g. 1/4), not {text!r}", reason="bad-shard",
                         hint="number the matrix jobs 1/n .. n/n")  # fmt: skip
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise UsageError(
            f"--shard {index}/{count}: the shard must be from 1 to the count "
            f"(1/{max(count, 1)} .. {max(count, 1)}/{max(count, 1)})",
            reason="bad-shard",
        )
    return Shard(index, count)


def shard_of(key: str, count: int) -> int:
    """The 1-based shard that takes the source named `key` among `count` shards."""
    data = key.encode("utf-8")
    return max(range(1, count + 1),
               key=lambda j: hashlib.sha256(b"%d\0%s" % (j, data)).digest())  # fmt: skip


def pick(items: Sequence[T], key: Callable[[T], str], shard: Shard) -> list[T]:
    """The items of `shard`, in their given order."""
    return [item for item in items if shard_of(key(item), shard.count) == shard.index]
