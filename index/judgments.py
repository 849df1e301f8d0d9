"""Relevance judgments resolved against a store: which documents or slices each judged id names.

A judged id is tried, in order, as
1. a document: a source of the store (`docs/advanced/timeouts.md`, a page URL, a BEIR `_id`);
2. a slice: a token `<source>#<ordinal>` of the store;
3. a page (only for a question file's `expect` entries): a path without extension, matched by
   `page_matches` below, so one list serves a folder of markdown and the same docs crawled.
An id that names nothing is kept, unmatched: it stays relevant (never found), so the scores say
the index lacks it, and the caller warns with the list.

Units are what the metrics rank: `doc` (a document is relevant if it or any of its slices is
judged; its gain is the best of theirs) or `slice` (a judged document stands for each of its
slices, so finding one slice of a long page is not all of it).
"""

from __future__ import annotations

import posixpath
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from flatten.record import split_id
from index.store import Store

Unit = tuple[str, ...]  # (corpus, source) for a document, (corpus, source, ordinal) for a slice
GROUPS = ("doc", "slice")
UNMATCHED = "\0unmatched"  # the source of a judged id that names nothing: never ranked
_INDEX_PAGES = ("index.html", "index.htm")
_HTML = (".html", ".htm")


def page_path(source: str) -> str:
    """A document's page path: a file's source without its extension (`docs/x.md` ->
    `docs/x`); a crawled page's URL path without slashes, `index.html` or `.html`
    (`https://host/x/` -> `x`, `https://host/` -> ``)."""
    if "://" in source:
        path = unquote(urlsplit(source).path)
        for name in _INDEX_PAGES:
            if path.endswith("/" + name):
                path = path[: -len(name)]
        for suffix in _HTML:
            path = path.removesuffix(suffix)
        return path.strip("/")
    root, extension = posixpath.splitext(source)
    return root if extension and "/" not in extension else source


def page_names(source: str) -> tuple[str, ...]:
    """The names a document answers to: its page path, and `<folder>/index` for a folder's page
    (`/x/` and `x/index.md` are both the page of `x`), so `index` names a docs root."""
    path = page_path(source)
    names = [path]
    if path == "index" or path.endswith("/index"):
        names.append(path.removesuffix("index").rstrip("/"))
    elif "://" in source:
        names.append(f"{path}/index" if path else "index")
    return tuple(names)


def page_matches(expected: str, source: str) -> int | None:
    """How many path segments come before `expected` in `source`'s page names when one of them
    ends with it on whole segments (`advanced/timeouts` in `docs/advanced/timeouts.md`: 1; in
    `/advanced/timeouts/`: 0); None when it does not match. Case-sensitive."""
    wanted = page_path(expected.strip("/"))
    if not wanted:
        return None
    best: int | None = None
    for name in page_names(source):
        if name == wanted:
            depth = 0
        elif name.endswith("/" + wanted):
            depth = name[: -len(wanted) - 1].count("/") + 1
        else:
            continue
        best = depth if best is None else min(best, depth)
    return best


@dataclass
class Resolved:
    """Judgments by unit, and what the judged ids turned out to name."""

    group: str
    relevant: dict[str, dict[Unit, float]] = field(default_factory=dict)  # query id -> unit -> gain
    named: Counter[str] = field(default_factory=Counter)  # "documents" / "slices" / "pages" -> ids
    unmatched: list[tuple[str, str]] = field(default_factory=list)  # (query id, judged id)


def resolve(
    store: Store,
    judgments: dict[str, dict[str, float]],
    group: str,
    *,
    pages: dict[str, set[str]] | None = None,
    corpus: str | None = None,
) -> Resolved:
    """`judgments` (query id -> judged id -> gain) as units of `group`. `pages` names, per query,
    the judged ids that may also match by page path (a question file's `expect` entries)."""
    index = _Documents.read(store, corpus)
    resolved = Resolved(group)
    for qid, judged in judgments.items():
        units: dict[Unit, float] = {}
        for raw, gain in judged.items():
            found, kind = index.find(raw, page=raw in (pages or {}).get(qid, set()))
            if not found:
                resolved.unmatched.append((qid, raw))
                found = [("", UNMATCHED, raw)]  # relevant, never ranked
            else:
                resolved.named[kind] += 1
            for unit in found:
                for each in index.units(unit, group):
                    units[each] = max(units.get(each, gain), gain)
        resolved.relevant[qid] = units
    return resolved


@dataclass
class _Documents:
    """The store's documents as (corpus, source), read once per evaluation; slices looked up."""

    store: Store
    documents: dict[tuple[str, str], int]  # -> document id
    by_source: dict[str, list[tuple[str, str]]]

    @classmethod
    def read(cls, store: Store, corpus: str | None) -> _Documents:
        rows = store.db.execute(
            "SELECT k.name, d.source, d.id FROM documents d JOIN corpora k "
            "ON k.id = d.corpus_id WHERE ? IS NULL OR k.name = ? ORDER BY k.name, d.source",
            (corpus, corpus),
        ).fetchall()
        by_source: dict[str, list[tuple[str, str]]] = {}
        for name, source, _ in rows:
            by_source.setdefault(source, []).append((name, source))
        return cls(store, {(name, source): doc_id for name, source, doc_id in rows}, by_source)

    def find(self, raw: str, *, page: bool) -> tuple[list[Unit], str]:
        """The documents or slices `raw` names, and which kind of name it was."""
        if raw in self.by_source:
            return list(self.by_source[raw]), "documents"
        token = split_id(raw)
        if token is not None and token[0] in self.by_source:
            source, ordinal = token
            found = [(c, s, str(ordinal)) for c, s in self.by_source[source]
                     if ordinal in self._ordinals((c, s))]  # fmt: skip
            if found:
                return found, "slices"
        if page:
            return self._pages(raw), "pages"
        return [], ""

    def _ordinals(self, document: tuple[str, str]) -> list[int]:
        return [row[0] for row in self.store.db.execute(
            "SELECT ordinal FROM chunks WHERE document_id = ? ORDER BY ordinal",
            (self.documents[document],))]  # fmt: skip

    def _pages(self, expected: str) -> list[Unit]:
        """Documents whose page path ends with `expected`; in each corpus only those with the
        fewest segments before it (`quickstart`: `docs/quickstart.md`, not
        `docs/ja/quickstart.md`)."""
        best: dict[str, tuple[int, list[Unit]]] = {}
        for corpus, source in self.documents:
            depth = page_matches(expected, source)
            if depth is None:
                continue
            fewest, found = best.get(corpus, (depth, []))
            if depth < fewest:
                best[corpus] = (depth, [(corpus, source)])
            elif depth == fewest:
                best[corpus] = (depth, [*found, (corpus, source)])
        return [unit for _, found in best.values() for unit in found]

    def units(self, unit: Unit, group: str) -> list[Unit]:
        """`unit` as units of `group`: a slice's document, or a document's slices."""
        if unit[1] == UNMATCHED:
            return [unit]
        if group == "doc":
            return [unit[:2]]
        if len(unit) == 3:
            return [unit]
        corpus, source = unit
        return [(corpus, source, str(n)) for n in self._ordinals((corpus, source))]


def ranked_units(hits: list[tuple[str, str, int]], group: str) -> list[Unit]:
    """Ranked slices (corpus, source, ordinal) as units of `group`, best first; a document
    ranks where its first slice does."""
    if group == "slice":
        return [(corpus, source, str(ordinal)) for corpus, source, ordinal in hits]
    return list(dict.fromkeys((corpus, source) for corpus, source, _ in hits))
