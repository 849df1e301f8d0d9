"""Heading anchors as the renderers make them, so a citation's `#anchor` lands on the heading.

- `GithubSlugger`: GitHub's markdown anchors (the github-slugger algorithm): lowercase, drop
  punctuation, symbols and control characters except `-` and `_`, each space becomes `-`, nothing
  collapsed or trimmed; a repeated slug in one document gets `-1`, `-2`, ...
- `docutils_id`: the ids docutils/Sphinx give reST sections.
- `asciidoctor_id`: Asciidoctor's default section ids (`_section_title`).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Unicode categories github-slugger keeps: letters, marks, decimal and letter numbers, connector
# punctuation (`_`). Everything else goes, except the ASCII space and hyphen-minus.
_KEPT_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "Pc"})


@lru_cache(maxsize=4096)
def _kept(char: str) -> bool:
    return char in " -" or unicodedata.category(char) in _KEPT_CATEGORIES


# The ASCII characters github-slugger drops, deleted by one translate (most headings are ASCII).
_DROP_ASCII = str.maketrans("", "", "".join(c for c in map(chr, range(128)) if not _kept(c)))


def github_slug(text: str) -> str:
    lowered = text.lower()
    if lowered.isascii():
        return lowered.translate(_DROP_ASCII).replace(" ", "-")
    return "".join(c for c in lowered if _kept(c)).replace(" ", "-")


class GithubSlugger:
    """Stateful per document: the same heading text twice gives `x`, then `x-1`."""

    def __init__(self) -> None:
        self._occurrences: dict[str, int] = {}

    def slug(self, text: str) -> str:
        base = github_slug(text)
        result = base
        while result in self._occurrences:
            self._occurrences[base] += 1
            result = f"{base}-{self._occurrences[base]}"
        self._occurrences[result] = 0
        return result


class DocutilsSlugger:
    """docutils `make_id`; a repeated title gets docutils' own auto ids `id1`, `id2`, ..."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._auto = 0

    def slug(self, text: str) -> str:
        result = docutils_id(text)
        while result in self._seen:
            self._auto += 1
            result = f"id{self._auto}"
        self._seen.add(result)
        return result


_NOT_ID = re.compile(r"[^a-z0-9]+")
_NO_LETTER_YET = re.compile(r"^[^a-z]+")


def docutils_id(text: str) -> str:
    # NFKD leaves ASCII as it is: only other text is decomposed and its accents dropped.
    if text.isascii():
        ascii_text = text
    else:
        ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    ident = _NOT_ID.sub("-", ascii_text.lower()).strip("-")
    ident = _NO_LETTER_YET.sub("", ident)
    return ident or "section"


class AsciidoctorSlugger:
    """Asciidoctor's defaults: idprefix `_`, idseparator `_`, duplicates get `_2`, `_3`."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def slug(self, text: str) -> str:
        base = asciidoctor_id(text)
        result, n = base, 1
        while result in self._seen:
            n += 1
            result = f"{base}_{n}"
        self._seen.add(result)
        return result


def asciidoctor_id(text: str) -> str:
    plain = re.sub(r"<[^>]+>|&\w+;", "", text).lower()
    ident = re.sub(r"[^\w\-.]+", "_", plain, flags=re.UNICODE)
    ident = re.sub(r"[_\-.]+", "_", ident).strip("_")
    return "_" + ident
