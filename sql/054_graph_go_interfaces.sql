-- The code graph, Go interface satisfaction: which types have every method an
-- interface names, found at query time. Design notes: sql/GRAPH.md.

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
