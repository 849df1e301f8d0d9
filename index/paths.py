"""What a document's path says beyond its name: its words, and the language of a translated
tree. Pure functions of a `source` (a relative path, or a crawled page's URL)."""

from __future__ import annotations

import itertools
import re

from index.text import split_name

_SEGMENT = re.compile(r"[^/\\]+")
# Folders whose child names a language in the translated-tree layouts: MkDocs and most
# projects' `docs/<lang>/`, Docusaurus's `i18n/<lang>/`, Hugo's `content/<lang>/`.
LOCALE_PARENTS = frozenset({"docs", "i18n", "content"})
# A language tag as these layouts write it: ISO 639-1, optionally a script or region
# (`ja`, `zh-hant`, `pt-BR`, `zh_CN`, `es-419`).
_TAG = re.compile(r"([a-z]{2})(?:[-_]([a-z]{4}|[a-z]{2}|\d{3}))?", re.IGNORECASE)
_ISO_639_1_CODES = (
    "aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu "
    "cv cy da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi "
    "ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks "
    "ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl "
    "nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl "
    "sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve "
    "vi vo wa wo xh yi yo za zh zu"
)
ISO_639_1 = frozenset(_ISO_639_1_CODES.split())


def segments(source: str) -> list[str]:
    """The path segments of a source; for a URL, those of its path (not the host)."""
    if "://" in source:
        path = source.split("://", 1)[1].split("?", 1)[0].split("#", 1)[0]
        return _SEGMENT.findall(path)[1:]
    return _SEGMENT.findall(source)


def path_words(source: str) -> list[str]:
    """The words of a path, lowercased, in order, for matching a query against it: segments
    split at punctuation and camelCase, the file's extension left out
    (`docs/advanced/text-encodings.md` -> docs advanced text encodings;
    `kubectl-argo-rollouts_abort.md` -> kubectl argo rollouts abort)."""
    parts = segments(source)
    if parts and "." in parts[-1][1:]:
        parts[-1] = parts[-1].rsplit(".", 1)[0]
    out = []
    for segment in parts:
        out.extend(split_name(segment))
    return out


def document_fields(source: str, title: str | None) -> tuple[str, str]:
    """The `documents_fts` row of a document: its title and its path's words."""
    return title or "", " ".join(path_words(source))


def language_tag(segment: str) -> str | None:
    """`segment` as a lowercased language tag (`zh-hant`, `pt-br`), or None when it is none."""
    match = _TAG.fullmatch(segment)
    if match is None or match.group(1).lower() not in ISO_639_1:
        return None
    return segment.lower().replace("_", "-")


def locale_of(source: str) -> str | None:
    """The language a document of a translated tree is in, from its path: the tag after a
    `docs/`, `i18n/` or `content/` folder (`docs/ja/tutorial.md`, `i18n/fr/...`), or a crawled
    page's first path segment (`https://site/zh-hant/...`); None for an unmarked document."""
    parts = segments(source)
    if "://" in source:  # a folder: `/ja/` or `/ja/page/`, not a page named `/it`
        folder = len(parts) > 1 or source.split("?", 1)[0].split("#", 1)[0].endswith("/")
        return language_tag(parts[0]) if parts and folder else None
    for parent, child in itertools.pairwise(parts[:-1]):  # folders, never the file itself
        if parent.lower() in LOCALE_PARENTS and (tag := language_tag(child)):
            return tag
    return None
