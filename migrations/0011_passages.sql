-- Passage vectors: a document chunk is also embedded paragraph group by
-- paragraph group (rag/chunking/passages.py), and the vector arm scores it by
-- the nearest of its vectors (rag.vector_search). A passage is
-- content[previous end:end_offset] of its chunk. Rows go with their chunk in
-- rag._delete_chunks (no foreign key: code chunks, the bulk of a corpus, have
-- no passages and should not pay a check on every delete).
CREATE TABLE rag.passages (
    chunk_id     bigint NOT NULL,
    ordinal      integer NOT NULL,             -- position within the chunk
    source_id    bigint NOT NULL,              -- the chunk's: a search of sources without documents skips passages
    end_offset   integer NOT NULL,             -- in the chunk's content, just past the passage
    content_hash text NOT NULL,                -- sha256 of its indexed text: the chunk's context, then the passage
    PRIMARY KEY (chunk_id, ordinal)
);
CREATE INDEX passages_content_hash_idx ON rag.passages (content_hash);
CREATE INDEX passages_source_idx ON rag.passages (source_id);

-- Their vectors, kept apart from the chunks' (rag.embeddings, same keys):
-- each population gets its own HNSW index, so a search for the nearest
-- chunks does not wade through passages' vectors, nor one for the nearest
-- passages through the many more chunks' of code.
CREATE TABLE rag.passage_embeddings (
    model        text NOT NULL REFERENCES rag.embedding_models (model) ON DELETE CASCADE,
    content_hash text NOT NULL,
    embedding    vector NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, content_hash)
);

-- As 0010: documents indexed before get their passages at the next index run.
UPDATE rag.files SET size = -1, sha256 = '' WHERE source_type IN ('markdown', 'text', 'pdf');
