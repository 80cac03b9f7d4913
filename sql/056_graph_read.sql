-- The code graph, reading: find_symbols, traverse and its shorthands,
-- graph_status and ref_status. Design notes: sql/GRAPH.md.

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
    source_ids  bigint[] := rag._source_ids(sources, 'find_symbols');
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
-- _graph_edges: one step from a set of definitions
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
        RAISE EXCEPTION 'symbol %: no such definition', quote_literal(symbol)
            USING ERRCODE = 'no_data_found', HINT = format('try: rag.find_symbols(%L)', symbol);
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
    start_source text;  -- every row's: resolution never leaves a source
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
    SELECT s.name INTO start_source FROM rag.symbols y JOIN rag.sources s ON s.id = y.source_id WHERE y.id = start_id;
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
               g.ref_line, g.ambiguous, ARRAY(SELECT jsonb_array_elements_text(g.edge_path)), start_source
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
    'Definitions reached from symbol (name, fqn or path:fqn) over relations (calls, imports, inherits, contains), direction out (callees, supertypes, members) or in (callers, subtypes), breadth first up to max_depth, each once, with the path of fqns that led there and the source; calls on receivers of unknown type (dynamic dispatch) only when dynamic.';

-- ---------------------------------------------------------------------------
-- callers, callees, subtypes, supertypes: rag.traverse with one relation
CREATE OR REPLACE FUNCTION rag.callers(
    symbol text,
    max_depth integer DEFAULT 1,
    sources text[] DEFAULT NULL,
    max_rows integer DEFAULT 500,
    dynamic boolean DEFAULT false  -- as in rag.traverse
)
RETURNS SETOF rag.graph_row
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT * FROM rag.traverse(symbol, ARRAY['calls'], 'in', max_depth, sources, max_rows, dynamic)
$$;
COMMENT ON FUNCTION rag.callers(text, integer, text[], integer, boolean) IS
    'Who calls symbol (name, fqn or path:fqn), up to max_depth calls away: rag.traverse over calls, inwards.';

CREATE OR REPLACE FUNCTION rag.callees(
    symbol text,
    max_depth integer DEFAULT 1,
    sources text[] DEFAULT NULL,
    max_rows integer DEFAULT 500,
    dynamic boolean DEFAULT false  -- as in rag.traverse
)
RETURNS SETOF rag.graph_row
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT * FROM rag.traverse(symbol, ARRAY['calls'], 'out', max_depth, sources, max_rows, dynamic)
$$;
COMMENT ON FUNCTION rag.callees(text, integer, text[], integer, boolean) IS
    'What symbol calls, up to max_depth calls away: rag.traverse over calls, outwards.';

CREATE OR REPLACE FUNCTION rag.subtypes(
    symbol text,
    max_depth integer DEFAULT 1,
    sources text[] DEFAULT NULL,
    max_rows integer DEFAULT 500,
    dynamic boolean DEFAULT false  -- as in rag.traverse
)
RETURNS SETOF rag.graph_row
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT * FROM rag.traverse(symbol, ARRAY['inherits'], 'in', max_depth, sources, max_rows, dynamic)
$$;
COMMENT ON FUNCTION rag.subtypes(text, integer, text[], integer, boolean) IS
    'Classes and interfaces that extend or implement symbol, up to max_depth levels down.';

CREATE OR REPLACE FUNCTION rag.supertypes(
    symbol text,
    max_depth integer DEFAULT 1,
    sources text[] DEFAULT NULL,
    max_rows integer DEFAULT 500,
    dynamic boolean DEFAULT false  -- as in rag.traverse
)
RETURNS SETOF rag.graph_row
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT * FROM rag.traverse(symbol, ARRAY['inherits'], 'out', max_depth, sources, max_rows, dynamic)
$$;
COMMENT ON FUNCTION rag.supertypes(text, integer, text[], integer, boolean) IS
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
    WHERE s.id = ANY (coalesce(rag._source_ids(sources, 'graph_status'), ARRAY(SELECT id FROM rag.sources)))
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
