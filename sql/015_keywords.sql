-- Keyword-search data: the tokenizer shared by documents and queries, and the
-- upkeep of postings, document frequencies and corpus totals for Okapi BM25.

-- ---------------------------------------------------------------------------
-- term_frequencies
CREATE OR REPLACE FUNCTION rag.term_frequencies(
    content text
)
RETURNS TABLE (
    term text,
    tf   integer
)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, rag, public
AS $$
    -- Every identifier is split into its parts (camelCase, snake_case,
    -- kebab-case, letters|digits) and lowercased; identifiers made of several
    -- parts are kept whole too, so "combine latest" and "combineLatest" both
    -- find combineLatest. to_tsvector('simple') does the splitting at
    -- non-alphanumerics and the Unicode lowercasing at C speed; terms over 64
    -- characters (hashes, base64, minified blobs) are dropped.
    WITH parts AS (
        SELECT p.lexeme AS term, cardinality(p.positions) AS tf
        FROM unnest(to_tsvector('simple', regexp_replace(regexp_replace(
                content,
                -- a space at every camelCase, ACRONYMWord and letter|digit boundary
                '(?<=[[:lower:]])(?=[[:upper:]])|(?<=[[:upper:]])(?=[[:upper:]][[:lower:]])'
                '|(?<=[[:alpha:]])(?=[[:digit:]])|(?<=[[:digit:]])(?=[[:alpha:]])', ' ', 'g'),
                '[^[:alnum:]]+', ' ', 'g'))) AS p
        WHERE length(p.lexeme) <= 64
    ),
    wholes AS (
        SELECT lower(m[1]) AS term, count(*)::integer AS tf
        FROM regexp_matches(
            content,
            '((?:[[:alnum:]]+[_-])+[[:alnum:]]+|[[:alnum:]]*(?:[[:lower:]][[:upper:]]|[[:upper:]][[:upper:]][[:lower:]]|[[:alpha:]][[:digit:]]|[[:digit:]][[:alpha:]])[[:alnum:]]*)',
            'g') AS m
        WHERE length(m[1]) <= 64
        GROUP BY 1
    )
    SELECT term, sum(tf)::integer
    FROM (SELECT * FROM parts UNION ALL SELECT * FROM wholes) AS t
    GROUP BY term
$$;
COMMENT ON FUNCTION rag.term_frequencies(text) IS
    'The BM25 tokenizer, shared by chunks and queries: lowercased identifier parts plus whole compound identifiers, with their counts.';

-- ---------------------------------------------------------------------------
-- _index_chunk_terms
CREATE OR REPLACE FUNCTION rag._index_chunk_terms(
    chunk_ids bigint[]
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    WITH terms AS (
        SELECT t.term, c.id AS chunk_id, t.tf
        FROM rag.chunks c, LATERAL rag.term_frequencies(c.content) t
        WHERE c.id = ANY (chunk_ids)
    ),
    posted AS (
        INSERT INTO rag.postings (term, chunk_id, tf)
        SELECT term, chunk_id, tf FROM terms
        RETURNING term, chunk_id, tf
    ),
    counted AS (
        -- Sorted so concurrent indexers lock term rows in the same order.
        INSERT INTO rag.term_stats AS s (term, df)
        SELECT term, count(*) FROM posted GROUP BY term ORDER BY term
        ON CONFLICT (term) DO UPDATE SET df = s.df + excluded.df
    )
    UPDATE rag.chunks c SET term_count = l.n
    FROM (SELECT chunk_id, sum(tf) AS n FROM posted GROUP BY chunk_id) AS l
    WHERE c.id = l.chunk_id;

    UPDATE rag.corpus_stats
       SET chunks = chunks + cardinality(chunk_ids),
           total_terms = total_terms + (SELECT coalesce(sum(c.term_count), 0)
                                        FROM rag.chunks c WHERE c.id = ANY (chunk_ids));
END
$$;
COMMENT ON FUNCTION rag._index_chunk_terms(bigint[]) IS
    'Private: adds the postings of new chunks and updates term document frequencies and corpus totals.';

-- ---------------------------------------------------------------------------
-- _delete_chunks
CREATE OR REPLACE FUNCTION rag._delete_chunks(
    target_source_id bigint,
    paths text[] DEFAULT NULL
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    doomed  bigint[];
    removed bigint;
BEGIN
    SELECT coalesce(array_agg(c.id), '{}') INTO doomed
    FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id
    WHERE c.source_id = target_source_id AND (paths IS NULL OR f.path = ANY (paths));
    removed := cardinality(doomed);
    IF removed = 0 THEN
        RETURN 0;
    END IF;

    UPDATE rag.term_stats s SET df = s.df - d.n
    FROM (SELECT p.term, count(*) AS n FROM rag.postings p
           WHERE p.chunk_id = ANY (doomed) GROUP BY p.term ORDER BY p.term) AS d
    WHERE s.term = d.term;
    UPDATE rag.corpus_stats
       SET chunks = chunks - removed,
           total_terms = total_terms - (SELECT coalesce(sum(c.term_count), 0)
                                        FROM rag.chunks c WHERE c.id = ANY (doomed));
    DELETE FROM rag.chunks c WHERE c.id = ANY (doomed);  -- postings cascade
    RETURN removed;
END
$$;
COMMENT ON FUNCTION rag._delete_chunks(bigint, text[]) IS
    'Private: deletes a source''s chunks (all, or those of the given paths) keeping BM25 statistics current; returns how many.';
