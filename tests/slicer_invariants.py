"""The invariant every slicer keeps: true line ranges, and every non-blank line exactly once."""

from __future__ import annotations

from collections.abc import Iterator

from slicers.base import Slice, Sliced, is_blank, split_lines


def _in_order(sliced: Sliced, units: list[str]) -> Iterator[tuple[Slice, list[int]]]:
    """Each slice with the non-blank units (lines or cells) it claims, after checking that the
    ranges are in bounds, in order and disjoint, and that every slice has a title."""
    previous_end = 0
    for piece in sliced.slices:
        assert 1 <= piece.start_line <= piece.end_line <= len(units), piece
        assert piece.start_line > previous_end, "slices overlap or are out of order"
        previous_end = piece.end_line
        assert piece.title, "every slice has a title"
        claimed = range(piece.start_line - 1, piece.end_line)
        yield piece, [i for i in claimed if not is_blank(units[i])]


def assert_covers(text: str, sliced: Sliced) -> None:
    lines = split_lines(text)
    covered: list[int] = []
    for piece, claimed in _in_order(sliced, lines):
        assert piece.content == "\n".join(lines[piece.start_line - 1 : piece.end_line])
        covered += claimed
    expected = [i for i, line in enumerate(lines) if not is_blank(line)]
    assert covered == expected, "non-blank lines dropped or duplicated"


def assert_covers_cells(cells: list[str], sliced: Sliced) -> None:
    """The notebook form: ranges are 1-based cell numbers, every non-blank cell exactly once.

    `cells` are the cells' sources; each must appear in the slice that claims its number.
    """
    covered: list[int] = []
    for piece, claimed in _in_order(sliced, cells):
        assert dict(piece.meta).get("lineUnit") == "cell"
        for i in claimed:
            assert cells[i].strip() in piece.content, (i, piece)
        covered += claimed
    expected = [i for i, source in enumerate(cells) if not is_blank(source)]
    assert covered == expected, "non-blank cells dropped or duplicated"
