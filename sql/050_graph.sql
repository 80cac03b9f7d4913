-- The code graph (tables: migrations/0005_code_graph.sql).
--
-- Storing: rag.replace_files calls rag._replace_graph with the batch, and
-- rag.delete_files calls rag._forget_graph, so a file's symbols and
-- references change in the transaction that changes its chunks. References
-- newer than rag.graph_sources.resolved_upto are pending; the names of
-- definitions that appeared or went away are noted in rag.graph_dirty_names,
-- and when a class's bases change, the names of the members above it.
--
-- Resolving: rag.resolve_refs(source) (the indexer calls it at the end of a
-- run; a run killed before it leaves pending rows the next run resolves)
-- resolves the pending references and those whose name is dirty, by levels:
-- the file's import map, the same file, the class (self/this, through its
-- resolved bases), the modules the file takes whole (#include, import *),
-- the same folder, the bases of a receiver's known class (Cls.f(), x.f()
-- with x typed: an inherited f), then the name in the whole source. The
-- first level with candidates decides: one candidate resolves the
-- reference, several leave it "ambiguous" with every candidate kept
-- (rag.ref_candidates; at the name level, every definition of that name).
-- The import level follows re-exports: where the imported module (a
-- package's __init__.py, an index.ts barrel) does not define the name, the
-- module's own import of it (from .base import Model, export { X as Y }
-- from, import *, export *, export * as ns), a few hops deep.
-- A reference's candidates only ever depend on definitions of its own name
-- and on the names modules re-export, which is why dirty names (of both) are
-- enough to re-resolve after a change. A Rust
-- impl block (kind IMPL, named after its type) is never a reference's
-- target: code names the type, and the impl only holds its methods and the
-- traits it implements.
--
-- Reading: rag.find_symbols, rag.traverse and its shorthands rag.callers,
-- rag.callees, rag.subtypes, rag.supertypes; rag.graph_status counts.
-- A call x.f() on a receiver of unknown type that only the name finds
-- (every method f of the source) is dynamic dispatch: it stays ambiguous
-- with its candidates, but traversals list it only when asked (dynamic).

-- ---------------------------------------------------------------------------
-- _replace_graph: store the symbols and references of a replace_files batch
-- (stored_ids was added: CREATE OR REPLACE cannot add an argument)
DROP FUNCTION IF EXISTS rag._replace_graph(bigint, jsonb);
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
        INSERT INTO rag.graph_dirty_names (source_id, name)
        SELECT DISTINCT target_source_id, s.name FROM rag.symbols s WHERE s.file_id = ANY (file_ids);
    END IF;
    DELETE FROM rag.ref_resolution x WHERE x.ref_id = ANY (ref_ids);
    DELETE FROM rag.ref_candidates x WHERE x.ref_id = ANY (ref_ids);
    DELETE FROM rag.symbols s WHERE s.file_id = ANY (file_ids);
    DELETE FROM rag.refs r WHERE r.file_id = ANY (file_ids);
    DELETE FROM rag.code_modules m WHERE m.file_id = ANY (file_ids);
END
$$;
COMMENT ON FUNCTION rag._forget_files_graph(bigint, bigint[]) IS
    'Private: deletes the symbols, references (with their resolutions) and module stems of files about to be replaced or deleted, noting the names they defined so that references to them are resolved again.';

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
    IF EXISTS (SELECT 1 FROM rag.graph_data_intact) THEN
        RETURN false;
    END IF;
    -- One repair at a time; a session waiting here finds it done.
    PERFORM pg_advisory_xact_lock(rag._bulk_lock_key());
    IF EXISTS (SELECT 1 FROM rag.graph_data_intact) THEN
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
-- _owner_matches: whether a definition fits a whole-source lookup's owner
CREATE OR REPLACE FUNCTION rag._owner_matches(
    wanted text,
    symbol_owner text
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT CASE WHEN wanted IS NULL THEN symbol_owner IS NULL
                WHEN wanted = '' THEN symbol_owner IS NOT NULL
                ELSE symbol_owner = wanted END
$$;
COMMENT ON FUNCTION rag._owner_matches(text, text) IS
    'Private: NULL wants a top-level definition, '''' any member, else the owner''s simple name.';

-- ---------------------------------------------------------------------------
-- _include_candidates: the definitions pending references may mean in what their file includes
CREATE OR REPLACE FUNCTION rag._include_candidates(
    target_source_id bigint,
    ref_kinds text[],
    todo bigint[]
)
RETURNS TABLE (
    ref_id    bigint,
    symbol_id bigint,
    rank      bigint  -- nearer includes first, then the reference's keys in order
)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
DECLARE
    -- Which module each file takes whole, as arrays: unnested from a
    -- variable the planner counts them (numpy: 7.5k) and hash-joins; as a
    -- CTE it guessed 1 row and looped (31 s instead of 0.3 s).
    take_files   bigint[];
    take_modules bigint[];
    take_ords    bigint[];  -- 1: next to the file, 2: under an include folder
BEGIN
    -- C/C++ #include "x.h" (x.h, and x.c by its stem) and Python's from m
    -- import *, found by name ('*'): the references asking are many, the
    -- files with such imports few.
    SELECT coalesce(array_agg(t.file_id), '{}'), coalesce(array_agg(t.module_id), '{}'),
           coalesce(array_agg(t.ord), '{}')
      INTO take_files, take_modules, take_ords
    FROM (SELECT e.file_id, m.file_id AS module_id, min(t.ord) AS ord
          FROM rag.refs e
          CROSS JOIN LATERAL unnest(e.target_stems) WITH ORDINALITY AS t(stem, ord)
          JOIN rag.code_modules m ON m.source_id = target_source_id AND m.stem = ltrim(t.stem, '/')
                                 AND (m.full_stem OR left(t.stem, 1) <> '/')
          WHERE e.source_id = target_source_id AND e.name = '*' AND e.kind = 'import'
            AND e.from_id IS NULL AND e.keys = '{}' AND m.file_id <> e.file_id
          GROUP BY e.file_id, m.file_id) t;
    IF cardinality(take_files) = 0 THEN
        RETURN;
    END IF;
    -- What those modules take whole in turn (an umbrella header's
    -- includes), up to 3 deep. A C/C++ source file passes nothing on: x.c's
    -- own includes are not x.h's.
    RETURN QUERY
    WITH RECURSIVE takes AS MATERIALIZED (
        SELECT x.file_id, x.module_id, x.ord,
               f.path !~* '\.(c|cc|cpp|cxx|c\+\+|m|mm)$' AS passes_on
        FROM unnest(take_files, take_modules, take_ords) AS x(file_id, module_id, ord)
        JOIN rag.files f ON f.id = x.module_id
    ),
    asking AS MATERIALIZED (
        SELECT r.id, r.file_id, k.fqn, k.ord
        FROM unnest(todo) AS w(id)
        JOIN rag.refs r ON r.id = w.id
        CROSS JOIN LATERAL unnest(r.keys) WITH ORDINALITY AS k(fqn, ord)
        WHERE r.kind = ANY (ref_kinds) AND NOT r.imported AND NOT r.inherited_only
          AND r.file_id = ANY (take_files)
    ),
    reach (file_id, module_id, passes_on, depth, ord) AS (
        SELECT x.file_id, x.module_id, x.passes_on, 1, x.ord
        FROM takes x WHERE x.file_id IN (SELECT DISTINCT a.file_id FROM asking a)
        UNION
        SELECT h.file_id, x.module_id, x.passes_on, h.depth + 1, h.ord
        FROM reach h
        JOIN takes x ON x.file_id = h.module_id AND x.module_id <> h.file_id
        WHERE h.depth < 3 AND h.passes_on
    ),
    -- The definitions of names asked for, then where they are reached from
    -- (each module's definitions times the files reaching it were 650k
    -- rows on numpy, 1.7 s; these are a few thousand).
    wanted AS (
        SELECT s.id, s.file_id, s.fqn
        FROM rag.symbols s
        WHERE s.source_id = target_source_id AND s.kind <> 'IMPL'
          AND s.fqn IN (SELECT a.fqn FROM asking a)
    )
    SELECT a.id, w.id, (h.depth * 10 + h.ord) * 100 + a.ord
    FROM wanted w
    JOIN reach h ON h.module_id = w.file_id
    JOIN asking a ON a.file_id = h.file_id AND a.fqn = w.fqn;
END
$$;
COMMENT ON FUNCTION rag._include_candidates(bigint, text[], bigint[]) IS
    'Private: (reference, definition, rank) pairs for the references todo of a source in the modules their file takes whole (C/C++ #include, Python from m import *), and what those take whole in turn, 3 deep.';

-- ---------------------------------------------------------------------------
-- _import_candidates: the import level of rag._ref_candidates
CREATE OR REPLACE FUNCTION rag._import_candidates(
    target_source_id bigint,
    ref_kinds text[],
    todo bigint[],
    receivers boolean  -- the class of x.f()'s receiver instead of f (for the inherited level)
)
RETURNS TABLE (
    ref_id    bigint,
    symbol_id bigint,
    rank      bigint
)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
DECLARE
    -- A Go module's root package has no folder name to match an import's
    -- last segment: go.mod's module path gives it ("(root)" is its files'
    -- stem, see rag/chunking/symbols.py).
    go_root text := (SELECT substring(f.content FROM '(?n)^module\s+"?(?:[^"\s]*/)?([^/"\s]+)')
                     FROM rag.files f WHERE f.source_id = target_source_id AND f.path = 'go.mod');
BEGIN
    -- The imported modules, and through re-exports the modules those
    -- import the name from (a package's __init__.py, an index.ts barrel):
    -- a module-level import binds its alias (keys[1]) or name, "*" all
    -- names. Followed only where the module does not define the name,
    -- a few hops deep, never into a file twice; nearer hops rank first.
    RETURN QUERY
    WITH RECURSIVE asked AS MATERIALIZED (  -- where each reference's imports point
        SELECT r.id AS ref_id, t.ord, m.file_id, q.fqn
        FROM unnest(todo) AS w(id)
        JOIN rag.refs r ON r.id = w.id
        CROSS JOIN LATERAL unnest(r.target_stems, r.target_fqns) WITH ORDINALITY AS t(stem, target, ord)
        -- (a receiver's class: the fqn without its last part, if it has parts)
        CROSS JOIN LATERAL (SELECT CASE WHEN NOT receivers THEN t.target
                                        WHEN strpos(t.target, '.') > 0
                                        THEN left(t.target, -length(split_part(t.target, '.', -1)) - 1) END) AS q(fqn)
        JOIN rag.code_modules m ON m.source_id = target_source_id
                               AND m.stem = CASE WHEN t.stem = go_root THEN '(root)' ELSE ltrim(t.stem, '/') END
                               AND (m.full_stem OR left(t.stem, 1) <> '/')
        WHERE r.kind = ANY (ref_kinds) AND r.imported AND q.fqn <> '*'
    ),
    -- From each distinct place (thousands of references ask for the same
    -- one) to the places its re-exports lead to. Each is probed twice: for
    -- its name's head and for "*" (an equality each; an OR joined every
    -- import of the file). Imports are read from rag.refs by file: an
    -- incremental run reads a few, not all of the source's.
    reach (start_file, start_fqn, file_id, fqn, probe, depth, seen) AS (
        SELECT a.file_id, a.fqn, a.file_id, a.fqn, p.probe, 0, ARRAY[a.file_id]
        FROM (SELECT DISTINCT a.file_id, a.fqn FROM asked a) a
        CROSS JOIN LATERAL (VALUES (split_part(a.fqn, '.', 1)), ('*')) AS p(probe)
        UNION ALL
        SELECT h.start_file, h.start_fqn, m.file_id, n.fqn, p.probe, h.depth + 1, h.seen || m.file_id
        FROM reach h
        JOIN rag.refs e ON e.file_id = h.file_id AND e.kind = 'import' AND e.from_id IS NULL
                       AND coalesce(e.keys[1], e.name) = h.probe
        CROSS JOIN LATERAL unnest(e.target_stems) AS t(stem)
        JOIN rag.code_modules m ON m.source_id = target_source_id AND m.stem = ltrim(t.stem, '/')
                               AND (m.full_stem OR left(t.stem, 1) <> '/')
        -- (export * as ns: "*" under the name ns, so ns.f is f in the module)
        CROSS JOIN LATERAL (SELECT CASE WHEN e.name <> '*' THEN e.name || substr(h.fqn, length(h.probe) + 1)
                                        WHEN e.keys[1] IS NULL THEN h.fqn
                                        ELSE substr(h.fqn, length(h.probe) + 2) END) AS n(fqn)
        CROSS JOIN LATERAL (VALUES (split_part(n.fqn, '.', 1)), ('*')) AS p(probe)
        WHERE h.depth < 3 AND m.file_id <> ALL (h.seen)
          AND NOT EXISTS (SELECT 1 FROM rag.symbols d WHERE d.file_id = h.file_id AND d.fqn = h.fqn)
    ),
    found AS MATERIALIZED (
        SELECT h.start_file, h.start_fqn, s.id, h.depth
        FROM reach h
        JOIN rag.symbols s ON s.file_id = h.file_id AND s.fqn = h.fqn AND s.kind <> 'IMPL'
        WHERE h.probe = '*'
    )
    SELECT a.ref_id, f.id, f.depth * 100 + a.ord
    FROM asked a
    JOIN found f ON f.start_file = a.file_id AND f.start_fqn = a.fqn;
END
$$;
COMMENT ON FUNCTION rag._import_candidates(bigint, text[], bigint[], boolean) IS
    'Private: (reference, definition, rank) pairs for imported references through the import map and re-exports; with receivers, the definition of the qualifier of each (Cls for Cls.f).';

-- ---------------------------------------------------------------------------
-- _base_members: members named as asked in the bases of classes
CREATE OR REPLACE FUNCTION rag._base_members(
    ref_ids   bigint[],
    names     text[],
    class_ids bigint[]  -- per reference: the member ``names`` is looked for above this class
)
RETURNS TABLE (
    ref_id    bigint,
    symbol_id bigint,
    rank      bigint  -- nearest base first, a superclass before an interface
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    WITH RECURSIVE asking AS MATERIALIZED (
        SELECT * FROM unnest(ref_ids, names, class_ids) AS a(ref_id, name, class_id)
    ),
    -- Each class's bases walked once: thousands of self calls share a class.
    -- (a superclass before an interface at the same depth: super.f() means the class's)
    chain (class_id, base_id, depth, via_interface) AS (
        SELECT c.class_id, base.target_id, 1, b.kind = 'implements'
        FROM (SELECT DISTINCT a.class_id FROM asking a) c
        JOIN rag.refs b ON b.from_id = c.class_id AND b.kind IN ('inherits', 'implements')
        JOIN rag.ref_resolution base ON base.ref_id = b.id AND base.target_id IS NOT NULL
        UNION ALL
        SELECT chain.class_id, base.target_id, chain.depth + 1,
               chain.via_interface OR b.kind = 'implements'
        FROM chain
        JOIN rag.refs b ON b.from_id = chain.base_id AND b.kind IN ('inherits', 'implements')
        JOIN rag.ref_resolution base ON base.ref_id = b.id AND base.target_id IS NOT NULL
        WHERE chain.depth < 8
    ),
    -- Each (class, name) looked up once: Django's 31k self calls ask 11k.
    -- (as columns: joined on an expression, the fqn was a filter over
    -- every symbol of the base's file, not a key of symbols_file_idx)
    members AS MATERIALIZED (
        SELECT q.ref_ids, base.file_id, base.fqn || '.' || q.name AS fqn,
               (ch.depth * 2 + ch.via_interface::integer)::bigint AS rank, f.language = 'go' AS go
        FROM (SELECT a.class_id, a.name, array_agg(a.ref_id) AS ref_ids
              FROM asking a GROUP BY a.class_id, a.name) q
        JOIN chain ch ON ch.class_id = q.class_id
        JOIN rag.symbols base ON base.id = ch.base_id
        JOIN rag.files f ON f.id = base.file_id
    )
    SELECT a.ref_id, s.id, m.rank
    FROM members m
    JOIN rag.symbols s ON s.file_id = m.file_id AND s.fqn = m.fqn
    CROSS JOIN LATERAL unnest(m.ref_ids) AS a(ref_id)
    UNION ALL
    -- (a Go type's methods may be written in any file of its package: its folder)
    SELECT a.ref_id, s.id, m.rank
    FROM members m
    JOIN rag.code_modules own ON own.file_id = m.file_id AND own.full_stem
    JOIN rag.code_modules near ON near.source_id = own.source_id AND near.full_stem
                              AND near.folder = own.folder AND near.file_id <> m.file_id
    JOIN rag.symbols s ON s.file_id = near.file_id AND s.fqn = m.fqn
    CROSS JOIN LATERAL unnest(m.ref_ids) AS a(ref_id)
    WHERE m.go
$$;
COMMENT ON FUNCTION rag._base_members(bigint[], text[], bigint[]) IS
    'Private: for (reference, member name, class) triples, the members of that name in the class''s resolved bases (in the base''s file; for Go, its package''s), up to 8 deep, nearest first.';

-- ---------------------------------------------------------------------------
-- _ref_candidates: the definitions pending references may mean at one level
CREATE OR REPLACE FUNCTION rag._ref_candidates(
    target_source_id bigint,
    level text,
    ref_kinds text[],
    todo bigint[]
)
RETURNS TABLE (
    ref_id    bigint,
    symbol_id bigint,
    rank      bigint  -- preference within the level: only the lowest rank is kept
)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
BEGIN
    IF level = 'import' THEN
        RETURN QUERY SELECT * FROM rag._import_candidates(target_source_id, ref_kinds, todo, false);
    ELSIF level = 'file' THEN
        RETURN QUERY
        SELECT r.id, s.id, k.ord
        FROM unnest(todo) AS w(id)
        JOIN rag.refs r ON r.id = w.id
        CROSS JOIN LATERAL unnest(r.keys) WITH ORDINALITY AS k(fqn, ord)
        JOIN rag.symbols s ON s.file_id = r.file_id AND s.fqn = k.fqn AND s.kind <> 'IMPL'
        WHERE r.kind = ANY (ref_kinds) AND NOT r.imported;
    ELSIF level = 'class' THEN
        -- self.f() and super().f(): members of the bases of self's class
        RETURN QUERY
        SELECT m.* FROM (
            SELECT array_agg(r.id) AS ref_ids, array_agg(r.name) AS names, array_agg(c.id) AS class_ids
            FROM unnest(todo) AS w(id)
            JOIN rag.refs r ON r.id = w.id
            JOIN rag.symbols c ON c.file_id = r.file_id AND c.fqn = r.self_class
            WHERE r.kind = ANY (ref_kinds) AND r.self_class IS NOT NULL AND NOT r.imported
        ) a
        CROSS JOIN LATERAL rag._base_members(a.ref_ids, a.names, a.class_ids) m;
    ELSIF level = 'include' THEN
        RETURN QUERY SELECT * FROM rag._include_candidates(target_source_id, ref_kinds, todo);
    ELSIF level = 'folder' THEN
        RETURN QUERY
        SELECT r.id, s.id, k.ord
        FROM unnest(todo) AS w(id)
        JOIN rag.refs r ON r.id = w.id
        JOIN rag.code_modules own ON own.file_id = r.file_id AND own.full_stem
        JOIN rag.code_modules near ON near.source_id = target_source_id AND near.full_stem
                                  AND near.folder = own.folder AND near.file_id <> r.file_id
        CROSS JOIN LATERAL unnest(r.keys) WITH ORDINALITY AS k(fqn, ord)
        JOIN rag.symbols s ON s.file_id = near.file_id AND s.fqn = k.fqn AND s.kind <> 'IMPL'
        WHERE r.kind = ANY (ref_kinds) AND NOT r.imported AND NOT r.inherited_only;
    ELSIF level = 'inherited' THEN
        -- Cls.f() or x.f() with x typed (the reference's owner names the
        -- class), where the class does not define f: members of its bases.
        -- The class is found as the narrow levels find a name: through the
        -- import map, else in the same file, else in the same folder (a Go
        -- or Java package).
        IF NOT 'call' = ANY (ref_kinds) THEN
            RETURN;
        END IF;
        RETURN QUERY
        WITH asking AS MATERIALIZED (
            SELECT r.id, r.name, r.file_id, r.imported, left(r.keys[1], -length(r.name) - 1) AS class_fqn
            FROM unnest(todo) AS w(id)
            JOIN rag.refs r ON r.id = w.id
            WHERE r.kind = 'call' AND r.owner <> ''
        ),
        in_file AS MATERIALIZED (
            SELECT a.id AS ref_id, s.id AS class_id
            FROM asking a
            JOIN rag.symbols s ON s.file_id = a.file_id AND s.fqn = a.class_fqn
            WHERE NOT a.imported
        ),
        receivers AS (
            SELECT c.ref_id, c.symbol_id AS class_id
            FROM rag._import_candidates(target_source_id, ref_kinds,
                                        ARRAY(SELECT a.id FROM asking a WHERE a.imported), true) c
            UNION
            SELECT * FROM in_file
            UNION
            SELECT a.id, s.id
            FROM asking a
            JOIN rag.code_modules own ON own.file_id = a.file_id AND own.full_stem
            JOIN rag.code_modules near ON near.source_id = target_source_id AND near.full_stem
                                      AND near.folder = own.folder AND near.file_id <> a.file_id
            JOIN rag.symbols s ON s.file_id = near.file_id AND s.fqn = a.class_fqn
            WHERE NOT a.imported AND NOT EXISTS (SELECT 1 FROM in_file i WHERE i.ref_id = a.id)
        )
        SELECT m.* FROM (
            SELECT array_agg(v.ref_id) AS ref_ids, array_agg(a.name) AS names, array_agg(v.class_id) AS class_ids
            FROM receivers v JOIN asking a ON a.id = v.ref_id
        ) x
        CROSS JOIN LATERAL rag._base_members(x.ref_ids, x.names, x.class_ids) m;
    ELSE
        RAISE EXCEPTION '_ref_candidates: unknown level %', quote_literal(level)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;
COMMENT ON FUNCTION rag._ref_candidates(bigint, text, text[], bigint[]) IS
    'Private: (reference, definition, rank) pairs for the references todo of a source at one narrow resolution level: import, file, class, include, folder or inherited.';

-- ---------------------------------------------------------------------------
-- _name_matches: how many definitions of its name in the source fit each pending reference
CREATE OR REPLACE FUNCTION rag._name_matches(
    target_source_id bigint,
    ref_kinds text[],
    todo bigint[]
)
RETURNS TABLE (
    ref_id  bigint,
    matches bigint,
    only_id bigint  -- the definition, when it is the only one
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- Counted per name (and owner) first: a common method name called
    -- thousands of times is not joined with each of its definitions; and
    -- only names asked about (bases and imports ask about few).
    WITH asked AS MATERIALIZED (
        SELECT r.id, r.name, r.owner
        FROM unnest(todo) AS w(id)
        JOIN rag.refs r ON r.id = w.id
        -- self/this/super calls the class and its bases do not define are
        -- dynamic dispatch (a mixin, a base from another package): unresolved
        WHERE r.kind = ANY (ref_kinds) AND NOT r.imported AND r.self_class IS NULL
    ),
    by_name AS (
        SELECT s.name,
               count(*) FILTER (WHERE s.owner IS NULL) AS top_n,
               min(s.id) FILTER (WHERE s.owner IS NULL) AS top_id,
               count(*) FILTER (WHERE s.owner IS NOT NULL) AS member_n,
               min(s.id) FILTER (WHERE s.owner IS NOT NULL) AS member_id
        FROM rag.symbols s
        WHERE s.source_id = target_source_id AND s.kind <> 'IMPL' AND s.name IN (SELECT a.name FROM asked a)
        GROUP BY s.name
    ),
    by_owner AS (
        SELECT s.name, s.owner, count(*) AS n, min(s.id) AS id
        FROM rag.symbols s
        WHERE s.source_id = target_source_id AND s.owner IS NOT NULL AND s.kind <> 'IMPL'
          AND s.name IN (SELECT a.name FROM asked a WHERE a.owner <> '')
        GROUP BY s.name, s.owner
    ),
    counted AS (
        SELECT a.id AS ref_id,
               CASE WHEN a.owner IS NULL THEN b.top_n WHEN a.owner = '' THEN b.member_n ELSE o.n END AS n,
               CASE WHEN a.owner IS NULL THEN b.top_id WHEN a.owner = '' THEN b.member_id ELSE o.id END AS first_id
        FROM asked a
        JOIN by_name b ON b.name = a.name
        LEFT JOIN by_owner o ON a.owner <> '' AND o.name = a.name AND o.owner = a.owner
    )
    SELECT c.ref_id, c.n, CASE WHEN c.n = 1 THEN c.first_id END FROM counted c WHERE c.n > 0
$$;
COMMENT ON FUNCTION rag._name_matches(bigint, text[], bigint[]) IS
    'Private: for the references todo of a source, how many definitions of their name (top-level, any member, or members of the named class) the source has.';

-- ---------------------------------------------------------------------------
-- _resolve_kinds: resolve pending references of some kinds
-- (qualified_ids was added: CREATE OR REPLACE cannot add an argument)
DROP FUNCTION IF EXISTS rag._resolve_kinds(bigint, text[], bigint[], bigint[]);
CREATE OR REPLACE FUNCTION rag._resolve_kinds(
    target_source_id bigint,
    ref_kinds text[],
    imported_ids bigint[],  -- the pending references of these kinds that name an import
    local_ids bigint[],     -- and the others
    qualified_ids bigint[]  -- calls of either on a receiver of a named class (owner)
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    levels   text[] := ARRAY['import', 'file', 'class', 'include', 'folder', 'inherited'];
    resolved bigint;
BEGIN
    -- The first level with candidates decides; what none finds gets no row.
    -- Only the import level reads imported references, only the others (and
    -- the name) local ones: each level is handed only its own (each joined
    -- all of Django's 134k pending references to rag.refs to filter them).
    WITH narrow AS (
        SELECT c.ref_id, c.symbol_id, l.ord AS level_no,
               rank() OVER (PARTITION BY c.ref_id ORDER BY l.ord, c.rank) AS place
        FROM unnest(levels) WITH ORDINALITY AS l(level, ord)
        CROSS JOIN LATERAL rag._ref_candidates(target_source_id, l.level, ref_kinds,
                                               CASE l.level WHEN 'import' THEN imported_ids
                                                            WHEN 'inherited' THEN qualified_ids
                                                            ELSE local_ids END) c
    ),
    -- Among the best: in languages where a later definition replaces an
    -- earlier one, one definition per fqn and file (the last: after its
    -- @overload declarations, or the last branch of an if; C++ and Java
    -- overloads are distinct methods and stay candidates), and a stub
    -- (.pyi) only where no module defines the name (numpy: 19k of its 19k
    -- ambiguous imports were a .py beside its .pyi, or overloads).
    best AS (
        SELECT DISTINCT ON (c.ref_id, c.file_id, c.fqn, c.variant) c.ref_id, c.symbol_id, c.level_no, c.stub
        FROM (SELECT n.ref_id, n.symbol_id, n.level_no, s.file_id, s.fqn, s.start_line,
                     f.path LIKE '%.pyi' AS stub,
                     CASE WHEN f.language IN ('python', 'javascript', 'typescript', 'tsx', 'ruby')
                          THEN 0 ELSE s.id END AS variant  -- (0: one definition)
              FROM narrow n
              JOIN rag.symbols s ON s.id = n.symbol_id
              JOIN rag.files f ON f.id = s.file_id
              WHERE n.place = 1) c
        ORDER BY c.ref_id, c.file_id, c.fqn, c.variant, c.start_line DESC
    ),
    decided AS (
        SELECT b.ref_id, min(b.level_no)::integer AS level_no,
               coalesce(array_agg(DISTINCT b.symbol_id) FILTER (WHERE NOT b.stub),
                        array_agg(DISTINCT b.symbol_id)) AS ids
        FROM best b GROUP BY b.ref_id
    ),
    found AS (
        SELECT d.ref_id, levels[d.level_no] AS resolved_by, d.ids,
               CASE WHEN cardinality(d.ids) = 1 THEN d.ids[1] END AS target_id,
               cardinality(d.ids) AS candidates
        FROM decided d
        UNION ALL
        SELECT m.ref_id, 'name', NULL, m.only_id, m.matches::integer
        FROM rag._name_matches(target_source_id, ref_kinds, local_ids) m
        WHERE NOT EXISTS (SELECT 1 FROM decided d WHERE d.ref_id = m.ref_id)
    ),
    kept AS (
        INSERT INTO rag.ref_candidates (ref_id, symbol_id, source_id)
        SELECT f.ref_id, unnest(f.ids), target_source_id FROM found f WHERE f.candidates > 1
    ),
    done AS (
        INSERT INTO rag.ref_resolution (ref_id, source_id, resolved_by, target_id, candidates)
        SELECT f.ref_id, target_source_id, f.resolved_by, f.target_id, f.candidates FROM found f
        RETURNING 1
    )
    SELECT count(*) INTO resolved FROM done;
    RETURN resolved;
END
$$;
COMMENT ON FUNCTION rag._resolve_kinds(bigint, text[], bigint[], bigint[], bigint[]) IS
    'Private: resolves pending references of some kinds by levels (import map, file, class bases, folder, name) and stores their resolutions and candidates; returns how many got a row.';

-- ---------------------------------------------------------------------------
-- resolve_refs
CREATE OR REPLACE FUNCTION rag.resolve_refs(
    target_source_id bigint
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
-- Only for the ANALYZE below: a tenth of the sample plans the levels as well
-- (Django: the same plans and time) and takes 30 ms instead of 250.
SET default_statistics_target = 10
-- The levels' plans depend on how many references are pending: a plan cached
-- by the connection (generic after five calls, made for 10 rows) took
-- Django's 134k from 3 s to 25 s; a watcher's connection lives long.
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    upto          bigint;
    newest        bigint;
    todo          bigint[];
    decl_imported bigint[];  -- (imports, bases)
    decl_local    bigint[];
    call_imported bigint[];
    call_local    bigint[];
    call_qualified bigint[];  -- (Cls.f(), x.f() with x typed)
    resolved      bigint;
BEGIN
    INSERT INTO rag.graph_sources (source_id) VALUES (target_source_id) ON CONFLICT DO NOTHING;
    SELECT g.resolved_upto INTO upto FROM rag.graph_sources g
     WHERE g.source_id = target_source_id FOR UPDATE;
    SELECT max(r.id) INTO newest FROM rag.refs r WHERE r.source_id = target_source_id;
    -- New references, and those whose candidates may have changed.
    WITH dirty AS (
        DELETE FROM rag.graph_dirty_names d WHERE d.source_id = target_source_id RETURNING d.name
    )
    SELECT coalesce(array_agg(r.id), '{}'),
           coalesce(array_agg(r.id) FILTER (WHERE r.kind <> 'call' AND r.imported), '{}'),
           coalesce(array_agg(r.id) FILTER (WHERE r.kind <> 'call' AND NOT r.imported), '{}'),
           coalesce(array_agg(r.id) FILTER (WHERE r.kind = 'call' AND r.imported), '{}'),
           coalesce(array_agg(r.id) FILTER (WHERE r.kind = 'call' AND NOT r.imported), '{}'),
           coalesce(array_agg(r.id) FILTER (WHERE r.kind = 'call' AND r.owner <> ''), '{}')
      INTO todo, decl_imported, decl_local, call_imported, call_local, call_qualified
    FROM rag.refs r
    WHERE r.source_id = target_source_id
      AND (r.id > upto OR r.name IN (SELECT DISTINCT dirty.name FROM dirty));
    DELETE FROM rag.ref_resolution x USING unnest(todo) AS w(id) WHERE x.ref_id = w.id;
    DELETE FROM rag.ref_candidates x USING unnest(todo) AS w(id) WHERE x.ref_id = w.id;
    -- Many references (a first index) just stored: planned without statistics
    -- the levels took 2.2 s for Django's, with them 1.35 s.
    IF cardinality(todo) >= 10000 THEN
        ANALYZE rag.refs, rag.symbols, rag.code_modules;
    END IF;
    -- Bases and imports first: self calls are looked up through resolved bases.
    resolved := rag._resolve_kinds(target_source_id, ARRAY['inherits', 'implements', 'import'],
                                   decl_imported, decl_local, '{}')
              + rag._resolve_kinds(target_source_id, ARRAY['call'], call_imported, call_local, call_qualified);
    UPDATE rag.graph_sources g SET resolved_upto = greatest(upto, coalesce(newest, 0))
     WHERE g.source_id = target_source_id;
    RETURN resolved;
END
$$;
COMMENT ON FUNCTION rag.resolve_refs(bigint) IS
    'Resolves a source''s pending references and those whose name was (re)defined or removed since: import map, same file, class bases, same folder, unique name in the source; ambiguity is kept with its candidates. Returns how many were resolved or found ambiguous.';

-- ---------------------------------------------------------------------------
-- _source_ids: the ids of named sources (NULL: all)
CREATE OR REPLACE FUNCTION rag._graph_source_ids(
    sources text[]
)
RETURNS bigint[]
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    ids     bigint[];
    missing text;
BEGIN
    IF sources IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT n INTO missing FROM unnest(sources) AS n
    WHERE NOT EXISTS (SELECT 1 FROM rag.sources s WHERE s.name = n) LIMIT 1;
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'sources: no source named %; see rag.list_sources()', quote_literal(missing)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT array_agg(s.id) INTO ids FROM rag.sources s WHERE s.name = ANY (sources);
    RETURN ids;
END
$$;
COMMENT ON FUNCTION rag._graph_source_ids(text[]) IS
    'Private: ids of the named sources, NULL for all; fails naming a source that does not exist.';

-- ---------------------------------------------------------------------------
-- find_symbols
CREATE OR REPLACE FUNCTION rag.find_symbols(
    name_or_fqn text,
    sources text[] DEFAULT NULL,
    kinds text[] DEFAULT NULL,
    max_rows integer DEFAULT 50
)
RETURNS TABLE (
    symbol_id  bigint,
    source     text,
    fqn        text,
    kind       text,
    path       text,
    start_line integer,
    end_line   integer,
    signature  text,
    total      bigint  -- how many definitions matched, when more than max_rows are listed
)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
DECLARE
    source_ids  bigint[] := rag._graph_source_ids(sources);
    wanted_path text;
    wanted      text := name_or_fqn;
BEGIN
    IF name_or_fqn IS NULL OR btrim(name_or_fqn) = '' THEN
        RAISE EXCEPTION 'find_symbols: name_or_fqn must be a name (total), an fqn (Cart.total) or path:fqn'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF position(':' IN name_or_fqn) > 0 THEN
        wanted_path := split_part(name_or_fqn, ':', 1);
        wanted := substr(name_or_fqn, length(wanted_path) + 2);
    END IF;
    wanted := replace(wanted, '::', '.');
    RETURN QUERY
    WITH matched AS (
        SELECT s.id, s.source_id, s.fqn, s.kind, s.file_id, s.start_line, s.end_line, s.signature,
               (s.fqn = wanted) AS exact
        FROM rag.symbols s
        WHERE (s.fqn = wanted OR s.name = wanted
               OR (position('.' IN wanted) > 0 AND s.name = (regexp_match(wanted, '([^.]*)$'))[1]
                   AND right(s.fqn, length(wanted) + 1) = '.' || wanted))
          AND (source_ids IS NULL OR s.source_id = ANY (source_ids))
          AND (kinds IS NULL OR s.kind = ANY (kinds))
    )
    SELECT m.id, src.name, m.fqn, m.kind, f.path, m.start_line, m.end_line, m.signature,
           count(*) OVER ()
    FROM matched m
    JOIN rag.files f ON f.id = m.file_id
    JOIN rag.sources src ON src.id = m.source_id
    WHERE wanted_path IS NULL OR f.path = wanted_path
    ORDER BY m.exact DESC, f.path, m.start_line
    LIMIT greatest(max_rows, 1);
END
$$;
COMMENT ON FUNCTION rag.find_symbols(text, text[], text[], integer) IS
    'Definitions by name (total), fqn (Cart.total, also as the tail of a longer fqn) or path:fqn, exact fqns first; total is the number matched, of which at most max_rows are listed.';

-- ---------------------------------------------------------------------------
-- _is_dynamic: a reference found only by a member name on a receiver of unknown type
CREATE OR REPLACE FUNCTION rag._is_dynamic(
    ref_owner text,
    resolved_by text
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT ref_owner = '' AND resolved_by = 'name'
$$;
COMMENT ON FUNCTION rag._is_dynamic(text, text) IS
    'Private: x.f() with x of unknown type, matched to methods named f anywhere in the source: dynamic dispatch, a guess that traversals skip unless asked.';

-- ---------------------------------------------------------------------------
-- _folder: the folder of a path ('' at the root)
CREATE OR REPLACE FUNCTION rag._folder(
    path text
)
RETURNS text
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT coalesce(substring(path FROM '^(.*)/[^/]*$'), '')
$$;
COMMENT ON FUNCTION rag._folder(text) IS
    'Private: the folder part of a path, '''' for a file at the root.';

-- ---------------------------------------------------------------------------
-- _go_method_sets: the method names of Go types and interfaces
CREATE OR REPLACE FUNCTION rag._go_method_sets(
    type_ids bigint[]
)
RETURNS TABLE (
    type_id bigint,
    name    text
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- An interface's method elements; a type's methods, written in any file
    -- of its package (its folder); and those of what each embeds (its
    -- resolved bases), a few levels deep.
    WITH RECURSIVE reach (type_id, part_id, depth) AS (
        SELECT t.id, t.id, 0 FROM unnest(type_ids) AS t(id)
        UNION
        SELECT h.type_id, x.target_id, h.depth + 1
        FROM reach h
        JOIN rag.refs b ON b.from_id = h.part_id AND b.kind = 'inherits'
        JOIN rag.ref_resolution x ON x.ref_id = b.id AND x.target_id IS NOT NULL
        WHERE h.depth < 4
    ),
    parts AS MATERIALIZED (
        SELECT h.type_id, p.id, p.fqn, p.kind, p.file_id, f.source_id, rag._folder(f.path) AS folder
        FROM reach h
        JOIN rag.symbols p ON p.id = h.part_id
        JOIN rag.files f ON f.id = p.file_id
    ),
    -- The methods written in the types' packages, each package read once
    -- (thousands of types may ask, a few hundred packages hold them).
    package_methods AS MATERIALIZED (
        SELECT k.source_id, k.folder, m.owner, m.name
        FROM (SELECT DISTINCT p.source_id, p.folder FROM parts p WHERE p.kind <> 'INTERFACE') k
        JOIN rag.code_modules near ON near.source_id = k.source_id AND near.folder = k.folder AND near.full_stem
        JOIN rag.symbols m ON m.file_id = near.file_id AND m.parent_id IS NULL AND m.kind = 'METHOD'
    )
    SELECT DISTINCT p.type_id, m.name
    FROM parts p
    JOIN package_methods m ON m.source_id = p.source_id AND m.folder = p.folder AND m.owner = p.fqn
    WHERE p.kind <> 'INTERFACE'
    UNION
    SELECT p.type_id, m.name
    FROM parts p
    JOIN rag.symbols m ON m.file_id = p.file_id AND m.parent_id = p.id AND m.kind = 'METHOD'
    WHERE p.kind = 'INTERFACE'
$$;
COMMENT ON FUNCTION rag._go_method_sets(bigint[]) IS
    'Private: (type, method name) for Go types and interfaces: their own methods (a type''s in any file of its package) and those of what they embed.';

-- ---------------------------------------------------------------------------
-- _go_satisfied: which Go types satisfy which interfaces
CREATE OR REPLACE FUNCTION rag._go_satisfied(
    frontier bigint[],
    outgoing boolean  -- true: the interfaces the frontier's types satisfy; false: the types satisfying its interfaces
)
RETURNS TABLE (
    type_id      bigint,
    interface_id bigint
)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
DECLARE
    types      bigint[];
    interfaces bigint[];
BEGIN
    -- A Go type satisfies an interface when it has every method the
    -- interface names; nothing declares it. Compared by method name (not
    -- signature); an interface with no methods is left out (every type
    -- satisfies it). The other side's candidates are found by name, then
    -- the method sets compared.
    IF outgoing THEN
        types := ARRAY(SELECT s.id FROM rag.symbols s JOIN rag.files f ON f.id = s.file_id
                       WHERE s.id = ANY (frontier) AND f.language = 'go' AND s.kind IN ('STRUCT', 'TYPE'));
        IF cardinality(types) = 0 THEN
            RETURN;  -- (most traversals are of other languages: they pay this look)
        END IF;
        -- The interfaces with a method of a name the types have, and those
        -- embedding one of them.
        WITH RECURSIVE found (id, depth) AS (
            SELECT DISTINCT i.id, 0
            FROM rag.symbols m
            JOIN rag.symbols i ON i.id = m.parent_id AND i.kind = 'INTERFACE'
            JOIN rag.files f ON f.id = i.file_id AND f.language = 'go'
            WHERE m.source_id IN (SELECT s.source_id FROM rag.symbols s WHERE s.id = ANY (types))
              AND m.name IN (SELECT n.name FROM rag._go_method_sets(types) n)
              AND m.kind = 'METHOD' AND m.parent_id IS NOT NULL
            UNION
            SELECT e.from_id, h.depth + 1
            FROM found h
            JOIN rag.ref_resolution x ON x.target_id = h.id
            JOIN rag.refs e ON e.id = x.ref_id AND e.kind = 'inherits'
            JOIN rag.symbols i ON i.id = e.from_id AND i.kind = 'INTERFACE'
            WHERE h.depth < 3
        )
        SELECT array_agg(DISTINCT h.id) INTO interfaces FROM found h;
    ELSE
        interfaces := ARRAY(SELECT s.id FROM rag.symbols s JOIN rag.files f ON f.id = s.file_id
                            WHERE s.id = ANY (frontier) AND f.language = 'go' AND s.kind = 'INTERFACE');
        IF cardinality(interfaces) = 0 THEN
            RETURN;
        END IF;
        -- The types with a method of a name the interfaces have (in their
        -- package), and those embedding one of them.
        WITH RECURSIVE found (id, depth) AS (
            SELECT DISTINCT t.id, 0
            FROM rag.symbols m
            JOIN rag.files mf ON mf.id = m.file_id AND mf.language = 'go'
            JOIN rag.symbols t ON t.source_id = m.source_id AND t.fqn = m.owner AND t.kind IN ('STRUCT', 'TYPE')
            JOIN rag.files tf ON tf.id = t.file_id AND rag._folder(tf.path) = rag._folder(mf.path)
            WHERE m.source_id IN (SELECT s.source_id FROM rag.symbols s WHERE s.id = ANY (interfaces))
              AND m.name IN (SELECT min(n.name) FROM rag._go_method_sets(interfaces) n GROUP BY n.type_id)
              AND m.kind = 'METHOD' AND m.parent_id IS NULL AND m.owner IS NOT NULL
            UNION
            SELECT e.from_id, h.depth + 1
            FROM found h
            JOIN rag.ref_resolution x ON x.target_id = h.id
            JOIN rag.refs e ON e.id = x.ref_id AND e.kind = 'inherits'
            JOIN rag.symbols t ON t.id = e.from_id AND t.kind IN ('STRUCT', 'TYPE')
            WHERE h.depth < 3
        )
        SELECT array_agg(DISTINCT h.id) INTO types FROM found h;
    END IF;
    RETURN QUERY
    WITH type_names AS MATERIALIZED (SELECT * FROM rag._go_method_sets(types)),
    interface_names AS MATERIALIZED (SELECT * FROM rag._go_method_sets(interfaces)),
    sizes AS (SELECT n.type_id AS interface_id, count(*) AS n, min(n.name) AS first
              FROM interface_names n GROUP BY n.type_id)
    -- (paired by the interface's first name, then every name counted)
    SELECT t.type_id, z.interface_id
    FROM sizes z
    JOIN type_names t ON t.name = z.first
    JOIN interface_names i ON i.type_id = z.interface_id
    JOIN type_names tn ON tn.type_id = t.type_id AND tn.name = i.name
    GROUP BY t.type_id, z.interface_id, z.n
    HAVING count(*) = z.n;
END
$$;
COMMENT ON FUNCTION rag._go_satisfied(bigint[], boolean) IS
    'Private: (type, interface) pairs of Go types having every method an interface names: for the frontier''s types (outgoing) or interfaces.';

-- ---------------------------------------------------------------------------
-- _graph_edges: one step from a set of definitions
-- (dynamic was added: CREATE OR REPLACE cannot add an argument)
DROP FUNCTION IF EXISTS rag._graph_edges(bigint[], text[], boolean);
CREATE OR REPLACE FUNCTION rag._graph_edges(
    frontier bigint[],
    relations text[],
    outgoing boolean,
    dynamic boolean
)
RETURNS TABLE (
    from_id   bigint,   -- a definition of the frontier
    to_id     bigint,   -- where the step leads (NULL: module-level code of to_file)
    to_file   bigint,
    relation  text,
    ref_line  integer,  -- the line of the reference (NULL for containment)
    ref_file  bigint,
    ambiguous boolean
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    WITH RECURSIVE wanted AS (
        SELECT k.kind, k.relation FROM (VALUES ('call', 'calls'), ('import', 'imports'),
            ('inherits', 'inherits'), ('implements', 'inherits')) AS k(kind, relation)
        WHERE k.relation = ANY (relations)
    ),
    front AS (SELECT s.* FROM rag.symbols s WHERE s.id = ANY (frontier)),
    -- The classes above each method of the frontier, a few levels up
    -- (by resolved bases), for the calls of what it overrides.
    above (member_id, name, class_id, depth) AS (
        SELECT f.id, f.name, f.parent_id, 0 FROM front f
        WHERE NOT outgoing AND f.kind = 'METHOD' AND f.parent_id IS NOT NULL AND 'calls' = ANY (relations)
        UNION ALL
        SELECT a.member_id, a.name, base.target_id, a.depth + 1
        FROM above a
        JOIN rag.refs b ON b.from_id = a.class_id AND b.kind IN ('inherits', 'implements')
        JOIN rag.ref_resolution base ON base.ref_id = b.id AND base.target_id IS NOT NULL
        WHERE a.depth < 8
    ),
    -- A Go method's type (written beside it, outside any class) and the
    -- interfaces that type satisfies: calls of theirs may run it.
    go_methods AS MATERIALIZED (
        SELECT f.id AS member_id, f.name, t.id AS type_id
        FROM front f
        JOIN rag.files ff ON ff.id = f.file_id AND ff.language = 'go'
        JOIN rag.symbols t ON t.source_id = f.source_id AND t.fqn = f.owner AND t.kind IN ('STRUCT', 'TYPE')
        JOIN rag.files tf ON tf.id = t.file_id AND rag._folder(tf.path) = rag._folder(ff.path)
        WHERE NOT outgoing AND f.kind = 'METHOD' AND f.parent_id IS NULL AND 'calls' = ANY (relations)
    ),
    overridden AS (
        SELECT DISTINCT a.member_id, m.id AS base_member_id
        FROM above a
        JOIN rag.symbols c ON c.id = a.class_id
        JOIN rag.symbols m ON m.file_id = c.file_id AND m.fqn = c.fqn || '.' || a.name
        WHERE a.depth > 0
        UNION
        SELECT g.member_id, m.id
        FROM go_methods g
        JOIN rag._go_satisfied(ARRAY(SELECT g.type_id FROM go_methods g), true) i ON i.type_id = g.type_id
        JOIN rag.symbols c ON c.id = i.interface_id
        JOIN rag.symbols m ON m.file_id = c.file_id AND m.fqn = c.fqn || '.' || g.name
    )
    -- outgoing: references made inside the frontier
    SELECT r.from_id, t.id, t.file_id, w.relation, r.line, r.file_id, x.candidates > 1
    FROM rag.refs r
    JOIN wanted w ON w.kind = r.kind
    JOIN rag.ref_resolution x ON x.ref_id = r.id
    JOIN LATERAL (
        SELECT s.id, s.file_id FROM rag.symbols s WHERE s.id = x.target_id
        UNION ALL
        SELECT s.id, s.file_id FROM rag.ref_candidates c JOIN rag.symbols s ON s.id = c.symbol_id
        WHERE c.ref_id = r.id
        UNION ALL
        SELECT s.id, s.file_id FROM rag.symbols s
        WHERE x.candidates > 1 AND x.resolved_by = 'name' AND s.source_id = r.source_id
          AND s.name = r.name AND rag._owner_matches(r.owner, s.owner)
    ) t ON true
    WHERE outgoing AND r.from_id = ANY (frontier) AND (dynamic OR NOT rag._is_dynamic(r.owner, x.resolved_by))
    UNION ALL
    -- incoming: references to the frontier, resolved, kept as a candidate, or by name
    SELECT hit.symbol_id, r.from_id, r.file_id, w.relation, r.line, r.file_id, hit.ambiguous
    FROM (
        SELECT x.ref_id, x.target_id AS symbol_id, false AS ambiguous, x.resolved_by, false AS overriding
        FROM rag.ref_resolution x WHERE x.target_id = ANY (frontier)
        UNION ALL
        -- (candidates are kept for the narrow levels only, never by name)
        SELECT c.ref_id, c.symbol_id, true, 'candidate', false FROM rag.ref_candidates c
        WHERE c.symbol_id = ANY (frontier)
        UNION ALL
        SELECT r.id, f.id, true, x.resolved_by, false
        FROM front f
        JOIN rag.refs r ON r.source_id = f.source_id AND r.name = f.name
        JOIN rag.ref_resolution x ON x.ref_id = r.id
        WHERE x.candidates > 1 AND x.resolved_by = 'name' AND rag._owner_matches(r.owner, f.owner)
        UNION ALL
        -- a call of a base class's method this one overrides may run this one
        SELECT x.ref_id, o.member_id, true, x.resolved_by, true
        FROM overridden o JOIN rag.ref_resolution x ON x.target_id = o.base_member_id
    ) hit
    -- (lateral: an index lookup per hit, never a scan of all references)
    CROSS JOIN LATERAL (SELECT r.* FROM rag.refs r WHERE r.id = hit.ref_id) r
    JOIN wanted w ON w.kind = r.kind
    WHERE NOT outgoing
      AND (dynamic OR NOT rag._is_dynamic(r.owner, hit.resolved_by))
      -- (super().f() names the base's f, whoever overrides it; so do
      -- Base.f(self) and an override's own Base::f())
      AND NOT (hit.overriding AND (r.inherited_only OR r.explicit_class OR r.from_id = hit.symbol_id))
    UNION ALL
    -- a Go type and the interfaces it satisfies (nothing declares it)
    SELECT CASE WHEN outgoing THEN g.type_id ELSE g.interface_id END, s.id, s.file_id, 'inherits',
           NULL::integer, s.file_id, false
    FROM rag._go_satisfied(CASE WHEN 'inherits' = ANY (relations) THEN frontier END, outgoing) g
    JOIN rag.symbols s ON s.id = CASE WHEN outgoing THEN g.interface_id ELSE g.type_id END
    UNION ALL
    -- containment: members, or the enclosing definition
    SELECT CASE WHEN outgoing THEN s.parent_id ELSE s.id END,
           CASE WHEN outgoing THEN s.id ELSE s.parent_id END,
           s.file_id, 'contains', NULL::integer, s.file_id, false
    FROM rag.symbols s
    WHERE 'contains' = ANY (relations)
      AND ((outgoing AND s.parent_id = ANY (frontier)) OR (NOT outgoing AND s.id = ANY (frontier)
                                                          AND s.parent_id IS NOT NULL))
$$;
COMMENT ON FUNCTION rag._graph_edges(bigint[], text[], boolean, boolean) IS
    'Private: the edges of the given relations (calls, imports, inherits, contains) leaving (outgoing) or entering a set of definitions; dynamic-dispatch guesses only when dynamic.';

-- ---------------------------------------------------------------------------
-- _start_symbol: the one definition a traversal starts from
CREATE OR REPLACE FUNCTION rag._start_symbol(
    symbol text,
    sources text[]
)
RETURNS bigint
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    found  bigint[];
    listed text;
    total  bigint;
BEGIN
    SELECT array_agg(m.symbol_id ORDER BY m.path, m.start_line),
           string_agg(m.path || ':' || m.fqn, ', ' ORDER BY m.path, m.start_line), max(m.total)
      INTO found, listed, total
    FROM (SELECT * FROM rag.find_symbols(symbol, sources, NULL, 10) ORDER BY 1) m;
    IF found IS NULL THEN
        RAISE EXCEPTION 'symbol %: no such definition; try rag.find_symbols(%)',
            quote_literal(symbol), quote_literal(symbol) USING ERRCODE = 'no_data_found';
    END IF;
    -- An exact fqn defined once wins over definitions merely named so.
    IF cardinality(found) > 1 THEN
        SELECT array_agg(m.symbol_id) INTO found
        FROM rag.find_symbols(symbol, sources, NULL, 1000) m
        WHERE m.fqn = replace(substr(symbol, position(':' IN symbol) + 1), '::', '.');
        IF cardinality(found) IS DISTINCT FROM 1 THEN
            RAISE EXCEPTION 'symbol % is ambiguous: % definitions (%); pass path:fqn',
                quote_literal(symbol), total, listed USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    RETURN found[1];
END
$$;
COMMENT ON FUNCTION rag._start_symbol(text, text[]) IS
    'Private: the definition a name, fqn or path:fqn means; fails listing the candidates when it means several.';

-- ---------------------------------------------------------------------------
-- traverse
-- (dynamic was added: CREATE OR REPLACE cannot add an argument)
DROP FUNCTION IF EXISTS rag.traverse(text, text[], text, integer, text[], integer);
CREATE OR REPLACE FUNCTION rag.traverse(
    symbol text,
    relations text[] DEFAULT ARRAY['calls'],
    direction text DEFAULT 'out',
    max_depth integer DEFAULT 1,
    sources text[] DEFAULT NULL,
    max_rows integer DEFAULT 500,
    dynamic boolean DEFAULT false  -- also x.f() with x of unknown type: every method named f
)
RETURNS SETOF rag.graph_row
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
DECLARE
    start_id bigint;
    outgoing boolean;
    frontier bigint[];
    seen     jsonb;  -- definition id -> edge path
    level    integer := 0;
    emitted  integer := 0;
    step     jsonb;
    looped   boolean := false;  -- the start was reached again
    bad      text;
BEGIN
    IF direction IS NULL OR direction NOT IN ('in', 'out') THEN
        RAISE EXCEPTION 'traverse: direction must be in (callers, subtypes) or out (callees, supertypes), not %',
            quote_literal(coalesce(direction, 'NULL')) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT r INTO bad FROM unnest(relations) AS r
    WHERE r IS NULL OR r NOT IN ('calls', 'imports', 'inherits', 'contains') LIMIT 1;
    IF bad IS NOT NULL OR relations IS NULL OR cardinality(relations) = 0 THEN
        RAISE EXCEPTION 'traverse: relations must be some of calls, imports, inherits, contains, not %',
            quote_literal(coalesce(bad, 'NULL')) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_depth IS NULL OR max_depth < 1 OR max_depth > 10 THEN
        RAISE EXCEPTION 'traverse: max_depth must be between 1 and 10, not %', coalesce(max_depth::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    start_id := rag._start_symbol(symbol, sources);
    outgoing := direction = 'out';
    frontier := ARRAY[start_id];
    SELECT jsonb_build_object(s.id::text, jsonb_build_array(s.fqn)) INTO seen
    FROM rag.symbols s WHERE s.id = start_id;
    -- Breadth first, each definition once (the start twice when it is
    -- recursive): cycles end, and depth bounds the work.
    WHILE level < max_depth AND cardinality(frontier) > 0 AND emitted < max_rows LOOP
        level := level + 1;
        SELECT coalesce(jsonb_agg(x), '[]') INTO step FROM (
            SELECT DISTINCT ON (e.to_id, CASE WHEN e.to_id IS NULL THEN e.ref_file END,
                                CASE WHEN e.to_id IS NULL THEN e.ref_line END)
                   e.to_id, e.to_file, e.relation, e.ref_line, e.ambiguous,
                   (seen -> e.from_id::text)
                   || to_jsonb(coalesce((SELECT t.fqn FROM rag.symbols t WHERE t.id = e.to_id), '<module>'))
                   AS edge_path
            FROM rag._graph_edges(frontier, relations, outgoing, coalesce(dynamic, false)) e
            -- the start itself once more: it is recursive
            WHERE e.to_id IS NULL OR NOT seen ? e.to_id::text OR (e.to_id = start_id AND NOT looped)
            ORDER BY e.to_id, CASE WHEN e.to_id IS NULL THEN e.ref_file END,
                     CASE WHEN e.to_id IS NULL THEN e.ref_line END, e.ambiguous, e.from_id
        ) x;
        RETURN QUERY
        SELECT level, g.to_id, t.fqn, coalesce(t.kind, 'MODULE'), f.path,
               coalesce(t.start_line, g.ref_line), coalesce(t.end_line, g.ref_line), g.relation,
               g.ref_line, g.ambiguous, ARRAY(SELECT jsonb_array_elements_text(g.edge_path))
        FROM jsonb_to_recordset(step) AS g(to_id bigint, to_file bigint, relation text,
                                           ref_line integer, ambiguous boolean, edge_path jsonb)
        -- (lateral: index lookups, never a scan of all files or symbols)
        CROSS JOIN LATERAL (SELECT f.path FROM rag.files f WHERE f.id = g.to_file) f
        LEFT JOIN LATERAL (SELECT t.* FROM rag.symbols t WHERE t.id = g.to_id) t ON true
        ORDER BY g.ambiguous, f.path, coalesce(t.start_line, g.ref_line)
        LIMIT max_rows - emitted;
        emitted := emitted + jsonb_array_length(step);
        looped := looped OR step @> jsonb_build_array(jsonb_build_object('to_id', start_id));
        SELECT seen || coalesce(jsonb_object_agg(g.to_id::text, g.edge_path), '{}'),
               coalesce(array_agg(g.to_id), '{}')
          INTO seen, frontier
        FROM jsonb_to_recordset(step) AS g(to_id bigint, edge_path jsonb)
        WHERE g.to_id IS NOT NULL AND g.to_id <> start_id;
    END LOOP;
END
$$;
COMMENT ON FUNCTION rag.traverse(text, text[], text, integer, text[], integer, boolean) IS
    'Definitions reached from symbol (name, fqn or path:fqn) over relations (calls, imports, inherits, contains), direction out (callees, supertypes, members) or in (callers, subtypes), breadth first up to max_depth, each once, with the path of fqns that led there; calls on receivers of unknown type (dynamic dispatch) only when dynamic.';

-- ---------------------------------------------------------------------------
-- callers, callees, subtypes, supertypes: rag.traverse with one relation
CREATE OR REPLACE FUNCTION rag.callers(
    symbol text,
    max_depth integer DEFAULT 1,
    sources text[] DEFAULT NULL,
    max_rows integer DEFAULT 500
)
RETURNS SETOF rag.graph_row
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT * FROM rag.traverse(symbol, ARRAY['calls'], 'in', max_depth, sources, max_rows)
$$;
COMMENT ON FUNCTION rag.callers(text, integer, text[], integer) IS
    'Who calls symbol (name, fqn or path:fqn), up to max_depth calls away: rag.traverse over calls, inwards.';

CREATE OR REPLACE FUNCTION rag.callees(
    symbol text,
    max_depth integer DEFAULT 1,
    sources text[] DEFAULT NULL,
    max_rows integer DEFAULT 500
)
RETURNS SETOF rag.graph_row
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT * FROM rag.traverse(symbol, ARRAY['calls'], 'out', max_depth, sources, max_rows)
$$;
COMMENT ON FUNCTION rag.callees(text, integer, text[], integer) IS
    'What symbol calls, up to max_depth calls away: rag.traverse over calls, outwards.';

CREATE OR REPLACE FUNCTION rag.subtypes(
    symbol text,
    max_depth integer DEFAULT 1,
    sources text[] DEFAULT NULL,
    max_rows integer DEFAULT 500
)
RETURNS SETOF rag.graph_row
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT * FROM rag.traverse(symbol, ARRAY['inherits'], 'in', max_depth, sources, max_rows)
$$;
COMMENT ON FUNCTION rag.subtypes(text, integer, text[], integer) IS
    'Classes and interfaces that extend or implement symbol, up to max_depth levels down.';

CREATE OR REPLACE FUNCTION rag.supertypes(
    symbol text,
    max_depth integer DEFAULT 1,
    sources text[] DEFAULT NULL,
    max_rows integer DEFAULT 500
)
RETURNS SETOF rag.graph_row
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT * FROM rag.traverse(symbol, ARRAY['inherits'], 'out', max_depth, sources, max_rows)
$$;
COMMENT ON FUNCTION rag.supertypes(text, integer, text[], integer) IS
    'What symbol extends or implements, up to max_depth levels up.';

-- ---------------------------------------------------------------------------
-- _is_module_import: an import of a whole module (import *, #include), which
-- names no definition: never resolved, and not counted as unresolved
CREATE OR REPLACE FUNCTION rag._is_module_import(
    kind text,
    name text
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN kind = 'import' AND name = '*';
COMMENT ON FUNCTION rag._is_module_import(text, text) IS
    'Private: whether a reference imports a whole module (import *, export * from, #include): it names no definition.';

-- ---------------------------------------------------------------------------
-- graph_status
-- (dynamic, then modules were added: CREATE OR REPLACE cannot change the
-- columns, so a version without them is dropped, once)
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_proc p
               WHERE p.oid = to_regprocedure('rag.graph_status(text[])')
                 AND NOT ('modules' = ANY (p.proargnames))) THEN
        DROP FUNCTION rag.graph_status(text[]);
    END IF;
END
$$;
CREATE OR REPLACE FUNCTION rag.graph_status(
    sources text[] DEFAULT NULL
)
RETURNS TABLE (
    source     text,
    symbols    bigint,
    refs       bigint,
    resolved   bigint,
    ambiguous  bigint,
    unresolved bigint,  -- calls through dynamic dispatch, builtins, other packages
    pending    bigint,  -- waiting for rag.resolve_refs (an interrupted run)
    dynamic    bigint,  -- calls on a receiver of unknown type: found by the name only, or not at all
    modules    bigint   -- imports of a whole module (import *, #include): they name no definition
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT s.name,
           (SELECT count(*) FROM rag.symbols y WHERE y.source_id = s.id),
           r.total, x.resolved, x.ambiguous, r.total - x.resolved - x.ambiguous - r.pending - r.modules,
           r.pending, r.dynamic, r.modules
    FROM rag.sources s
    CROSS JOIN LATERAL (
        SELECT coalesce((SELECT g.resolved_upto FROM rag.graph_sources g WHERE g.source_id = s.id), 0) AS upto
    ) g
    CROSS JOIN LATERAL (
        SELECT count(*) AS total,
               count(*) FILTER (WHERE y.id > g.upto) AS pending,
               count(*) FILTER (WHERE y.id <= g.upto AND y.kind = 'call' AND y.owner = ''
                                  AND (z.ref_id IS NULL OR rag._is_dynamic(y.owner, z.resolved_by))) AS dynamic,
               count(*) FILTER (WHERE y.id <= g.upto AND z.ref_id IS NULL AND rag._is_module_import(y.kind, y.name))
                   AS modules
        FROM rag.refs y LEFT JOIN rag.ref_resolution z ON z.ref_id = y.id
        WHERE y.source_id = s.id) r
    CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE z.candidates = 1) AS resolved,
               count(*) FILTER (WHERE z.candidates > 1) AS ambiguous
        FROM rag.ref_resolution z WHERE z.source_id = s.id) x
    WHERE s.id = ANY (coalesce(rag._graph_source_ids(sources), ARRAY(SELECT id FROM rag.sources)))
    ORDER BY s.name
$$;
COMMENT ON FUNCTION rag.graph_status(text[]) IS
    'Per source: definitions, references, and how many references are resolved, ambiguous, unresolved or pending, how many of them are calls through dynamic dispatch (a receiver of unknown type: found by the name only, or not at all), and how many import a whole module (import *, #include: no definition to resolve to).';

-- ---------------------------------------------------------------------------
-- ref_status: every reference with what it resolved to
CREATE OR REPLACE VIEW rag.ref_status AS
SELECT r.id, r.source_id, r.file_id, f.path, r.line, r.kind, r.name, r.from_id,
       CASE WHEN x.ref_id IS NOT NULL THEN CASE WHEN x.candidates = 1 THEN 'resolved' ELSE 'ambiguous' END
            WHEN r.id > coalesce(g.resolved_upto, 0) THEN 'pending'
            WHEN rag._is_module_import(r.kind, r.name) THEN 'module'
            ELSE 'unresolved' END AS status,
       x.resolved_by, x.target_id, coalesce(x.candidates, 0) AS candidates
FROM rag.refs r
JOIN rag.files f ON f.id = r.file_id
LEFT JOIN rag.ref_resolution x ON x.ref_id = r.id
LEFT JOIN rag.graph_sources g ON g.source_id = r.source_id;
COMMENT ON VIEW rag.ref_status IS
    'Every reference with its status (resolved, ambiguous, unresolved, pending, or module: an import of a whole module), the level that resolved it, its target and number of candidates.';
