-- The code graph: definitions and references taken from a file's syntax tree
-- when it is chunked, replaced with the file's chunks (rag._replace_graph),
-- and references resolved to definitions by rag.resolve_refs (sql/050_graph.sql).
-- Every row carries source_id, the distribution key a Citus cluster would use.
-- Rows of a file reference only rag.files (their source goes with its files);
-- migration 0007 drops those foreign keys too (a check per row, 170k rows for Django).

-- What a code file is imported as: every tail of its path stem ("a/b/c",
-- "b/c", "c" for a/b/c.py; the package folder too for __init__.py/index.ts).
CREATE TABLE rag.code_modules (
    source_id bigint NOT NULL,
    file_id   bigint NOT NULL REFERENCES rag.files (id) ON DELETE CASCADE,
    stem      text NOT NULL,
    full_stem boolean NOT NULL,                -- the whole path: what a relative import names
    folder    text NOT NULL                    -- the file's folder: its "package"
);
CREATE INDEX code_modules_stem_idx ON rag.code_modules (source_id, stem);
CREATE INDEX code_modules_folder_idx ON rag.code_modules (source_id, folder) WHERE full_stem;
CREATE INDEX code_modules_file_idx ON rag.code_modules (file_id);

-- A definition: class, function, method, ... named by its fqn as chunks are.
CREATE TABLE rag.symbols (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_id  bigint NOT NULL,
    file_id    bigint NOT NULL REFERENCES rag.files (id) ON DELETE CASCADE,
    fqn        text NOT NULL,                  -- Cart.total
    name       text NOT NULL,                  -- total: the fqn's last part
    owner      text,                           -- Cart: the part before it, NULL at top level
    parent_id  bigint,                         -- the definition it is nested in (same file)
    kind       text NOT NULL,                  -- CLASS, METHOD, FUNCTION, ... (fragmentType)
    start_line integer NOT NULL,
    end_line   integer NOT NULL,
    signature  text NOT NULL DEFAULT ''
);
CREATE INDEX symbols_name_idx ON rag.symbols (source_id, name);
CREATE INDEX symbols_fqn_idx ON rag.symbols (source_id, fqn);
CREATE INDEX symbols_file_idx ON rag.symbols (file_id, fqn);

-- A use of a name: a call, an import, a base class or interface. Written once
-- with its file; what it resolves to is in rag.ref_resolution.
CREATE TABLE rag.refs (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_id      bigint NOT NULL,
    file_id        bigint NOT NULL REFERENCES rag.files (id) ON DELETE CASCADE,
    from_id        bigint,                     -- the enclosing definition, NULL at module level
    kind           text NOT NULL,              -- call | import | inherits | implements
    name           text NOT NULL,
    line           integer NOT NULL,
    owner          text,                       -- whole-source lookup: NULL top level, '' any member, else a class name
    keys           text[] NOT NULL DEFAULT '{}',  -- fqns to try in the same file, then folder
    target_stems   text[] NOT NULL DEFAULT '{}',  -- from the import map: module stems ...
    target_fqns    text[] NOT NULL DEFAULT '{}',  -- ... and the fqn looked for in each
    self_class     text,                       -- the class self/this means (fqn, same file)
    inherited_only boolean NOT NULL DEFAULT false,  -- super.f()
    imported       boolean NOT NULL DEFAULT false   -- bound by an import: nothing else may resolve it
);
CREATE INDEX refs_file_idx ON rag.refs (file_id);
CREATE INDEX refs_name_idx ON rag.refs (source_id, name);
CREATE INDEX refs_from_idx ON rag.refs (from_id) WHERE from_id IS NOT NULL;

-- What a reference resolved to: one definition (target_id), or several
-- (candidates > 1: in rag.ref_candidates, or at the name level every
-- definition of its name). A resolved-through reference without a row is
-- unresolved, or pending when newer than rag.graph_sources.resolved_upto.
-- Rows are inserted, never updated: resolving is cheap to write.
CREATE TABLE rag.ref_resolution (
    ref_id      bigint PRIMARY KEY,
    source_id   bigint NOT NULL REFERENCES rag.sources (id) ON DELETE CASCADE,
    resolved_by text NOT NULL,                 -- import | file | class | folder | name
    target_id   bigint,                        -- the one definition, when resolved
    candidates  integer NOT NULL               -- definitions it may mean
);
CREATE INDEX ref_resolution_target_idx ON rag.ref_resolution (target_id) WHERE target_id IS NOT NULL;

-- Per source: references up to this id have been through rag.resolve_refs.
CREATE TABLE rag.graph_sources (
    source_id     bigint PRIMARY KEY REFERENCES rag.sources (id) ON DELETE CASCADE,
    resolved_upto bigint NOT NULL DEFAULT 0
);

-- The definitions an ambiguous reference may mean, when the ambiguity was
-- found in its file, class or folder (name-wide ambiguity is every definition
-- of that name, found by the name itself).
CREATE TABLE rag.ref_candidates (
    ref_id    bigint NOT NULL,
    symbol_id bigint NOT NULL,
    source_id bigint NOT NULL REFERENCES rag.sources (id) ON DELETE CASCADE,
    PRIMARY KEY (ref_id, symbol_id)
);
CREATE INDEX ref_candidates_symbol_idx ON rag.ref_candidates (symbol_id);

-- Names whose definitions changed since the last resolution: references of
-- these names are resolved again. Plain inserts (no key), so concurrent
-- writers never wait for each other here.
CREATE TABLE rag.graph_dirty_names (
    source_id bigint NOT NULL REFERENCES rag.sources (id) ON DELETE CASCADE,
    name      text NOT NULL
);
CREATE INDEX graph_dirty_names_idx ON rag.graph_dirty_names (source_id);

-- A row of rag.traverse and its shorthands (rag.callers, ...).
CREATE TYPE rag.graph_row AS (
    depth      integer,
    symbol_id  bigint,   -- NULL: module-level code (kind MODULE) of the file at path
    fqn        text,
    kind       text,
    path       text,
    start_line integer,
    end_line   integer,
    relation   text,     -- calls | imports | inherits | contains
    ref_line   integer,  -- the line of the reference (in the caller's file for callers)
    ambiguous  boolean,  -- the edge is one candidate of an ambiguous reference
    edge_path  text[]    -- fqns from the start to this row
);
