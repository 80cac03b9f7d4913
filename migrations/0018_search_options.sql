-- rag.search takes five parameters (query, query_embedding, top_k, filters,
-- options jsonb; sql/038_search.sql): every older signature goes, whatever
-- release made it (sql/ creates the new one after the migrations). Its hits
-- carry more columns, so the view behind them is made anew by sql/ too.
DO $$
DECLARE
    fn regprocedure;
BEGIN
    FOR fn IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = 'rag'::regnamespace AND p.proname = 'search'
    LOOP
        EXECUTE format('DROP FUNCTION %s', fn);
    END LOOP;
END
$$;
DROP VIEW IF EXISTS rag._hit_rows;

-- The languages an embedding model reads (NULL: any), which rag.search scales
-- the vector arm by; written by each index run. Models stored before: the
-- bundled all-MiniLM-L6-v2 reads English only.
ALTER TABLE rag.embedding_models ADD COLUMN languages text[];
UPDATE rag.embedding_models SET languages = ARRAY['english'] WHERE model LIKE 'local:all-MiniLM-L6-v2@%';
