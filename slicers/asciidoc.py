"""AsciiDoc: sections by `=`-prefixed titles (and the Markdown-style `#` form AsciiDoc accepts).

Delimited blocks (listing `----`, literal `....`, example `====`, sidebar `****`, quote `____`,
passthrough `++++`, comment `////`, fenced ```) are skipped whole: a title-like line inside one is
content. `[[id]]` or `[#id]` on the line before a title sets its anchor.
"""

from __future__ import annotations

import re

from slicers.base import Sliced, SliceOptions, spans_to_slices, split_lines
from slicers.sections import Heading, section_spans
from slicers.slug import AsciidoctorSlugger

_TITLE = re.compile(r"^(={1,6}|#{1,6})[ \t]+(\S.*?)[ \t]*$")
_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|`{3,}|--)[ \t]*$")
BLOCK_ANCHOR = re.compile(r"^\[\[([^\],]+)(?:,[^\]]*)?\]\]$|^\[#([\w\-:.]+)[^\]]*\]$")


def find_asciidoc_headings(lines: list[str]) -> tuple[list[Heading], list[tuple[int, int]]]:
    headings: list[Heading] = []
    protected: list[tuple[int, int]] = []
    block: tuple[str, int] | None = None  # the open delimiter and where it opened
    for i, line in enumerate(lines):
        stripped = line.rstrip()
        if block is not None:
            if stripped == block[0]:
                protected.append((block[1], i + 1))
                block = None
            continue
        if _DELIMITER.match(stripped):
            block = (stripped, i)
            continue
        match = _TITLE.match(line)
        if match:
            anchor = None
            if i > 0:
                anchor_match = BLOCK_ANCHOR.match(lines[i - 1].strip())
                if anchor_match:
                    anchor = anchor_match.group(1) or anchor_match.group(2)
            start = i - 1 if anchor else i
            level = len(match.group(1))  # `=` is the document title: level 1 here
            headings.append(Heading(start, i + 1, level, match.group(2), anchor))
    if block is not None:
        protected.append((block[1], len(lines)))
    return headings, protected


def slice_asciidoc(text: str, path: str, options: SliceOptions) -> Sliced:
    lines = split_lines(text)
    headings, protected = find_asciidoc_headings(lines)
    doc_title = headings[0].text if headings and headings[0].level == 1 else None
    spans = section_spans(
        lines,
        headings,
        start=0,
        end=len(lines),
        fallback_title=doc_title or path,
        slugger=AsciidoctorSlugger(),
        max_chars=options.max_chars,
        protected=protected,
    )
    return Sliced(slices=spans_to_slices(lines, spans), doc_title=doc_title)
