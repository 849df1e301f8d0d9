"""The slicer contract: text (and its path) in, an ordered list of slices out.

Every slicer is a pure function with the `Slicer` signature. Slices carry true 1-based, inclusive
line ranges into the text they were given, and between them they cover every non-blank line of it
exactly once, in order. A slicer never raises on bad input; it falls back to line windows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# The default size budget for one slice, in characters. About 1,000 tokens: large enough to keep
# a typical docs section whole, small enough for an embedding model's context.
DEFAULT_MAX_CHARS = 4000
# Titles (and breadcrumb entries, symbols, document titles) and anchors are labels, not content:
# a 100,000-character heading keeps its text in `content` but not in every label.
TITLE_MAX = 200
ANCHOR_MAX = 200


@dataclass(frozen=True)
class Slice:
    """One structural piece of a document."""

    content: str
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    title: str = ""
    section: tuple[str, ...] = ()
    anchor: str | None = None
    symbol: str | None = None
    # Format-specific record fields, e.g. (("apiVersion", "apps/v1"), ("namespace", "shop")).
    meta: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Sliced:
    """What a slicer returns for one document."""

    slices: list[Slice]
    doc_title: str | None = None
    # Notes for the run report, e.g. that a parser failed and windows were used instead.
    notes: tuple[str, ...] = ()
    syntax_error: bool = False  # the file did not parse cleanly (it was still sliced)


@dataclass(frozen=True)
class SliceOptions:
    # Markup and text: characters. Code: non-whitespace characters (as cAST counts them).
    max_chars: int = DEFAULT_MAX_CHARS
    lang: str | None = None  # the language of a code file (our extension map's names)
    # Heading ids the text itself does not carry: (0-based line, id) pairs. A crawled page's
    # markdown reads as the page reads; its headings' real ids come from the HTML this way.
    heading_ids: tuple[tuple[int, str], ...] = ()
    # The document's title when its caller knows one the text lacks (a crawled page's <title>):
    # text before the first heading is named by it, never by the path (a URL).
    title: str | None = None


Slicer = Callable[[str, str, SliceOptions], Sliced]


def split_lines(text: str) -> list[str]:
    """Lines as editors and git count them: split on '\\n' only, no trailing empty line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def is_blank(line: str) -> bool:
    return not line.strip()


def cap_label(text: str, limit: int = TITLE_MAX) -> str:
    """`text` cut to `limit` characters, ending in `…` when cut (deterministic)."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_PART_SUFFIX = re.compile(r"(?: \(part \d+/\d+\))+$")


def cap_title(title: str) -> str:
    """A title cut to TITLE_MAX characters, keeping its `(part k/n)` suffix."""
    if len(title) <= TITLE_MAX:
        return title
    match = _PART_SUFFIX.search(title)
    suffix = match.group(0) if match else ""
    return cap_label(title[: len(title) - len(suffix)], TITLE_MAX - len(suffix)) + suffix


@dataclass
class LineSpan:
    """A half-open range [start, end) of 0-based line indexes with the metadata of its slice.

    `cols`, when set, narrows the span to characters [a, b) of line `start` (a piece of a line
    over the size budget); `end` is then `start + 1`.
    """

    start: int
    end: int
    title: str = ""
    section: tuple[str, ...] = ()
    anchor: str | None = None
    symbol: str | None = None
    meta: tuple[tuple[str, str], ...] = ()
    cols: tuple[int, int] | None = None


def make_slice(lines: list[str], span: LineSpan) -> Slice | None:
    """Cut a span out of `lines`, trimming blank lines at both ends; None if it is all blank.

    Labels are capped here, the one place every slicer's slices pass through.
    """
    start, end = span.start, span.end
    if span.cols is not None:
        content = lines[start][span.cols[0] : span.cols[1]]
        end = start + 1
        if is_blank(content):
            return None
    else:
        while start < end and not lines[start].strip():
            start += 1
        while end > start and not lines[end - 1].strip():
            end -= 1
        if start >= end:
            return None
        # Its first line is not blank, so neither is the content.
        content = "\n".join(lines[start:end])
    section = tuple(span.section)  # the same tuple, when it is one
    if section and max(map(len, section)) > TITLE_MAX:  # most entries come capped already
        section = tuple(cap_label(entry) for entry in section)
    return Slice(
        content=content,
        start_line=start + 1,
        end_line=end,
        title=cap_title(span.title),
        section=section,
        anchor=span.anchor[:ANCHOR_MAX] if span.anchor else span.anchor,
        symbol=cap_label(span.symbol) if span.symbol else span.symbol,
        meta=span.meta,
    )


def spans_to_slices(lines: list[str], spans: list[LineSpan]) -> list[Slice]:
    slices = []
    for span in spans:
        piece = make_slice(lines, span)
        if piece is not None:
            slices.append(piece)
    return slices
