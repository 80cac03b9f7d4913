"""What a chunk is found by: its context (path, then fqn or headerPath) before its content,
for BM25 and the embedding model, while its content alone is what is shown."""

import hashlib
from pathlib import Path
from typing import Any

import pytest
from fakes import HashEmbedder
from helpers import rows

from rag import db
from rag.config import ChunkSettings, SourceSpec
from rag.dispatcher import chunk_bytes
from rag.indexer import index_source
from rag.providers import NoneEmbedder

SETTINGS = ChunkSettings(max_tokens=60, overlap=0)
LEDGER = (
    '"""Sums of money."""\n\nimport math\n\n\nclass Ledger:\n'
    + "".join(f"    def step_{i}(self, values):\n        return math.fsum(values) * {i}\n\n" for i in range(8))
)
GUIDE = "# Deployment\n\nIntro.\n\n## Kubernetes\n\nRun the chart with helm.\n"


def chunks_of(path: str, text: str) -> list[Any]:
    return chunk_bytes(text.encode(), path, max_tokens=SETTINGS.max_tokens, overlap=SETTINGS.overlap).chunks


def index(target: db.DatabaseTarget, root: Path, embedder: Any, name: str = "proj") -> Any:
    with db.connect(target) as conn:
        return index_source(conn, SourceSpec(name, "local", str(root)), root, embedder, SETTINGS)


def make_project(root: Path) -> Path:
    (root / "billing").mkdir(parents=True)
    (root / "billing" / "invoice_totals.py").write_text(LEDGER)
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text(GUIDE)
    (root / "notes.txt").write_text("plain words about nothing\n")
    return root


@pytest.mark.usefixtures("sections_unmerged")
def test_context_is_the_path_then_the_fqn_or_the_header_path() -> None:
    code = chunks_of("billing/invoice_totals.py", LEDGER)
    methods = [c for c in code if c.metadata.get("fqn", "").startswith("Ledger.")]
    assert methods, "the class is cut into its methods"
    for chunk in methods:
        assert chunk.context == f"billing/invoice_totals.py\n{chunk.metadata['fqn']}"
    docs = chunks_of("docs/guide.md", GUIDE)
    assert [c.context for c in docs] == ["docs/guide.md\n# Deployment", "docs/guide.md\n# Deployment > ## Kubernetes"]
    assert [c.context for c in chunks_of("notes.txt", "plain words\n")] == ["notes.txt"]
    assert [c.context for c in chunks_of("README.md", "No header at all.\n")] == ["README.md"]  # headerPath ""
    for chunk in [*code, *docs]:
        assert chunk.indexed_text == f"{chunk.context}\n{chunk.content}"
        assert not chunk.content.startswith(chunk.metadata["path"]), "the content is what is shown"


def test_content_hash_covers_the_context() -> None:
    (here,), (there,), (again,) = (chunks_of(p, "same words\n") for p in ("a/x.txt", "b/x.txt", "a/x.txt"))
    assert here.content == there.content and here.content_hash != there.content_hash
    assert here.content_hash == again.content_hash == hashlib.sha256(b"a/x.txt\nsame words\n").hexdigest()


@pytest.mark.usefixtures("sections_unmerged")
def test_bm25_and_the_model_see_the_context_and_search_shows_the_content(
    rag_db: db.DatabaseTarget, tmp_path: Path
) -> None:
    root = make_project(tmp_path / "p")
    embedder = HashEmbedder()
    index(rag_db, root, embedder)
    stored = rows(rag_db, "SELECT c.id, c.context, c.content, c.content_hash, c.metadata->>'path' AS path"
                          " FROM rag.chunks c ORDER BY c.id")
    for path in ("billing/invoice_totals.py", "docs/guide.md", "notes.txt"):  # stored as chunked, no prefix
        chunked = chunks_of(path, (root / path).read_text())
        assert [r["content"] for r in stored if r["path"] == path] == [c.content for c in chunked]
        assert [r["context"] for r in stored if r["path"] == path] == [c.context for c in chunked]
    for row in stored:
        assert hashlib.sha256(f"{row['context']}\n{row['content']}".encode()).hexdigest() == row["content_hash"]
    assert sorted(embedder.embedded_texts) == sorted(f"{r['context']}\n{r['content']}" for r in stored)

    # "invoice" is only in a path, "deployment" only in the Kubernetes section's headerPath
    invoice = {r["chunk_id"] for r in rows(rag_db, "SELECT chunk_id FROM rag.bm25_search('invoice', 50)")}
    assert invoice == {r["id"] for r in stored if r["path"] == "billing/invoice_totals.py"}
    deployment = rows(rag_db, "SELECT c.metadata->>'headerPath' AS h FROM rag.bm25_search('deployment', 50) b"
                              " JOIN rag.chunks c ON c.id = b.chunk_id ORDER BY 1")
    assert [r["h"] for r in deployment] == ["# Deployment", "# Deployment > ## Kubernetes"]
    lengths = rows(rag_db, "SELECT c.term_count = (SELECT sum(t.tf) FROM rag.term_frequencies("
                           "c.context || E'\\n' || c.content) t) AS counted FROM rag.chunks c")
    assert {r["counted"] for r in lengths} == {True}, "term_count includes the context's words"

    shown = rows(rag_db, "SELECT content FROM rag.read_chunk(%s)", stored[0]["id"])
    assert shown[0]["content"] == stored[0]["content"]


def test_same_content_under_two_paths_is_embedded_twice(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / "p" / folder).mkdir(parents=True)
        (tmp_path / "p" / folder / "util.txt").write_text("shared helper text\n")
    embedder = HashEmbedder()
    summary = index(rag_db, tmp_path / "p", embedder)
    assert sorted(embedder.embedded_texts) == ["a/util.txt\nshared helper text\n", "b/util.txt\nshared helper text\n"]
    assert summary.embedded == 2 and summary.reused == 0


def test_texts_left_to_embed_are_the_indexed_texts(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    index(rag_db, make_project(tmp_path / "p"), NoneEmbedder())
    missing = rows(rag_db, "SELECT content_hash, content FROM rag.chunks_without_embedding("
                           "(SELECT id FROM rag.sources), 'some@8')")
    assert len(missing) == rows(rag_db, "SELECT count(*) AS n FROM rag.chunks")[0]["n"] > 3
    for row in missing:
        assert hashlib.sha256(row["content"].encode()).hexdigest() == row["content_hash"]
        assert row["content"].startswith(("billing/", "docs/", "notes.txt\n"))


def test_postings_rebuilt_after_a_crash_keep_the_context(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    index(rag_db, make_project(tmp_path / "p"), NoneEmbedder())
    everything = "SELECT term, chunk_id, tf, term_count FROM rag.postings ORDER BY term, chunk_id"
    before = rows(rag_db, everything)
    assert any(r["term"] == "invoice" for r in before)
    with db.connect(rag_db) as conn:
        conn.execute("TRUNCATE rag.postings, rag.keyword_data_intact")
        assert conn.execute("SELECT rag.ensure_keyword_data() AS r").fetchone() == {"r": True}
    assert rows(rag_db, everything) == before


@pytest.mark.parametrize("name", ["late.py", "late.json", "late.md"])
def test_a_nul_past_the_binary_sniff_is_stored_as_a_replacement(
    rag_db: db.DatabaseTarget, tmp_path: Path, name: str
) -> None:
    """#56: NUL is refused by PostgreSQL wherever it enters; a file whose first 8 KB are text
    is stored with it as U+FFFD, whichever chunker reads it."""
    root = tmp_path / "nul"
    root.mkdir()
    filler = "# padding line of text\n" * 600 if name.endswith((".py", ".yaml", ".txt", ".md")) else "\n" * 12_000
    (root / name).write_text(filler + 'key = "value\x00after"\n', encoding="utf-8")
    summary = index(rag_db, root, NoneEmbedder())
    assert summary.status == "succeeded" and summary.new == 1
    (stored,) = rows(rag_db, "SELECT content FROM rag.files")
    assert "\x00" not in stored["content"] and "after" in stored["content"]
