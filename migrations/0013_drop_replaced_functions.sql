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

-- Changed since (databases installed from a later commit have these): the
-- graph's shorthands take dynamic as rag.traverse does, which returns the
-- source's name; one _source_ids for search and graph, naming its caller in
-- its errors; read_chunk and read_file_range return one type, rag.excerpt;
-- search takes the ranking step's priors, per_file and include_tests.
DROP FUNCTION IF EXISTS rag.search(text, vector, integer, text[], text[], text[], text, double precision,
                                   double precision, integer, integer, text, double precision, double precision, text);
DROP FUNCTION IF EXISTS rag.search(text, vector, integer, text[], text[], text[], text, double precision,
                                   double precision, integer, integer, text, double precision, double precision, text,
                                   double precision);
DROP FUNCTION IF EXISTS rag.search(text, vector, integer, text[], text[], text[], text, double precision,
                                   double precision, integer, integer, text, double precision, double precision, text,
                                   double precision, double precision);
DROP FUNCTION IF EXISTS rag.callers(text, integer, text[], integer);
DROP FUNCTION IF EXISTS rag.callees(text, integer, text[], integer);
DROP FUNCTION IF EXISTS rag.subtypes(text, integer, text[], integer);
DROP FUNCTION IF EXISTS rag.supertypes(text, integer, text[], integer);
DROP FUNCTION IF EXISTS rag._source_ids(text[]);
DROP FUNCTION IF EXISTS rag._graph_source_ids(text[]);
DROP FUNCTION IF EXISTS rag.read_chunk(bigint, integer);
DROP FUNCTION IF EXISTS rag.read_file_range(text, text, integer, integer, text, integer);

ALTER TYPE rag.graph_row ADD ATTRIBUTE source text;  -- a traversal stays in its start's source

-- A stretch of a stored file (or chunk) as read back.
CREATE TYPE rag.excerpt AS (
    source_name text,
    path        text,
    source_type text,
    language    text,
    start_line  integer,
    end_line    integer,
    total_lines integer,
    content     text,
    truncated   boolean,   -- cut at 2,000 lines or 200,000 characters
    metadata    jsonb      -- the chunk's (read_chunk); NULL for a file range
);
