"""The slicer contract: text (and its path) in, an ordered list of slices out.

Every slicer is a pure function with the `Slicer` signature. Slices carry true 1-based, inclusive
line ranges into the text they were given, and between them they cover every non-blank line of it
exactly once, in order. A slicer never raises on bad input; it falls back to line windows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# The default size budget for one slice, in characters. About 1,000 tokens: large enough to keep
# a typical docs section whole, small enough for an embedding model's context.
DEFAULT_MAX_CHARS = 4000


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


Slicer = Callable[[str, str, SliceOptions], Sliced]


def split_lines(text: str) -> list[str]:
    """Lines as editors and git count them: split on '\\n' only, no trailing empty line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def is_blank(line: str) -> bool:
    return not line.strip()


@dataclass
class LineSpan:
    """A half-open range [start, end) of 0-based line indexes with the metadata of its slice."""

    start: int
    end: int
    title: str = ""
    section: tuple[str, ...] = ()
    anchor: str | None = None
    symbol: str | None = None
    meta: tuple[tuple[str, str], ...] = ()


def make_slice(lines: list[str], span: LineSpan) -> Slice | None:
    """Cut a span out of `lines`, trimming blank lines at both ends; None if it is all blank."""
    start, end = span.start, span.end
    while start < end and is_blank(lines[start]):
        start += 1
    while end > start and is_blank(lines[end - 1]):
        end -= 1
    if start >= end:
        return None
    return Slice(
        content="\n".join(lines[start:end]),
        start_line=start + 1,
        end_line=end,
        title=span.title,
        section=span.section,
        anchor=span.anchor,
        symbol=span.symbol,
        meta=span.meta,
    )


def spans_to_slices(lines: list[str], spans: list[LineSpan]) -> list[Slice]:
    slices = []
    for span in spans:
        piece = make_slice(lines, span)
        if piece is not None:
            slices.append(piece)
    return slices
