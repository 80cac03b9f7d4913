-- Vector search: pgvector nearest neighbours of chunks and passages, one HNSW
-- index per model, filters inside the scan; a query text's stored embedding.

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
       AND to_regclass(format('rag.%I', passage_index_name)) IS NOT NULL THEN
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
    RETURN index_name;
END
$$;
COMMENT ON FUNCTION rag.ensure_vector_index(text) IS
    'Creates the HNSW indexes of one model''s vectors, the chunks'' and the passages'' (partial indexes with a fixed dimension cast), if missing; returns the chunks''.';

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
