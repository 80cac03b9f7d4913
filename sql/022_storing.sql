-- Storing: a batch of files with their chunks replaced atomically, the vectors
-- chunks lack and store, deleting files, and pruning unused embeddings.

-- ---------------------------------------------------------------------------
-- store_embeddings
CREATE OR REPLACE FUNCTION rag.store_embeddings(
    embedding_model text,
    model_dimensions integer,
    content_hashes text[],
    vectors text[]
)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    known_dimensions integer;
    stored           integer;
BEGIN
    IF model_dimensions IS NULL OR model_dimensions < 1 THEN
        RAISE EXCEPTION 'store_embeddings: model_dimensions must be positive, not %',
            coalesce(model_dimensions::text, 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(content_hashes) IS DISTINCT FROM cardinality(vectors) THEN
        RAISE EXCEPTION 'store_embeddings: % content_hashes but % vectors',
            cardinality(content_hashes), cardinality(vectors) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO rag.embedding_models (model, dimensions) VALUES (embedding_model, model_dimensions)
    ON CONFLICT (model) DO NOTHING;
    SELECT m.dimensions INTO known_dimensions FROM rag.embedding_models m WHERE m.model = embedding_model;
    IF known_dimensions <> model_dimensions THEN
        RAISE EXCEPTION 'store_embeddings: model % has % dimensions, not %',
            quote_literal(embedding_model), known_dimensions, model_dimensions
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A passage's vector goes with the passages' (rag.passage_embeddings),
    -- any other with the chunks'; a text that is both goes to both.
    WITH given AS MATERIALIZED (
        SELECT u.h, u.v, EXISTS (SELECT 1 FROM rag.passages p WHERE p.content_hash = u.h) AS of_passage,
               EXISTS (SELECT 1 FROM rag.chunks c WHERE c.content_hash = u.h) AS of_chunk
        FROM unnest(content_hashes, vectors) AS u(h, v)
    ),
    for_chunks AS (
        INSERT INTO rag.embeddings (model, content_hash, embedding)
        SELECT embedding_model, g.h, g.v::vector FROM given g WHERE g.of_chunk OR NOT g.of_passage
        ON CONFLICT (model, content_hash) DO NOTHING
        RETURNING 1
    ),
    for_passages AS (
        INSERT INTO rag.passage_embeddings (model, content_hash, embedding)
        SELECT embedding_model, g.h, g.v::vector FROM given g WHERE g.of_passage
        ON CONFLICT (model, content_hash) DO NOTHING
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM for_chunks) + (SELECT count(*) FROM for_passages) INTO stored;
    IF EXISTS (
        SELECT 1 FROM unnest(vectors) AS v WHERE vector_dims(v::vector) <> model_dimensions
    ) THEN
        RAISE EXCEPTION 'store_embeddings: every vector must have % dimensions', model_dimensions
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN stored;
END
$$;
COMMENT ON FUNCTION rag.store_embeddings(text, integer, text[], text[]) IS
    'Stores vectors (pgvector text form) by (model, content hash), a passage''s in rag.passage_embeddings; existing ones are kept. Returns how many were new.';

-- ---------------------------------------------------------------------------
-- _file_batch: the rows of a replace_files batch
CREATE OR REPLACE FUNCTION rag._file_batch(
    file_batch jsonb
)
RETURNS TABLE (
    path text, size bigint, mtime_ns bigint, sha256 text, source_type text,
    language text, content text, error text, chunks jsonb, metadata jsonb
)
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT b.path, b.size, b."mtimeNs", b.sha256, b."sourceType", b.language, b.content, b.error,
           coalesce(b.chunks, '[]'), b.metadata
    FROM jsonb_to_recordset(file_batch) AS b(
        path text, size bigint, "mtimeNs" bigint, sha256 text, "sourceType" text,
        language text, content text, error text, chunks jsonb, metadata jsonb)
$$;
COMMENT ON FUNCTION rag._file_batch(jsonb) IS
    'Private: a replace_files JSON batch as rows.';

-- ---------------------------------------------------------------------------
-- _add_chunks: a batch's chunks with their keyword data, tokenized once
CREATE OR REPLACE FUNCTION rag._add_chunks(
    target_source_id bigint,
    file_batch jsonb,
    OUT chunk_delta bigint,
    OUT term_delta bigint,
    OUT terms text[],
    OUT df_deltas integer[]
)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    counting boolean := rag._counting_term_stats();
    dictionaries regdictionary[] := rag._stem_dictionaries();
BEGIN
    -- The document length goes in with the chunk: updating it afterwards
    -- would write every chunk row twice.
    WITH chunk_rows AS MATERIALIZED (
        SELECT f.id AS file_id, (c.ordinality - 1)::integer AS ordinal, c.value->>'content' AS content,
               coalesce(c.value->>'context', '') AS context, c.value->>'contentHash' AS content_hash,
               c.value->'metadata' AS metadata, c.value->'passages' AS passages
        FROM rag._file_batch(file_batch) b
        JOIN rag.files f ON f.source_id = target_source_id AND f.path = b.path
        CROSS JOIN LATERAL jsonb_array_elements(b.chunks) WITH ORDINALITY AS c(value, ordinality)
    ),
    tokens AS MATERIALIZED (
        SELECT r.file_id, r.ordinal, t.term, t.tf, t.in_text
        FROM chunk_rows r, LATERAL rag._chunk_terms(r.context, r.context, r.content, r.metadata, dictionaries) t
    ),
    fresh AS (
        INSERT INTO rag.chunks (source_id, file_id, ordinal, content, context, content_hash, metadata,
                                term_count, terms)
        SELECT target_source_id, r.file_id, r.ordinal, r.content, r.context, r.content_hash, r.metadata,
               coalesce(l.n, 0), coalesce(l.terms, '{}')
        FROM chunk_rows r
        LEFT JOIN (SELECT t.file_id, t.ordinal, coalesce(sum(t.tf) FILTER (WHERE t.in_text), 0)::integer AS n,
                          array_agg(t.term) AS terms
                   FROM tokens t GROUP BY 1, 2) l
               ON l.file_id = r.file_id AND l.ordinal = r.ordinal
        RETURNING id, file_id, ordinal, term_count
    ),
    passaged AS (  -- a document chunk's passages (rag/chunking/passages.py)
        INSERT INTO rag.passages (chunk_id, ordinal, source_id, end_offset, content_hash)
        SELECT f.id, (p.ordinality - 1)::integer, target_source_id, (p.value->>'end')::integer, p.value->>'hash'
        FROM (SELECT * FROM chunk_rows r WHERE r.passages IS NOT NULL) r
        JOIN fresh f ON f.file_id = r.file_id AND f.ordinal = r.ordinal
        CROSS JOIN LATERAL jsonb_array_elements(r.passages) WITH ORDINALITY AS p(value, ordinality)
    ),
    posted AS (  -- (runs though nothing reads it, as every data-modifying WITH)
        INSERT INTO rag.postings (term, chunk_id, tf, term_count)
        SELECT t.term, f.id, t.tf, f.term_count
        FROM tokens t JOIN fresh f ON f.file_id = t.file_id AND f.ordinal = t.ordinal
    ),
    counted AS (  -- a chunk's terms are distinct: a term's rows are its new postings
        SELECT t.term, count(*)::integer AS n FROM tokens t WHERE counting GROUP BY t.term
    )
    SELECT (SELECT count(*) FROM fresh), (SELECT coalesce(sum(f.term_count), 0) FROM fresh f),
           coalesce(array_agg(c.term ORDER BY c.term), '{}'), coalesce(array_agg(c.n ORDER BY c.term), '{}')
      INTO chunk_delta, term_delta, terms, df_deltas
    FROM counted c;
END
$$;
COMMENT ON FUNCTION rag._add_chunks(bigint, jsonb) IS
    'Private: inserts the chunks of a replace_files batch (files already stored) with their postings and passages; returns the changes to the BM25 statistics for rag._apply_keyword_stats.';

-- ---------------------------------------------------------------------------
-- replace_files
CREATE OR REPLACE FUNCTION rag.replace_files(
    target_source_id bigint,
    file_batch jsonb
)
RETURNS TABLE (
    added_chunks   bigint,
    removed_chunks bigint
)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    gone    record;  -- chunks of the old versions, deleted
    fresh   record;  -- chunks of the new versions, added
    removed bigint;
    added   bigint;
    stored  bigint[];  -- the files stored before: only their code graph is replaced
BEGIN
    IF file_batch IS NULL OR jsonb_typeof(file_batch) <> 'array' THEN
        RAISE EXCEPTION 'replace_files: file_batch must be a JSON array of files'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM rag._file_batch(file_batch) b
                WHERE b.path IS NULL OR b.size IS NULL OR b.mtime_ns IS NULL OR b.sha256 IS NULL) THEN
        RAISE EXCEPTION 'replace_files: every file needs path, size, mtimeNs and sha256'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT * INTO gone FROM rag._delete_chunks(
        target_source_id, ARRAY(SELECT b.path FROM rag._file_batch(file_batch) b));

    stored := ARRAY(SELECT f.id FROM jsonb_to_recordset(file_batch) AS b(path text)
                    JOIN rag.files f ON f.source_id = target_source_id AND f.path = b.path);
    DELETE FROM rag.file_vectors v WHERE v.file_id = ANY (stored);  -- (rag.refresh_file_vectors redoes them)
    INSERT INTO rag.files AS f (source_id, path, size, mtime_ns, sha256, source_type, language,
                                content, error, metadata, indexed_at)
    SELECT target_source_id, b.path, b.size, b.mtime_ns, b.sha256, b.source_type, b.language,
           b.content, b.error, b.metadata, now()
    FROM rag._file_batch(file_batch) b
    ON CONFLICT (source_id, path) DO UPDATE
       SET size = excluded.size, mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256,
           source_type = excluded.source_type, language = excluded.language,
           content = excluded.content, error = excluded.error, metadata = excluded.metadata,
           indexed_at = excluded.indexed_at;

    SELECT * INTO fresh FROM rag._add_chunks(target_source_id, file_batch);
    PERFORM rag._replace_graph(target_source_id, file_batch, stored);  -- sql/050_graph_store.sql
    PERFORM rag._apply_keyword_stats(gone.chunk_delta + fresh.chunk_delta, gone.term_delta + fresh.term_delta,
                                     gone.terms || fresh.terms, gone.df_deltas || fresh.df_deltas);
    added := fresh.chunk_delta;
    removed := -gone.chunk_delta;
    RETURN QUERY SELECT added, removed;
END
$$;
COMMENT ON FUNCTION rag.replace_files(bigint, jsonb) IS
    'Atomically replaces files and all their chunks: [{path, size, mtimeNs, sha256, sourceType, language, content, error, '
    'metadata, chunks: [{content, context, contentHash, metadata}]}]; contentHash is the sha256 of rag._indexed_text(context, content); '
    'metadata (optional) is a remote document''s own fields (a Confluence page''s id, title, version, restrictions...).';

-- ---------------------------------------------------------------------------
-- touch_files
CREATE OR REPLACE FUNCTION rag.touch_files(
    target_source_id bigint,
    file_stats jsonb
)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    touched integer;
BEGIN
    UPDATE rag.files f SET size = s.size, mtime_ns = s."mtimeNs"
    FROM jsonb_to_recordset(file_stats) AS s(path text, size bigint, "mtimeNs" bigint)
    WHERE f.source_id = target_source_id AND f.path = s.path;
    GET DIAGNOSTICS touched = ROW_COUNT;
    RETURN touched;
END
$$;
COMMENT ON FUNCTION rag.touch_files(bigint, jsonb) IS
    'Records new size/mtime of files whose content did not change ([{path, size, mtimeNs}]), so they are skipped unread next time.';

-- ---------------------------------------------------------------------------
-- delete_files
CREATE OR REPLACE FUNCTION rag.delete_files(
    target_source_id bigint,
    paths text[]
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    gone record;
BEGIN
    SELECT * INTO gone FROM rag._delete_chunks(target_source_id, paths);
    PERFORM rag._forget_graph(target_source_id, paths);  -- sql/050_graph_store.sql
    DELETE FROM rag.files f WHERE f.source_id = target_source_id AND f.path = ANY (paths);
    PERFORM rag._apply_keyword_stats(gone.chunk_delta, gone.term_delta, gone.terms, gone.df_deltas);
    RETURN -gone.chunk_delta;
END
$$;
COMMENT ON FUNCTION rag.delete_files(bigint, text[]) IS
    'Deletes files (gone from the source) with their chunks; returns the number of chunks removed.';

-- ---------------------------------------------------------------------------
-- gc
CREATE OR REPLACE FUNCTION rag.gc()
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    pruned bigint;
BEGIN
    WITH chunks_gone AS (
        DELETE FROM rag.embeddings e
        WHERE NOT EXISTS (SELECT 1 FROM rag.chunks c WHERE c.content_hash = e.content_hash)
        RETURNING 1
    ),
    passages_gone AS (
        DELETE FROM rag.passage_embeddings e
        WHERE NOT EXISTS (SELECT 1 FROM rag.passages p WHERE p.content_hash = e.content_hash)
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM chunks_gone) + (SELECT count(*) FROM passages_gone) INTO pruned;
    -- Contextual texts of documents no file holds any more (sql/024_contextual.sql).
    DELETE FROM rag.contextual_texts k WHERE NOT EXISTS (SELECT 1 FROM rag.files f WHERE f.sha256 = k.document_hash);
    RETURN pruned;
END
$$;
COMMENT ON FUNCTION rag.gc() IS
    'Deletes embeddings no chunk or passage refers to any more (after rag remove or edits), and the cached '
    'contextual texts of documents no file holds; returns how many embeddings went.';

-- ---------------------------------------------------------------------------
-- embedding_coverage
CREATE OR REPLACE FUNCTION rag.embedding_coverage()
RETURNS TABLE (
    model           text,
    dimensions      integer,
    embedded_chunks bigint,
    total_chunks    bigint
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT m.model, m.dimensions,
           (SELECT count(*) FROM rag.chunks c
             WHERE EXISTS (SELECT 1 FROM rag.embeddings e
                            WHERE e.model = m.model AND e.content_hash = c.content_hash)),
           (SELECT count(*) FROM rag.chunks)
    FROM rag.embedding_models m
    ORDER BY m.model
$$;
COMMENT ON FUNCTION rag.embedding_coverage() IS
    'Per embedding model: how many chunks have a vector for it, out of all chunks.';

-- ---------------------------------------------------------------------------
-- _model_reads: whether a model of some languages can read a text
CREATE OR REPLACE FUNCTION rag._model_reads(
    content   text,
    languages text[]  -- the languages the embedding model reads; NULL: any
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, rag, public
AS $$
    -- Half of the words in the model's scripts: a Russian guide with a few
    -- English commands is not embedded by an English-only model (its vector
    -- would be noise), code with Russian comments is.
    SELECT languages IS NULL OR rag.readable_share(content, languages) >= 0.5
$$;
COMMENT ON FUNCTION rag._model_reads(text, text[]) IS
    'Private: whether an embedding model reading only languages (NULL: any) can read content: half or more of its words (rag.readable_share) are in their scripts.';

-- ---------------------------------------------------------------------------
-- chunks_without_embedding
CREATE OR REPLACE FUNCTION rag.chunks_without_embedding(
    target_source_id bigint,
    embedding_model text,
    max_rows integer DEFAULT 1000,
    model_languages text[] DEFAULT NULL
)
RETURNS TABLE (
    content_hash text,
    content      text
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- Texts are cut out of the content only for the rows returned.
    SELECT DISTINCT ON (t.content_hash) t.content_hash,
           rag._indexed_text(t.context, CASE WHEN t.end_offset IS NULL THEN t.content
                                             ELSE substr(t.content, t.start_offset + 1, t.end_offset - t.start_offset) END)
    FROM (
        SELECT c.content_hash, rag._chunk_prefix(c.context, c.contextual_text) AS context, c.content,
               NULL::integer AS start_offset, NULL::integer AS end_offset
        FROM rag.chunks c
        WHERE c.source_id = target_source_id
          AND NOT EXISTS (SELECT 1 FROM rag.embeddings e
                           WHERE e.model = embedding_model AND e.content_hash = c.content_hash)
          AND rag._model_reads(c.content, model_languages)
        UNION ALL
        SELECT w.content_hash, w.context, w.content, w.start_offset, w.end_offset
        FROM (SELECT p.content_hash, rag._chunk_prefix(c.context, c.contextual_text) AS context, c.content,
                     p.end_offset,
                     lag(p.end_offset, 1, 0) OVER (PARTITION BY p.chunk_id ORDER BY p.ordinal) AS start_offset
              FROM rag.passages p JOIN rag.chunks c ON c.id = p.chunk_id
              WHERE p.source_id = target_source_id
                AND rag._model_reads(c.content, model_languages)) w
        WHERE NOT EXISTS (SELECT 1 FROM rag.passage_embeddings e
                           WHERE e.model = embedding_model AND e.content_hash = w.content_hash)
    ) t
    ORDER BY t.content_hash
    LIMIT greatest(max_rows, 1)
$$;
COMMENT ON FUNCTION rag.chunks_without_embedding(bigint, text, integer, text[]) IS
    'Distinct indexed texts (rag._indexed_text: context and contextual text, then content) of a source''s chunks and of their passages '
    'that have no vector for the model yet and that it can read (rag._model_reads; model_languages NULL: any): what an index run '
    'must embed (after a model switch or an interrupted run too).';

-- ---------------------------------------------------------------------------
-- count_chunks_without_embedding
CREATE OR REPLACE FUNCTION rag.count_chunks_without_embedding(
    target_source_id bigint,
    embedding_model text,
    model_languages text[] DEFAULT NULL
)
RETURNS bigint
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT count(DISTINCT t.content_hash)
    FROM (
        SELECT c.content_hash FROM rag.chunks c
        WHERE c.source_id = target_source_id
          AND NOT EXISTS (SELECT 1 FROM rag.embeddings e
                           WHERE e.model = embedding_model AND e.content_hash = c.content_hash)
          AND rag._model_reads(c.content, model_languages)
        UNION ALL
        SELECT p.content_hash FROM rag.passages p JOIN rag.chunks c ON c.id = p.chunk_id
        WHERE p.source_id = target_source_id
          AND NOT EXISTS (SELECT 1 FROM rag.passage_embeddings e
                           WHERE e.model = embedding_model AND e.content_hash = p.content_hash)
          AND rag._model_reads(c.content, model_languages)
    ) t
$$;
COMMENT ON FUNCTION rag.count_chunks_without_embedding(bigint, text, text[]) IS
    'How many distinct texts of a source (its chunks'' and their passages'') still need a vector for the model and '
    'are in languages it reads (rag._model_reads; model_languages NULL: any).';
