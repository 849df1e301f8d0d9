"""reStructuredText: sections by underlined (and optionally overlined) titles.

Levels come from the order in which each adornment style (character, with or without overline)
first appears, as docutils assigns them. A lone line of punctuation between blank lines is a
transition, not a title; indented text (literal blocks, directive bodies) never holds a title.
"""

from __future__ import annotations

import re

from slicers.base import Sliced, SliceOptions, is_blank, spans_to_slices, split_lines
from slicers.sections import Heading, section_spans
from slicers.slug import DocutilsSlugger

_ADORNMENT = re.compile(r"""^([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])\1*[ \t]*$""")
# An internal target (`.. _install:`) labels what follows it; one with a URL after its colon is
# a link target instead. Only at column 0: indented, it belongs to a directive's body.
LABEL = re.compile(r"^\.\. _(?:`[^`]+`|[^:`\s][^`]*?):[ \t]*$")
_ROLE = re.compile(r":[\w\-+:.]+:`([^`]*)`")
_INLINE_MARKUP = re.compile(r"``|\*\*|`_{0,2}|(?<!\w)\*(?=\S)|(?<=\S)\*(?!\w)")


_PUNCTUATION = frozenset("""!"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~""")


def _adornment(line: str) -> str | None:
    """The adornment character if `line` is a run of one punctuation character, else None."""
    # Most lines start with a letter or a space: no regex for them (this runs on every line).
    return line[0] if line[:1] in _PUNCTUATION and _ADORNMENT.match(line) else None


def _title_text(raw: str) -> str:
    text = _ROLE.sub(r"\1", raw.strip())
    return _INLINE_MARKUP.sub("", text).strip()


def find_rst_headings(lines: list[str]) -> list[Heading]:
    headings: list[Heading] = []
    styles: list[tuple[str, bool]] = []
    i = 0
    count = len(lines)
    while i < count:
        if i and not is_blank(lines[i - 1]):  # either form of title follows a blank line
            i += 1
            continue
        line = lines[i]
        char = _adornment(line)
        # Overline, title, underline.
        if char and i + 2 < count and not is_blank(lines[i + 1]):
            title, under = lines[i + 1], lines[i + 2]
            width = len(line.rstrip())
            if _adornment(under) == char and len(under.rstrip()) == width >= len(title.strip()):
                headings.append(_heading(styles, (char, True), i, i + 3, title))
                i += 3
                continue
        # Title, underline.
        if not is_blank(line) and not line[0].isspace() and char is None and i + 1 < count:
            under = lines[i + 1]
            under_char = _adornment(under)
            width = len(under.rstrip())
            if under_char and width >= min(len(line.rstrip()), 3):
                headings.append(_heading(styles, (under_char, False), i, i + 2, line))
                i += 2
                continue
        i += 1
    return headings


def _heading(
    styles: list[tuple[str, bool]], style: tuple[str, bool], start: int, end: int, raw: str
) -> Heading:
    if style not in styles:
        styles.append(style)
    return Heading(start, end, styles.index(style) + 1, _title_text(raw))


def is_label(line: str) -> bool:
    return line.startswith(".. _") and LABEL.match(line) is not None


def slice_rst(text: str, path: str, options: SliceOptions) -> Sliced:
    lines = split_lines(text)
    headings = find_rst_headings(lines)
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
