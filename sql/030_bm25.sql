-- Keyword search: exact Okapi BM25 over rag.postings, with the filters of
-- 028_filters.sql applied inside it.

-- ---------------------------------------------------------------------------
-- _bm25_top: the exact Okapi BM25 top_n of keyword terms, by one of three strategies
--
-- Each strategy returns what rag._bm25_exhaustive (every matching chunk
-- scored; the tests' oracle) ranks first, ties by chunk id. They rest on:
--   * A chunk's score is the sum, over the query terms it holds, of
--     rag._bm25_weight, which is below idf * (k1 + 1): the upper bound of a
--     term's posting not read (MaxScore's `bounds`). Below the postings read
--     from the heads index, a posting's weight is bounded by the weight key
--     (rag.posting_impact) where reading stopped, or by rag._heads_floor()
--     when the index held no more of the term's postings.
--   * `threshold` never exceeds the final top_n-th score: it is the top_n-th
--     best of some chunks' scores, complete or partial (a partial score is
--     at most the chunk's final one). So a candidate whose upper bound is
--     below it can be dropped, and terms whose bounds sum (`tail`) below it
--     cannot bring in a chunk that no posting read has shown.
--   * Filters apply before ranking: only chunks passing them are scored.
-- The strategies:
--   _bm25_score_all  when filters leave at most score_all_below chunks: every
--                    one of them scored, in one index scan.
--   _bm25_heads      when every query term is common (more postings than a
--                    first MaxScore round reads) and rag.postings_heads_idx
--                    exists for the default k1 and b: each term's heaviest
--                    postings, then the candidates' exact scores.
--   _bm25_maxscore   otherwise, or when the heads leave chunks unseen above
--                    the threshold (it goes on from the threshold they found).
-- Statements whose best plan depends on the filters are planned per call
-- (plan_cache_mode): see "Pitfalls" in sql/README.md, and the measurements
-- behind each choice in docs/decisions/050-bm25-search-strategies.md.
CREATE OR REPLACE FUNCTION rag._bm25_top(
    keyword_terms text[],  -- (rag.parse_query(query)).keyword_terms
    top_n        integer DEFAULT 50,
    sources      text[] DEFAULT NULL,
    source_types text[] DEFAULT NULL,
    languages    text[] DEFAULT NULL,
    path_prefix  text DEFAULT NULL,
    k1           double precision DEFAULT 1.2,
    b            double precision DEFAULT 0.75,
    score_all_below integer DEFAULT 5000
)
RETURNS TABLE (
    chunk_id bigint,
    score    double precision,
    rank     integer
)
LANGUAGE plpgsql
STABLE
ROWS 50  -- the usual top_n: the planner then joins its rows by index, not by a scan of chunks
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
DECLARE
    source_filter bigint[] := rag._source_ids(sources, 'search');
    file_filter   bigint[] := rag._file_ids(source_types, languages, path_prefix);
    filtered      boolean := sources IS NOT NULL OR source_types IS NOT NULL
                             OR languages IS NOT NULL OR path_prefix IS NOT NULL;
    allowed       bigint[];           -- the chunks passing the filters, unless too many
    n_docs        double precision;
    avg_length    double precision;
    heads_length  integer;
    query_terms   text[];             -- rarest first
    query_dfs     integer[];
    query_idfs    double precision[];
    plan_mode     text;               -- plan_cache_mode to restore after a filtered search
    settled       boolean := false;   -- the heads found the top_n
    threshold     double precision := 0;
    best_ids      bigint[];
    best_scores   double precision[];
    first_round   CONSTANT integer := 4096;  -- the postings a first MaxScore round reads
BEGIN
    IF top_n IS NULL OR top_n < 1 OR top_n > 1000 THEN
        RAISE EXCEPTION 'bm25_search: top_n must be between 1 and 1000, not %', coalesce(top_n::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF k1 IS NULL OR k1 <= 0 OR b IS NULL OR b < 0 OR b > 1 THEN
        RAISE EXCEPTION 'bm25_search: k1 must be positive and b between 0 and 1 (got k1 %, b %)', k1, b
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF score_all_below IS NULL OR score_all_below < 0 THEN
        RAISE EXCEPTION 'bm25_search: score_all_below must be 0 or more, not %', coalesce(score_all_below::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF to_regclass('rag.postings_pkey') IS NULL THEN
        -- Without the key every lookup would read all postings (minutes).
        RAISE EXCEPTION 'bm25_search: keyword data is being loaded by a first index run (rag.begin_bulk_load); search when it ends, or run `rag index` again if it was killed'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM rag.keyword_data_intact) THEN
        RAISE EXCEPTION 'bm25_search: keyword data was emptied by a database crash (rag.postings is unlogged); rebuild it with `rag init` or SELECT rag.ensure_keyword_data()'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    SELECT cs.chunks, cs.total_terms::double precision / greatest(cs.chunks, 1), cs.heads_length
      INTO n_docs, avg_length, heads_length FROM rag.corpus_stats cs;
    -- (ANY over an array, not a join, so term_stats is read by its index)
    SELECT array_agg(s.term ORDER BY s.df, s.term), array_agg(s.df ORDER BY s.df, s.term),
           array_agg(rag._field_idf(s.term, s.df, n_docs, rag._documents()) ORDER BY s.df, s.term)
      INTO query_terms, query_dfs, query_idfs
    FROM rag.term_stats s
    WHERE s.term = ANY (keyword_terms)
      AND s.df > 0;
    IF coalesce(cardinality(query_terms), 0) = 0 OR n_docs = 0 THEN
        RETURN;
    END IF;

    IF filtered THEN
        allowed := rag._filtered_chunks(source_filter, file_filter, 10 * score_all_below);
        IF cardinality(allowed) <= score_all_below THEN
            RETURN QUERY
                SELECT * FROM rag._bm25_score_all(allowed, query_terms, query_idfs, top_n, k1, b, avg_length);
            RETURN;
        ELSIF cardinality(allowed) > 10 * score_all_below THEN
            allowed := NULL;  -- too many to hold: postings are checked against their chunks
        END IF;
        -- A plan cached for one filter (or none) read whole lists for another.
        plan_mode := current_setting('plan_cache_mode');
        PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
    END IF;
    IF heads_length IS NOT NULL AND k1 = 1.2 AND b = 0.75 AND query_dfs[1] > first_round THEN
        SELECT h.settled, h.threshold, h.best_ids, h.best_scores INTO settled, threshold, best_ids, best_scores
        FROM rag._bm25_heads(query_terms, query_dfs, query_idfs, top_n, k1, b, avg_length, heads_length,
                             filtered, source_filter, file_filter, allowed) h;
    END IF;
    IF NOT settled THEN
        SELECT m.best_ids, m.best_scores INTO best_ids, best_scores
        FROM rag._bm25_maxscore(query_terms, query_dfs, query_idfs, n_docs, top_n, k1, b, avg_length,
                                filtered, source_filter, file_filter, allowed, threshold, first_round) m;
    END IF;
    IF plan_mode IS NOT NULL THEN
        PERFORM set_config('plan_cache_mode', plan_mode, true);
    END IF;
    RETURN QUERY
        SELECT u.id, u.s, u.r::integer
        FROM unnest(best_ids, best_scores) WITH ORDINALITY AS u(id, s, r);
END
$$;
COMMENT ON FUNCTION rag._bm25_top(text[], integer, text[], text[], text[], text, double precision, double precision, integer) IS
    'Private: rag.bm25_search of a parsed query''s keyword terms. Exact Okapi BM25 top_n (Lucene IDF, corpus statistics kept current), filters applied before ranking: the heaviest postings first, then MaxScore when they do not settle it, or every chunk scored when filters leave at most score_all_below.';

-- ---------------------------------------------------------------------------
-- _bm25_score_all: bm25_search's strategy for few filtered chunks
CREATE OR REPLACE FUNCTION rag._bm25_score_all(
    allowed     bigint[],
    query_terms text[],
    query_idfs  double precision[],
    top_n       integer,
    k1          double precision,
    b           double precision,
    avg_length  double precision
)
RETURNS TABLE (
    chunk_id bigint,
    score    double precision,
    rank     integer
)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
BEGIN
    -- One index scan over every (term, chunk) pair in key order: the chunks
    -- of a source or folder have close ids, far cheaper than a probe per pair
    -- (which rag._exact_scores makes for scattered candidates). The ids are
    -- hidden from the planner by a subquery (sql/README.md, pitfalls).
    RETURN QUERY
        SELECT e.id, e.s, (row_number() OVER (ORDER BY e.s DESC, e.id))::integer
        FROM (
            SELECT p.chunk_id AS id, sum(rag._bm25_weight(p.tf, p.term_count, q.idf, k1, b, avg_length)) AS s
            FROM rag.postings p
            JOIN unnest(query_terms, query_idfs) AS q(term, idf) ON q.term = p.term
            WHERE p.term = ANY (query_terms) AND p.chunk_id = ANY ((SELECT allowed)::bigint[])
            GROUP BY p.chunk_id) e
        ORDER BY e.s DESC, e.id
        LIMIT top_n;
END
$$;
COMMENT ON FUNCTION rag._bm25_score_all(bigint[], text[], double precision[], integer, double precision, double precision, double precision) IS
    'Private: bm25_search''s top_n when few chunks pass the filters: all of them scored.';

-- ---------------------------------------------------------------------------
-- _bm25_heads: bm25_search's strategy for common terms
CREATE OR REPLACE FUNCTION rag._bm25_heads(
    query_terms   text[],
    query_dfs     integer[],
    query_idfs    double precision[],
    top_n         integer,
    k1            double precision,
    b             double precision,
    avg_length    double precision,
    heads_length  integer,
    filtered      boolean,
    source_filter bigint[],
    file_filter   bigint[],
    allowed       bigint[],
    OUT settled     boolean,            -- best_ids are the top_n; else MaxScore goes on from threshold
    OUT threshold   double precision,
    OUT best_ids    bigint[],
    OUT best_scores double precision[]
)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
DECLARE
    n_terms    integer := cardinality(query_terms);
    head_depth integer := greatest(4 * top_n, 200);
    unseen     double precision;   -- the most a chunk no posting read shows can score
    ids        bigint[];           -- candidates, highest upper bound first
    scores     double precision[]; -- their scores over the terms counted
    uppers     double precision[]; -- the most each can score
    counted    integer;            -- the terms (rarest first) read whole, so in `scores`
    done       integer;
    batch      integer;
BEGIN
    threshold := 0;
    LOOP
        -- Every posting of the rare terms, the first head_depth heads of the
        -- others. An unread posting of a term weighs at most its bound, from
        -- the key where reading stopped (or the heads' floor if they ran
        -- out), so a chunk seen nowhere scores at most `unseen`, the bounds'
        -- sum; a chunk seen scores at most its partial score plus the bounds
        -- of the terms it was not seen in. The heads index's reference length
        -- and floor are literals in its definition (rag.ensure_heads_index),
        -- hence EXECUTE.
        EXECUTE format($heads$
            WITH heads AS MATERIALIZED (
                SELECT q.i, h.chunk_id, h.impact, rag._bm25_weight(h.tf, h.term_count, q.idf, $7, $8, $9) AS w
                FROM unnest($1::text[], $2::integer[], $3::double precision[]) WITH ORDINALITY AS q(term, df, idf, i)
                CROSS JOIN LATERAL (
                    SELECT p.chunk_id, p.tf, p.term_count, NULL::integer AS impact
                    FROM rag.postings p WHERE q.df <= $4 AND p.term = q.term
                    UNION ALL
                    (SELECT p.chunk_id, p.tf, p.term_count, rag.posting_impact(p.tf, p.term_count, %1$s)
                     FROM rag.postings p
                     WHERE q.df > $4 AND p.term = q.term AND rag.posting_impact(p.tf, p.term_count, %1$s) >= %2$s
                     ORDER BY rag.posting_impact(p.tf, p.term_count, %1$s) DESC, p.chunk_id
                     LIMIT $4)
                ) h
            ),
            term_bounds AS (
                -- pure arithmetic: the most an unread posting can weigh
                SELECT q.i, CASE WHEN q.df <= $4 THEN 0
                                 ELSE (1 + 1e-9) * q.idf * ($7 + 1)
                                      / (1 + (1e6 / CASE WHEN count(h.i) < $4 THEN %2$s ELSE min(h.impact) END - 1)
                                             * least(1, %1$s / $9))
                            END AS bound
                FROM unnest($2::integer[], $3::double precision[]) WITH ORDINALITY AS q(df, idf, i)
                LEFT JOIN heads h ON h.i = q.i
                GROUP BY q.i, q.df, q.idf
            ),
            seen AS (
                SELECT h.chunk_id AS id, coalesce(sum(h.w) FILTER (WHERE h.impact IS NULL), 0) AS s,
                       sum(h.w) + (SELECT sum(u.bound) FROM term_bounds u) - sum(u.bound) AS upper
                FROM heads h JOIN term_bounds u ON u.i = h.i
                WHERE NOT $10
                   OR ($11::bigint[] IS NOT NULL AND h.chunk_id IN (SELECT unnest($11)))
                   OR ($11 IS NULL AND EXISTS (
                           SELECT 1 FROM rag.chunks c WHERE c.id = h.chunk_id
                              AND ($5::bigint[] IS NULL OR c.source_id = ANY ($5))
                              AND ($6::bigint[] IS NULL OR c.file_id IN (SELECT unnest($6)))))
                GROUP BY h.chunk_id
            )
            SELECT (SELECT sum(u.bound) FROM term_bounds u),
                   coalesce((SELECT array_agg(m.id ORDER BY m.upper DESC, m.id) FROM seen m), '{}'),
                   coalesce((SELECT array_agg(m.s ORDER BY m.upper DESC, m.id) FROM seen m), '{}'),
                   coalesce((SELECT array_agg(m.upper ORDER BY m.upper DESC, m.id) FROM seen m), '{}')
            $heads$, heads_length, rag._heads_floor())
          INTO unseen, ids, scores, uppers
          USING query_terms, query_dfs, query_idfs, head_depth, source_filter, file_filter,
                k1, b, avg_length, filtered, allowed;
        counted := (SELECT count(*) FROM unnest(query_dfs) AS d WHERE d <= head_depth);

        -- Complete the candidates (the scores of the terms not counted, by
        -- index probes), highest upper bound first, in growing batches; each
        -- batch can raise the threshold and so end the work early. Heads that
        -- leave chunks unseen above the threshold are given up after a few
        -- batches.
        best_ids := '{}';
        best_scores := '{}';
        done := 0;
        batch := greatest(2 * top_n, 100);
        LOOP
            EXIT WHEN done >= cardinality(ids) OR uppers[done + 1] < threshold;
            EXIT WHEN unseen >= threshold AND done >= 4 * top_n;
            SELECT coalesce(array_agg(r.id ORDER BY r.s DESC, r.id), '{}'),
                   coalesce(array_agg(r.s ORDER BY r.s DESC, r.id), '{}')
              INTO best_ids, best_scores
            FROM (
                SELECT t.id, t.s FROM unnest(best_ids, best_scores) AS t(id, s)
                UNION ALL
                SELECT u.id, u.s + coalesce(e.score, 0)
                FROM unnest(ids[done + 1:done + batch], scores[done + 1:done + batch]) AS u(id, s)
                LEFT JOIN rag._exact_scores(ids[done + 1:done + batch], query_terms[counted + 1:n_terms],
                                            query_idfs[counted + 1:n_terms], k1, b, avg_length) e
                       ON e.chunk_id = u.id
                ORDER BY 2 DESC, 1
                LIMIT top_n) r;
            IF cardinality(best_scores) >= top_n THEN
                threshold := greatest(threshold, best_scores[top_n]);
            END IF;
            done := done + batch;
            batch := batch * 2;
        END LOOP;
        settled := unseen = 0 OR unseen < threshold;
        -- Deeper heads only when close and few: far above the threshold they
        -- rarely settle the query, and many terms' heads make many candidates.
        EXIT WHEN settled OR unseen > 2 * threshold OR 4 * head_depth * (n_terms - counted) > 10000;
        head_depth := head_depth * 4;
    END LOOP;
END
$$;
COMMENT ON FUNCTION rag._bm25_heads(text[], integer[], double precision[], integer, double precision, double precision, double precision, integer, boolean, bigint[], bigint[], bigint[]) IS
    'Private: bm25_search''s top_n from the heaviest postings of common terms (rag.postings_heads_idx), or the threshold they reached when chunks they did not see may still score above it.';

-- ---------------------------------------------------------------------------
-- _bm25_maxscore: bm25_search's general strategy
CREATE OR REPLACE FUNCTION rag._bm25_maxscore(
    query_terms   text[],
    query_dfs     integer[],
    query_idfs    double precision[],
    n_docs        double precision,
    top_n         integer,
    k1            double precision,
    b             double precision,
    avg_length    double precision,
    filtered      boolean,
    source_filter bigint[],
    file_filter   bigint[],
    allowed       bigint[],
    threshold     double precision,  -- a lower bound of the final top_n-th score already known
    first_round   integer,           -- the postings the first round may read
    OUT best_ids    bigint[],
    OUT best_scores double precision[]
)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
DECLARE
    n_terms   integer := cardinality(query_terms);
    bounds    double precision[] := ARRAY(SELECT i * (k1 + 1) FROM unnest(query_idfs) AS i);
    tail      double precision;   -- the bounds' sum of the terms not read whole
    ids       bigint[];           -- candidates, in no order
    scores    double precision[]; -- their scores over the terms read
    essential integer := 0;       -- the terms read whole so far
    wanted    integer;            -- the terms to read whole for the threshold
    reading   integer;            -- the terms a round reads
    budget    double precision := first_round;  -- the postings a round may read
    plan_mode text;
BEGIN
    -- Rarest terms first. Once the threshold exceeds `tail`, the commonest
    -- terms cannot bring a new chunk into the top_n: only the rarer,
    -- "essential" terms are read whole, the others looked up for the
    -- candidates. The essential postings are summed per chunk in one
    -- grouping, in rounds over growing prefixes of the terms: a round over
    -- the rarest raises the threshold, which can spare the next round whole
    -- lists; each round reads its prefix afresh.
    LOOP
        wanted := n_terms;
        tail := 0;
        WHILE wanted > 1 AND tail + bounds[wanted] < threshold LOOP
            tail := tail + bounds[wanted];
            wanted := wanted - 1;
        END LOOP;
        EXIT WHEN wanted <= essential;
        -- this round: the terms within the budget (counting the postings
        -- that pass the filters), at least one more, at most the essential
        reading := (SELECT count(*) FROM (
                        SELECT sum(d * coalesce(cardinality(allowed) / n_docs, 1)) OVER (ORDER BY i) AS c
                        FROM unnest(query_dfs) WITH ORDINALITY AS u(d, i)) s
                    WHERE s.c <= budget);
        reading := least(wanted, greatest(reading, essential + 1));
        budget := budget * 4;
        tail := (SELECT coalesce(sum(u), 0) FROM unnest(bounds[reading + 1:n_terms]) AS u);
        IF NOT filtered THEN
            -- Filtered calls (planned per call by bm25_search) share this
            -- statement's cached plan; planned per call unfiltered too, or
            -- their costs can switch unfiltered calls to a slow generic plan.
            plan_mode := current_setting('plan_cache_mode');
            PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
        END IF;
        WITH term_postings AS (
            -- Only the branch for the filters given runs (`filtered` and
            -- `allowed` are constants of the statement).
            SELECT q.idf, p.chunk_id, p.tf, p.term_count
            FROM unnest(query_terms[1:reading], query_idfs[1:reading]) AS q(term, idf)
            JOIN rag.postings p ON p.term = q.term
            WHERE NOT filtered
            UNION ALL
            -- Each term's postings and the sorted allowed ids walked together
            -- in one index scan, the ids hidden from the planner.
            SELECT query_idfs[array_position(query_terms, p.term)], p.chunk_id, p.tf, p.term_count
            FROM rag.postings p
            WHERE filtered AND allowed IS NOT NULL
              AND p.term = ANY (query_terms[1:reading]) AND p.chunk_id = ANY ((SELECT allowed)::bigint[])
            UNION ALL
            SELECT q.idf, p.chunk_id, p.tf, p.term_count
            FROM unnest(query_terms[1:reading], query_idfs[1:reading]) AS q(term, idf)
            JOIN rag.postings p ON p.term = q.term
            JOIN rag.chunks c ON c.id = p.chunk_id
            WHERE filtered AND allowed IS NULL
              AND (source_filter IS NULL OR c.source_id = ANY (source_filter))
              AND (file_filter IS NULL OR c.file_id IN (SELECT unnest(file_filter)))
        ),
        partial AS MATERIALIZED (
            SELECT p.chunk_id AS id, sum(rag._bm25_weight(p.tf, p.term_count, p.idf, k1, b, avg_length)) AS s
            FROM term_postings p
            GROUP BY p.chunk_id
        ),
        floor AS MATERIALIZED (
            SELECT greatest(threshold, (SELECT m.s FROM partial m ORDER BY m.s DESC OFFSET top_n - 1 LIMIT 1)) AS v
        )
        -- the candidates: those the terms not read can still lift to the threshold
        SELECT f.v, coalesce(array_agg(m.id) FILTER (WHERE m.id IS NOT NULL), '{}'),
               coalesce(array_agg(m.s) FILTER (WHERE m.id IS NOT NULL), '{}')
          INTO threshold, ids, scores
        FROM floor f LEFT JOIN partial m ON m.s + tail >= f.v
        GROUP BY f.v;
        IF NOT filtered THEN
            PERFORM set_config('plan_cache_mode', plan_mode, true);
        END IF;
        essential := reading;
    END LOOP;

    -- The other terms, a statement each, rarest first, looked up for the
    -- candidates (they passed the filters); after each, the candidates the
    -- rest cannot lift to the threshold are dropped.
    FOR term_no IN essential + 1 .. n_terms LOOP
        tail := (SELECT coalesce(sum(u), 0) FROM unnest(bounds[term_no + 1:n_terms]) AS u);
        WITH partial AS MATERIALIZED (
            -- (a FULL JOIN can only be hashed or merged, never a nested loop)
            SELECT k.id, k.s + coalesce(rag._bm25_weight(p.tf, p.term_count, query_idfs[term_no], k1, b, avg_length), 0) AS s
            FROM unnest(ids, scores) AS k(id, s)
            FULL JOIN (SELECT p.chunk_id, p.tf, p.term_count
                       FROM rag.postings p
                       WHERE p.term = query_terms[term_no] AND p.chunk_id = ANY ((SELECT ids)::bigint[])) p
                      ON p.chunk_id = k.id
        ),
        floor AS MATERIALIZED (
            SELECT greatest(threshold, (SELECT m.s FROM partial m ORDER BY m.s DESC OFFSET top_n - 1 LIMIT 1)) AS v
        )
        SELECT f.v, coalesce(array_agg(m.id) FILTER (WHERE m.id IS NOT NULL), '{}'),
               coalesce(array_agg(m.s) FILTER (WHERE m.id IS NOT NULL), '{}')
          INTO threshold, ids, scores
        FROM floor f LEFT JOIN partial m ON m.s + tail >= f.v
        GROUP BY f.v;
    END LOOP;
    SELECT coalesce(array_agg(r.id ORDER BY r.s DESC, r.id), '{}'),
           coalesce(array_agg(r.s ORDER BY r.s DESC, r.id), '{}')
      INTO best_ids, best_scores
    FROM (SELECT u.id, u.s FROM unnest(ids, scores) AS u(id, s) ORDER BY u.s DESC, u.id LIMIT top_n) r;
END
$$;
COMMENT ON FUNCTION rag._bm25_maxscore(text[], integer[], double precision[], double precision, integer, double precision, double precision, double precision, boolean, bigint[], bigint[], bigint[], double precision, integer) IS
    'Private: bm25_search''s top_n by MaxScore: the rarer terms read whole, the commoner looked up for the candidates once the threshold rules out chunks holding only those.';

-- ---------------------------------------------------------------------------
-- _exact_scores: BM25 scores of given chunks
CREATE OR REPLACE FUNCTION rag._exact_scores(
    chunk_ids   bigint[],
    query_terms text[],
    query_idfs  double precision[],
    k1          double precision,
    b           double precision,
    avg_length  double precision
)
RETURNS TABLE (
    chunk_id bigint,
    score    double precision
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- An index probe per chunk and term; chunks holding none of the terms are left out.
    SELECT u.id, m.score
    FROM unnest(chunk_ids) AS u(id)
    CROSS JOIN LATERAL (
        SELECT sum(rag._bm25_weight(p.tf, p.term_count, q.idf, k1, b, avg_length)) AS score
        FROM unnest(query_terms, query_idfs) AS q(term, idf)
        JOIN rag.postings p ON p.term = q.term AND p.chunk_id = u.id) m
    WHERE m.score IS NOT NULL
$$;
COMMENT ON FUNCTION rag._exact_scores(bigint[], text[], double precision[], double precision, double precision, double precision) IS
    'Private: BM25 scores of the given chunks that hold a query term, for bm25_search.';

-- ---------------------------------------------------------------------------
-- _bm25_exhaustive: every matching chunk scored (the reference for bm25_search)
CREATE OR REPLACE FUNCTION rag._bm25_exhaustive(
    query        text,
    sources      text[] DEFAULT NULL,
    source_types text[] DEFAULT NULL,
    languages    text[] DEFAULT NULL,
    path_prefix  text DEFAULT NULL,
    k1           double precision DEFAULT 1.2,
    b            double precision DEFAULT 0.75
)
RETURNS TABLE (
    chunk_id bigint,
    score    double precision,
    rank     integer
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- Deliberately plain: every posting of every query term, no bounds, no
    -- pruning, so the tests can hold bm25_search's strategies to it.
    WITH corpus AS (
        SELECT cs.chunks::double precision AS n_docs,
               cs.total_terms::double precision / greatest(cs.chunks, 1) AS avg_length
        FROM rag.corpus_stats cs
    ),
    terms AS (
        SELECT s.term, rag._field_idf(s.term, s.df, corpus.n_docs, rag._documents()) AS idf
        FROM rag.term_stats s, corpus
        WHERE s.term = ANY (rag._keyword_terms(query, rag._stem_dictionaries())) AND s.df > 0
    ),
    scored AS (
        SELECT p.chunk_id, sum(rag._bm25_weight(p.tf, p.term_count, t.idf, k1, b, corpus.avg_length)) AS score
        FROM terms t
        JOIN rag.postings p ON p.term = t.term
        JOIN rag.chunks c ON c.id = p.chunk_id
        CROSS JOIN corpus
        WHERE (sources IS NULL OR c.source_id = ANY ((SELECT rag._source_ids(sources, 'search'))::bigint[]))
          AND (num_nulls(source_types, languages, path_prefix) = 3
               OR c.file_id = ANY ((SELECT rag._file_ids(source_types, languages, path_prefix))::bigint[]))
        GROUP BY p.chunk_id
    )
    SELECT s.chunk_id, s.score, (row_number() OVER (ORDER BY s.score DESC, s.chunk_id))::integer
    FROM scored s
    ORDER BY s.score DESC, s.chunk_id
$$;
COMMENT ON FUNCTION rag._bm25_exhaustive(text, text[], text[], text[], text, double precision, double precision) IS
    'Private: every chunk holding a query term and passing the filters, with its BM25 score and rank: what bm25_search''s top_n must equal (its test oracle; slow on a large corpus).';

-- ---------------------------------------------------------------------------
-- _bm25_neighbours: the keyword arm's documents scored with their neighbours' words
--
-- A question about one section of a long page of similar sections (a man
-- page's options, a reference's entries) shares words with many of them,
-- and its own words are often spread over the section, its tag and the
-- sections around it. A document chunk is therefore scored as Okapi BM25 of
-- a window: its own postings and those of the chunks up to `neighbours`
-- before and after it in its file, each weighted share ^ its distance:
--   tf_w(t)  = sum over the window of share^d x tf(chunk, t)
--   length_w = sum of share^d x term_count / sum of share^d
--   score    = sum over t of idf(t) x tf_w (k1 + 1) / (tf_w + k1 (1 - b + b length_w / avg_length))
-- (with share 0, the chunk's own BM25 score). The chunk is still what is
-- returned. Candidates: the documents among the arm's chunks and their
-- neighbours, which their own words may not have brought in. Windows only
-- order the documents among themselves: they take the places and scores the
-- arm's documents had, best window first, and code keeps its places and
-- scores (windows score higher than chunks, and lifted over code they cost
-- code questions in mixed projects). Measured in docs/decisions/033.
-- With page_weight > 0 the documents are ordered by their window's score as a
-- share of the best window plus page_weight times their page's as a share of
-- the best page: Okapi BM25 of the whole file as one text (its chunks' tf
-- summed, its length their term counts summed, against the mean document
-- file's: the mean chunk length times the document chunks per document file;
-- the chunks' IDF). A query that describes a whole page (a man page's
-- one-line description) finds its words spread over the page's sections,
-- none holding them together; the page as one text holds them all. Unlike a
-- sum of the chunks' scores, a term counts once per page and saturates, and a
-- long page is normalised by its length, so many middling sections do not add up.
-- With phrase_weight > 0 they add phrase_weight times the share of the query's
-- consecutive words (those with a stem: term, in the query's order) that the
-- chunk holds in that order with at most one word between: a description or
-- a title paraphrasing a sentence keeps some of its word pairs. A word of the
-- chunk stands for a stem when it begins with it (Snowball stems are the
-- word's beginning; a lemma of another root, людей -> человек, is missed).
-- With `proximity` > 0, for a query of at most rag._proximity_terms() prose
-- terms, a window's score (before its share of the best) adds proximity x
-- rag._proximity of the fewest words between two different query words in its
-- own chunk (the best rag._proximity_candidates() windows are read), and the
-- query's word pairs do not count: they reward the same words standing close,
-- and both at once cost ru-man-pages .018 and ru-docs .005 MRR@10 (decision
-- 033, session 31).
CREATE OR REPLACE FUNCTION rag._bm25_neighbours(
    keyword_terms text[],              -- (rag.parse_query(query)).keyword_terms
    ids           bigint[],            -- the keyword arm's chunks
    scores        double precision[],  -- their BM25 scores
    neighbours    integer,             -- chunks each side of a document chunk in its window
    share         double precision,    -- a neighbour's weight, per chunk of distance
    k1            double precision,
    b             double precision,
    page_weight   double precision DEFAULT 0,  -- the share of the chunk's page's BM25 in its order (0: none)
    query_text    text DEFAULT NULL,            -- (rag.parse_query(query)).text: its word order
    phrase_weight double precision DEFAULT 0,   -- the share of the query's word pairs the chunk holds near (0: none)
    proximity     double precision DEFAULT 0   -- the weight of the query's words standing close (rag._proximity)
)
RETURNS TABLE (
    chunk_id bigint,
    score    double precision
)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
DECLARE
    avg_length double precision;
    terms      text[];              -- the query's stem: terms (documents post no others)
    idfs       double precision[];
    avg_page   double precision;    -- a document file's mean length in terms (page_weight > 0)
    firsts     text[];              -- the query's consecutive word pairs as stems (phrase_weight > 0)
    seconds    text[];
    patterns   text[];              -- LIKE patterns of a word beginning with one of their stems
BEGIN
    SELECT cs.total_terms::double precision / greatest(cs.chunks, 1),
           coalesce(array_agg(s.term), '{}'), coalesce(array_agg(rag._field_idf(s.term, s.df, cs.chunks, rag._documents())), '{}')
      INTO avg_length, terms, idfs
    FROM rag.corpus_stats cs
    LEFT JOIN rag.term_stats s ON s.term = ANY (keyword_terms) AND starts_with(s.term, 'stem:') AND s.df > 0
    GROUP BY cs.chunks, cs.total_terms;
    IF page_weight > 0 THEN
        -- the mean chunk length times the mean number of chunks of a document file
        SELECT avg_length * rag._documents() / nullif(count(*), 0) INTO avg_page
        FROM rag.files f WHERE f.source_type IN ('markdown', 'text', 'pdf');
    END IF;
    IF proximity > 0 AND cardinality(idfs) <= rag._proximity_terms() THEN
        phrase_weight := 0;  -- a short query's words standing close are its proximity; its pairs would count them twice
    END IF;
    IF phrase_weight > 0 THEN
        SELECT array_agg(p.first ORDER BY p.n), array_agg(p.second ORDER BY p.n) INTO firsts, seconds
        FROM (SELECT w.n, substr(t.stem, 6) AS first, lead(substr(t.stem, 6)) OVER (ORDER BY w.n) AS second
              FROM unnest(regexp_split_to_array(rag._folded(lower(coalesce(query_text, ''))), '\W+'))
                   WITH ORDINALITY AS w(word, n)
              CROSS JOIN LATERAL rag._prose_term(w.word, rag._stem_dictionaries()) t
              WHERE w.word <> '' AND t.stem = ANY (terms)) p
        WHERE p.second IS NOT NULL;
        SELECT array_agg(DISTINCT replace(replace(x.stem, '\', '\\'), '_', '\_') || '%') INTO patterns
        FROM unnest(firsts || seconds) AS x(stem);
    END IF;
    RETURN QUERY
    WITH given AS MATERIALIZED (
        SELECT u.id, u.score, c.file_id, c.ordinal, rag._is_document(c.metadata) AS document
        FROM unnest(ids, scores) AS u(id, score)
        JOIN rag.chunks c ON c.id = u.id
    ),
    centres AS MATERIALIZED (  -- the documents given and their neighbours
        SELECT DISTINCT n.id, n.file_id, n.ordinal
        FROM given g
        CROSS JOIN LATERAL (SELECT n.id, n.file_id, n.ordinal FROM rag.chunks n
                            WHERE n.file_id = g.file_id
                              AND n.ordinal BETWEEN g.ordinal - neighbours AND g.ordinal + neighbours) n
        WHERE g.document
    ),
    windows AS MATERIALIZED (  -- each centre's window: (centre, chunk, weight)
        SELECT c.id AS centre, n.id, n.term_count, power(share, abs(n.ordinal - c.ordinal)) AS weight
        FROM centres c
        CROSS JOIN LATERAL (SELECT n.id, n.ordinal, n.term_count FROM rag.chunks n
                            WHERE n.file_id = c.file_id
                              AND n.ordinal BETWEEN c.ordinal - neighbours AND c.ordinal + neighbours) n
        WHERE share > 0 OR n.id = c.id
    ),
    lengths AS (
        SELECT w.centre, sum(w.weight * w.term_count) / sum(w.weight) AS length
        FROM windows w
        GROUP BY w.centre
    ),
    probed AS MATERIALIZED (  -- an index probe per chunk of the windows and term, never a term's whole list
        SELECT a.id, x.term, x.idf, x.tf
        FROM (SELECT DISTINCT w.id FROM windows w) a
        CROSS JOIN LATERAL (SELECT q.term, q.idf, p.tf
                            FROM unnest(terms, idfs) AS q(term, idf)
                            JOIN rag.postings p ON p.term = q.term AND p.chunk_id = a.id
                            OFFSET 0) x  -- (not pulled up into a join over whole lists)
    ),
    frequencies AS (
        SELECT w.centre, pr.term, pr.idf, sum(w.weight * pr.tf) AS tf
        FROM probed pr
        JOIN windows w ON w.id = pr.id
        GROUP BY w.centre, pr.term, pr.idf
    ),
    window_scores AS MATERIALIZED (
        SELECT f.centre, sum(f.idf * f.tf * (k1 + 1) / (f.tf + k1 * (1 - b + b * l.length / avg_length))) AS score
        FROM frequencies f
        JOIN lengths l ON l.centre = f.centre
        GROUP BY f.centre
    ),
    pages AS MATERIALIZED (  -- the centres' files as whole pages: their chunks (page_weight > 0)
        SELECT p.file_id, n.id, n.term_count
        FROM (SELECT DISTINCT c.file_id FROM centres c WHERE page_weight > 0 AND avg_page > 0) p
        JOIN rag.chunks n ON n.file_id = p.file_id
    ),
    page_frequencies AS (  -- an index probe per chunk of the pages and term
        SELECT pg.file_id, x.term, x.idf, sum(x.tf) AS tf
        FROM pages pg
        CROSS JOIN LATERAL (SELECT q.term, q.idf, p.tf
                            FROM unnest(terms, idfs) AS q(term, idf)
                            JOIN rag.postings p ON p.term = q.term AND p.chunk_id = pg.id
                            OFFSET 0) x
        GROUP BY pg.file_id, x.term, x.idf
    ),
    page_scores AS MATERIALIZED (  -- Okapi BM25 of each page as one text
        SELECT f.file_id, sum(f.idf * f.tf * (k1 + 1) / (f.tf + k1 * (1 - b + b * l.length / avg_page))) AS score
        FROM page_frequencies f
        JOIN (SELECT pg.file_id, sum(pg.term_count) AS length FROM pages pg GROUP BY pg.file_id) l
          ON l.file_id = f.file_id
        GROUP BY f.file_id
    ),
    centre_words AS MATERIALIZED (  -- the centres' words that begin with a stem of the pairs, by position
        SELECT c.id, w.n, w.word
        FROM centres c
        JOIN rag.chunks n ON n.id = c.id
        CROSS JOIN LATERAL unnest(regexp_split_to_array(rag._folded(lower(n.content)), '\W+'))
                           WITH ORDINALITY AS w(word, n)
        WHERE patterns IS NOT NULL AND w.word LIKE ANY (patterns)
    ),
    phrases AS (  -- each centre's share of the query's pairs it holds with at most one word between
        SELECT x.id, count(*)::double precision / cardinality(firsts) AS share
        FROM (SELECT DISTINCT a.id, q.n
              FROM unnest(firsts, seconds) WITH ORDINALITY AS q(first, second, n)
              JOIN centre_words a ON starts_with(a.word, q.first)
              JOIN centre_words b ON b.id = a.id AND b.n - a.n BETWEEN 1 AND 2 AND starts_with(b.word, q.second)) x
        GROUP BY x.id
    ),
    -- Proximity: in the best windows' own chunks, the fewest words between two different
    -- words of the query (each word read as documents post it, rag._prose_term).
    closest AS MATERIALIZED (
        SELECT s.centre, c.content
        FROM window_scores s
        JOIN rag.chunks c ON c.id = s.centre
        WHERE proximity > 0 AND cardinality(idfs) <= rag._proximity_terms()  -- (idfs: terms would name c.terms)
        ORDER BY s.score DESC, s.centre
        LIMIT rag._proximity_candidates()
    ),
    words AS MATERIALIZED (
        SELECT cl.centre, w.word, w.position
        FROM closest cl
        CROSS JOIN LATERAL regexp_split_to_table(lower(cl.content), '[^[:alnum:]]+')
                           WITH ORDINALITY AS w(word, position)
        WHERE w.word <> ''
    ),
    matched AS MATERIALIZED (  -- each distinct word once through the lemma table
        SELECT v.word, p.stem
        FROM (SELECT DISTINCT w.word FROM words w) v
        CROSS JOIN LATERAL rag._prose_term(v.word, rag._stem_dictionaries()) p
        WHERE p.stem = ANY (terms)
    ),
    placed AS MATERIALIZED (
        SELECT w.centre, m.stem, w.position FROM words w JOIN matched m ON m.word = w.word
    ),
    spans AS (
        SELECT x.centre, min(abs(x.position - y.position))::integer AS distance
        FROM placed x
        JOIN placed y ON y.centre = x.centre AND y.stem > x.stem
        GROUP BY x.centre
    ),
    windowed AS (  -- by the window's score plus proximity x rag._proximity, or that as a share of the best window
                   -- plus page_weight x its page's share of the best page and phrase_weight x its share of the
                   -- query's word pairs
        SELECT x.centre, row_number() OVER (ORDER BY x.score DESC, x.centre) AS place
        FROM (SELECT w.centre,
                     CASE WHEN page_weight > 0 OR phrase_weight > 0
                          THEN (w.score + proximity * rag._proximity(sp.distance)) / (SELECT max(m.score) FROM window_scores m)
                               + page_weight * coalesce(ps.score / nullif((SELECT max(m.score) FROM page_scores m), 0), 0)
                               + phrase_weight * coalesce(ph.share, 0)
                          ELSE w.score + proximity * rag._proximity(sp.distance) END AS score
              FROM window_scores w
              JOIN centres c ON c.id = w.centre
              LEFT JOIN page_scores ps ON ps.file_id = c.file_id
              LEFT JOIN phrases ph ON ph.id = w.centre
              LEFT JOIN spans sp ON sp.centre = w.centre) x
    ),
    slots AS (  -- the documents' places in the arm and their scores
        SELECT g.score, row_number() OVER (ORDER BY g.score DESC, g.id) AS place
        FROM given g
        WHERE g.document
    )
    SELECT g.id, g.score FROM given g WHERE NOT g.document
    UNION ALL
    SELECT w.centre, s.score FROM windowed w JOIN slots s ON s.place = w.place;
END
$$;
COMMENT ON FUNCTION rag._bm25_neighbours(text[], bigint[], double precision[], integer, double precision, double precision, double precision, double precision, text, double precision, double precision) IS
    'Private: the keyword arm''s chunks with its documents reordered: the documents given and their neighbours ranked by Okapi BM25 over their windows (their own postings and those of the chunks up to neighbours before and after them in their file, weighted share ^ distance: tf summed, length averaged by the same weights), and with page_weight > 0 by their window''s share of the best window plus page_weight x their page''s BM25 (the file as one text) as a share of the best page plus phrase_weight x the share of the query''s consecutive words it holds at most one word apart, the window''s score first adding, for a query of at most rag._proximity_terms() such terms (whose pairs then do not count), proximity times rag._proximity of the fewest words between two different query words in the chunk itself (the best rag._proximity_candidates() windows), taking in that order the places and scores the documents given had; other chunks keep theirs. Unordered.';

-- ---------------------------------------------------------------------------
-- _proximity: what the query's words standing close add to a document window's BM25
--
-- A section titled by the query (the title cut, or a question asked in other
-- words) holds two of its words a few words apart, where a passage that
-- names them in passing holds them sentences apart. Tao and Zhai's MinDist
-- (SIGIR 2007): ln(0.3 + exp(-d / 5)) for the fewest words d between two
-- different query words in the chunk, from ln 1.3 (adjacent) down to ln 0.3
-- (apart, or fewer than two of the query's words: every chunk of a one-word
-- query alike), times bm25.proximity. Measured in docs/decisions/033 (session 31).
CREATE OR REPLACE FUNCTION rag._proximity(
    distance integer  -- words between two different query words; NULL: no two of them
)
RETURNS double precision
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN ln(0.3 + coalesce(exp(-distance / 5.0::double precision), 0));
COMMENT ON FUNCTION rag._proximity(integer) IS
    'Private: the proximity term of a document window''s score: ln(0.3 + exp(-distance / 5)) for the fewest words between two different query words in the chunk, ln 0.3 when it holds fewer than two of them (distance NULL).';

CREATE OR REPLACE FUNCTION rag._proximity_candidates()
RETURNS integer
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- The windows whose chunks are read word by word: the rest take the floor,
-- ln 0.3 (reading every window costs ~0.5 s a query; 20 measured as 40).
RETURN 40;
COMMENT ON FUNCTION rag._proximity_candidates() IS
    'Private: how many of the best document windows rag._bm25_neighbours reads for the proximity of the query''s words.';

CREATE OR REPLACE FUNCTION rag._proximity_terms()
RETURNS integer
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- Proximity only for a query of at most this many distinct prose terms (found
-- in some document): a title or a few keywords, whose words standing together
-- are a phrase. A sentence of a dozen words has two of them side by side in
-- most passages that hold it at all (ru-man-options: -.020 MRR@10 ungated,
-- -.001 at 3, -.005 at 4; decision 033, session 31).
RETURN 3;
COMMENT ON FUNCTION rag._proximity_terms() IS
    'Private: the most distinct prose terms a query may have for rag._bm25_neighbours to weigh the proximity of its words.';
