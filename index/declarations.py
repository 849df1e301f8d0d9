"""Code declarations as a reader sees them: what a slice declares, and a declaration the slicer
cut into several slices, treated as one.

A slice's symbol is a dotted path (`Factory.find_candidates`, `delimiter_split.append_to_line`);
its last part is the name the slice declares, the rest only says where it sits. A question that
names a function wants the slice that declares it, not a helper nested inside it, although both
carry the enclosing name in their title and symbol (`own_name`, `spelled`).

A declaration too long for one slice is cut into runs of statements that share its symbol
(`transform_line (part 1/2)`, `(part 2/2)`), and when it holds nested functions its signature and
docstring go with its first nested member into the first slice, which carries the declaration's
own symbol (`do_transform`, titled after the member it holds), then the runs follow; a slice of
a nested member alone carries the member's symbol and just precedes them. To a
reader these are one declaration (`Declaration`): it ranks by its best slice, is shown at the
earliest of its slices that matched (its signature and docstring when they did, read from the
top down), is cited from its signature to its end, and takes one place in the results, its other
slices counted as other matches (`collapse`).
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from index.text import STOPWORDS, split_name


def own_name(symbol: str) -> str:
    """The name a slice declares: its symbol's last part (`Factory.find_candidates` ->
    `find_candidates`)."""
    return symbol.rsplit(".", 1)[-1]


def words_of(text: str) -> tuple[str, ...]:
    """The words of a name, lowercased, split at underscores and camelCase, stopwords left out
    (`get_retry_request` -> get retry request; `StringSplitter` -> string splitter)."""
    return tuple(w for w in split_name(text) if w not in STOPWORDS)


def name_words(symbol: str) -> tuple[str, ...]:
    """The words of the name a slice declares (`a.__init__` -> init)."""
    return words_of(own_name(symbol))


def spelled(name: tuple[str, ...], asked: dict[tuple[str, ...], set[int]]) -> set[int]:
    """Which query words spell `name` (its words, stemmed), given what each asked word spells
    (its words, stemmed: one for a plain word, several for an identifier): an identifier
    spelling the whole name, else plain words spelling each of its words; empty when the name
    is not spelled. An identifier's pieces never spell another name on their own
    (`_iter_found_candidates` does not name `iterator`)."""
    if not name:
        return set()
    if name in asked:
        return asked[name]
    if all((word,) in asked for word in name):
        return set().union(*(asked[(word,)] for word in name))
    return set()


@dataclass(frozen=True)
class Declaration:
    """A declaration cut into several slices of one document: `members` (chunk ids, in order),
    the first holding its signature; cited as lines `start_line`-`end_line`."""

    symbol: str
    members: tuple[int, ...]
    start_line: int | None
    end_line: int | None


@dataclass(frozen=True)
class _Row:
    ordinal: int
    chunk_id: int
    symbol: str
    start_line: int | None
    end_line: int | None


def declarations(db: sqlite3.Connection, document_ids: Iterable[int]) -> dict[int, Declaration]:
    """The split declarations of these documents, by the chunk id of each of their slices."""
    wanted = sorted(set(document_ids))
    if not wanted:
        return {}
    rows = db.execute(
        "SELECT document_id, ordinal, id, symbol, start_line, end_line FROM chunks "
        "WHERE document_id IN (SELECT value FROM json_each(?)) AND symbol IS NOT NULL "
        "ORDER BY document_id, ordinal",
        (json.dumps(wanted),),
    ).fetchall()
    out: dict[int, Declaration] = {}
    for _, group in itertools.groupby(rows, key=lambda row: row[0]):
        for found in split_declarations([_Row(*row[1:]) for row in group]):
            out.update((chunk_id, found) for chunk_id in found.members)
    return out


def split_declarations(rows: list[_Row]) -> list[Declaration]:
    """The declarations cut into several of these slices (one document's slices that declare
    something, in order): each run of neighbouring slices with one symbol, with the slices of
    its nested members just before it (they hold its signature) when there are any; a run of
    one slice is a declaration only with those.

    A class is never one: its own slice (the class line, docstring) comes before its methods',
    so its methods' slices stay results of their own."""

    def next_to(a: int, b: int) -> bool:  # rows a and b are neighbouring slices
        return rows[b].ordinal - rows[a].ordinal == 1

    out = []
    i = 0
    while i < len(rows):
        symbol = rows[i].symbol
        j = i + 1
        while j < len(rows) and rows[j].symbol == symbol and next_to(j - 1, j):
            j += 1
        head = i
        while (
            head > 0 and next_to(head - 1, head) and rows[head - 1].symbol.startswith(symbol + ".")
        ):
            head -= 1
        if j - head > 1:
            members = rows[head:j]
            out.append(
                Declaration(
                    symbol,
                    tuple(r.chunk_id for r in members),
                    members[0].start_line,
                    members[-1].end_line,
                )
            )
        i = j
    return out


T = TypeVar("T")


def collapse(
    ranked: list[T], chunk_of: Callable[[T], int], found: dict[int, Declaration],
    shown_as: Callable[[T, int], T],
) -> list[T]:  # fmt: skip
    """`ranked` (best first) with each split declaration in one place, its best slice's, shown
    as the earliest of its slices in `ranked` (`shown_as(item, chunk_id)`), its other slices
    left out."""
    matched: dict[Declaration, list[int]] = {}
    for item in ranked:
        declaration = found.get(chunk_of(item))
        if declaration is not None:
            matched.setdefault(declaration, []).append(chunk_of(item))
    out = []
    placed: set[Declaration] = set()
    for item in ranked:
        declaration = found.get(chunk_of(item))
        if declaration is None:
            out.append(item)
        elif declaration not in placed:
            placed.add(declaration)
            earliest = min(matched[declaration], key=declaration.members.index)
            out.append(item if earliest == chunk_of(item) else shown_as(item, earliest))
    return out
