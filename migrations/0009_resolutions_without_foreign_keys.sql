-- Resolutions are deleted with their source by rag._forget_graph
-- (sql/050_graph.sql), not by foreign keys: a check per inserted row was a
-- fifth of resolving Django's references (rag.resolve_refs 1.95 -> 1.6 s).
ALTER TABLE rag.ref_resolution DROP CONSTRAINT IF EXISTS ref_resolution_source_id_fkey;
ALTER TABLE rag.ref_candidates DROP CONSTRAINT IF EXISTS ref_candidates_source_id_fkey;
