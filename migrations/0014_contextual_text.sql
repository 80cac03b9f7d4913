-- Contextual chunk text (indexing.context: llm): one or two sentences an LLM
-- writes to situate a chunk in its document (rag/contextual/). BM25 and the
-- embedding model see it after the structural context (path, fqn or
-- headerPath) and before the content (rag._chunk_prefix); it is shown apart
-- from the content, never mixed into it.
ALTER TABLE rag.chunks
    ADD COLUMN contextual_text   text NOT NULL DEFAULT '',
    ADD COLUMN contextual_model  text,   -- the LLM that wrote it; NULL: none asked (yet)
    ADD COLUMN contextual_prompt text;   -- the version of the prompt it answered
COMMENT ON COLUMN rag.chunks.contextual_text IS
    'Sentences an LLM wrote to situate the chunk in its document (indexing.context: llm); indexed after context, shown apart.';

-- The LLM's answers, keyed like embeddings by what determines them: the
-- model, the prompt's version, the document (rag.files.sha256) and the chunk
-- (sha256 of its content). A re-index, --force, or the same document under
-- another path or source never asks again; another model or prompt asks anew.
CREATE TABLE rag.contextual_texts (
    model           text NOT NULL,
    prompt_version  text NOT NULL,
    document_hash   text NOT NULL,
    chunk_hash      text NOT NULL,
    contextual_text text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, prompt_version, document_hash, chunk_hash)
);

-- read_chunk shows a chunk's contextual text beside its lines.
ALTER TYPE rag.excerpt ADD ATTRIBUTE contextual_text text;
