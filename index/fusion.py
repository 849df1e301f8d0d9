"""Combining ranked lists: reciprocal rank fusion, and MMR to spread the top results out.

Pure functions over ids, ranks and vectors; search.py feeds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads only when MMR runs: the CLI starts faster without it
    import numpy as np

RRF_K = 60  # the constant of Cormack et al.; larger flattens the advantage of the top ranks
MMR_LAMBDA = 0.7  # relevance against novelty: 1.0 is plain relevance order


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Ids by sum of 1 / (k + rank) over the lists that hold them (rank from 1), best first.

    Ties go to the id ranked best in the earliest list, so the order is deterministic.
    """
    fused: dict[int, float] = {}
    first_seen: dict[int, tuple[int, int]] = {}
    for list_number, ranking in enumerate(rankings):
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
            first_seen.setdefault(item, (list_number, rank))
    return sorted(fused.items(), key=lambda pair: (-pair[1], first_seen[pair[0]]))


def mmr(
    relevance: Sequence[float], vectors: np.ndarray, top_k: int, lam: float = MMR_LAMBDA
) -> list[int]:
    """Indexes of the candidates in maximal-marginal-relevance order (Carbonell & Goldstein).

    Each pick maximises `lam * relevance - (1 - lam) * max cosine to the picks so far`;
    `relevance` (scores >= 0) is divided by its maximum so both terms lie in [0, 1]; not
    min-max scaled, which would give the last candidate no relevance at all. `vectors` holds one
    unit row per candidate (a zero row: no vector, never counted as a near-duplicate).
    """
    import numpy as np

    n = len(relevance)
    if n == 0:
        return []
    scores = np.maximum(np.asarray(relevance, dtype=np.float64), 0.0)
    top = scores.max()
    scaled = scores / top if top > 0 else np.ones(n)
    similar = vectors @ vectors.T if len(vectors) else np.zeros((n, n))
    picked: list[int] = []
    closest = np.full(n, -np.inf)  # each candidate's highest similarity to a pick
    remaining = np.ones(n, dtype=bool)
    for _ in range(min(top_k, n)):
        penalty = np.where(np.isfinite(closest), closest, 0.0)
        value = np.where(remaining, lam * scaled - (1 - lam) * penalty, -np.inf)
        best = int(np.argmax(value))  # first of equals: the better-ranked candidate
        picked.append(best)
        remaining[best] = False
        closest = np.maximum(closest, similar[best])
    return picked
