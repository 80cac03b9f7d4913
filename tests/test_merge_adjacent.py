"""Hits next to each other in a file come back as one hit (search.mergeAdjacent: rag._merged_places,
rag._merged_hit, decision 033): a page whose two adjacent sections both match is one hit with the
union's lines, text and sections, and the place it frees goes to the next hit; hits that do not
touch stay apart; a merged hit holds at most maxTokens; code merges too unless turned off; off is
the ranking of each chunk alone. psql, the Python searcher and so the CLI and MCP get the same hits."""

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fakes import HashEmbedder
from helpers import rows
from test_ranking import index_tree

from rag import db
from rag.config import Bm25Config, ChunkSettings, MergeAdjacentConfig, SearchConfig, SourceSpec
from rag.evaluation import Answer, is_relevant
from rag.indexer import index_source
from rag.providers.rerankers import NoReranker
from rag.search import Searcher, SearchRequest

FILLER = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do", "eiusmod",
          "tempor", "incididunt", "labore", "dolore", "magna", "aliqua", "enim", "minim", "veniam", "nostrud",
          "exercitation", "ullamco", "laboris", "nisi", "aliquip", "commodo"]


def section(title: str, words: str) -> str:
    """A section too large to share a chunk with the next one (maxTokens 40)."""
    return f"## {title}\n\n{words} {' '.join(FILLER[:22])}.\n\n"


# The query's words in -b and -c (next to each other) and in -e (apart: -d between them).
PAGE = "# tool\n\n" + "".join(section(f"-{letter}", {"b": "archive compress", "c": "compress archive members",
                                                      "e": "archive compress"}.get(letter, "plain"))
                              for letter in "abcdefg")
OTHER = "# other\n\n" + section("-x", "archive compress") + section("-y", "plain")
THIRD = "# third\n\n" + section("-z", "members")
CODE = ("def compress_archive(data):\n    '''compress archive members'''\n"
        + "".join(f'    step_{n} = "{" ".join(FILLER[n:n + 6])}"\n' for n in range(2)) + "    return data\n\n\n"
        "def archive_compress(data):\n    '''archive compress members'''\n"
        + "".join(f'    step_{n} = "{" ".join(FILLER[n + 2:n + 8])}"\n' for n in range(2)) + "    return data\n")
QUERY = "compress archive members"


@pytest.fixture
def pages(rag_db: db.DatabaseTarget, tmp_path: Path) -> db.DatabaseTarget:
    index_tree(rag_db, tmp_path / "p", {"docs/tool.md": PAGE, "docs/other.md": OTHER, "docs/third.md": THIRD,
                                          "src/pack.py": CODE},
               max_tokens=40)
    return rag_db


# The keyword arm's order without its pages' and phrases' evidence (bm25.pageWeight, bm25.phraseWeight,
# tests/test_bm25_pages.py): pages would lift every section of tool.md, -d between the matches included.
ARM = {"perFile": 10, "bm25": {"pageWeight": 0, "phraseWeight": 0}}


def search(target: db.DatabaseTarget, query: str = QUERY, top_k: int = 10, filters: dict[str, Any] | None = None,
           **merge: Any) -> list[dict[str, Any]]:
    """rag.search by keywords alone, every chunk of a file at full weight, with these mergeAdjacent options."""
    return rows(target, "SELECT * FROM rag.search(%s, NULL, %s, %s, %s)", query, top_k,
                json.dumps(filters) if filters else None, json.dumps({**ARM, "mergeAdjacent": merge}))


def tags(hit: dict[str, Any]) -> list[str]:
    """The sections a hit holds, by their last header."""
    sections = hit["metadata"].get("sections") or [{"headerPath": hit["header_path"]}]
    return [(s["headerPath"] or "").rsplit("## ", 1)[-1] for s in sections]


def chunk(target: db.DatabaseTarget, path: str, tag: str) -> dict[str, Any]:
    return rows(target, "SELECT c.id, c.content, (c.metadata->>'startLine')::integer AS start_line, "
                        "(c.metadata->>'endLine')::integer AS end_line FROM rag.chunks c JOIN rag.files f "
                        "ON f.id = c.file_id WHERE f.path = %s AND c.metadata->>'headerPath' LIKE %s",
                path, f"%## {tag}")[0]


def test_each_section_is_a_chunk_of_its_own(pages: db.DatabaseTarget) -> None:
    found = rows(pages, "SELECT count(*) AS n FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id "
                        "WHERE f.path = 'docs/tool.md' AND c.metadata->>'headerPath' LIKE '%%## -_'")
    assert found[0]["n"] == 7


def test_two_adjacent_sections_that_match_are_one_hit_of_their_lines(pages: db.DatabaseTarget) -> None:
    apart = search(pages, documents=False)
    placed = [(h["path"], tags(h)) for h in apart]
    assert ("docs/tool.md", ["-b"]) in placed and ("docs/tool.md", ["-c"]) in placed
    merged = search(pages)
    b, c = chunk(pages, "docs/tool.md", "-b"), chunk(pages, "docs/tool.md", "-c")
    hit = next(h for h in merged if h["path"] == "docs/tool.md" and "-c" in tags(h))
    assert tags(hit) == ["-b", "-c"]
    assert (hit["start_line"], hit["end_line"]) == (b["start_line"], c["end_line"])
    assert (hit["metadata"]["startLine"], hit["metadata"]["endLine"]) == (b["start_line"], c["end_line"])
    assert hit["content"] == b["content"] + "\n" + c["content"]
    assert hit["metadata"]["mergedChunks"] == [b["id"], c["id"]]
    # the better of the two gives the place its rank and scores
    best = min((h for h in apart if h["chunk_id"] in (b["id"], c["id"])), key=lambda h: apart.index(h))
    assert (hit["chunk_id"], hit["score"], hit["bm25_rank"]) == (best["chunk_id"], best["score"], best["bm25_rank"])
    assert [h["chunk_id"] for h in merged].count(hit["chunk_id"]) == 1
    assert not any(h["chunk_id"] in (b["id"], c["id"]) for h in merged if h is not hit)


def test_the_place_a_merge_frees_goes_to_the_next_hit(pages: db.DatabaseTarget) -> None:
    documents = {"types": ["markdown"]}
    apart = search(pages, top_k=4, filters=documents, documents=False)
    merged = search(pages, top_k=4, filters=documents)
    assert len(apart) == len(merged) == 4
    spans = {(h["path"], h["start_line"]) for h in merged}
    shown = {h["chunk_id"] for h in merged} | {i for h in merged for i in h["metadata"].get("mergedChunks", [])}
    assert {h["chunk_id"] for h in apart} <= shown
    assert len(spans) == 4 and len(shown) == 5  # one more chunk shown than places


def test_hits_that_do_not_touch_stay_apart(pages: db.DatabaseTarget) -> None:
    """-e matches as -b and -c do, but -d (no query word) lies between it and them."""
    merged = search(pages)
    on_page = [tags(h) for h in merged if h["path"] == "docs/tool.md"]
    assert ["-e"] in on_page and ["-b", "-c"] in on_page
    assert all("-d" not in t for t in on_page)
    assert all(h["metadata"].get("mergedChunks") is None for h in merged if h["path"] == "docs/other.md")


def test_a_merged_hit_holds_at_most_max_tokens(pages: db.DatabaseTarget) -> None:
    b, c = chunk(pages, "docs/tool.md", "-b"), chunk(pages, "docs/tool.md", "-c")
    both = rows(pages, "SELECT rag._token_count(%s) + rag._token_count(%s) AS n", b["content"], c["content"])[0]["n"]
    assert next(tags(h) for h in search(pages, maxTokens=both) if h["path"] == "docs/tool.md") == ["-b", "-c"]
    assert all(len(tags(h)) == 1 for h in search(pages, maxTokens=both - 1))
    for hit in search(pages, maxTokens=both + 10):
        assert rows(pages, "SELECT rag._token_count(%s) AS n", hit["content"])[0]["n"] <= both + 10


def test_off_is_each_chunk_alone(pages: db.DatabaseTarget) -> None:
    """Off (neither documents nor code), every hit is its chunk as stored, ranked as before."""
    off = search(pages, documents=False, code=False)
    stored = {r["id"]: r for r in rows(pages, "SELECT c.id, c.content, c.metadata FROM rag.chunks c")}
    assert off and all(h["content"] == stored[h["chunk_id"]]["content"]
                       and h["metadata"] == stored[h["chunk_id"]]["metadata"] for h in off)
    plain = rows(pages, "SELECT chunk_id, score FROM rag._hybrid_search(rag.parse_query(%s), NULL, NULL, 10, NULL, "
                        "NULL, NULL, NULL, rag.search_options(%s))",
                 QUERY, json.dumps({**ARM, "mergeAdjacent": {"documents": False, "code": False},
                            "vectorWeight": 0}))
    assert [(h["chunk_id"], h["score"]) for h in off] == [(r["chunk_id"], r["score"]) for r in plain]


def test_code_merges_unless_turned_off(pages: db.DatabaseTarget) -> None:
    apart = [h for h in search(pages, code=False) if h["path"] == "src/pack.py"]
    assert len(apart) == 2 and all(h["metadata"].get("mergedChunks") is None for h in apart)
    merged = [h for h in search(pages) if h["path"] == "src/pack.py"]
    assert len(merged) == 1
    assert (merged[0]["start_line"], merged[0]["end_line"]) == (min(h["start_line"] for h in apart),
                                                                max(h["end_line"] for h in apart))
    assert merged[0]["content"] == CODE.rstrip("\n")  # the blank lines between them too
    assert sorted(merged[0]["metadata"]["fqns"]) == ["archive_compress", "compress_archive"]
    assert "sections" not in merged[0]["metadata"]


def test_overlapping_chunks_share_their_lines_once(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    """A long section cut into pieces that overlap: the merged text holds each line once."""
    lines = [f"archive line {n} {' '.join(FILLER[n % 10:n % 10 + 6])}" for n in range(30)]
    root = tmp_path / "long"
    (root / "docs").mkdir(parents=True)
    (root / "docs/long.md").write_text("# long\n\n" + "\n".join(lines) + "\n")
    with db.connect(rag_db) as conn:
        index_source(conn, SourceSpec("p", "local", str(root)), root, HashEmbedder(), ChunkSettings(60, 20))
    pieces = rows(rag_db, "SELECT c.id, c.content, (c.metadata->>'startLine')::integer AS s, "
                          "(c.metadata->>'endLine')::integer AS e FROM rag.chunks c ORDER BY c.ordinal")
    assert len(pieces) >= 3 and pieces[1]["s"] <= pieces[0]["e"], "the pieces overlap"
    joined = rows(rag_db, "SELECT * FROM rag._merged_hit(%s)", [p["id"] for p in pieces])[0]
    text = (root / "docs/long.md").read_text().split("\n")
    assert (joined["start_line"], joined["end_line"]) == (pieces[0]["s"], pieces[-1]["e"])
    assert joined["content"] == "\n".join(text[pieces[0]["s"] - 1:pieces[-1]["e"]]) + "\n"


def test_the_searcher_shows_the_union_as_the_cli_and_mcp_do(pages: db.DatabaseTarget) -> None:
    """Python's hits carry the union's lines and sections: an answer in either section is found."""
    with db.connect(pages) as conn:
        searcher = Searcher(conn, SearchConfig(per_file=10, bm25=Bm25Config(page_weight=0, phrase_weight=0)), _NoEmbedder(),
                            NoReranker())
        hits = searcher.search(SearchRequest(QUERY, top_k=10, keyword_only=True)).hits
        searcher.settings = SearchConfig(per_file=10, bm25=Bm25Config(page_weight=0, phrase_weight=0),
                                         merge_adjacent=MergeAdjacentConfig(documents=False))
        apart = searcher.search(SearchRequest(QUERY, top_k=10, keyword_only=True)).hits
    hit = next(h for h in hits if h.path == "docs/tool.md" and len(h.header_paths or []) == 2)
    c = chunk(pages, "docs/tool.md", "-c")
    coordinates = {**hit.coordinates, "headerPaths": hit.header_paths}
    assert is_relevant(hit.path, coordinates, Answer("docs/tool.md", c["start_line"], c["end_line"]))
    assert is_relevant(hit.path, coordinates, Answer("docs/tool.md", header_path="# tool > ## -c"))
    assert [h.coordinates for h in apart if h.chunk_id == hit.chunk_id] != [hit.coordinates]


class _NoEmbedder:
    model_id = "none"
    dimensions = 0


@pytest.mark.parametrize(("merge", "message"), [
    ({"documents": "yes"}, "option mergeAdjacent.documents must be true or false, not \"yes\""),
    ({"code": 1}, "option mergeAdjacent.code must be true or false, not 1"),
    ({"maxTokens": 0}, "option mergeAdjacent.maxTokens must be a whole number of at least 1, not 0"),
    ({"maxTokens": 10.5}, "option mergeAdjacent.maxTokens must be a whole number of at least 1, not 10.5"),
    ({"gap": 1}, "unknown option 'mergeAdjacent.gap'"),
])
def test_bad_merge_options_are_named(rag_db: db.DatabaseTarget, merge: dict[str, Any], message: str) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
        rows(rag_db, "SELECT rag.search_options(%s)", json.dumps({"mergeAdjacent": merge}))
