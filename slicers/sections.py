"""Turn a document's headings into sections: the part every markup slicer shares.

A markup module finds headings (and the ranges that must not be cut, such as fenced code); this
module makes one span per heading with its breadcrumb and anchor, merges heading-only sections
into the next one, and cuts oversized sections at blank lines outside protected ranges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from slicers.base import ANCHOR_MAX, LineSpan, cap_label, is_blank
from slicers.windows import pack_windows, window_spans


@dataclass(frozen=True)
class Heading:
    line: int  # 0-based index of the heading's first line (an overline or the title line)
    end: int  # 0-based index just past the heading's last line (a setext underline, say)
    level: int
    text: str
    anchor: str | None = None  # an explicit id from the markup ({#id}, [[id]]); else slugged


class Slugger(Protocol):
    def slug(self, text: str) -> str: ...


def section_spans(
    lines: Sequence[str],
    headings: Sequence[Heading],
    *,
    start: int,
    end: int,
    fallback_title: str,
    slugger: Slugger,
    max_chars: int,
    protected: Sequence[tuple[int, int]] = (),
) -> list[LineSpan]:
    """Spans tiling lines [start, end): a preamble, then one section per heading."""
    spans: list[LineSpan] = []
    first = headings[0].line if headings else end
    if first > start:
        spans.append(LineSpan(start, first, title=fallback_title))

    stack: list[tuple[int, str]] = []
    pending: LineSpan | None = None  # a heading-only section waiting to merge into the next
    for i, heading in enumerate(headings):
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        # Capped before the part numbers and the breadcrumb are built from it; the anchor slugs
        # the heading's start only, so repeats of a long heading still get their -1, -2.
        title = cap_label(heading.text or fallback_title)
        stack.append((heading.level, title))
        anchor = heading.anchor or slugger.slug(heading.text[: ANCHOR_MAX // 2]) or None
        stop = headings[i + 1].line if i + 1 < len(headings) else end
        span = LineSpan(
            heading.line, stop, title=title, section=tuple(t for _, t in stack), anchor=anchor
        )
        if pending is not None:
            span.start = pending.start
            pending = None
        body_is_empty = all(is_blank(lines[j]) for j in range(heading.end, stop))
        if body_is_empty and i + 1 < len(headings):
            pending = span
            continue
        spans.append(span)

    return [piece for span in spans for piece in split_span(lines, span, max_chars, protected)]


def split_span(
    lines: Sequence[str], span: LineSpan, max_chars: int, protected: Sequence[tuple[int, int]] = ()
) -> list[LineSpan]:
    """`span` in pieces of at most `max_chars`, cut at line ends outside `protected` ranges."""
    windows = pack_windows(lines, span.start, span.end, max_chars, protected)
    return window_spans(windows, span.title, section=span.section, anchor=span.anchor)
