"""The invariant every slicer keeps: true line ranges, and every non-blank line exactly once.

A line over the size budget may be cut into pieces: consecutive slices with the same
startLine == endLine whose contents, in order, are that line with only whitespace left out.
"""

from __future__ import annotations

from collections.abc import Iterator

from slicers.base import TITLE_MAX, Slice, Sliced, is_blank, split_lines


def assert_covers(text: str, sliced: Sliced, max_chars: int | None = None) -> None:
    """`max_chars`, when given: no slice is larger (a line over it was cut into pieces)."""
    lines = split_lines(text)
    expected = [i for i, line in enumerate(lines) if not is_blank(line)]
    covered: list[int] = []
    previous_end = 0
    cut_line: int | None = None  # the 1-based line being cut into pieces, and how far it is used
    used = 0
    for piece in sliced.slices:
        assert 1 <= piece.start_line <= piece.end_line <= len(lines), piece
        assert piece.title, "every slice has a title"
        assert len(piece.title) <= TITLE_MAX, "titles are capped"
        if max_chars is not None:
            assert len(piece.content) <= max_chars, ("over the budget", len(piece.content))
        whole = "\n".join(lines[piece.start_line - 1 : piece.end_line])
        if cut_line == piece.start_line or piece.content != whole:
            # A piece of one long line: the next part of it, with only whitespace skipped.
            assert piece.start_line == piece.end_line, "a cut piece lies on one line"
            line = lines[piece.start_line - 1]
            if cut_line != piece.start_line:
                _finish(lines, cut_line, used)
                assert piece.start_line > previous_end, "slices overlap or are out of order"
                cut_line, used = piece.start_line, 0
                covered.append(piece.start_line - 1)
            at = line.find(piece.content, used)
            assert at >= 0 and is_blank(line[used:at]), "a cut piece is not the line's next part"
            used = at + len(piece.content)
        else:
            _finish(lines, cut_line, used)
            cut_line = None
            assert piece.start_line > previous_end, "slices overlap or are out of order"
            covered += [
                i for i in range(piece.start_line - 1, piece.end_line) if not is_blank(lines[i])
            ]
        previous_end = piece.end_line
    _finish(lines, cut_line, used)
    assert covered == expected, "non-blank lines dropped or duplicated"


def _finish(lines: list[str], cut_line: int | None, used: int) -> None:
    if cut_line is not None:
        assert is_blank(lines[cut_line - 1][used:]), "the end of a cut line was dropped"


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


def _in_order(sliced: Sliced, units: list[str]) -> Iterator[tuple[Slice, list[int]]]:
    """Each slice with the non-blank units it claims, after checking that the ranges are in
    bounds, in order and disjoint, and that every slice has a capped title."""
    previous_end = 0
    for piece in sliced.slices:
        assert 1 <= piece.start_line <= piece.end_line <= len(units), piece
        assert piece.start_line > previous_end, "slices overlap or are out of order"
        previous_end = piece.end_line
        assert piece.title and len(piece.title) <= TITLE_MAX, "every slice has a capped title"
        claimed = range(piece.start_line - 1, piece.end_line)
        yield piece, [i for i in claimed if not is_blank(units[i])]
