"""Passage vectors: a document chunk is also embedded paragraph group by paragraph group,
and the vector arm scores it by the nearest of its vectors (rag.vector_search)."""

import json
from pathlib import Path
from typing import Any

from fakes import HashEmbedder
from helpers import rows

from rag import db
from rag.chunking.model import Chunk
from rag.chunking.passages import DOCUMENT_SOURCE_TYPES, chunk_passages
from rag.config import ChunkSettings, SourceSpec
from rag.indexer import index_source
from rag.schemas import SOURCE_TYPES

SETTINGS = ChunkSettings(max_tokens=256, overlap=0)
PARAGRAPHS = [" ".join(f"{topic}{i}" for i in range(45)) for topic in ("cache", "queue", "retry")]
GUIDE = "# Guide\n\n" + "\n\n".join(PARAGRAPHS) + "\n"


def index(target: db.DatabaseTarget, root: Path, embedder: HashEmbedder) -> Any:
    with db.connect(target) as conn:
        return index_source(conn, SourceSpec("proj", "local", str(root)), root, embedder, SETTINGS)


def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    (root / "guide.md").write_text(GUIDE)
    (root / "tool.py").write_text("def configure(settings):\n    return settings\n")
    return root


def stored_chunk(target: db.DatabaseTarget) -> Chunk:
    row = rows(target, "SELECT c.content, c.metadata FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id"
                       " WHERE f.path = 'guide.md'")
    assert len(row) == 1, "the section is one chunk"
    return Chunk(row[0]["content"], row[0]["metadata"])


def passage_text(chunk: Chunk, number: int) -> str:
    ends = [p.end for p in chunk_passages(chunk)]
    start = ends[number - 1] if number else 0
    return f"{chunk.context}\n{chunk.content[start:ends[number]]}"


def test_document_passages_are_stored_and_embedded_and_code_has_none(
    rag_db: db.DatabaseTarget, tmp_path: Path
) -> None:
    embedder = HashEmbedder()
    summary = index(rag_db, project(tmp_path), embedder)
    chunk = stored_chunk(rag_db)
    passages = chunk_passages(chunk)
    assert len(passages) == 3
    stored = rows(rag_db, "SELECT p.ordinal, p.end_offset, p.content_hash, f.path, p.source_id = c.source_id AS same"
                          " FROM rag.passages p JOIN rag.chunks c ON c.id = p.chunk_id JOIN rag.files f ON f.id = c.file_id"
                          " ORDER BY p.ordinal")
    assert [(r["end_offset"], r["content_hash"], r["path"], r["same"]) for r in stored] == [
        (p.end, p.content_hash, "guide.md", True) for p in passages]
    texts = [passage_text(chunk, n) for n in range(3)]
    assert set(texts) <= set(embedder.embedded_texts), "the database rebuilds the texts the hashes name"
    assert summary.embedded == 2 + 3
    vectors = rows(rag_db, "SELECT (SELECT count(*) FROM rag.embeddings) AS chunks,"
                           " (SELECT count(*) FROM rag.passage_embeddings) AS passages")
    assert vectors == [{"chunks": 2, "passages": 3}], "each population in its own table, with its own HNSW index"
    indexes = rows(rag_db, "SELECT tablename FROM pg_indexes WHERE indexname LIKE '%%embeddings_hnsw_%%'"
                           " ORDER BY tablename")
    assert [r["tablename"] for r in indexes] == ["embeddings", "passage_embeddings"]
    again = index(rag_db, tmp_path / "p", embedder)
    assert (again.embedded, again.reused) == (0, 5), "nothing changed: every vector reused"


def test_a_chunk_is_as_near_as_its_nearest_passage_exact_and_through_hnsw(
    rag_db: db.DatabaseTarget, tmp_path: Path
) -> None:
    embedder = HashEmbedder(dimensions=16)
    index(rag_db, project(tmp_path), embedder)
    chunk = stored_chunk(rag_db)
    guide_id = rows(rag_db, "SELECT c.id FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id"
                            " WHERE f.path = 'guide.md'")[0]["id"]
    query = "[" + ",".join(map(str, embedder.embed_query(passage_text(chunk, 1)))) + "]"
    for exact_below, sources in ((100000, "{proj}"), (0, "{proj}"), (2000, None)):
        found = rows(rag_db, "SELECT chunk_id, score, rank FROM rag.vector_search(%s::vector, %s, 10, %s::text[],"
                             " exact_below => %s)", query, embedder.model_id, sources, exact_below)
        assert found[0]["chunk_id"] == guide_id and abs(found[0]["score"] - 1) < 1e-6, (exact_below, sources)
        assert len({r["chunk_id"] for r in found}) == len(found) == 2, "each chunk once"

    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "run.py").write_text("def run():\n    return 1\n")
    with db.connect(rag_db) as conn:
        index_source(conn, SourceSpec("tools", "local", str(tools)), tools, embedder, SETTINGS)
    for exact_below in (100000, 0):  # a source without documents: its chunks alone, no passage scan
        found = rows(rag_db, "SELECT c.source_id = s.id AS in_tools FROM rag.vector_search(%s::vector, %s, 10,"
                             " '{tools}', exact_below => %s) v JOIN rag.chunks c ON c.id = v.chunk_id"
                             " JOIN rag.sources s ON s.name = 'tools'", query, embedder.model_id, exact_below)
        assert [r["in_tools"] for r in found] == [True], exact_below


def test_passages_go_with_their_chunk_and_gc_keeps_their_vectors_until_then(
    rag_db: db.DatabaseTarget, tmp_path: Path
) -> None:
    embedder = HashEmbedder()
    root = project(tmp_path)
    index(rag_db, root, embedder)
    assert rows(rag_db, "SELECT rag.gc() AS n") == [{"n": 0}], "passage vectors are in use"
    (root / "guide.md").write_text(GUIDE.replace("queue", "stream"))
    index(rag_db, root, embedder)
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.passages") == [{"n": 3}], "the old chunk's passages went"
    assert rows(rag_db, "SELECT rag.gc() AS n") == [{"n": 2}], "the old chunk's and its changed passage's vectors"
    (root / "guide.md").unlink()
    index(rag_db, root, embedder)
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.passages") == [{"n": 0}]
    assert rows(rag_db, "SELECT rag.remove_source('proj') AS n") == [{"n": 1}]
    assert rows(rag_db, "SELECT rag.gc() AS n") == [{"n": 2 + 3}], "both chunks' and the passages' vectors"


def test_document_source_types_are_those_rag_is_document_accepts(rag_db: db.DatabaseTarget) -> None:
    """DOCUMENT_SOURCE_TYPES mirrors rag._is_document: the same chunks get passages and stems."""
    assert DOCUMENT_SOURCE_TYPES.issubset(SOURCE_TYPES)
    for source_type in [*SOURCE_TYPES, None]:
        metadata = {} if source_type is None else {"sourceType": source_type}
        [row] = rows(rag_db, "SELECT rag._is_document(%s::jsonb) AS document", json.dumps(metadata))
        assert row["document"] == (source_type in DOCUMENT_SOURCE_TYPES), source_type
