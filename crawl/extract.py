"""HTML page -> its main content as markdown (selectolax's Lexbor parser; no network).

The main container is found by the known documentation generators first, then `article`,
`[role=main]` and `main`, then the body; every match of the first selector that matches is
kept, in document order (a page of several articles), none twice and none inside page
furniture. Each generator's chrome is removed (crawl/generators.py knows them), and so is what
the page hides inside its content (`hidden`, `aria-hidden`, an inline `display: none` or
`visibility: hidden`). Links resolve against the page's `<base href>` when it stays on the
page's host. The title is the page's H1, else `<title>` less the site's name, else og:title.
The markdown reads as the page reads: headings' real ids (their own, or as Sphinx writes them,
their section's) travel beside it as `heading_ids`, by line. Sphinx API signatures become
headings anchored at their ids, and field lists keep their label with their items. Code blocks
keep their language and their line breaks (also when each line is its own element, as
Docusaurus renders them). Admonitions read as quotes under their bold title, ordered lists
number as the page does (`start`, `reversed`, `value`), and a layout table (code or headings
in its cells) reads as its cells' blocks rather than as a markdown table.

Hostile pages stay bounded: a page that may nest deeper than the parser handles in bounded time
is refused before parsing (`Unextractable`), and the walk below turns what nests deeper than
MAX_NESTING into plain text instead of recursing further.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from selectolax.lexbor import LexborHTMLParser

from crawl.generators import (
    CHROME,
    MAIN_CONTAINERS,
    NO_LANGUAGE,
    admonition_title,
    generated_index,
    hidden_inline,
    hides,
    prepare,
    whole_book,
)
from crawl.nesting import nests_deeper_than
from crawl.tree import Ancestry, outermost
from crawl.urls import normalize, resolve
from slicers.markdown import inline_text

# Below this many `<`, even the worst nesting parses in well under a second; above it, a page
# whose elements may nest deeper than MAX_PARSE_DEPTH is refused (Lexbor's tree builder takes
# time in tags x depth: 200,000 nested <div>s take two minutes).
SMALL_PAGE_TAGS = 20_000
MAX_PARSE_DEPTH = 512
# Element levels the markdown walk descends (each one is a few Python frames); deeper content
# is kept as plain text.
MAX_NESTING = 64

_PERMALINK_GLYPHS = {"¶", "#", "§", "🔗"}
_LANGUAGE = re.compile(r"(?:^|\s)(?:language|lang|highlight)-([\w+#.-]+)")
_SPACE = re.compile(r"[ \t\r\n\f\v]+")
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = {
    "p", "div", "section", "article", "main", "ul", "ol", "li", "table", "pre", "blockquote",
    "dl", "dt", "dd", "hr", "figure", "figcaption", "details", "summary", *_HEADINGS,
}  # fmt: skip


class Unextractable(ValueError):
    """A page that is not extracted, with a stable reason for the report."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass
class Extracted:
    title: str
    markdown: str
    links: list[str] = field(default_factory=list)  # absolute, normalised
    canonical: str | None = None
    heading_ids: tuple[tuple[int, str], ...] = ()  # (0-based markdown line, the page's id)
    generated: str | None = None  # a generated index (Sphinx genindex, search): not content
    # An all-in-one page (mdBook's print.html): the chapters again; skipped when they are crawled.
    whole_book: str | None = None


def extract(html: str, url: str) -> Extracted:
    if html.count("<") > SMALL_PAGE_TAGS and nests_deeper_than(html, MAX_PARSE_DEPTH):
        raise Unextractable("too-deep", f"elements may nest deeper than {MAX_PARSE_DEPTH}")
    tree = LexborHTMLParser(html)
    base = document_base(tree, url)
    links = []
    for anchor in tree.css("a[href]"):
        target = resolve(base, anchor.attributes.get("href") or "")
        if target:
            links.append(target)
    links = list(dict.fromkeys(links))
    canonical_node = tree.css_first("link[rel=canonical]")
    canonical = None
    if canonical_node and canonical_node.attributes.get("href"):
        canonical = resolve(base, canonical_node.attributes["href"] or "")
    generated = generated_index(tree, urlsplit(url).path)
    book = whole_book(tree, urlsplit(url).path)
    containers = content_containers(tree)
    if not containers:
        return Extracted(_title(tree, None, url), "", links, canonical, generated=generated,
                         whole_book=book)  # fmt: skip
    lines: list[str] = []
    for container in containers:
        prepare(container)
        for noise in container.css(CHROME):
            if noise.mem_id != container.mem_id:  # a css() match may be the container itself
                noise.decompose()
        for noise in hidden_inline(container):
            noise.decompose()
        _blocks(container, lines, "", 0)
    main = containers[0]
    markdown = "\n".join(lines).strip() + "\n"
    markdown = re.sub(r"\n{3,}", "\n\n", markdown)
    markdown, heading_ids = _take_heading_ids(markdown)
    title = _title(tree, main, url)
    return Extracted(title, markdown, links, canonical, heading_ids, generated, book)


def document_base(tree: Any, url: str) -> str:
    """The URL relative links resolve against: the page's first `<base href>` (itself relative
    to the page), when it stays on the page's scheme, host and port; else the page's URL. A
    base on another host would lead every relative link off the site, which a crawl never
    follows."""
    node = tree.css_first("base[href]")
    base = resolve(url, node.attributes.get("href") or "") if node is not None else None
    if base is None or urlsplit(base)[:2] != urlsplit(normalize(url))[:2]:
        return url
    return base


def content_containers(tree: Any) -> list[Any]:
    """The page's main content: every match of the first container selector that matches
    (a blog page's several `<article>`s, a page's two `<main>`s), in document order, none
    inside another (no text twice) or inside page furniture (a related post's teaser in an
    `<aside>`). Containers the page hides (themselves or an ancestor: `hidden`, an inline
    `display: none`) give way to shown ones, so text no reader sees (an injected prompt in a
    hidden `<article>`) never stands in for the page. When every candidate is hidden, the body
    is read if it shows text of its own (its hidden parts are dropped later), else the hidden
    candidates (a page its scripts show whole). The body when none matches."""
    furniture = Ancestry(lambda n: n.tag in _FURNITURE)
    hidden = Ancestry(hides)
    fallback: list[Any] = []
    for selector in MAIN_CONTAINERS:
        found = [n for n in tree.css(selector) if not furniture.below_mark(n)]
        shown = [n for n in found if not hides(n) and not hidden.below_mark(n)]
        if shown:
            return outermost(shown)
        fallback = fallback or found
    if fallback and not _shows_text(tree.body, hidden):
        return outermost(fallback)
    return [tree.body] if tree.body is not None else []


def _shows_text(body: Any, hidden: Ancestry) -> bool:
    """Whether `body` holds text outside every element the page hides (and outside scripts)."""
    if body is None:
        return False
    for node in body.traverse(include_text=True):
        if node.tag == "-text" and (node.text_content or "").strip():
            parent = node.parent
            if parent is not None and parent.tag in ("script", "style", "template", "noscript"):
                continue
            if not (parent is not None and hides(parent)) and not hidden.below_mark(node):
                return True
    return False


_FURNITURE = frozenset({"nav", "header", "footer", "aside", "template", "noscript"})


def _title(tree: Any, main: Any, url: str) -> str:
    """The page's H1, else <title> less the site's name, else og:title, else the URL's last
    segment as words: never the URL itself."""
    h1 = main.css_first("h1") if main is not None else None
    text = inline_text(_SPACE.sub(" ", _inline(h1, 0))) if h1 is not None else ""
    if text:  # as the markdown slicer reads the same heading: no code ticks or emphasis
        return text
    node = tree.css_first("title")
    text = _SPACE.sub(" ", node.text()).strip() if node is not None else ""
    site = tree.css_first("meta[property='og:site_name']")
    site_name = (site.attributes.get("content") or "").strip() if site is not None else ""
    text = _without_site_name(text, site_name)
    if text:
        return text
    og = tree.css_first("meta[property='og:title']")
    text = _SPACE.sub(" ", og.attributes.get("content") or "").strip() if og is not None else ""
    if text:
        return text
    segment = urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]
    segment = re.sub(r"\.html?$", "", segment)
    return re.sub(r"[-_]+", " ", segment).strip() or urlsplit(url).hostname or "untitled"


_TITLE_SEPARATOR = re.compile(r"\s+[|—–·:-]{1,2}\s+")


def _without_site_name(title: str, site_name: str) -> str:
    """`Install | Pebble` -> `Install`: the site's name (og:site_name, else whatever follows the
    last separator) is dropped; a title that is only the site's name stays."""
    parts = _TITLE_SEPARATOR.split(title)
    if len(parts) < 2:
        return title
    if site_name and site_name in parts[-1]:
        return " - ".join(parts[:-1]) if site_name == parts[-1] else title
    return title[: list(_TITLE_SEPARATOR.finditer(title))[-1].start()]


_ID_MARK = "\x00"  # a heading line carries its id after this until the ids are taken off


def _take_heading_ids(markdown: str) -> tuple[str, tuple[tuple[int, str], ...]]:
    """Markdown without the id marks, and (line, id) for each heading that had one."""
    if _ID_MARK not in markdown:
        return markdown, ()
    lines = markdown.split("\n")
    ids = []
    for number, line in enumerate(lines):
        text, mark, anchor = line.partition(_ID_MARK)
        if mark:
            lines[number] = text
            ids.append((number, anchor))
    return "\n".join(lines), tuple(ids)


def _blocks(node: Any, out: list[str], indent: str, depth: int) -> None:
    """Append the markdown lines of `node`'s children; runs of inline content become paragraphs.
    `depth` counts the element levels above; past MAX_NESTING the rest is one paragraph."""
    inline: list[str] = []
    if depth > MAX_NESTING:
        inline.append(_flat(node))
        child = None
    else:
        child = node.child

    def flush() -> None:
        text = _SPACE.sub(" ", "".join(inline)).strip()
        inline.clear()
        if text:
            out.extend([indent + text, ""])

    while child is not None:
        tag = child.tag
        if tag == "-text":
            inline.append(_text(child))
        elif tag in _BLOCKS:
            flush()
            _block(child, out, indent, depth + 1)
        elif tag == "br":
            inline.append("\n")
        elif tag not in ("-comment",):
            inline.append(_inline(child, depth + 1))
        child = child.next
    flush()


def _block(node: Any, out: list[str], indent: str, depth: int) -> None:
    tag = node.tag
    if tag in _HEADINGS:
        _heading(_HEADINGS[tag], _inline(node, depth), _heading_id(node), out, indent)
    elif tag == "pre":
        _code_block(node, out, indent)
    elif tag in ("ul", "ol"):
        _list(node, out, indent, depth, ordered=tag == "ol")
    elif tag == "table":
        _table(node, out, indent, depth)
    elif tag == "blockquote":
        inner: list[str] = []
        _blocks(node, inner, "", depth)
        _quote(_trim(inner), out, indent)
    elif (title := admonition_title(node)) is not None:
        _admonition(node, title, out, indent, depth)
    elif tag == "hr":
        out.extend([indent + "---", ""])
    elif tag == "dl" and "field-list" in (node.attributes.get("class") or "").split():
        _field_list(node, out, indent, depth)
    elif tag == "dt" and node.attributes.get("id") and _is_signature(node):
        _heading(_signature_level(node), _inline(node, depth), node.attributes["id"], out, indent)
    elif tag == "dt":
        text = _inline(node, depth).strip()
        if text:
            out.extend([indent + f"**{text}**", ""])
    else:  # p, div, section, dd, li outside a list, details, figure...
        _blocks(node, out, indent, depth)


def _quote(lines: list[str], out: list[str], indent: str) -> None:
    out.extend(indent + ("> " + line if line else ">") for line in lines)
    out.append("")


def _admonition(node: Any, title: Any, out: list[str], indent: str, depth: int) -> None:
    """A note, tip or warning as a quote under its bold title, so it reads as set apart and
    no cut falls between the title and what it says."""
    heading = _SPACE.sub(" ", _inline(title, depth)).strip()
    title.decompose()
    inner: list[str] = []
    _blocks(node, inner, "", depth)
    _quote([f"**{heading}**", "", *_trim(inner)] if heading else _trim(inner), out, indent)


def _heading(level: int, text: str, anchor: str | None, out: list[str], indent: str) -> None:
    text = _SPACE.sub(" ", text).strip()
    if text:
        mark = _ID_MARK + anchor if anchor else ""
        out.extend([indent + "#" * level + " " + text + mark, ""])


def _heading_id(node: Any) -> str | None:
    """A heading's own id, else (as Sphinx writes them) the id of the section it opens, else
    the id of an element inside it (`<h2><a id="x"></a>Title</h2>`). Empty ids are none."""
    anchor = (node.attributes.get("id") or "").strip()
    parent = node.parent
    if not anchor and parent is not None and parent.tag == "section":
        anchor = (parent.attributes.get("id") or "").strip()
    if not anchor:
        inner = (n.attributes.get("id") for n in node.css("[id]"))
        anchor = next((a.strip() for a in inner if a and a.strip()), "")
    return anchor or None


def _is_signature(node: Any) -> bool:
    return "sig" in (node.attributes.get("class") or "").split()


def _signature_level(node: Any) -> int:
    """Sphinx nests a section per heading level; an object's signature is one level below its
    section, and a method's one below its class's."""
    sections = nested = 0
    parent = node.parent
    while parent is not None:
        if parent.tag == "section":
            sections += 1
        elif parent.tag == "dd":
            previous = parent.prev
            while previous is not None and previous.tag != "dt":
                previous = previous.prev
            nested += previous is not None and _is_signature(previous)
        parent = parent.parent
    return min(6, max(sections, 1) + 1 + nested)


def _field_list(node: Any, out: list[str], indent: str, depth: int) -> None:
    """`**Parameters:**` followed at once by its items, so no cut falls between them."""
    label = ""
    for child in node.iter():
        if child.tag == "dt":
            label = _SPACE.sub(" ", _inline(child, depth + 1)).strip()
        elif child.tag == "dd":
            inner: list[str] = []
            _blocks(child, inner, "", depth + 1)
            inner = _trim(inner)
            name = f"**{label.rstrip(':').strip()}:**" if label else ""
            if len(inner) == 1 and not inner[0].startswith(("- ", "```")):
                inner = [f"{name} {inner[0]}".strip()]  # `**Returns:** The slope.`
            elif name:
                inner.insert(0, name)
            out.extend(indent + line if line else "" for line in inner)
            out.append("")
            label = ""


def _flat(node: Any) -> str:
    """All the text under `node`, for content nested too deep to walk."""
    return node.text(deep=True, separator=" ") or ""


def _inline(node: Any, depth: int) -> str:
    """Inline text with code spans, emphasis and link text; permalink glyphs dropped."""
    if node is None:
        return ""
    if node.tag == "-text":
        return _text(node)
    if node.tag == "br":
        return "\n"
    if node.tag == "img":
        return node.attributes.get("alt") or ""
    if node.tag == "code":  # a code span is literal: markup inside it goes, nothing is escaped
        code = _SPACE.sub(" ", node.text(deep=True) or "").strip()
        tick = "``" if "`" in code else "`"
        return f"{tick}{code}{tick}" if code else ""
    if depth > MAX_NESTING:
        return _flat(node)
    parts: list[str] = []
    child = node.child
    while child is not None:
        parts.append(_inline(child, depth + 1))
        child = child.next
    text = "".join(parts)
    if node.tag == "a" and text.strip() in _PERMALINK_GLYPHS:
        return ""
    if node.tag in ("strong", "b") and text.strip():
        return f"**{text.strip()}**"
    if node.tag in ("em", "i") and text.strip():
        return f"*{text.strip()}*"
    return text


# Text that markdown would read as markup: `*` (emphasis) and `<` opening a tag (rustdoc's
# `impl<T> Vec<T>`, which a renderer, and a heading's title, would drop as an unknown tag).
_MARKUP_IN_TEXT = re.compile(r"\*|<(?=[A-Za-z/!?])")


def _text(node: Any) -> str:
    """A text node as markdown text: what would read as markup is backslash-escaped."""
    return _MARKUP_IN_TEXT.sub(lambda m: "\\" + m.group(), node.text_content or "")


def _code_block(pre: Any, out: list[str], indent: str) -> None:
    """A fenced block; a `<pre>` holding several `<code>`s (Node's docs: the same example as
    ES module and as CommonJS) gives a block for each, never the two glued together."""
    codes = [c for c in _children(pre) if c.tag == "code"]
    for part in codes if len(codes) > 1 else [pre]:
        code = _code_text(part)
        if code.strip():
            _fence(code, _code_language(part, pre), out, indent)


def _children(node: Any) -> list[Any]:
    children, child = [], node.child
    while child is not None:
        children.append(child)
        child = child.next
    return children


def _code_text(node: Any) -> str:
    lines = [n.text(deep=True) for n in node.css(".token-line")]  # Docusaurus: a line each
    return ("\n".join(lines) if lines else _pre_text(node)).strip("\n")


def _code_language(node: Any, pre: Any) -> str:
    """The language a class names on the code, the <pre> or their wrappers; "" for none."""
    code = node if node.tag == "code" else pre.css_first("code")
    around = _table_around(pre) or pre  # code beside its line numbers: the table wraps it
    for candidate in (code, pre, around.parent, around.parent and around.parent.parent):
        if candidate is None:
            continue
        match = _LANGUAGE.search(candidate.attributes.get("class") or "")
        if match:
            language = match.group(1).lower()
            return "" if language in NO_LANGUAGE else language
    return ""


def _table_around(node: Any) -> Any | None:
    """The table whose cell holds `node`, a few levels up at most (Pygments' highlighttable)."""
    parent = node.parent
    for _ in range(5):
        if parent is None:
            return None
        if parent.tag == "table":
            return parent
        parent = parent.parent
    return None


def _fence(code: str, language: str, out: list[str], indent: str) -> None:
    fence = "```"
    while fence in code:
        fence += "`"
    out.extend([indent + fence + language, *(indent + line for line in code.split("\n")),
                indent + fence, ""])  # fmt: skip


def _pre_text(node: Any) -> str:
    """Text of a <pre>, with <br> as line breaks."""
    parts: list[str] = []
    for child in node.traverse(include_text=True):
        if child.tag == "-text":
            parts.append(child.text_content or "")
        elif child.tag == "br":
            parts.append("\n")
    return "".join(parts)


def _list(node: Any, out: list[str], indent: str, depth: int, *, ordered: bool) -> None:
    """Items as the page numbers them: `<ol start>`, `reversed` (counting down from the
    number of items) and an item's own `value`, from which the next ones count on."""
    items = [item for item in node.iter() if item.tag == "li"]
    step = -1 if "reversed" in node.attributes else 1
    start = _html_integer(node.attributes.get("start"))
    number = start if start is not None else (len(items) if step < 0 else 1)
    for item in items:
        value = _html_integer(item.attributes.get("value")) if ordered else None
        number = number if value is None else value
        marker = f"{number}. " if ordered else "- "
        number += step
        inner: list[str] = []
        _blocks(item, inner, "", depth + 1)
        body = [line for line in inner if line.strip()]  # tight lists
        if not body:
            continue
        out.append(indent + marker + body[0].lstrip())
        pad = indent + " " * len(marker)
        out.extend(pad + line if line else "" for line in body[1:])
    out.append("")


_HTML_INTEGER = re.compile(r"[ \t\n\f\r]*([+-]?[0-9]{1,9})")


def _html_integer(text: str | None) -> int | None:
    """An attribute read as HTML reads integers (`" 4"`, `"4th"` -> 4; `"junk"` -> None),
    at most nine digits, as a markdown list number may have."""
    match = _HTML_INTEGER.match(text or "")
    return int(match.group(1)) if match else None


# What a markdown table cell cannot hold: a table with one of these in a cell lays a page out
# (DocBook's Q and A, a code sample beside its text), it does not tabulate data.
_LAYOUT_CELL = ", ".join(f"{cell} {inner}" for cell in ("td", "th")
                         for inner in ("pre", "table", *_HEADINGS))  # fmt: skip


def _table(node: Any, out: list[str], indent: str, depth: int) -> None:
    """A markdown table; a layout table (`role=presentation`, or a cell that holds a code
    block, a heading or a table) reads as its cells' blocks, row by row."""
    if node.attributes.get("role") in ("presentation", "none") or node.css_first(_LAYOUT_CELL):
        for row in _own_rows(node):
            for cell in row.iter():
                if cell.tag in ("td", "th"):
                    _blocks(cell, out, indent, depth + 1)
        return
    rows = []
    for row in node.css("tr"):
        cells = [
            _SPACE.sub(" ", _inline(cell, depth + 1)).strip().replace("|", "\\|")
            for cell in row.iter()
            if cell.tag in ("td", "th")
        ]
        if cells:
            rows.append(cells)
    if not rows:
        return
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    out.append(indent + "| " + " | ".join(rows[0]) + " |")
    out.append(indent + "|" + "---|" * width)
    out.extend(indent + "| " + " | ".join(r) + " |" for r in rows[1:])
    out.append("")


def _own_rows(table: Any) -> list[Any]:
    """The table's rows, not those of a table inside one of its cells."""
    rows = []
    for child in table.iter():
        if child.tag == "tr":
            rows.append(child)
        elif child.tag in ("thead", "tbody", "tfoot"):
            rows.extend(row for row in child.iter() if row.tag == "tr")
    return rows


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return lines
