"""Turn a document's headings into sections: the part every markup slicer shares.

A markup module finds headings (and the ranges that must not be cut, such as fenced code, and
which lines are labels); this module makes one span per heading with its breadcrumb and anchor,
opens it at the labels just above its heading, merges heading-only sections into the next one,
and cuts oversized sections at blank lines outside protected ranges, a heading always with the
start of its body. No slice is then a label alone or a heading alone, unless the document is
nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
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
    is_label: Callable[[str], bool] | None = None,
) -> list[LineSpan]:
    """Spans tiling lines [start, end): a preamble, then one section per heading.

    `is_label` says which lines are labels of what follows them (reST `.. _name:`): those just
    above a heading open its section, never ending the one before nor standing alone."""
    if is_label is not None:
        headings = with_labels(lines, headings, is_label, start)
    spans: list[tuple[LineSpan, int | None]] = []  # each with the end of its heading lines
    first = headings[0].line if headings else end
    if first > start:
        spans.append((LineSpan(start, first, title=fallback_title), None))

    levels: list[int] = []  # the breadcrumb: levels and titles of the headings still open
    titles: list[str] = []
    pending: LineSpan | None = None  # a heading-only section waiting to merge into the next
    body_is_empty = False
    for i, heading in enumerate(headings):
        while levels and levels[-1] >= heading.level:
            levels.pop()
            titles.pop()
        # Capped before the part numbers and the breadcrumb are built from it; the anchor slugs
        # the heading's start only, so repeats of a long heading still get their -1, -2.
        title = cap_label(heading.text or fallback_title)
        levels.append(heading.level)
        titles.append(title)
        anchor = heading.anchor or slugger.slug(heading.text[: ANCHOR_MAX // 2]) or None
        stop = headings[i + 1].line if i + 1 < len(headings) else end
        span = LineSpan(heading.line, stop, title=title, section=tuple(titles), anchor=anchor)
        if pending is not None:
            span.start = pending.start
            pending = None
        # Labels below a heading label the next one, or nothing at the end: no body either.
        body_is_empty = _nothing_but_labels(lines, heading.end, stop, is_label)
        if body_is_empty and i + 1 < len(headings):
            pending = span
            continue
        spans.append((span, heading.end))
    if len(spans) > 1 and body_is_empty:
        # The last heading has nothing below it (a closing "## Next steps" cell, a placeholder):
        # it ends the section before, as a label at the end does, rather than read as nothing.
        (before, before_head), (last, _) = spans[-2], spans.pop()
        spans[-1] = (replace(before, end=last.end), before_head)

    pieces: list[LineSpan] = []
    for span, head_end in spans:
        pieces += split_span(lines, span, max_chars, protected, head_end)
    return pieces


def _nothing_but_labels(
    lines: Sequence[str], start: int, end: int, is_label: Callable[[str], bool] | None
) -> bool:
    """Whether lines [start, end) are all blank or labels (stops at the first that is not)."""
    for j in range(start, end):
        line = lines[j]
        if line.strip() and (is_label is None or not is_label(line)):
            return False
    return True


def with_labels(
    lines: Sequence[str], headings: Sequence[Heading], is_label: Callable[[str], bool], start: int
) -> list[Heading]:
    """`headings`, each starting at the first of the labels directly above it (blank lines
    between them allowed); the heading before keeps its own lines."""
    moved: list[Heading] = []
    floor = start
    for heading in headings:
        first = heading.line
        for j in range(heading.line - 1, floor - 1, -1):
            line = lines[j]
            if line.strip():  # not blank: a label moves the start up, anything else stops
                if not is_label(line):
                    break
                first = j
        moved.append(replace(heading, line=first) if first != heading.line else heading)
        floor = heading.end
    return moved


def split_span(
    lines: Sequence[str],
    span: LineSpan,
    max_chars: int,
    protected: Sequence[tuple[int, int]] = (),
    head_end: int | None = None,
) -> list[LineSpan]:
    """`span` in pieces of at most `max_chars`, cut at line ends outside `protected` ranges.

    Lines [span.start, head_end) are its heading (with its labels, and the headings without
    body merged into it): they are never a piece of their own, but open the piece that holds
    the first line of the body, even when the block it starts is over the budget and cut."""
    windows = pack_windows(lines, span.start, span.end, max_chars, protected)
    if len(windows) == 1 and windows[0] == (span.start, span.end, None):
        return [span]  # most sections fit the budget: their one window is the span itself
    # Most cut sections have their body's first line in the first piece.
    body = _first_body_line(lines, head_end, span.end) if len(windows) > 1 else None
    if body is not None and (windows[0].end <= body or windows[0].cols is not None):
        # A code block opening the body opens there: its first line is not blank.
        stop = max([body + 1, *(b for a, b in protected if a == body)])
        keep = (span.start, min(stop, span.end))
        windows = pack_windows(lines, span.start, span.end, max_chars, [*protected, keep])
    return window_spans(windows, span.title, section=span.section, anchor=span.anchor)


def _first_body_line(lines: Sequence[str], head_end: int | None, end: int) -> int | None:
    if head_end is None:
        return None
    return next((j for j in range(head_end, end) if not is_blank(lines[j])), None)
