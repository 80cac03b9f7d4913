-- Contextual chunk text (indexing.context: llm, rag/contextual/): which chunks
-- still need an LLM's sentences for the current model and prompt, the cache of
-- its answers, and putting them into the chunks' indexed text.
--
-- Like embeddings: a chunk is stored with its structural context alone
-- (rag.replace_files), and an index run then brings every chunk of the source
-- to the wanted state, from the cache where it can (rag.apply_contextual_texts)
-- and by asking the LLM for the rest (rag.chunks_without_contextual_text,
-- rag.store_contextual_texts). A chunk records the model and prompt version
-- its text came from, so another model or prompt is caught up lazily by the
-- next run, and a failed request by the next run too. Changing a chunk's text
-- changes its content_hash (the embedding key) and re-posts its terms.

-- ---------------------------------------------------------------------------
-- _text_hash: sha256 hex of a text, as rag.chunking.model.content_hash
CREATE OR REPLACE FUNCTION rag._text_hash(
    body text
)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN encode(sha256(convert_to(body, 'UTF8')), 'hex');
COMMENT ON FUNCTION rag._text_hash(text) IS
    'Private: the sha256 hex digest of a text''s UTF-8 bytes (rag.chunking.model.content_hash).';

-- ---------------------------------------------------------------------------
-- _chunks_wanting_contextual_text: a source's chunks not yet in the wanted state
CREATE OR REPLACE FUNCTION rag._chunks_wanting_contextual_text(
    target_source_id bigint,
    llm_model        text,   -- NULL: no contextual text wanted
    prompt_version   text,
    uncached_only    boolean DEFAULT false  -- only those the LLM must be asked about
)
RETURNS TABLE (
    chunk_id      bigint,
    file_path     text,
    document_hash text,
    chunk_hash    text
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- The chunk hash is computed for these rows only: after the first run of
    -- a model and prompt, the filter leaves the new chunks alone.
    SELECT w.id, w.path, w.sha256, w.chunk_hash
    FROM (SELECT c.id, f.path, f.sha256, rag._text_hash(c.content) AS chunk_hash
          FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id
          WHERE c.source_id = target_source_id
            AND CASE WHEN llm_model IS NULL THEN c.contextual_model IS NOT NULL
                     ELSE (c.contextual_model, c.contextual_prompt) IS DISTINCT FROM (llm_model, prompt_version) END) w
    WHERE NOT uncached_only
       OR (llm_model IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM rag.contextual_texts k
                            WHERE k.model = llm_model AND k.prompt_version = _chunks_wanting_contextual_text.prompt_version
                              AND k.document_hash = w.sha256 AND k.chunk_hash = w.chunk_hash))
$$;
COMMENT ON FUNCTION rag._chunks_wanting_contextual_text(bigint, text, text, boolean) IS
    'Private: a source''s chunks whose contextual text is not from this model and prompt version '
    '(llm_model NULL: those that have one), with their cache keys (file sha256, content sha256); '
    'uncached_only: those of them the cache holds no text for.';

-- ---------------------------------------------------------------------------
-- _rewrite_contextual_texts: give chunks a contextual text, re-posting their terms
CREATE OR REPLACE FUNCTION rag._rewrite_contextual_texts(
    chunk_ids      bigint[],
    texts          text[],
    llm_model      text,
    prompt_version text
)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    counting     boolean := rag._counting_term_stats();
    dictionaries regdictionary[] := rag._stem_dictionaries();
    old_length   bigint;
    new_length  bigint;
    old_terms   text[];
    old_deltas  integer[];
    new_terms   text[];
    new_deltas  integer[];
    rewritten   integer;
BEGIN
    IF cardinality(chunk_ids) IS DISTINCT FROM cardinality(texts) THEN
        RAISE EXCEPTION '_rewrite_contextual_texts: % chunk_ids but % texts',
            cardinality(chunk_ids), cardinality(texts) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The old postings out, found by key as rag._delete_chunks finds them.
    SELECT coalesce(sum(c.term_count), 0) INTO old_length FROM rag.chunks c WHERE c.id = ANY (chunk_ids);
    WITH gone AS (
        DELETE FROM rag.postings p
        USING (SELECT c.id, t.term FROM rag.chunks c, unnest(c.terms) AS t(term) WHERE c.id = ANY (chunk_ids)) d
        WHERE p.term = d.term AND p.chunk_id = d.id
        RETURNING p.term
    ),
    counted AS (
        SELECT g.term, -count(*)::integer AS n FROM gone g WHERE counting GROUP BY g.term
    )
    SELECT coalesce(array_agg(c.term ORDER BY c.term), '{}'), coalesce(array_agg(c.n ORDER BY c.term), '{}')
      INTO old_terms, old_deltas
    FROM counted c;

    -- The new text, hash, length and postings, as rag._add_chunks makes them.
    WITH given AS MATERIALIZED (
        SELECT c.id, g.body, rag._chunk_prefix(c.context, g.body) AS prefix, c.context, c.content, c.metadata
        FROM unnest(chunk_ids, texts) AS g(id, body) JOIN rag.chunks c ON c.id = g.id
    ),
    tokens AS MATERIALIZED (
        SELECT r.id, t.term, t.tf, t.in_text
        FROM given r, LATERAL rag._chunk_terms(r.prefix, r.context, r.content, r.metadata, dictionaries) t
    ),
    lengths AS (
        SELECT t.id, coalesce(sum(t.tf) FILTER (WHERE t.in_text), 0)::integer AS n, array_agg(t.term) AS terms
        FROM tokens t GROUP BY t.id
    ),
    updated AS (
        UPDATE rag.chunks c
           SET contextual_text = r.body, contextual_model = llm_model, contextual_prompt = prompt_version,
               content_hash = rag._text_hash(rag._indexed_text(r.prefix, r.content)),
               term_count = coalesce(l.n, 0), terms = coalesce(l.terms, '{}')
          FROM given r LEFT JOIN lengths l ON l.id = r.id
         WHERE c.id = r.id
        RETURNING c.id, c.term_count
    ),
    posted AS (
        INSERT INTO rag.postings (term, chunk_id, tf, term_count)
        SELECT t.term, u.id, t.tf, u.term_count FROM tokens t JOIN updated u ON u.id = t.id
    ),
    passaged AS (  -- a passage's hash is of its indexed text too (rag/chunking/passages.py)
        UPDATE rag.passages p
           SET content_hash = rag._text_hash(rag._indexed_text(w.prefix, substr(w.content, w.start_offset + 1,
                                                                                 p.end_offset - w.start_offset)))
          FROM (SELECT q.chunk_id, q.ordinal, r.prefix, r.content,
                       lag(q.end_offset, 1, 0) OVER (PARTITION BY q.chunk_id ORDER BY q.ordinal) AS start_offset
                FROM rag.passages q JOIN given r ON r.id = q.chunk_id) w
         WHERE p.chunk_id = w.chunk_id AND p.ordinal = w.ordinal
    ),
    counted AS (
        SELECT t.term, count(*)::integer AS n FROM tokens t WHERE counting GROUP BY t.term
    )
    SELECT (SELECT count(*) FROM updated), (SELECT coalesce(sum(u.term_count), 0) FROM updated u),
           coalesce(array_agg(c.term ORDER BY c.term), '{}'), coalesce(array_agg(c.n ORDER BY c.term), '{}')
      INTO rewritten, new_length, new_terms, new_deltas
    FROM counted c;
    PERFORM rag._apply_keyword_stats(0, new_length - old_length, old_terms || new_terms, old_deltas || new_deltas);
    RETURN rewritten;
END
$$;
COMMENT ON FUNCTION rag._rewrite_contextual_texts(bigint[], text[], text, text) IS
    'Private: sets chunks'' contextual texts (with the model and prompt version they came from), their '
    'content_hash, passages'' hashes, postings and BM25 statistics; returns how many chunks changed.';

-- ---------------------------------------------------------------------------
-- apply_contextual_texts
CREATE OR REPLACE FUNCTION rag.apply_contextual_texts(
    target_source_id bigint,
    llm_model        text,   -- NULL: contextual text off (indexing.context: none)
    prompt_version   text
)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    ids   bigint[];
    texts text[];
BEGIN
    IF llm_model IS NOT NULL AND prompt_version IS NULL THEN
        RAISE EXCEPTION 'apply_contextual_texts: prompt_version is required with llm_model %',
            quote_literal(llm_model) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF llm_model IS NULL THEN  -- every contextual text goes
        SELECT coalesce(array_agg(w.chunk_id), '{}'), coalesce(array_agg(''::text), '{}') INTO ids, texts
        FROM rag._chunks_wanting_contextual_text(target_source_id, NULL, NULL) w;
    ELSE
        SELECT coalesce(array_agg(w.chunk_id), '{}'), coalesce(array_agg(k.contextual_text), '{}') INTO ids, texts
        FROM rag._chunks_wanting_contextual_text(target_source_id, llm_model, prompt_version) w
        JOIN rag.contextual_texts k
          ON k.model = llm_model AND k.prompt_version = apply_contextual_texts.prompt_version
         AND k.document_hash = w.document_hash AND k.chunk_hash = w.chunk_hash;
    END IF;
    IF ids = '{}' THEN
        RETURN 0;
    END IF;
    RETURN rag._rewrite_contextual_texts(ids, texts, llm_model, prompt_version);
END
$$;
COMMENT ON FUNCTION rag.apply_contextual_texts(bigint, text, text) IS
    'Gives a source''s chunks the cached contextual texts of this LLM model and prompt version (llm_model NULL: '
    'removes every contextual text); returns how many chunks changed. No LLM is asked: the rest stays as it was.';

-- ---------------------------------------------------------------------------
-- count_chunks_without_contextual_text
CREATE OR REPLACE FUNCTION rag.count_chunks_without_contextual_text(
    target_source_id bigint,
    llm_model        text,
    prompt_version   text
)
RETURNS bigint
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT count(*)
    FROM (SELECT DISTINCT w.document_hash, w.chunk_hash
          FROM rag._chunks_wanting_contextual_text(target_source_id, llm_model, prompt_version, true) w) t
$$;
COMMENT ON FUNCTION rag.count_chunks_without_contextual_text(bigint, text, text) IS
    'How many requests an index run makes the LLM for a source''s contextual texts: its distinct '
    '(document, chunk) pairs that have no text of this model and prompt version, stored or cached.';

-- ---------------------------------------------------------------------------
-- chunks_without_contextual_text
CREATE OR REPLACE FUNCTION rag.chunks_without_contextual_text(
    target_source_id bigint,
    llm_model        text,
    prompt_version   text,
    after_document   text DEFAULT '',   -- the last document_hash of the previous page
    max_documents    integer DEFAULT 20
)
RETURNS TABLE (
    document_hash text,
    path          text,    -- one file holding the document
    document      text,    -- its stored text
    chunks        jsonb    -- [{hash, content, startLine, endLine}] that need a text, one per distinct hash
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    WITH wanted AS (
        SELECT DISTINCT ON (w.document_hash, w.chunk_hash) w.document_hash, w.chunk_hash, w.file_path, w.chunk_id
        FROM rag._chunks_wanting_contextual_text(target_source_id, llm_model, prompt_version, true) w
        WHERE w.document_hash > coalesce(after_document, '')
        ORDER BY w.document_hash, w.chunk_hash, w.file_path
    ),
    documents AS (
        SELECT DISTINCT w.document_hash FROM wanted w ORDER BY 1 LIMIT greatest(max_documents, 1)
    )
    SELECT d.document_hash, min(w.file_path),
           (SELECT f.content FROM rag.files f JOIN rag.chunks c ON c.file_id = f.id
             WHERE c.id = min(w.chunk_id)),
           jsonb_agg(jsonb_build_object('hash', w.chunk_hash, 'content', c.content,
                                        'startLine', c.metadata->'startLine', 'endLine', c.metadata->'endLine')
                     ORDER BY c.ordinal)
    FROM documents d JOIN wanted w ON w.document_hash = d.document_hash JOIN rag.chunks c ON c.id = w.chunk_id
    GROUP BY d.document_hash
    ORDER BY d.document_hash
$$;
COMMENT ON FUNCTION rag.chunks_without_contextual_text(bigint, text, text, text, integer) IS
    'What the LLM must be asked for a source''s contextual texts: per document (by hash, after after_document, '
    'at most max_documents), its text and its chunks with no text of this model and prompt version.';

-- ---------------------------------------------------------------------------
-- store_contextual_texts
CREATE OR REPLACE FUNCTION rag.store_contextual_texts(
    target_source_id bigint,
    llm_model        text,
    prompt_version   text,
    document_hashes  text[],
    chunk_hashes     text[],
    texts            text[]
)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    IF llm_model IS NULL OR prompt_version IS NULL THEN
        RAISE EXCEPTION 'store_contextual_texts: llm_model and prompt_version are required (got %, %)',
            coalesce(quote_literal(llm_model), 'NULL'), coalesce(quote_literal(prompt_version), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(document_hashes) IS DISTINCT FROM cardinality(chunk_hashes)
       OR cardinality(chunk_hashes) IS DISTINCT FROM cardinality(texts) THEN
        RAISE EXCEPTION 'store_contextual_texts: % document_hashes, % chunk_hashes and % texts must be as many',
            cardinality(document_hashes), cardinality(chunk_hashes), cardinality(texts)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO rag.contextual_texts (model, prompt_version, document_hash, chunk_hash, contextual_text)
    SELECT llm_model, prompt_version, u.d, u.c, u.t FROM unnest(document_hashes, chunk_hashes, texts) AS u(d, c, t)
    ON CONFLICT DO NOTHING;
    RETURN rag.apply_contextual_texts(target_source_id, llm_model, prompt_version);
END
$$;
COMMENT ON FUNCTION rag.store_contextual_texts(bigint, text, text, text[], text[], text[]) IS
    'Caches an LLM''s contextual texts by (model, prompt version, document hash, chunk hash) and gives them to '
    'the source''s chunks (rag.apply_contextual_texts); returns how many chunks changed.';

-- ---------------------------------------------------------------------------
-- cached_contextual_texts
CREATE OR REPLACE FUNCTION rag.cached_contextual_texts(
    llm_model       text,
    prompt_version  text,
    document_hashes text[],
    chunk_hashes    text[]
)
RETURNS TABLE (
    document_hash   text,
    chunk_hash      text,
    contextual_text text
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT k.document_hash, k.chunk_hash, k.contextual_text
    FROM (SELECT DISTINCT u.d, u.c FROM unnest(document_hashes, chunk_hashes) AS u(d, c)) g
    JOIN rag.contextual_texts k
      ON k.model = llm_model AND k.prompt_version = cached_contextual_texts.prompt_version
     AND k.document_hash = g.d AND k.chunk_hash = g.c
$$;
COMMENT ON FUNCTION rag.cached_contextual_texts(text, text, text[], text[]) IS
    'The cached contextual texts of this LLM model and prompt version for the given (document hash, chunk hash) '
    'pairs (a dry run counts the pairs missing; rag chunk shows the rest).';

-- ---------------------------------------------------------------------------
-- chunk_contextual_texts
CREATE OR REPLACE FUNCTION rag.chunk_contextual_texts(
    chunk_ids bigint[]
)
RETURNS TABLE (
    id              bigint,
    contextual_text text
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT c.id, c.contextual_text FROM rag.chunks c
    WHERE c.id = ANY (chunk_ids) AND c.contextual_text <> ''
$$;
COMMENT ON FUNCTION rag.chunk_contextual_texts(bigint[]) IS
    'The contextual texts of those of the given chunks (search hits) that have one.';
