"""The peers hybrid search is measured against, all over the seed design's 1000/200 windows.

``seed-1000/200`` (dense only, ``rag.evaluation``) is one; this module adds
the two others of the held-out table: ``bm25-1000/200``, Okapi BM25 (k1 1.2,
b 0.75, bm25s' default tokenizer: lower-cased words of two or more
characters, English stop words dropped, no stemming) over the same windows;
and ``rrf-1000/200``, a naive reciprocal rank fusion (k 60, equal weights) of
the dense and the BM25 rankings, each cut at ``FUSION_DEPTH``. A baseline,
not product code.
"""

from collections.abc import Sequence

import bm25s
import numpy as np

from rag.evaluation import Window

BM25_MODE, RRF_MODE = "bm25-1000/200", "rrf-1000/200"
FUSION_DEPTH = 1000
RRF_K = 60


def bm25_rankings(windows: Sequence[Window], queries: Sequence[str], depth: int = FUSION_DEPTH) -> list[list[int]]:
    """For each query, the indexes of the windows with a positive BM25 score, best first, at most ``depth``."""
    retriever = bm25s.BM25(k1=1.2, b=0.75)
    retriever.index(bm25s.tokenize([w.text for w in windows], show_progress=False), show_progress=False)
    rankings = []
    for tokens in bm25s.tokenize(list(queries), return_ids=False, show_progress=False):
        known = [t for t in tokens if t in retriever.vocab_dict]
        scores = retriever.get_scores(known) if known else np.zeros(len(windows))
        order = np.argsort(-scores, kind="stable")[:depth]
        rankings.append([int(i) for i in order if scores[i] > 0])
    return rankings


def rrf(rankings: Sequence[Sequence[Sequence[int]]], k: int = RRF_K) -> list[list[int]]:
    """Per query, the items of several rankings ordered by the sum of 1 / (k + rank), rank from 1;
    ties keep the order in which items were first met."""
    fused = []
    for per_query in zip(*rankings, strict=True):
        totals: dict[int, float] = {}
        for ranking in per_query:
            for rank, item in enumerate(ranking, 1):
                totals[item] = totals.get(item, 0.0) + 1 / (k + rank)
        fused.append(sorted(totals, key=lambda item: -totals[item]))
    return fused
