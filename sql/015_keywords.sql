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

    WITH gone AS (
        DELETE FROM rag.postings p WHERE p.chunk_id = ANY (doomed) RETURNING p.term
    )
    UPDATE rag.term_stats s SET df = s.df - d.n
    FROM (SELECT g.term, count(*) AS n FROM gone g GROUP BY g.term ORDER BY g.term) AS d
    WHERE s.term = d.term;
    UPDATE rag.corpus_stats
       SET chunks = chunks - removed,
           total_terms = total_terms - (SELECT coalesce(sum(c.term_count), 0)
                                        FROM rag.chunks c WHERE c.id = ANY (doomed));
    DELETE FROM rag.chunks c WHERE c.id = ANY (doomed);
    RETURN removed;
END
$$;
COMMENT ON FUNCTION rag._delete_chunks(bigint, text[]) IS
    'Private: deletes a source''s chunks (all, or those of the given paths) keeping BM25 statistics current; returns how many.';
