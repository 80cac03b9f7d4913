-- Postings heads: the heaviest postings of every term, in order of weight, so
-- keyword search can find the best chunks for common terms ("self return")
-- from a few hundred postings instead of reading every one (rag.bm25_search).
-- The index itself, rag.postings_heads_idx, is built by
-- rag.ensure_heads_index() for the corpus's chunk length.

-- A posting's weight key: its BM25 term weight tf / (tf + k1 (1 - b + b len / R))
-- for the default k1 1.2 and b 0.75 and a reference length R, times 10^6,
-- rounded up. Search bounds the weight of postings it did not read from this
-- key for any corpus average length, tightly when R is close to it. The
-- SQL-standard body is bound when created (no search_path needed) and is
-- inlined into the index expression.
CREATE FUNCTION rag.posting_impact(
    tf integer,
    term_count integer,
    reference_length integer
)
RETURNS integer
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN ceil(1000000 * tf::double precision
            / (tf + 1.2::double precision * (0.25::double precision
                                              + 0.75::double precision * term_count / reference_length)))::integer;
COMMENT ON FUNCTION rag.posting_impact(integer, integer, integer) IS
    'Private: a posting''s weight key (BM25 term weight for k1 1.2, b 0.75 and the given reference length, times 10^6, rounded up).';

-- The reference length rag.postings_heads_idx was built for (NULL: no index).
ALTER TABLE rag.corpus_stats ADD COLUMN heads_length integer;

-- Filtered searches list the chunks of the matching files or sources first:
-- from these indexes alone (the chunk id included), not a heap read per chunk.
CREATE INDEX chunks_file_idx ON rag.chunks (file_id) INCLUDE (id);
DROP INDEX rag.chunks_source_idx;
CREATE INDEX chunks_source_idx ON rag.chunks (source_id) INCLUDE (id);
