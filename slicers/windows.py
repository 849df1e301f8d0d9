"""Line windows at blank-line boundaries: the fallback slicer, and how oversized sections split.

A window never cuts a "protected" range (a fenced code block, say) unless that range alone is
over the budget; a single block over the budget is cut between lines; a single line over the
budget is cut inside (at whitespace, else hard) into windows that share its line number. So no
content is lost, line ranges stay true, and no window is over the budget.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate, compress
from typing import NamedTuple

from slicers.base import LineSpan, Sliced, SliceOptions, spans_to_slices, split_lines


class Window(NamedTuple):
    """Lines [start, end); or, when `cols` is set, the characters [a, b) of line `start` only."""

    start: int
    end: int
    cols: tuple[int, int] | None = None


def cut_line(line: str, max_chars: int) -> list[tuple[int, int]]:
    """Character ranges tiling `line`, each at most `max_chars` long.

    A cut goes after the last space or tab in the second half of the budget, so words stay
    whole where they can; with no whitespace there (a base64 blob, say) the cut is hard.
    """
    cuts: list[tuple[int, int]] = []
    start = 0
    while len(line) - start > max_chars:
        limit = start + max_chars
        floor = start + max_chars // 2
        at = max(line.rfind(" ", floor, limit), line.rfind("\t", floor, limit))
        stop = at + 1 if at >= 0 else limit
        cuts.append((start, stop))
        start = stop
    cuts.append((start, len(line)))
    return cuts


_SOLID_RUN = re.compile(rb"\x01+")


def _blocks(
    lines: Sequence[str], start: int, end: int, protected: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Half-open runs of lines in [start, end) separated by blank lines outside protected ranges.

    One flag byte per line (1: non-blank or protected) and a regex over the flags find the runs
    at C speed: a loop over lines in Python was the slicers' largest cost on plain-text trees.
    """
    solid = bytearray(map(bool, map(str.strip, lines[start:end])))
    guard: dict[int, int] = {}
    for p_start, p_end in protected:
        if p_end > start and p_start < end and p_start < p_end:
            guard[max(p_start, start)] = min(p_end, end)
    reach = start  # a protected range starting inside an earlier one is not one of its own
    for g_start in sorted(guard):
        if g_start >= reach:
            reach = guard[g_start]
            solid[g_start - start : reach - start] = b"\x01" * (reach - g_start)
    return [(start + m.start(), start + m.end()) for m in _SOLID_RUN.finditer(solid)]


class _Sizes:
    """Sizes of runs of lines in one range, each line with its newline: in constant time from
    running totals, and the longest run that fits a budget by bisecting them."""

    def __init__(self, lines: Sequence[str], start: int, end: int) -> None:
        self.start = start
        self.totals = list(accumulate(map((1).__add__, map(len, lines[start:end])), initial=0))

    def __call__(self, a: int, b: int) -> int:
        """Characters in lines [a, b)."""
        return self.totals[b - self.start] - self.totals[a - self.start] if b > a else 0

    def fill(self, a: int, b: int, budget: int) -> int:
        """The end of the longest run of lines from `a` (and before `b`) within `budget`; at
        least one line."""
        first = a - self.start
        fits = bisect_right(self.totals, self.totals[first] + budget, first + 1, b - self.start + 1)
        return max(fits - 1 + self.start, a + 1)


def within_budget(lines: Sequence[str], start: int, end: int, max_chars: int) -> bool:
    """Whether lines [start, end), each with its newline, are within `max_chars`.

    Most ranges are: summed at C speed, without the running totals only a cut needs."""
    return (sum(map(len, lines[start:end])) + end - start if end > start else 0) <= max_chars


def pack_windows(
    lines: Sequence[str],
    start: int,
    end: int,
    max_chars: int,
    protected: Sequence[tuple[int, int]] = (),
) -> list[Window]:
    """Cut [start, end) into consecutive windows of at most `max_chars` characters.

    Every non-blank line belongs to exactly one line window, or is cut into character windows
    when it alone is over the budget. Blank lines between blocks go to the window before.
    """
    if within_budget(lines, start, end, max_chars):
        return [Window(start, end)]
    size = _Sizes(lines, start, end)
    pieces: list[Window] = []
    for b_start, b_end in _blocks(lines, start, end, protected):
        if size(b_start, b_end) <= max_chars:
            pieces.append(Window(b_start, b_end))
            continue
        # One block over budget: cut it between lines, and inside any line over budget.
        long_lines = compress(
            range(b_start, b_end), map(max_chars.__lt__, map(len, lines[b_start:b_end]))
        )
        cut = b_start
        for stop in (*long_lines, b_end):
            while cut < stop:
                fits = size.fill(cut, stop, max_chars)
                pieces.append(Window(cut, fits))
                cut = fits
            if stop < b_end:
                pieces.extend(
                    Window(stop, stop + 1, cols) for cols in cut_line(lines[stop], max_chars)
                )
                cut = stop + 1

    windows: list[Window] = []
    w_start = start
    used = 0
    gap_start = start  # blank lines before a piece count too: a whitespace-only line can be huge
    for piece in pieces:
        if piece.cols is not None:
            if used:
                windows.append(Window(w_start, piece.start))
            windows.append(piece)
            w_start, used, gap_start = piece.end, 0, piece.end
            continue
        width = size(gap_start, piece.end)
        if used and used + width > max_chars:
            # The blank lines before the piece end the window before (make_slice trims them).
            windows.append(Window(w_start, piece.start))
            w_start, used = piece.start, 0
            width = size(piece.start, piece.end)
        used += width
        gap_start = piece.end
    if used or not windows:
        windows.append(Window(w_start, end))
    return windows


def part_titles(title: str, count: int) -> list[str]:
    """`title` for a single piece, `title (part k/n)` when a unit was cut into several."""
    if count == 1:
        return [title]
    return [f"{title} (part {k}/{count})" for k in range(1, count + 1)]


def window_spans(windows: Sequence[Window], title: str, **fields: object) -> list[LineSpan]:
    """One span per window, titled `title (part k/n)` when there are several."""
    if len(windows) == 1:  # most sections: one window, titled as they are
        (w,) = windows
        return [LineSpan(w.start, w.end, cols=w.cols, title=title, **fields)]  # type: ignore[arg-type]
    titles = part_titles(title, len(windows))
    return [
        LineSpan(w.start, w.end, cols=w.cols, title=t, **fields)  # type: ignore[arg-type]
        for w, t in zip(windows, titles, strict=True)
    ]


def slice_windows(text: str, path: str, options: SliceOptions) -> Sliced:
    """Any text: windows at blank-line boundaries, titled with the path."""
    lines = split_lines(text)
    spans = window_spans(pack_windows(lines, 0, len(lines), options.max_chars), path)
    return Sliced(slices=spans_to_slices(lines, spans))
