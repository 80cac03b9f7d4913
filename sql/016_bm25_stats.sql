-- Keyword statistics for Okapi BM25: the formulas, a chunk's posted terms, the
-- upkeep of postings, document frequencies and corpus totals as chunks come and
-- go, and the index of each term's heaviest postings.

-- ---------------------------------------------------------------------------
-- The BM25 formulas and the heads' floor, each written once. SQL-standard
-- bodies without SET clauses: bound when created, so they need no
-- search_path, and inlined into the calling queries (no per-row call). The
-- same weight for k1 1.2 and b 0.75 is the heads index's key,
-- rag.posting_impact, which migration 0002 defines.

-- _bm25_idf: Lucene's non-negative inverse document frequency
CREATE OR REPLACE FUNCTION rag._bm25_idf(
    df     integer,
    n_docs double precision
)
RETURNS double precision
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN ln(1 + (n_docs - df + 0.5) / (df + 0.5));
COMMENT ON FUNCTION rag._bm25_idf(integer, double precision) IS
    'Private: a term''s BM25 inverse document frequency, ln(1 + (N - df + 0.5) / (df + 0.5)), never negative.';

-- Stems and exact terms are two fields: each term's inverse document
-- frequency counts the chunks of its own field, or in a source mostly of code
-- a stem found in a few of its documents would weigh as a rare word and lift
-- documents over code. Every document posts the term 'stem:' once (outside
-- its length), so its document frequency is the number of documents, kept by
-- the postings' own upkeep.
CREATE OR REPLACE FUNCTION rag._document_marker(
    metadata jsonb
)
RETURNS TABLE (
    term text,
    tf   integer
)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
BEGIN ATOMIC
    SELECT 'stem:', 1 WHERE rag._is_document(metadata);
END;
COMMENT ON FUNCTION rag._document_marker(jsonb) IS
    'Private: the term stem: once for a document chunk (its document frequency counts the documents), nothing for others.';

CREATE OR REPLACE FUNCTION rag._documents()
RETURNS double precision
LANGUAGE sql
STABLE
BEGIN ATOMIC
    SELECT coalesce((SELECT s.df FROM rag.term_stats s WHERE s.term = 'stem:'), 0)::double precision;
END;
COMMENT ON FUNCTION rag._documents() IS
    'Private: how many chunks are documents (those posting stem: terms): the document frequency of the term stem:.';

-- ---------------------------------------------------------------------------
-- _chunk_terms: every term a chunk posts
CREATE OR REPLACE FUNCTION rag._chunk_terms(
    prefix       text,   -- rag._chunk_prefix(context, contextual_text)
    context      text,
    content      text,
    metadata     jsonb,
    dictionaries regdictionary[]  -- rag._stem_dictionaries()
)
RETURNS TABLE (
    term    text,
    tf      integer,
    in_text boolean  -- counted in the document length (the names and the marker are not)
)
LANGUAGE sql
STABLE  -- (rag._prose_term reads rag.lemmas)
PARALLEL SAFE
BEGIN ATOMIC
    -- Its indexed text's terms, then its names' and their stems' (from the
    -- structural context alone) or a document's marker.
    SELECT t.term, t.tf, true FROM rag._text_frequencies(prefix, content, metadata, dictionaries) t
    UNION ALL
    SELECT t.term, t.tf, false FROM rag._name_frequencies(context, metadata) t
    UNION ALL
    SELECT t.term, t.tf, false FROM rag._name_stem_frequencies(context, metadata, dictionaries) t
    UNION ALL
    SELECT t.term, t.tf, false FROM rag._document_marker(metadata) t;
END;
COMMENT ON FUNCTION rag._chunk_terms(text, text, text, jsonb, regdictionary[]) IS
    'Private: the terms a chunk posts with their counts, and whether each counts in its BM25 length: '
    'its indexed text''s, its names'' and their stems'' and a document''s stem: marker.';

CREATE OR REPLACE FUNCTION rag._field_idf(
    term      text,
    df        integer,
    chunks    double precision,
    documents double precision
)
RETURNS double precision
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN rag._bm25_idf(df, CASE WHEN starts_with(term, 'stem:') THEN documents ELSE chunks - documents END);
COMMENT ON FUNCTION rag._field_idf(text, integer, double precision, double precision) IS
    'Private: a term''s inverse document frequency within its field: a stem: term among the documents, any other among the other chunks.';

-- _bm25_weight: one posting's share of a chunk's score
CREATE OR REPLACE FUNCTION rag._bm25_weight(
    tf         integer,
    term_count integer,
    idf        double precision,
    k1         double precision,
    b          double precision,
    avg_length double precision
)
RETURNS double precision
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- Always below idf * (k1 + 1), the bound bm25_search prunes with.
RETURN idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * term_count / avg_length));
COMMENT ON FUNCTION rag._bm25_weight(integer, integer, double precision, double precision, double precision, double precision) IS
    'Private: the Okapi BM25 weight of a term occurring tf times in a chunk of term_count terms: idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * term_count / avg_length)).';

-- _heads_floor: the lightest weight key rag.postings_heads_idx holds
CREATE OR REPLACE FUNCTION rag._heads_floor()
RETURNS integer
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- About an eighth of all postings weigh this much or more. Written into the
-- index's predicate and bm25_search's heads query as a literal, so that the
-- planner can match the two.
RETURN 800000;
COMMENT ON FUNCTION rag._heads_floor() IS
    'Private: the posting_impact key from which postings are in rag.postings_heads_idx; every posting left out weighs less.';

-- ---------------------------------------------------------------------------
-- _delete_chunks
CREATE OR REPLACE FUNCTION rag._delete_chunks(
    target_source_id bigint,
    paths text[],
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
    doomed bigint[];
    sweep  boolean;
BEGIN
    SELECT coalesce(array_agg(c.id), '{}'), -coalesce(sum(c.term_count), 0) INTO doomed, term_delta
    FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id
    WHERE c.source_id = target_source_id AND (paths IS NULL OR f.path = ANY (paths));
    chunk_delta := -cardinality(doomed);
    -- A few chunks' postings are found by key, (term, chunk_id) from the
    -- chunks' term lists; a large share of the corpus (a source removed) by
    -- one pass over all postings. One branch runs: `sweep` is a constant here.
    sweep := chunk_delta < -(SELECT s.chunks FROM rag.corpus_stats s) / 10;
    WITH by_key AS (
        DELETE FROM rag.postings p
        USING (SELECT c.id, t.term FROM rag.chunks c, unnest(c.terms) AS t(term) WHERE c.id = ANY (doomed)) d
        WHERE NOT sweep AND p.term = d.term AND p.chunk_id = d.id
        RETURNING p.term
    ),
    by_sweep AS (
        DELETE FROM rag.postings p
        WHERE sweep AND p.chunk_id IN (SELECT unnest(doomed))
        RETURNING p.term
    ),
    counted AS (
        SELECT g.term, -count(*)::integer AS n
        FROM (SELECT k.term FROM by_key k UNION ALL SELECT w.term FROM by_sweep w) g
        GROUP BY g.term
    )
    SELECT coalesce(array_agg(c.term ORDER BY c.term), '{}'), coalesce(array_agg(c.n ORDER BY c.term), '{}')
      INTO terms, df_deltas
    FROM counted c;
    DELETE FROM rag.passages p WHERE p.chunk_id = ANY (doomed);
    DELETE FROM rag.chunks c WHERE c.id = ANY (doomed);
END
$$;
COMMENT ON FUNCTION rag._delete_chunks(bigint, text[]) IS
    'Private: deletes a source''s chunks (all: paths NULL, or those of the given files) with their postings and passages; returns the (negative) changes to the BM25 statistics for rag._apply_keyword_stats.';

-- ---------------------------------------------------------------------------
-- _counting_term_stats
CREATE OR REPLACE FUNCTION rag._counting_term_stats()
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- While the postings key is missing (a first index bulk-loading, or one
    -- killed), writers leave the document frequencies alone and
    -- rag._build_postings_key counts them all at once: for Django's first
    -- index ~2.5M per-batch upserts cost more than one count. Asked by a
    -- transaction that has written postings: the key cannot be built or
    -- dropped (an ACCESS EXCLUSIVE lock) until it ends, so the answer holds.
    SELECT to_regclass('rag.postings_pkey') IS NOT NULL
$$;
COMMENT ON FUNCTION rag._counting_term_stats() IS
    'Private: whether index writers keep rag.term_stats current (false while the postings key is missing; rag._build_postings_key then recounts them).';

-- ---------------------------------------------------------------------------
-- _apply_keyword_stats
CREATE OR REPLACE FUNCTION rag._apply_keyword_stats(
    chunk_delta bigint,
    term_delta bigint,
    terms text[],
    df_deltas integer[]
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    -- The only writes to the shared statistics rows: done last in a
    -- transaction and in key order (corpus_stats after every term), so
    -- concurrent index batches wait for each other briefly, never in a cycle.
    INSERT INTO rag.term_stats AS s (term, df)
    SELECT d.term, sum(d.df)::integer
    FROM unnest(terms, df_deltas) AS d(term, df)
    WHERE rag._counting_term_stats()
    GROUP BY d.term
    HAVING sum(d.df) <> 0
    ORDER BY d.term
    ON CONFLICT (term) DO UPDATE SET df = s.df + excluded.df;
    IF chunk_delta <> 0 OR term_delta <> 0 THEN
        UPDATE rag.corpus_stats
           SET chunks = chunks + chunk_delta, total_terms = total_terms + term_delta;
    END IF;
END
$$;
COMMENT ON FUNCTION rag._apply_keyword_stats(bigint, bigint, text[], integer[]) IS
    'Private: adds changes to the BM25 statistics (chunk count, total length, per-term document frequencies), locking their rows in key order.';


-- ---------------------------------------------------------------------------
-- ensure_heads_index
CREATE OR REPLACE FUNCTION rag.ensure_heads_index()
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
SET maintenance_work_mem = '256MB'
AS $$
DECLARE
    average double precision;
    current integer;
    wanted  integer;
BEGIN
    SELECT s.total_terms::double precision / nullif(s.chunks, 0), s.heads_length INTO average, current
    FROM rag.corpus_stats s;
    IF average IS NULL THEN
        RETURN current;
    END IF;
    -- Rebuilt only when the average chunk length has drifted by more than a
    -- factor of 1.5 from the reference length, itself a power of two; until
    -- then the index is kept up to date like any other.
    IF current IS NOT NULL AND average BETWEEN current / 1.5 AND current * 1.5
       AND to_regclass('rag.postings_heads_idx') IS NOT NULL THEN
        RETURN current;
    END IF;
    wanted := (2 ^ round(log(2, greatest(average, 1)::numeric)))::integer;
    DROP INDEX IF EXISTS rag.postings_heads_idx;
    -- Only postings whose key reaches the floor: every posting missing here
    -- weighs less than that, which bounds them all.
    EXECUTE format(
        'CREATE INDEX postings_heads_idx ON rag.postings'
        ' (term, rag.posting_impact(tf, term_count, %1$s) DESC, chunk_id) INCLUDE (tf, term_count)'
        ' WHERE rag.posting_impact(tf, term_count, %1$s) >= %2$s', wanted, rag._heads_floor());
    UPDATE rag.corpus_stats SET heads_length = wanted;
    RETURN wanted;
END
$$;
COMMENT ON FUNCTION rag.ensure_heads_index() IS
    'Builds rag.postings_heads_idx (each term''s heaviest postings, for bm25_search) for the corpus''s average chunk length, if missing or built for a length 1.5 times off; returns its reference length.';

