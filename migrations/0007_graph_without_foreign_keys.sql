-- The code graph's rows of a file are deleted by the SQL that deletes the file
-- (rag._forget_graph, called by rag.delete_files and rag.remove_source), not
-- by foreign keys: a check per inserted row was a quarter of storing Django's
-- 134k references, 36k definitions and 10k module stems (sql/README.md).
ALTER TABLE rag.code_modules DROP CONSTRAINT IF EXISTS code_modules_file_id_fkey;
ALTER TABLE rag.symbols DROP CONSTRAINT IF EXISTS symbols_file_id_fkey;
ALTER TABLE rag.refs DROP CONSTRAINT IF EXISTS refs_file_id_fkey;

-- Folded into rag._forget_files_graph (sql/050_graph.sql).
DROP FUNCTION IF EXISTS rag._forget_resolutions(bigint[]);
