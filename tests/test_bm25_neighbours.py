"""The keyword arm ranks document chunks with their neighbours' words (bm25.neighbours,
bm25.neighbourShare: rag._bm25_neighbours, decision 033): in a long page of similar sections, the
section whose neighbours hold the query's other words ranks above an equal match standing alone;
documents take the places and scores documents had, so code keeps its own; 0 neighbours is plain
BM25."""

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import rows
from test_ranking import index_tree

from rag import db

FILLER = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt labore "
          "dolore magna aliqua enim minim veniam nostrud exercitation ullamco laboris nisi aliquip commodo")


def option(name: str, words: str) -> str:
    """An option's section of a man page: its tag, a sentence of its own words, filler."""
    return f"### {name}\n\n{words} {' '.join(FILLER.split()[:18])}.\n\n"


# A long page of similar options: the query's three words are spread over -g and its neighbours.
PAGE = "# tool\n\n## OPTIONS\n\n" + "".join(
    option(f"-{letter}", {"f": "archive members", "g": "compress output", "h": "quickly"}.get(letter, "plain"))
    for letter in "abcdefghijklmn")
# Another page whose one section matches a query word as well, in fewer words, alone.
DECOY = "# other\n\n## OPTIONS\n\n" + option("-c", "compress") + "".join(
    option(f"-{letter}", "plain") for letter in "pqrstu")
CODE = "def compress_archive(data):\n    '''compress archive members quickly'''\n    return data\n"
QUERY = "compress archive quickly"


@pytest.fixture
def pages(rag_db: db.DatabaseTarget, tmp_path: Path) -> db.DatabaseTarget:
    index_tree(rag_db, tmp_path / "p", {"docs/tool.md": PAGE, "docs/decoy.md": DECOY, "src/pack.py": CODE},
               max_tokens=40)
    return rag_db


def keyword_search(target: db.DatabaseTarget, query: str, **bm25: Any) -> list[dict[str, Any]]:
    """rag.search by keywords alone (no query vector), with these bm25 options (no page or phrase
    evidence unless given: bm25.pageWeight, bm25.phraseWeight, tests/test_bm25_pages.py; bm25.proximity, tests/test_bm25_proximity.py), each chunk a
    hit of its own (no mergeAdjacent: the arm's order is what is tested)."""
    return rows(target, "SELECT chunk_id, path, header_path, bm25_score, bm25_rank FROM rag.search(%s, NULL, 10, "
                        "options => %s)", query,
                json.dumps({"bm25": {"pageWeight": 0, "phraseWeight": 0, "proximity": 0, **bm25}, "perFile": 10, "mergeAdjacent": {"documents": False}}))


def where(hits: list[dict[str, Any]], path: str, tag: str) -> int:
    return next(i for i, h in enumerate(hits) if h["path"] == path and h["header_path"].endswith(f"### {tag}"))


def test_each_option_is_a_chunk_of_its_own(pages: db.DatabaseTarget) -> None:
    found = rows(pages, "SELECT count(*) AS n FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id "
                        "WHERE f.path = 'docs/tool.md' AND c.metadata->>'headerPath' LIKE '%%### -_'")
    assert found[0]["n"] == 14


def test_neighbours_words_lift_the_section_among_them(pages: db.DatabaseTarget) -> None:
    """Alone, -g (compress, a word two sections hold) ranks below -f and -h (a rarer word each);
    with its neighbours' words it ranks first, and above the other page's -c holding compress alone."""
    alone = [h["header_path"][-2:] for h in keyword_search(pages, QUERY, neighbours=0) if h["path"] == "docs/tool.md"]
    assert alone[:3] in (["-h", "-f", "-g"], ["-f", "-h", "-g"])
    windowed = keyword_search(pages, QUERY, neighbours=2, neighbourShare=0.15)
    documents = [(h["path"], h["header_path"][-2:]) for h in windowed if h["path"] != "src/pack.py"]
    assert documents[0] == ("docs/tool.md", "-g")
    assert set(documents[:3]) == {("docs/tool.md", tag) for tag in ("-f", "-g", "-h")}
    assert where(windowed, "docs/tool.md", "-g") < where(windowed, "docs/decoy.md", "-c")


def test_a_section_without_the_words_is_found_between_neighbours_holding_them(pages: db.DatabaseTarget) -> None:
    """-e holds none of the query's words; its window (-c .. -g) holds two."""
    assert not any((h["header_path"] or "").endswith("### -e") for h in keyword_search(pages, "archive compress", neighbours=0))
    assert any((h["header_path"] or "").endswith("### -e")
               for h in keyword_search(pages, "archive compress", neighbours=2, neighbourShare=0.5))


def test_no_neighbours_is_plain_bm25_and_code_keeps_its_score(pages: db.DatabaseTarget) -> None:
    plain = rows(pages, "SELECT chunk_id, score FROM rag.bm25_search(%s, 10)", QUERY)
    by_chunk = {r["chunk_id"]: r["score"] for r in plain}
    alone = keyword_search(pages, QUERY, neighbours=0)
    assert all(h["bm25_score"] == pytest.approx(by_chunk[h["chunk_id"]]) for h in alone)
    windowed = keyword_search(pages, QUERY)  # the defaults: 2 neighbours each side
    code = next(h for h in windowed if h["path"] == "src/pack.py")
    assert code["bm25_score"] == pytest.approx(by_chunk[code["chunk_id"]])
    # windows reorder the documents among the places documents had: code keeps its place
    assert code["bm25_rank"] == next(h["bm25_rank"] for h in alone if h["path"] == "src/pack.py")
    assert sorted(h["bm25_score"] for h in windowed if h["path"] != "src/pack.py") == \
        pytest.approx(sorted(h["bm25_score"] for h in alone if h["path"] != "src/pack.py"))
    # a share of 0 leaves every document its own score too
    assert [h["bm25_score"] for h in keyword_search(pages, QUERY, neighbours=2, neighbourShare=0)] == \
        pytest.approx([h["bm25_score"] for h in alone])


@pytest.mark.parametrize(("bm25", "message"), [
    ({"neighbours": -1}, "option bm25.neighbours must be a whole number from 0 to 10, not -1"),
    ({"neighbours": 1.5}, "option bm25.neighbours must be a whole number from 0 to 10, not 1.5"),
    ({"neighbourShare": 2}, "option bm25.neighbourShare must be a number from 0 to 1, not 2"),
])
def test_bad_neighbour_options_are_named(rag_db: db.DatabaseTarget, bm25: dict[str, Any], message: str) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
        rows(rag_db, "SELECT rag.search_options(%s)", json.dumps({"bm25": bm25}))
