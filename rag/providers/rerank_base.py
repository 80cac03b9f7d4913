"""What every reranker is: the Reranker protocol, its result, and the no-op reranker.

A reranker reads the query together with each candidate and scores how well the
candidate answers it. Search calls it with the ~50 fused candidates and keeps the
best few; on ProviderError it falls back to the fused order, so implementations
raise ProviderError, and nothing else, for every failure.
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class RerankResult:
    index: int  # position in the documents list given to rerank
    score: float  # higher is better; only comparable within one reranker


class Reranker(Protocol):
    @property
    def name(self) -> str:
        """Which reranker this is, e.g. ``jina:jina-reranker-v2-base-multilingual``, ``none``."""
        ...

    def rerank(self, query: str, documents: list[str], top_k: int) -> list[RerankResult]:
        """The best ``top_k`` documents for ``query``, best first (all when top_k >= len)."""
        ...


def best_first(scores: Iterable[tuple[int, float]], top_k: int) -> list[RerankResult]:
    """(index, score) pairs as results, best first, at most ``top_k``; ties keep index order."""
    if top_k <= 0:
        return []
    # A NaN score (a broken model or server) sorts last instead of scrambling the order.
    ranked = sorted(scores, key=lambda pair: (-pair[1] if not math.isnan(pair[1]) else math.inf, pair[0]))
    return [RerankResult(index, score) for index, score in ranked[:top_k]]


class NoReranker:
    """No reranking: the first ``top_k`` documents in the order given, all with score 0.0.

    The score carries no information; a stable sort by score keeps the given order.
    """

    name = "none"

    def rerank(self, query: str, documents: list[str], top_k: int) -> list[RerankResult]:
        return [RerankResult(index, 0.0) for index in range(min(max(top_k, 0), len(documents)))]

    def __repr__(self) -> str:
        return "NoReranker()"
