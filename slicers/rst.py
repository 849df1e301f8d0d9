"""reStructuredText: sections by underlined (and optionally overlined) titles.

Levels come from the order in which each adornment style (character, with or without overline)
first appears, as docutils assigns them. A lone line of punctuation between blank lines is a
transition, not a title; indented text (literal blocks, directive bodies) never holds a title.
"""

from __future__ import annotations

import re

from slicers.base import Sliced, SliceOptions, spans_to_slices, split_lines
from slicers.sections import Heading, section_spans
from slicers.slug import DocutilsSlugger

# An internal target (`.. _install:`) labels what follows it; one with a URL after its colon is
# a link target instead. Only at column 0: indented, it belongs to a directive's body.
LABEL = re.compile(r"^\.\. _(?:`[^`]+`|[^:`\s][^`]*?):[ \t]*$")
_ROLE = re.compile(r":[\w\-+:.]+:`([^`]*)`")
_INLINE_MARKUP = re.compile(r"``|\*\*|`_{0,2}|(?<!\w)\*(?=\S)|(?<=\S)\*(?!\w)")


# A line of one punctuation character repeated (trailing spaces allowed): an underline or an
# overline. Each is found after the "\n" that ends the line before: a regex anchored by `^` under
# MULTILINE would be tried at every character, this one only at each "\n".
_ADORNMENT_LINES = re.compile(r"""\n([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])\1*[ \t]*(?=\n|\Z)""")


def _title_text(raw: str) -> str:
    if "`" not in raw and "*" not in raw:  # no role, no inline markup: the common title
        return raw.strip()
    text = _ROLE.sub(r"\1", raw.strip())
    return _INLINE_MARKUP.sub("", text).strip()


def adornment_rows(lines: list[str], text: str | None = None) -> list[int]:
    """Indexes of the adornment lines; `lines` as `split_lines` gives them (no "\n" inside),
    from `text` when given (what they were split from: not joined again).

    A title needs an adornment line (its underline, or its overline) and most documents have
    few: found by one regex over the document, a title is only looked for beside them."""
    # The line break `split_lines` leaves off the end adds no match: an adornment needs a
    # character after its "\n".
    text = "\n" + (text if text is not None else "\n".join(lines))
    rows: list[int] = []
    row = at = 0
    for match in _ADORNMENT_LINES.finditer(text):
        row += text.count("\n", at, match.start())
        at = match.start()
        rows.append(row)
    return rows


def find_rst_headings(lines: list[str], text: str | None = None) -> list[Heading]:
    """Titles, each an underlined line or an over- and underlined one, after a blank line
    (`text`: what `lines` were split from, when the caller has it).

    Lines are read in order and a title's lines are not read again; a line that neither is an
    adornment nor has one below it cannot start a title, so only the others are looked at."""
    headings: list[Heading] = []
    levels: dict[tuple[str, bool], int] = {}  # adornment style -> level, in order of appearance
    count = len(lines)
    adorned = adornment_rows(lines, text)
    starts = sorted({*adorned, *(row - 1 for row in adorned if row)})
    adorned_set = set(adorned)
    resume = 0  # lines before this belong to a title found already
    for i in starts:
        if i < resume or (i and lines[i - 1].strip()):  # a title follows a blank line
            continue
        line = lines[i]
        char = line[0] if i in adorned_set else None
        # Overline, title, underline.
        if char and i + 2 < count and lines[i + 1].strip():
            title, under = lines[i + 1], lines[i + 2]
            width = len(line.rstrip())
            if (
                i + 2 in adorned_set
                and under[0] == char
                and len(under.rstrip()) == width >= len(title.strip())
            ):
                headings.append(_heading(levels, (char, True), i, i + 3, title))
                resume = i + 3
                continue
        # Title, underline.
        if char is None and i + 1 in adorned_set and line.strip() and not line[0].isspace():
            under = lines[i + 1]
            if len(under.rstrip()) >= min(len(line.rstrip()), 3):
                headings.append(_heading(levels, (under[0], False), i, i + 2, line))
                resume = i + 2
    return headings


def _heading(
    levels: dict[tuple[str, bool], int], style: tuple[str, bool], start: int, end: int, raw: str
) -> Heading:
    """A title's level: its style's, the next one down for a style not seen before."""
    level = levels.setdefault(style, len(levels) + 1)
    return Heading(start, end, level, _title_text(raw))


def is_label(line: str) -> bool:
    return line.startswith(".. _") and LABEL.match(line) is not None


def slice_rst(text: str, path: str, options: SliceOptions) -> Sliced:
    lines = split_lines(text)
    headings = find_rst_headings(lines, text)
    doc_title = headings[0].text if headings and headings[0].level == 1 else None
    spans = section_spans(
        lines,
        headings,
        start=0,
        end=len(lines),
        fallback_title=doc_title or path,
        slugger=DocutilsSlugger(),
        max_chars=options.max_chars,
        is_label=is_label,
    )
    return Sliced(slices=spans_to_slices(lines, spans), doc_title=doc_title)
