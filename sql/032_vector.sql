-- Vector search: pgvector nearest neighbours of chunks and passages, one HNSW
-- index per model, filters inside the scan; a query text's stored embedding;
-- the mean vector of each code file (rag.search's files arm).

-- ---------------------------------------------------------------------------
-- ensure_vector_index
CREATE OR REPLACE FUNCTION rag.ensure_vector_index(
    embedding_model text
)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
SET maintenance_work_mem = '512MB'
AS $$
DECLARE
    dims       integer;
    index_name text := 'embeddings_hnsw_' || substr(md5(embedding_model), 1, 16);
    passage_index_name text := 'passage_embeddings_hnsw_' || substr(md5(embedding_model), 1, 16);
    file_index_name text := 'file_vectors_hnsw_' || substr(md5(embedding_model), 1, 16);
BEGIN
    SELECT m.dimensions INTO dims FROM rag.embedding_models m WHERE m.model = embedding_model;
    IF dims IS NULL THEN
        RAISE EXCEPTION 'ensure_vector_index: no embeddings for model %', quote_literal(embedding_model)
            USING ERRCODE = 'no_data_found';
    END IF;
    IF dims > 2000 THEN
        RETURN NULL;  -- beyond HNSW's limit for vector: exact search only
    END IF;
    -- (looked up first: CREATE INDEX IF NOT EXISTS locks the table against
    -- writers before it finds the index there, and every index run asks)
    IF to_regclass(format('rag.%I', index_name)) IS NOT NULL
       AND to_regclass(format('rag.%I', passage_index_name)) IS NOT NULL
       AND to_regclass(format('rag.%I', file_index_name)) IS NOT NULL THEN
        RETURN index_name;
    END IF;
    EXECUTE format(
        'CREATE INDEX IF NOT EXISTS %I ON rag.embeddings USING hnsw ((embedding::vector(%s)) vector_cosine_ops)'
        ' WITH (m = 16, ef_construction = 100) WHERE model = %L',
        index_name, dims, embedding_model);
    EXECUTE format(
        'CREATE INDEX IF NOT EXISTS %I ON rag.passage_embeddings USING hnsw ((embedding::vector(%s)) vector_cosine_ops)'
        ' WITH (m = 16, ef_construction = 100) WHERE model = %L',
        passage_index_name, dims, embedding_model);
    EXECUTE format(
        'CREATE INDEX IF NOT EXISTS %I ON rag.file_vectors USING hnsw ((embedding::vector(%s)) vector_cosine_ops)'
        ' WITH (m = 16, ef_construction = 100) WHERE model = %L',
        file_index_name, dims, embedding_model);
    RETURN index_name;
END
$$;
COMMENT ON FUNCTION rag.ensure_vector_index(text) IS
    'Creates the HNSW indexes of one model''s vectors, the chunks'', the passages'' and the files'' (partial indexes with a fixed dimension cast), if missing; returns the chunks''.';

-- ---------------------------------------------------------------------------
-- _nearest_chunk: a file's chunk nearest a query
CREATE OR REPLACE FUNCTION rag._nearest_chunk(
    target_file_id bigint,
    query_vector   vector,
    model          text
)
RETURNS bigint
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- Exact: a file's chunks are few.
    SELECT c.id FROM rag.chunks c
    JOIN rag.embeddings e ON e.model = _nearest_chunk.model AND e.content_hash = c.content_hash
    WHERE c.file_id = target_file_id
    ORDER BY e.embedding <=> query_vector, c.id
    LIMIT 1
$$;
COMMENT ON FUNCTION rag._nearest_chunk(bigint, vector, text) IS
    'Private: the chunk of a file whose vector (of the model) is nearest the query vector; NULL if none has one.';

-- ---------------------------------------------------------------------------
-- refresh_file_vectors
CREATE OR REPLACE FUNCTION rag.refresh_file_vectors(
    target_source_id bigint,
    embedding_model text
)
RETURNS integer
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
    -- A replaced file lost its vector (rag.replace_files); a file with a chunk
    -- not embedded yet (a run stopped midway) waits for the run that embeds it.
    -- Tests, examples, vendored code ... (a path class) get none: the files arm
    -- lifts modules only, and a package shipping more tests than modules
    -- (pino: 136 beside 23) would fill its nearest files with tests. Nor do
    -- the files of an older copy of an API (rag._older_copy: pydantic/v1/
    -- beside pydantic/), decided by the tree: a file whose folder became one
    -- (a v3/ was added beside its v2/) loses its vector here.
    WITH older AS MATERIALIZED (  -- (each folder decided once)
        SELECT f.folder
        FROM (SELECT DISTINCT rag._copy_folder(f.path) AS folder FROM rag.files f
              WHERE f.source_id = target_source_id) f
        WHERE f.folder IS NOT NULL AND rag._older_copy(target_source_id, f.folder)
    ),
    dropped AS (
        DELETE FROM rag.file_vectors v
        USING rag.files f
        WHERE f.id = v.file_id AND v.model = embedding_model AND f.source_id = target_source_id
          AND rag._copy_folder(f.path) IN (SELECT o.folder FROM older o)
    ),
    added AS (
        INSERT INTO rag.file_vectors (model, file_id, embedding)
        SELECT embedding_model, f.id, avg(e.embedding)
        FROM rag.files f
        JOIN rag.chunks c ON c.file_id = f.id
        LEFT JOIN rag.embeddings e ON e.model = embedding_model AND e.content_hash = c.content_hash
        WHERE f.source_id = target_source_id AND f.source_type = 'code'
          AND NOT EXISTS (SELECT 1 FROM rag.file_vectors v WHERE v.model = embedding_model AND v.file_id = f.id)
          AND rag.path_class(f.path) IS NULL
          AND NOT EXISTS (SELECT 1 FROM older o WHERE o.folder = rag._copy_folder(f.path))
        GROUP BY f.id
        HAVING count(e.embedding) = count(*)
        ON CONFLICT DO NOTHING
        RETURNING 1
    )
    SELECT count(*)::integer FROM added
$$;
COMMENT ON FUNCTION rag.refresh_file_vectors(bigint, text) IS
    'Stores the vector of each code file of a source that lacks one for the model and is in no path class (rag.path_class: not a test, example, vendored ...) nor in an older copy of an API (rag._older_copy; the vectors of such files are dropped): the mean of its chunks'' vectors, once all are embedded (rag.search''s files arm); returns how many were added.';

-- ---------------------------------------------------------------------------
-- vector_search
CREATE OR REPLACE FUNCTION rag.vector_search(
    query_embedding vector,
    embedding_model text,
    top_n           integer DEFAULT 50,
    sources         text[] DEFAULT NULL,
    source_types    text[] DEFAULT NULL,
    languages       text[] DEFAULT NULL,
    path_prefix     text DEFAULT NULL,
    exact_below     integer DEFAULT 2000
)
RETURNS TABLE (
    chunk_id bigint,
    score    double precision,
    rank     integer
)
LANGUAGE plpgsql
VOLATILE  -- sets hnsw.* for its own transaction
ROWS 50   -- as bm25_search
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
DECLARE
    source_filter bigint[] := rag._source_ids(sources, 'search');
    file_filter   bigint[] := rag._file_ids(source_types, languages, path_prefix);
    dims          integer;
    filtered      boolean := sources IS NOT NULL OR source_types IS NOT NULL
                             OR languages IS NOT NULL OR path_prefix IS NOT NULL;
    allowed       bigint[];
BEGIN
    IF top_n IS NULL OR top_n < 1 OR top_n > 1000 THEN
        RAISE EXCEPTION 'vector_search: top_n must be between 1 and 1000, not %', coalesce(top_n::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF exact_below IS NULL OR exact_below < 0 THEN
        RAISE EXCEPTION 'vector_search: exact_below must be 0 or more, not %', coalesce(exact_below::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT m.dimensions INTO dims FROM rag.embedding_models m WHERE m.model = embedding_model;
    IF dims IS NULL THEN
        RAISE EXCEPTION 'vector_search: no embeddings for model %; known: %', quote_literal(embedding_model),
            coalesce((SELECT string_agg(m.model, ', ' ORDER BY m.model) FROM rag.embedding_models m), 'none')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF query_embedding IS NULL OR vector_dims(query_embedding) <> dims THEN
        RAISE EXCEPTION 'vector_search: query_embedding must have % dimensions for model %, not %',
            dims, quote_literal(embedding_model), coalesce(vector_dims(query_embedding)::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    IF filtered THEN
        allowed := rag._filtered_chunks(source_filter, file_filter, exact_below);
    END IF;

    IF filtered AND cardinality(allowed) <= exact_below THEN
        -- Few rows pass the filter: exact distances. Ordering by the plain
        -- column (not the indexed cast) keeps the planner off the HNSW index,
        -- whose scan would stop early and return too few rows.
        -- A chunk is as near as the nearest of its vectors: its own and its passages'.
        RETURN QUERY
            SELECT r.id, 1 - r.distance, (row_number() OVER (ORDER BY r.distance, r.id))::integer
            FROM (
                SELECT v.id, min(v.distance) AS distance
                FROM (SELECT c.id, e.embedding <=> query_embedding AS distance
                      FROM rag.chunks c
                      JOIN rag.embeddings e ON e.model = embedding_model AND e.content_hash = c.content_hash
                      WHERE c.id = ANY ((SELECT allowed)::bigint[])  -- hidden from the planner, as in bm25_search
                      UNION ALL
                      SELECT p.chunk_id, e.embedding <=> query_embedding
                      FROM rag.passages p
                      JOIN rag.passage_embeddings e ON e.model = embedding_model AND e.content_hash = p.content_hash
                      WHERE p.chunk_id = ANY ((SELECT allowed)::bigint[])) v
                GROUP BY v.id
                ORDER BY distance, v.id
                LIMIT top_n
            ) r
            ORDER BY r.distance, r.id;
        RETURN;
    END IF;

    -- HNSW: ef_search at least top_n (the default 40 caps a LIMIT 50 at 40
    -- rows), and iterative scans so rows removed by the filters or by the join
    -- to chunks (vectors kept for reuse) are replaced by the next nearest.
    PERFORM set_config('hnsw.ef_search', greatest(top_n * 2, 40)::text, true);
    PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true);
    -- A filter passing 0.2% of a million chunks needs ~25k visited vectors to
    -- fill 50 rows; pgvector stops at 20k by default.
    PERFORM set_config('hnsw.max_scan_tuples', '200000', true);
    -- The nearest chunks, and apart the nearest passages (each through its
    -- own HNSW index; the second only when the sources searched have
    -- passages, else it would walk the whole index finding none); a chunk
    -- found both ways is as near as the nearer.
    RETURN QUERY EXECUTE format(
        'SELECT r.id, 1 - r.distance, (row_number() OVER (ORDER BY r.distance, r.id))::integer'
        ' FROM (SELECT n.id, min(n.distance) AS distance FROM ('
        '         (SELECT c.id, e.embedding::vector(%1$s) <=> $1::vector(%1$s) AS distance'
        '          FROM rag.embeddings e JOIN rag.chunks c ON c.content_hash = e.content_hash'
        '          WHERE e.model = $2'
        '            AND ($4::bigint[] IS NULL OR c.source_id = ANY ($4))'
        '            AND ($5::bigint[] IS NULL OR c.file_id IN (SELECT unnest($5)))'
        '          ORDER BY e.embedding::vector(%1$s) <=> $1::vector(%1$s)'
        '          LIMIT $3)'
        '         UNION ALL'
        '         (SELECT c.id, e.embedding::vector(%1$s) <=> $1::vector(%1$s)'
        '          FROM rag.passage_embeddings e JOIN rag.passages p ON p.content_hash = e.content_hash'
        '          JOIN rag.chunks c ON c.id = p.chunk_id'
        '          WHERE $6 AND e.model = $2'
        '            AND ($4::bigint[] IS NULL OR c.source_id = ANY ($4))'
        '            AND ($5::bigint[] IS NULL OR c.file_id IN (SELECT unnest($5)))'
        '          ORDER BY e.embedding::vector(%1$s) <=> $1::vector(%1$s)'
        '          LIMIT $3)) n'
        '       GROUP BY n.id ORDER BY distance, n.id LIMIT $3) r'
        ' ORDER BY r.distance, r.id', dims)
        USING query_embedding, embedding_model, top_n, source_filter, file_filter,
              EXISTS (SELECT 1 FROM rag.passages p WHERE source_filter IS NULL OR p.source_id = ANY (source_filter));
END
$$;
COMMENT ON FUNCTION rag.vector_search(vector, text, integer, text[], text[], text[], text, integer) IS
    'Nearest chunks by cosine similarity for one model, a chunk scored by the nearest of its vectors and its passages'': HNSW (iterative scan) or, when filters leave at most exact_below chunks, exact distances.';

-- ---------------------------------------------------------------------------
-- _nearest_files: code files by their mean chunk vector
CREATE OR REPLACE FUNCTION rag._nearest_files(
    query_vector  vector,
    model         text,
    top_n         integer,
    source_filter bigint[],  -- rag._source_ids
    file_filter   bigint[],  -- rag._file_ids
    exact_below   integer DEFAULT 2000
)
RETURNS TABLE (
    file_id  bigint,
    path     text,
    distance double precision
)
LANGUAGE plpgsql
VOLATILE  -- sets hnsw.* for its own transaction
SET search_path = pg_catalog, rag, public
-- Not rag.search's generic plans: one made for no filter read every file's
-- vector for a path prefix's (290 ms at 100k chunks).
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
BEGIN
    IF (source_filter IS NOT NULL OR file_filter IS NOT NULL)
       AND (SELECT count(*) FROM (SELECT 1 FROM rag.files f
                                  WHERE (source_filter IS NULL OR f.source_id = ANY (source_filter))
                                    AND (file_filter IS NULL OR f.id IN (SELECT unnest(file_filter)))
                                  LIMIT exact_below + 1) passing) <= exact_below THEN
        -- Few files pass the filters: exact distances (the index would be
        -- walked far to find them: +30 ms for a 1% source at 100k chunks).
        RETURN QUERY
            SELECT n.file_id, f.path, n.distance
            FROM (SELECT v.file_id, v.embedding <=> query_vector AS distance
                  FROM rag.files a  -- (the files passing, then one probe each for the vector)
                  JOIN rag.file_vectors v ON v.model = _nearest_files.model AND v.file_id = a.id
                  WHERE (source_filter IS NULL OR a.source_id = ANY (source_filter))
                    AND (file_filter IS NULL OR a.id IN (SELECT unnest(file_filter)))  -- (hashed)
                  ORDER BY distance, v.file_id
                  LIMIT top_n) n
            JOIN rag.files f ON f.id = n.file_id
            ORDER BY n.distance, n.file_id;
        RETURN;
    END IF;
    -- Else through the model's HNSW index (rag.ensure_vector_index): an exact
    -- scan costs ~1 ms per 1,000 files. Iterative, so that filtered-out files
    -- are replaced by the next nearest.
    PERFORM set_config('hnsw.ef_search', greatest(top_n * 2, 40)::text, true);
    PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true);
    RETURN QUERY EXECUTE format(
        'SELECT n.file_id, f.path, n.distance FROM ('
        '    SELECT v.file_id, v.embedding::vector(%1$s) <=> $1::vector(%1$s) AS distance'
        '    FROM rag.file_vectors v'
        '    WHERE v.model = $2'
        '      AND ($4::bigint[] IS NULL'
        '           OR EXISTS (SELECT 1 FROM rag.files s WHERE s.id = v.file_id AND s.source_id = ANY ($4)))'
        '      AND ($5::bigint[] IS NULL OR v.file_id IN (SELECT unnest($5)))'
        '    ORDER BY v.embedding::vector(%1$s) <=> $1::vector(%1$s)'
        '    LIMIT $3) n'
        ' JOIN rag.files f ON f.id = n.file_id'
        ' ORDER BY n.distance, n.file_id', vector_dims(query_vector))
        USING query_vector, model, top_n, source_filter, file_filter;
END
$$;
COMMENT ON FUNCTION rag._nearest_files(vector, text, integer, bigint[], bigint[], integer) IS
    'Private: the top_n code files (of the sources and files given, NULL for all; only files in no path class have a vector) whose mean chunk vector (rag.file_vectors) is nearest the query, nearest first: HNSW, or exact distances when the filters leave at most exact_below files.';

-- ---------------------------------------------------------------------------
-- remember_query_embedding
CREATE OR REPLACE FUNCTION rag.remember_query_embedding(
    embedding_model text,
    query text,
    query_embedding vector
)
RETURNS void
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
    INSERT INTO rag.query_embeddings (model, query_hash, query, embedding)
    VALUES (embedding_model, md5(query), query, query_embedding)
    ON CONFLICT (model, query_hash) DO UPDATE SET used_at = now(), embedding = excluded.embedding
$$;
COMMENT ON FUNCTION rag.remember_query_embedding(text, text, vector) IS
    'Stores the embedding of a query text so rag.search(query) from psql can use it without a model.';
