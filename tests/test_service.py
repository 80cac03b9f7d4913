"""RagService used directly, as a library (the CLI and the MCP server are thin layers over it),
and the one translation of database errors into the package's exceptions."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes import HashEmbedder

from rag import db
from rag.config import LoadedConfig, RagConfig, SourceSpec
from rag.errors import DatabaseError, RagError, UnexpectedDatabaseError
from rag.search import SearchRequest
from rag.service import RagService, default_source_name, folder_source, git_source


def make_service(target: db.DatabaseTarget, config: dict[str, Any] | None = None) -> RagService:
    service = RagService(loaded=LoadedConfig(RagConfig.model_validate(config or {}), None, "test"),
                         embedder=HashEmbedder(8))
    service._target = target
    return service


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "stream.ts").write_text("export function combineLatest(a, b) {\n  return a;\n}\n")
    (root / "README.md").write_text("# Readme\n\nHow to combine streams.\n")
    return root


@pytest.fixture
def service(rag_db: db.DatabaseTarget, project: Path) -> Iterator[RagService]:
    service = make_service(rag_db)
    summary = service.index(folder_source(project))
    assert (summary.source, summary.status, summary.new, summary.chunks_total) == ("proj", "succeeded", 2, 2)
    yield service
    service.close()


def test_search_and_read_back(service: RagService) -> None:
    out = service.search(SearchRequest("combineLatest", top_k=3))
    assert out.results[0].path == "src/stream.ts" and out.warnings == []
    hit = out.results[0]
    chunk = service.read_source(chunk_id=hit.chunk_id, context=5)
    assert chunk.chunk_id == hit.chunk_id and chunk.content.startswith("export function combineLatest")
    assert service.read_source(path="src/stream.ts", start_line=2, end_line=2).content == "  return a;"
    with pytest.raises(RagError, match=r"did you mean: src/stream\.ts \(proj\)"):
        service.read_source(path="stream.ts")


def test_catalog_status_remove_and_gc(service: RagService, project: Path) -> None:
    listed = service.list_sources()
    assert [(s.name, s.file_count, s.indexing) for s in listed.sources] == [("proj", 2, False)]
    assert service.list_sources(path_prefix=str(project)).sources[0].name == "proj"
    assert service.list_sources(path_prefix="/elsewhere").sources == []
    status = service.status()
    assert status.database.connected and status.database.total_chunks == 2
    assert [c.model for c in status.embedding_coverage] == ["test@8"]
    assert status.indexing.last_run is not None and status.indexing.last_run.source == "proj"
    assert service.known_source("proj") == SourceSpec("proj", "local", str(project), None, (), ())
    assert service.known_source("ghost") is None
    assert service.remove_source("proj").removed_chunks == 2
    assert service.gc().pruned_embeddings == 2
    with pytest.raises(DatabaseError) as err:
        service.remove_source("proj")
    assert str(err.value) == "source 'proj' not found; known: none"  # the SQL function's name is dropped


def test_dry_run_changes_nothing(service: RagService, project: Path) -> None:
    (project / "new.py").write_text("x = 1\n")
    out = service.dry_run(folder_source(project))
    assert sorted(out.files) == ["README.md", "new.py", "src/stream.ts"] and out.root == str(project)
    assert service.list_sources().sources[0].file_count == 2


def test_a_database_without_schema_gets_it_on_first_use(empty_db: db.DatabaseTarget) -> None:
    service = make_service(empty_db)
    assert service.list_sources().sources == []
    assert service.status().database.schema_version == db.migration_files()[-1].stem
    service.close()


def test_an_older_schema_is_upgraded_and_concurrent_first_uses_are_safe(empty_db: db.DatabaseTarget) -> None:
    import threading

    db.install_schema(empty_db)
    with db.connect(empty_db) as conn:  # as an older version left it: another stamp, a function missing
        conn.execute("COMMENT ON SCHEMA rag IS 'local-rag schema 0000'")
        conn.execute("DROP FUNCTION rag.list_sources")
    services = [make_service(empty_db) for _ in range(3)]
    results: list[object] = []
    threads = [threading.Thread(target=lambda s=s: results.append(s.list_sources())) for s in services]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 3 and all(r.sources == [] for r in results)  # type: ignore[attr-defined]
    for s in services:
        s.close()


def test_an_unexpected_database_error(rag_db: db.DatabaseTarget) -> None:
    with db.connect(rag_db) as conn:
        conn.execute("ALTER TABLE rag.sources RENAME COLUMN location TO place")
    service = make_service(rag_db)
    with pytest.raises(UnexpectedDatabaseError, match=r"^database: column s\.location does not exist"):
        service.list_sources()
    service.close()


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (folder_source(Path("/work/My App")), SourceSpec("My-App", "local", "/work/My App")),
        (folder_source(Path("/work/x"), "named"), SourceSpec("named", "local", "/work/x")),
        (git_source("https://example.com/org/repo.git", "main"),
         SourceSpec("repo", "git", "https://example.com/org/repo.git", "main")),
    ],
)
def test_ad_hoc_sources(spec: SourceSpec, expected: SourceSpec) -> None:
    assert spec == expected


def test_a_location_without_a_usable_name() -> None:
    with pytest.raises(RagError, match="cannot derive a source name from '/'"):
        default_source_name("/")


def test_a_broken_schema_error_names_no_internal_relation(rag_db: db.DatabaseTarget) -> None:
    from rag.errors import SchemaMissingError

    with db.connect(rag_db) as conn:
        conn.execute("DROP TABLE rag.keyword_data_intact CASCADE")
    service = make_service(rag_db)
    with pytest.raises(SchemaMissingError) as err:
        service.search(SearchRequest("combine"))
    assert "keyword_data_intact" not in str(err.value) and "run `rag init`" in str(err.value)
    service.close()


@pytest.mark.parametrize("given", ["ts", "TypeScript", "TS", ".ts"])
def test_search_languages_accept_names_aliases_and_extensions(service: RagService, given: str) -> None:
    out = service.search(SearchRequest("combineLatest", languages=[given], rerank=False))
    assert [r.path for r in out.results] == ["src/stream.ts"]


def test_an_unknown_language_lists_the_valid_names(service: RagService) -> None:
    with pytest.raises(RagError, match=r"unknown language 'klingon'; .* all names: .*typescript"):
        service.search(SearchRequest("combineLatest", languages=["klingon"]))


def test_a_keyword_only_config_never_uses_a_query_vector_stored_by_another_model(
    service: RagService, rag_db: db.DatabaseTarget
) -> None:
    from rag.providers.base import NoneEmbedder

    hybrid = service.search(SearchRequest("combineLatest", rerank=False))  # stores the query's vector
    assert hybrid.results[0].scores.vector is not None
    keyword_only = RagService(loaded=service.loaded, embedder=NoneEmbedder())
    keyword_only._target = rag_db
    out = keyword_only.search(SearchRequest("combineLatest", rerank=False))
    assert out.results and all(r.scores.vector is None for r in out.results)
    assert out.warnings == []  # no model configured: keywords are what was asked for
    keyword_only.close()


def test_a_model_without_vectors_warns_that_the_answer_is_keyword_only(
    service: RagService, rag_db: db.DatabaseTarget
) -> None:
    other = RagService(loaded=service.loaded, embedder=HashEmbedder(8, name="other"))
    other._target = rag_db
    out = other.search(SearchRequest("combineLatest", rerank=False))
    assert out.results and all(r.scores.vector is None for r in out.results)
    assert len(out.warnings) == 1 and "no vectors of the embedding model other@8" in out.warnings[0]
    assert "keyword-only" in out.warnings[0]
    other.close()


def test_a_failing_reranker_is_one_warning_line(service: RagService, rag_db: db.DatabaseTarget) -> None:
    from rag.errors import ProviderError

    class BrokenReranker:
        name = "broken"

        def rerank(self, query: str, documents: list[str], top_k: int) -> Any:
            raise ProviderError("rerank: HTTP 500\nTraceback-like second line")

    broken = RagService(loaded=service.loaded, embedder=HashEmbedder(8), reranker=BrokenReranker())  # type: ignore[arg-type]
    broken._target = rag_db
    out = broken.search(SearchRequest("combineLatest"))
    assert out.warnings == ["reranker failed, results are in fused order: rerank: HTTP 500"]
    broken.close()


def test_searched_sources_without_vectors_of_the_model_warn(
    service: RagService, rag_db: db.DatabaseTarget, tmp_path: Path
) -> None:
    from rag.providers.base import NoneEmbedder

    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.md").write_text("# Todo\n\ncombineLatest needs tests.\n")
    keyword_only = RagService(loaded=service.loaded, embedder=NoneEmbedder())
    keyword_only._target = rag_db
    keyword_only.index(folder_source(other))
    keyword_only.close()
    out = service.search(SearchRequest("combineLatest", sources=["notes"], rerank=False))
    assert [r.path for r in out.results] == ["todo.md"]
    assert len(out.warnings) == 1 and "the sources searched (notes) have no vectors" in out.warnings[0]
    assert service.search(SearchRequest("combineLatest", sources=["proj"], rerank=False)).warnings == []
