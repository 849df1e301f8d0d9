"""Shapes of slices that read as nothing on their own: what the slicer properties forbid and
tests/bench/slice_quality.py counts on real documents.

- label-only: every non-blank line is an anchor for something else (reST `.. _label:`, an
  empty `<a id>`/`<span id>` left in markdown, AsciiDoc `[[id]]`/`[#id]`);
- heading-only: every non-blank line is a heading (or a label), and the document goes on after
  it: the heading's content is in another slice;
- path-titled preamble: text before the first heading titled by nothing better than its path
  (or by nothing: the slicers fall back to the path, so an empty title would be a bug).

The headings and labels are found by the slicers' own finders and patterns, run on the slice's
lines alone: those are tested on their own; this module only asks what is left without them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from slicers.asciidoc import BLOCK_ANCHOR, find_asciidoc_headings
from slicers.base import Slice, is_blank
from slicers.markdown import ANCHOR_LINE, scan_blocks
from slicers.rst import LABEL as RST_LABEL
from slicers.rst import find_rst_headings

FRONT_MATTER = "(front matter)"  # the title suffix of a markdown front matter slice
LABELS = {"rst": RST_LABEL, "markdown": ANCHOR_LINE, "asciidoc": BLOCK_ANCHOR}


def is_label(line: str, fmt: str) -> bool:
    """A label as its slicer reads one: indented, a reST label belongs to a directive."""
    pattern = LABELS.get(fmt)
    return pattern is not None and pattern.match(line.rstrip()) is not None


def heading_lines(lines: Sequence[str], fmt: str) -> set[int]:
    """0-based indexes of the heading lines (with setext/reST adornments) among `lines`."""
    if fmt == "rst":
        headings = find_rst_headings(list(lines))
    elif fmt == "asciidoc":
        headings = find_asciidoc_headings(list(lines))[0]
    elif fmt == "markdown":
        headings = scan_blocks(list(lines)).headings
    else:
        return set()
    return {i for h in headings for i in range(h.line, h.end)}


def is_label_only(piece: Slice, fmt: str) -> bool:
    lines = [line for line in piece.content.split("\n") if not is_blank(line)]
    return bool(lines) and all(is_label(line, fmt) for line in lines)


def is_heading_only(piece: Slice, fmt: str) -> bool:
    lines = piece.content.split("\n")
    headings = heading_lines(lines, fmt)
    rest = [
        line
        for i, line in enumerate(lines)
        if i not in headings and not is_blank(line) and not is_label(line, fmt)
    ]
    return bool(headings) and not rest


def trails_label(piece: Slice, following: Slice | None, fmt: str) -> bool:
    """The slice ends in a label and the next slice opens with the heading it labels."""
    lines = [line for line in piece.content.split("\n") if not is_blank(line)]
    if following is None or not lines or not is_label(lines[-1], fmt):
        return False
    return 0 in heading_lines(following.content.split("\n"), fmt)


@dataclass
class Shapes:
    """Counts of slices by shape, over any number of documents."""

    documents: int = 0
    slices: int = 0
    label_only: int = 0
    trailing_label: int = 0
    heading_only: int = 0  # not the document's last slice: its heading has content below
    preambles: int = 0
    path_titled_preambles: int = 0

    def add(self, pieces: Sequence[Slice], fmt: str, path: str) -> list[str]:
        """Count one document's slices; returns a line naming each bad one."""
        self.documents += 1
        self.slices += len(pieces)
        bad: list[str] = []
        opened = False  # the first slice after any front matter: a preamble if it has no heading
        for i, piece in enumerate(pieces):
            following = pieces[i + 1] if i + 1 < len(pieces) else None
            where = f"{path}:{piece.start_line} {piece.title!r}"
            if is_label_only(piece, fmt):
                self.label_only += 1
                bad.append(f"label-only {where}")
            elif trails_label(piece, following, fmt):
                self.trailing_label += 1
                bad.append(f"trailing label {where}")
            if following is not None and is_heading_only(piece, fmt):
                self.heading_only += 1
                bad.append(f"heading-only {where}")
            if not opened and not piece.title.endswith(FRONT_MATTER):
                opened = True
                if not piece.section:
                    self.preambles += 1
                    if not piece.title or piece.title == path:
                        self.path_titled_preambles += 1
                        bad.append(f"preamble titled by its path {where}")
        return bad
