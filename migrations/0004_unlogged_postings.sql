-- Postings are derived from the chunks' text, and writing their WAL took
-- about a sixth of a first index run (Django, keyword-only: 22.6 -> 19.0 s,
-- median of 3 alternated runs). Unlogged, they are emptied by a database
-- crash; so is the one row of rag.keyword_data_intact, unlogged as well, and
-- rag.ensure_keyword_data() then rebuilds the postings from the chunks.
ALTER TABLE rag.postings SET UNLOGGED;

CREATE UNLOGGED TABLE rag.keyword_data_intact (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton)
);
INSERT INTO rag.keyword_data_intact DEFAULT VALUES;
