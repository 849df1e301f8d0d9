"""Retrieval quality against relevance judgments: nDCG@k, Recall@k, MRR and hit rates.

Queries are JSONL (`{"id" or "_id": ..., "query" or "text": ..., "expect": [...]}`); judgments
are TREC/BEIR qrels (`query-id corpus-id score`, tab or space separated, an optional header)
and/or each query's `expect` list (pages a person would accept, gain 1). What the judged ids
name in a store, and the unit ranked (document or slice), is `index.judgments`; here the metrics
are over any ranked units.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flatten.errors import UsageError
from flatten.record import Malformed, parse_line


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    expect: tuple[str, ...] = ()  # accepted pages or documents, from a question file


def _lines(path: Path, reason: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 text file; a byte that is not UTF-8 is a usage error
    naming its line (the file is the user's input, like a flag)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}", reason=reason) from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise UsageError(
                    f"{path}:{number}: not valid UTF-8 (byte {exc.start + 1} of the line)",
                    reason=reason,
                ) from None


def read_queries(path: Path) -> list[Query]:
    """The queries of a JSONL file (`search --queries`, `eval`), each line read as `index` reads
    a JSONL line: a line that is no JSON object, holds a lone surrogate escape (`"\\ud83d"`,
    valid JSON but no text: every answer that echoes it failed to print), lacks an id or a query,
    or repeats an id (`1` and `"1"` alike: output and judgments key queries by id) is a usage
    error naming its line."""
    queries = []
    first_line: dict[str, int] = {}  # query id -> the line that gave it
    for number, line in _lines(path, "bad-queries"):
        if not line.strip():
            continue
        try:
            obj = parse_line(line.rstrip("\r\n").encode("utf-8"))
        except Malformed as exc:
            raise UsageError(f"{path}:{number}: {exc}", reason="bad-queries") from None
        if not isinstance(obj, dict):
            raise UsageError(f"{path}:{number}: not a JSON object", reason="bad-queries")
        qid = obj.get("id", obj.get("_id"))
        text = obj.get("query", obj.get("text"))
        expect = obj.get("expect", [])
        if qid is None or not isinstance(text, str):
            raise UsageError(
                f"{path}:{number}: needs an id and a query (or text)", reason="bad-queries"
            )
        if not isinstance(expect, list) or not all(isinstance(e, str) and e for e in expect):
            raise UsageError(f"{path}:{number}: expect must be a list of paths",
                             reason="bad-queries")  # fmt: skip
        query = Query(str(qid), text, tuple(expect))
        if query.id in first_line:
            from flatten.config import shown

            raise UsageError(f"{path}:{number}: query id {shown(query.id)} is the id of line "
                             f"{first_line[query.id]} too (each query needs its own)",
                             reason="bad-queries")  # fmt: skip
        first_line[query.id] = number
        queries.append(query)
    return queries


def with_expectations(
    queries: Iterable[Query], judgments: dict[str, dict[str, float]]
) -> dict[str, dict[str, float]]:
    """`judgments` and each query's `expect` entries (gain 1 where the qrels say nothing)."""
    merged = {qid: dict(judged) for qid, judged in judgments.items()}
    for query in queries:
        for expected in query.expect:
            merged.setdefault(query.id, {}).setdefault(expected, 1.0)
    return merged


def read_qrels(path: Path) -> dict[str, dict[str, float]]:
    judgments: dict[str, dict[str, float]] = {}
    for number, line in _lines(path, "bad-qrels"):
        parts = line.split()
        if not parts:
            continue
        if len(parts) == 4:  # TREC: query-id iteration doc-id relevance
            parts = [parts[0], parts[2], parts[3]]
        if len(parts) != 3:
            raise UsageError(
                f"{path}:{number}: expected query-id corpus-id score", reason="bad-qrels"
            )
        try:
            score = float(parts[2])
        except ValueError:
            if number == 1:
                continue  # a header
            raise UsageError(
                f"{path}:{number}: score is not a number", reason="bad-qrels"
            ) from None
        if not math.isfinite(score):  # inf makes nDCG nan, and nan passes any --min-ndcg
            raise UsageError(
                f"{path}:{number}: score {parts[2]} is not a finite number", reason="bad-qrels"
            )
        judgments.setdefault(parts[0], {})[parts[1]] = score
    return judgments


def ndcg(ranked: Sequence[Hashable], relevant: dict[Any, float], k: int) -> float:
    dcg = sum(relevant.get(doc, 0.0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(gain / math.log2(i + 2) for i, gain in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall(ranked: Sequence[Hashable], relevant: dict[Any, float], k: int) -> float:
    wanted = {doc for doc, gain in relevant.items() if gain > 0}
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def first_relevant(ranked: Sequence[Hashable], relevant: dict[Any, float]) -> int | None:
    """The 1-based rank of the first relevant unit, or None when none was ranked."""
    for i, doc in enumerate(ranked):
        if relevant.get(doc, 0.0) > 0:
            return i + 1
    return None


@dataclass
class QueryScore:
    id: str
    query: str
    ndcg: float
    recall: float
    recall_100: float
    rr: float
    first_relevant: int | None  # 1-based rank of the first relevant unit, None: not ranked
    first_relevant_name: str | None  # what it was (a source, or a slice token)

    def to_dict(self, k: int) -> dict[str, object]:
        return {
            "id": self.id, "query": self.query, f"ndcg@{k}": round(self.ndcg, 4),
            f"recall@{k}": round(self.recall, 4), "recall@100": round(self.recall_100, 4),
            "rr": round(self.rr, 4), "firstRelevantRank": self.first_relevant,
            "firstRelevant": self.first_relevant_name,
        }  # fmt: skip


@dataclass
class EvalReport:
    k: int
    group: str = "doc"
    queries: int = 0
    ndcg: float = 0.0
    recall: float = 0.0
    recall_100: float = 0.0
    mrr: float = 0.0
    hit_1: float = 0.0  # share of queries with a relevant unit at rank 1
    hit_k: float = 0.0  # ... within the top k
    skipped: int = 0  # queries without judgments
    judged: dict[str, int] = field(default_factory=dict)  # what the judged ids named -> count
    unmatched: list[tuple[str, str]] = field(default_factory=list)  # (query id, judged id)
    per_query: list[QueryScore] = field(default_factory=list)

    def to_dict(self, *, per_query: bool = False) -> dict[str, object]:
        summary: dict[str, object] = {
            "k": self.k,
            "group": self.group,
            "queries": self.queries,
            f"ndcg@{self.k}": round(self.ndcg, 4),
            f"recall@{self.k}": round(self.recall, 4),
            "recall@100": round(self.recall_100, 4),
            "mrr": round(self.mrr, 4),
            "hit@1": round(self.hit_1, 4),
            f"hit@{self.k}": round(self.hit_k, 4),
            "skippedWithoutJudgments": self.skipped,
            "judged": dict(sorted(self.judged.items())),
            "unmatched": len(self.unmatched),
        }
        if per_query:
            summary["unmatchedIds"] = [{"query": q, "id": i} for q, i in self.unmatched]
            summary["perQuery"] = [score.to_dict(self.k) for score in self.per_query]
        return summary


def evaluate(
    queries: Iterable[Query],
    judgments: dict[str, dict[Any, float]],
    rank: Callable[[str, int], Sequence[Hashable]],
    k: int = 10,
    *,
    name: Callable[[Any], str] = str,
) -> EvalReport:
    """`rank(query, depth)` returns units (the keys `judgments` use), best first; `name` says
    what a unit is called in the per-query report."""
    report = EvalReport(k=k)
    depth = max(k, 100)
    for query in queries:
        relevant = judgments.get(query.id)
        if not relevant:
            report.skipped += 1
            continue
        ranked = list(dict.fromkeys(rank(query.text, depth)))
        first = first_relevant(ranked, relevant)
        score = QueryScore(
            query.id, query.text, ndcg(ranked, relevant, k), recall(ranked, relevant, k),
            recall(ranked, relevant, 100), 1.0 / first if first else 0.0, first,
            name(ranked[first - 1]) if first else None,
        )  # fmt: skip
        report.queries += 1
        report.ndcg += score.ndcg
        report.recall += score.recall
        report.recall_100 += score.recall_100
        report.mrr += score.rr
        report.hit_1 += first == 1
        report.hit_k += first is not None and first <= k
        report.per_query.append(score)
    if report.queries:
        for metric in ("ndcg", "recall", "recall_100", "mrr", "hit_1", "hit_k"):
            setattr(report, metric, getattr(report, metric) / report.queries)
    return report
