-- Postings heads: the heaviest postings of every term, in order of weight, so
-- keyword search can find the best chunks for common terms ("self return")
-- from a few hundred postings instead of reading every one (rag.bm25_search).

-- A posting's weight key: its BM25 term weight tf / (tf + k1 (1 - b + b len / R))
-- for the default k1 1.2 and b 0.75 and a fixed reference length R of 200
-- terms, times 10^6, rounded up. Search bounds the weight of postings it did
-- not read from this key, for any corpus average length. It defines the index
-- below: changing it needs a migration that rebuilds that index. The
-- SQL-standard body is bound when created (no search_path needed) and is
-- inlined into the index expression.
CREATE FUNCTION rag.posting_impact(
    tf integer,
    term_count integer
)
RETURNS integer
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN ceil(1000000 * tf::double precision
            / (tf + 1.2::double precision * (0.25::double precision
                                              + 0.75::double precision * term_count / 200)))::integer;
COMMENT ON FUNCTION rag.posting_impact(integer, integer) IS
    'Private: a posting''s weight key (BM25 term weight for k1 1.2, b 0.75 and length 200, times 10^6, rounded up).';

-- Only postings whose key is at least 800000 (about 12% of a code corpus's):
-- every posting missing here weighs less than that, which bounds them all.
CREATE INDEX postings_heads_idx ON rag.postings
    (term, rag.posting_impact(tf, term_count) DESC, chunk_id)
    INCLUDE (tf, term_count)
    WHERE rag.posting_impact(tf, term_count) >= 800000;
