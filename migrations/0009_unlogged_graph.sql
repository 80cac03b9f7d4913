-- The code graph is derived from the code files, like the postings
-- (migration 0004), and writing its WAL took about a quarter of storing it
-- (Django: rag._replace_graph 2.1 -> 1.6 s). Unlogged, its tables (and their
-- id sequences) are emptied by a database crash; so is the one row of
-- rag.graph_data_intact, and rag.ensure_graph_data() then has the next index
-- run read every code file again.
ALTER TABLE rag.symbols SET UNLOGGED;
ALTER TABLE rag.refs SET UNLOGGED;
ALTER TABLE rag.code_modules SET UNLOGGED;
ALTER TABLE rag.ref_resolution SET UNLOGGED;
ALTER TABLE rag.ref_candidates SET UNLOGGED;

CREATE UNLOGGED TABLE rag.graph_data_intact (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton)
);
INSERT INTO rag.graph_data_intact DEFAULT VALUES;

-- Resolutions are deleted with their source by rag._forget_graph
-- (sql/050_graph.sql), not by foreign keys: a check per inserted resolution
-- was a fifth of resolving Django's references.
ALTER TABLE rag.ref_resolution DROP CONSTRAINT IF EXISTS ref_resolution_source_id_fkey;
ALTER TABLE rag.ref_candidates DROP CONSTRAINT IF EXISTS ref_candidates_source_id_fkey;
