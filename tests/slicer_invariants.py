"""The invariant every slicer keeps: true line ranges, and every non-blank line exactly once."""

from __future__ import annotations

from slicers.base import Sliced, is_blank, split_lines


def assert_covers(text: str, sliced: Sliced) -> None:
    lines = split_lines(text)
    expected = [i for i, line in enumerate(lines) if not is_blank(line)]
    covered: list[int] = []
    previous_end = 0
    for piece in sliced.slices:
        assert 1 <= piece.start_line <= piece.end_line <= len(lines), piece
        assert piece.start_line > previous_end, "slices overlap or are out of order"
        previous_end = piece.end_line
        assert piece.content == "\n".join(lines[piece.start_line - 1 : piece.end_line])
        assert piece.title, "every slice has a title"
        covered += [
            i for i in range(piece.start_line - 1, piece.end_line) if not is_blank(lines[i])
        ]
    assert covered == expected, "non-blank lines dropped or duplicated"


def assert_covers_cells(cells: list[str], sliced: Sliced) -> None:
    """The notebook form: ranges are 1-based cell numbers, every non-blank cell exactly once.

    `cells` are the cells' sources; each must appear in the slice that claims its number.
    """
    expected = [i for i, source in enumerate(cells) if source.strip()]
    covered: list[int] = []
    previous_end = 0
    for piece in sliced.slices:
        assert 1 <= piece.start_line <= piece.end_line <= len(cells), piece
        assert piece.start_line > previous_end, "slices overlap or are out of order"
        previous_end = piece.end_line
        assert dict(piece.meta).get("lineUnit") == "cell"
        assert piece.title, "every slice has a title"
        for i in range(piece.start_line - 1, piece.end_line):
            if cells[i].strip():
                assert cells[i].strip() in piece.content, (i, piece)
                covered.append(i)
    assert covered == expected, "non-blank cells dropped or duplicated"
