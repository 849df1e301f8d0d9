"""The invariant every slicer keeps: true line ranges, and every non-blank line exactly once.

A line over the size budget may be cut into pieces: consecutive slices with the same
startLine == endLine whose contents, in order, are that line with only whitespace left out.
"""

from __future__ import annotations

from itertools import pairwise

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

    `cells` are the cells' sources; each must be recoverable from the slices that claim its
    number (whitespace aside). A cell over the size budget is cut into parts: consecutive slices
    then share that one cell number, the last cell of one and the first of the next.
    """
    claims: dict[int, list[Slice]] = {}
    previous: Slice | None = None
    for piece in sliced.slices:
        assert dict(piece.meta).get("lineUnit") == "cell"
        assert 1 <= piece.start_line <= piece.end_line <= len(cells), piece
        assert piece.title and len(piece.title) <= TITLE_MAX, "every slice has a capped title"
        if previous is not None:
            assert piece.start_line >= previous.end_line, "slices out of order"
        for i in range(piece.start_line - 1, piece.end_line):
            claims.setdefault(i, []).append(piece)
        previous = piece
    for i, pieces in claims.items():
        # Only a cut cell is claimed twice, by slices that meet at it.
        assert all(a.end_line == b.start_line == i + 1 for a, b in pairwise(pieces)), i
        if not is_blank(cells[i]):
            held = _bare("".join(p.content for p in pieces))
            assert _bare(cells[i]) in held, ("a cell's text is not in the slices that claim it", i)
    expected = [i for i, source in enumerate(cells) if not is_blank(source)]
    assert [i for i in sorted(claims) if not is_blank(cells[i])] == expected, "cells dropped"


def _bare(text: str) -> str:
    return "".join(text.split())
