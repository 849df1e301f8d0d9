"""Where a query looks: the join from a slice to its document and corpus, and the filters (corpus,
path prefixes, kinds, language of a translated tree), written once for every query module.

Aliases: `c` chunks, `d` documents, `k` corpora. A corpus or kind that does not exist is an
error naming the ones that do: an empty answer would read as "searched, nothing there".

Language: documents of a translated tree carry the language their path names (`docs/ja/...`,
`i18n/fr/...`: see `index.paths.locale_of`); unmarked documents (README, CHANGELOG, the source
language of an `i18n/` layout) have none and are always in scope. By default a query looks at
the language the corpus has most documents in (unmarked documents counted as one language), so
translations do not fill the list beside the page they translate; `lang="all"` looks at every
language.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from index.errors import QueryError
from index.text import nfc

DOCUMENTS = "documents d JOIN corpora k ON k.id = d.corpus_id"
CHUNKS = "chunks c JOIN documents d ON d.id = c.document_id JOIN corpora k ON k.id = d.corpus_id"
# A filter as `scope_filter` and `corpus_filter` give it: `AND ...` SQL over `d` and `k`, and
# its parameters.
Filter = tuple[str, list[object]]
NAMED_CORPORA = 20  # an unknown-corpus error lists at most this many
ALL_LANGUAGES = "all"


@dataclass(frozen=True)
class Scope:
    """Which documents a query looks at. Empty tuples: no filter of that kind."""

    corpus: str | None = None  # only this corpus; None: all of them
    paths: tuple[str, ...] = ()  # sources starting with one of these (literally or in NFC)
    kinds: tuple[str, ...] = ()  # documents of one of these kinds (markdown, code, yaml, ...)
    lang: str | None = None  # None: the corpus's main language; "all": every language


def corpus_filter(db: sqlite3.Connection, corpus: str | None) -> tuple[str, list[object]]:
    """`AND k.name = ?` and its parameter for one corpus, nothing for all (None).

    `QueryError` (reason `unknown-corpus`) when the corpus is not in the index."""
    if corpus is None:
        return "", []
    if db.execute("SELECT 1 FROM corpora WHERE name = ?", (corpus,)).fetchone() is None:
        names = [n for (n,) in db.execute("SELECT name FROM corpora ORDER BY name")]
        shown = ", ".join(repr(n) for n in names[:NAMED_CORPORA])
        more = f" and {len(names) - NAMED_CORPORA} more" if len(names) > NAMED_CORPORA else ""
        there = f"the index has {shown}{more}" if names else "the index has no corpus yet"
        # Quoted, not repr'd: the output's cleaning must see the value itself to redact a secret.
        raise QueryError(f"no corpus '{corpus[:200]}' in the index ({there})",
                         reason="unknown-corpus", value=corpus)  # fmt: skip
    return "AND k.name = ?", [corpus]


def scope_filter(db: sqlite3.Connection, scope: Scope) -> tuple[str, list[object]]:
    """`AND ...` over `d` and `k` and its parameters: nothing when the scope is everything.

    `QueryError` for an unknown corpus (`unknown-corpus`) or kind (`unknown-kind`), or path
    prefixes no document's source starts with (`unknown-path`)."""
    sql, params = corpus_filter(db, scope.corpus)
    if scope.paths:
        paths = (*scope.paths, *composed_prefixes(db, scope.paths))
        if len(paths) == len(scope.paths):
            check_paths(db, scope.paths)
        # A prefix as a range, not LIKE: no wildcard in a path can widen it, and it is exact.
        ranges = " OR ".join("(d.source >= ? AND d.source < ?)" for _ in paths)
        sql += f" AND ({ranges})"
        for prefix in paths:
            params += [prefix, prefix + "\U0010ffff"]
    if scope.kinds:
        _check_kinds(db, scope.kinds)
        sql += f" AND d.kind IN ({', '.join('?' for _ in scope.kinds)})"
        params += list(scope.kinds)
    lang = language(db, scope)
    if lang == "":
        sql += " AND d.locale IS NULL"
    elif lang is not None:
        sql += " AND (d.locale IS NULL OR d.locale = ?)"
        params.append(lang)
    return sql, params


def language(db: sqlite3.Connection, scope: Scope) -> str | None:
    """The language a scope looks at: a tag, "" for the unmarked documents only, or None for no
    language filter (every language asked, or no document of the index is marked)."""
    if scope.lang == ALL_LANGUAGES:
        return None
    if scope.lang:
        return _known_language(db, scope.lang.lower().replace("_", "-"))
    if db.execute("SELECT 1 FROM documents WHERE locale IS NOT NULL LIMIT 1").fetchone() is None:
        return None  # the usual case, answered by the partial index at once
    in_corpus, params = corpus_filter(db, scope.corpus)
    counts = db.execute(
        f"SELECT coalesce(d.locale, ''), count(*) AS n FROM {DOCUMENTS} WHERE 1 {in_corpus} "
        "GROUP BY 1 ORDER BY n DESC, 1 LIMIT 1",
        params,
    ).fetchone()
    return counts[0] if counts else None


def _known_language(db: sqlite3.Connection, lang: str) -> str:
    if db.execute("SELECT 1 FROM documents WHERE locale = ? LIMIT 1", (lang,)).fetchone():
        return lang
    known = [t for (t,) in db.execute("SELECT DISTINCT locale FROM documents WHERE locale "
                                      "IS NOT NULL ORDER BY 1")]  # fmt: skip
    there = f"languages: {', '.join(known)}" if known else "no document is in a translated tree"
    raise QueryError(f"no document in language '{lang[:200]}' in the index ({there}; "
                     f"'{ALL_LANGUAGES}' for every language)", reason="unknown-lang",
                     value=lang)  # fmt: skip


def known_sources(db: sqlite3.Connection, corpus: str | None = None) -> list[str]:
    """Every source of the index (of `corpus` when given), once, in order."""
    in_corpus, params = corpus_filter(db, corpus)
    rows = db.execute(
        f"SELECT DISTINCT d.source FROM {DOCUMENTS} WHERE 1 = 1 {in_corpus} ORDER BY d.source",
        params,
    ).fetchall()
    return [row[0] for row in rows]


def composed_prefixes(db: sqlite3.Connection, prefixes: tuple[str, ...]) -> list[str]:
    """`prefixes` as the sources that start with one of them only in Unicode NFC
    (`index.text.nfc`) spell them: a name committed from macOS (decomposed) under a prefix
    typed composed. Each is matched as a prefix, as stored, beside the given ones; most often
    there is none. The index is not read for a prefix that is ASCII and that some source starts
    with as stored (a decomposed name starts with the same ASCII; only a few singular characters
    compose to ASCII), so the usual prefix costs one indexed look-up."""
    wanted = []
    for prefix in prefixes:
        if (
            prefix.isascii()
            and db.execute(
                "SELECT 1 FROM documents WHERE source >= ? AND source < ? LIMIT 1",
                (prefix, prefix + "\U0010ffff"),
            ).fetchone()
        ):
            continue
        wanted.append(prefix)
    if not wanted:
        return []
    given, composed = tuple(wanted), [nfc(p) for p in wanted]
    spelled = set()
    for source in known_sources(db):
        if source.startswith(given):
            continue
        whole = nfc(source)
        for target in composed:
            if whole.startswith(target):  # its shortest beginning that composes to the prefix
                spelled.add(next(source[:end] for end in range(1, len(source) + 1)
                                 if nfc(source[:end]).startswith(target)))  # fmt: skip
    return sorted(spelled)


def check_paths(db: sqlite3.Connection, paths: tuple[str, ...]) -> None:
    """Prefixes that no source starts with are a mistake, not a query with no answer: most often
    a site's relative path given for a crawled corpus, whose sources are whole URLs."""
    for prefix in paths:
        found = db.execute("SELECT 1 FROM documents WHERE source >= ? AND source < ? LIMIT 1",
                           (prefix, prefix + "\U0010ffff")).fetchone()  # fmt: skip
        if found:
            return
    # A source holding the first prefix somewhere shows how to write it; else any source.
    example = db.execute(
        "SELECT source FROM documents ORDER BY instr(source, ?) = 0, source LIMIT 1", (paths[0],)
    ).fetchone()
    like = f" (sources look like '{example[0][:200]}')" if example else " (the index is empty)"
    raise QueryError(f"no document's source starts with '{paths[0][:200]}'{like}",
                     reason="unknown-path", value=paths[0])  # fmt: skip


def _check_kinds(db: sqlite3.Connection, kinds: tuple[str, ...]) -> None:
    known = [k for (k,) in db.execute("SELECT DISTINCT kind FROM documents WHERE kind IS NOT NULL")]
    unknown = [k for k in kinds if k not in known]
    if unknown:
        there = ", ".join(sorted(known)) or "none yet"
        raise QueryError(f"no document of kind '{unknown[0][:200]}' in the index (kinds: {there})",
                         reason="unknown-kind", value=unknown[0])  # fmt: skip
