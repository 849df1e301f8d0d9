"""Which of several pages with the same text to keep: the one a reader should land on.

In this order: the page that an in-scope `rel=canonical` of the group names; then a path without
a version segment (`/docs/intro/` over `/docs/1.1/intro/`; `latest` and `stable` count as
unversioned); then the highest version; then URL order. The others are reported as duplicates
of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar
from urllib.parse import urlsplit

from flatten.hashing import sha256_hex

# A version segment: 1, v2, 1.1, 2.0.3, 3.x, 1.1-rc1 ...
_VERSION = re.compile(r"v?(\d+(?:\.(?:\d+|x))*)(?:[-.]?(?:rc|beta|alpha|a|b|dev|post)\d*)?", re.I)
_CURRENT = frozenset({"latest", "stable", "current"})


class _Page(Protocol):
    @property
    def url(self) -> str: ...
    @property
    def markdown(self) -> str: ...
    @property
    def canonical(self) -> str | None: ...


P = TypeVar("P", bound=_Page)


def version_of(url: str) -> tuple[int, ...] | None:
    """The version a URL's path names (its last version segment), or None when unversioned."""
    found = None
    for segment in urlsplit(url).path.split("/"):
        if segment.lower() in _CURRENT:
            return None
        match = _VERSION.fullmatch(segment)
        if match:
            found = tuple(int(p) if p.isdigit() else 0 for p in match.group(1).split("."))
    return found


def _rank(page: _Page, named: set[str]) -> tuple[int, int, tuple[int, ...], str]:
    version = version_of(page.url)
    # Higher versions first: parts padded (1.1 is 1.1.0) and negated.
    newest_first = tuple(-p for p in (*version, *[0] * (8 - len(version)))[:8]) if version else ()
    return (page.url not in named, version is not None, newest_first, page.url)


def without_duplicates(pages: Sequence[P], skip: Callable[[str, str, str], None]) -> list[P]:
    """Pages in URL order, one per text; `skip(url, "duplicate", detail)` for each other."""
    groups: dict[str, list[P]] = {}
    for page in pages:
        groups.setdefault(sha256_hex(page.markdown), []).append(page)
    kept = []
    for group in groups.values():
        named = {page.canonical for page in group if page.canonical}
        winner, *others = sorted(group, key=lambda page: _rank(page, named))
        kept.append(winner)
        for other in sorted(others, key=lambda page: page.url):
            skip(other.url, "duplicate", f"same text as {winner.url}")
    return sorted(kept, key=lambda page: page.url)
