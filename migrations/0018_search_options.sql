-- rag.search takes five parameters (query, query_embedding, top_k, filters,
-- options jsonb; sql/038_search.sql), and a query is parsed once into a
-- rag.parsed_query that its steps read: every older signature of these goes,
-- whatever release made it (sql/ creates the new ones after the migrations;
-- _ranked first, as its body names _named_definitions). Its hits carry more
-- columns, so the view behind them is made anew by sql/ too.
DO $$
DECLARE
    fn regprocedure;
BEGIN
    FOR fn IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = 'rag'::regnamespace
                AND p.proname IN ('search', '_ranked', '_named_definitions', '_fused_candidates', '_name_terms',
                                  '_hybrid_search')
              ORDER BY p.proname = '_named_definitions'
    LOOP
        EXECUTE format('DROP FUNCTION %s', fn);
    END LOOP;
END
$$;

-- A search query read once (rag.parse_query).
CREATE TYPE rag.parsed_query AS (
    text           text,     -- the query, trimmed
    terms          text[],   -- its keyword terms, stop words dropped (rag.query_terms)
    keyword_terms  text[],   -- what the BM25 arm looks up: the terms and their stem: terms
    name_terms     text[],   -- what the names arm looks up: name: terms
    identifier     boolean,  -- one identifier, possibly qualified: it names a definition
    names          jsonb,    -- the definitions it may name: [{"module", "fqn"}]
    asks_for_tests boolean,  -- tests at full weight
    asks_for_prose boolean,  -- documents and release notes at full weight
    scripts        jsonb     -- its words with a letter, counted by script slot (rag._script_slot)
);
DROP VIEW IF EXISTS rag._hit_rows;

-- The languages an embedding model reads (NULL: any), which rag.search scales
-- the vector arm by; written by each index run. Models stored before: the
-- bundled all-MiniLM-L6-v2 reads English only.
ALTER TABLE rag.embedding_models ADD COLUMN languages text[];
UPDATE rag.embedding_models SET languages = ARRAY['english'] WHERE model LIKE 'local:all-MiniLM-L6-v2@%';
