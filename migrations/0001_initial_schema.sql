-- One-time DDL for the rag schema. Never edit once landed: add a new migration.
-- The vector extension and the rag schema itself are created by `rag init`
-- before migrations run (yoyo keeps its bookkeeping tables in rag).

-- A named place files come from: a local folder or a git repository.
CREATE TABLE rag.sources (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name            text NOT NULL UNIQUE,
    type            text NOT NULL CHECK (type IN ('local', 'git')),
    location        text NOT NULL,             -- absolute path, or git URL
    branch          text,                      -- git only
    commit_sha      text,                      -- git only: what was indexed last
    config          jsonb NOT NULL DEFAULT '{}',  -- include/exclude as indexed
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_indexed_at timestamptz
);

-- One row per indexed file; size + mtime let unchanged files be skipped unread,
-- content keeps the text for read-back (works for git and remote databases).
CREATE TABLE rag.files (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_id   bigint NOT NULL REFERENCES rag.sources (id) ON DELETE CASCADE,
    path        text NOT NULL,                 -- relative to the source root, POSIX
    size        bigint NOT NULL,
    mtime_ns    bigint NOT NULL,
    sha256      text NOT NULL,
    source_type text,                          -- code | markdown | text | pdf
    language    text,
    content     text,
    error       text,                          -- why the file yielded no chunks
    indexed_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source_id, path)
);

-- Chunks of a file; replaced as a whole when the file changes.
CREATE TABLE rag.chunks (
    id           bigint GENERATED ALWAYS AS IDENTITY,
    source_id    bigint NOT NULL REFERENCES rag.sources (id) ON DELETE CASCADE,
    file_id      bigint NOT NULL REFERENCES rag.files (id) ON DELETE CASCADE,
    ordinal      integer NOT NULL,             -- position within the file
    content      text NOT NULL,
    content_hash text NOT NULL,                -- sha256 of content: the embedding key
    metadata     jsonb NOT NULL,               -- path, sourceType, lines, fqn, headerPath, pages
    term_count   integer NOT NULL DEFAULT 0,   -- BM25 document length
    terms        text[] NOT NULL DEFAULT '{}', -- its distinct terms: the keys of its postings
    -- Filtered keyword search reads a chunk's filter columns from the key index alone.
    PRIMARY KEY (id) INCLUDE (source_id, file_id),
    UNIQUE (file_id, ordinal)
);
CREATE INDEX chunks_source_idx ON rag.chunks (source_id);
CREATE INDEX chunks_content_hash_idx ON rag.chunks (content_hash);

-- Keyword search: one posting per (term, chunk) with its term frequency,
-- document frequencies per term and corpus totals for exact Okapi BM25.
-- Postings are kept by rag._add_chunks and rag._delete_chunks (which also keep
-- the statistics right), so no foreign key and its check per row. tf and the
-- chunk's length are in the key index: scoring a term reads that index alone.
-- A chunk's postings are found for deletion by its `terms` and this key, so
-- no second index slows the insertion of millions of postings.
CREATE TABLE rag.postings (
    term       text NOT NULL,
    chunk_id   bigint NOT NULL,
    tf         integer NOT NULL,
    term_count integer NOT NULL,               -- the chunk's length (chunks.term_count)
    PRIMARY KEY (term, chunk_id) INCLUDE (tf, term_count)
);

CREATE TABLE rag.term_stats (
    term text PRIMARY KEY,
    df   integer NOT NULL                      -- chunks containing the term
);

CREATE TABLE rag.corpus_stats (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    chunks      bigint NOT NULL DEFAULT 0,
    total_terms bigint NOT NULL DEFAULT 0      -- sum of term_count, for the average length
);
INSERT INTO rag.corpus_stats DEFAULT VALUES;

-- Embedding models seen; each gets its own HNSW index (fixed dimension cast).
CREATE TABLE rag.embedding_models (
    model      text PRIMARY KEY,               -- e.g. local:all-MiniLM-L6-v2@384
    dimensions integer NOT NULL CHECK (dimensions > 0),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Vectors keyed by (model, content hash): identical text anywhere is embedded
-- once, and a model switch never mixes dimensions.
CREATE TABLE rag.embeddings (
    model        text NOT NULL REFERENCES rag.embedding_models (model) ON DELETE CASCADE,
    content_hash text NOT NULL,
    embedding    vector NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, content_hash)
);

-- Embeddings of search queries, so a psql call without an embedding can reuse
-- the vector the CLI or MCP server computed for the same text.
CREATE TABLE rag.query_embeddings (
    model      text NOT NULL,
    query_hash text NOT NULL,                  -- md5 of the query text
    query      text NOT NULL,
    embedding  vector NOT NULL,
    used_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, query_hash)
);

-- Every index run, with its counts and per-file errors.
CREATE TABLE rag.index_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_id   bigint REFERENCES rag.sources (id) ON DELETE SET NULL,
    source_name text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    status      text NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
    counts      jsonb NOT NULL DEFAULT '{}',
    errors      jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX index_runs_source_idx ON rag.index_runs (source_id, started_at DESC);
