"""What a query answers: a slice located and cited, a search hit, the tier a search ran at.

One JSON form for each, written by `flatten.jsonform.to_json` (camelCase keys) and shared by the
CLI's `--json`, `search --queries` and the MCP answers.

The names of a slice, in the query code and around it:
- slice: the unit everything is cut into (one heading's section, one declaration, one manifest).
- `Record` (flatten.record): a slice on the wire, one JSONL line.
- chunk: a slice stored in the index (the `chunks` table; `chunk_id` is its row id).
- `Located`: where a stored slice is and how to cite it; the common part of the answers below.
- `Hit`: a ranked search result (`Located` plus score, snippet, and the vector tier's figures).
- `ChunkView` (index.documents): one slice with its text and fields, as `show` returns it.
- token: `<source>#<ordinal>`, a slice's key in the index, as `show` takes it.
- label: `<source> (slice <ordinal>)`, how text output names a slice (`Located.label`): the
  token's `#3` glued to a page's URL reads as the URL's fragment, so text never prints it so.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flatten.jsonform import json_field
from flatten.record import INT_MAX, split_id
from flatten.shown import one_line
from index.citations import CELL, CitationRule, Origin, checked, citation

# The columns `located_fields` reads: the fields of `Located`, then what its citation is built
# from (chunks c, documents d, corpora k: see index.scope).
LOCATED_COLUMNS = (
    "d.source AS source, k.name AS corpus, c.ordinal AS ordinal, c.title AS title, "
    "c.section AS section, c.anchor AS anchor, c.start_line AS start_line, "
    "c.end_line AS end_line, json_extract(c.meta, '$.lineUnit') AS line_unit, d.url AS url, "
    "d.repo_url AS repo_url, d.commit_sha AS commit_sha, d.ref AS ref, "
    "d.repo_path AS repo_path, d.dirty AS dirty"
)


@dataclass
class Located:
    token: str = field(init=False)  # `<source>#<ordinal>`, derived
    source: str
    corpus: str
    ordinal: int
    title: str
    section: list[str]
    anchor: str | None
    start_line: int | None
    end_line: int | None
    # What the range counts: "line", or "cell" for a notebook; None (left out) without a range.
    line_unit: str | None = field(metadata=json_field(omit_none=True))
    citation: str  # what a reader should see: a rule's, else a link or the path and lines

    def __post_init__(self) -> None:
        self.token = f"{self.source}#{self.ordinal}"

    def label(self) -> str:
        """The slice as text output names it: the source, then `(slice N)` apart from it. Not
        the token: `https://host/page#3` is another address (the page's anchor `3`), and a link
        copied with it opens the wrong place or none. `read_slice` reads either back."""
        return f"{self.source} (slice {self.ordinal})"

    def range_text(self) -> str:
        """`L12-40`, or `cells 2-3` for a notebook; empty without a range."""
        if self.start_line is None:
            return ""
        end = self.end_line if self.end_line is not None else self.start_line
        return (
            f"cells {self.start_line}-{end}"
            if self.line_unit == CELL
            else f"L{self.start_line}-{end}"
        )


_LABEL = re.compile(r"^(.*) \(slice (\d{1,19})\)$", re.DOTALL)


def read_slice(text: str) -> tuple[str, int] | None:
    """(source, ordinal) of a slice as a person gives it back: its label (`<source> (slice
    <ordinal>)`, as text output prints it) or its token (`<source>#<ordinal>`); None when it is
    neither. The two never read as each other: a label ends with `)`, a token with a digit."""
    label = _LABEL.match(text)
    if label is None:
        # A token: its source may hold line breaks (`search --json` gives them as they are),
        # which `split_id` (one line) does not take; shown as one line, the last `#` is still
        # the one before the ordinal (`one_line` adds none).
        token = split_id(one_line(text))
        return (text[: text.rindex("#")], token[1]) if token else None
    ordinal = int(label.group(2))
    return (label.group(1), ordinal) if ordinal <= INT_MAX else None


def located_fields(rules: list[CitationRule], row: Mapping[str, Any]) -> dict[str, Any]:
    """The `Located` fields of a row selected with `LOCATED_COLUMNS`: section parsed, cited (a
    range that cannot be one is answered as none, as it is cited: `index.citations.lines`)."""
    origin = checked(origin_of(row))
    return {
        "source": origin.source,
        "corpus": origin.corpus,
        "ordinal": origin.ordinal,
        "title": origin.heading,
        "section": json.loads(row["section"]) if row["section"] else [],
        "anchor": origin.anchor,
        "start_line": origin.start_line,
        "end_line": origin.end_line,
        "line_unit": None if origin.start_line is None else origin.line_unit or "line",
        "citation": citation(rules, origin),
    }


def origin_of(row: Mapping[str, Any]) -> Origin:
    """What a citation is built from, for a row selected with `LOCATED_COLUMNS`."""
    line_unit = row["line_unit"]
    return Origin(
        row["source"], row["corpus"], row["ordinal"], row["title"], row["anchor"],
        row["start_line"], row["end_line"], line_unit if isinstance(line_unit, str) else None,
        row["url"], row["repo_url"], row["commit_sha"], row["ref"], row["repo_path"],
        bool(row["dirty"]),
    )  # fmt: skip


_OPTIONAL = json_field(omit_none=True)
_INTERNAL = json_field(skip=True)
_FIGURE = json_field(digits=4)


@dataclass(frozen=True)
class Ranking:
    """How a hit's score was made, for --explain: `score` = (`slice_score` + `field_weight` *
    (`field_score` + `name_score`)) * `prior_weight` * the corpus's weight."""

    stage: str  # what `slice_score` is: bm25 (lexical), rrf (hybrid), cosine (vector)
    slice_score: float = field(metadata=_FIGURE)
    # The query's words found in the page's title and path, and in a section's own heading
    # (index.ranking): their IDFs, as BM25F counts a field.
    field_score: float = field(metadata=_FIGURE)
    field_weight: float
    prior: str | None = field(default=None, metadata=_OPTIONAL)  # the kind of page its path is
    prior_weight: float = 1.0  # the prior's factor; 1.0 with none, or when the query asks
    asked: bool = False  # the query asks for this kind of page, so its prior is lifted
    # The query spells the name the slice declares (index.declarations): its words' IDFs, a
    # field like the page's title. None: it does not.
    name_score: float | None = field(default=None, metadata=json_field(omit_none=True, digits=4))


@dataclass
class Hit(Located):
    """A search result. The vector tier's figures are None (and left out of JSON) when it did not
    run; `text` (the whole slice) is filled by callers that show it, such as the MCP answers."""

    score: float = field(default=0.0, metadata=json_field(digits=4))
    snippet: str | None = field(default=None, metadata=_OPTIONAL)  # None: snippets not asked
    symbol: str | None = None
    kind: str | None = None
    similarity: float | None = field(default=None, metadata=json_field(omit_none=True, digits=4))
    # Among the lexical stage's candidates (its best max(top_k, 50) by BM25: every chunk holding
    # the query's words when fewer match), where vectors ran.
    keyword_match: bool | None = field(default=None, metadata=_OPTIONAL)
    lexical_rank: int | None = field(default=None, metadata=_OPTIONAL)  # for --explain
    vector_rank: int | None = field(default=None, metadata=_OPTIONAL)
    fused: float | None = field(default=None, metadata=json_field(omit_none=True, digits=6))
    text: str | None = field(default=None, metadata=_OPTIONAL)
    # Grouped results (the default): how many other slices of the same document match and are
    # not shown, and the anchors of those that have one (in document order).
    other_matches: int | None = field(default=None, metadata=_OPTIONAL)
    other_anchors: list[str] | None = field(default=None, metadata=_OPTIONAL)
    ranking: Ranking | None = field(default=None, metadata=_OPTIONAL)  # with explain
    # The declaration this slice is one of, when the slicer cut it into several (its citation
    # spans the whole declaration: index.declarations).
    declaration: str | None = field(default=None, metadata=_OPTIONAL)
    chunk_id: int = field(default=0, metadata=_INTERNAL)  # the store's row id, never shown
    embed_key: str | None = field(default=None, metadata=_INTERNAL)  # its vector's key


class Tier(enum.StrEnum):
    LEXICAL = "lexical"  # FTS5 BM25
    HYBRID = "hybrid"  # FTS5 and vectors, fused by reciprocal rank fusion
    VECTOR = "vector"  # vectors alone


# Why a search ran lexical when it did not degrade.
NO_EMBEDDINGS = "no embeddings configured"
REQUESTED = "requested"  # the caller asked for the lexical tier although vectors were there


@dataclass(frozen=True)
class TierUsed:
    """The tier a search ran at, and why: data, not a sentence (the CLI words it)."""

    name: Tier
    degraded: bool = False  # a hybrid search that ran lexical because the vectors could not
    reason: str | None = field(default=None, metadata=_OPTIONAL)  # why lexical (see above)
    model: str | None = field(default=None, metadata=_OPTIONAL)
    dimension: int | None = field(default=None, metadata=_OPTIONAL)
    # The lexical engine when it is not FTS5: "bm25 (postgres)" (`index.textindex`).
    engine: str | None = field(default=None, metadata=_OPTIONAL)


@dataclass
class SearchResponse:
    query: str
    tier: TierUsed
    results: list[Hit] = field(default_factory=list)
    # Words the search added for the query's everyday phrasing or for a word the index lacks
    # (index.phrasing), looked for in headings only; None when it added none.
    also_asked: list[str] | None = field(default=None, metadata=_OPTIONAL)
