-- The code graph, resolving: pending references to their definitions, level
-- by level (rag.resolve_refs). Design notes: sql/GRAPH.md.

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
    -- New references, and those whose candidates may have changed: those of
    -- a dirty name, and those that name it through an alias (from m import
    -- work as _w: a call _w(); an alias of an alias, a few re-exports deep).
    WITH RECURSIVE dirty AS (
        DELETE FROM rag.graph_dirty_names d WHERE d.source_id = target_source_id RETURNING d.name
    ),
    named (name, depth) AS (
        SELECT DISTINCT dirty.name, 0 FROM dirty
        UNION
        SELECT e.keys[1], n.depth + 1
        FROM named n
        JOIN rag.refs e ON e.source_id = target_source_id AND e.name = n.name AND e.kind = 'import'
        WHERE e.keys[1] <> n.name AND n.depth < 4
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
      AND (r.id > upto OR r.name IN (SELECT DISTINCT n.name FROM named n));
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
