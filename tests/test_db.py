"""Schema install against a real PostgreSQL: idempotence, concurrency, upgrades, SQL functions."""

import hashlib
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fakes import HashEmbedder
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from releases import RELEASED, ReleaseError, git, migrations_at, read_releases, sha256

from rag import db
from rag.chunking.model import content_hash
from rag.config import ChunkSettings, LoadedConfig, RagConfig, SourceSpec
from rag.dispatcher import chunk_bytes
from rag.errors import DatabaseError
from rag.indexer import index_source
from rag.service import RagService


def query(target: db.DatabaseTarget, text: str, *params: Any) -> list[dict[str, Any]]:
    with psycopg.connect(target.url, autocommit=True, row_factory=dict_row) as conn:
        return conn.execute(text.encode(), params or None).fetchall()


def test_released_migrations_are_frozen() -> None:
    """A released migration is never edited (yoyo would silently ignore the edit on every
    database that applied it); a migration added since sorts after the released ones."""
    releases = read_releases()
    assert releases, f"{RELEASED} records no release"
    current = {p.name: sha256(p.read_bytes()) for p in db.migration_files()}
    for release in releases:
        for name, digest in release.migrations.items():
            assert name in current, f"migration {name} of release {release.version} was deleted; never remove one"
            assert current[name] == digest, (
                f"migration {name} changed after release {release.version}; restore it and add a new migration")
    released = set().union(*(r.migrations for r in releases))
    assert all(name > max(released) for name in set(current) - released), "new migrations sort last"


def test_install_twice_is_a_no_op(empty_db: db.DatabaseTarget) -> None:
    first = db.install_schema(empty_db)
    second = db.install_schema(empty_db)
    assert first.migrations_applied == len(db.migration_files())
    assert second.migrations_applied == 0
    assert first.schema_version == second.schema_version == db.migration_files()[-1].stem
    assert first.postgres_version and first.pgvector_version.startswith("0.")


def test_concurrent_installs_both_succeed(empty_db: db.DatabaseTarget) -> None:
    errors: list[BaseException] = []

    def install() -> None:
        try:
            db.install_schema(empty_db)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=install) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert query(empty_db, "SELECT count(*) AS n FROM rag._yoyo_migration")[0]["n"] == len(
        db.migration_files()
    )


def _catalog(target: db.DatabaseTarget) -> dict[str, Any]:
    """Everything that defines the schema, in comparable form."""
    return {
        "functions": query(
            target,
            "SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args,"
            " pg_get_functiondef(p.oid) AS def, obj_description(p.oid, 'pg_proc') AS comment"
            " FROM pg_proc p WHERE p.pronamespace = 'rag'::regnamespace ORDER BY 1, 2",
        ),
        "columns": query(
            target,
            "SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default,"
            " is_identity FROM information_schema.columns WHERE table_schema = 'rag'"
            " ORDER BY table_name, ordinal_position",
        ),
        "constraints": query(
            target,
            "SELECT conrelid::regclass::text AS tbl, conname, pg_get_constraintdef(oid) AS def"
            " FROM pg_constraint WHERE connamespace = 'rag'::regnamespace ORDER BY 1, 2",
        ),
        "indexes": query(
            target,
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'rag' ORDER BY 1",
        ),
        "views": query(
            target,
            "SELECT viewname, definition FROM pg_views WHERE schemaname = 'rag' ORDER BY 1",
        ),
    }


@pytest.fixture
def last_release(tmp_path: Path) -> Path:
    """The last release's migrations/ and sql/, from git history (checked against RELEASED)."""
    release = read_releases()[-1]
    try:
        migrations = migrations_at(release.commit)
        sql_names = git("ls-tree", "--name-only", f"{release.commit}:sql").decode().split()
        sql_files = {n: git("show", f"{release.commit}:sql/{n}") for n in sql_names if n.endswith(".sql")}
    except ReleaseError as exc:  # a failure, not a skip: the upgrade would go untested
        pytest.fail(f"cannot read release {release.version} from git: {exc}", pytrace=False)
    assert {n: sha256(data) for n, data in migrations.items()} == release.migrations, (
        f"{RELEASED} does not match commit {release.commit}; it is written by `make freeze` only")
    for folder, files in (("migrations", migrations), ("sql", sql_files)):
        (tmp_path / folder).mkdir()
        for name, data in files.items():
            (tmp_path / folder / name).write_bytes(data)
    return tmp_path


def test_upgrade_from_the_last_release_equals_fresh_install(
    empty_db: db.DatabaseTarget, rag_db: db.DatabaseTarget, last_release: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rag init` of the last release, then of the working tree, ends where a fresh install does."""
    with monkeypatch.context() as released:
        released.setattr(db, "MIGRATIONS_DIR", last_release / "migrations")
        released.setattr(db, "SQL_DIR", last_release / "sql")
        assert db.install_schema(empty_db).migrations_applied == len(read_releases()[-1].migrations)
    db.install_schema(empty_db)
    upgraded, fresh = _catalog(empty_db), _catalog(rag_db)
    assert upgraded["functions"], "sql/ functions were installed"
    assert upgraded == fresh


def test_upgrade_to_unlogged_postings_keeps_them_readable_from_the_index(empty_db: db.DatabaseTarget) -> None:
    """Migration 0004 rewrites the postings: rag init vacuums them, or every read fetches rows too."""
    with psycopg.connect(empty_db.url, autocommit=True) as conn:
        db.prepare_database(conn, empty_db)
    db.apply_migrations(empty_db, up_to="0003_file_filter_index")
    db.install_schema(empty_db)  # 0004 and the functions: an upgrade with postings in place needs them first
    with db.connect(empty_db) as conn:
        conn.execute("INSERT INTO rag.postings SELECT 't' || i % 50, i, 1, 10 FROM generate_series(1, 20000) i")
        conn.execute("VACUUM rag.postings")
        conn.execute("ALTER TABLE rag.postings SET LOGGED")  # as before 0004, with its rows
        conn.execute("DELETE FROM rag._yoyo_migration WHERE migration_id = '0004_unlogged_postings'")
        conn.execute("DROP TABLE rag.keyword_data_intact")
    db.install_schema(empty_db)
    row = query(empty_db, "SELECT relpersistence, relallvisible, relpages FROM pg_class"
                          " WHERE oid = 'rag.postings'::regclass")[0]
    assert row["relpersistence"] == "u" and row["relallvisible"] == row["relpages"] > 0
    assert query(empty_db, "SELECT count(*) AS n FROM rag.keyword_data_intact") == [{"n": 1}]

@pytest.mark.usefixtures("sections_unmerged")
def test_upgrade_gives_chunks_their_context_at_the_next_index(
    empty_db: db.DatabaseTarget, last_release: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An index stored by the last release (content alone, hashed alone) is re-chunked by the
    first `rag index` after the upgrade, without --force: every chunk gets its context (0006)
    and every code chunk its names (0008)."""
    root = tmp_path / "p"
    (root / "billing").mkdir(parents=True)
    (root / "billing" / "invoice_totals.py").write_text("def total(lines):\n    return sum(lines)\n")
    (root / "notes.md").write_text("# Deployment\n\nIntro.\n\n## Kubernetes\n\nRun the chart.\n")
    embedder = HashEmbedder()
    with monkeypatch.context() as released:
        released.setattr(db, "MIGRATIONS_DIR", last_release / "migrations")
        released.setattr(db, "SQL_DIR", last_release / "sql")
        db.install_schema(empty_db)
    with psycopg.connect(empty_db.url, autocommit=True, row_factory=dict_row) as conn:
        # What the release's indexer stored: its replace_files, chunk contents hashed alone.
        source_id = conn.execute("SELECT rag.upsert_source('proj', 'local', %s) AS id", (str(root),)).fetchone()
        files = []
        for path in ("billing/invoice_totals.py", "notes.md"):
            data, stat = (root / path).read_bytes(), (root / path).stat()
            chunks = chunk_bytes(data, path, max_tokens=200, overlap=20).chunks
            files.append({"path": path, "size": stat.st_size, "mtimeNs": stat.st_mtime_ns,
                          "sha256": hashlib.sha256(data).hexdigest(), "content": data.decode(),
                          "chunks": [{"content": c.content, "contentHash": content_hash(c.content),
                                      "metadata": c.metadata} for c in chunks]})
        conn.execute("SELECT * FROM rag.replace_files(%s, %s)", (source_id["id"], Jsonb(files)))  # type: ignore[index]
    db.install_schema(empty_db)
    assert query(empty_db, "SELECT DISTINCT context FROM rag.chunks") == [{"context": ""}]
    assert query(empty_db, "SELECT count(*) AS n FROM rag.bm25_search('total', 10)") == [{"n": 1}], "still searchable"

    with db.connect(empty_db) as conn:
        summary = index_source(conn, SourceSpec("proj", "local", str(root)), root, embedder, ChunkSettings())
    assert (summary.changed, summary.unchanged) == (2, 0)
    stored = query(empty_db, "SELECT context, content FROM rag.chunks ORDER BY file_id, ordinal")
    assert [r["context"] for r in stored] == [
        "billing/invoice_totals.py\ntotal", "notes.md\n# Deployment", "notes.md\n# Deployment > ## Kubernetes"]
    assert sorted(embedder.embedded_texts) == sorted(f"{r['context']}\n{r['content']}" for r in stored)
    assert query(empty_db, "SELECT count(*) AS n FROM rag.bm25_search('invoice', 10)") == [{"n": 1}]
    named = query(empty_db, "SELECT count(*) AS n FROM rag.postings WHERE term = 'name:invoice'")
    assert named == [{"n": 1}], "and its names (0008): the code chunk's path"
    with db.connect(empty_db) as conn:
        again = index_source(conn, SourceSpec("proj", "local", str(root)), root, embedder, ChunkSettings())
    assert (again.changed, again.unchanged, again.embedded) == (0, 2, 0)


def test_migration_0010_has_the_next_index_chunk_documents_again(
    empty_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Documents indexed before sections were merged and prose was stemmed are chunked
    again by the next `rag index`, without --force; code files are left as they are."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "tool.py").write_text("def configure(settings):\n    return settings\n")
    (root / "guide.md").write_text("# Guide\n\nIntro.\n\n## Setup\n\nThe server is configured here.\n")
    before = tmp_path / "migrations"
    before.mkdir()
    for migration in db.MIGRATIONS_DIR.glob("*.sql"):
        if migration.name < "0010" or migration.name >= "0011":  # later ones hold what sql/ needs
            (before / migration.name).write_bytes(migration.read_bytes())
    embedder = HashEmbedder()
    with monkeypatch.context() as earlier:
        earlier.setattr(db, "MIGRATIONS_DIR", before)
        db.install_schema(empty_db)
        # What the previous version stored: one chunk per section, exact terms for documents.
        earlier.setattr("rag.chunking.markdown.merge_small_sections", lambda lines, sections, max_tokens: sections)
        with db.connect(empty_db) as conn:
            conn.execute("CREATE OR REPLACE FUNCTION rag._stem(term text, dictionaries regdictionary[])"
                         " RETURNS text LANGUAGE sql IMMUTABLE RETURN term")
            index_source(conn, SourceSpec("proj", "local", str(root)), root, embedder, ChunkSettings())
    assert query(empty_db, "SELECT count(*) AS n FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id"
                           " WHERE f.path = 'guide.md'") == [{"n": 2}]
    code_chunk = query(empty_db, "SELECT c.id FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id"
                                 " WHERE f.path = 'tool.py'")

    db.install_schema(empty_db)
    with db.connect(empty_db) as conn:
        summary = index_source(conn, SourceSpec("proj", "local", str(root)), root, embedder, ChunkSettings())
    assert (summary.changed, summary.unchanged) == (1, 1)
    docs = query(empty_db, "SELECT c.metadata->'sections' AS parts FROM rag.chunks c"
                           " JOIN rag.files f ON f.id = c.file_id WHERE f.path = 'guide.md'")
    assert [[p["headerPath"] for p in r["parts"]] for r in docs] == [["# Guide", "# Guide > ## Setup"]]
    assert query(empty_db, "SELECT c.id FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id"
                           " WHERE f.path = 'tool.py'") == code_chunk
    assert query(empty_db, "SELECT count(*) AS n FROM rag.postings WHERE term = 'stem:configur'") == [{"n": 1}]


def test_migration_0011_has_the_next_index_give_documents_their_passages(
    empty_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Documents indexed before passage vectors are chunked again by the next `rag index`,
    without --force, and get their passages; code files are left as they are."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "tool.py").write_text("def configure(settings):\n    return settings\n")
    paragraphs = [" ".join(f"{topic}{i}" for i in range(45)) for topic in ("cache", "queue")]
    (root / "guide.md").write_text("# Guide\n\n" + "\n\n".join(paragraphs) + "\n")
    embedder = HashEmbedder()
    db.install_schema(empty_db)
    with monkeypatch.context() as earlier, db.connect(empty_db) as conn:
        earlier.setattr("rag.chunking.passages.chunk_passages", lambda chunk: [])  # what the previous version stored
        index_source(conn, SourceSpec("proj", "local", str(root)), root, embedder, ChunkSettings())
        # As before 0011: no table of passages, the migration not applied.
        conn.execute("DROP TABLE rag.passages, rag.passage_embeddings")
        conn.execute("DELETE FROM rag._yoyo_migration WHERE migration_id = '0011_passages'")
    code_chunk = query(empty_db, "SELECT c.id FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id"
                                 " WHERE f.path = 'tool.py'")

    assert db.install_schema(empty_db).migrations_applied == 1
    assert query(empty_db, "SELECT count(*) AS n FROM rag.passages") == [{"n": 0}]
    with db.connect(empty_db) as conn:
        summary = index_source(conn, SourceSpec("proj", "local", str(root)), root, embedder, ChunkSettings())
    assert (summary.changed, summary.unchanged, summary.embedded) == (1, 1, 2), "the two passages' vectors"
    assert query(empty_db, "SELECT count(*) AS n FROM rag.passages") == [{"n": 2}]
    assert query(empty_db, "SELECT c.id FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id"
                           " WHERE f.path = 'tool.py'") == code_chunk


def test_migration_0017_gives_indexed_code_files_their_mean_vectors(
    empty_db: db.DatabaseTarget, tmp_path: Path
) -> None:
    """An index made before the files arm has it at once, without an index run."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "tool.py").write_text("def configure(settings):\n    return settings\n")
    (root / "app.py").write_text("def main():\n    return 0\n")
    (root / "guide.md").write_text("# Guide\n\nHow to configure.\n")
    db.install_schema(empty_db)
    with db.connect(empty_db) as conn:
        index_source(conn, SourceSpec("proj", "local", str(root)), root, HashEmbedder(), ChunkSettings())
        conn.execute("DROP TABLE rag.file_vectors")  # as before 0017
        conn.execute("DELETE FROM rag._yoyo_migration WHERE migration_id = '0017_file_vectors'")

    assert db.install_schema(empty_db).migrations_applied == 1
    assert query(empty_db, "SELECT f.path FROM rag.file_vectors v JOIN rag.files f ON f.id = v.file_id"
                           " ORDER BY 1") == [{"path": "app.py"}, {"path": "tool.py"}]


def test_migration_0023_drops_the_file_vectors_of_tests(empty_db: db.DatabaseTarget, tmp_path: Path) -> None:
    """Vectors an earlier version stored for tests, examples ... (a path class) go; modules keep theirs."""
    root = tmp_path / "p"
    (root / "tests").mkdir(parents=True)
    (root / "tool.py").write_text("def configure(settings):\n    return settings\n")
    (root / "tests" / "test_tool.py").write_text("def test_configure():\n    assert configure(1) == 1\n")
    db.install_schema(empty_db)
    with db.connect(empty_db) as conn:
        index_source(conn, SourceSpec("proj", "local", str(root)), root, HashEmbedder(), ChunkSettings())
        conn.execute("INSERT INTO rag.file_vectors (model, file_id, embedding) SELECT v.model, f.id, v.embedding "
                     "FROM rag.file_vectors v, rag.files f WHERE f.path = 'tests/test_tool.py'")  # as before 0023
        conn.execute("DELETE FROM rag._yoyo_migration WHERE migration_id = '0023_file_vectors_modules_only'")

    assert db.install_schema(empty_db).migrations_applied == 1
    assert query(empty_db, "SELECT f.path FROM rag.file_vectors v JOIN rag.files f ON f.id = v.file_id"
                           " ORDER BY 1") == [{"path": "tool.py"}]


def test_every_function_has_fixed_search_path_volatility_and_comment(
    rag_db: db.DatabaseTarget,
) -> None:
    rows = query(
        rag_db,
        "SELECT p.proname, p.proconfig, p.provolatile, obj_description(p.oid, 'pg_proc') AS c,"
        " p.prosqlbody IS NOT NULL AS bound_at_creation"
        " FROM pg_proc p WHERE p.pronamespace = 'rag'::regnamespace",
    )
    assert rows
    for row in rows:
        # A SQL-standard body resolves its names when created, so it needs no search_path.
        fixed = row["proconfig"] and any(s.startswith("search_path=") for s in row["proconfig"])
        assert fixed or row["bound_at_creation"], row
        assert row["c"], f"rag.{row['proname']} has no COMMENT ON FUNCTION"


def status_row(target: db.DatabaseTarget) -> dict[str, Any]:
    with db.connect(target) as conn:
        row = conn.execute("SELECT * FROM rag.status()").fetchone()
    assert row is not None
    return row


def test_status_counts(rag_db: db.DatabaseTarget) -> None:
    empty = status_row(rag_db)
    assert (empty["sources"], empty["files"], empty["chunks"], empty["embeddings"]) == (0, 0, 0, 0)
    _add_source_with_chunks(rag_db, "proj", chunks=3)
    counted = status_row(rag_db)
    assert (counted["sources"], counted["files"], counted["chunks"]) == (1, 1, 3)
    assert counted["embeddings"] == 3


def _add_source_with_chunks(target: db.DatabaseTarget, name: str, chunks: int) -> None:
    with psycopg.connect(target.url, autocommit=True) as conn:
        source_id = conn.execute(
            "INSERT INTO rag.sources (name, type, location) VALUES (%s, 'local', '/tmp/x')"
            " RETURNING id",
            (name,),
        ).fetchone()[0]  # type: ignore[index]
        file_id = conn.execute(
            "INSERT INTO rag.files (source_id, path, size, mtime_ns, sha256, content)"
            " VALUES (%s, 'a.py', 3, 1, 'f00', 'abc') RETURNING id",
            (source_id,),
        ).fetchone()[0]  # type: ignore[index]
        conn.execute(
            "INSERT INTO rag.embedding_models (model, dimensions) VALUES ('t:m@3', 3)"
            " ON CONFLICT DO NOTHING"
        )
        for i in range(chunks):
            conn.execute(
                "INSERT INTO rag.chunks (source_id, file_id, ordinal, content, content_hash, metadata)"
                " VALUES (%s, %s, %s, %s, %s, '{}')",
                (source_id, file_id, i, f"chunk {i}", f"{name}-{i}"),
            )
            conn.execute(
                "INSERT INTO rag.embeddings (model, content_hash, embedding)"
                " VALUES ('t:m@3', %s, '[1,2,3]') ON CONFLICT DO NOTHING",
                (f"{name}-{i}",),
            )


def test_list_and_remove_sources(rag_db: db.DatabaseTarget) -> None:
    _add_source_with_chunks(rag_db, "alpha", chunks=2)
    _add_source_with_chunks(rag_db, "beta", chunks=1)
    listed = query(rag_db, "SELECT name, files, chunks FROM rag.list_sources()")
    assert listed == [
        {"name": "alpha", "files": 1, "chunks": 2},
        {"name": "beta", "files": 1, "chunks": 1},
    ]
    assert query(rag_db, "SELECT name FROM rag.list_sources('be')") == [{"name": "beta"}]
    assert query(rag_db, "SELECT rag.remove_source('alpha') AS n") == [{"n": 2}]
    assert query(rag_db, "SELECT count(*) AS n FROM rag.files")[0]["n"] == 1
    assert query(rag_db, "SELECT count(*) AS n FROM rag.embeddings")[0]["n"] == 3, "kept for reuse"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("SELECT rag.remove_source('ghost')", "source 'ghost' not found; known: beta"),
        ("SELECT * FROM rag.list_sources(source_type => 'svn')", "source_type must be local, git or confluence"),
        ("SELECT * FROM rag.list_sources(max_rows => 0)", "max_rows must be at least 1"),
    ],
)
def test_sql_functions_name_the_bad_argument(
    rag_db: db.DatabaseTarget, call: str, message: str
) -> None:
    _add_source_with_chunks(rag_db, "beta", chunks=1)
    with pytest.raises(psycopg.Error) as err:
        query(rag_db, call)
    assert message in str(err.value)


def test_case_insensitive_matching_handles_cyrillic(rag_db: db.DatabaseTarget) -> None:
    row = query(
        rag_db,
        "SELECT lower('ПРИВЕТ Мир ABC') AS low, 'Ёлка' ILIKE 'ёЛКА' AS ilike,"
        " (SELECT string_agg(term, ' ' ORDER BY term) FROM rag.term_frequencies('Поиск ПОИСКА getUser')) AS terms",
    )[0]
    assert row["low"] == "привет мир abc"
    assert row["ilike"] is True
    assert row["terms"] == "get getuser user поиск поиска"


def service_on(target: db.DatabaseTarget) -> RagService:
    service = RagService(loaded=LoadedConfig(RagConfig(), None, "test"))
    service._target = target
    return service


def test_unreachable_database_is_one_clear_line() -> None:
    target = db.DatabaseTarget("postgresql://rag:secretpw@127.0.0.1:1/none", "RAG_DATABASE_URL")
    with service_on(target) as service, pytest.raises(DatabaseError) as err:
        service.status(strict=True)
    message = str(err.value)
    assert "cannot connect to postgresql://rag:****@127.0.0.1:1/none (from RAG_DATABASE_URL)" in message
    assert "secretpw" not in message and "\n" not in message


def test_status_before_init_installs_the_schema(empty_db: db.DatabaseTarget) -> None:
    with service_on(empty_db) as service:
        assert service.status(strict=True).database.schema_version == db.migration_files()[-1].stem


def test_server_without_pgvector_is_explained(
    empty_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Simulated by hiding the extension from the availability check."""
    real_execute = psycopg.Connection.execute

    def execute(self: psycopg.Connection[Any], q: Any, *args: Any, **kw: Any) -> Any:
        if isinstance(q, str) and "pg_available_extensions" in q:
            q = q.replace("name = 'vector'", "name = 'no_such_extension'")
        return real_execute(self, q, *args, **kw)

    monkeypatch.setattr(psycopg.Connection, "execute", execute)
    with pytest.raises(DatabaseError) as err:
        db.install_schema(empty_db)
    message = str(err.value)
    assert "has no pgvector extension" in message
    assert "embedded server" in message and "docker compose up -d" in message
    monkeypatch.undo()
    assert query(empty_db, "SELECT count(*) AS n FROM pg_namespace WHERE nspname = 'rag'")[0]["n"] == 0
