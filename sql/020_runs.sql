-- Index runs: a source's record, its runs (one at a time, under an advisory
-- lock) and which files changed. Python scans, chunks and embeds; these
-- functions decide and keep the record. Storing a run's files: 022_storing.sql.

-- ---------------------------------------------------------------------------
-- upsert_source
CREATE OR REPLACE FUNCTION rag.upsert_source(
    source_name text,
    source_type text,
    source_location text,
    source_branch text DEFAULT NULL,
    source_config jsonb DEFAULT '{}'
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    existing rag.sources;
    new_id   bigint;
BEGIN
    IF source_name IS NULL OR source_name !~ '^[A-Za-z0-9][A-Za-z0-9._-]*$' THEN
        RAISE EXCEPTION 'upsert_source: source_name % must be letters, digits, ".", "_" or "-"',
            quote_literal(coalesce(source_name, 'NULL')) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF source_type IS NULL OR source_type NOT IN ('local', 'git', 'confluence') THEN
        RAISE EXCEPTION 'upsert_source: source_type must be local, git or confluence, not %',
            quote_literal(coalesce(source_type, 'NULL')) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF source_location IS NULL OR source_location = '' THEN
        RAISE EXCEPTION 'upsert_source: source_location (a path, git URL or Confluence base URL) is required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO existing FROM rag.sources s WHERE s.name = source_name FOR UPDATE;
    IF FOUND THEN
        IF existing.type <> source_type OR existing.location <> source_location THEN
            RAISE EXCEPTION 'source % already indexes % %; choose another name or remove it first (rag remove %)',
                quote_literal(source_name), existing.type, existing.location, source_name
                USING ERRCODE = 'unique_violation';
        END IF;
        UPDATE rag.sources s
           SET branch = source_branch, config = coalesce(source_config, '{}')
         WHERE s.id = existing.id;
        RETURN existing.id;
    END IF;
    INSERT INTO rag.sources (name, type, location, branch, config)
    VALUES (source_name, source_type, source_location, source_branch, coalesce(source_config, '{}'))
    RETURNING id INTO new_id;
    RETURN new_id;
END
$$;
COMMENT ON FUNCTION rag.upsert_source(text, text, text, text, jsonb) IS
    'Creates a source or updates its branch/config; refuses to repoint an existing name elsewhere. Returns its id.';

-- ---------------------------------------------------------------------------
-- _source_lock_key: advisory-lock key of one source's index runs
CREATE OR REPLACE FUNCTION rag._source_lock_key(
    source_id bigint
)
RETURNS bigint
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT (x'7261670000000000'::bigint) + source_id
$$;
COMMENT ON FUNCTION rag._source_lock_key(bigint) IS
    'Private: the pg_advisory_lock key that serialises index runs of one source.';

-- ---------------------------------------------------------------------------
-- begin_run
CREATE OR REPLACE FUNCTION rag.begin_run(
    run_source_id bigint
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    src    rag.sources;
    active rag.index_runs;
    run_id bigint;
BEGIN
    SELECT * INTO src FROM rag.sources s WHERE s.id = run_source_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'begin_run: no source with id %', run_source_id USING ERRCODE = 'no_data_found';
    END IF;
    -- A session lock: released by COMMIT of nothing, only by finish_run or by the
    -- connection ending, so a killed indexer never blocks the next run.
    IF NOT pg_try_advisory_lock(rag._source_lock_key(run_source_id)) THEN
        SELECT * INTO active FROM rag.index_runs r
         WHERE r.source_id = run_source_id AND r.status = 'running'
         ORDER BY r.started_at DESC LIMIT 1;
        RAISE EXCEPTION 'source % is being indexed by another process (run % started %); wait for it to finish',
            quote_literal(src.name), coalesce(active.id::text, '?'),
            coalesce(to_char(active.started_at, 'YYYY-MM-DD HH24:MI:SS'), 'just now')
            USING ERRCODE = 'lock_not_available';
    END IF;
    -- Holding the lock, any run still marked running died without finishing,
    -- and a bulk load it left without the postings key is repaired, as are
    -- postings a database crash emptied; a graph it emptied is extracted again.
    -- So is the heads index a run killed before its end left unbuilt (no
    -- later run need change chunks); never while another session bulk-loads.
    PERFORM rag.ensure_keyword_data();
    PERFORM rag.ensure_graph_data();  -- sql/050_graph_store.sql
    PERFORM rag.ensure_postings_key();
    IF to_regclass('rag.postings_pkey') IS NOT NULL THEN
        PERFORM rag.ensure_heads_index();
    END IF;
    UPDATE rag.index_runs r SET status = 'interrupted', finished_at = coalesce(r.finished_at, now())
     WHERE r.source_id = run_source_id AND r.status = 'running';
    INSERT INTO rag.index_runs (source_id, source_name) VALUES (run_source_id, src.name)
    RETURNING id INTO run_id;
    RETURN run_id;
END
$$;
COMMENT ON FUNCTION rag.begin_run(bigint) IS
    'Takes the source''s index lock (session-level) and records a new run; fails clearly if another run holds it.';

-- ---------------------------------------------------------------------------
-- source_chunk_count
CREATE OR REPLACE FUNCTION rag.source_chunk_count(
    source_id bigint
)
RETURNS bigint
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT count(*) FROM rag.chunks c WHERE c.source_id = source_chunk_count.source_id
$$;
COMMENT ON FUNCTION rag.source_chunk_count(bigint) IS
    'How many chunks a source has stored now.';

-- ---------------------------------------------------------------------------
-- source_vector_count
CREATE OR REPLACE FUNCTION rag.source_vector_count(
    source_id bigint
)
RETURNS bigint
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT rag.source_chunk_count(source_vector_count.source_id)
           + (SELECT count(*) FROM rag.passages p WHERE p.source_id = source_vector_count.source_id)
$$;
COMMENT ON FUNCTION rag.source_vector_count(bigint) IS
    'How many vectors a source''s search uses: one per chunk and one per passage of a document chunk.';

-- ---------------------------------------------------------------------------
-- finish_run
CREATE OR REPLACE FUNCTION rag.finish_run(
    run_id bigint,
    run_status text,
    run_counts jsonb DEFAULT '{}',
    run_errors jsonb DEFAULT '[]'
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    run rag.index_runs;
BEGIN
    IF run_status IS NULL OR run_status NOT IN ('succeeded', 'failed', 'interrupted') THEN
        RAISE EXCEPTION 'finish_run: run_status must be succeeded, failed or interrupted, not %',
            quote_literal(coalesce(run_status, 'NULL')) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE rag.index_runs r
       SET status = run_status, finished_at = now(),
           counts = coalesce(run_counts, '{}'), errors = coalesce(run_errors, '[]')
     WHERE r.id = run_id
    RETURNING * INTO run;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'finish_run: no run with id %', run_id USING ERRCODE = 'no_data_found';
    END IF;
    IF run_status = 'succeeded' THEN
        UPDATE rag.sources s SET last_indexed_at = run.finished_at WHERE s.id = run.source_id;
    END IF;
    PERFORM pg_advisory_unlock(rag._source_lock_key(run.source_id));
    RETURN rag.source_chunk_count(run.source_id);
END
$$;
COMMENT ON FUNCTION rag.finish_run(bigint, text, jsonb, jsonb) IS
    'Records the outcome, counts and per-file errors of a run, releases the source''s index lock '
    'and returns how many chunks the source has now.';

-- ---------------------------------------------------------------------------
-- plan_files
CREATE OR REPLACE FUNCTION rag.plan_files(
    plan_source_id bigint,
    scanned jsonb,
    force boolean DEFAULT false,
    scope text[] DEFAULT NULL
)
RETURNS TABLE (
    path       text,
    action     text,
    old_sha256 text
)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    folders text[];  -- scope entries that may be folders: neither a stored nor a scanned file
BEGIN
    IF scanned IS NULL OR jsonb_typeof(scanned) <> 'array' THEN
        RAISE EXCEPTION 'plan_files: scanned must be a JSON array of {path, size, mtimeNs}'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF scope IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(scope) p WHERE p IS NULL OR p = '' OR p LIKE '/%') THEN
        RAISE EXCEPTION 'plan_files: scope entries must be paths relative to the source root, not empty or absolute'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF scope IS NOT NULL THEN
        folders := ARRAY(
            SELECT p FROM unnest(scope) p
            EXCEPT SELECT f.path FROM rag.files f WHERE f.source_id = plan_source_id AND f.path = ANY (scope)
            EXCEPT SELECT s->>'path' FROM jsonb_array_elements(scanned) s);
    END IF;
    RETURN QUERY
    WITH seen AS (
        SELECT s.path, s.size, s."mtimeNs" AS mtime_ns, s.ancestors
        FROM jsonb_to_recordset(scanned) AS s(path text, size bigint, "mtimeNs" bigint, ancestors jsonb)
    ),
    stored AS (
        SELECT f.path, f.size, f.mtime_ns, f.sha256, f.metadata->'ancestors' AS ancestors FROM rag.files f
        WHERE f.source_id = plan_source_id AND scope IS NULL
        UNION ALL  -- a partial scan: the files it names, and those under folders of its scope
        SELECT f.path, f.size, f.mtime_ns, f.sha256, f.metadata->'ancestors' FROM rag.files f
        WHERE f.source_id = plan_source_id AND f.path = ANY (scope)
        UNION ALL
        SELECT f.path, f.size, f.mtime_ns, f.sha256, f.metadata->'ancestors' FROM rag.files f
        WHERE f.source_id = plan_source_id AND cardinality(folders) > 0
          AND EXISTS (SELECT 1 FROM rag._path_folders(f.path) a JOIN unnest(folders) d ON d = a)
    )
    SELECT coalesce(seen.path, f.path),
           CASE
               WHEN f.path IS NULL THEN 'new'
               WHEN seen.path IS NULL THEN 'deleted'
               WHEN force OR f.size <> seen.size OR f.mtime_ns <> seen.mtime_ns THEN 'changed'
               -- A Confluence page moved within its space: the same version under other parents.
               WHEN seen.ancestors IS NOT NULL AND seen.ancestors IS DISTINCT FROM f.ancestors THEN 'moved'
               ELSE 'unchanged'
           END,
           f.sha256
    FROM seen
    FULL JOIN stored f ON f.path = seen.path
    ORDER BY 1;
END
$$;
COMMENT ON FUNCTION rag.plan_files(bigint, jsonb, boolean, text[]) IS
    'Compares a scan [{path, size, mtimeNs, ancestors?}] with the stored files: new, changed (size/mtime differ, or force), '
    'moved (same size/mtime, other ancestors than the file''s metadata holds: a Confluence page under new parents), '
    'unchanged, deleted. With scope (paths of files or folders) the scan covered only those: stored files at or '
    'under them that it lacks are deleted, the others are left out of the plan.';

-- ---------------------------------------------------------------------------
-- stored_documents: the text and metadata stored for some files
CREATE OR REPLACE FUNCTION rag.stored_documents(
    target_source_id bigint,
    paths text[]
)
RETURNS TABLE (
    path     text,
    content  text,
    metadata jsonb
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT f.path, f.content, f.metadata FROM rag.files f
    WHERE f.source_id = target_source_id AND f.path = ANY (paths)
    ORDER BY f.path
$$;
COMMENT ON FUNCTION rag.stored_documents(bigint, text[]) IS
    'The stored text and metadata of a source''s files at paths: what a moved Confluence page is chunked again from, without fetching it.';

-- ---------------------------------------------------------------------------
-- _path_folders: the folders holding a path
CREATE OR REPLACE FUNCTION rag._path_folders(
    file_path text
)
RETURNS SETOF text
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT array_to_string((string_to_array(file_path, '/'))[1:i], '/')
    FROM generate_series(1, cardinality(string_to_array(file_path, '/')) - 1) AS i
$$;
COMMENT ON FUNCTION rag._path_folders(text) IS
    'Private: the folders a relative path lies in, outermost first (a/b/c.py -> a, a/b).';

-- ---------------------------------------------------------------------------
-- _source_lock_held: is some session indexing this source right now?
CREATE OR REPLACE FUNCTION rag._source_lock_held(
    held_source_id bigint
)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- rag._source_lock_key split as pg_locks shows a bigint advisory key.
    SELECT EXISTS (
        SELECT 1 FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
          AND l.classid = (rag._source_lock_key(held_source_id) >> 32)::oid
          AND l.objid = (rag._source_lock_key(held_source_id) & x'FFFFFFFF'::bigint)::oid
          AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database()))
$$;
COMMENT ON FUNCTION rag._source_lock_held(bigint) IS
    'Private: true while a session holds the source''s index lock, i.e. a run of it is alive.';

-- ---------------------------------------------------------------------------
-- last_runs
CREATE OR REPLACE FUNCTION rag.last_runs(
    max_rows integer DEFAULT 5
)
RETURNS TABLE (
    id          bigint,
    source_name text,
    status      text,
    started_at  timestamptz,
    finished_at timestamptz,
    counts      jsonb,
    errors      jsonb
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- A run still marked running whose source lock nobody holds was killed:
    -- it is shown as interrupted (begin_run records it so on the next run).
    SELECT r.id, r.source_name,
           CASE WHEN r.status = 'running' AND (r.source_id IS NULL OR NOT rag._source_lock_held(r.source_id))
                THEN 'interrupted' ELSE r.status END,
           r.started_at, r.finished_at, r.counts, r.errors
    FROM rag.index_runs r ORDER BY r.started_at DESC, r.id DESC LIMIT greatest(max_rows, 1)
$$;
COMMENT ON FUNCTION rag.last_runs(integer) IS
    'The newest index runs with status, counts and per-file errors; a run whose process died shows as interrupted.';

-- ---------------------------------------------------------------------------
-- active_runs
CREATE OR REPLACE FUNCTION rag.active_runs()
RETURNS TABLE (
    source_id   bigint,
    source_name text,
    pid         integer,
    run_id      bigint,
    started_at  timestamptz
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- A run is going on while some session holds its source's advisory lock
    -- (rag._source_lock_key: high 32 bits 0x72616700, low 32 bits the source id).
    SELECT s.id, s.name, l.pid, r.id, r.started_at
    FROM pg_locks l
    JOIN rag.sources s ON s.id = l.objid::bigint
    LEFT JOIN LATERAL (
        SELECT r.id, r.started_at FROM rag.index_runs r
        WHERE r.source_id = s.id AND r.status = 'running'
        ORDER BY r.started_at DESC, r.id DESC LIMIT 1) r ON true
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
      AND l.classid = x'72616700'::bigint::oid
      AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
    ORDER BY s.name
$$;
COMMENT ON FUNCTION rag.active_runs() IS
    'Index runs going on right now in any process (their source lock is held), with the run record.';

-- ---------------------------------------------------------------------------
-- watch_source
CREATE OR REPLACE FUNCTION rag.watch_source(
    source_name text
)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    watched_id bigint;
BEGIN
    SELECT s.id INTO watched_id FROM rag.sources s WHERE s.name = source_name;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- Shared and session-level: several watchers of one source (rag watch, MCP servers) all
    -- show, and a watcher that dies or loses its connection stops showing. The two-key form
    -- (0x72616777 "ragw", the source id) never meets an index run's one-key lock.
    PERFORM pg_advisory_lock_shared(x'72616777'::integer, watched_id::integer);
    RETURN true;
END
$$;
COMMENT ON FUNCTION rag.watch_source(text) IS
    'Marks the source as kept fresh by this session (rag watch, an MCP server) until it ends; '
    'false if no source has that name yet.';

-- ---------------------------------------------------------------------------
-- watched_sources
CREATE OR REPLACE FUNCTION rag.watched_sources()
RETURNS TABLE (
    source_name     text,
    pid             integer,
    watching_since  timestamptz,
    last_indexed_at timestamptz
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- Like active_runs, over the watchers' two-key locks taken by watch_source.
    SELECT s.name, l.pid, a.backend_start, s.last_indexed_at
    FROM pg_locks l
    JOIN rag.sources s ON s.id = l.objid::bigint
    LEFT JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
      AND l.classid = x'72616777'::bigint::oid
      AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
    ORDER BY s.name, l.pid
$$;
COMMENT ON FUNCTION rag.watched_sources() IS
    'Sources kept fresh right now by a watcher in any process (rag watch, an MCP server): its '
    'backend pid, since when, and the source''s last index or sync.';
