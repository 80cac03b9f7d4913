-- The code graph (tables: migrations/0006_code_graph.sql).
--
-- Storing: rag.replace_files calls rag._replace_graph with the batch, and
-- rag.delete_files calls rag._forget_graph, so a file's symbols and
-- references change in the transaction that changes its chunks. New
-- references are "pending"; the names of definitions that appeared or went
-- away are noted in rag.graph_dirty_names.
--
-- Resolving: rag.resolve_refs(source) (the indexer calls it at the end of a
-- run; a run killed before it leaves pending rows the next run resolves)
-- resolves the pending references and those whose name is dirty, by levels:
-- the file's import map, the same file, the class (self/this, through its
-- resolved bases), the same folder, then the name in the whole source. The
-- first level with candidates decides: one candidate resolves the
-- reference, several leave it "ambiguous" with every candidate kept
-- (rag.ref_candidates; at the name level, every definition of that name).
-- A reference's candidates only ever depend on definitions of its own name,
-- which is why dirty names are enough to re-resolve after a change.
--
-- Reading: rag.find_symbols, rag.traverse and its shorthands rag.callers,
-- rag.callees, rag.subtypes, rag.supertypes; rag.graph_status counts.

-- ---------------------------------------------------------------------------
-- _replace_graph: store the symbols and references of a replace_files batch
CREATE OR REPLACE FUNCTION rag._replace_graph(
    target_source_id bigint,
    file_batch jsonb
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    file_ids bigint[];
BEGIN
    SELECT coalesce(array_agg(f.id), '{}') INTO file_ids
    FROM jsonb_to_recordset(file_batch) AS b(path text)
    JOIN rag.files f ON f.source_id = target_source_id AND f.path = b.path;

    INSERT INTO rag.graph_dirty_names (source_id, name)
    SELECT DISTINCT target_source_id, s.name FROM rag.symbols s WHERE s.file_id = ANY (file_ids);
    DELETE FROM rag.symbols s WHERE s.file_id = ANY (file_ids);
    DELETE FROM rag.refs r WHERE r.file_id = ANY (file_ids);
    DELETE FROM rag.code_modules m WHERE m.file_id = ANY (file_ids);

    WITH batch AS MATERIALIZED (
        SELECT f.id AS file_id, b.path, b.graph
        FROM jsonb_to_recordset(file_batch) AS b(path text, graph jsonb)
        JOIN rag.files f ON f.source_id = target_source_id AND f.path = b.path
        WHERE jsonb_typeof(b.graph) = 'object'
    ),
    -- Ids are taken first, so that parents and the references' enclosing
    -- definitions are found by their position in the file's list.
    defs AS MATERIALIZED (
        SELECT nextval(pg_get_serial_sequence('rag.symbols', 'id')) AS id, g.file_id,
               (e.ordinality - 1)::integer AS ordinal, e.value,
               (regexp_match(e.value->>0, '([^.]*)$'))[1] AS name
        FROM batch g
        CROSS JOIN LATERAL jsonb_array_elements(g.graph->'symbols') WITH ORDINALITY AS e(value, ordinality)
    ),
    symbols_added AS (
        INSERT INTO rag.symbols (id, source_id, file_id, fqn, name, owner, parent_id, kind,
                                 start_line, end_line, signature)
        OVERRIDING SYSTEM VALUE
        SELECT d.id, target_source_id, d.file_id, d.value->>0, d.name,
               (regexp_match(d.value->>0, '([^.]*)\.[^.]*$'))[1],
               p.id, d.value->>1, (d.value->>2)::integer, (d.value->>3)::integer, d.value->>4
        FROM defs d
        LEFT JOIN defs p ON p.file_id = d.file_id AND p.ordinal = (d.value->>5)::integer
    ),
    names_added AS (
        INSERT INTO rag.graph_dirty_names (source_id, name)
        SELECT DISTINCT target_source_id, d.name FROM defs d
    ),
    refs_added AS (
        INSERT INTO rag.refs (source_id, file_id, from_id, kind, name, line, owner, keys,
                              target_stems, target_fqns, self_class, inherited_only, imported)
        SELECT target_source_id, g.file_id, scope.id, r.value->>0, r.value->>1, (r.value->>2)::integer,
               r.value->>4,
               ARRAY(SELECT jsonb_array_elements_text(r.value->5)),
               ARRAY(SELECT jsonb_array_elements_text(r.value->6)),
               ARRAY(SELECT jsonb_array_elements_text(r.value->7)),
               r.value->>8, (r.value->>9)::boolean, (r.value->>10)::boolean
        FROM batch g
        CROSS JOIN LATERAL jsonb_array_elements(g.graph->'refs') AS r(value)
        LEFT JOIN defs scope ON scope.file_id = g.file_id AND scope.ordinal = (r.value->>3)::integer
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
END
$$;
COMMENT ON FUNCTION rag._replace_graph(bigint, jsonb) IS
    'Private: replaces the symbols, references and module stems of a replace_files batch (its files'' "graph": {modules, symbols, refs}); the references wait for rag.resolve_refs.';

-- ---------------------------------------------------------------------------
-- _forget_graph: before files are deleted, note the names they defined
CREATE OR REPLACE FUNCTION rag._forget_graph(
    target_source_id bigint,
    paths text[]
)
RETURNS void
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
    INSERT INTO rag.graph_dirty_names (source_id, name)
    SELECT DISTINCT target_source_id, s.name
    FROM rag.files f JOIN rag.symbols s ON s.file_id = f.id
    WHERE f.source_id = target_source_id AND f.path = ANY (paths)
$$;
COMMENT ON FUNCTION rag._forget_graph(bigint, text[]) IS
    'Private: records the names defined in files about to be deleted, so references to them are resolved again (their rows go with the files).';

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
-- _ref_candidates: the definitions pending references may mean at one level
CREATE OR REPLACE FUNCTION rag._ref_candidates(
    target_source_id bigint,
    level text,
    ref_kinds text[]
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
        RETURN QUERY
        SELECT r.id, s.id, t.ord
        FROM rag.refs r
        CROSS JOIN LATERAL unnest(r.target_stems, r.target_fqns) WITH ORDINALITY AS t(stem, fqn, ord)
        JOIN rag.code_modules m ON m.source_id = target_source_id AND m.stem = ltrim(t.stem, '/')
                               AND (m.full_stem OR left(t.stem, 1) <> '/')
        JOIN rag.symbols s ON s.file_id = m.file_id AND s.fqn = t.fqn
        WHERE r.source_id = target_source_id AND r.status = 'pending' AND r.kind = ANY (ref_kinds)
          AND r.imported;
    ELSIF level = 'file' THEN
        RETURN QUERY
        SELECT r.id, s.id, k.ord
        FROM rag.refs r
        CROSS JOIN LATERAL unnest(r.keys) WITH ORDINALITY AS k(fqn, ord)
        JOIN rag.symbols s ON s.file_id = r.file_id AND s.fqn = k.fqn
        WHERE r.source_id = target_source_id AND r.status = 'pending' AND r.kind = ANY (ref_kinds)
          AND NOT r.imported;
    ELSIF level = 'class' THEN
        -- Members of the bases of self's class, nearest base first.
        RETURN QUERY
        WITH RECURSIVE chain (ref_id, name, class_id, depth) AS (
            SELECT r.id, r.name, b.target_id, 1
            FROM rag.refs r
            JOIN rag.symbols c ON c.file_id = r.file_id AND c.fqn = r.self_class
            JOIN rag.refs b ON b.from_id = c.id AND b.kind IN ('inherits', 'implements')
                           AND b.status = 'resolved'
            WHERE r.source_id = target_source_id AND r.status = 'pending'
              AND r.kind = ANY (ref_kinds) AND r.self_class IS NOT NULL AND NOT r.imported
            UNION ALL
            SELECT chain.ref_id, chain.name, b.target_id, chain.depth + 1
            FROM chain
            JOIN rag.refs b ON b.from_id = chain.class_id AND b.kind IN ('inherits', 'implements')
                           AND b.status = 'resolved'
            WHERE chain.depth < 8
        )
        SELECT chain.ref_id, s.id, chain.depth::bigint
        FROM chain
        JOIN rag.symbols base ON base.id = chain.class_id
        JOIN rag.symbols s ON s.file_id = base.file_id AND s.fqn = base.fqn || '.' || chain.name;
    ELSIF level = 'folder' THEN
        RETURN QUERY
        SELECT r.id, s.id, k.ord
        FROM rag.refs r
        JOIN rag.code_modules own ON own.file_id = r.file_id AND own.full_stem
        JOIN rag.code_modules near ON near.source_id = target_source_id AND near.full_stem
                                  AND near.folder = own.folder AND near.file_id <> r.file_id
        CROSS JOIN LATERAL unnest(r.keys) WITH ORDINALITY AS k(fqn, ord)
        JOIN rag.symbols s ON s.file_id = near.file_id AND s.fqn = k.fqn
        WHERE r.source_id = target_source_id AND r.status = 'pending' AND r.kind = ANY (ref_kinds)
          AND NOT r.imported AND NOT r.inherited_only;
    ELSIF level = 'name' THEN
        RETURN QUERY
        SELECT r.id, s.id, 1::bigint
        FROM rag.refs r
        JOIN rag.symbols s ON s.source_id = target_source_id AND s.name = r.name
        WHERE r.source_id = target_source_id AND r.status = 'pending' AND r.kind = ANY (ref_kinds)
          AND NOT r.imported AND rag._owner_matches(r.owner, s.owner);
    ELSE
        RAISE EXCEPTION '_ref_candidates: unknown level %', quote_literal(level)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;
COMMENT ON FUNCTION rag._ref_candidates(bigint, text, text[]) IS
    'Private: (reference, definition, rank) pairs for pending references of a source at one resolution level: import, file, class, folder or name.';

-- ---------------------------------------------------------------------------
-- resolve_refs
CREATE OR REPLACE FUNCTION rag.resolve_refs(
    target_source_id bigint
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    level    text;
    phase    text[];
    resolved bigint := 0;
    step     bigint;
BEGIN
    -- References whose candidates may have changed start again.
    WITH dirty AS (
        DELETE FROM rag.graph_dirty_names d WHERE d.source_id = target_source_id RETURNING d.name
    )
    UPDATE rag.refs r
       SET status = 'pending', resolved_by = NULL, target_id = NULL, candidates = 0
     WHERE r.source_id = target_source_id AND r.status <> 'pending'
       AND r.name IN (SELECT DISTINCT dirty.name FROM dirty);
    DELETE FROM rag.ref_candidates c
     USING rag.refs r
     WHERE c.ref_id = r.id AND r.source_id = target_source_id AND r.status = 'pending';

    -- Bases and imports first: self calls are looked up through resolved bases.
    FOREACH phase SLICE 1 IN ARRAY ARRAY[ARRAY['inherits', 'implements', 'import'],
                                         ARRAY['call', 'call', 'call']] LOOP
        FOREACH level IN ARRAY ARRAY['import', 'file', 'class', 'folder', 'name'] LOOP
            WITH found AS (
                SELECT c.ref_id, c.symbol_id, c.rank,
                       min(c.rank) OVER (PARTITION BY c.ref_id) AS best
                FROM rag._ref_candidates(target_source_id, level, phase) c
            ),
            best AS (
                SELECT f.ref_id, array_agg(DISTINCT f.symbol_id) AS ids
                FROM found f WHERE f.rank = f.best GROUP BY f.ref_id
            ),
            done AS (
                UPDATE rag.refs r
                   SET status = CASE WHEN cardinality(b.ids) = 1 THEN 'resolved' ELSE 'ambiguous' END,
                       resolved_by = level,
                       target_id = CASE WHEN cardinality(b.ids) = 1 THEN b.ids[1] END,
                       candidates = cardinality(b.ids)
                  FROM best b
                 WHERE r.id = b.ref_id
                RETURNING r.id, b.ids
            ),
            kept AS (
                INSERT INTO rag.ref_candidates (ref_id, symbol_id, source_id)
                SELECT d.id, unnest(d.ids), target_source_id
                FROM done d WHERE cardinality(d.ids) > 1 AND level <> 'name'
            )
            SELECT count(*) INTO step FROM done;
            resolved := resolved + step;
        END LOOP;
        UPDATE rag.refs r SET status = 'unresolved'
         WHERE r.source_id = target_source_id AND r.status = 'pending' AND r.kind = ANY (phase);
    END LOOP;
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
-- _graph_edges: one step from a set of definitions
CREATE OR REPLACE FUNCTION rag._graph_edges(
    frontier bigint[],
    relations text[],
    outgoing boolean
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
    WITH wanted AS (
        SELECT k.kind, k.relation FROM (VALUES ('call', 'calls'), ('import', 'imports'),
            ('inherits', 'inherits'), ('implements', 'inherits')) AS k(kind, relation)
        WHERE k.relation = ANY (relations)
    ),
    front AS (SELECT s.* FROM rag.symbols s WHERE s.id = ANY (frontier))
    -- outgoing: references made inside the frontier
    SELECT r.from_id, t.id, t.file_id, w.relation, r.line, r.file_id, r.status = 'ambiguous'
    FROM rag.refs r
    JOIN wanted w ON w.kind = r.kind
    JOIN LATERAL (
        SELECT s.id, s.file_id FROM rag.symbols s WHERE s.id = r.target_id
        UNION ALL
        SELECT s.id, s.file_id FROM rag.ref_candidates c JOIN rag.symbols s ON s.id = c.symbol_id
        WHERE c.ref_id = r.id
        UNION ALL
        SELECT s.id, s.file_id FROM rag.symbols s
        WHERE r.status = 'ambiguous' AND r.resolved_by = 'name' AND s.source_id = r.source_id
          AND s.name = r.name AND rag._owner_matches(r.owner, s.owner)
    ) t ON true
    WHERE outgoing AND r.from_id = ANY (frontier) AND r.status IN ('resolved', 'ambiguous')
    UNION ALL
    -- incoming: references to the frontier, resolved, kept as a candidate, or by name
    SELECT hit.symbol_id, r.from_id, r.file_id, w.relation, r.line, r.file_id, hit.ambiguous
    FROM (
        SELECT r.id AS ref_id, r.target_id AS symbol_id, false AS ambiguous
        FROM rag.refs r WHERE r.target_id = ANY (frontier)
        UNION ALL
        SELECT c.ref_id, c.symbol_id, true FROM rag.ref_candidates c WHERE c.symbol_id = ANY (frontier)
        UNION ALL
        SELECT r.id, f.id, true
        FROM front f
        JOIN rag.refs r ON r.source_id = f.source_id AND r.name = f.name
        WHERE r.status = 'ambiguous' AND r.resolved_by = 'name' AND rag._owner_matches(r.owner, f.owner)
    ) hit
    JOIN rag.refs r ON r.id = hit.ref_id
    JOIN wanted w ON w.kind = r.kind
    WHERE NOT outgoing
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
COMMENT ON FUNCTION rag._graph_edges(bigint[], text[], boolean) IS
    'Private: the edges of the given relations (calls, imports, inherits, contains) leaving (outgoing) or entering a set of definitions.';

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
CREATE OR REPLACE FUNCTION rag.traverse(
    symbol text,
    relations text[] DEFAULT ARRAY['calls'],
    direction text DEFAULT 'out',
    max_depth integer DEFAULT 1,
    sources text[] DEFAULT NULL,
    max_rows integer DEFAULT 500
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
                   (seen -> e.from_id::text) || to_jsonb(coalesce(t.fqn, '<module>')) AS edge_path
            FROM rag._graph_edges(frontier, relations, outgoing) e
            LEFT JOIN rag.symbols t ON t.id = e.to_id
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
        JOIN rag.files f ON f.id = g.to_file
        LEFT JOIN rag.symbols t ON t.id = g.to_id
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
COMMENT ON FUNCTION rag.traverse(text, text[], text, integer, text[], integer) IS
    'Definitions reached from symbol (name, fqn or path:fqn) over relations (calls, imports, inherits, contains), direction out (callees, supertypes, members) or in (callers, subtypes), breadth first up to max_depth, each once, with the path of fqns that led there.';

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
    pending    bigint   -- waiting for rag.resolve_refs (an interrupted run)
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT s.name,
           (SELECT count(*) FROM rag.symbols y WHERE y.source_id = s.id),
           r.total, r.resolved, r.ambiguous, r.unresolved, r.pending
    FROM rag.sources s
    CROSS JOIN LATERAL (
        SELECT count(*) AS total,
               count(*) FILTER (WHERE x.status = 'resolved') AS resolved,
               count(*) FILTER (WHERE x.status = 'ambiguous') AS ambiguous,
               count(*) FILTER (WHERE x.status = 'unresolved') AS unresolved,
               count(*) FILTER (WHERE x.status = 'pending') AS pending
        FROM rag.refs x WHERE x.source_id = s.id) r
    WHERE s.id = ANY (coalesce(rag._graph_source_ids(sources), ARRAY(SELECT id FROM rag.sources)))
    ORDER BY s.name
$$;
COMMENT ON FUNCTION rag.graph_status(text[]) IS
    'Per source: definitions, references, and how many references are resolved, ambiguous, unresolved or pending.';
