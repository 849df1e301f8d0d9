"""The document stage: slices ranked as the pages they belong to, then one hit per page.

A person looks for a page; the stages before this one rank slices. Here each candidate slice's
score becomes

    (its stage score + FIELD_WEIGHT * what the query's words found in its page's title and path,
     and in its own heading, and the name it declares) * its page's prior (index.priors)
    * its corpus's weight

(the page's title counted only for slices not titled by it: the one that is has it in its own
BM25 already, and a store of one slice per document ranks as it did without this stage; a
section's heading counted only for the sections below the page's title, for the same reason)

so a page whose title or path names what the query asks for rises above pages that only mention
it, a section headed with the query's words above one that only mentions them, and changelogs,
contributing guides and the like sink unless the query asks for them. The stage score is BM25
on the lexical tier and the fused score on the others (where the lexical ranking fused in
already holds the field score, so only the prior is applied again).

Grouped (the default), each page appears once, at its best slice, and the hit says how many
other slices of it are among the candidates (the lexical stage's best CANDIDATES slices, and
the vector stage's on the other tiers) and their anchors; `per_doc` allows more per page, and
no grouping gives the raw list.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from index.declarations import spelled, words_of
from index.headings import marked_headings
from index.lexical import QueryPlan, stem
from index.paths import path_words
from index.paths import segments as path_segments
from index.priors import asked_for, prior_of
from index.results import Ranking
from index.scope import CHUNKS
from index.text import TOKEN, split_name
from index.textindex import text_index

FIELD_WEIGHT = 2.0  # the title/path words' worth (a sum of IDFs) against a slice's BM25
TITLE_WEIGHT = 1.0  # what a word found in the page's title is worth, times its IDF
PATH_WEIGHT = 1.0  # and in its file's name
# And in the name of a folder it sits in: every page of the folder has that word, so it says
# less about which of them is meant (`secrets/` holds the patterns, the blocks, the placeholders).
FOLDER_WEIGHT = 0.5
# Kinds whose slicers give a document no title of its own: the store keeps its first slice's
# title (a source file's first declaration, `_NeedleSet`) or its path instead, which says
# nothing of what the file's other slices are about; only their path does.
UNTITLED_KINDS = frozenset({"code", "terraform", "yaml", "shell", "text"})
# What a query word spelling a name that encloses a declaration is worth, against one spelling
# the declaration's own name (see `declared_score`).
OUTER_SHARE = 0.5
CANDIDATES = 100  # slices the lexical stage hands on; a page's best is nearly always among them


@dataclass(frozen=True)
class Scored:
    chunk_id: int
    document_id: int
    score: float
    ranking: Ranking
    symbol: str | None = None  # what the slice declares, when it is code


class Spellings:
    """Which query words a span the text index marked spells, and what they are worth."""

    def __init__(self, planned: QueryPlan) -> None:
        self.planned = planned
        self.spelled: dict[str, set[int]] = {}  # a spelling's key -> the query words it spells
        for n, term in enumerate(planned.terms):
            for form in term.forms:
                self.spelled.setdefault(_key(form), set()).add(n)
        # The information the user's own words carry (the words added for the phrasing are a
        # guess at the topic, not part of what was asked).
        self.total = sum(t.idf for t in planned.terms if not t.implied)

    def found(self, spans: list[str]) -> set[int]:
        return set().union(*(self.spelled.get(_key(span), set()) for span in spans))

    def worth(self, words: set[int]) -> float:
        return sum(self.planned.terms[n].idf for n in words)


def field_scores(
    db: Any, spellings: Spellings, documents: dict[int, str]
) -> dict[int, tuple[float, float]]:
    """What the query's words found in the title, and in the path words, of each document that
    holds any (others: absent), of these (document id -> source): the sum of the IDF over chunks
    of each word found, as BM25F weighs a field (a word common in the corpus counts little, even
    in a title); a word found only in a folder's name counts `FOLDER_WEIGHT` of one in the file's.

    The text index finds the words (stemmed, inflections and compound spellings included) and
    marks them; each marked span counts for the query words it spells."""
    query = spellings.planned.every_word
    if not query.phrases or not documents:
        return {}
    marked = text_index(db).highlights(query, list(documents))
    found, worth = spellings.found, spellings.worth
    out = {}
    for doc_id, (title, path) in marked.items():
        named = file_words(documents[doc_id])
        in_file = found([s for s in path if set(split_name(s)) <= named])
        in_folder = found(path) - in_file
        path_worth = PATH_WEIGHT * worth(in_file) + FOLDER_WEIGHT * worth(in_folder)
        out[doc_id] = (TITLE_WEIGHT * worth(found(title)), path_worth)
    return out


def heading_scores(spellings: Spellings, headings: dict[int, str]) -> dict[int, float]:
    """What the query's words found in each of these sections' headings (chunk id -> its slice
    title), for those that hold any: as a page's title counts (the IDFs of the words found),
    times the share of the query's IDF those words carry. A heading labels what its whole
    section answers, however long the section (where BM25 dilutes it); the share keeps a
    heading that names one common word of a long question from counting as one that names
    most of it.

    The words looked for are those the lexical stage asked: a word in most chunks, left out
    there for its cost, is worth next to nothing in a heading (its IDF is near zero). They are
    marked in the headings themselves (`index.headings`), not in the whole index."""
    query = spellings.planned.query
    if not query.phrases or not headings or spellings.total <= 0:
        return {}
    out = {}
    for chunk_id, spans in marked_headings(query, headings).items():
        worth = spellings.worth(spellings.found(spans))
        out[chunk_id] = worth * min(1.0, worth / spellings.total)
    return out


@lru_cache(maxsize=65536)
def file_words(source: str) -> frozenset[str]:
    """The words of the name of the file (or last URL segment) a source names, as its path
    words spell them (`docs/advanced/text-encodings.md` -> text, encodings)."""
    parts = path_segments(source)
    return frozenset(path_words(parts[-1])) if parts else frozenset()


@dataclass(frozen=True)
class Named:
    """What a query names, as the declarations' names are compared with it."""

    # Each form's words, stemmed, with the query words (`planned.terms` indexes) that spell
    # them, as `index.declarations.spelled` reads it.
    words: dict[tuple[str, ...], set[int]]
    # Each dotted name the query writes (`httpx.Client.stream`), as its parts' stemmed words,
    # with its term's index.
    dotted: tuple[tuple[tuple[tuple[str, ...], ...], int], ...] = ()
    # Every stemmed word of `words`: a name with none of them is not named (most candidates).
    stems: frozenset[str] = frozenset()


def named_by(planned: QueryPlan) -> Named:
    """What the user's own words name (never the words added for the phrasing: a guess at the
    topic, not a name the user gave)."""
    words: dict[tuple[str, ...], set[int]] = {}
    dotted = []
    for n, term in enumerate(planned.terms):
        if term.implied:
            continue
        for form in term.forms:
            if found := words_of(form):
                words.setdefault(tuple(stem(w) for w in found), set()).add(n)
        if "." in term.word:
            dotted.append((_parts_stems(term.word), n))
    return Named(words, tuple(dotted), frozenset(w for key in words for w in key))


def declared_score(planned: QueryPlan, named: Named, symbol: str) -> float:
    """What the query's naming of the slice's declaration is worth, as a title's words count
    (BM25F): a question names a function to find where it is declared.

    - The IDFs of the query words that spell the name the slice declares, plus `OUTER_SHARE` of
      those of words spelling an enclosing name (`Client` of `Client.get`, the resource type
      `aws_eks_cluster` of `aws_eks_cluster.main`): that says where the declaration sits, not
      which it is, so a helper nested in the function asked for, or a method of the class asked
      for, ranks below the function or the class itself.
    - A dotted name in the query that ends as the symbol does (or the symbol as it does), over
      two parts or more (`httpx.Client.stream` and `Client.stream`), names the declaration
      exactly: every part's words count in full, and the whole name once more (a phrase's IDF),
      so the declaration named outranks one whose name only has the same words.
    - A compound name written verbatim (`model_validate`) counts once more: its stems are
      another declaration's too (`model_validator`)."""
    parts = _parts_stems(symbol)
    if not parts or named.stems.isdisjoint(_declared_stems((symbol,))):
        return 0.0
    own = spelled(parts[-1], named.words)
    outer = set().union(*(spelled(part, named.words) for part in parts[:-1])) - own
    exact = next((n for name, n in named.dotted if _ends_alike(name, parts)), None)
    if exact is not None:
        return planned.terms[exact].idf + sum(planned.terms[n].idf for n in own | outer)
    verbatim = sum(planned.terms[n].idf for n in own if _writes(planned.terms[n].word, symbol))
    return (
        sum(planned.terms[n].idf for n in own)
        + verbatim
        + OUTER_SHARE * sum(planned.terms[n].idf for n in outer)
    )


def _writes(word: str, symbol: str) -> bool:
    """Does a query word write the declaration's own name out, and is that name a compound
    (`model_validate`)? Stems make `model_validate` and `model_validator` one name; the word
    written verbatim says which (a plain word, `client`, is prose as often as a name)."""
    own = symbol.rpartition(".")[2]
    return word == own.casefold() and len(words_of(own)) > 1


def _ends_alike(name: tuple[tuple[str, ...], ...], symbol: tuple[tuple[str, ...], ...]) -> bool:
    """Do a dotted name and a symbol (their parts' stemmed words) end with the same two parts
    or more, all of the shorter one?"""
    overlap = min(len(name), len(symbol))
    return overlap >= 2 and name[-overlap:] == symbol[-overlap:]


_MORE = re.compile(r" \(\+\d+ more\)$")  # the slicer's note of merged names not listed
_PART = re.compile(r" \(part \d+/\d+\)$")  # a declaration cut for the budget


@lru_cache(maxsize=16384)
def declared(symbol: str, title: str) -> tuple[str, ...]:
    """The names a slice declares: its symbol, and when the code slicer merged several small
    neighbours into it, each one its title lists (`Context: forward, invoke` with symbol
    `Context.forward` declares `Context.forward` and `Context.invoke`; `gen_salt, _hash` with
    symbol `gen_salt` declares both). The title is read so only when it lists the symbol's
    own name first, as the slicer writes it. The slice holding a class's header carries the
    class as its symbol and is titled by the member it opens with (`Client.stream`, or
    `Client: stream, close` when merged): it declares the class and those members."""
    parent, _, own = symbol.rpartition(".")
    listed = _MORE.sub("", _PART.sub("", title))
    if listed.startswith((symbol + ".", symbol + ": ")):
        members = listed[len(symbol) + 1 :].strip().split(", ")
        return (symbol, *(f"{symbol}.{member}" for member in members if member))
    if parent and listed.startswith(parent + ": "):
        listed = listed[len(parent) + 2 :]
    names = listed.split(", ")
    if len(names) < 2 or names[0] != own:
        return (symbol,)
    return tuple(f"{parent}.{name}" if parent else name for name in names)


@lru_cache(maxsize=16384)
def _declared_stems(names: tuple[str, ...]) -> frozenset[str]:
    """Every stemmed word of these dotted names."""
    return frozenset(w for name in names for part in _parts_stems(name) for w in part)


@lru_cache(maxsize=16384)
def _parts_stems(symbol: str) -> tuple[tuple[str, ...], ...]:
    """The stemmed words of each part of a dotted name (asked of every code candidate):
    `Factory.find_candidates` -> (factori,), (find, candid)."""
    return tuple(tuple(stem(w) for w in words_of(part)) for part in symbol.split("."))


@lru_cache(maxsize=65536)  # asked of every span marked, for each of the hundred candidates
def _key(text: str) -> str:
    """A spelling reduced to compare: its words joined and stemmed (`Blue-Green` and `blue green`
    and `bluegreen` are one; `Clients` is `client`)."""
    return stem("".join(TOKEN.findall(text.lower())))


@dataclass(frozen=True)
class Page:
    """What the document stage needs of a slice's page."""

    document_id: int
    source: str
    weight: float  # its corpus's weight
    titled: bool  # the slice is titled with the page's title
    kind: str | None = None  # the document's kind (`UNTITLED_KINDS`)
    symbol: str | None = None  # what the slice declares (code), as `a.b.name`
    title: str = ""  # the slice's title (which lists the declarations merged into it)

    @property
    def is_section(self) -> bool:
        """A section of a page below its title (prose: a heading of its own)."""
        return not self.titled and self.kind not in UNTITLED_KINDS


def locate(db: sqlite3.Connection, chunk_ids: list[int]) -> dict[int, Page]:
    """The page of each of these chunks (those still in the index)."""
    if not chunk_ids:
        return {}
    rows = db.execute(
        "SELECT c.id, c.document_id, d.source, k.weight, c.title = d.title, d.kind, c.symbol, "
        f"c.title FROM {CHUNKS} "
        "WHERE c.id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(set(chunk_ids))),),
    )
    return {row[0]: Page(*row[1:4], bool(row[4]), *row[5:]) for row in rows}


def score(
    db: sqlite3.Connection,
    stage: list[tuple[int, float]],
    query: str,
    planned: QueryPlan | None,
    stage_name: str = "bm25",
    located: dict[int, Page] | None = None,
) -> list[Scored]:
    """The stage's (chunk id, score) pairs scored as pages, best first (ties keep the stage's
    order). `planned` (the lexical plan) adds the field score; None leaves it out (no words to
    match, or a fused ranking that holds it already). `located`: the pages of the stage's chunks
    when the caller has them already (`locate`); a chunk missing there is looked up."""
    if not stage:
        return []
    located = dict(located or {})
    missing = [chunk_id for chunk_id, _ in stage if chunk_id not in located]
    located.update(locate(db, missing))
    documents = {located[c].document_id: located[c].source for c, _ in stage if c in located}
    spellings = Spellings(planned) if planned else None
    fields = field_scores(db, spellings, documents) if spellings else {}
    # Sections below a page's title: the slice titled with it has its heading counted already
    # (in its BM25), and code is titled by its declarations (counted as names, below).
    sections = {c: located[c].title for c, _ in stage if c in located and located[c].is_section}
    headings = heading_scores(spellings, sections) if spellings else {}
    asked = asked_for(query)
    names = named_by(planned) if planned else Named({})
    out = []
    for chunk_id, stage_score in stage:
        if chunk_id not in located:
            continue  # removed since the stage ran
        page = located[chunk_id]
        doc_id, weight = page.document_id, page.weight
        prior = prior_of(page.source)
        lifted = prior is not None and prior.name in asked
        prior_weight = 1.0 if prior is None or lifted else prior.weight
        title, path = fields.get(doc_id, (0.0, 0.0))
        # The slice titled with the page's title has that title in its own BM25 already.
        field = path if page.titled or page.kind in UNTITLED_KINDS else title + path
        field += headings.get(chunk_id, 0.0)
        named = 0.0
        if planned and page.symbol:
            # Most candidates: none of the query's words in any name the slice declares.
            each = declared(page.symbol, page.title)
            if not names.stems.isdisjoint(_declared_stems(each)):
                named = max(declared_score(planned, names, name) for name in each)
        ranking = Ranking(stage_name, stage_score, field, FIELD_WEIGHT,
                          prior.name if prior else None, prior_weight, lifted,
                          named or None)  # fmt: skip
        value = (stage_score + FIELD_WEIGHT * (field + named)) * prior_weight * weight
        out.append(Scored(chunk_id, doc_id, value, ranking, page.symbol))
    out.sort(key=lambda s: -s.score)
    return out


def group(scored: list[Scored], top_k: int, per_doc: int | None) -> list[Scored]:
    """The best `top_k`, at most `per_doc` from one document (None: no limit, the raw list)."""
    if per_doc is None:
        return scored[:top_k]
    taken: dict[int, int] = {}
    out = []
    for item in scored:
        if taken.get(item.document_id, 0) < per_doc:
            taken[item.document_id] = taken.get(item.document_id, 0) + 1
            out.append(item)
            if len(out) == top_k:
                break
    return out


def others(scored: list[Scored], chosen: list[Scored]) -> dict[int, list[int]]:
    """For each chosen document, its other candidate slices (not chosen), in document order."""
    shown = {s.chunk_id for s in chosen}
    wanted = {s.document_id for s in chosen}
    out: dict[int, list[int]] = {doc_id: [] for doc_id in wanted}
    for item in scored:
        if item.document_id in wanted and item.chunk_id not in shown:
            out[item.document_id].append(item.chunk_id)
    return {doc_id: sorted(ids) for doc_id, ids in out.items()}
