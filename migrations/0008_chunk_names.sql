-- Code chunks' names (path, fqn, merged fqns) are posted as a keyword field of
-- their own, 'name:' terms (rag._name_frequencies, sql/015_keywords.sql), for
-- rag.search's names arm. Chunks stored before have none: as 0006 did, a size
-- no file has and a sha256 none has make the next index run read and chunk
-- every file again, storing its chunks with their names. Their texts do not
-- change, so no vector is computed again.
UPDATE rag.files SET size = -1, sha256 = '';
