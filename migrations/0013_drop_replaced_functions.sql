-- Functions whose signature changed since they were installed: CREATE OR
-- REPLACE in sql/ cannot change a return type or drop a parameter, and an
-- added parameter would make a second function beside the old one. So the old
-- versions go here, once; sql/ (applied after the migrations) creates the new.

-- Release 0.1.0: list_sources grew path_prefix (and columns), search grew
-- parameters, plan_files grew a scope, finish_run returns the chunk total.
DROP FUNCTION IF EXISTS rag.list_sources(text, text, integer);
DROP FUNCTION IF EXISTS rag.search(text, vector, integer, text[], text[], text[], text, double precision,
                                   double precision, integer, integer, text, double precision, double precision);
DROP FUNCTION IF EXISTS rag.plan_files(bigint, jsonb, boolean);
DO $$
BEGIN
    IF (SELECT p.prorettype FROM pg_proc p
        WHERE p.oid = to_regprocedure('rag.finish_run(bigint, text, jsonb, jsonb)')) = 'void'::regtype THEN
        DROP FUNCTION rag.finish_run(bigint, text, jsonb, jsonb);
    END IF;
END
$$;
