"""The text embedded for a slice: a template over the slice and where it sits in its document.

A slice alone ("Set `timeout=None` to wait forever.") rarely says what it is about; its page
title and heading path do. So by default the embedded text starts with a context line (the
document's title and breadcrumb; the path first for code) and then the content. The template is
part of the vector identity: changing it re-embeds the store (`--reindex`), and the vector key
is the hash of the rendered text, so an unchanged slice keeps its vector.

Placeholders: `{text}` (required), `{title}` (the slice's title), `{doc_title}`, `{breadcrumb}`
(the heading path joined with " > "), `{path}` (the document's source), `{context}` (below).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flatten.record import SECTION_SEPARATOR

DEFAULT_DOCUMENT_TEMPLATE = "{context}\n\n{text}"
PLACEHOLDERS = ("text", "title", "doc_title", "breadcrumb", "path", "context")
# Kinds whose document title is a path or a first symbol, not a page title: the path leads.
CODE_KINDS = frozenset({"code", "terraform", "yaml", "shell"})

_PLACEHOLDER = re.compile(r"\{(\w*)\}")


@dataclass(frozen=True)
class SliceText:
    """A slice's content and the names around it, as the store keeps them."""

    text: str
    title: str = ""
    doc_title: str = ""
    section: tuple[str, ...] = ()
    path: str = ""
    kind: str | None = None

    def context(self) -> str:
        """Document title (the path for code), then the breadcrumb, then the slice's title;
        each name once (a page's H1 is often its title and the breadcrumb's first step)."""
        lead = self.path if self.kind in CODE_KINDS else (self.doc_title or self.path)
        names: list[str] = []
        for name in (lead, *self.section, self.title):
            name = " ".join(name.split())
            if name and name.casefold() not in {n.casefold() for n in names}:
                names.append(name)
        return SECTION_SEPARATOR.join(names)


def template_problem(template: str) -> str | None:
    """Why `template` cannot be used, or None."""
    names = _PLACEHOLDER.findall(template)
    unknown = sorted({n for n in names if n not in PLACEHOLDERS})
    if unknown:
        return f"unknown placeholder {{{unknown[0]}}} (known: {', '.join(PLACEHOLDERS)})"
    if "text" not in names:
        return "must contain {text}, the slice's content"
    return None


def render(template: str, piece: SliceText) -> str:
    """`template` with its placeholders filled; one pass, so a title holding `{text}` stays."""
    values = {
        "text": piece.text, "title": piece.title, "doc_title": piece.doc_title,
        "breadcrumb": SECTION_SEPARATOR.join(piece.section), "path": piece.path,
    }  # fmt: skip

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "context":
            return piece.context()
        return values.get(name, match.group(0))

    return _PLACEHOLDER.sub(fill, template)
