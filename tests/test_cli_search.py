"""`rag search` through the CLI: readable output, --json, --batch, filters and bad input."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag import db
from rag.cli import app

runner = CliRunner()


@pytest.fixture
def indexed(tmp_path: Path, rag_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A keyword-only index (provider none: no model load) of a small project."""
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    cfg = tmp_path / "rag.config.yaml"
    cfg.write_text("embeddings: {provider: none}\n")
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "stream.ts").write_text(
        "export function combineLatest(a: Stream, b: Stream): Stream {\n  return merge(a, b);\n}\n")
    (root / "src" / "small.py").write_text("import os\n\nLIMIT = 3\n\ndef small():\n    return 1\n\n"
                                           "def tiny():\n    return 2\n")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# Guide\n\n## Streams\n\nCombine the latest values.\n")
    result = runner.invoke(app, ["index", "--path", str(root), "--name", "proj"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return cfg


def rag(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_search_readable_and_json(indexed: Path) -> None:
    code, out, _ = rag("search", "combineLatest")
    assert code == 0
    assert out.startswith("1. src/stream.ts:1-3") and "[proj, code, typescript]" in out and "bm25 #1" in out
    assert out.splitlines()[1].strip() == str(indexed.parent / "proj" / "src" / "stream.ts")
    code, out, _ = rag("search", "combine latest", "--json", "--type", "markdown")
    payload = json.loads(out)
    assert [r["path"] for r in payload["results"]] == ["docs/guide.md"]
    first = payload["results"][0]
    assert first["coordinates"]["headerPath"] == "# Guide > ## Streams"
    assert first["scores"]["bm25"] > 0 and first["scores"]["vector"] is None
    assert "Combine the latest" in first["snippet"]


def test_search_mode_keyword_is_the_bm25_arm_alone(indexed: Path) -> None:
    code, out, _ = rag("search", "combine latest", "--mode", "keyword", "--json")
    assert code == 0
    results = json.loads(out)["results"]
    assert results and all(r["scores"]["vectorRank"] is None and r["scores"]["bm25Rank"] for r in results)


def test_search_results_carry_fqns_language_and_absolute_path(indexed: Path) -> None:
    code, out, _ = rag("search", "tiny", "--json")
    assert code == 0
    [hit] = json.loads(out)["results"]
    assert hit["fqns"] == ["small", "tiny"] and hit["language"] == "python"
    assert hit["absolutePath"] == str(indexed.parent / "proj" / "src" / "small.py")
    code, out, _ = rag("search", "tiny")
    assert code == 0 and out.startswith("1. src/small.py:1-9  small, tiny  [proj, code, python]")


def test_search_demotes_tests_unless_asked(indexed: Path) -> None:
    root = indexed.parent / "proj"
    (root / "tests").mkdir()
    (root / "tests" / "stream.test.ts").write_text("test('combine latest', () => combineLatest(a, b));\n")
    assert rag("index", "--path", str(root), "--name", "proj")[0] == 0

    def test_score(*args: str) -> float:
        code, out, _ = rag("search", "combine latest", "--json", "--per-file", "1", *args)
        assert code == 0
        return float(next(r["scores"]["score"] for r in json.loads(out)["results"]
                          if r["path"] == "tests/stream.test.ts"))

    full, demoted = test_score("--include-tests"), test_score()
    assert full == pytest.approx(10 * demoted)


def test_search_batch(indexed: Path, tmp_path: Path) -> None:
    batch = tmp_path / "queries.jsonl"
    batch.write_text('{"id": "q1", "query": "combineLatest"}\n\n{"id": 2, "query": "streams guide"}\n'
                     '{"id": "q3", "query": "   "}\n')
    code, out, _ = rag("search", "--batch", str(batch), "-k", "1")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["id"] for line in lines] == ["q1", 2, "q3"]
    assert lines[0]["results"][0]["path"] == "src/stream.ts"
    assert set(lines[0]["results"][0]) == {"chunkId", "sourceName", "path", "sourceType", "language",
                                           "absolutePath", "url", "fqns", "headerPaths", "contextualText",
                                           "startLine", "endLine", "coordinates", "scores"}
    assert lines[1]["results"][0]["path"] == "docs/guide.md"
    assert "query is empty" in lines[2]["error"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search"], "give a QUERY or --batch FILE"),
        (["search", "x", "--type", "video"], "--type video: choose one of code, markdown, text, pdf"),
        (["search", "x", "--source", "ghost"], "unknown source 'ghost'; known: proj"),
        (["search", "--batch", "/no/file.jsonl"], "--batch /no/file.jsonl: cannot read"),
        (["search", "x", "--mode", "semantic"], "--mode semantic: choose one of hybrid, keyword, bm25, vector"),
        (["search", "combine", "--mode", "vector"],
         "a vector search needs vectors of the embedding model: embeddings.provider is none"),
    ],
)
def test_bad_search_input_is_one_line(indexed: Path, args: list[str], message: str) -> None:
    code, out, err = rag(*args)
    assert code == 1 and out == ""
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_read_back_by_chunk_id_path_lines_and_section(indexed: Path) -> None:
    hit = json.loads(rag("search", "combineLatest", "--json")[1])["results"][0]
    code, out, err = rag("read", str(hit["chunkId"]))
    assert code == 0 and out.startswith("export function combineLatest") and "proj: src/stream.ts:1-3" in err
    assert rag("read", "src/stream.ts", "--lines", "2")[1] == "  return merge(a, b);\n"
    assert rag("read", "src/stream.ts", "--lines", "2-", "--source", "proj")[1] == "  return merge(a, b);\n}\n"
    section = json.loads(rag("read", "docs/guide.md", "--section", "# Guide > ## Streams", "--json")[1])
    assert "Combine the latest values." in section["content"] and section["sourceName"] == "proj"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["read", "lib/stream.ts"], "did you mean: src/stream.ts (proj)"),
        (["read", "src/stream.ts", "--lines", "a-b"], "--lines a-b: give START-END, START- or START"),
        (["read", "src/stream.ts", "--lines", "3-1"], "--lines 3-1: the end is before the start"),  # (#56)
        (["read", "1", "--lines", "2"], "a chunk id already names the lines to read"),
        (["read", "999999"], "chunk 999999 is not in the index"),
    ],
)
def test_bad_read_input_is_one_line(indexed: Path, args: list[str], message: str) -> None:
    code, out, err = rag(*args)
    assert code == 1 and out == ""
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_a_query_of_10000_characters_with_the_local_model_answers(
    tmp_path: Path, rag_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut to the model's window for the vector arm (issue 19); the keyword arm takes all of it."""
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    root = tmp_path / "proj"
    root.mkdir()
    (root / "server.py").write_text("def start_embedded_database():\n    return launch('postgres')\n")
    (root / "notes.md").write_text("# Notes\n\nThe garden needs water on Sundays.\n")
    assert rag("index", "--path", str(root), "--name", "proj")[0] == 0
    query = ("where is the embedded database started " * 260)[:10_000]  # the longest query search takes

    code, out, err = rag("search", query, "--json")

    assert code == 0 and err == "", err
    hits = json.loads(out)["results"]
    assert hits[0]["path"] == "server.py" and hits[0]["scores"]["vector"] is not None
