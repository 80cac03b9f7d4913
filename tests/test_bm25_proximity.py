"""The keyword arm ranks a document chunk holding a short query's words close together above one
holding them apart (bm25.proximity: rag._bm25_neighbours, rag._proximity, decision 033, session 31):
a section titled or phrased as the query against passages naming its words in passing; proximity 0,
a one-word query or one of more than three prose terms keep the order of the windows alone."""

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import rows
from test_ranking import index_tree

from rag import db

FILLER = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt labore "
          "dolore magna aliqua enim minim veniam nostrud exercitation ullamco laboris nisi aliquip")
WORDS = FILLER.split()


def section(title: str, words: list[str]) -> str:
    return f"## {title}\n\n{' '.join(words)}.\n\n"


# Two sections holding "cache" and "flushed" once each: together in the first (a little longer: it
# holds the page's title too), apart in the last.
TOGETHER = section("Together", [*WORDS[:11], "cache", "flushed", *WORDS[11:22]])
APART = section("Apart", ["cache", *WORDS[:20], "flushed", *WORDS[20:22]])
# Sections between them holding neither word, so neither window holds the other's words.
PAGE = "# guide\n\n" + TOGETHER + "".join(section(f"Other {n}", WORDS) for n in range(3)) + APART
QUERY = "cache flushed"


@pytest.fixture
def guide(rag_db: db.DatabaseTarget, tmp_path: Path) -> db.DatabaseTarget:
    index_tree(rag_db, tmp_path / "p", {"docs/guide.md": PAGE}, max_tokens=40)
    return rag_db


def keyword_search(target: db.DatabaseTarget, query: str, **bm25: Any) -> list[dict[str, Any]]:
    """rag.search by keywords alone, each chunk a hit of its own, no page or word-pair evidence unless
    given (bm25.pageWeight, bm25.phraseWeight: test_bm25_pages.py)."""
    return rows(target, "SELECT chunk_id, header_path, bm25_score FROM rag.search(%s, NULL, 10, options => %s)",
                query, json.dumps({"bm25": {"pageWeight": 0, "phraseWeight": 0, **bm25}, "perFile": 10, "mergeAdjacent": {"documents": False}}))


def titles(hits: list[dict[str, Any]]) -> list[str]:
    return [h["header_path"].split(" > ")[-1] for h in hits]


def test_the_words_together_rank_first(guide: db.DatabaseTarget) -> None:
    """Without proximity the shorter section wins (the same words); with it (the default) the one
    holding them side by side does."""
    assert titles(keyword_search(guide, QUERY, proximity=0))[:2] == ["## Apart", "## Together"]
    assert titles(keyword_search(guide, QUERY))[:2] == ["## Together", "## Apart"]


def test_proximity_reorders_documents_among_their_own_scores(guide: db.DatabaseTarget) -> None:
    plain = keyword_search(guide, QUERY, proximity=0)
    close = keyword_search(guide, QUERY, proximity=5)
    assert [h["bm25_score"] for h in close] == pytest.approx([h["bm25_score"] for h in plain])


def test_one_word_queries_are_not_moved(guide: db.DatabaseTarget) -> None:
    """With fewer than two of the query's words every chunk takes the same floor, ln 0.3."""
    assert titles(keyword_search(guide, "flushed", proximity=5)) == titles(keyword_search(guide, "flushed", proximity=0))


def test_longer_queries_are_not_moved(guide: db.DatabaseTarget) -> None:
    """A query of more than rag._proximity_terms() (3) prose terms is read as a sentence, not a phrase:
    its windows keep their order."""
    query = "cache flushed lorem ipsum"
    assert titles(keyword_search(guide, query, proximity=5)) == titles(keyword_search(guide, query, proximity=0))


@pytest.mark.parametrize(("distance", "expected"), [(0, 0.26236), (5, -0.40365), (None, -1.20397)])
def test_the_proximity_term(rag_db: db.DatabaseTarget, distance: int | None, expected: float) -> None:
    """ln(0.3 + exp(-d / 5)): ln 1.3 side by side, ln 0.3 apart or alone."""
    found = rows(rag_db, "SELECT rag._proximity(%s::integer) AS p", distance)[0]["p"]
    assert found == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize(("bm25", "message"), [
    ({"proximity": -1}, "option bm25.proximity must be a number from 0 to 100, not -1"),
    ({"proximity": "near"}, 'option bm25.proximity must be a number from 0 to 100, not "near"'),
])
def test_bad_proximity_is_named(rag_db: db.DatabaseTarget, bm25: dict[str, Any], message: str) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
        rows(rag_db, "SELECT rag.search_options(%s)", json.dumps({"bm25": bm25}))


def test_a_short_query_s_pairs_give_way_to_proximity(guide: db.DatabaseTarget) -> None:
    """Both reward the query's words standing close: with proximity on, a query of at most three prose
    terms is ordered by it alone, its word pairs not counted twice; with proximity 0 the pairs count."""
    with_pairs = keyword_search(guide, QUERY, proximity=5, phraseWeight=0.5)
    without = keyword_search(guide, QUERY, proximity=5, phraseWeight=0)
    assert [h["chunk_id"] for h in with_pairs] == [h["chunk_id"] for h in without]
    assert titles(keyword_search(guide, QUERY, proximity=0, phraseWeight=1))[:2] == ["## Together", "## Apart"]
