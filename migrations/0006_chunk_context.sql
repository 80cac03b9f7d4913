-- A chunk's context: where it lies (the file's path, then its fqn or
-- headerPath), one item a line, built by rag.chunking.model.Chunk.context.
-- BM25 and the embedding model see it before the content (rag._indexed_text);
-- what is shown stays rag.chunks.content (measured: tests/eval/README.md).
ALTER TABLE rag.chunks ADD COLUMN context text NOT NULL DEFAULT '';
COMMENT ON COLUMN rag.chunks.context IS
    'Where the chunk lies, one item a line: file path, then fqn or headerPath; indexed before the content, not shown.';
COMMENT ON COLUMN rag.chunks.content_hash IS
    'sha256 of the indexed text (rag._indexed_text(context, content)): the embedding key.';

-- Chunks stored before have no context. A size no file has makes the next
-- index run read every file again, and a sha256 none has makes it chunk them
-- again (rag.plan_files, then the indexer's sha256 check): the context comes
-- in without --force, and changed texts are embedded again once.
UPDATE rag.files SET size = -1, sha256 = '';
