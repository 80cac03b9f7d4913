-- Catalog read-back: schema version, status counts, sources.

-- ---------------------------------------------------------------------------
-- schema_version
CREATE OR REPLACE FUNCTION rag.schema_version()
RETURNS text
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT max(migration_id) FROM rag._yoyo_migration
$$;
COMMENT ON FUNCTION rag.schema_version() IS
    'Id of the newest applied migration, e.g. 0001_initial_schema.';

-- ---------------------------------------------------------------------------
-- status
CREATE OR REPLACE FUNCTION rag.status()
RETURNS TABLE (
    schema_version     text,
    postgres_version   text,
    pgvector_version   text,
    sources            bigint,
    files              bigint,
    chunks             bigint,
    embeddings         bigint,
    last_indexed_at    timestamptz
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT rag.schema_version(),
           current_setting('server_version'),
           (SELECT extversion FROM pg_extension WHERE extname = 'vector'),
           (SELECT count(*) FROM rag.sources),
           (SELECT count(*) FROM rag.files),
           (SELECT count(*) FROM rag.chunks),
           (SELECT count(*) FROM rag.embeddings),
           (SELECT max(s.last_indexed_at) FROM rag.sources s)
$$;
COMMENT ON FUNCTION rag.status() IS
    'One row: schema, PostgreSQL and pgvector versions, counts of sources, files, chunks, embeddings.';

-- ---------------------------------------------------------------------------
-- list_sources
CREATE OR REPLACE FUNCTION rag.list_sources(
    name_prefix text DEFAULT NULL,
    source_type text DEFAULT NULL,
    max_rows    integer DEFAULT 50,  -- NULL: no limit
    path_prefix text DEFAULT NULL
)
RETURNS TABLE (
    id              bigint,
    name            text,
    type            text,
    location        text,
    branch          text,
    files           bigint,
    chunks          bigint,
    last_indexed_at timestamptz,
    indexing        boolean,
    config          jsonb,
    commit_sha      text
)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    IF source_type IS NOT NULL AND source_type NOT IN ('local', 'git', 'confluence') THEN
        RAISE EXCEPTION 'list_sources: source_type must be local, git or confluence, not %', quote_literal(source_type)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_rows < 1 THEN
        RAISE EXCEPTION 'list_sources: max_rows must be at least 1, not %', max_rows
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
        SELECT s.id, s.name, s.type, s.location, s.branch,
               (SELECT count(*) FROM rag.files f WHERE f.source_id = s.id),
               (SELECT count(*) FROM rag.chunks c WHERE c.source_id = s.id),
               s.last_indexed_at,
               EXISTS (SELECT 1 FROM rag.active_runs() a WHERE a.source_id = s.id),
               s.config, s.commit_sha
        FROM rag.sources s
        WHERE (name_prefix IS NULL OR starts_with(s.name, name_prefix))
          AND (list_sources.source_type IS NULL OR s.type = list_sources.source_type)
          AND (path_prefix IS NULL OR starts_with(s.location, path_prefix))
        ORDER BY s.name
        LIMIT max_rows;
END
$$;
COMMENT ON FUNCTION rag.list_sources(text, text, integer, text) IS
    'Sources with their type, location, file and chunk counts, last index time, whether a run '
    'indexes them now, their include/exclude config and (git) the commit indexed last; filtered '
    'by name prefix, type and location prefix.';

-- ---------------------------------------------------------------------------
-- local_roots
CREATE OR REPLACE FUNCTION rag.local_roots(
    source_names text[]
)
RETURNS TABLE (name text, location text)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT s.name, s.location FROM rag.sources s WHERE s.type = 'local' AND s.name = ANY (source_names)
$$;
COMMENT ON FUNCTION rag.local_roots(text[]) IS
    'The folders of the named local sources, so search results can carry a path a user can open.';

-- ---------------------------------------------------------------------------
-- record_commit
CREATE OR REPLACE FUNCTION rag.record_commit(
    source_name text,
    sha         text
)
RETURNS void
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
    UPDATE rag.sources s SET commit_sha = sha WHERE s.name = source_name AND s.type = 'git'
$$;
COMMENT ON FUNCTION rag.record_commit(text, text) IS
    'Notes the commit a git source''s index run read (shown by list_sources).';

-- ---------------------------------------------------------------------------
-- sources_have_vectors
CREATE OR REPLACE FUNCTION rag.sources_have_vectors(
    model_name   text,
    source_names text[]
)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT EXISTS (
        SELECT 1 FROM rag.sources s
        JOIN rag.chunks c ON c.source_id = s.id
        JOIN rag.embeddings e ON e.model = model_name AND e.content_hash = c.content_hash
        WHERE s.name = ANY (source_names))
$$;
COMMENT ON FUNCTION rag.sources_have_vectors(text, text[]) IS
    'Whether any chunk of the named sources has a vector of this model (else a search of them is keyword-only).';

-- ---------------------------------------------------------------------------
-- set_model_languages: what an embedding model reads, for rag.search
CREATE OR REPLACE FUNCTION rag.set_model_languages(
    model_name       text,
    model_dimensions integer,
    languages        text[]  -- text-search language names; NULL: any language
)
RETURNS void
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
    -- (recorded before any vector is: a source of texts the model cannot read stores none)
    INSERT INTO rag.embedding_models AS m (model, dimensions, languages)
    VALUES (model_name, model_dimensions, set_model_languages.languages)
    ON CONFLICT (model) DO UPDATE SET languages = excluded.languages
    WHERE m.languages IS DISTINCT FROM excluded.languages
$$;
COMMENT ON FUNCTION rag.set_model_languages(text, integer, text[]) IS
    'Records an embedding model and the languages it reads (NULL: any): rag.search scales its vector arm by the share of a query written in them and says so. Each index run sets it from the configuration.';

-- ---------------------------------------------------------------------------
-- has_model
CREATE OR REPLACE FUNCTION rag.has_model(
    model_name text
)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT EXISTS (SELECT 1 FROM rag.embeddings e WHERE e.model = model_name)
$$;
COMMENT ON FUNCTION rag.has_model(text) IS
    'Whether vectors of this embedding model are stored (the vector arm can run for it).';

-- ---------------------------------------------------------------------------
-- remove_source
CREATE OR REPLACE FUNCTION rag.remove_source(
    source_name text
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    gone       record;
    source_id_ bigint;
BEGIN
    SELECT s.id INTO source_id_ FROM rag.sources s WHERE s.name = source_name;
    IF source_id_ IS NULL THEN
        RAISE EXCEPTION 'remove_source: source % not found; known: %', quote_literal(coalesce(source_name, 'NULL')),
            coalesce((SELECT string_agg(s.name, ', ' ORDER BY s.name) FROM rag.sources s), 'none')
            USING ERRCODE = 'no_data_found';
    END IF;
    -- Not while a run indexes it: that run's next batches would lose their
    -- chunks to the cascade below but leave their postings and statistics.
    IF NOT pg_try_advisory_xact_lock(rag._source_lock_key(source_id_)) THEN
        RAISE EXCEPTION 'remove_source: source % is being indexed now; remove it when the run has finished',
            quote_literal(source_name)
            USING ERRCODE = 'lock_not_available';
    END IF;
    SELECT * INTO gone FROM rag._delete_chunks(source_id_, NULL);
    PERFORM rag._forget_graph(source_id_, NULL);  -- sql/050_graph_store.sql
    DELETE FROM rag.sources s WHERE s.id = source_id_;  -- files and runs' links go with it
    PERFORM rag._apply_keyword_stats(gone.chunk_delta, gone.term_delta, gone.terms, gone.df_deltas);
    RETURN -gone.chunk_delta;
END
$$;
COMMENT ON FUNCTION rag.remove_source(text) IS
    'Deletes a source with its files and chunks; returns the number of chunks removed. Embeddings stay for reuse.';
