"""Retrieval quality against relevance judgments: nDCG@k, Recall@k and MRR over documents.

Queries are JSONL (`{"id" or "_id": ..., "query" or "text": ...}`); judgments are TREC/BEIR qrels
(`query-id corpus-id score`, tab or space separated, an optional header). Chunks are ranked, then
collapsed to their documents (`source`) in rank order, since judgments are about documents.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from flatten.errors import UsageError


@dataclass(frozen=True)
class Query:
    id: str
    text: str


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
    queries = []
    for number, line in _lines(path, "bad-queries"):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            qid = obj.get("id", obj.get("_id"))
            text = obj.get("query", obj.get("text"))
        except (ValueError, RecursionError, AttributeError) as exc:
            raise UsageError(f"{path}:{number}: not a JSON object", reason="bad-queries") from exc
        if qid is None or not isinstance(text, str):
            raise UsageError(
                f"{path}:{number}: needs an id and a query (or text)", reason="bad-queries"
            )
        queries.append(Query(str(qid), text))
    return queries


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


def ndcg(ranked: list[str], relevant: dict[str, float], k: int) -> float:
    dcg = sum(relevant.get(doc, 0.0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(gain / math.log2(i + 2) for i, gain in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall(ranked: list[str], relevant: dict[str, float], k: int) -> float:
    wanted = {doc for doc, gain in relevant.items() if gain > 0}
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def reciprocal_rank(ranked: list[str], relevant: dict[str, float]) -> float:
    for i, doc in enumerate(ranked):
        if relevant.get(doc, 0.0) > 0:
            return 1.0 / (i + 1)
    return 0.0


@dataclass
class EvalReport:
    k: int
    queries: int = 0
    ndcg: float = 0.0
    recall: float = 0.0
    recall_100: float = 0.0
    mrr: float = 0.0
    skipped: int = 0  # queries without judgments
    per_query: list[dict[str, object]] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "k": self.k,
            "queries": self.queries,
            f"ndcg@{self.k}": round(self.ndcg, 4),
            f"recall@{self.k}": round(self.recall, 4),
            "recall@100": round(self.recall_100, 4),
            "mrr": round(self.mrr, 4),
            "skippedWithoutJudgments": self.skipped,
        }


def evaluate(
    queries: Iterable[Query],
    judgments: dict[str, dict[str, float]],
    rank: Callable[[str, int], list[str]],
    k: int = 10,
) -> EvalReport:
    """`rank(query, depth)` returns document sources, best first."""
    report = EvalReport(k=k)
    depth = max(k, 100)
    for query in queries:
        relevant = judgments.get(query.id)
        if not relevant:
            report.skipped += 1
            continue
        ranked = list(dict.fromkeys(rank(query.text, depth)))
        scores = {
            "ndcg": ndcg(ranked, relevant, k),
            "recall": recall(ranked, relevant, k),
            "recall_100": recall(ranked, relevant, 100),
            "mrr": reciprocal_rank(ranked, relevant),
        }
        report.queries += 1
        for name, value in scores.items():
            setattr(report, name, getattr(report, name) + value)
        report.per_query.append({"id": query.id, **scores})
    if report.queries:
        for name in ("ndcg", "recall", "recall_100", "mrr"):
            setattr(report, name, getattr(report, name) / report.queries)
    return report
