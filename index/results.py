"""A chunk as the read commands report it: where it is and how to cite it, named in one place."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from index.citations import CitationRule, cite
from index.text import safe_display


@dataclass
class Located:
    source: str
    corpus: str
    ordinal: int
    title: str
    section: list[str]
    anchor: str | None
    start_line: int | None
    end_line: int | None
    citation: str | None  # the mapped citation, when a rule matched

    @property
    def token(self) -> str:
        """`<source>#<ordinal>`: the raw citation token, an index key."""
        return f"{self.source}#{self.ordinal}"

    def located_dict(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "source": self.source,
            "corpus": self.corpus,
            "ordinal": self.ordinal,
            "title": self.title,
            "section": self.section,
            "anchor": self.anchor,
            "startLine": self.start_line,
            "endLine": self.end_line,
            "citation": self.citation,
        }


def located_fields(
    rules: list[CitationRule],
    source: str,
    corpus: str,
    ordinal: int,
    title: str,
    section: str | None,
    anchor: str | None,
    start_line: int | None,
    end_line: int | None,
) -> dict[str, Any]:
    """The `Located` fields of a chunk row: display-safe title, parsed section, its citation."""
    return {
        "source": source,
        "corpus": corpus,
        "ordinal": ordinal,
        "title": safe_display(title),
        "section": json.loads(section) if section else [],
        "anchor": anchor,
        "start_line": start_line,
        "end_line": end_line,
        "citation": cite(
            rules, source, corpus=corpus, ordinal=ordinal, heading=title, anchor=anchor
        ),
    }
