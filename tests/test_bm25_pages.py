"""The keyword arm orders document chunks by their page's BM25 and by the query's word pairs they hold
next to each other too (bm25.pageWeight, bm25.phraseWeight: rag._bm25_neighbours, decision 033
session 31): a query that describes a whole page (a man page's one-line description) finds its words
spread over the page's sections, none of which holds them together; the page scored as one text
lifts its chunks over a section of another page holding fewer of them. A query paraphrasing a
sentence keeps some of its word pairs: a chunk holding them side by side ranks above one holding the
same words apart. Documents take the places and scores documents had, so code keeps its own; both
weights 0 is the windows alone."""

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import rows
from test_bm25_neighbours import option
from test_ranking import index_tree

from rag import db

# The answer: its three words each in a section of its own, too far apart for one window.
WORDS = {"b": "compress output", "e": "archive members", "h": "quickly"}
PAGE = "# tool\n\n## OPTIONS\n\n" + "".join(option(f"-{letter}", WORDS.get(letter, "plain"))
                                           for letter in "abcdefghij")
# A long page with two of the words in one section: the better chunk, the weaker page.
DECOY = "# other\n\n## OPTIONS\n\n" + option("-c", "compress archive") + "".join(
    option(f"-{letter}", "plain") for letter in "klmnopqrstuvwxyz")
CODE = "def compress_archive(data):\n    '''compress archive members quickly'''\n    return data\n"
QUERY = "compress archive quickly"


@pytest.fixture
def pages(rag_db: db.DatabaseTarget, tmp_path: Path) -> db.DatabaseTarget:
    index_tree(rag_db, tmp_path / "p", {"docs/tool.md": PAGE, "docs/decoy.md": DECOY, "src/pack.py": CODE},
               max_tokens=40)
    return rag_db


def keyword_search(target: db.DatabaseTarget, query: str, **bm25: Any) -> list[dict[str, Any]]:
    """rag.search by keywords alone, these bm25 options (no phrases or proximity unless given), each chunk a
    hit of its own."""
    return rows(target, "SELECT chunk_id, path, header_path, bm25_score, bm25_rank FROM rag.search(%s, NULL, 10, "
                        "options => %s)", query,
                json.dumps({"bm25": {"phraseWeight": 0, "proximity": 0, **bm25}, "perFile": 10, "mergeAdjacent": {"documents": False}}))


def documents(hits: list[dict[str, Any]]) -> list[str]:
    return [h["path"] for h in hits if h["path"] != "src/pack.py"]


def test_the_page_holding_every_word_lifts_its_sections_over_a_better_section(pages: db.DatabaseTarget) -> None:
    assert documents(keyword_search(pages, QUERY, pageWeight=0))[0] == "docs/decoy.md"
    lifted = documents(keyword_search(pages, QUERY, pageWeight=1))
    assert lifted[0] == "docs/tool.md"
    assert lifted.index("docs/decoy.md") > lifted.index("docs/tool.md")


def test_pages_reorder_documents_only_and_code_keeps_its_place(pages: db.DatabaseTarget) -> None:
    plain = keyword_search(pages, QUERY, pageWeight=0)
    lifted = keyword_search(pages, QUERY, pageWeight=1)
    code = [(h["bm25_rank"], h["bm25_score"]) for h in plain if h["path"] == "src/pack.py"]
    assert code == [(h["bm25_rank"], h["bm25_score"]) for h in lifted if h["path"] == "src/pack.py"]
    # the documents take the scores documents had, in the new order
    assert sorted(h["bm25_score"] for h in lifted if h["path"] != "src/pack.py") == \
        pytest.approx(sorted(h["bm25_score"] for h in plain if h["path"] != "src/pack.py"))


def test_pages_without_neighbour_windows(pages: db.DatabaseTarget) -> None:
    """With neighbours 0 the chunks' own scores are ordered with their pages' as well."""
    assert documents(keyword_search(pages, QUERY, neighbours=0, pageWeight=0))[0] == "docs/decoy.md"
    assert documents(keyword_search(pages, QUERY, neighbours=0, pageWeight=1))[0] == "docs/tool.md"


def test_the_default_weights_are_in_the_options(rag_db: db.DatabaseTarget) -> None:
    assert rows(rag_db, "SELECT rag.search_options() -> 'bm25' AS b")[0]["b"] == \
        {"k1": 1.2, "b": 0.75, "neighbours": 2, "neighbourShare": 0.15, "pageWeight": 0.3, "phraseWeight": 0.5,
         "proximity": 10}


# Two pages, the query's words in one section of each: side by side in one ("compress archive"),
# apart and more often in the other, which BM25 alone ranks first.
NEAR = "# near\n\n## OPTIONS\n\n" + option("-a", "compress archive")
APART = "# apart\n\n## OPTIONS\n\n" + option("-a", "archive archive plain plain plain compress compress")


@pytest.fixture
def phrases(rag_db: db.DatabaseTarget, tmp_path: Path) -> db.DatabaseTarget:
    index_tree(rag_db, tmp_path / "q", {"docs/near.md": NEAR, "docs/apart.md": APART}, max_tokens=40)
    return rag_db


def test_a_section_holding_the_query_s_words_side_by_side_ranks_first(phrases: db.DatabaseTarget) -> None:
    query = "compress the archive"  # a stop word between: still a pair, one word apart at most
    assert documents(keyword_search(phrases, query, pageWeight=0))[0] == "docs/apart.md"
    assert documents(keyword_search(phrases, query, pageWeight=0, phraseWeight=1))[0] == "docs/near.md"
    # the other order is another pair
    assert documents(keyword_search(phrases, "archive compress", pageWeight=0, phraseWeight=1))[0] == "docs/apart.md"


@pytest.mark.parametrize(("bm25", "message"), [
    ({"pageWeight": -0.1}, "option bm25.pageWeight must be a number of at least 0, not -0.1"),
    ({"phraseWeight": -1}, "option bm25.phraseWeight must be a number of at least 0, not -1"),
    ({"pageWeight": "high"}, 'option bm25.pageWeight must be a number of at least 0, not "high"'),
])
def test_a_bad_weight_is_named(rag_db: db.DatabaseTarget, bm25: dict[str, Any], message: str) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
        rows(rag_db, "SELECT rag.search_options(%s)", json.dumps({"bm25": bm25}))
