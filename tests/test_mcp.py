"""The MCP tools through the SDK's in-memory client, against a real database: every tool and error path."""

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from fakes import HashEmbedder
from mcp import Client
from plugins.mcp import GUIDE, STREAM_TS, Harness, loaded_config, make_project
from typer.testing import CliRunner

from rag import db
from rag.cli import app
from rag.mcp_server import build_server
from rag.service import RagService

TOOLS = {"search", "read_source", "list_sources", "status", "index", "remove_source", "find_symbol",
         "traverse_graph"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


@pytest.fixture
def harness(rag_db: db.DatabaseTarget, project: Path, monkeypatch: pytest.MonkeyPatch,
            make_harness: Callable[..., Harness]) -> Harness:
    """A server whose database holds the project indexed as source 'proj' (vectors from HashEmbedder)."""
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    h = make_harness(embedder=HashEmbedder(8))
    summary = h.ok("index", {"path": str(project), "name": "proj"})
    assert summary["status"] == "succeeded" and summary["new"] == 2
    return h


def other_connection(target: db.DatabaseTarget) -> psycopg.Connection[dict[str, Any]]:
    return db.connect(target)


def wait_until_gone(target: db.DatabaseTarget, pid: int) -> None:
    """Until the server backend ``pid`` has exited: a closed client connection returns before its
    backend releases its session locks."""
    with other_connection(target) as conn:
        for _ in range(200):
            if not conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
                return
            time.sleep(0.05)
    raise AssertionError(f"backend {pid} still there after 10 s")


# ---------------------------------------------------------------------------
# tools/list


def test_tools_are_listed_with_schemas(make_harness: Callable[..., Harness]) -> None:
    h = make_harness()

    async def body(client: Client) -> Any:
        return await client.list_tools()

    tools = {t.name: t for t in h.session(body).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and tool.output_schema and tool.input_schema["type"] == "object"
    query = tools["search"].input_schema["properties"]["query"]
    assert (query["minLength"], query["maxLength"]) == (1, 2048)
    top_k = tools["search"].input_schema["properties"]["topK"]["anyOf"][0]
    assert (top_k["minimum"], top_k["maximum"]) == (1, 100)
    assert set(tools["search"].input_schema["properties"]) == {
        "query", "topK", "source", "sourceType", "language", "pathPrefix", "perFile", "includeTests"}
    output_schema = tools["search"].output_schema
    assert output_schema and {"results", "warnings"} <= set(output_schema["properties"])
    assert tools["search"].annotations and tools["search"].annotations.read_only_hint
    assert tools["remove_source"].annotations and tools["remove_source"].annotations.destructive_hint
    assert tools["remove_source"].input_schema["required"] == ["name"]


# ---------------------------------------------------------------------------
# search


def test_search_returns_structured_results(harness: Harness) -> None:
    out = harness.ok("search", {"query": "combineLatest"})
    assert out["query"] == "combineLatest" and out["results"] and out["warnings"] == []
    # (HashEmbedder's vectors rank at random, so the code hit need not be first)
    first = next(r for r in out["results"] if r["path"] == "src/stream.ts")
    assert first["sourceName"] == "proj" and first["sourceType"] == "code"
    assert first["startLine"] == first["coordinates"]["startLine"] >= 1
    assert first["scores"]["bm25"] > 0 and first["scores"]["vector"] is not None
    assert first["scores"]["score"] > 0 and first["scores"]["rerank"] is None
    assert "combineLatest" in first["snippet"] and len(first["snippet"]) <= 500
    assert first["language"] == "typescript" and first["absolutePath"].endswith("/proj/src/stream.ts")

    docs = harness.ok("search", {"query": "combine latest", "sourceType": "markdown", "topK": 1})
    assert [r["path"] for r in docs["results"]] == ["docs/guide.md"]
    assert docs["results"][0]["coordinates"]["headerPath"] == "# Guide"  # its small sections, merged
    assert "# Guide > ## Streams" in docs["results"][0]["headerPaths"]
    listed = harness.ok("search", {"query": "combine", "source": ["proj"], "pathPrefix": "docs/",
                                   "language": "markdown"})
    assert {r["path"] for r in listed["results"]} == {"docs/guide.md"}


def test_a_query_holding_nul_is_searched_as_if_a_space(harness: Harness) -> None:
    """#56: PostgreSQL's text refuses NUL; it once ended the search with a database error."""
    out = harness.ok("search", {"query": "combine\x00Latest"})
    assert any(r["path"] == "src/stream.ts" for r in out["results"])
    assert "the query is empty" in harness.error("search", {"query": "\x00"})


def test_search_snippet_is_cut_at_500(harness: Harness, project: Path) -> None:
    (project / "big.txt").write_text("zebra " * 400)
    harness.ok("index", {"source": "proj"})
    out = harness.ok("search", {"query": "zebra", "sourceType": "text"})  # (the project's code aside)
    assert len(out["results"][0]["snippet"]) == 500


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"query": "x", "source": "ghost"}, "unknown source 'ghost'; known: proj"),
        ({"query": "   "}, "the query is empty"),
        ({"query": "x" * 2049}, "String should have at most 2048 characters"),
        ({"query": ""}, "String should have at least 1 character"),
        ({"query": "x", "topK": 0}, "Input should be greater than or equal to 1"),
        ({"query": "x", "topK": 101}, "Input should be less than or equal to 100"),
        ({"query": "x", "sourceType": "video"}, "sourceType"),
        ({}, "query"),
    ],
)
def test_search_bad_input_is_a_tool_error(harness: Harness, args: dict[str, Any], message: str) -> None:
    assert message in harness.error("search", args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"query": "x", "topK": 0}, "invalid arguments: topK: Input should be greater than or equal to 1"),
        ({"query": "x", "topK": "many", "sourceType": "video"},
         "invalid arguments: topK: Input should be a valid integer"),
        ({}, "invalid arguments: query: Field required"),
    ],
)
def test_invalid_arguments_are_one_line_without_links(
    harness: Harness, args: dict[str, Any], message: str
) -> None:
    text = harness.error("search", args)
    assert text.startswith(message)
    assert "\n" not in text and "errors.pydantic.dev" not in text and "input_value" not in text


# ---------------------------------------------------------------------------
# read_source


def test_read_source_by_chunk_id_with_context(harness: Harness) -> None:
    hit = harness.ok("search", {"query": "combineLatest", "topK": 1, "pathPrefix": "src/"})["results"][0]
    out = harness.ok("read_source", {"chunkId": hit["chunkId"]})
    lines = STREAM_TS.splitlines()
    assert out["chunkId"] == hit["chunkId"] and out["metadata"]["path"] == "src/stream.ts"
    assert (out["startLine"], out["endLine"]) == (hit["startLine"], hit["endLine"])
    assert out["content"] == "\n".join(lines[hit["startLine"] - 1:hit["endLine"]])
    wider = harness.ok("read_source", {"chunkId": hit["chunkId"], "context": 100})
    assert (wider["startLine"], wider["endLine"], wider["totalLines"]) == (1, len(lines), len(lines))
    assert wider["content"] == STREAM_TS.rstrip("\n") and wider["truncated"] is False


def test_read_source_by_path_lines_and_section(harness: Harness, project: Path) -> None:
    whole = harness.ok("read_source", {"path": "docs/guide.md"})
    assert whole["content"] == GUIDE.rstrip("\n") and whole["sourceName"] == "proj"
    assert whole["sourceType"] == "markdown" and whole["chunkId"] is None

    lines = harness.ok("read_source", {"source": "proj", "path": "src/stream.ts", "startLine": 3, "endLine": 4})
    assert lines["content"] == "export function combineLatest(a: Stream, b: Stream): Stream {\n  return merge(a, b);"
    around = harness.ok("read_source", {"path": "src/stream.ts", "startLine": 4, "endLine": 4, "context": 1})
    assert (around["startLine"], around["endLine"]) == (3, 5)
    tail = harness.ok("read_source", {"path": "./src/stream.ts", "startLine": 7})
    assert tail["content"] == "export const answer = 42;"

    section = harness.ok("read_source", {"path": "docs/guide.md", "headerPath": "# Guide > ## Streams"})
    assert section["content"].startswith("## Streams") and "More about streams." in section["content"]
    assert "Tail." not in section["content"]
    everything = harness.ok("read_source", {"path": "docs/guide.md", "headerPath": "# Guide"})
    assert "Tail." in everything["content"]

    # An absolute path inside the source's folder is taken as the indexed file.
    absolute = harness.ok("read_source", {"path": str(project / "src" / "stream.ts"), "startLine": 7})
    assert absolute["path"] == "src/stream.ts" and absolute["content"] == "export const answer = 42;"


def test_read_source_serves_the_indexed_text_not_the_disk(harness: Harness, project: Path) -> None:
    (project / "src" / "stream.ts").write_text("changed on disk\n")
    (project / "docs" / "guide.md").unlink()
    assert harness.ok("read_source", {"path": "src/stream.ts", "startLine": 7})["content"] == (
        "export const answer = 42;")
    assert harness.ok("read_source", {"path": "docs/guide.md"})["totalLines"] == len(GUIDE.splitlines())


def test_read_source_truncates_long_reads(harness: Harness, project: Path) -> None:
    (project / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 2501)))
    harness.ok("index", {"source": "proj"})
    out = harness.ok("read_source", {"path": "long.txt"})
    assert out["truncated"] is True and (out["startLine"], out["endLine"], out["totalLines"]) == (1, 2000, 2500)
    rest = harness.ok("read_source", {"path": "long.txt", "startLine": 2001})
    assert rest["truncated"] is False and rest["content"].endswith("line 2500")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "say what to read: a chunkId from search results, or a path"),
        ({"chunkId": 1, "path": "src/stream.ts"}, "chunkId already names the lines to read"),
        ({"chunkId": 999999}, "chunk 999999 is not in the index"),
        ({"chunkId": 0}, "chunkId"),
        ({"path": "src/nope.ts"}, "path 'src/nope.ts' is not in the index of any source"),
        ({"path": "lib/stream.ts"}, "did you mean: src/stream.ts (proj)"),
        ({"path": "../../etc/passwd"}, "is not in the index of any source"),
        ({"path": "/etc/passwd"}, "path '/etc/passwd' is not in the index of any source"),
        ({"source": "ghost", "path": "src/stream.ts"}, "source 'ghost' not found; known: proj"),
        ({"path": "src/stream.ts", "startLine": 50}, "'src/stream.ts' has 7 lines; startLine 50 is past its end"),
        ({"path": "src/stream.ts", "startLine": 5, "endLine": 2}, "endLine 2 is before startLine 5"),
        ({"path": "docs/guide.md", "headerPath": "## Nope"},
         "no section '## Nope' in 'docs/guide.md'; its sections: # Guide; # Guide > ## Other; # Guide > ## Streams"),
        ({"path": "docs/guide.md", "headerPath": "# Guide", "startLine": 1}, "headerPath or startLine/endLine"),
        ({"path": "x", "context": -1}, "context"),
    ],
)
def test_read_source_errors(harness: Harness, args: dict[str, Any], message: str) -> None:
    assert message in harness.error("read_source", args)


def test_read_source_ambiguous_path_needs_source(harness: Harness, tmp_path: Path) -> None:
    harness.ok("index", {"path": str(make_project(tmp_path / "copy")), "name": "copy"})
    assert "path 'src/stream.ts' is in several sources (copy, proj); pass source" in harness.error(
        "read_source", {"path": "src/stream.ts"})
    assert harness.ok("read_source", {"path": "src/stream.ts", "source": "copy"})["sourceName"] == "copy"


# ---------------------------------------------------------------------------
# list_sources


def test_list_sources(harness: Harness, tmp_path: Path) -> None:
    harness.ok("index", {"path": str(make_project(tmp_path / "other")), "name": "other"})
    out = harness.ok("list_sources")
    assert [s["name"] for s in out["sources"]] == ["other", "proj"]
    proj = out["sources"][1]
    assert proj["type"] == "local" and proj["path"] == str(tmp_path / "proj")
    assert proj["fileCount"] == 2 and proj["chunkCount"] >= 2 and proj["lastIndexedAt"]
    assert proj["indexing"] is False and proj["branch"] is None
    assert [s["name"] for s in harness.ok("list_sources", {"limit": 1})["sources"]] == ["other"]
    assert [s["name"] for s in harness.ok("list_sources", {"namePrefix": "pr"})["sources"]] == ["proj"]
    by_path = harness.ok("list_sources", {"pathPrefix": str(tmp_path / "pro")})
    assert [s["name"] for s in by_path["sources"]] == ["proj"]
    assert harness.ok("list_sources", {"sourceType": "git"})["sources"] == []
    assert "sourceType" in harness.error("list_sources", {"sourceType": "svn"})
    assert "limit" in harness.error("list_sources", {"limit": 0})


# ---------------------------------------------------------------------------
# status


def test_status(harness: Harness, rag_db: db.DatabaseTarget) -> None:
    out = harness.ok("status")
    database = out["database"]
    assert database["connected"] is True and database["error"] is None
    assert database["schemaVersion"] == db.migration_files()[-1].stem and database["origin"] == "RAG_DATABASE_URL"
    assert database["totalSources"] == 1 and database["totalFiles"] == 2 and database["totalChunks"] >= 2
    assert out["providers"]["embeddings"] == {"provider": "local", "model": "all-MiniLM-L6-v2", "configured": True,
                                              "languages": ["english"]}
    assert out["providers"]["reranker"] == {"provider": "none", "model": None, "configured": False}
    assert out["embeddingCoverage"][0]["model"] == "test@8"
    indexing = out["indexing"]
    assert indexing["active"] is False and indexing["activeRuns"] == [] and indexing["lastIndexedAt"]
    assert indexing["lastRun"]["source"] == "proj" and indexing["lastRun"]["status"] == "succeeded"
    assert out["config"] == {"path": None, "origin": "test"}


def test_status_sees_a_run_of_another_process(harness: Harness, rag_db: db.DatabaseTarget) -> None:
    with other_connection(rag_db) as conn:  # what an indexer elsewhere holds while it runs
        pid = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]  # type: ignore[index]
        source_id = conn.execute("SELECT id FROM rag.sources WHERE name = 'proj'").fetchone()["id"]  # type: ignore[index]
        run_id = conn.execute("SELECT rag.begin_run(%s) AS id", (source_id,)).fetchone()["id"]  # type: ignore[index]
        indexing = harness.ok("status")["indexing"]
        assert indexing["active"] is True
        assert [(r["source"], r["runId"]) for r in indexing["activeRuns"]] == [("proj", run_id)]
        assert harness.ok("list_sources")["sources"][0]["indexing"] is True
        assert "source 'proj' is being indexed by another process" in harness.error("index", {"source": "proj"})
        assert "source 'proj' is being indexed now" in harness.error("remove_source", {"name": "proj"})
        assert harness.ok("search", {"query": "combineLatest"})["results"]  # searching goes on meanwhile
    wait_until_gone(rag_db, pid)
    # A run whose process died stays 'running' in index_runs but holds no lock: not active.
    assert harness.ok("status")["indexing"]["active"] is False


def test_status_providers_from_config(rag_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch,
                                      make_harness: Callable[..., Harness]) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    monkeypatch.setenv("JINA_API_KEY", "secret")
    out = make_harness({"embeddings": {"provider": "openai"},
                        "reranker": {"provider": "jina", "jina": {"apiKey": "${JINA_API_KEY}"}}}).ok("status")
    assert out["providers"]["embeddings"] == {"provider": "openai", "model": "text-embedding-3-small",
                                              "configured": False, "languages": None}  # (any language)
    assert out["providers"]["reranker"]["configured"] is True
    assert "secret" not in json.dumps(out)


def test_status_says_a_keyless_reranker_server_is_configured(
        rag_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch, make_harness: Callable[..., Harness]) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    monkeypatch.delenv("JINA_API_KEY", raising=False)
    keyless = {"provider": "jina", "jina": {"baseUrl": "http://127.0.0.1:7997"}}
    out = make_harness({"embeddings": {"provider": "none"}, "reranker": keyless}).ok("status")
    assert out["providers"]["reranker"]["configured"] is True
    jina_without_key = {"provider": "jina"}
    out = make_harness({"embeddings": {"provider": "none"}, "reranker": jina_without_key}).ok("status")
    assert out["providers"]["reranker"]["configured"] is False


def test_status_and_tools_when_the_database_is_down(monkeypatch: pytest.MonkeyPatch,
                                                    make_harness: Callable[..., Harness]) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", "postgresql://rag@127.0.0.1:1/nothing")
    h = make_harness({"embeddings": {"provider": "none"}})
    database = h.ok("status")["database"]
    assert database["connected"] is False and "cannot connect to postgresql://rag@127.0.0.1:1/nothing" in database["error"]
    assert "cannot connect to" in h.error("search", {"query": "x"})
    assert "cannot connect to" in h.error("list_sources")


def test_tools_on_a_database_without_schema_install_it(empty_db: db.DatabaseTarget,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      make_harness: Callable[..., Harness]) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", empty_db.url)
    h = make_harness({"embeddings": {"provider": "none"}})
    assert h.ok("list_sources")["sources"] == []
    database = h.ok("status")["database"]
    assert database["connected"] is True and database["error"] is None and database["schemaVersion"]


# ---------------------------------------------------------------------------
# index


def test_index_reports_progress_and_is_incremental(harness: Harness, project: Path) -> None:
    (project / "notes.txt").write_text("Some new notes about streams.\n")
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    out = harness.ok("index", {"source": "proj"}, progress_callback=on_progress)
    assert (out["new"], out["unchanged"], out["embedded"], out["errors"]) == (1, 2, 1, 0)
    assert out["source"] == "proj" and out["location"] == str(project) and out["chunksTotal"] >= 3
    progress = [p for p, _, _ in seen]
    assert progress == sorted(set(progress)) and len(progress) >= 4
    messages = [m or "" for _, _, m in seen]
    assert messages[0].startswith("scanned: 3 files found") and messages[-1] == "embedded 1/1 chunks"
    assert seen[-1][0] == seen[-1][1]

    again = harness.ok("index", {"source": "proj"})
    assert (again["new"], again["changed"], again["unchanged"], again["embedded"]) == (0, 0, 3, 0)
    forced = harness.ok("index", {"source": "proj", "force": True})
    assert forced["changed"] == 3 and forced["embedded"] == 0 and forced["reused"] == forced["chunksTotal"]


def test_index_configured_source_and_default_name(rag_db: db.DatabaseTarget, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  make_harness: Callable[..., Harness]) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    docs = make_project(tmp_path / "docs-folder")
    h = make_harness({"embeddings": {"provider": "none"},
                      "sources": [{"name": "docs", "type": "local", "path": str(docs), "include": ["**/*.md"]}]})
    out = h.ok("index", {"source": "docs"})
    assert out["filesFound"] == 1 and out["new"] == 1 and out["embedded"] == 0
    adhoc = h.ok("index", {"path": str(make_project(tmp_path / "My App"))})
    assert adhoc["source"] == "My-App"
    monkeypatch.chdir(tmp_path)
    relative = h.ok("index", {"path": "docs-folder", "name": "again"})
    assert relative["location"] == str(docs)
    assert "source 'ghost' not found; known: My-App, again, docs" in h.error("index", {"source": "ghost"})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "give source (a configured or already indexed source name) or path"),
        ({"source": "proj", "path": "/tmp"}, "one of them"),
        ({"source": "proj", "name": "x"}, "name goes with path"),
        ({"path": "/no/such/folder"}, "path '/no/such/folder' is not a directory"),
        ({"source": "ghost"}, "source 'ghost' not found; known: proj; to index a folder, pass path instead"),
        ({"path": "EMPTY", "name": "bad name!"}, "source name 'bad name!': use letters, digits"),
    ],
)
def test_index_errors(harness: Harness, tmp_path: Path, args: dict[str, Any], message: str) -> None:
    # An empty folder, not /tmp: a bad name is refused only after the folder is scanned.
    empty = tmp_path / "empty"
    empty.mkdir()
    args = {key: str(empty) if value == "EMPTY" else value for key, value in args.items()}
    assert message in harness.error("index", args)


def test_index_refuses_to_repoint_a_name(harness: Harness, tmp_path: Path) -> None:
    other = make_project(tmp_path / "elsewhere")
    assert "source 'proj' already indexes local" in harness.error("index", {"path": str(other), "name": "proj"})


# ---------------------------------------------------------------------------
# remove_source


def test_remove_source(harness: Harness) -> None:
    out = harness.ok("remove_source", {"name": "proj"})
    assert out["name"] == "proj" and out["removedChunks"] >= 2
    assert harness.ok("list_sources")["sources"] == []
    assert "source 'proj' not found; known: none" in harness.error("remove_source", {"name": "proj"})
    assert "name" in harness.error("remove_source", {"name": ""})


def test_remove_unknown_source_lists_known(harness: Harness) -> None:
    assert harness.error("remove_source", {"name": "x"}) == "source 'x' not found; known: proj"


# ---------------------------------------------------------------------------
# resilience


def test_reconnects_after_the_connection_is_lost(harness: Harness, rag_db: db.DatabaseTarget) -> None:
    assert harness.ok("search", {"query": "combineLatest"})["results"]
    with other_connection(rag_db) as admin:  # what a database restart does to open connections
        killed = admin.execute(
            "SELECT count(*) AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()) t").fetchone()
    assert killed and killed["n"] >= 1
    assert harness.ok("search", {"query": "combineLatest"})["results"]
    assert harness.ok("status")["database"]["connected"] is True


def test_an_unexpected_failure_is_a_tool_error(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("boom")

    monkeypatch.setattr("rag.service.RagService.list_sources", broken)
    assert harness.error("list_sources") == (
        "internal error (ValueError: boom); the server log has the traceback")
    assert harness.ok("status")["database"]["connected"] is True  # the server goes on


def test_warm_up_connects_after_the_first_tools_list(rag_db: db.DatabaseTarget,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    monkeypatch.setattr("rag.mcp_server.WARM_UP_DELAY", 0.0)
    service = RagService(loaded=loaded_config({"embeddings": {"provider": "none"}}))
    server = build_server(service, preload=True)

    async def body() -> None:
        async with Client(server) as client:
            await client.list_tools()

    assert service.known_target() is None
    anyio.run(body)
    deadline = time.monotonic() + 30
    while service.known_target() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert service.known_target() == db.DatabaseTarget(rag_db.url, "RAG_DATABASE_URL")
    service.close()


# ---------------------------------------------------------------------------
# rag mcp: configuration errors stop the server before it serves


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["mcp", "--config", "/no/rag.yaml"], {}, "config file /no/rag.yaml (from --config) does not exist"),
        (["--config", "/no/rag.yaml", "mcp"], {}, "config file /no/rag.yaml (from --config) does not exist"),
        (["mcp"], {"RAG_CONFIG": "/no/env.yaml"}, "config file /no/env.yaml (from RAG_CONFIG) does not exist"),
        (["mcp"], {"RAG_LOG_LEVEL": "chatty"}, "RAG_LOG_LEVEL='CHATTY': use one of DEBUG, INFO"),
    ],
)
def test_rag_mcp_reports_a_bad_config(args: list[str], env: dict[str, str], message: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error: ") and message in result.stderr
