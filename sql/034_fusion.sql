-- Fusion: the BM25, vector and names arms merged by weighted reciprocal rank
-- fusion, lifted by calls, and rag.search, the hybrid search over them (its
-- files arm and ranking step are in sql/036_ranking.sql).

-- ---------------------------------------------------------------------------
-- _call_lifts
CREATE OR REPLACE FUNCTION rag._call_lifts(
    ids     bigint[],
    scores  double precision[],
    leaders integer DEFAULT 20
)
RETURNS TABLE (
    chunk_id bigint,
    lift     double precision
)
LANGUAGE sql
STABLE
-- Not inlined (SET): rag.search plans this only when a search is lifted.
SET search_path = pg_catalog, rag, public
AS $$
    WITH spans AS (
        SELECT u.id, u.score, c.file_id,
               (c.metadata->>'startLine')::integer AS first_line, (c.metadata->>'endLine')::integer AS last_line
        FROM unnest(ids, scores) AS u(id, score)
        JOIN rag.chunks c ON c.id = u.id
    ),
    called AS (
        -- The definitions the best candidates call (resolved references only).
        SELECT DISTINCT l.id AS caller, l.score, t.file_id, t.start_line
        FROM (SELECT * FROM spans ORDER BY score DESC, id LIMIT leaders) l
        JOIN rag.refs r ON r.file_id = l.file_id AND r.kind = 'call' AND r.line BETWEEN l.first_line AND l.last_line
        JOIN rag.ref_resolution rr ON rr.ref_id = r.id AND rr.target_id IS NOT NULL
        JOIN rag.symbols t ON t.id = rr.target_id
    ),
    calls AS (
        -- Candidates holding such a definition, each (caller, callee) pair once.
        SELECT DISTINCT cd.caller, cd.score, sp.id AS callee
        FROM called cd
        JOIN spans sp ON sp.file_id = cd.file_id AND cd.start_line BETWEEN sp.first_line AND sp.last_line
        WHERE sp.id <> cd.caller
    )
    SELECT callee, sum(score) FROM calls GROUP BY callee;
$$;
COMMENT ON FUNCTION rag._call_lifts(bigint[], double precision[], integer) IS
    'For candidates (ids with their fused scores): each candidate holding a definition that one of the best `leaders` calls, with the sum of those callers'' scores (the code graph lift of rag.search).';

-- ---------------------------------------------------------------------------
-- search: its candidates and the rows it returns
CREATE OR REPLACE FUNCTION rag._name_scores(
    chunk_ids  bigint[],
    name_terms text[],
    k1         double precision,
    b          double precision
)
RETURNS TABLE (
    chunk_id bigint,
    score    double precision
)
LANGUAGE sql
STABLE
-- A standard body and no SET: inlined into rag.search's statement, not planned
-- at every call (~0.4 ms).
BEGIN ATOMIC
    -- As bm25_search scores a chunk: an index probe per chunk and term.
    SELECT p.chunk_id,
           sum(rag._bm25_weight(p.tf, p.term_count, rag._field_idf(s.term, s.df, cs.chunks, rag._documents()), k1, b,
                                cs.total_terms::double precision / greatest(cs.chunks, 1)))
    FROM rag.corpus_stats cs
    JOIN rag.term_stats s ON s.term = ANY (name_terms) AND s.df > 0
    JOIN rag.postings p ON p.term = s.term AND p.chunk_id = ANY (chunk_ids)
    GROUP BY p.chunk_id;
END;
COMMENT ON FUNCTION rag._name_scores(bigint[], text[], double precision, double precision) IS
    'Private: the BM25 scores of these chunks'' names (path, fqn: rag._name_frequencies) for name: terms (rag.parse_query); chunks whose names hold none are left out.';

CREATE OR REPLACE FUNCTION rag._fused_candidates(
    q             rag.parsed_query,
    query_vector  vector,
    model         text,
    keyword_n     integer,
    vector_n      integer,
    sources       text[],
    source_types  text[],
    languages     text[],
    path_prefix   text,
    bm25_weight   double precision,
    vector_weight double precision,
    rrf_k         integer,
    k1            double precision,
    b             double precision,
    fusion        text,
    neighbours    integer,            -- a document chunk's BM25 over this many chunks each side (rag._bm25_neighbours)
    neighbour_share double precision, -- their weight per chunk of distance
    page_weight   double precision,   -- the share of a document chunk's page's BM25 in its order (rag._bm25_neighbours)
    phrase_weight double precision,   -- and of the query's word pairs it holds near
    proximity     double precision    -- the weight of the query's words standing close in a document (rag._proximity)
)
RETURNS TABLE (
    chunk_id     bigint,
    bm25_score   double precision,
    bm25_rank    integer,
    vector_score double precision,
    vector_rank  integer,
    score        double precision
)
LANGUAGE plpgsql
VOLATILE  -- the vector arm sets hnsw.* for its transaction
SET search_path = pg_catalog, rag, public
-- rag.search forces its hybrid statement to a generic plan, and that setting
-- would reach the arms' statements too: there generic plans cost a filtered
-- hybrid search up to 20% (a path filter's chunks read by a plan made for none).
SET plan_cache_mode = auto
AS $$
#variable_conflict use_column
DECLARE
    -- Windows only where there are documents; they need the arm's full depth (the
    -- vector arm's), since a neighbour of a chunk ranked low may rank high.
    windowed CONSTANT boolean := (_fused_candidates.neighbours > 0 OR _fused_candidates.page_weight > 0
                                  OR _fused_candidates.phrase_weight > 0
                                  OR _fused_candidates.proximity > 0)
                                 AND _fused_candidates.bm25_weight > 0 AND rag._documents() > 0;
    keyword_ids    bigint[];
    keyword_scores double precision[];
BEGIN
    IF windowed THEN
        SELECT array_agg(k.chunk_id), array_agg(k.score) INTO keyword_ids, keyword_scores
        FROM rag._bm25_top((q).keyword_terms, greatest(_fused_candidates.keyword_n, _fused_candidates.vector_n),
                           _fused_candidates.sources, _fused_candidates.source_types,
                           _fused_candidates.languages, _fused_candidates.path_prefix,
                           _fused_candidates.k1, _fused_candidates.b) k;
    END IF;
    RETURN QUERY
    WITH keyword AS (
        SELECT k.chunk_id, k.score, k.rank
        FROM rag._bm25_top((q).keyword_terms, _fused_candidates.keyword_n,
                             _fused_candidates.sources, _fused_candidates.source_types,
                             _fused_candidates.languages, _fused_candidates.path_prefix,
                             _fused_candidates.k1, _fused_candidates.b) k
        WHERE _fused_candidates.bm25_weight > 0 AND NOT windowed
        UNION ALL
        SELECT w.chunk_id, w.score, (row_number() OVER (ORDER BY w.score DESC, w.chunk_id))::integer
        FROM (SELECT n.chunk_id, n.score
              FROM rag._bm25_neighbours((q).keyword_terms, keyword_ids, keyword_scores, _fused_candidates.neighbours,
                                        _fused_candidates.neighbour_share, _fused_candidates.k1, _fused_candidates.b,
                                        _fused_candidates.page_weight, (q).text, _fused_candidates.phrase_weight,
                                        _fused_candidates.proximity) n
              WHERE windowed
              ORDER BY n.score DESC, n.chunk_id
              LIMIT _fused_candidates.keyword_n) w
    ),
    semantic AS (
        SELECT v.chunk_id, v.score, v.rank
        FROM rag.vector_search(_fused_candidates.query_vector, _fused_candidates.model,
                               _fused_candidates.vector_n, _fused_candidates.sources,
                               _fused_candidates.source_types, _fused_candidates.languages,
                               _fused_candidates.path_prefix) v
        WHERE _fused_candidates.query_vector IS NOT NULL
          AND _fused_candidates.vector_weight > 0
    )
    SELECT coalesce(kw.chunk_id, se.chunk_id), kw.score, kw.rank, se.score, se.rank,
           CASE _fused_candidates.fusion
               WHEN 'rrf' THEN coalesce(_fused_candidates.bm25_weight / (_fused_candidates.rrf_k + kw.rank), 0)
                             + coalesce(_fused_candidates.vector_weight / (_fused_candidates.rrf_k + se.rank),
                                        -- a chunk the model cannot read: its keyword rank in both arms
                                        _fused_candidates.vector_weight / (_fused_candidates.rrf_k + unread.rank), 0)
               -- 'scores': BM25 as a share of the best candidate's; cosine similarity
               -- spread over 0..1 between the worst and the best candidate.
               ELSE coalesce(_fused_candidates.bm25_weight * kw.score
                             / nullif((SELECT max(k.score) FROM keyword k), 0), 0)
                  + CASE WHEN unread.rank IS NOT NULL
                              THEN _fused_candidates.vector_weight * kw.score / nullif((SELECT max(k.score) FROM keyword k), 0)
                         WHEN se.chunk_id IS NULL THEN 0
                         ELSE _fused_candidates.vector_weight * coalesce(
                             (se.score - (SELECT min(v.score) FROM semantic v))
                             / nullif((SELECT max(v.score) - min(v.score) FROM semantic v), 0), 1)
                    END
           END
    FROM keyword kw FULL JOIN semantic se ON se.chunk_id = kw.chunk_id
    -- A keyword candidate with no vector of the model (its language is one the model
    -- does not read, rag._model_reads, or a run has yet to embed it) cannot be found by
    -- the vector arm: it counts there as the keyword arm ranks it, instead of losing
    -- the arm's share to every chunk the model reads (decision 033, session 30).
    LEFT JOIN LATERAL (
        SELECT kw.rank
        WHERE se.chunk_id IS NULL AND _fused_candidates.query_vector IS NOT NULL
          AND _fused_candidates.vector_weight > 0
          AND NOT EXISTS (SELECT 1 FROM rag.chunks c
                          JOIN rag.embeddings e ON e.model = _fused_candidates.model AND e.content_hash = c.content_hash
                          WHERE c.id = kw.chunk_id)) unread ON true
    -- A chunk replaced by an index run committing meanwhile must not take a slot.
    WHERE EXISTS (SELECT 1 FROM rag.chunks c WHERE c.id = coalesce(kw.chunk_id, se.chunk_id));
END
$$;
COMMENT ON FUNCTION rag._fused_candidates(rag.parsed_query, vector, text, integer, integer, text[], text[], text[], text, double precision, double precision, integer, double precision, double precision, text, integer, double precision, double precision, double precision, double precision) IS
    'rag.search''s candidates: the BM25 arm''s keyword_n and the vector arm''s vector_n best chunks (filters inside both) with their scores, ranks and fused score (fusion ''rrf'' or ''scores''), unordered. With neighbours, page_weight, phrase_weight or proximity > 0 and documents indexed, the BM25 arm''s documents are ordered by BM25 over windows of their neighbours, a share of their page''s BM25 and of the query''s word pairs they hold, and the proximity of the query''s words in the chunk (rag._bm25_neighbours). A keyword candidate with no vector of the model (a language it does not read) counts in the vector arm as the keyword arm ranks (rrf) or scores (scores) it.';

-- What rag.search returns of a chunk besides its scores.
CREATE OR REPLACE VIEW rag._hit_rows AS
SELECT c.id AS chunk_id, s.name AS source_name, f.path, c.metadata->>'sourceType' AS source_type,
       c.metadata->>'language' AS language,
       (c.metadata->>'startLine')::integer AS start_line, (c.metadata->>'endLine')::integer AS end_line,
       c.metadata->>'fqn' AS fqn, c.metadata->>'headerPath' AS header_path,
       (c.metadata->>'pageStart')::integer AS page_start, (c.metadata->>'pageEnd')::integer AS page_end,
       c.content, c.metadata,
       CASE WHEN s.type = 'local' THEN rtrim(s.location, '/') || '/' || f.path END AS absolute_path,
       c.metadata->>'url' AS url, nullif(c.contextual_text, '') AS contextual_text
FROM rag.chunks c
JOIN rag.files f ON f.id = c.file_id
JOIN rag.sources s ON s.id = c.source_id;

-- ---------------------------------------------------------------------------
-- _hybrid_search: rag.search's arms, fusion, lifts and ranking step
CREATE OR REPLACE FUNCTION rag._hybrid_search(
    q            rag.parsed_query,  -- rag.parse_query(query)
    query_vector vector,   -- NULL: keywords alone
    vector_model text,     -- the model query_vector is of
    top_k        integer,
    sources      text[],   -- the filters (NULL: all)
    source_types text[],
    languages    text[],
    path_prefix  text,
    opts         jsonb     -- rag.search_options, validated and complete
)
RETURNS TABLE (
    chunk_id     bigint,
    bm25_score   double precision,
    bm25_rank    integer,
    vector_score double precision,
    vector_rank  integer,
    score        double precision
)
LANGUAGE plpgsql
VOLATILE  -- the vector arm sets hnsw.* for its transaction
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
<<hs>>
DECLARE
    bm25_weight   CONSTANT double precision := (opts->>'bm25Weight')::double precision;
    vector_weight CONSTANT double precision := (opts->>'vectorWeight')::double precision;
    graph_weight  CONSTANT double precision := (opts->>'graphWeight')::double precision;
    names_weight  CONSTANT double precision := (opts->>'namesWeight')::double precision;
    files_weight  CONSTANT double precision := (opts->>'filesWeight')::double precision;
    candidates    CONSTANT integer := greatest((opts->>'retrieveTopK')::integer, _hybrid_search.top_k);
    rrf_k         CONSTANT integer := (opts #>> '{rrf,k}')::integer;
    k1            CONSTANT double precision := (opts #>> '{bm25,k1}')::double precision;
    b             CONSTANT double precision := (opts #>> '{bm25,b}')::double precision;
    neighbours    CONSTANT integer := (opts #>> '{bm25,neighbours}')::integer;
    neighbour_share CONSTANT double precision := (opts #>> '{bm25,neighbourShare}')::double precision;
    page_weight   CONSTANT double precision := (opts #>> '{bm25,pageWeight}')::double precision;
    phrase_weight CONSTANT double precision := (opts #>> '{bm25,phraseWeight}')::double precision;
    proximity     CONSTANT double precision := (opts #>> '{bm25,proximity}')::double precision;
    fusion        CONSTANT text := opts->>'fusion';
    per_file      CONSTANT integer := (opts->>'perFile')::integer;
    include_tests CONSTANT boolean := (opts->>'includeTests')::boolean;
    -- hits ranked: more than top_k when rag.search merges adjacent ones (each merge frees a place)
    places        CONSTANT integer := CASE WHEN (opts #>> '{mergeAdjacent,documents}')::boolean
                                                OR (opts #>> '{mergeAdjacent,code}')::boolean
                                           THEN least(1000, 2 * _hybrid_search.top_k + 10)
                                           ELSE _hybrid_search.top_k END;
    factors       CONSTANT jsonb := rag.ranking_priors(opts->'priors');  -- the ranking step's (sql/036_ranking.sql)
    keyword_n    integer := candidates;  -- the keyword arm's candidates
    hybrid       boolean;                -- both arms run
    name_terms   text[];                 -- the names arm's terms (hybrid)
    plan_mode    text;                   -- plan_cache_mode to restore
    lift_calls   boolean;                -- the code graph lift applies
    -- the fused candidates, for the ranking step (rag._ranked)
    cand_ids           bigint[];
    cand_scores        double precision[];
    cand_bm25_scores   double precision[];
    cand_bm25_ranks    integer[];
    cand_vector_scores double precision[];
    cand_vector_ranks  integer[];
    source_filter      bigint[];   -- the sources searched, resolved for a query naming a definition
BEGIN
    IF query_vector IS NULL OR hs.vector_weight = 0 THEN
        -- Keywords alone: fusion keeps their order, so the ranking step needs
        -- only the top_k of them, and as many again for the chunks it demotes
        -- (and a few spare for chunks gone since: rag._fused_candidates). An
        -- exact top 30 costs far less than a top 50.
        keyword_n := least(hs.candidates, 2 * _hybrid_search.top_k + 10);
    END IF;

    -- Only a hybrid search has the names arm and is lifted (where calls were resolved);
    -- otherwise both are empty, and fusion keeps the keyword order.
    hybrid := hs.bm25_weight > 0 AND hs.vector_weight > 0 AND query_vector IS NOT NULL;
    lift_calls := hybrid AND hs.graph_weight > 0;
    IF lift_calls THEN
        lift_calls := EXISTS (SELECT 1 FROM rag.ref_resolution r WHERE r.target_id IS NOT NULL);
    END IF;
    IF hybrid AND hs.names_weight > 0 THEN
        name_terms := q.name_terms;
    END IF;

    -- The candidates, ranked by their names too and lifted where calls were
    -- resolved when the search is hybrid. A statement of its own, planned once
    -- (generic plan).
    plan_mode := current_setting('plan_cache_mode');
    PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
    WITH fused AS (
        SELECT * FROM rag._fused_candidates(
            q, query_vector, vector_model, keyword_n, hs.candidates, _hybrid_search.sources,
            _hybrid_search.source_types, _hybrid_search.languages, _hybrid_search.path_prefix, hs.bm25_weight,
            hs.vector_weight, hs.rrf_k, hs.k1, hs.b, hs.fusion, hs.neighbours, hs.neighbour_share,
            hs.page_weight, hs.phrase_weight, hs.proximity)
    ),
    named AS (  -- the names arm (rag._name_scores)
        SELECT n.chunk_id, n.score, row_number() OVER (ORDER BY n.score DESC, n.chunk_id)::integer AS rank
        FROM rag._name_scores((SELECT array_agg(fu.chunk_id) FROM fused fu), name_terms, hs.k1, hs.b) n
        WHERE name_terms IS NOT NULL
    ),
    scored AS (
        SELECT fu.chunk_id, fu.bm25_score, fu.bm25_rank, fu.vector_score, fu.vector_rank,
               fu.score
               -- the names arm, fused as the other two are
               + CASE hs.fusion
                     WHEN 'rrf' THEN coalesce(hs.names_weight / (hs.rrf_k + na.rank), 0)
                     ELSE coalesce(hs.names_weight * na.score / (SELECT max(n.score) FROM named n), 0)
                 END AS score
        FROM fused fu
        LEFT JOIN named na ON na.chunk_id = fu.chunk_id
    ),
    lifts AS MATERIALIZED (
        -- (materialized: inlined into the LEFT JOIN below, WHERE lift_calls
        -- became a join filter, and the function ran anyway: ~0.2 ms a search)
        SELECT l.chunk_id, l.lift
        FROM rag._call_lifts((SELECT array_agg(sc.chunk_id ORDER BY sc.chunk_id) FROM scored sc),
                             (SELECT array_agg(sc.score ORDER BY sc.chunk_id) FROM scored sc)) l
        WHERE lift_calls
    )
    SELECT array_agg(sc.chunk_id), array_agg(sc.score + hs.graph_weight * coalesce(li.lift, 0)),
           array_agg(sc.bm25_score), array_agg(sc.bm25_rank), array_agg(sc.vector_score), array_agg(sc.vector_rank)
      INTO cand_ids, cand_scores, cand_bm25_scores, cand_bm25_ranks, cand_vector_scores, cand_vector_ranks
    FROM scored sc
    LEFT JOIN lifts li ON li.chunk_id = sc.chunk_id;

    -- The files arm, and tests voting for the modules they are named after
    -- (sql/036_ranking.sql): lifts that may add candidates the arms missed.
    IF hybrid AND (hs.files_weight > 0 OR (factors->>'tested')::double precision > 0) THEN
        WITH lifted AS (
            SELECT l.chunk_id, sum(l.lift) AS lift
            FROM (SELECT f.chunk_id, f.lift
                  FROM rag._file_lifts(cand_ids, cand_scores, query_vector, vector_model, hs.files_weight,
                                       hs.rrf_k, hs.fusion, _hybrid_search.sources, _hybrid_search.source_types,
                                       _hybrid_search.languages, _hybrid_search.path_prefix) f
                  WHERE hs.files_weight > 0
                  UNION ALL
                  SELECT t.chunk_id, t.lift
                  FROM rag._tested_lifts(cand_ids, cand_scores, query_vector, vector_model,
                                         (factors->>'tested')::double precision) t
                  WHERE (factors->>'tested')::double precision > 0) l
            GROUP BY l.chunk_id
        )
        SELECT array_agg(coalesce(u.id, li.chunk_id)), array_agg(coalesce(u.score, 0) + coalesce(li.lift, 0)),
               array_agg(u.bm25_score), array_agg(u.bm25_rank), array_agg(u.vector_score), array_agg(u.vector_rank)
          INTO cand_ids, cand_scores, cand_bm25_scores, cand_bm25_ranks, cand_vector_scores, cand_vector_ranks
        FROM unnest(cand_ids, cand_scores, cand_bm25_scores, cand_bm25_ranks, cand_vector_scores, cand_vector_ranks)
             AS u(id, score, bm25_score, bm25_rank, vector_score, vector_rank)
        FULL JOIN lifted li ON li.chunk_id = u.id;
    END IF;

    -- The ranking step over the candidates (sql/036_ranking.sql), given as
    -- values so that rag._ranked is inlined, and planned once too.
    IF q.identifier THEN
        source_filter := rag._source_ids(_hybrid_search.sources, 'search');
    END IF;
    RETURN QUERY
    SELECT r.chunk_id, u.bm25_score, u.bm25_rank, u.vector_score, u.vector_rank, r.score
    FROM rag._ranked(cand_ids, cand_scores, q, factors, hs.include_tests, hs.per_file,
                     source_filter, _hybrid_search.source_types, _hybrid_search.languages,
                     _hybrid_search.path_prefix, hs.places) r
    LEFT JOIN unnest(cand_ids, cand_bm25_scores, cand_bm25_ranks, cand_vector_scores, cand_vector_ranks)
              AS u(chunk_id, bm25_score, bm25_rank, vector_score, vector_rank) ON u.chunk_id = r.chunk_id
    ORDER BY r.score DESC, least(u.bm25_rank, u.vector_rank), r.chunk_id
    LIMIT hs.places;  -- without it the planner expects more rows and hashes all files
    PERFORM set_config('plan_cache_mode', plan_mode, true);
END hs
$$;
COMMENT ON FUNCTION rag._hybrid_search(rag.parsed_query, vector, text, integer, text[], text[], text[], text, jsonb) IS
    'Private: rag.search''s hits as chunk ids and scores, best first. BM25 and vector arms (filters inside both) and a names arm (BM25 over code chunks'' paths and fqns), fused by weighted RRF, w_bm25/(k+rank) + w_vec/(k+rank) + w_names/(k+rank), or with hs.fusion ''scores'' by w_bm25 * bm25/best bm25 + w_vec * cosine spread 0..1 over the hs.candidates (+ w_names * names bm25/best).'
    ' A hybrid search then adds graphWeight times the fused scores of the top 20 candidates that call a definition in a candidate, a files arm weighted filesWeight (the 20 code files whose mean chunk vector is nearest the query, each lifting its best candidate or its nearest chunk by rank as the arms are fused), and a share (priors tested) of test candidates'' scores to the chunk nearest the query of the module each test is named after.'
    ' Last, the ranking step (rag._ranked): definitions the query names first, path-class priors, at most perFile chunks of a file before a decay.'
    ' The candidates are for top_k hits; with mergeAdjacent on, 2 top_k + 10 are ranked out, for rag.search to merge (rag._merged_places).';
