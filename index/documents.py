"""Read-side queries other than ranked search: enumerate, inspect and summarise the index.

Each returns plain dataclasses or dicts; the CLI and the MCP server only format them.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any
from urllib.parse import urlsplit

import re2

from flatten.errors import UsageError
from flatten.jsonform import json_field
from flatten.userinfo import strip_credentials
from index.citations import MAX_SPAN, CitationRule, Origin, cite, lines, link
from index.errors import QueryError
from index.lexical import stem
from index.results import LOCATED_COLUMNS, Located, located_fields, read_slice
from index.scope import (
    CHUNKS,
    DOCUMENTS,
    Scope,
    check_paths,
    composed_prefixes,
    corpus_filter,
    known_sources,
    scope_filter,
)
from index.store import Store
from index.suggest import ambiguous, same_name
from index.text import TOKEN, cjk_pieces, sources_as_shown
from index.textindex import CHUNK_COLUMNS, TextQuery, text_index

PAGE_CHARS = 12_000


@dataclass
class MatchedDocument:
    source: str
    corpus: str
    chunks: int  # how many of its chunks hold every word
    title: str | None = None


def match(
    store: Store,
    words: list[str],
    *,
    corpus: str | None = None,
    exact: bool = False,
    scope: Scope | None = None,
) -> list[MatchedDocument]:
    """Every document holding all the words somewhere (in any form, or `exact`ly), within
    `scope` (default: `corpus`, or all; the corpus's main language, see `index.scope`).

    `-word` excludes documents holding that word. Words are matched per document, not per
    chunk: a document with one word in its first section and another in its last is listed.
    """
    wanted = [w for w in words if not w.startswith("-") and w.strip()]
    unwanted = [w[1:] for w in words if w.startswith("-") and len(w) > 1]
    if not wanted:
        raise UsageError(
            "match needs at least one word that is not excluded with -", reason="bad-query"
        )
    in_corpus, params = scope_filter(store.db, scope or Scope(corpus))
    hits = [_documents_with(store, w, exact) for w in wanted]
    documents = set.intersection(*(set(h) for h in hits))
    for word in unwanted:
        documents -= set(_documents_with(store, word, exact))
    if not documents:
        return []
    rows = store.db.execute(
        f"SELECT d.id, d.source, k.name, d.title FROM {DOCUMENTS} "
        f"WHERE d.id IN (SELECT value FROM json_each(?)) {in_corpus} ORDER BY k.name, d.source",
        [json.dumps(sorted(documents)), *params],
    ).fetchall()
    return [
        MatchedDocument(source, name, max(h.get(doc_id, 0) for h in hits), title)
        for doc_id, source, name, title in rows
    ]


def _documents_with(store: Store, word: str, exact: bool) -> dict[int, int]:
    """Document id -> how many of its chunks hold the word."""
    pieces = cjk_pieces(word)
    if pieces is not None:
        # A word with CJK characters: each run as the phrase of its bigrams, which only the
        # stemmed index holds (in `parts`); porter leaves CJK as it is, so this is exact too.
        asked = tuple(dict.fromkeys(p for p, _ in pieces))
        query = TextQuery(asked, every=True, columns=CHUNK_COLUMNS)
        return text_index(store.db).documents_with(query)
    if exact:
        # The exact index keeps no positions: a word of several tokens (`aws_eks_cluster`)
        # matches chunks holding each of its tokens.
        query = TextQuery(tuple(TOKEN.findall(word) or [word]), every=True)
    else:
        query = TextQuery((word,), columns=CHUNK_COLUMNS)
    return text_index(store.db).documents_with(query, exact=exact)


@dataclass
class Word:
    word: str
    stem: str
    exact_documents: int  # documents holding this exact word
    any_form_documents: int  # documents holding any word with the same stem


def words(store: Store, pattern: str | None = None, *, limit: int = 100) -> list[Word]:
    """The vocabulary (exact words) matching a regular expression, most widespread first."""
    regex = vocabulary_pattern(pattern or ".")
    # The most widespread matching terms first (by chunk count, which fts5vocab keeps), so only
    # `limit` of them need the per-document counts below.
    text = text_index(store.db)
    candidates = [term for term in text.exact_terms() if regex.search(term)][:limit]
    out = []
    for term in candidates:
        exact = len(text.documents_with(TextQuery((term,)), exact=True))
        any_form = len(text.documents_with(TextQuery((term,), columns=("body",))))
        out.append(Word(term, stem(term), exact, any_form))
    out.sort(key=lambda w: (-w.exact_documents, w.word))
    return out[:limit]


_RE2 = re2.Options()
_RE2.log_errors = False  # a refused pattern is our usage error, not a line RE2 logs to stderr


def vocabulary_pattern(pattern: str) -> Any:
    """`pattern` compiled by RE2, which matches in time linear in the word: the pattern comes from
    whoever asks (a CLI user, an agent), and Python's `re` backtracks for minutes on `(a+)+$`
    over a long word. RE2 has no backreferences or lookaround; such a pattern is a usage error."""
    try:
        return re2.compile(pattern, _RE2)
    except re2.error as exc:
        why = exc.args[0] if exc.args else b""
        why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise UsageError(
            f"not a regular expression: {why}",
            reason="bad-query",
            hint="RE2 syntax: no backreferences (\\1) or lookaround ((?=...), (?<=...))",
        ) from exc


@dataclass
class SourceInfo:
    source: str
    corpus: str
    title: str | None
    chunks: int
    indexed_at: str
    citation: str | None


def sources(
    store: Store, *, corpus: str | None = None, rules: list[CitationRule] | None = None
) -> tuple[list[SourceInfo], int]:
    """All documents, and how many of them no citation rule maps."""
    in_corpus, params = corpus_filter(store.db, corpus)
    rows = store.db.execute(
        "SELECT d.source, k.name, d.title, d.chunks, d.indexed_at, d.url, d.repo_url, "
        f"d.commit_sha, d.ref, d.repo_path FROM {DOCUMENTS} WHERE 1 {in_corpus} "
        "ORDER BY k.name, d.source",
        params,
    ).fetchall()
    out = [
        SourceInfo(r[0], r[1], r[2], r[3], r[4], cite(rules or [], Origin(
            r[0], r[1], url=r[5], repo_url=r[6], commit=r[7], ref=r[8], repo_path=r[9])))
        for r in rows
    ]  # fmt: skip
    unmapped = sum(1 for s in out if s.citation is None) if rules else len(out)
    return out, unmapped


def stored_source(store: Store, source: str, corpus: str | None = None) -> str | None:
    """The source of the index (of `corpus` when given) that `source` names, as stored: itself,
    or as copied from a line of output (`sources_as_shown`); else the one source equal to it in
    Unicode NFC (`index.text.nfc`: a name committed from macOS is stored decomposed, and
    typed composed). None when there is none; `QueryError` (`ambiguous-source`) when several
    stored sources differ only in normalization and none is spelled exactly so."""
    in_corpus, params = corpus_filter(store.db, corpus)
    spellings = sources_as_shown(source)
    for written in spellings:
        found = store.db.execute(
            f"SELECT 1 FROM {DOCUMENTS} WHERE d.source = ? {in_corpus} LIMIT 1",
            [written, *params],
        ).fetchone()
        if found is not None:
            return written
    same = same_name(spellings, known_sources(store.db, corpus))
    if len(same) > 1:
        raise ambiguous(source, same)
    return same[0] if same else None


@dataclass
class ChunkView(Located):
    """One slice with its text and its format-specific fields (written inline in JSON)."""

    content: str = ""
    meta: dict[str, Any] = field(default_factory=dict, metadata=json_field(inline=True))


def show(
    store: Store,
    token: str,
    *,
    corpus: str | None = None,
    rules: list[CitationRule] | None = None,
) -> ChunkView | None:
    """One chunk by its `<source>#<ordinal>` token, or its label `<source> (slice <ordinal>)`."""
    parsed = read_slice(token.strip())
    if not parsed or not parsed[0]:
        raise UsageError(
            f"{token!r} is not a slice reference (expected <source>#<ordinal>, or "
            "<source> (slice <ordinal>) as search prints it)",
            reason="bad-token",
        )
    source, ordinal = parsed
    written = stored_source(store, source, corpus)
    if written is None:
        return None
    in_corpus, corpus_params = corpus_filter(store.db, corpus)
    cursor = store.db.cursor()
    cursor.row_factory = sqlite3.Row
    row = cursor.execute(
        f"SELECT {LOCATED_COLUMNS}, c.id AS chunk_id, c.meta AS meta FROM {CHUNKS} "
        f"WHERE d.source = ? AND c.ordinal = ? {in_corpus} ORDER BY k.name LIMIT 1",
        [written, ordinal, *corpus_params],
    ).fetchone()
    if row is None:
        return None
    body = text_index(store.db).chunk_texts([row["chunk_id"]]).get(row["chunk_id"], "")
    meta = json.loads(row["meta"]) if row["meta"] else {}
    meta.pop("lineUnit", None)  # a field of its own (`line_unit`), said for every range
    return ChunkView(**located_fields(rules or [], row), content=body, meta=meta)


@dataclass
class Page:
    source: str
    corpus: str
    offset: int
    next_offset: int | None  # where the next page starts, None at the end
    total_chars: int
    text: str


@dataclass(frozen=True)
class Placed:
    """A slice's text and the lines of the document it came from (None when unknown)."""

    text: str
    start_line: int | None
    end_line: int | None


def reassemble(slices: list[Placed]) -> str:
    """The document its slices were cut from. Slicers keep every non-blank line exactly once and
    in order, so the lines between two slices were blank: they come back as empty lines, and
    pieces of one long line cut to the size budget join without a separator. Where a range is
    missing (notebook cells, foreign records) or out of order, slices are set a blank line apart;
    so they are where putting them in place would add more line breaks than both the characters
    the slices hold and the lines a range may span (`MAX_SPAN`): a record's range may say
    anything, and line 10**11 is no reason to answer 100 GB of blank lines."""
    if not slices:
        return ""
    placed = all(s.start_line is not None and s.end_line is not None for s in slices)
    if placed and _padding(slices) > max(MAX_SPAN, sum(len(s.text) for s in slices)):
        placed = False
    first = slices[0].start_line
    out = ["\n" * (first - 1) if placed and first and first > 1 else ""]
    previous: Placed | None = None
    for piece in slices:
        if previous is not None:
            out.append(_between(previous, piece) if placed else "\n\n")
        out.append(piece.text)
        previous = piece
    if placed:
        out.append("\n")  # text files end with a line break; the slices do not keep it
    return "".join(out)


def _padding(slices: list[Placed]) -> int:
    """The line breaks `reassemble` would add to put `slices` (each with a range) in place."""
    first = slices[0].start_line or 1
    gaps = (max(0, (b.start_line or 0) - (a.end_line or 0)) for a, b in pairwise(slices))
    return first - 1 + sum(gaps)


def _between(before: Placed, after: Placed) -> str:
    assert before.end_line is not None and after.start_line is not None
    if after.start_line > before.end_line:
        return "\n" * (after.start_line - before.end_line)
    if before.start_line == before.end_line == after.start_line == after.end_line:
        return ""  # the next piece of a line cut to the size budget
    return "\n\n"


def get(
    store: Store,
    source: str,
    *,
    offset: int = 0,
    corpus: str | None = None,
    page_chars: int = PAGE_CHARS,
) -> Page | None:
    """A whole document (its chunks in order) in pages, cut at line ends where possible."""
    if offset < 0:
        raise QueryError(f"the offset must be 0 or more, not {offset}", reason="bad-offset",
                         value=offset)  # fmt: skip
    written = stored_source(store, source, corpus)
    if written is None:
        return None
    source = written
    in_corpus, params = corpus_filter(store.db, corpus)
    doc = store.db.execute(
        f"SELECT d.id, k.name FROM {DOCUMENTS} WHERE d.source = ? {in_corpus} "
        "ORDER BY k.name LIMIT 1",
        [source, *params],
    ).fetchone()
    rows = store.db.execute(
        "SELECT id, start_line, end_line, json_extract(meta, '$.lineUnit') FROM chunks "
        "WHERE document_id = ? ORDER BY ordinal",
        (doc[0],),
    ).fetchall()
    texts = text_index(store.db).chunk_texts([row[0] for row in rows])
    placed = []
    for chunk_id, start, end, unit in rows:
        if chunk_id in texts:  # a range that cannot be one is none (as cited: `lines`)
            span = lines(start, end) if unit is None else None
            placed.append(Placed(texts[chunk_id], *(span or (None, None))))
    text = reassemble(placed)
    end = min(len(text), offset + page_chars)
    if end < len(text):
        newline = text.rfind("\n", offset, end)
        if newline > offset + page_chars // 2:
            end = newline + 1
    return Page(
        source, doc[1], offset, end if end < len(text) else None, len(text), text[offset:end]
    )


@dataclass
class TocEntry:
    source: str
    corpus: str
    title: str | None
    sections: list[str]


def toc(store: Store, prefix: str = "", *, corpus: str | None = None) -> list[TocEntry]:
    """Documents whose source starts with `prefix` (case and all; as stored or in Unicode NFC,
    `index.scope.composed_prefixes`) with their section titles, in order."""
    in_corpus, params = corpus_filter(store.db, corpus)
    entries: dict[int, TocEntry] = {}
    # With the prefix as sources that start with it in NFC only spell it (decomposed names).
    spellings = [prefix, *composed_prefixes(store.db, (prefix,))] if prefix else [prefix]
    where = " OR ".join("substr(d.source, 1, length(?)) = ?" for _ in spellings)
    args = [value for spelling in spellings for value in (spelling, spelling)]
    for doc_id, source, corpus_name, doc_title, title in store.db.execute(
        f"SELECT d.id, d.source, k.name, d.title, c.title FROM {CHUNKS} "
        f"WHERE ({where}) {in_corpus} ORDER BY k.name, d.source, c.ordinal",
        [*args, *params],
    ):
        entry = entries.setdefault(doc_id, TocEntry(source, corpus_name, doc_title, []))
        if title and title not in entry.sections:
            entry.sections.append(title)
    if prefix and not entries:
        check_paths(store.db, (prefix,))  # a prefix no source starts with is a mistake (--path)
    return list(entries.values())


NO_KIND = "(no kind)"  # how `stats` counts chunks whose records named no kind (foreign JSONL)


def stats(store: Store, *, corpus: str | None = None) -> dict[str, Any]:
    """Corpora, documents, chunks and kinds (of one corpus, if named); the store's vectors."""
    db = store.db
    where, params = ("WHERE k.name = ?", [corpus]) if corpus else ("", [])
    # Grouped by every column it shows, not by k.id alone: a reader may see `corpora` through
    # a view (a store lacking an added column, `index.schema.READ_AS_IF`), and Postgres infers
    # the other columns from the id only on a table's primary key.
    corpora = [
        {
            "name": r[0],
            "documents": r[1],
            "chunks": r[2],
            "chars": r[3],
            "repoUrl": r[4],
            "commit": r[5],
            "ref": r[6],
            "indexedAt": r[7],
            "weight": r[8],
        }
        for r in db.execute(
            "SELECT k.name, count(d.id), coalesce(sum(d.chunks), 0), coalesce(sum(d.chars), 0), "
            "k.repo_url, k.commit_sha, k.ref, k.indexed_at, k.weight FROM corpora k "
            f"LEFT JOIN documents d ON d.corpus_id = k.id {where} "
            "GROUP BY k.id, k.name, k.repo_url, k.commit_sha, k.ref, k.indexed_at, k.weight "
            "ORDER BY k.name",
            params,
        )
    ]
    return {
        "store": store.location,
        "bytes": store.size(),
        "corpora": corpora,
        "documents": sum(c["documents"] for c in corpora),
        "chunks": sum(c["chunks"] for c in corpora),
        "kinds": dict(
            db.execute(
                f"SELECT coalesce(nullif(c.kind, ''), '{NO_KIND}'), count(*) FROM {CHUNKS} "
                f"{where} GROUP BY 1 ORDER BY 2 DESC",
                params,
            ).fetchall()
        ),
        "vectors": _vector_stats(db),
    }


def _vector_stats(db: Any) -> dict[str, Any] | None:
    """The vector identity and coverage; None when nothing was ever embedded."""
    from index.vectors.storage import stored_identity  # here, not at the top: it brings numpy

    identity = stored_identity(db)
    if identity is None:
        return None
    covered, pending = db.execute(
        "SELECT count(embed_key), count(*) - count(embed_key) - count(embed_skip) FROM chunks"
    ).fetchone()
    return {
        "model": identity.model, "dimension": identity.dimension,
        "queryPrefix": identity.query_prefix, "documentTemplate": identity.document_template,
        "vectors": db.execute("SELECT count(*) FROM vectors").fetchone()[0],
        "chunksWithVector": covered, "chunksPending": pending,
        "chunksSkipped": dict(db.execute(
            "SELECT embed_skip, count(*) FROM chunks WHERE embed_skip IS NOT NULL "
            "GROUP BY 1 ORDER BY 1").fetchall()),
    }  # fmt: skip


def _card_origin(store: Store, corpus: dict[str, Any]) -> str:
    """Where a corpus came from: its repository at its commit, the site its pages were crawled
    from, or local files."""
    if corpus["repoUrl"]:
        remote, commit = strip_credentials(corpus["repoUrl"]), corpus["commit"] or ""
        if not (remote + commit).isprintable() or " " in remote + commit:
            return "a repository"  # a record's provenance may hold anything: no line of its own
        return f"{remote}@{commit[:12]}"
    page = store.db.execute(
        f"SELECT d.url FROM {DOCUMENTS} WHERE k.name = ? AND d.url IS NOT NULL LIMIT 1",
        (corpus["name"],),
    ).fetchone()
    if page is None:
        return "local files"
    url = link(page[0])  # a web link, credentials stripped (index.citations), or None
    if url is None:
        return "a site"
    parts = urlsplit(url)
    return f"the site {parts.scheme}://{parts.netloc}/"


def card(store: Store, *, budget: int = 800, corpus: str | None = None) -> str:
    """A deterministic index card for an agent's prompt, within `budget` tokens (~4 chars each).

    Corpora with origin and scale first, then the table of contents, cut to fit.
    """
    limit = max(200, budget * 4)
    info = stats(store, corpus=corpus)
    lines = ["# Index card", ""]
    for c in info["corpora"]:
        origin = _card_origin(store, c)
        lines.append(
            f"- corpus `{c['name']}`: {c['documents']} documents, {c['chunks']} chunks, "
            f"from {origin}"
        )
    lines += ["", "## Contents"]
    used = sum(len(line) + 1 for line in lines)
    omitted = 0
    for entry in toc(store, corpus=corpus):
        sections = ", ".join(entry.sections[:6]) + (" ..." if len(entry.sections) > 6 else "")
        line = f"- {entry.source}: {sections}"
        if used + len(line) + 1 > limit:
            omitted += 1
            continue
        lines.append(line)
        used += len(line) + 1
    if omitted:
        lines.append(f"- ... and {omitted} more documents (use toc or search)")
    return "\n".join(lines) + "\n"
