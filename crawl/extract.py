"""HTML page -> its main content as markdown (selectolax's Lexbor parser; no network).

The main container is found by the known documentation generators first, then `article`,
`[role=main]` and `main`, then the body. Navigation, headers, footers, sidebars, scripts,
hidden elements, permalink glyphs, "edit this page" links and cookie banners are removed.
Headings keep the page's own ids as `{#id}`, which the markdown slicer turns into anchors.
Code blocks keep their language and their line breaks (also when each line is its own element,
as Docusaurus renders them).

Hostile pages stay bounded: a page that may nest deeper than the parser handles in bounded time
is refused before parsing (`Unextractable`), and the walk below turns what nests deeper than
MAX_NESTING into plain text instead of recursing further.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from crawl.nesting import nests_deeper_than
from crawl.urls import resolve

# Below this many `<`, even the worst nesting parses in well under a second; above it, a page
# whose elements may nest deeper than MAX_PARSE_DEPTH is refused (Lexbor's tree builder takes
# time in tags x depth: 200,000 nested <div>s take two minutes).
SMALL_PAGE_TAGS = 20_000
MAX_PARSE_DEPTH = 512
# Element levels the markdown walk descends (each one is a few Python frames); deeper content
# is kept as plain text.
MAX_NESTING = 64

MAIN_CONTAINERS = (
    "article.md-content__inner",  # MkDocs Material (never its <main>: it holds both sidebars)
    ".theme-doc-markdown",  # Docusaurus
    "div[itemprop=articleBody]",  # Sphinx, Read the Docs
    "#furo-main-content",  # Furo
    "article.bd-article",  # pydata-sphinx-theme
    ".td-content",  # Docsy
    "div.body[role=main]",
    "div.body",  # Sphinx basic
    "article",
    "[role=main]",
    "main",
)
NOISE = (
    "nav, header, footer, aside, script, style, noscript, template, form, button, iframe, svg, "
    "[hidden], [aria-hidden=true], .headerlink, a.anchor, .hash-link, .md-source-file, "
    ".md-content__button, .theme-edit-this-page, .edit-this-page, .editLink, "
    ".cookie-banner, #cookie-banner, .cookie-consent, .md-sidebar, .sphinxsidebar, .toc, "
    ".breadcrumbs, .wy-breadcrumbs, .theme-doc-toc-mobile, .pagination-nav, .md-footer"
)
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


def extract(html: str, url: str) -> Extracted:
    if html.count("<") > SMALL_PAGE_TAGS and nests_deeper_than(html, MAX_PARSE_DEPTH):
        raise Unextractable("too-deep", f"elements may nest deeper than {MAX_PARSE_DEPTH}")
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = _SPACE.sub(" ", title_node.text()).strip() if title_node else ""
    links = []
    for anchor in tree.css("a[href]"):
        target = resolve(url, anchor.attributes.get("href") or "")
        if target:
            links.append(target)
    canonical_node = tree.css_first("link[rel=canonical]")
    canonical = None
    if canonical_node and canonical_node.attributes.get("href"):
        canonical = resolve(url, canonical_node.attributes["href"] or "")
    main = next((n for n in (tree.css_first(s) for s in MAIN_CONTAINERS) if n is not None), None)
    main = main or tree.body
    if main is None:
        return Extracted(title, "", links, canonical)
    for noise in main.css(NOISE):
        noise.decompose()
    lines: list[str] = []
    _blocks(main, lines, "", 0)
    markdown = "\n".join(lines).strip() + "\n"
    markdown = re.sub(r"\n{3,}", "\n\n", markdown)
    if not title:
        h1 = main.css_first("h1")
        title = _inline(h1, 0).strip() if h1 else url
    return Extracted(title, markdown, list(dict.fromkeys(links)), canonical)


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
            inline.append(child.text_content or "")
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
        text = _inline(node, depth).strip()
        if text:
            anchor = node.attributes.get("id")
            suffix = f" {{#{anchor}}}" if anchor and re.fullmatch(r"[\w\-:.]+", anchor) else ""
            out.extend([indent + "#" * _HEADINGS[tag] + " " + text + suffix, ""])
    elif tag == "pre":
        _code_block(node, out, indent)
    elif tag in ("ul", "ol"):
        _list(node, out, indent, depth, ordered=tag == "ol")
    elif tag == "table":
        _table(node, out, indent, depth)
    elif tag == "blockquote":
        inner: list[str] = []
        _blocks(node, inner, "", depth)
        out.extend(indent + ("> " + line if line else ">") for line in _trim(inner))
        out.append("")
    elif tag == "hr":
        out.extend([indent + "---", ""])
    elif tag == "dt":
        text = _inline(node, depth).strip()
        if text:
            out.extend([indent + f"**{text}**", ""])
    else:  # p, div, section, dd, li outside a list, details, figure...
        _blocks(node, out, indent, depth)


def _flat(node: Any) -> str:
    """All the text under `node`, for content nested too deep to walk."""
    return node.text(deep=True, separator=" ") or ""


def _inline(node: Any, depth: int) -> str:
    """Inline text with code spans, emphasis and link text; permalink glyphs dropped."""
    if node is None:
        return ""
    if node.tag == "-text":
        return node.text_content or ""
    if node.tag == "br":
        return "\n"
    if node.tag == "img":
        return node.attributes.get("alt") or ""
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
    if node.tag == "code" and text.strip():
        tick = "``" if "`" in text else "`"
        return f"{tick}{text.strip()}{tick}"
    if node.tag in ("strong", "b") and text.strip():
        return f"**{text.strip()}**"
    if node.tag in ("em", "i") and text.strip():
        return f"*{text.strip()}*"
    return text


def _code_block(pre: Any, out: list[str], indent: str) -> None:
    lines = [n.text(deep=True) for n in pre.css(".token-line")]  # Docusaurus: a line each
    code = "\n".join(lines) if lines else _pre_text(pre)
    code = code.strip("\n")
    language = ""
    for candidate in (pre.css_first("code"), pre, pre.parent, pre.parent and pre.parent.parent):
        if candidate is None:
            continue
        match = _LANGUAGE.search(candidate.attributes.get("class") or "")
        if match:
            language = match.group(1)
            break
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
    number = 1
    for item in node.iter():
        if item.tag != "li":
            continue
        marker = f"{number}. " if ordered else "- "
        inner: list[str] = []
        _blocks(item, inner, "", depth + 1)
        body = [line for line in inner if line.strip()]  # tight lists
        if not body:
            continue
        out.append(indent + marker + body[0].lstrip())
        pad = indent + " " * len(marker)
        out.extend(pad + line if line else "" for line in body[1:])
        number += 1
    out.append("")


def _table(node: Any, out: list[str], indent: str, depth: int) -> None:
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


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return lines
