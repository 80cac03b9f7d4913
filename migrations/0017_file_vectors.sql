-- The files arm of rag.search (sql/034_fusion.sql): a code file's vector is
-- the mean of its chunks' vectors, so a question about what a module does can
-- find the module even when no single chunk shares its words.

CREATE TABLE rag.file_vectors (
    model     text NOT NULL REFERENCES rag.embedding_models (model) ON DELETE CASCADE,
    file_id   bigint NOT NULL REFERENCES rag.files (id) ON DELETE CASCADE,
    embedding vector NOT NULL,
    PRIMARY KEY (model, file_id)
);
CREATE INDEX file_vectors_file_idx ON rag.file_vectors (file_id);  -- (the cascade from rag.files)
COMMENT ON TABLE rag.file_vectors IS
    'Per model, the mean of a code file''s chunk vectors (rag.refresh_file_vectors); dropped when the file is replaced.';

-- Indexes made before this migration get theirs now, not at their next run.
INSERT INTO rag.file_vectors (model, file_id, embedding)
SELECT e.model, c.file_id, avg(e.embedding)
FROM rag.chunks c
JOIN rag.files f ON f.id = c.file_id AND f.source_type = 'code'
JOIN rag.embeddings e ON e.content_hash = c.content_hash
GROUP BY e.model, c.file_id
HAVING count(*) = (SELECT count(*) FROM rag.chunks o WHERE o.file_id = c.file_id);  -- every chunk embedded

-- rag.search gained files_weight: a new signature, so the old one goes.
DROP FUNCTION IF EXISTS rag.search(text, vector, integer, text[], text[], text[], text, double precision,
    double precision, integer, integer, text, double precision, double precision, text, double precision,
    double precision, jsonb, integer, boolean);
