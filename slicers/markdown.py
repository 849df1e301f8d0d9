"""Markdown (and MDX): sections by ATX and setext headings, following CommonMark's block rules.

A single pass over the lines tracks the block state that decides whether a line can be a
heading: fenced code (``` or ~~~ of any length), indented code, HTML blocks, list and block-quote
context, and the open paragraph a setext underline would turn into a heading. Only top-level
headings start sections. Front matter (YAML `---` or TOML `+++`) gives the document title and
becomes a slice of its own rather than being glued to the first section.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, replace

from slicers.base import LineSpan, Sliced, SliceOptions, is_blank, spans_to_slices, split_lines
from slicers.sections import Heading, section_spans, split_span
from slicers.slug import GithubSlugger

_ATX = re.compile(r"^( {0,3})(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")
_ATTR_ID = re.compile(r"[ \t]*\{[^}]*#([\w\-:.]+)[^}]*\}$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})(.*)$")
_THEMATIC = re.compile(r"^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_LIST_ITEM = re.compile(r"^( {0,3})([-+*]|\d{1,9}[.)])([ \t]+|$)")
_BLOCKQUOTE = re.compile(r"^ {0,3}> ?")
# The first characters (after indentation) of the lines that can open a block other than a
# paragraph: fences, ATX headings, setext underlines, breaks, HTML, bullets and quotes.
_BLOCK_MARKERS = frozenset("`~#=-*_+<>")

_HTML_BLOCK_TAGS = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|"
    "dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|h3|h4|h5|"
    "h6|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|"
    "option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul"
)
# CommonMark HTML block kinds 1-5: (start, end) patterns; the end may be on the start line.
_HTML_UNTIL = [
    (
        re.compile(r"^ {0,3}<(?:script|pre|style|textarea)(?:[ \t>]|$)", re.I),
        re.compile(r"</(?:script|pre|style|textarea)>", re.I),
    ),
    (re.compile(r"^ {0,3}<!--"), re.compile(r"-->")),
    (re.compile(r"^ {0,3}<\?"), re.compile(r"\?>")),
    (re.compile(r"^ {0,3}<![A-Za-z]"), re.compile(r">")),
    (re.compile(r"^ {0,3}<!\[CDATA\["), re.compile(r"\]\]>")),
]
# Kinds 6 and 7 end at a blank line; kind 7 (any lone tag) cannot interrupt a paragraph.
_HTML_BLOCK_6 = re.compile(rf"^ {{0,3}}</?(?:{_HTML_BLOCK_TAGS})(?:[ \t/>]|$)", re.I)
_HTML_BLOCK_7 = re.compile(
    r"^ {0,3}(?:<[A-Za-z][A-Za-z0-9-]*(?:\s+[A-Za-z_:][\w.:-]*(?:\s*=\s*(?:[^\s\"'=<>`]+|'[^']*'"
    r"|\"[^\"]*\"))?)*\s*/?>|</[A-Za-z][A-Za-z0-9-]*\s*>)[ \t]*$"
)

# An empty anchor alone on its line (`<a id="x"></a>`, `<a name="x"/>`, `<span id="x"></span>`):
# the target of links to what follows it, as Node.js's and many READMEs' headings have.
ANCHOR_LINE = re.compile(
    r"^ {0,3}(?:<(?:a|span)\s+(?:id|name)\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+)\s*/?>"
    r"(?:\s*</(?:a|span)>)?[ \t]*)+$",
    re.I,
)
_HTML_H1 = re.compile(r"<h1\b[^>]*>(.*?)</h1\s*>", re.I | re.S)
_INLINE_IMAGE_OR_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|!?\[([^\]]*)\]\[[^\]]*\]")
_INLINE_TAG = re.compile(r"(?<!\\)</?[A-Za-z][^>]*>")  # `\<T>` is text, not a tag
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")  # CommonMark's backslash escapes
_INLINE_EMPHASIS = re.compile(r"(\*\*|__|\*|~~)(?=\S)(.+?)(?<=\S)\1")


def _indent(line: str) -> int:
    """Columns of leading whitespace, tabs to the next multiple of 4 as CommonMark counts them."""
    spaces = len(line) - len(line.lstrip(" "))
    if line[spaces : spaces + 1] != "\t":
        return spaces  # no tab: the common case, without a loop
    col = 0
    for char in line:
        if char == " ":
            col += 1
        elif char == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def inline_text(text: str) -> str:
    """A heading's text as rendered: links and images to their text, no tags, code or emphasis."""
    text = _INLINE_IMAGE_OR_LINK.sub(lambda m: m.group(1) or m.group(2) or "", text)
    text = _INLINE_TAG.sub("", text)
    text = _INLINE_EMPHASIS.sub(r"\2", text)
    return _ESCAPED.sub(r"\1", text.replace("`", "")).strip()


def _heading_text(raw: str) -> tuple[str, str | None]:
    """Clean heading text and the explicit `{#id}` attribute, if any (MkDocs, Pandoc, Hugo)."""
    anchor = None
    match = _ATTR_ID.search(raw)
    if match:
        anchor = match.group(1)
        raw = raw[: match.start()]
    return inline_text(raw), anchor


@dataclass(frozen=True)
class FrontMatter:
    end: int  # index of the first line after the closing delimiter
    title: str | None


def front_matter(lines: list[str]) -> FrontMatter | None:
    """YAML (`---` ... `---`/`...`) or TOML (`+++` ... `+++`) front matter at the very top."""
    if not lines:
        return None
    opener = lines[0].rstrip()
    if opener not in ("---", "+++"):
        return None
    closers = ("---", "...") if opener == "---" else ("+++",)
    for i in range(1, len(lines)):
        if lines[i].rstrip() in closers:
            body = "\n".join(lines[1:i])
            return FrontMatter(end=i + 1, title=_front_matter_title(body, yaml=opener == "---"))
    return None


def _front_matter_title(body: str, *, yaml: bool) -> str | None:
    # Without the word (or a backslash escape to spell it), no key can be `title`: no need to
    # parse, which costs milliseconds a document in pure-Python ruamel.
    if "title" not in body and "\\" not in body:
        return None
    try:
        if yaml:
            from slicers.ruamel_yaml import YAML

            data = YAML(typ="safe", pure=True).load(body)
        else:
            data = tomllib.loads(body)
    except Exception:  # malformed front matter is content, not a reason to fail
        return None
    if isinstance(data, dict):
        title = data.get("title")
        if isinstance(title, str | int | float) and str(title).strip():
            return str(title).strip()
    return None


@dataclass(frozen=True)
class Blocks:
    headings: list[Heading]
    protected: list[tuple[int, int]]  # fenced and indented code: never cut when splitting


def scan_blocks(lines: list[str], start: int = 0) -> Blocks:
    """Find top-level headings and code blocks in lines[start:]."""
    headings: list[Heading] = []
    protected: list[tuple[int, int]] = []
    fence: tuple[str, int, int, int] | None = None  # char, length, max closing indent, start
    html_end: re.Pattern[str] | None = None
    html_until_blank = False
    paragraph_start: int | None = None  # open top-level paragraph (setext candidate)
    lazy = False  # inside a list item or block quote paragraph: no setext at top level
    list_indent: int | None = None  # content column of the open list item
    code: tuple[int, int] | None = None  # open indented code block: start, content column

    for i in range(start, len(lines)):
        line = lines[i]
        if fence is not None:
            char, length, max_indent, fence_start = fence
            if char not in line:  # most lines of a code block: no closing fence possible
                continue
            stripped = line.strip()
            if (
                _indent(line) <= max_indent
                and len(stripped) >= length
                and stripped == char * len(stripped)
            ):
                protected.append((fence_start, i + 1))
                fence = None
            continue
        if html_end is not None:
            if html_end.search(line):
                html_end = None
            continue
        blank = not line.strip()  # is_blank, inline: this loop runs once per line
        if html_until_blank:
            if blank:
                html_until_blank = False
            continue
        if blank:
            paragraph_start = None
            lazy = False
            continue
        rest = line.lstrip(" \t")  # not empty: the line is not blank
        indent = len(line) - len(rest)
        if indent and "\t" in line[:indent]:
            indent = _indent(line)  # tabs count to the next multiple of 4: rare

        if code is not None:
            if indent >= code[1]:
                continue
            protected.append((code[0], _last_non_blank(lines, code[0], i) + 1))
            code = None
        if list_indent is not None and indent < list_indent and not lazy:
            list_indent = None  # a line less indented than the item's content ends the list
        container = list_indent or 0
        if indent >= container + 4 and paragraph_start is None and not lazy:
            code = (i, container + 4)
            continue

        if rest[0].isalpha():
            # Most lines: text. A letter opens no block (each needs a marker first: # = - * _
            # + > < ` ~ or a digit), so go straight to the paragraph and list-item rules below.
            if list_indent is not None and indent >= list_indent:
                if indent - list_indent < 4:
                    lazy = True  # text opens a paragraph
                continue
            if paragraph_start is None and not lazy:
                paragraph_start = i
            continue

        if rest[0] in _BLOCK_MARKERS or rest[0].isdecimal():
            # Each block below opens with one of these characters (a digit: an ordered item).
            fence_match = _FENCE.match(line)
            if fence_match and _indent(fence_match.group(1)) <= container + 3:
                marker, info = fence_match.group(2), fence_match.group(3)
                if not (marker[0] == "`" and "`" in info):
                    if list_indent is not None and indent < list_indent:
                        list_indent, container = None, 0
                    fence = (marker[0], len(marker), container + 3, i)
                    paragraph_start, lazy = None, False
                    continue

            atx = _ATX.match(line)
            if atx:
                # At the top level unless indented into an open list item.
                if list_indent is None or indent < list_indent:
                    text, anchor = _heading_text(_ATX_CLOSING.sub("", atx.group(3) or ""))
                    headings.append(Heading(i, i + 1, len(atx.group(2)), text, anchor))
                    list_indent = None
                paragraph_start, lazy = None, False
                continue

            setext = _SETEXT.match(line)
            if setext and paragraph_start is not None and not lazy:
                raw = " ".join(lines[j].strip() for j in range(paragraph_start, i))
                text, anchor = _heading_text(raw)
                level = 1 if setext.group(1)[0] == "=" else 2
                headings.append(Heading(paragraph_start, i + 1, level, text, anchor))
                paragraph_start = None
                continue

            if _THEMATIC.match(line):
                if list_indent is not None and indent < list_indent:
                    list_indent = None  # a break less indented than the item ends the list
                paragraph_start, lazy = None, False
                continue

            html_kind = _html_block(line, can_interrupt=paragraph_start is None and not lazy)
            if html_kind is not None:
                if list_indent is not None and indent < list_indent:
                    list_indent = None
                end_pattern = html_kind
                if isinstance(end_pattern, re.Pattern):
                    if not end_pattern.search(line, pos=indent + 2):
                        html_end = end_pattern
                else:
                    html_until_blank = True
                paragraph_start, lazy = None, False
                continue

            item = _LIST_ITEM.match(line)
            if item and (list_indent is None or indent < list_indent):
                list_indent = (
                    _indent(item.group(1))
                    + len(item.group(2))
                    + max(1, min(_indent(item.group(3)), 4))
                )
                paragraph_start, lazy = None, _opens_paragraph(line[item.end() :])
                continue
            quote = _BLOCKQUOTE.match(line)
            if quote:
                if list_indent is not None and indent < list_indent:
                    list_indent = None
                paragraph_start, lazy = None, _opens_paragraph(line[quote.end() :])
                continue
        if list_indent is not None and indent >= list_indent:
            # Content of the open list item: later lines continue it lazily only if it is a
            # paragraph (or continues one).
            if indent - list_indent < 4:
                lazy = _opens_paragraph(line.lstrip())
            continue
        if paragraph_start is None and not lazy:
            paragraph_start = i

    if fence is not None:
        protected.append((fence[3], len(lines)))  # an unclosed fence runs to the end
    if code is not None:
        protected.append((code[0], _last_non_blank(lines, code[0], len(lines)) + 1))
    return Blocks(headings, protected)


def _opens_paragraph(content: str, depth: int = 0) -> bool:
    """Whether a container line's content starts a paragraph (which later lines continue lazily)."""
    if content[:1].isalpha():  # text: no block marker, no indentation
        return True
    if is_blank(content) or _ATX.match(content) or _THEMATIC.match(content):
        return False
    if _FENCE.match(content) and _indent(content) < 4:
        return False
    nested = _BLOCKQUOTE.match(content) or _LIST_ITEM.match(content)
    if nested and depth < 8:
        return _opens_paragraph(content[nested.end() :], depth + 1)
    return _indent(content) < 4 or depth > 0


def _last_non_blank(lines: list[str], start: int, stop: int) -> int:
    for j in range(stop - 1, start - 1, -1):
        if not is_blank(lines[j]):
            return j
    return start


def _html_block(line: str, *, can_interrupt: bool) -> re.Pattern[str] | bool | None:
    """The end pattern of an HTML block starting here, True for 'ends at a blank line', or None."""
    if "<" not in line[:4]:
        return None
    for start_pattern, end_pattern in _HTML_UNTIL:
        if start_pattern.match(line):
            return end_pattern
    if _HTML_BLOCK_6.match(line):
        return True
    if can_interrupt and _HTML_BLOCK_7.match(line):
        return True
    return None


def _title_from_body(lines: list[str], start: int, blocks: Blocks) -> str | None:
    """An HTML `<h1>` before the first heading (GitHub READMEs), else a leading level-1 heading."""
    first = blocks.headings[0] if blocks.headings else None
    preamble = "\n".join(lines[start : first.line if first else len(lines)])
    html = _HTML_H1.search(preamble)
    if html and inline_text(html.group(1)):
        return inline_text(html.group(1))
    if first and first.level == 1 and first.text:
        return first.text
    return None


def slice_markdown(text: str, path: str, options: SliceOptions) -> Sliced:
    lines = split_lines(text)
    matter = front_matter(lines)
    body_start = matter.end if matter else 0
    blocks = scan_blocks(lines, body_start)
    if options.heading_ids:
        ids = dict(options.heading_ids)
        blocks.headings[:] = [
            replace(h, anchor=ids[h.line]) if h.line in ids else h for h in blocks.headings
        ]

    doc_title = (matter.title if matter else None) or _title_from_body(lines, body_start, blocks)

    spans: list[LineSpan] = []
    if matter:
        # Within the budget like any section: a long front matter was one slice over it.
        matter_span = LineSpan(
            0, matter.end, title=f"{doc_title or options.title or path} (front matter)"
        )
        spans += split_span(lines, matter_span, options.max_chars)
    spans += section_spans(
        lines,
        blocks.headings,
        start=body_start,
        end=len(lines),
        fallback_title=doc_title or options.title or path,
        slugger=GithubSlugger(),
        max_chars=options.max_chars,
        protected=blocks.protected,
        is_label=is_anchor_line,
    )
    return Sliced(slices=spans_to_slices(lines, spans), doc_title=doc_title)


def is_anchor_line(line: str) -> bool:
    return "<" in line[:4] and ANCHOR_LINE.match(line) is not None
