-- The code graph, storing: a batch's symbols and references, the names they
-- make dirty, forgetting a file's or a source's graph. Design notes:
-- sql/GRAPH.md; tables: migrations/0005_code_graph.sql and later.

-- ---------------------------------------------------------------------------
-- _replace_graph: store the symbols and references of a replace_files batch
CREATE OR REPLACE FUNCTION rag._replace_graph(
    target_source_id bigint,
    file_batch jsonb,
    stored_ids bigint[]  -- the batch's files stored before it: only they may have graph rows
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    noting     boolean := rag._names_matter(target_source_id);
    before     jsonb;  -- the files' re-exports before the change
    symbol_ids regclass := pg_get_serial_sequence('rag.symbols', 'id');  -- (looked up once, not per row)
BEGIN
    IF noting THEN
        PERFORM rag._note_bases(target_source_id, stored_ids, file_batch);
    END IF;
    -- (a first index, or new files: nothing to forget, and deleting
    -- nothing cost a fifth of storing Django's graph)
    IF cardinality(stored_ids) > 0 THEN
        IF noting THEN
            before := rag._reexports(stored_ids);
        END IF;
        PERFORM rag._forget_files_graph(target_source_id, stored_ids);
    END IF;

    -- A file's symbol ids are taken first, as an array: a parent and a
    -- reference's enclosing definition are its element at their position
    -- in the file's list (no join).
    WITH batch AS MATERIALIZED (
        SELECT f.id AS file_id, b.path, b.graph,
               ARRAY(SELECT nextval(symbol_ids)
                     FROM generate_series(1, jsonb_array_length(b.graph->'symbols'))) AS ids
        FROM jsonb_to_recordset(file_batch) AS b(path text, graph jsonb)
        JOIN rag.files f ON f.source_id = target_source_id AND f.path = b.path
        WHERE jsonb_typeof(b.graph) = 'object'
    ),
    defs AS MATERIALIZED (
        SELECT g.ids[e.ordinality] AS id, g.file_id, e.value->>0 AS fqn, split_part(e.value->>0, '.', -1) AS name,
               e.value->>1 AS kind, (e.value->>2)::integer AS start_line, (e.value->>3)::integer AS end_line,
               e.value->>4 AS signature, g.ids[(e.value->>5)::integer + 1] AS parent_id
        FROM batch g
        CROSS JOIN LATERAL jsonb_array_elements(g.graph->'symbols') WITH ORDINALITY AS e(value, ordinality)
    ),
    symbols_added AS (
        INSERT INTO rag.symbols (id, source_id, file_id, fqn, name, owner, parent_id, kind,
                                 start_line, end_line, signature)
        OVERRIDING SYSTEM VALUE
        SELECT d.id, target_source_id, d.file_id, d.fqn, d.name,
               CASE WHEN strpos(d.fqn, '.') > 0 THEN split_part(d.fqn, '.', -2) END,
               d.parent_id, d.kind, d.start_line, d.end_line, d.signature
        FROM defs d
    ),
    names_added AS (
        INSERT INTO rag.graph_dirty_names (source_id, name)
        SELECT DISTINCT target_source_id, d.name FROM defs d WHERE noting
    ),
    refs_added AS (
        -- (a field a reference leaves out is null, empty or false)
        INSERT INTO rag.refs (source_id, file_id, from_id, kind, name, line, owner, keys,
                              target_stems, target_fqns, self_class, inherited_only, imported,
                              explicit_class)
        SELECT target_source_id, g.file_id, g.ids[r.scope + 1], r.kind, r.name, r.line, r.owner,
               coalesce(r.keys, '{}'), coalesce(r.stems, '{}'), coalesce(r.fqns, '{}'), r.self,
               coalesce(r.super, false), coalesce(r.imported, false), coalesce(r.explicit, false)
        FROM batch g
        CROSS JOIN LATERAL jsonb_to_recordset(g.graph->'refs') AS r(
            kind text, name text, line integer, scope integer, owner text, keys text[], stems text[],
            fqns text[], self text, super boolean, imported boolean, explicit boolean)
    )
    -- Every tail of every stem the file is imported as.
    INSERT INTO rag.code_modules (source_id, file_id, stem, full_stem, folder)
    SELECT DISTINCT ON (g.file_id, t.stem) target_source_id, g.file_id, t.stem, t.full_stem,
           coalesce(substring(g.path FROM '^(.*)/[^/]*$'), '')
    FROM batch g
    CROSS JOIN LATERAL jsonb_array_elements_text(g.graph->'modules') AS m(stem)
    CROSS JOIN LATERAL (
        SELECT array_to_string(p.parts[i:], '/') AS stem, i = 1 AS full_stem
        FROM (SELECT string_to_array(m.stem, '/') AS parts) p,
             generate_series(1, cardinality(p.parts)) AS i) t
    ORDER BY g.file_id, t.stem, t.full_stem DESC;
    IF noting THEN
        PERFORM rag._note_reexports(target_source_id, before, rag._reexports(ARRAY(
            SELECT f.id FROM jsonb_to_recordset(file_batch) AS b(path text)
            JOIN rag.files f ON f.source_id = target_source_id AND f.path = b.path)));
    END IF;
END
$$;
COMMENT ON FUNCTION rag._replace_graph(bigint, jsonb, bigint[]) IS
    'Private: replaces the symbols, references and module stems of a replace_files batch (its files'' "graph": '
    '{modules, symbols: [[fqn, kind, start_line, end_line, signature, parent position]], refs: [{kind, name, line, '
    'scope, owner, keys, stems, fqns, self, super, imported, explicit}]}); stored_ids: its files stored before; the references wait for rag.resolve_refs.';

-- ---------------------------------------------------------------------------
-- _names_matter: whether changed definitions must be noted in rag.graph_dirty_names
CREATE OR REPLACE FUNCTION rag._names_matter(
    target_source_id bigint
)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- Only references resolved before may now mean something else: none
    -- until a source's first rag.resolve_refs, and its references are all
    -- pending then (Django's first index skips 36k names).
    SELECT coalesce((SELECT g.resolved_upto > 0 FROM rag.graph_sources g
                     WHERE g.source_id = target_source_id), false)
$$;
COMMENT ON FUNCTION rag._names_matter(bigint) IS
    'Private: true once the source has resolved references, whose targets changed definitions may change.';

-- ---------------------------------------------------------------------------
-- _reexports: what some files' module-level imports make theirs
CREATE OR REPLACE FUNCTION rag._reexports(
    file_ids bigint[]
)
RETURNS jsonb
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- A reference may resolve through these imports (rag._ref_candidates,
    -- import level): the name they bind (an alias, the name, or * for all)
    -- and the module they take it from.
    SELECT coalesce(jsonb_agg(jsonb_build_object('file_id', e.file_id, 'bound', coalesce(e.keys[1], e.name),
                                                 'name', e.name, 'stem', t.stem)), '[]')
    FROM rag.refs e
    CROSS JOIN LATERAL unnest(e.target_stems) AS t(stem)
    WHERE e.file_id = ANY (file_ids) AND e.kind = 'import' AND e.from_id IS NULL
$$;
COMMENT ON FUNCTION rag._reexports(bigint[]) IS
    'Private: the module-level imports of files as [{file_id, bound, name, stem}]: what references may resolve through.';

-- ---------------------------------------------------------------------------
-- _note_reexports: the names whose references re-exports that changed may redirect
CREATE OR REPLACE FUNCTION rag._note_reexports(
    target_source_id bigint,
    before jsonb,  -- rag._reexports of the files before the change
    after jsonb    -- and after it
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    names text[];  -- what the changed imports bound or passed on
BEGIN
    -- Only imports added or removed: a file that changes and keeps its
    -- imports (most edits) redirects nothing.
    WITH RECURSIVE old AS (SELECT * FROM jsonb_to_recordset(before) AS x(file_id bigint, bound text, name text, stem text)),
    new AS (SELECT * FROM jsonb_to_recordset(after) AS x(file_id bigint, bound text, name text, stem text)),
    changed AS ((SELECT * FROM old EXCEPT SELECT * FROM new) UNION (SELECT * FROM new EXCEPT SELECT * FROM old)),
    -- A changed "*" passes on what the imported module offers: its
    -- definitions, its imports, and through its own "*" imports those of
    -- further modules, as deep as rag._ref_candidates follows them.
    star (file_id, depth) AS (
        SELECT m.file_id, 1
        FROM changed c
        JOIN rag.code_modules m ON m.source_id = target_source_id AND m.stem = ltrim(c.stem, '/')
                               AND (m.full_stem OR left(c.stem, 1) <> '/')
        WHERE c.name = '*'
        UNION
        SELECT m.file_id, s.depth + 1
        FROM star s
        JOIN rag.refs e ON e.file_id = s.file_id AND e.kind = 'import' AND e.from_id IS NULL AND e.name = '*'
        CROSS JOIN LATERAL unnest(e.target_stems) AS t(stem)
        JOIN rag.code_modules m ON m.source_id = target_source_id AND m.stem = ltrim(t.stem, '/')
                               AND (m.full_stem OR left(t.stem, 1) <> '/')
        WHERE s.depth < 3
    )
    SELECT coalesce(array_agg(DISTINCT n.name), '{}') INTO names
    FROM (SELECT c.bound AS name FROM changed c WHERE c.bound <> '*'
          UNION ALL
          SELECT d.name FROM star s JOIN rag.symbols d ON d.file_id = s.file_id AND d.owner IS NULL
          UNION ALL
          SELECT coalesce(e.keys[1], e.name) FROM star s
          JOIN rag.refs e ON e.file_id = s.file_id AND e.kind = 'import' AND e.from_id IS NULL
          WHERE coalesce(e.keys[1], e.name) <> '*') n;
    IF cardinality(names) = 0 THEN
        RETURN;
    END IF;
    -- The references to those names, and the imported ones that reach
    -- through one to a member (Manager.all(): "all" through "Manager").
    INSERT INTO rag.graph_dirty_names (source_id, name)
    SELECT target_source_id, n.name FROM unnest(names) AS n(name)
    UNION
    -- (every part of every target, matched as rows: Django's 72k imported
    -- references in ~50 ms for one name or 300; `&&` per row took 240 ms for 300)
    SELECT target_source_id, r.name
    FROM rag.refs r
    CROSS JOIN LATERAL unnest(string_to_array(array_to_string(r.target_fqns, '.'), '.')) AS p(part)
    WHERE r.source_id = target_source_id AND r.imported AND p.part = ANY (names);
    -- A class whose base is one of those names may now have another base:
    -- calls reaching members through it are resolved again too (as
    -- rag._note_bases does when a class's own bases change). The members
    -- of the base as it resolves now and of any definition of the name, and
    -- of what is above them, are noted (not the class's own: its file finds them).
    PERFORM rag._note_members_above(target_source_id, ARRAY(
        SELECT x.target_id FROM rag.refs b
        JOIN rag.ref_resolution x ON x.ref_id = b.id AND x.target_id IS NOT NULL
        WHERE b.source_id = target_source_id AND b.name = ANY (names) AND b.kind IN ('inherits', 'implements')
        UNION
        SELECT s.id FROM rag.symbols s WHERE s.source_id = target_source_id AND s.name = ANY (names)));
END
$$;
COMMENT ON FUNCTION rag._note_reexports(bigint, jsonb, jsonb) IS
    'Private: notes as dirty the names bound by module-level imports that a change added or removed (for *, the names the imported module offers, a few re-export hops deep) and the names of imported references reaching through one of them to a member, so that references through them are resolved again.';

-- ---------------------------------------------------------------------------
-- _note_bases: the names whose references a change of classes' bases may redirect
CREATE OR REPLACE FUNCTION rag._note_bases(
    target_source_id bigint,
    file_ids bigint[],  -- files stored before, about to be replaced or deleted
    file_batch jsonb    -- what replaces them and any new files ([{path, graph}]); '[]' when they go
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    starts bigint[];  -- the classes whose bases went, and every class a new base may name
BEGIN
    -- A call reaching a member through a class's bases (self.f() in a
    -- subclass, x.f() with x typed) may live in a file that did not change,
    -- and the member in another: its name is not dirty. So when a class's
    -- bases change, the names of the members of every class above it, as
    -- it was and as it will be, are. Bases that stay (most edits) note nothing.
    WITH old AS MATERIALIZED (
        SELECT f.path, c.fqn, c.id AS class_id,
               concat_ws(' ', b.kind, b.name, b.keys::text, b.target_stems::text, b.target_fqns::text) AS base
        FROM rag.refs b
        JOIN rag.symbols c ON c.id = b.from_id
        JOIN rag.files f ON f.id = b.file_id
        WHERE b.file_id = ANY (file_ids) AND b.kind IN ('inherits', 'implements')
    ),
    new AS MATERIALIZED (
        SELECT g.path, g.graph->'symbols'->r.scope->>0 AS fqn, r.name,
               concat_ws(' ', r.kind, r.name, coalesce(r.keys, '{}')::text, coalesce(r.stems, '{}')::text,
                         coalesce(r.fqns, '{}')::text) AS base
        FROM jsonb_to_recordset(file_batch) AS g(path text, graph jsonb)
        CROSS JOIN LATERAL jsonb_to_recordset(g.graph->'refs') AS r(
            kind text, name text, scope integer, keys text[], stems text[], fqns text[])
        WHERE jsonb_typeof(g.graph) = 'object' AND r.kind IN ('inherits', 'implements') AND r.scope IS NOT NULL
    )
    -- (a new base is resolved later: any definition of its name)
    SELECT array_agg(DISTINCT c.id) INTO starts FROM (
        SELECT o.class_id AS id FROM old o
        WHERE NOT EXISTS (SELECT 1 FROM new n WHERE n.path = o.path AND n.fqn = o.fqn AND n.base = o.base)
        UNION ALL
        SELECT s.id FROM new n
        JOIN rag.symbols s ON s.source_id = target_source_id AND s.name = n.name
        WHERE NOT EXISTS (SELECT 1 FROM old o WHERE o.path = n.path AND o.fqn = n.fqn AND o.base = n.base)
    ) c;
    IF starts IS NOT NULL THEN
        PERFORM rag._note_members_above(target_source_id, starts);
    END IF;
END
$$;
COMMENT ON FUNCTION rag._note_bases(bigint, bigint[], jsonb) IS
    'Private: notes as dirty the names of the members of every class above a class whose bases a change adds or removes (before: as resolved; after: any definition named like a new base), so that calls reaching them through those bases are resolved again.';

-- ---------------------------------------------------------------------------
-- _note_members_above: the member names of classes and of every class above them
CREATE OR REPLACE FUNCTION rag._note_members_above(
    target_source_id bigint,
    starts bigint[]
)
RETURNS void
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
    -- (as deep as rag._base_members walks)
    WITH RECURSIVE above (class_id, depth) AS (
        SELECT s.id, 0 FROM unnest(starts) AS s(id)
        UNION
        SELECT x.target_id, a.depth + 1
        FROM above a
        JOIN rag.refs b ON b.from_id = a.class_id AND b.kind IN ('inherits', 'implements')
        JOIN rag.ref_resolution x ON x.ref_id = b.id AND x.target_id IS NOT NULL
        WHERE a.depth < 8
    )
    -- (members by fqn, anywhere in the source: a Go method is written
    -- outside its struct, often in another file of the package, a C++ one
    -- in the .cpp of a class in a .h; matched by owner first, one pass over
    -- the source's definitions however many classes ask)
    INSERT INTO rag.graph_dirty_names (source_id, name)
    SELECT DISTINCT target_source_id, m.name
    FROM (SELECT DISTINCT a.class_id FROM above a) a
    JOIN rag.symbols c ON c.id = a.class_id
    JOIN rag.symbols m ON m.source_id = target_source_id AND m.owner = split_part(c.fqn, '.', -1)
                      AND left(m.fqn, length(c.fqn) + 1) = c.fqn || '.'
$$;
COMMENT ON FUNCTION rag._note_members_above(bigint, bigint[]) IS
    'Private: notes as dirty the names of the members of the given classes and of every class above them (by resolved bases).';

-- ---------------------------------------------------------------------------
-- _forget_files_graph: the symbols, references and module stems of some files
CREATE OR REPLACE FUNCTION rag._forget_files_graph(
    target_source_id bigint,
    file_ids bigint[]
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    -- (the references' ids first: joined to rag.refs instead, a batch of 40
    -- files scanned all of Django's 83k resolutions, 17 ms instead of 1)
    ref_ids bigint[] := ARRAY(SELECT r.id FROM rag.refs r WHERE r.file_id = ANY (file_ids));
BEGIN
    IF rag._names_matter(target_source_id) THEN
        -- The names they defined, and the names references resolved to them
        -- use (an alias, a re-export's name): no resolution outlives its target.
        WITH gone AS MATERIALIZED (
            SELECT s.id, s.name FROM rag.symbols s WHERE s.file_id = ANY (file_ids)
        )
        INSERT INTO rag.graph_dirty_names (source_id, name)
        SELECT target_source_id, g.name FROM gone g
        UNION
        SELECT target_source_id, r.name
        FROM gone g
        JOIN rag.ref_resolution x ON x.target_id = g.id
        JOIN rag.refs r ON r.id = x.ref_id
        UNION
        SELECT target_source_id, r.name
        FROM gone g
        JOIN rag.ref_candidates x ON x.symbol_id = g.id
        JOIN rag.refs r ON r.id = x.ref_id;
    END IF;
    DELETE FROM rag.ref_resolution x WHERE x.ref_id = ANY (ref_ids);
    DELETE FROM rag.ref_candidates x WHERE x.ref_id = ANY (ref_ids);
    DELETE FROM rag.symbols s WHERE s.file_id = ANY (file_ids);
    DELETE FROM rag.refs r WHERE r.file_id = ANY (file_ids);
    DELETE FROM rag.code_modules m WHERE m.file_id = ANY (file_ids);
END
$$;
COMMENT ON FUNCTION rag._forget_files_graph(bigint, bigint[]) IS
    'Private: deletes the symbols, references (with their resolutions) and module stems of files about to be replaced or deleted, noting the names they defined and the names of the references resolved to them (an alias) so that those are resolved again.';

-- ---------------------------------------------------------------------------
-- _forget_graph: before files are deleted, their graph
CREATE OR REPLACE FUNCTION rag._forget_graph(
    target_source_id bigint,
    paths text[]  -- NULL: the whole source, about to be removed
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    file_ids bigint[];
BEGIN
    -- (no foreign keys: checking them cost a quarter of storing the graph,
    -- migration 0007, and a fifth of resolving it, migration 0009)
    IF paths IS NULL THEN
        DELETE FROM rag.ref_resolution x WHERE x.source_id = target_source_id;
        DELETE FROM rag.ref_candidates x WHERE x.source_id = target_source_id;
        DELETE FROM rag.symbols s WHERE s.source_id = target_source_id;
        DELETE FROM rag.refs r WHERE r.source_id = target_source_id;
        DELETE FROM rag.code_modules m WHERE m.source_id = target_source_id;
        RETURN;
    END IF;
    file_ids := ARRAY(SELECT f.id FROM rag.files f WHERE f.source_id = target_source_id AND f.path = ANY (paths));
    IF rag._names_matter(target_source_id) THEN
        PERFORM rag._note_reexports(target_source_id, rag._reexports(file_ids), '[]');
        PERFORM rag._note_bases(target_source_id, file_ids, '[]');
    END IF;
    PERFORM rag._forget_files_graph(target_source_id, file_ids);
END
$$;
COMMENT ON FUNCTION rag._forget_graph(bigint, text[]) IS
    'Private: before files (paths; NULL: every file of the source) are deleted, deletes their symbols, references and module stems, and notes the names they defined or re-exported so that references to them are resolved again.';

-- ---------------------------------------------------------------------------
-- ensure_graph_data: after a database crash emptied the graph, have it rebuilt
CREATE OR REPLACE FUNCTION rag.ensure_graph_data()
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    -- The graph's tables are unlogged (migration 0009): a database crash
    -- empties them, restarts their id sequences and removes the row of
    -- rag.graph_data_intact.
    IF NOT rag._needs_repair('rag.graph_data_intact') THEN
        RETURN false;
    END IF;
    -- (empty after a crash: emptied here too when only the row went missing)
    TRUNCATE rag.symbols, rag.refs, rag.code_modules, rag.ref_resolution, rag.ref_candidates RESTART IDENTITY;
    DELETE FROM rag.graph_dirty_names;
    UPDATE rag.graph_sources SET resolved_upto = 0;  -- reference ids start again
    -- Only chunking a file extracts its graph: the next run of each source
    -- reads its code files again, as changed ones (their vectors are reused).
    UPDATE rag.files SET sha256 = '', mtime_ns = -1 WHERE source_type = 'code';
    INSERT INTO rag.graph_data_intact DEFAULT VALUES;
    RETURN true;
END
$$;
COMMENT ON FUNCTION rag.ensure_graph_data() IS
    'If a database crash emptied the code graph (its tables are unlogged), marks every code file changed so that the next index run of its source extracts the graph again; true when it did.';

-- ---------------------------------------------------------------------------
-- graph_awaiting_rebuild: the sources whose code graph a crash emptied and no run re-extracted yet
CREATE OR REPLACE FUNCTION rag.graph_awaiting_rebuild()
RETURNS TABLE (source_name text, code_files bigint)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    IF has_table_privilege('rag.files', 'UPDATE') THEN  -- (a reader role of rag serve only reads)
        PERFORM rag.ensure_graph_data();  -- (marks the code files when the crash was not noticed yet)
    END IF;
    RETURN QUERY
        SELECT s.name, count(*)
        FROM rag.files f JOIN rag.sources s ON s.id = f.source_id
        WHERE f.source_type = 'code' AND f.sha256 = ''
        GROUP BY s.name ORDER BY s.name;
END
$$;
COMMENT ON FUNCTION rag.graph_awaiting_rebuild() IS
    'The sources (with their count of code files) whose code graph a database crash emptied and whose next index run has not extracted it again yet (rag.ensure_graph_data marks their code files); empty when the graph is whole.';
