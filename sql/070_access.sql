-- Access for a shared server (rag serve): the roles rag_reader and rag_writer,
-- the sources each reader role may read, and the row-level security that makes
-- PostgreSQL, not Python, hide every other source's rows from a reader.
--
-- Invariants, stated once:
-- * The owner of the schema (who runs rag init and rag index) and superusers are
--   not subject to row-level security: nothing changes for a one-person setup.
-- * A reader role sees a row of a source's table only when rag.source_grants
--   names that source (or '*') for current_user (the role a request runs as:
--   rag serve does SET ROLE per request) or a role it is a member of (a person's
--   login role granted a reader role). A role without grants sees nothing.
-- * Every rag.* function is SECURITY INVOKER, and every view security_invoker, so
--   a search or a read-back through them sees exactly what a SELECT would.
-- * rag_reader may execute the read and search functions only; rag_writer every
--   function, and reads and writes every row.

-- ---------------------------------------------------------------------------
-- _granted_to_me: whether the role a statement runs as is, or is a member of, reader
CREATE OR REPLACE FUNCTION rag._granted_to_me(
    reader name
)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- By oid: a role dropped since its grant is no member of anything (by name it would be an error).
    SELECT coalesce(pg_has_role(current_user, (SELECT r.oid FROM pg_roles r WHERE r.rolname = reader),
                                'USAGE'), false)
$$;
COMMENT ON FUNCTION rag._granted_to_me(name) IS
    'Whether current_user is reader or a member of it (a login role of a person granted a reader role).';

-- ---------------------------------------------------------------------------
-- _granted_tables: the tables whose rows belong to a source, with the policy's test
CREATE OR REPLACE FUNCTION rag._granted_tables()
RETURNS TABLE (
    table_name text,
    visible    text  -- the USING expression of the reader policy
)
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
    VALUES
        ('sources', 'EXISTS (SELECT 1 FROM rag.source_grants g WHERE g.source_name IN (''*'', sources.name) '
                    'AND rag._granted_to_me(g.role_name))'),
        ('source_grants', 'rag._granted_to_me(role_name)'),
        ('files', 'source_id IN (SELECT s.id FROM rag.sources s)'),
        ('chunks', 'source_id IN (SELECT s.id FROM rag.sources s)'),
        ('passages', 'source_id IN (SELECT s.id FROM rag.sources s)'),
        ('postings', 'chunk_id IN (SELECT c.id FROM rag.chunks c)'),
        ('symbols', 'source_id IN (SELECT s.id FROM rag.sources s)'),
        ('refs', 'source_id IN (SELECT s.id FROM rag.sources s)'),
        ('code_modules', 'source_id IN (SELECT s.id FROM rag.sources s)'),
        ('ref_resolution', 'source_id IN (SELECT s.id FROM rag.sources s)'),
        ('ref_candidates', 'source_id IN (SELECT s.id FROM rag.sources s)'),
        ('graph_sources', 'source_id IN (SELECT s.id FROM rag.sources s)'),
        ('graph_dirty_names', 'source_id IN (SELECT s.id FROM rag.sources s)'),
        ('index_runs', 'source_id IN (SELECT s.id FROM rag.sources s)'),
        ('file_vectors', 'file_id IN (SELECT f.id FROM rag.files f)'),
        ('contextual_texts', 'chunk_hash IN (SELECT c.content_hash FROM rag.chunks c)')
$$;
COMMENT ON FUNCTION rag._granted_tables() IS
    'The tables rag.create_roles() puts row-level security on, each with the test a reader''s row must pass.';

-- ---------------------------------------------------------------------------
-- _reader_functions: the volatile functions a search needs (the stable ones are all granted)
CREATE OR REPLACE FUNCTION rag._reader_functions()
RETURNS text[]
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT ARRAY['search', '_hybrid_search', '_search_notice', 'vector_search', '_fused_candidates',
                 '_file_lifts', '_nearest_files', 'remember_query_embedding', 'graph_awaiting_rebuild']
$$;
COMMENT ON FUNCTION rag._reader_functions() IS
    'The VOLATILE rag.* functions rag_reader may execute (searches); every STABLE or IMMUTABLE one is granted too.';

-- ---------------------------------------------------------------------------
-- create_roles
CREATE OR REPLACE FUNCTION rag.create_roles()
RETURNS text[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    made    text[] := '{}';
    role    text;
    tbl     record;
    fn      record;
BEGIN
    FOREACH role IN ARRAY ARRAY['rag_reader', 'rag_writer'] LOOP
        IF to_regrole(role) IS NULL THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', role);
            EXCEPTION WHEN insufficient_privilege THEN
                RAISE EXCEPTION 'create_roles: % may not create role %; run it (or rag init --roles) as a '
                                'role with CREATEROLE', current_user, role
                    USING ERRCODE = 'insufficient_privilege';
            END;
            made := made || role;
        END IF;
    END LOOP;

    EXECUTE 'GRANT USAGE ON SCHEMA rag TO rag_reader, rag_writer';
    -- Reading: every table (row-level security below), the query cache without its texts.
    EXECUTE 'GRANT SELECT ON ALL TABLES IN SCHEMA rag TO rag_reader';
    EXECUTE 'REVOKE ALL ON rag.query_embeddings FROM rag_reader';
    EXECUTE 'GRANT SELECT (model, query_hash, embedding, used_at), INSERT (model, query_hash, query, embedding), '
            'UPDATE (embedding, used_at) ON rag.query_embeddings TO rag_reader';
    EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA rag TO rag_writer';
    EXECUTE 'GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA rag TO rag_writer';

    -- Functions: nobody by default (PostgreSQL grants EXECUTE to PUBLIC), readers the reading ones.
    EXECUTE 'REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA rag FROM PUBLIC';
    EXECUTE 'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA rag TO rag_writer';
    FOR fn IN
        SELECT p.oid::regprocedure AS signature FROM pg_proc p
        WHERE p.pronamespace = 'rag'::regnamespace
          AND (p.provolatile <> 'v' OR p.proname = ANY (rag._reader_functions()))
          AND p.proname NOT IN ('create_roles', 'grant_sources')
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO rag_reader', fn.signature);
    END LOOP;

    -- Views show what their caller may see, not what their owner may.
    FOR tbl IN SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'rag'::regnamespace AND c.relkind = 'v'
    LOOP
        EXECUTE format('ALTER VIEW rag.%I SET (security_invoker = true)', tbl.relname);
    END LOOP;

    -- Rows: a reader sees its granted sources' rows; a writer every row.
    FOR tbl IN SELECT * FROM rag._granted_tables() LOOP
        EXECUTE format('ALTER TABLE rag.%I ENABLE ROW LEVEL SECURITY', tbl.table_name);
        EXECUTE format('DROP POLICY IF EXISTS granted_sources ON rag.%I', tbl.table_name);
        EXECUTE format('CREATE POLICY granted_sources ON rag.%I FOR SELECT USING (%s)', tbl.table_name, tbl.visible);
        EXECUTE format('DROP POLICY IF EXISTS writer ON rag.%I', tbl.table_name);
        EXECUTE format('CREATE POLICY writer ON rag.%I TO rag_writer USING (true) WITH CHECK (true)',
                       tbl.table_name);
    END LOOP;
    RETURN made;
END;
$$;
COMMENT ON FUNCTION rag.create_roles() IS
    'Creates the roles rag_reader and rag_writer when missing (needs CREATEROLE) and (re)applies their '
    'privileges and the row-level security that shows a reader only its granted sources; returns the roles made.';

-- ---------------------------------------------------------------------------
-- grant_sources
CREATE OR REPLACE FUNCTION rag.grant_sources(
    reader  text,
    sources text[] DEFAULT NULL  -- NULL: every source
)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    IF reader IS NULL OR reader !~ '^[a-z_][a-z0-9_]{0,62}$' THEN
        RAISE EXCEPTION 'grant_sources: reader must be a lower-case role name (letters, digits, _), not %',
            coalesce(quote_literal(reader), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF reader IN ('rag_reader', 'rag_writer') THEN
        RAISE EXCEPTION 'grant_sources: reader % is a group; name a role of one reader', reader
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF to_regrole('rag_reader') IS NULL THEN
        RAISE EXCEPTION 'grant_sources: the role rag_reader does not exist; run SELECT rag.create_roles() first'
            USING ERRCODE = 'undefined_object';
    END IF;
    IF to_regrole(reader) IS NULL THEN
        EXECUTE format('CREATE ROLE %I NOLOGIN IN ROLE rag_reader', reader);
    ELSIF NOT pg_has_role(reader, 'rag_reader', 'MEMBER') THEN
        EXECUTE format('GRANT rag_reader TO %I', reader);
    END IF;
    -- The caller must be able to SET ROLE to it (a superuser always can).
    -- (PostgreSQL 16 makes the creator of a role a member with ADMIN only, which cannot SET ROLE)
    IF NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = session_user)
       AND NOT pg_has_role(session_user, reader,
                           CASE WHEN current_setting('server_version_num')::integer >= 160000 THEN 'SET'
                                ELSE 'MEMBER' END) THEN
        EXECUTE format('GRANT %I TO %I', reader, session_user)
            || CASE WHEN current_setting('server_version_num')::integer >= 160000 THEN ' WITH SET TRUE'
                    ELSE '' END;
    END IF;
    DELETE FROM rag.source_grants g WHERE g.role_name = reader;
    INSERT INTO rag.source_grants (role_name, source_name)
    SELECT reader, s FROM unnest(coalesce(sources, ARRAY['*'])) s WHERE s IS NOT NULL
    ON CONFLICT DO NOTHING;
    RETURN cardinality(coalesce(sources, ARRAY['*']));
END;
$$;
COMMENT ON FUNCTION rag.grant_sources(text, text[]) IS
    'Makes reader (a role in rag_reader, created when missing) able to read exactly these sources by name '
    '(NULL: all of them), replacing its earlier grants; returns how many names it was granted.';
