"""Line windows at blank-line boundaries: the fallback slicer, and how oversized sections split.

A window never cuts a "protected" range (a fenced code block, say) unless that range alone is
over the budget; a single block over the budget is cut between lines; a single line is never cut,
so no content is lost and line ranges stay true.
"""

from __future__ import annotations

from collections.abc import Sequence

from slicers.base import LineSpan, Sliced, SliceOptions, is_blank, spans_to_slices, split_lines


def _blocks(
    lines: Sequence[str], start: int, end: int, protected: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Half-open runs of lines in [start, end) separated by blank lines outside protected ranges."""
    guard = {}
    for p_start, p_end in protected:
        if p_end > start and p_start < end:
            guard[max(p_start, start)] = min(p_end, end)
    blocks: list[tuple[int, int]] = []
    i = start
    block_start: int | None = None
    while i < end:
        if i in guard:
            if block_start is None:
                block_start = i
            i = guard[i]
            continue
        if is_blank(lines[i]):
            if block_start is not None:
                blocks.append((block_start, i))
                block_start = None
        elif block_start is None:
            block_start = i
        i += 1
    if block_start is not None:
        blocks.append((block_start, end))
    return blocks


def _size(lines: Sequence[str], start: int, end: int) -> int:
    return sum(len(lines[i]) + 1 for i in range(start, end))


def pack_windows(
    lines: Sequence[str],
    start: int,
    end: int,
    max_chars: int,
    protected: Sequence[tuple[int, int]] = (),
) -> list[tuple[int, int]]:
    """Cut [start, end) into consecutive half-open windows of at most `max_chars` where possible.

    The windows tile the range exactly (blank lines between blocks go to the window before), so
    every line belongs to exactly one window.
    """
    if _size(lines, start, end) <= max_chars:
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    for b_start, b_end in _blocks(lines, start, end, protected):
        if _size(lines, b_start, b_end) <= max_chars:
            pieces.append((b_start, b_end))
            continue
        # One block over budget: cut it between lines.
        cut = b_start
        used = 0
        for i in range(b_start, b_end):
            width = len(lines[i]) + 1
            if used and used + width > max_chars:
                pieces.append((cut, i))
                cut, used = i, 0
            used += width
        pieces.append((cut, b_end))

    windows: list[tuple[int, int]] = []
    w_start = start
    used = 0
    for p_start, p_end in pieces:
        width = _size(lines, p_start, p_end)
        if used and used + width > max_chars:
            windows.append((w_start, p_start))
            w_start, used = p_start, 0
        used += width
    windows.append((w_start, end))
    return windows


def part_titles(title: str, count: int) -> list[str]:
    """`title` for a single piece, `title (part k/n)` when a unit was cut into several."""
    if count == 1:
        return [title]
    return [f"{title} (part {k}/{count})" for k in range(1, count + 1)]


def slice_windows(text: str, path: str, options: SliceOptions) -> Sliced:
    """Any text: windows at blank-line boundaries, titled with the path."""
    lines = split_lines(text)
    windows = pack_windows(lines, 0, len(lines), options.max_chars)
    titles = part_titles(path, len(windows))
    spans = [LineSpan(s, e, title=t) for (s, e), t in zip(windows, titles, strict=True)]
    return Sliced(slices=spans_to_slices(lines, spans))
