-- Where pgvector lives. Every function above names `public` in its search path,
-- where `CREATE EXTENSION vector` puts the extension by default. An administrator
-- may have put it in another schema (managed services use `extensions`): then each
-- function's search path names that schema too, or `<=>` and `vector` would not
-- resolve inside them. Runs on every `rag init`, after the functions are replaced.
DO $$
DECLARE
    vector_schema text := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
                           WHERE e.extname = 'vector');
    fn regprocedure;
BEGIN
    IF vector_schema IS NULL OR vector_schema IN ('public', 'pg_catalog', 'rag') THEN
        RETURN;
    END IF;
    FOR fn IN
        SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.pronamespace = 'rag'::regnamespace
          AND 'search_path=pg_catalog, rag, public' = ANY (p.proconfig)
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, rag, %I, public', fn, vector_schema);
    END LOOP;
END
$$;
