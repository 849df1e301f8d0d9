"""The document stage: slices ranked as the pages they belong to, then one hit per page.

A person looks for a page; the stages before this one rank slices. Here each candidate slice's
score becomes

    (its stage score + FIELD_WEIGHT * what the query's words found in its page's title and path)
    * its page's prior (index.priors) * its corpus's weight

(the page's title counted only for slices not titled by it: the one that is has it in its own
BM25 already, and a store of one slice per document ranks as it did without this stage)

so a page whose title or path names what the query asks for rises above pages that only mention
it, and changelogs, contributing guides and the like sink unless the query asks for them. The
stage score is BM25 on the lexical tier and the fused score on the others (where the lexical
ranking fused in already holds the field score, so only the prior is applied again).

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
from typing import Any

from index.lexical import QueryPlan, stem
from index.priors import asked_for, prior_of
from index.results import Ranking
from index.textindex import text_index

FIELD_WEIGHT = 2.0  # the title/path words' worth (a sum of IDFs) against a slice's BM25
TITLE_WEIGHT = 1.0  # what a word found in the page's title is worth, times its IDF
PATH_WEIGHT = 1.0  # and in its path
_WORDS = re.compile(r"[^\W_]+")
CANDIDATES = 100  # slices the lexical stage hands on; a page's best is nearly always among them


@dataclass(frozen=True)
class Scored:
    chunk_id: int
    document_id: int
    score: float
    ranking: Ranking


def field_scores(
    db: Any, planned: QueryPlan, documents: list[int]
) -> dict[int, tuple[float, float]]:
    """What the query's words found in the title, and in the path words, of each document that
    holds any (others: absent): the sum of the IDF over chunks of each word found, as BM25F
    weighs a field (a word common in the corpus counts little, even in a title).

    The text index finds the words (stemmed, inflections and compound spellings included) and
    marks them; each marked span counts for the query words it spells."""
    query = planned.every_word
    if not query.phrases or not documents:
        return {}
    marked = text_index(db).highlights(query, documents)
    spelled: dict[str, set[int]] = {}  # a spelling's key -> the query words it spells
    for n, term in enumerate(planned.terms):
        for form in term.forms:
            spelled.setdefault(_key(form), set()).add(n)

    def worth(spans: list[str]) -> float:
        found = set().union(*(spelled.get(_key(span), set()) for span in spans))
        return sum(planned.terms[n].idf for n in found)

    return {
        doc_id: (TITLE_WEIGHT * worth(title), PATH_WEIGHT * worth(path))
        for doc_id, (title, path) in marked.items()
    }


def _key(text: str) -> str:
    """A spelling reduced to compare: its words joined and stemmed (`Blue-Green` and `blue green`
    and `bluegreen` are one; `Clients` is `client`)."""
    return stem("".join(_WORDS.findall(text.lower())))


def score(
    db: sqlite3.Connection,
    stage: list[tuple[int, float]],
    query: str,
    planned: QueryPlan | None,
    stage_name: str = "bm25",
) -> list[Scored]:
    """The stage's (chunk id, score) pairs scored as pages, best first (ties keep the stage's
    order). `planned` (the lexical plan) adds the field score; None leaves it out (no words to
    match, or a fused ranking that holds it already)."""
    if not stage:
        return []
    rows = db.execute(
        "SELECT c.id, c.document_id, d.source, k.weight, c.title = d.title FROM chunks c "
        "JOIN documents d ON d.id = c.document_id JOIN corpora k ON k.id = d.corpus_id "
        "WHERE c.id IN (SELECT value FROM json_each(?))",
        (json.dumps([chunk_id for chunk_id, _ in stage]),),
    ).fetchall()
    located = {row[0]: row[1:] for row in rows}
    documents = sorted({row[1] for row in rows})
    fields = field_scores(db, planned, documents) if planned else {}
    asked = asked_for(query)
    out = []
    for chunk_id, stage_score in stage:
        if chunk_id not in located:
            continue  # removed since the stage ran
        doc_id, source, weight, titled = located[chunk_id]
        prior = prior_of(source)
        lifted = prior is not None and prior.name in asked
        prior_weight = 1.0 if prior is None or lifted else prior.weight
        title, path = fields.get(doc_id, (0.0, 0.0))
        # The slice titled with the page's title has that title in its own BM25 already.
        field = path if titled else title + path
        ranking = Ranking(stage_name, stage_score, field, FIELD_WEIGHT,
                          prior.name if prior else None, prior_weight, lifted)  # fmt: skip
        value = (stage_score + FIELD_WEIGHT * field) * prior_weight * weight
        out.append(Scored(chunk_id, doc_id, value, ranking))
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
