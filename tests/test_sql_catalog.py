"""The read-back and catalog SQL functions called through the driver, table-driven, errors included:
rag.read_chunk, rag.read_file_range, rag.list_sources (path_prefix, indexing), rag.has_model,
rag.finish_run's chunk total, rag.stored_query_embedding."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fakes import HashEmbedder
from plugins.mcp import GUIDE, STREAM_TS, make_project

from rag import db, sqlapi
from rag.config import ChunkSettings, SourceSpec
from rag.indexer import index_source

Conn = psycopg.Connection[dict[str, Any]]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj")
    (root / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 2501)))
    return root


@pytest.fixture
def conn(rag_db: db.DatabaseTarget, project: Path) -> Iterator[Conn]:
    """A connection to a database holding ``project`` as source 'proj' (vectors of HashEmbedder(8))."""
    with db.connect(rag_db) as conn:
        index_source(conn, SourceSpec("proj", "local", str(project)), project, HashEmbedder(8), ChunkSettings())
        yield conn


def read_range(conn: Conn, *args: Any) -> dict[str, Any]:
    row = conn.execute("SELECT * FROM rag.read_file_range(%s, %s, %s, %s, %s, %s)", args).fetchone()
    assert row is not None
    return row


def lines(first: int, last: int, text: str = STREAM_TS) -> str:
    return "\n".join(text.split("\n")[first - 1:last])


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("proj", "src/stream.ts", 3, 4, None, 0), (3, 4, 7, lines(3, 4), False)),
        ((None, "src/stream.ts", 4, 4, None, 1), (3, 5, 7, lines(3, 5), False)),
        ((None, "./src/stream.ts", 7, None, None, 0), (7, 7, 7, "export const answer = 42;", False)),
        ((None, "src\\stream.ts", 1, 1, None, 0), (1, 1, 7, lines(1, 1), False)),
        ((None, " src//stream.ts ", None, None, None, 0), (1, 7, 7, lines(1, 7), False)),
        ((None, "src/stream.ts", 1, 2, None, 50), (1, 7, 7, lines(1, 7), False)),
        ((None, "docs/guide.md", None, None, "# Guide > ## Streams", 0), (5, 8, 12, lines(5, 8, GUIDE), False)),
        ((None, "long.txt", None, None, None, 0), (1, 2000, 2500, lines(1, 2000, "".join(
            f"line {n}\n" for n in range(1, 2501))), True)),
        ((None, "long.txt", 2001, None, None, 0), (2001, 2500, 2500, lines(2001, 2500, "".join(
            f"line {n}\n" for n in range(1, 2501))), False)),
    ],
)
def test_read_file_range(conn: Conn, args: tuple[Any, ...], expected: tuple[Any, ...]) -> None:
    row = read_range(conn, *args)
    assert (row["start_line"], row["end_line"], row["total_lines"], row["content"], row["truncated"]) == expected
    assert row["source_name"] == "proj" and row["metadata"] is None


def test_read_file_range_takes_an_absolute_path_inside_the_source(conn: Conn, project: Path) -> None:
    row = read_range(conn, None, str(project / "src" / "stream.ts"), 7, None, None, 0)
    assert (row["path"], row["content"]) == ("src/stream.ts", "export const answer = 42;")


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (("ghost", "src/stream.ts", None, None, None, 0), psycopg.errors.NoDataFound,
         "read_file_range: source 'ghost' not found; known: proj"),
        ((None, "lib/stream.ts", None, None, None, 0), psycopg.errors.NoDataFound,
         "read_file_range: path 'lib/stream.ts' is not in the index of any source; "
         "did you mean: src/stream.ts (proj)"),
        (("proj", "nope.txt", None, None, None, 0), psycopg.errors.NoDataFound,
         "read_file_range: path 'nope.txt' is not in the index of source 'proj'; only indexed files can be "
         "read"),
        ((None, "/etc/passwd", None, None, None, 0), psycopg.errors.NoDataFound,
         "read_file_range: path '/etc/passwd' is not in the index of any source"),
        ((None, "../../src/stream.ts", None, None, None, 0), psycopg.errors.NoDataFound,
         "read_file_range: path '../../src/stream.ts' is not in the index"),
        ((None, "src/stream.ts", 50, None, None, 0), psycopg.errors.InvalidParameterValue,
         "read: 'src/stream.ts' has 7 lines; startLine 50 is past its end"),
        ((None, "src/stream.ts", 5, 2, None, 0), psycopg.errors.InvalidParameterValue,
         "read_file_range: last_line 2 is before first_line 5"),
        ((None, "docs/guide.md", 1, None, "# Guide", 0), psycopg.errors.InvalidParameterValue,
         "read_file_range: give header_path or first_line/last_line, not both"),
        ((None, "docs/guide.md", None, None, "## Nope", 0), psycopg.errors.NoDataFound,
         "read_file_range: no section '## Nope' in 'docs/guide.md'; its sections: "
         "# Guide; # Guide > ## Other; # Guide > ## Streams"),
        ((None, "src/stream.ts", None, None, None, -1), psycopg.errors.InvalidParameterValue,
         "read_file_range: context must be 0 or more, not -1"),
        ((None, None, None, None, None, 0), psycopg.errors.InvalidParameterValue,
         "read_file_range: file_path is required"),
    ],
)
def test_read_file_range_refuses(conn: Conn, args: tuple[Any, ...], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as raised:
        read_range(conn, *args)
    assert str(raised.value).startswith(message)


def test_read_file_range_asks_for_a_source_when_several_hold_the_path(conn: Conn, project: Path) -> None:
    index_source(conn, SourceSpec("copy", "local", str(project)), project, HashEmbedder(8), ChunkSettings())
    with pytest.raises(psycopg.errors.InvalidParameterValue,
                       match=r"path 'src/stream.ts' is in several sources \(copy, proj\)"):
        read_range(conn, None, "src/stream.ts", None, None, None, 0)
    assert read_range(conn, "copy", "src/stream.ts", 7, 7, None, 0)["source_name"] == "copy"


def chunk_of(conn: Conn, path: str) -> dict[str, Any]:
    row = conn.execute(
        "SELECT r.chunk_id, r.metadata FROM rag.search('combineLatest', top_k => 5) r WHERE r.path = %s",
        (path,)).fetchone()
    assert row is not None
    return row


@pytest.mark.parametrize(("context", "widen"), [(0, 0), (1, 1), (100, 100)])
def test_read_chunk(conn: Conn, context: int, widen: int) -> None:
    hit = chunk_of(conn, "src/stream.ts")
    first, last = hit["metadata"]["startLine"], hit["metadata"]["endLine"]
    row = conn.execute("SELECT * FROM rag.read_chunk(%s, %s)", (hit["chunk_id"], context)).fetchone()
    assert row is not None
    want_first, want_last = max(1, first - widen), min(7, last + widen)
    assert (row["start_line"], row["end_line"], row["total_lines"]) == (want_first, want_last, 7)
    assert row["content"] == lines(want_first, want_last)
    assert row["metadata"]["startLine"] == first and row["path"] == "src/stream.ts"


@pytest.mark.parametrize(
    ("chunk_id", "context", "error", "message"),
    [
        (999_999, 0, psycopg.errors.NoDataFound, "read_chunk: chunk 999999 is not in the index"),
        (None, 0, psycopg.errors.NoDataFound, "read_chunk: chunk NULL is not in the index"),
        (1, -1, psycopg.errors.InvalidParameterValue, "read_chunk: context must be 0 or more, not -1"),
    ],
)
def test_read_chunk_refuses(conn: Conn, chunk_id: int | None, context: int, error: type[Exception],
                            message: str) -> None:
    with pytest.raises(error) as raised:
        conn.execute("SELECT * FROM rag.read_chunk(%s, %s)", (chunk_id, context))
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        ({}, ["other", "proj"]),
        ({"path_prefix": "{project}"}, ["proj"]),
        ({"path_prefix": "/nowhere/"}, []),
        ({"name_prefix": "ot"}, ["other"]),
        ({"source_type": "git"}, []),
        ({"max_rows": 1}, ["other"]),
    ],
)
def test_list_sources_filters(conn: Conn, project: Path, tmp_path: Path, kwargs: dict[str, Any],
                              names: list[str]) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "a.txt").write_text("a\n")
    index_source(conn, SourceSpec("other", "local", str(other)), other, HashEmbedder(8), ChunkSettings())
    args = {k: (v.format(project=project) if isinstance(v, str) else v) for k, v in kwargs.items()}
    named = ", ".join(f"{k} => %({k})s" for k in args)
    rows = conn.execute(f"SELECT * FROM rag.list_sources({named})", args).fetchall()
    assert [r["name"] for r in rows] == names


def test_list_sources_says_which_source_is_being_indexed(conn: Conn, rag_db: db.DatabaseTarget) -> None:
    def indexing() -> bool:
        row = conn.execute("SELECT indexing FROM rag.list_sources() WHERE name = 'proj'").fetchone()
        assert row is not None
        return bool(row["indexing"])

    assert indexing() is False
    with db.connect(rag_db) as runner:
        source_id = runner.execute("SELECT id FROM rag.list_sources() WHERE name = 'proj'").fetchone()
        assert source_id is not None
        run_id = runner.execute("SELECT rag.begin_run(%s) AS id", (source_id["id"],)).fetchone()
        assert run_id is not None and indexing() is True
        total = runner.execute("SELECT rag.finish_run(%s, 'succeeded') AS total", (run_id["id"],)).fetchone()
    assert indexing() is False
    chunks = conn.execute("SELECT chunks FROM rag.list_sources() WHERE name = 'proj'").fetchone()
    assert total is not None and chunks is not None and total["total"] == chunks["chunks"] > 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"source_type": "svn"}, "list_sources: source_type must be local, git or confluence, not 'svn'"),
        ({"max_rows": 0}, "list_sources: max_rows must be at least 1, not 0"),
    ],
)
def test_list_sources_refuses(conn: Conn, kwargs: dict[str, Any], message: str) -> None:
    named = ", ".join(f"{k} => %({k})s" for k in kwargs)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
        conn.execute(f"SELECT * FROM rag.list_sources({named})", kwargs)


@pytest.mark.parametrize(("model", "known"), [("test@8", True), ("test@16", False), ("", False), (None, False)])
def test_has_model(conn: Conn, model: str | None, known: bool) -> None:
    assert sqlapi.has_model(conn, model) is known  # type: ignore[arg-type]


def test_stored_query_embedding(conn: Conn) -> None:
    def stored(query: str) -> Any:
        row = conn.execute("SELECT rag.stored_query_embedding('test@8', %s)::text AS v", (query,)).fetchone()
        assert row is not None
        return row["v"]

    assert stored("never asked") is None
    conn.execute("SELECT rag.remember_query_embedding('test@8', 'asked', '[1,0,0,0,0,0,0,0]')")
    assert stored("asked") == "[1,0,0,0,0,0,0,0]"
    # each query text gets its own vector back, not the first one stored
    conn.execute("SELECT rag.remember_query_embedding('test@8', 'asked again', '[0,1,0,0,0,0,0,0]')")
    assert stored("asked again") == "[0,1,0,0,0,0,0,0]"
    assert stored("asked") == "[1,0,0,0,0,0,0,0]"
    assert stored("still never asked") is None


def test_read_file_range_reads_merged_sections_by_their_own_path_and_by_the_chunks(
    rag_db: db.DatabaseTarget, tmp_path: Path
) -> None:
    """A chunk of merged sections is read by the path search shows it under, and each of its
    sections by its own path."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "siblings.md").write_text("# One\n\nfirst\n\n# Two\n\nsecond\n")
    (root / "labelled.rst").write_text(".. _install:\n\nInstallation\n============\n\nbody\n\nFrom source\n"
                                       "-----------\n\nbuild it\n")
    with db.connect(rag_db) as conn:
        index_source(conn, SourceSpec("docs", "local", str(root)), root, HashEmbedder(8), ChunkSettings())
        shown = {r["path"]: r["h"] for r in conn.execute(
            "SELECT f.path, c.metadata->>'headerPath' AS h FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id")}
        assert shown == {"siblings.md": "", "labelled.rst": "# Installation"}
        cases = [("siblings.md", "", 1, 7), ("siblings.md", "# Two", 5, 7), ("siblings.md", "# One", 1, 3),
                 ("labelled.rst", "# Installation", 1, 11), ("labelled.rst", "# Installation > ## From source", 8, 11)]
        for path, header, first, last in cases:
            row = read_range(conn, None, path, None, None, header, 0)
            assert (row["start_line"], row["end_line"]) == (first, last), (path, header)
