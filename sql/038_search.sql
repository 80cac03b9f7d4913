-- rag.search: the one hybrid search every front end calls (CLI, MCP, HTTP, psql).
--
-- The query is read once, by rag.parse_query; every arm and prior reads the
-- rag.parsed_query it returns (the keyword arm its keyword terms, the names
-- arm its name terms, the ranking step its intents and the names it may
-- name, the vector arm's weight its words by script).
--
-- Five parameters: the query, its embedding (optional), how many hits, the
-- filters, and the options. Every tuning knob lives in options, validated and
-- defaulted by rag.search_options: the single place its defaults are written
-- (rag.config.yaml's search section and rag/config.py's SearchConfig are held
-- to them by tests/test_search_options.py). What a search finds out on the
-- way (no vectors for the model, a keyword-only answer, nothing indexed) is
-- said as a NOTICE starting 'search: ', which psql prints and the Python
-- front ends turn into warnings: one round trip, whoever calls.

-- ---------------------------------------------------------------------------
-- parse_query: a search query read once, for every step of rag.search
CREATE OR REPLACE FUNCTION rag.parse_query(
    query text
)
RETURNS rag.parsed_query
LANGUAGE sql
STABLE  -- (the configured languages' stop words and stems, rag.lemmas, rag.verbal_nouns)
PARALLEL SAFE
SET search_path = pg_catalog, rag, public
AS $$
    WITH given AS (
        -- a query beginning with a verbal noun gets its verb as a word of its own (rag._title_verb)
        SELECT concat_ws(' ', btrim(coalesce(query, '')), rag._title_verb(query)) AS text,
               rag._stem_dictionaries() AS dictionaries
    ),
    read AS (
        SELECT g.text, g.dictionaries, rag.query_terms(g.text, g.dictionaries) AS terms FROM given g
    )
    SELECT ROW(
        r.text,
        r.terms,
        -- each term and its stem: term, as documents post them (rag._text_frequencies)
        (SELECT coalesce(array_agg(DISTINCT x.term), '{}') FROM unnest(r.terms) AS t(term),
                LATERAL rag._prose_term(t.term, r.dictionaries) s,
                LATERAL (VALUES (t.term), (s.stem)) AS x(term)),
        -- each term as a name: term, and its name:stem: term (rag._name_stem)
        ARRAY(SELECT DISTINCT x.term FROM unnest(r.terms) AS t(term),
                     LATERAL (VALUES ('name:' || t.term), (rag._name_stem(t.term, r.dictionaries))) AS x(term)
              WHERE x.term IS NOT NULL ORDER BY x.term),
        rag._identifier_shaped(r.text),
        (SELECT coalesce(jsonb_agg(jsonb_build_object('module', n.module, 'fqn', n.fqn)), '[]')
         FROM rag._query_names(r.text) n),
        rag._asks_for_tests(r.text),
        rag._asks_for_prose(r.text),
        rag._scripts(r.text)
    )::rag.parsed_query
    FROM read r
$$;
COMMENT ON FUNCTION rag.parse_query(text) IS
    'A search query read once (rag.parsed_query): its keyword terms, with stems, and name: terms, with stems; whether it is one identifier and the definitions it may name; whether it asks about tests or for prose (how to, releases); its words by script. Every step of rag.search reads this value.';

-- ---------------------------------------------------------------------------
-- bm25_search: the keyword arm alone
CREATE OR REPLACE FUNCTION rag.bm25_search(
    query        text,
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
LANGUAGE sql
STABLE
ROWS 50
SET search_path = pg_catalog, rag, public
AS $$
    SELECT * FROM rag._bm25_top((rag.parse_query(query)).keyword_terms, top_n, sources, source_types, languages,
                                path_prefix, k1, b, score_all_below)
$$;
COMMENT ON FUNCTION rag.bm25_search(text, integer, text[], text[], text[], text, double precision, double precision, integer) IS
    'Exact Okapi BM25 top_n (Lucene IDF, corpus statistics kept current), filters applied before ranking (rag._bm25_top): the heaviest postings first, then MaxScore when they do not settle it, or every chunk scored when filters leave at most score_all_below.';

-- ---------------------------------------------------------------------------
-- search_options: every tuning knob of rag.search, defaults and overrides
CREATE OR REPLACE FUNCTION rag.search_options(
    options jsonb DEFAULT NULL  -- overrides, e.g. {"bm25Weight": 0.7, "rrf": {"k": 20}}
)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    defaults CONSTANT jsonb := jsonb_build_object(
        'fusion', 'rrf',        -- rrf (weighted reciprocal rank fusion) | scores (weighted scaled scores)
        'bm25Weight', 0.5,      -- the keyword arm's weight
        'vectorWeight', 0.5,    -- the vector arm's (scaled by the share of the query the model reads)
        'graphWeight', 0.1,     -- lift of candidates the best candidates call (code graph); 0: off
        'namesWeight', 0.4,     -- the names arm: BM25 over code chunks' paths and fqns; 0: off
        'filesWeight', 0.4,     -- the files arm: code files by their chunks' mean vector; 0: off
        'retrieveTopK', 50,     -- candidates per arm (at least top_k)
        'perFile', 3,           -- chunks of one file before the rest of it decays
        'priors', '{}'::jsonb,  -- the ranking step's factors over rag.ranking_priors()
        'includeTests', false,  -- tests and fixtures at full weight
        'model', NULL,          -- the embedding model of query_embedding (NULL: told by its dimensions)
        'rrf', jsonb_build_object('k', 10),
        -- neighbours: a document chunk's BM25 counts the words of this many chunks each side,
        -- weighted neighbourShare per chunk of distance (rag._bm25_neighbours); 0: its own alone;
        -- pageWeight: the share of its page's BM25 (the whole file as one text) in its order; 0: none
        -- phraseWeight: the share of the query's word pairs it holds at most one word apart; 0: none
        -- proximity: the weight of the query's words standing close in a document chunk (rag._proximity), for a
        -- query of at most three prose terms instead of its word pairs; 0: off
        'bm25', jsonb_build_object('k1', 1.2, 'b', 0.75, 'neighbours', 2, 'neighbourShare', 0.15, 'pageWeight', 0.3,
                                  'phraseWeight', 0.5, 'proximity', 10),
        -- hits next to each other in a file as one hit of their lines, while it holds at most
        -- maxTokens (rag._merged_places); documents' chunks, code's
        'mergeAdjacent', jsonb_build_object('documents', true, 'code', true, 'maxTokens', 600));
    merged jsonb;
    bad    text;
BEGIN
    IF options IS NULL THEN
        RETURN defaults;
    END IF;
    IF jsonb_typeof(options) <> 'object' THEN
        RAISE EXCEPTION 'search: options must be a JSON object such as {"bm25Weight": 0.7}, not %', options
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Unknown keys, at the top and inside rrf and bm25.
    SELECT string_agg(quote_literal(k.path), ', ') INTO bad
    FROM (SELECT t.key AS path FROM jsonb_object_keys(options) AS t(key) WHERE NOT defaults ? t.key
          UNION ALL
          SELECT g.grp || '.' || t.key
          FROM unnest(ARRAY['rrf', 'bm25', 'mergeAdjacent']) AS g(grp)
          CROSS JOIN LATERAL jsonb_object_keys(CASE WHEN jsonb_typeof(options -> g.grp) = 'object'
                                                    THEN options -> g.grp ELSE '{}' END) AS t(key)
          WHERE NOT (defaults -> g.grp) ? t.key) k;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'search: unknown option %; options: fusion, bm25Weight, vectorWeight, graphWeight, namesWeight, filesWeight, retrieveTopK, perFile, priors, includeTests, model, rrf.k, bm25.k1, bm25.b, bm25.neighbours, bm25.neighbourShare, bm25.pageWeight, bm25.phraseWeight, bm25.proximity, mergeAdjacent.documents, mergeAdjacent.code, mergeAdjacent.maxTokens', bad
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT string_agg(g.grp, ', ') INTO bad FROM unnest(ARRAY['rrf', 'bm25', 'mergeAdjacent']) AS g(grp)
    WHERE options ? g.grp AND jsonb_typeof(options -> g.grp) <> 'object';
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'search: option % must be a JSON object such as {"k": 10}', bad
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    merged := defaults || options
        || jsonb_build_object('rrf', (defaults -> 'rrf') || coalesce(options -> 'rrf', '{}'),
                              'bm25', (defaults -> 'bm25') || coalesce(options -> 'bm25', '{}'),
                              'mergeAdjacent', (defaults -> 'mergeAdjacent') || coalesce(options -> 'mergeAdjacent', '{}'));
    -- Numbers: each with its least (and greatest) value, whole or not.
    SELECT format('search: option %s must be %s, not %s', n.name,
                  CASE WHEN n.whole THEN 'a whole number ' ELSE 'a number ' END
                  || CASE WHEN n.greatest IS NULL THEN format('of at least %s', n.least)
                          ELSE format('from %s to %s', n.least, n.greatest) END,
                  merged #> n.path)
      INTO bad
    FROM (VALUES ('bm25Weight', '{bm25Weight}'::text[], 0, NULL::numeric, false),
                 ('vectorWeight', '{vectorWeight}', 0, NULL, false),
                 ('graphWeight', '{graphWeight}', 0, NULL, false),
                 ('namesWeight', '{namesWeight}', 0, NULL, false),
                 ('filesWeight', '{filesWeight}', 0, NULL, false),
                 ('retrieveTopK', '{retrieveTopK}', 1, 1000, true),
                 ('perFile', '{perFile}', 1, NULL, true),
                 ('rrf.k', '{rrf,k}', 1, NULL, true),
                 ('bm25.k1', '{bm25,k1}', 0, NULL, false),
                 ('bm25.b', '{bm25,b}', 0, 1, false),
                 ('bm25.neighbours', '{bm25,neighbours}', 0, 10, true),
                 ('bm25.neighbourShare', '{bm25,neighbourShare}', 0, 1, false),
                 ('bm25.pageWeight', '{bm25,pageWeight}', 0, NULL, false),
                 ('bm25.phraseWeight', '{bm25,phraseWeight}', 0, NULL, false),
                 ('bm25.proximity', '{bm25,proximity}', 0, 100, false),
                 ('mergeAdjacent.maxTokens', '{mergeAdjacent,maxTokens}', 1, NULL, true)) AS n(name, path, least, greatest, whole)
    WHERE CASE WHEN jsonb_typeof(merged #> n.path) <> 'number' THEN true
               ELSE (merged #>> n.path)::numeric < n.least
                    OR (merged #>> n.path)::numeric > coalesce(n.greatest, 'infinity'::numeric)
                    OR (n.whole AND (merged #>> n.path)::numeric % 1 <> 0) END
    LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION '%', bad USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF merged ->> 'fusion' IS NULL OR merged ->> 'fusion' NOT IN ('rrf', 'scores') THEN
        RAISE EXCEPTION 'search: option fusion must be "rrf" or "scores", not %', merged -> 'fusion'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT format('search: option %s must be true or false, not %s', b.name, merged #> b.path) INTO bad
    FROM (VALUES ('includeTests', '{includeTests}'::text[]), ('mergeAdjacent.documents', '{mergeAdjacent,documents}'),
                 ('mergeAdjacent.code', '{mergeAdjacent,code}')) AS b(name, path)
    WHERE jsonb_typeof(merged #> b.path) <> 'boolean'
    LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION '%', bad USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jsonb_typeof(merged -> 'model') NOT IN ('string', 'null') THEN
        RAISE EXCEPTION 'search: option model must name an embedding model (rag.status() lists them), not %',
            merged -> 'model' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM rag.ranking_priors(merged -> 'priors');  -- says which prior is wrong
    RETURN merged;
END
$$;
COMMENT ON FUNCTION rag.search_options(jsonb) IS
    'Every option of rag.search with its default (rag.search_options() shows them), overridden by options: fusion, bm25Weight, vectorWeight, graphWeight, namesWeight, filesWeight, retrieveTopK, perFile, priors (rag.ranking_priors), includeTests, model, rrf.k, bm25.k1, bm25.b, bm25.neighbours, bm25.neighbourShare (a document chunk''s BM25 over its neighbours), bm25.pageWeight, bm25.phraseWeight, bm25.proximity (and its page''s BM25, the query''s word pairs it holds, its words standing close), mergeAdjacent.documents, mergeAdjacent.code, mergeAdjacent.maxTokens (hits next to each other in a file as one hit). An unknown key or a value out of range is an error naming it.';

-- ---------------------------------------------------------------------------
-- _filter_values: one filter of rag.search as an array (NULL: not given)
CREATE OR REPLACE FUNCTION rag._filter_values(
    filters jsonb,
    name    text
)
RETURNS text[]
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    IF coalesce(jsonb_typeof(filters -> name), 'null') = 'null' THEN
        RETURN NULL;
    END IF;
    CASE jsonb_typeof(filters -> name)
        WHEN 'string' THEN
            RETURN ARRAY[filters ->> name];
        WHEN 'array' THEN
            IF EXISTS (SELECT 1 FROM jsonb_array_elements(filters -> name) AS e WHERE jsonb_typeof(e) <> 'string') THEN
                RAISE EXCEPTION 'search: filter % must hold strings only, not %', name, filters -> name
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            RETURN ARRAY(SELECT jsonb_array_elements_text(filters -> name));
        ELSE
            RAISE EXCEPTION 'search: filter % must be a string or an array of strings, not %', name, filters -> name
                USING ERRCODE = 'invalid_parameter_value';
    END CASE;
END
$$;
COMMENT ON FUNCTION rag._filter_values(jsonb, text) IS
    'Private: the filter name of rag.search''s filters as an array (a string is one value; NULL when not given).';

-- ---------------------------------------------------------------------------
-- _search_notice: what a search found out on the way, said once
CREATE OR REPLACE FUNCTION rag._search_notice(
    message text,
    hint    text DEFAULT NULL  -- the SQL rendering of a rag.hints.Hint
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    IF hint IS NULL THEN
        RAISE NOTICE 'search: %', message;
    ELSE
        RAISE NOTICE 'search: %', message USING HINT = hint;
    END IF;
END
$$;
COMMENT ON FUNCTION rag._search_notice(text, text) IS
    'Private: a NOTICE ''search: message'' (with hint): how rag.search tells psql and the Python front ends what it found on the way.';

-- ---------------------------------------------------------------------------
-- search
CREATE OR REPLACE FUNCTION rag.search(
    query           text,
    query_embedding vector DEFAULT NULL,  -- NULL: a stored embedding of this query text, else keywords alone
    top_k           integer DEFAULT 10,
    filters         jsonb DEFAULT NULL,   -- {"sources": [...], "types": [...], "languages": [...], "pathPrefix": "src/"}
    options         jsonb DEFAULT NULL    -- tuning knobs: rag.search_options
)
RETURNS TABLE (
    chunk_id        bigint,
    source_name     text,
    path            text,
    source_type     text,
    language        text,
    start_line      integer,
    end_line        integer,
    fqn             text,
    header_path     text,
    page_start      integer,
    page_end        integer,
    content         text,
    metadata        jsonb,
    absolute_path   text,   -- a local source's file as a user opens it
    url             text,   -- a Confluence page's web address
    contextual_text text,   -- what an LLM wrote to situate the chunk (indexing.context: llm)
    bm25_score      double precision,
    bm25_rank       integer,
    vector_score    double precision,
    vector_rank     integer,
    score           double precision,
    fusion          text    -- how score was fused: rrf | scores
)
LANGUAGE plpgsql
VOLATILE  -- stores the query's embedding; the vector arm sets hnsw.* for its transaction
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
DECLARE
    opts         jsonb := rag.search_options(search.options);
    q            rag.parsed_query := rag.parse_query(search.query);  -- read once: every step reads q
    query_vector vector := search.query_embedding;
    vector_model text := opts ->> 'model';
    sources      text[];
    model_languages text[];   -- what vector_model reads (NULL: any)
    readable     double precision;
    merging      boolean;   -- adjacent hits as one (options mergeAdjacent)
    bad          text;
BEGIN
    IF (query IS NULL OR btrim(query) = '') AND query_embedding IS NULL THEN
        RAISE EXCEPTION 'search: query is empty; give some words to search for'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF top_k IS NULL OR top_k < 1 OR top_k > 1000 THEN
        RAISE EXCEPTION 'search: top_k must be between 1 and 1000, not %', coalesce(top_k::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF filters IS NOT NULL AND jsonb_typeof(filters) <> 'object' THEN
        RAISE EXCEPTION 'search: filters must be a JSON object such as {"sources": ["docs"]}, not %', filters
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT string_agg(quote_literal(k), ', ') INTO bad FROM jsonb_object_keys(coalesce(filters, '{}')) AS k
    WHERE k NOT IN ('sources', 'types', 'languages', 'pathPrefix');
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'search: unknown filter %; filters: sources, types, languages, pathPrefix', bad
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jsonb_typeof(filters -> 'pathPrefix') NOT IN ('string', 'null') THEN
        RAISE EXCEPTION 'search: filter pathPrefix must be a string such as "src/", not %', filters -> 'pathPrefix'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    sources := rag._filter_values(filters, 'sources');

    IF query_vector IS NULL AND (opts ->> 'vectorWeight')::double precision > 0 THEN
        -- No embedding given: the one a client stored for this very text, if any.
        SELECT qe.embedding, qe.model INTO query_vector, vector_model
        FROM rag.query_embeddings qe
        WHERE qe.query_hash = md5(search.query) AND (opts ->> 'model' IS NULL OR qe.model = opts ->> 'model')
          AND rag.has_model(qe.model)
        ORDER BY qe.used_at DESC LIMIT 1;
    ELSIF query_vector IS NOT NULL AND vector_model IS NULL THEN
        SELECT m.model INTO vector_model FROM rag.embedding_models m
        WHERE m.dimensions = vector_dims(query_vector)
        ORDER BY (SELECT count(*) FROM rag.embeddings e WHERE e.model = m.model) DESC, m.model
        LIMIT 1;
        IF vector_model IS NULL THEN
            RAISE EXCEPTION 'search: no stored embeddings have % dimensions like query_embedding; models: %',
                vector_dims(query_vector),
                coalesce((SELECT string_agg(format('%s (%s)', m.model, m.dimensions), ', ')
                          FROM rag.embedding_models m), 'none')
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    IF query_vector IS NOT NULL THEN
        -- A hybrid search: the vector arm counts as much as the model can read the query
        -- (an English-only model adds nothing to a Russian question's keywords).
        model_languages := (SELECT m.languages FROM rag.embedding_models m WHERE m.model = vector_model);
        readable := CASE WHEN (opts ->> 'bm25Weight')::double precision > 0
                         THEN rag._readable_share(q.scripts, model_languages) ELSE 1 END;
        IF readable <= 0 THEN
            PERFORM rag._search_notice(format('the embedding model %s reads only %s, so this query was searched '
                                              'by keywords alone (no vector arm)', vector_model,
                                              array_to_string(model_languages, ', ')),
                                       'set a multilingual embedding model to search them by meaning');
            query_vector := NULL;
        ELSIF NOT rag.has_model(vector_model) THEN
            PERFORM rag._search_notice(format('no vectors of the embedding model %s are stored, so this answer '
                                              'is keyword-only%s', vector_model,
                                              ' (texts in languages other than ' || array_to_string(model_languages, ', ')
                                              || ' are never embedded with it)'),
                                       'index again (rag index --all) to embed with it');
            query_vector := NULL;
        ELSIF sources IS NOT NULL AND NOT rag.sources_have_vectors(vector_model, sources) THEN
            PERFORM rag._search_notice(format('the sources searched (%s) have no vectors of the embedding model '
                                              '%s, so this answer is keyword-only; index them again to embed them',
                                              array_to_string(sources, ', '), vector_model));
            query_vector := NULL;
        ELSE
            IF readable < 1 THEN
                PERFORM rag._search_notice(format('the embedding model %s reads only %s, so the vector arm counts '
                                                  '%s%% for this query (the share of its words the model reads)',
                                                  vector_model, array_to_string(model_languages, ', '),
                                                  round(100 * readable)),
                                           'set a multilingual embedding model to search them by meaning');
            END IF;
            opts := jsonb_set(opts, '{vectorWeight}', to_jsonb((opts ->> 'vectorWeight')::double precision * readable));
            -- Kept for psql's later rag.search(query) (not on a replica or in a read-only session).
            IF search.query_embedding IS NOT NULL AND current_setting('transaction_read_only') = 'off' THEN
                PERFORM rag.remember_query_embedding(vector_model, search.query, query_vector);
            END IF;
        END IF;
    END IF;
    IF query_vector IS NULL THEN
        opts := jsonb_set(opts, '{vectorWeight}', '0');
    END IF;

    -- Hits next to each other in a file become one (rag._merged_places); _hybrid_search
    -- then ranks more than top_k out of the same candidates: each merge frees a place.
    merging := (opts #>> '{mergeAdjacent,documents}')::boolean OR (opts #>> '{mergeAdjacent,code}')::boolean;
    RETURN QUERY
    WITH ranked AS MATERIALIZED (
        SELECT r.chunk_id, r.bm25_score, r.bm25_rank, r.vector_score, r.vector_rank, r.score, r.ordinality
        FROM rag._hybrid_search(q, query_vector, vector_model, search.top_k, sources,
                                rag._filter_values(filters, 'types'), rag._filter_values(filters, 'languages'),
                                filters ->> 'pathPrefix', opts) WITH ORDINALITY AS r
    ),
    placed AS (
        SELECT m.place::bigint AS place, m.chunk_id, m.members
        FROM rag._merged_places((SELECT array_agg(r.chunk_id ORDER BY r.ordinality) FROM ranked r), search.top_k,
                                (opts #>> '{mergeAdjacent,documents}')::boolean,
                                (opts #>> '{mergeAdjacent,code}')::boolean,
                                (opts #>> '{mergeAdjacent,maxTokens}')::integer) m
        WHERE merging
        UNION ALL
        SELECT r.ordinality, r.chunk_id, NULL FROM ranked r WHERE NOT merging
    )
    SELECT h.chunk_id, h.source_name, h.path, h.source_type, h.language, h.start_line, h.end_line, h.fqn,
           h.header_path, h.page_start, h.page_end, h.content, h.metadata, h.absolute_path, h.url,
           h.contextual_text, h.bm25_score, h.bm25_rank, h.vector_score, h.vector_rank, h.score, opts ->> 'fusion'
    FROM (SELECT hr.chunk_id, hr.source_name, hr.path, hr.source_type, hr.language,
                 coalesce(mh.start_line, hr.start_line) AS start_line, coalesce(mh.end_line, hr.end_line) AS end_line,
                 hr.fqn, hr.header_path, coalesce(mh.page_start, hr.page_start) AS page_start,
                 coalesce(mh.page_end, hr.page_end) AS page_end, coalesce(mh.content, hr.content) AS content,
                 hr.metadata || coalesce(mh.metadata, '{}') AS metadata, hr.absolute_path, hr.url, hr.contextual_text,
                 r.bm25_score, r.bm25_rank, r.vector_score, r.vector_rank, r.score, p.place,
                 -- a folder indexed twice (as a source and inside another): its lines shown once
                 row_number() OVER (PARTITION BY coalesce(hr.absolute_path, hr.chunk_id::text),
                                                 coalesce(mh.start_line, hr.start_line),
                                                 coalesce(mh.end_line, hr.end_line) ORDER BY p.place) AS copy
          FROM placed p
          JOIN ranked r ON r.chunk_id = p.chunk_id
          JOIN rag._hit_rows hr ON hr.chunk_id = p.chunk_id
          LEFT JOIN LATERAL (SELECT m.* FROM rag._merged_hit(p.members) m WHERE p.members IS NOT NULL) mh ON true) h
    WHERE h.copy = 1
    ORDER BY h.place;
    IF NOT FOUND AND NOT EXISTS (SELECT 1 FROM rag.sources) THEN
        PERFORM rag._search_notice('no sources indexed yet', 'try: rag index --path . --name my-project');
    END IF;
END
$$;
COMMENT ON FUNCTION rag.search(text, vector, integer, jsonb, jsonb) IS
    'Hybrid search (rag._hybrid_search: BM25, vector, names and files arms fused by weighted RRF or scaled scores, the code graph lift, the ranking step), best first. filters: {"sources", "types", "languages": string or array, "pathPrefix": string}; options: rag.search_options. '
    'Without query_embedding it uses a stored embedding of the same query text, else keywords alone; with one of a model (options model) whose vectors are stored it keeps it for later calls. The vector arm''s weight is scaled by the share of the query written in the model''s languages. '
    'Hits next to each other in a file come back as one hit of their lines (options mergeAdjacent: rag._merged_places, rag._merged_hit; chunk_id, scores and ranks the best one''s, metadata.mergedChunks the chunks it spans). What it finds on the way is a NOTICE ''search: ...''.';
