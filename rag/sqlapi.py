"""The one way from Python into SQL: a typed function per ``rag.*`` SQL function the package calls.

Each function's query text is a ``LiteralString`` (PEP 675): only text written in this module
reaches ``conn.execute``, and SQL built at run time would have to go through ``psycopg.sql``.
Nothing outside this module names a ``rag.*`` function or reads a ``rag`` table. A limit of
None is "no limit", as in the SQL functions.

Errors are psycopg's, unchanged: callers tell a lost connection (the service reconnects), a
source locked by another run or a deadlock (the indexer) from the rest, and the front doors turn
what remains into the package's exceptions with ``rag.db.rag_error``, the one translation.
Importing it costs nothing: psycopg is loaded by whoever opened the connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, LiteralString, TypeAlias

if TYPE_CHECKING:
    import psycopg
    from psycopg.types.json import Jsonb

# The one alias of a connection returning dict rows (re-exported as rag.db.Conn).
Conn: TypeAlias = "psycopg.Connection[dict[str, Any]]"

Row = dict[str, Any]


def _jsonb(value: Any) -> Jsonb:
    from psycopg.types.json import Jsonb

    return Jsonb(value)


Params = tuple[Any, ...] | dict[str, Any] | None


def _rows(conn: Conn, query: LiteralString, params: Params = None) -> list[Row]:
    return conn.execute(query, params).fetchall()


def _row(conn: Conn, query: LiteralString, params: tuple[Any, ...] | None = None) -> Row:
    row = conn.execute(query, params).fetchone()
    assert row is not None, "a rag.* function of one row returned none"
    return row


def _value(conn: Conn, query: LiteralString, params: tuple[Any, ...] | None = None) -> Any:
    return next(iter(_row(conn, query, params).values()))


# -- the catalog (sql/010_catalog.sql) ------------------------------------------


def status(conn: Conn) -> Row:
    """Schema, PostgreSQL and pgvector versions, counts of sources, files, chunks, embeddings."""
    return _row(conn, "SELECT * FROM rag.status()")


def list_sources(conn: Conn, name_prefix: str | None = None, source_type: str | None = None,
                 max_rows: int | None = None, path_prefix: str | None = None) -> list[Row]:
    """The indexed sources, by name; ``max_rows`` None: all of them."""
    return _rows(conn, "SELECT * FROM rag.list_sources(%s, %s, %s, %s)",
                 (name_prefix, source_type, max_rows, path_prefix))






def has_model(conn: Conn, model: str) -> bool:
    """Whether any vector of embedding model ``model`` is stored."""
    return bool(_value(conn, "SELECT rag.has_model(%s)", (model,)))


def record_commit(conn: Conn, source: str, commit: str) -> None:
    conn.execute("SELECT rag.record_commit(%s, %s)", (source, commit))


def remove_source(conn: Conn, name: str) -> int:
    """Deletes a source with its files, chunks and graph: how many chunks went."""
    return int(_value(conn, "SELECT rag.remove_source(%s)", (name,)))


# -- access (sql/070_access.sql) ---------------------------------------------------


def create_roles(conn: Conn) -> list[str]:
    """Makes rag_reader and rag_writer when missing and (re)applies their privileges and
    row-level security: the roles it made."""
    return list(_value(conn, "SELECT rag.create_roles()"))


def roles_applied(conn: Conn) -> bool:
    """Whether ``rag.create_roles()`` has run in this database (its policies are there)."""
    return bool(_value(conn, "SELECT EXISTS (SELECT 1 FROM pg_policies WHERE schemaname = 'rag' "
                             "AND policyname = 'granted_sources')"))


def grant_sources(conn: Conn, reader: str, sources: list[str] | None) -> int:
    """Lets the role ``reader`` (made when missing) read these sources only (None: all)."""
    return int(_value(conn, "SELECT rag.grant_sources(%s, %s)", (reader, sources)))


# -- keywords (sql/015_keywords.sql, 016_bm25_stats.sql, 017_bulk_load.sql) ----------


def keyword_data_intact(conn: Conn) -> bool:
    """False after a database crash emptied the (unlogged) postings."""
    return bool(_value(conn, "SELECT EXISTS (SELECT 1 FROM rag.keyword_data_intact)"))


def ensure_keyword_data(conn: Conn) -> bool:
    """Rebuilds the postings a crash emptied: whether it did."""
    return bool(_value(conn, "SELECT rag.ensure_keyword_data()"))


def keyword_languages(conn: Conn) -> list[str]:
    """The languages whose stems documents post now (``rag.set_languages``)."""
    return list(_value(conn, "SELECT languages FROM rag.keyword_settings"))


def set_languages(conn: Conn, languages: list[str]) -> bool:
    """Sets ``search.languages``: whether the keywords were posted again (they changed)."""
    return bool(_value(conn, "SELECT rag.set_languages(%s)", (languages,)))


def has_chunks(conn: Conn) -> bool:
    """Whether any chunk is stored (in any source)."""
    return bool(_value(conn, "SELECT EXISTS (SELECT 1 FROM rag.chunks) AS e"))


def keyword_lemmas(conn: Conn) -> bool:
    """Whether documents post the stems of Russian lemmas now (``rag.set_lemmas``)."""
    return bool(_value(conn, "SELECT lemmas FROM rag.keyword_settings"))


def set_lemmas(conn: Conn, enabled: bool) -> bool:
    """Turns ``search.lemmas`` on or off: whether the keywords were posted again (it changed)."""
    return bool(_value(conn, "SELECT rag.set_lemmas(%s)", (enabled,)))


def unlemmatized_words(conn: Conn, texts: list[str]) -> list[str]:
    """The Cyrillic words of ``texts`` (as the tokenizer makes them) that have no lemma stored."""
    return list(_value(conn, "SELECT rag.unlemmatized_words(%s::text[])", (texts,)))


def stored_unlemmatized_words(conn: Conn) -> list[str]:
    """The Cyrillic words of the stored documents that have no lemma stored."""
    return [row["w"] for row in _rows(conn, "SELECT w FROM rag.stored_unlemmatized_words() AS w")]


def add_lemmas(conn: Conn, words: list[str], lemmas: list[str]) -> int:
    """Stores the lemma of each word that has none yet: how many were new."""
    return int(_value(conn, "SELECT rag.add_lemmas(%s::text[], %s::text[])", (words, lemmas)))


def underived_nouns(conn: Conn) -> list[str]:
    """The stored lemmas in -ние/-тие while ``rag.verbal_nouns`` is empty (an index lemmatized
    before it)."""
    return [row["n"] for row in _rows(conn, "SELECT n FROM rag.underived_nouns() AS n")]


def add_verbal_nouns(conn: Conn, nouns: list[str], verbs: list[str | None]) -> int:
    """Stores the verb (None: none) of each verbal noun that has no row yet: how many were new."""
    return int(_value(conn, "SELECT rag.add_verbal_nouns(%s::text[], %s::text[])", (nouns, verbs)))




def begin_bulk_load(conn: Conn) -> bool:
    return bool(_value(conn, "SELECT rag.begin_bulk_load()"))


def end_bulk_load(conn: Conn) -> None:
    conn.execute("SELECT rag.end_bulk_load()")


def add_postings_key(conn: Conn) -> bool:
    return bool(_value(conn, "SELECT rag.add_postings_key()"))


def count_term_stats(conn: Conn) -> None:
    conn.execute("SELECT rag.count_term_stats()")


def ensure_heads_index(conn: Conn) -> None:
    conn.execute("SELECT rag.ensure_heads_index()")


# -- an index run (sql/020_runs.sql, 022_storing.sql) ------------------------------


def upsert_source(conn: Conn, name: str, source_type: str, location: str, branch: str | None,
                  config: dict[str, Any]) -> int:
    """The source's id, created or updated."""
    return int(_value(conn, "SELECT rag.upsert_source(%s, %s, %s, %s, %s)",
                      (name, source_type, location, branch, _jsonb(config))))


def begin_run(conn: Conn, source_id: int) -> int:
    """A run's id, holding the source's index lock (``LockNotAvailable`` when another run has it)."""
    return int(_value(conn, "SELECT rag.begin_run(%s)", (source_id,)))


def finish_run(conn: Conn, run_id: int, run_status: str, counts: dict[str, Any],
               errors: list[dict[str, Any]]) -> int:
    """Records the run's outcome and releases the lock: the source's chunk total."""
    return int(_value(conn, "SELECT rag.finish_run(%s, %s, %s, %s)",
                      (run_id, run_status, _jsonb(counts), _jsonb(errors))))


def plan_files(conn: Conn, source_id: int, scanned: list[dict[str, Any]], force: bool,
               scope: list[str] | None) -> list[Row]:
    """(path, action, old_sha256) of every scanned or stored file in scope."""
    return _rows(conn, "SELECT path, action, old_sha256 FROM rag.plan_files(%s, %s, %s, %s)",
                 (source_id, _jsonb(scanned), force, scope))


def replace_files(conn: Conn, source_id: int, files: Jsonb) -> tuple[int, int]:
    """Stores a batch of files with their chunks and graph: (added, removed) chunks."""
    row = _row(conn, "SELECT added_chunks, removed_chunks FROM rag.replace_files(%s, %s)", (source_id, files))
    return row["added_chunks"], row["removed_chunks"]


def touch_files(conn: Conn, source_id: int, files: list[dict[str, Any]]) -> None:
    conn.execute("SELECT rag.touch_files(%s, %s)", (source_id, _jsonb(files)))


def stored_documents(conn: Conn, source_id: int, paths: list[str]) -> dict[str, Row]:
    """The stored text (``content``) and ``metadata`` of the source's files at ``paths``, by path."""
    rows = _rows(conn, "SELECT path, content, metadata FROM rag.stored_documents(%s, %s)", (source_id, paths))
    return {row["path"]: row for row in rows}


def delete_files(conn: Conn, source_id: int, paths: list[str]) -> int:
    """Deletes files with their chunks: how many chunks went."""
    return int(_value(conn, "SELECT rag.delete_files(%s, %s)", (source_id, paths)))


def count_chunks_without_embedding(conn: Conn, source_id: int, model: str,
                                   languages: list[str] | None = None) -> int:
    """Texts of the source with no vector of ``model``, among those it reads (``languages``; None: all)."""
    return int(_value(conn, "SELECT rag.count_chunks_without_embedding(%s, %s, %s)",
                      (source_id, model, languages)))


def source_vector_count(conn: Conn, source_id: int) -> int:
    return int(_value(conn, "SELECT rag.source_vector_count(%s)", (source_id,)))


def chunks_without_embedding(conn: Conn, source_id: int, model: str, max_rows: int,
                             languages: list[str] | None = None) -> list[Row]:
    """(content_hash, content) of texts of the source with no vector of ``model`` that it reads
    (``languages``; None: all)."""
    return _rows(conn, "SELECT content_hash, content FROM rag.chunks_without_embedding(%s, %s, %s, %s)",
                 (source_id, model, max_rows, languages))


def set_model_languages(conn: Conn, model: str, dimensions: int, languages: list[str] | None) -> None:
    """Records the embedding model and the languages it reads (None: any), which rag.search scales
    its vector arm by and names in its warnings."""
    conn.execute("SELECT rag.set_model_languages(%s, %s, %s)", (model, dimensions, languages))


def store_embeddings(conn: Conn, model: str, dimensions: int, hashes: list[str], vectors: list[str]) -> None:
    """Stores vectors (pgvector text) by content hash."""
    conn.execute("SELECT rag.store_embeddings(%s, %s, %s, %s)", (model, dimensions, hashes, vectors))


def refresh_file_vectors(conn: Conn, source_id: int, model: str) -> int:
    """Stores the mean chunk vector of each code file of the source lacking one: how many."""
    return int(_value(conn, "SELECT rag.refresh_file_vectors(%s, %s)", (source_id, model)))


# -- contextual chunk text (sql/024_contextual.sql) ---------------------------------


def apply_contextual_texts(conn: Conn, source_id: int, model: str | None, prompt_version: str | None) -> int:
    """Gives the source's chunks the cached texts of ``model`` and the prompt (None: removes them
    all): how many chunks changed."""
    return int(_value(conn, "SELECT rag.apply_contextual_texts(%s, %s, %s)",
                      (source_id, model, prompt_version)))


def count_chunks_without_contextual_text(conn: Conn, source_id: int, model: str, prompt_version: str) -> int:
    """How many requests the LLM must answer for the source's chunks."""
    return int(_value(conn, "SELECT rag.count_chunks_without_contextual_text(%s, %s, %s)",
                      (source_id, model, prompt_version)))


def chunks_without_contextual_text(conn: Conn, source_id: int, model: str, prompt_version: str,
                                   after_document: str, max_documents: int) -> list[Row]:
    """(document_hash, path, document, chunks [{hash, content, startLine, endLine}]) to ask the LLM about."""
    return _rows(conn, "SELECT * FROM rag.chunks_without_contextual_text(%s, %s, %s, %s, %s)",
                 (source_id, model, prompt_version, after_document, max_documents))


def store_contextual_texts(conn: Conn, source_id: int, model: str, prompt_version: str,
                           document_hashes: list[str], chunk_hashes: list[str], texts: list[str]) -> int:
    """Caches the LLM's texts and gives them to the source's chunks: how many chunks changed."""
    return int(_value(conn, "SELECT rag.store_contextual_texts(%s, %s, %s, %s, %s, %s)",
                      (source_id, model, prompt_version, document_hashes, chunk_hashes, texts)))


def cached_contextual_texts(conn: Conn, model: str, prompt_version: str, document_hashes: list[str],
                            chunk_hashes: list[str]) -> list[Row]:
    """(document_hash, chunk_hash, contextual_text) of the given pairs that are cached."""
    return _rows(conn, "SELECT * FROM rag.cached_contextual_texts(%s, %s, %s, %s)",
                 (model, prompt_version, document_hashes, chunk_hashes))




def gc(conn: Conn) -> int:
    """Deletes embeddings no chunk uses: how many."""
    return int(_value(conn, "SELECT rag.gc()"))


def embedding_coverage(conn: Conn) -> list[Row]:
    return _rows(conn, "SELECT * FROM rag.embedding_coverage()")


def last_runs(conn: Conn, max_rows: int) -> list[Row]:
    return _rows(conn, "SELECT * FROM rag.last_runs(%s)", (max_rows,))


def active_runs(conn: Conn) -> list[Row]:
    return _rows(conn, "SELECT * FROM rag.active_runs()")


def watched_sources(conn: Conn) -> list[Row]:
    return _rows(conn, "SELECT * FROM rag.watched_sources()")


def watch_source(conn: Conn, name: str) -> bool:
    """Marks the source watched by this session: whether it holds the mark."""
    return bool(_value(conn, "SELECT rag.watch_source(%s)", (name,)))


# -- search (sql/030_bm25.sql, 032_vector.sql, 034_fusion.sql) ----------------------


def ensure_vector_index(conn: Conn, model: str) -> None:
    conn.execute("SELECT rag.ensure_vector_index(%s)", (model,))






def search(conn: Conn, query: str, embedding: str | None, top_k: int, filters: dict[str, Any],
           options: dict[str, Any]) -> tuple[list[Row], list[Notice]]:
    """The hybrid search's hits, best first (``embedding`` as pgvector text), and what it said on the
    way (its NOTICEs ``search: ...``): one round trip."""
    said: list[Notice] = []

    def hear(diagnostic: psycopg.errors.Diagnostic) -> None:
        message = diagnostic.message_primary or ""
        if diagnostic.severity_nonlocalized == "NOTICE" and message.startswith("search: "):
            said.append(Notice(message.removeprefix("search: "), diagnostic.message_hint))

    conn.add_notice_handler(hear)
    try:
        rows = _rows(conn, "SELECT * FROM rag.search(%s, %s::vector, %s, %s, %s)",
                     (query, embedding, top_k, _jsonb(filters), _jsonb(options)))
    finally:
        conn.remove_notice_handler(hear)
    return rows, said


@dataclass(frozen=True)
class Notice:
    """What ``rag.search`` found out on the way: a message and the SQL rendering of its hint."""
    message: str
    hint: str | None


def warm_search(conn: Conn, embedding: str | None, model: str | None) -> None:
    """One search with rag.search's defaults, for its side effects: the session's functions
    compiled, the indexes' top pages read."""
    conn.execute("SELECT count(*) FROM rag.search('warm up', %s::vector, 1, options => %s)",
                 (embedding, _jsonb({"model": model})))


# -- read-back (sql/040_readback.sql) ------------------------------------------------


def read_chunk(conn: Conn, chunk_id: int, context: int) -> Row:
    """A chunk's stored lines with ``context`` lines around them (a ``rag.excerpt``)."""
    return _row(conn, "SELECT * FROM rag.read_chunk(%s, %s)", (chunk_id, context))


def read_file_range(conn: Conn, source: str | None, path: str, first_line: int | None, last_line: int | None,
                    header_path: str | None, context: int) -> Row:
    """Lines of an indexed file, or a markdown section (a ``rag.excerpt``)."""
    return _row(conn, "SELECT * FROM rag.read_file_range(%s, %s, %s, %s, %s, %s)",
                (source, path, first_line, last_line, header_path, context))


# -- the code graph (sql/050-056) ------------------------------------------------------


def ensure_graph_data(conn: Conn) -> bool:
    """Has the code graph a crash emptied extracted again: whether it was emptied."""
    return bool(_value(conn, "SELECT rag.ensure_graph_data()"))


def graph_awaiting_rebuild(conn: Conn) -> dict[str, int]:
    """Source name → its code files whose graph a database crash emptied (none: the graph is whole)."""
    rows = conn.execute("SELECT source_name, code_files FROM rag.graph_awaiting_rebuild()").fetchall()
    return {row["source_name"]: row["code_files"] for row in rows}


def resolve_refs(conn: Conn, source_id: int) -> int:
    """Resolves the source's pending references: how many were resolved or found ambiguous."""
    return int(_value(conn, "SELECT rag.resolve_refs(%s)", (source_id,)))


def find_symbols(conn: Conn, name: str, sources: list[str] | None, kinds: list[str] | None,
                 max_rows: int) -> list[Row]:
    """Definitions named ``name`` (a name, an fqn or ``path:fqn``), each with the total matched."""
    return _rows(conn, "SELECT * FROM rag.find_symbols(%s, %s, %s, %s)", (name, sources, kinds, max_rows))


def traverse(conn: Conn, symbol: str, relations: list[str], direction: str, max_depth: int,
             sources: list[str] | None, max_rows: int, dynamic: bool) -> list[Row]:
    """``rag.graph_row``s reached from ``symbol``, breadth first, with the source's name."""
    return _rows(conn, "SELECT * FROM rag.traverse(%s, %s, %s, %s, %s, %s, %s)",
                 (symbol, relations, direction, max_depth, sources, max_rows, dynamic))


def graph_status(conn: Conn, sources: list[str] | None = None) -> list[Row]:
    """Per source: definitions, references and how they resolved."""
    return _rows(conn, "SELECT * FROM rag.graph_status(%s)", (sources,))
