"""Connecting to PostgreSQL and installing the schema.

Which database: ``RAG_DATABASE_URL`` > ``database.url`` > ``database.host``… >
the embedded server (see ``rag.embedded``). ``install_schema`` is ``rag init``:
the vector extension and schema, the yoyo migrations in ``migrations/`` (one-time
DDL), then every ``sql/*.sql`` file (``CREATE OR REPLACE``), all under one
advisory lock so concurrent inits queue instead of colliding.

``sql/`` and ``migrations/`` live at the top of the repository and ship inside the
wheel as ``rag/sql`` and ``rag/migrations`` (pyproject's ``package-dir``): an
installed package reads them there, a checkout beside ``rag/``.
"""

import hashlib
import logging
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row, tuple_row

from rag import embedded, sqlapi
from rag.config import DatabaseConfig
from rag.errors import DatabaseError, SchemaMissingError, UnexpectedDatabaseError, first_line
from rag.secrets import mask_connection, mask_parse_error, mask_unparsed
from rag.sqlapi import Conn as Conn  # the connections of the package: rows come back as dicts


def _schema_folder(name: str) -> Path:
    """``sql`` or ``migrations``: inside the installed package, else beside ``rag/`` (a checkout,
    editable installs included, where setuptools maps no data folders into the package)."""
    installed = Path(str(resources.files("rag").joinpath(name)))
    return installed if installed.is_dir() else Path(__file__).resolve().parent.parent / name


MIGRATIONS_DIR = _schema_folder("migrations")
SQL_DIR = _schema_folder("sql")
MIN_SERVER_VERSION = 150000
# pg_advisory_lock key for schema installs: "rag-init" as a 63-bit number.
INIT_LOCK_KEY = 0x7261672D696E6974

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class DatabaseTarget:
    url: str
    origin: str  # "RAG_DATABASE_URL", "database.url", "database.host" or "embedded"

    @property
    def masked_url(self) -> str:
        try:
            conninfo_to_dict(self.url)
        except psycopg.ProgrammingError:  # misspelt: its credentials cannot be told apart
            return mask_unparsed(self.url)
        return mask_connection(self.url)


def resolve_target(config: DatabaseConfig) -> DatabaseTarget:
    """Choose the database; starts the embedded server when nothing else is configured."""
    from_env = os.environ.get("RAG_DATABASE_URL")
    if from_env:
        return DatabaseTarget(from_env, "RAG_DATABASE_URL")
    if config.url:
        return DatabaseTarget(config.url, "database.url")
    if config.host:
        password = config.password.get_secret_value() if config.password else None
        url = make_conninfo(
            "", host=config.host, port=config.port, dbname=config.name,
            user=config.user, password=password,
        )
        return DatabaseTarget(url, "database.host")
    return DatabaseTarget(embedded.embedded_url(), "embedded")


def connect(target: DatabaseTarget, *, autocommit: bool = True) -> Conn:
    try:
        conn = psycopg.connect(
            target.url, autocommit=autocommit, row_factory=dict_row, connect_timeout=10,
            application_name="local-rag",
        )
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        reason = mask_connection(reason)
        hint = (
            "unset it to use the embedded server, or start one with `docker compose up -d`"
            if target.origin != "embedded"
            else f"see the server log in {embedded.pgdata_dir() / 'log'}"
        )
        raise DatabaseError(
            f"cannot connect to {target.masked_url} (from {target.origin}): {reason}; {hint}"
        ) from None
    except psycopg.ProgrammingError as exc:
        raise DatabaseError(
            f"invalid database URL {target.masked_url} (from {target.origin}): "
            f"{mask_parse_error(str(exc).strip(), target.url)}; "
            "write postgresql://user:password@host:5432/dbname or host=... dbname=... pairs"
        ) from None
    try:
        _set_search_path(conn)
    except psycopg.Error as exc:
        conn.close()
        raise rag_error(exc) from None
    return conn


def _set_search_path(conn: psycopg.Connection[Any]) -> None:
    """Our schema, then pgvector's (``public``, or the schema an administrator put it in), whatever
    search path the role has: queries cast to ``vector`` and ``rag init`` creates objects by name."""
    conn.execute(
        "SELECT set_config('search_path', concat_ws(', ', 'rag', (SELECT quote_ident(n.nspname) "
        "FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'vector' AND n.nspname <> 'public'), 'public'), false)"
    )
    if not conn.autocommit:
        conn.commit()  # (a session setting: it outlives this first transaction)


@dataclass(frozen=True)
class InstallReport:
    schema_version: str
    postgres_version: str
    pgvector_version: str
    migrations_applied: int


def install_schema(target: DatabaseTarget) -> InstallReport:
    """``rag init``: safe to run twice and from several processes at once."""
    with connect(target) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (INIT_LOCK_KEY,))
        try:
            prepare_database(conn, target)
            applied = apply_migrations(target)
            apply_sql_functions(conn)
            ensure_keyword_data(conn, vacuum=applied > 0)  # a migration may have rewritten the postings
            conn.execute(sql.SQL("COMMENT ON SCHEMA rag IS {}").format(sql.Literal(schema_stamp())))
            row = sqlapi.status(conn)
        except psycopg.errors.InsufficientPrivilege as exc:
            raise DatabaseError(
                f"{target.masked_url}: permission denied while installing the schema "
                f"({exc.diag.message_primary}); connect as a user that may create "
                "schemas and the vector extension"
            ) from None
        finally:
            if not conn.closed:
                conn.execute("SELECT pg_advisory_unlock(%s)", (INIT_LOCK_KEY,))
    return InstallReport(
        row["schema_version"], row["postgres_version"], row["pgvector_version"], applied
    )


def schema_stamp() -> str:
    """What ``install_schema`` writes on the schema: a digest of every migration and ``sql/*.sql``
    file of this version, so any other (older, newer, none) is seen with one catalog read."""
    digest = hashlib.sha256()
    for path in [*migration_files(), *sql_files()]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"local-rag schema {digest.hexdigest()[:16]}"


def schema_is_current(conn: Conn) -> bool:
    """Whether this version's ``install_schema`` ran on the database (``schema_stamp``)."""
    row = conn.execute("SELECT obj_description(oid, 'pg_namespace') AS stamp FROM pg_namespace "
                       "WHERE nspname = 'rag'").fetchone()
    return row is not None and row["stamp"] == schema_stamp()


def ensure_keyword_data(conn: Conn, *, vacuum: bool = False) -> None:
    """Rebuild the postings if a database crash emptied them (they are unlogged).

    A rebuilt or rewritten table has no visibility map yet, so every index-only
    read of a posting would also fetch its row (bm25 p95 at 100k chunks: 41 ms
    -> 0.9 s) until VACUUM; it runs here when the connection can run it.
    """
    if sqlapi.keyword_data_intact(conn):  # (the usual case, and all a reader role may check)
        rebuilt = False
    else:
        # Said first: the rebuild reads every chunk (minutes for 100k of them).
        log.warning("rebuilding the keyword index (emptied by a database crash, or posted differently "
                    "by this version); this tokenizes every chunk again and can take minutes on a large "
                    "index")
        rebuilt = sqlapi.ensure_keyword_data(conn)
    if vacuum or rebuilt:
        vacuum_postings(conn)


def apply_languages(conn: Conn, languages: list[str]) -> None:
    """Make ``search.languages`` the stemming of the keyword index; a change re-posts every
    stored chunk's keywords (no re-chunking, no re-embedding), said first as it takes a while."""
    if sqlapi.keyword_languages(conn) == languages:
        return
    log.warning("search.languages is now %s: posting the keywords of every indexed chunk again "
                "(once; minutes on a large index)", ", ".join(languages))
    if sqlapi.set_languages(conn, languages):
        vacuum_postings(conn)


def ensure_graph_data(conn: Conn) -> None:
    """Have the code graph extracted again if a database crash emptied it (its tables are unlogged)."""
    if sqlapi.ensure_graph_data(conn):
        log.warning("the code graph was emptied by a database crash; each source's next `rag index` "
                    "reads its code files again to rebuild it")


def vacuum_postings(conn: Conn) -> None:
    """VACUUM (ANALYZE) the postings when the connection can (VACUUM needs autocommit)."""
    if conn.autocommit:
        conn.execute("VACUUM (ANALYZE) rag.postings")


def prepare_database(conn: psycopg.Connection[Any], target: DatabaseTarget) -> None:
    """What migrations need first: a recent server, pgvector, and the rag schema. A role that is
    not a superuser cannot create the extension (pgvector is not a trusted one): it is told the
    one statement an administrator runs, once per database."""
    _check_server(conn, target)
    role, dbname = conn.cursor(row_factory=tuple_row).execute(
        "SELECT current_user::text, current_database()::text").fetchone() or ("", "")
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.errors.InsufficientPrivilege:
        raise DatabaseError(
            f"{target.masked_url}: the vector extension is not installed in database {dbname} and role "
            f"{role} may not create it; ask an administrator to run `CREATE EXTENSION vector;` there "
            "(once), then run `rag init` again"
        ) from None
    try:
        conn.execute("CREATE SCHEMA IF NOT EXISTS rag")
    except psycopg.errors.InsufficientPrivilege:
        raise DatabaseError(
            f"{target.masked_url}: role {role} may not create the rag schema; ask an administrator to "
            f"run `GRANT CREATE ON DATABASE {dbname} TO {role};`, then run `rag init` again"
        ) from None
    _set_search_path(conn)  # the extension may have just been created


def _check_server(conn: psycopg.Connection[Any], target: DatabaseTarget) -> None:
    if conn.info.server_version < MIN_SERVER_VERSION:
        raise DatabaseError(
            f"{target.masked_url} runs PostgreSQL {conn.info.server_version // 10000}; "
            "local-rag needs 15 or newer"
        )
    available = conn.execute(
        "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    if not available:
        raise DatabaseError(
            f"the server at {target.masked_url} (from {target.origin}) has no pgvector extension; "
            "install pgvector there, or unset the URL to use the embedded server "
            "(PostgreSQL 18 + pgvector), or run `docker compose up -d` and point "
            "RAG_DATABASE_URL at it"
        )


def migration_files() -> list[Path]:
    return _schema_files(MIGRATIONS_DIR)


def sql_files() -> list[Path]:
    return _schema_files(SQL_DIR)


def _schema_files(folder: Path) -> list[Path]:
    files = sorted(folder.glob("*.sql"))
    if not files:  # a package built without its data: say so, not "run rag init" after rag init
        raise DatabaseError(f"local-rag's SQL files are missing ({folder} holds no *.sql); "
                            "reinstall the package (its wheel carries rag/sql and rag/migrations)")
    return files


def apply_migrations(target: DatabaseTarget, *, up_to: str | None = None) -> int:
    """Apply pending migrations (all, or those up to and including ``up_to``)."""
    from yoyo import read_migrations
    from yoyo.backends import get_backend_class
    from yoyo.connections import DatabaseURI

    parts = conninfo_to_dict(target.url)
    known = {"user", "password", "host", "port", "dbname"}
    args = {k: str(v) for k, v in parts.items() if k not in known and v is not None}
    # yoyo keeps its tables in the first schema of the search path: ours; pgvector's next.
    with connect(target) as conn:
        search_path = conn.execute("SELECT current_setting('search_path') AS path").fetchone()
    args["options"] = "-c search_path=" + (search_path or {}).get("path", "rag, public").replace(" ", "")
    uri = DatabaseURI(
        scheme="postgresql+psycopg",
        username=parts.get("user"),
        password=parts.get("password"),
        hostname=parts.get("host"),
        port=int(str(parts["port"])) if parts.get("port") else None,
        database=parts.get("dbname"),
        args=args,
    )
    backend = get_backend_class("postgresql+psycopg")(uri, "_yoyo_migration")
    backend.init_database()
    try:
        migrations = read_migrations(str(MIGRATIONS_DIR))
        if up_to is not None:
            migrations = migrations.filter(lambda m: m.id <= up_to)
        with backend.lock():
            pending = backend.to_apply(migrations)
            backend.apply_migrations(pending)
        return len(pending)
    finally:
        backend.connection.close()


def apply_sql_functions(conn: Conn) -> None:
    """Re-apply every ``sql/*.sql`` file in name order, in one transaction."""
    with conn.transaction():
        # pgvector in another schema: bodies are checked with the search path the files name, which
        # lacks that schema until 090_vector_schema.sql adds it; they are checked when first run.
        conn.execute("SELECT set_config('check_function_bodies', 'off', true) FROM pg_extension e "
                     "WHERE e.extname = 'vector' AND e.extnamespace <> 'public'::regnamespace")
        for path in sql_files():
            try:
                conn.execute(path.read_bytes())  # (SQL read from a file, not a literal: bytes)
            except psycopg.Error as exc:
                raise DatabaseError(f"{path.name}: {exc.diag.message_primary or exc}") from None
        # Functions replaced or added since rag.create_roles() get its grants again (rag serve's readers).
        if sqlapi.roles_applied(conn):
            sqlapi.create_roles(conn)


# What a query meets in a database where `rag init` has not run (no schema, no pgvector),
# or where an older version's schema lacks a function.
SCHEMA_MISSING: tuple[type[psycopg.Error], ...] = (
    psycopg.errors.UndefinedFunction, psycopg.errors.InvalidSchemaName,
    psycopg.errors.UndefinedTable, psycopg.errors.UndefinedObject,
)


def rag_error(exc: psycopg.Error) -> DatabaseError:
    """The one translation of a psycopg error into the package's exceptions.

    A refusal RAISEd by a ``rag.*`` function keeps its message, less the function's
    name in front ("search: unknown source ..."), and its HINT as a ``rag.hints.Hint``
    (rendered by the front end for its interface); a missing schema says to run
    ``rag init``; anything else is unexpected and says so.
    """
    reason = exc.diag.message_primary or first_line(exc)
    if isinstance(exc, SCHEMA_MISSING):
        # Not the reason: it names internal relations (rag.keyword_data_intact) a user cannot act on.
        return SchemaMissingError("database: the local-rag schema is missing or from another version; "
                                  "run `rag init` to install or update it")
    if isinstance(exc, psycopg.errors.DiskFull):
        return DatabaseError(f"database: the disk holding the database is full ({reason}); "
                             "free some space there and run the command again")
    if exc.diag.source_function == "exec_stmt_raise":
        from rag.hints import from_sql

        head, sep, rest = reason.partition(": ")
        return DatabaseError(rest if sep and head.isidentifier() and head.islower() else reason,
                             from_sql(exc.diag.message_hint))
    return UnexpectedDatabaseError(f"database: {reason}")
