-- The languages whose Snowball stems documents post (search.languages, set
-- by rag.set_languages): one row. Keyword functions take them as an argument
-- now (rag._stem_dictionaries()), so their one-argument versions go.
--
-- Postings stored before this stemmed every word with english_stem, which
-- leaves Cyrillic words whole. Where documents hold Cyrillic, the row says
-- so ({english}): the configured default, {english,russian}, then differs,
-- and the first connection's rag.set_languages re-posts every chunk from the
-- stored chunks (no re-chunking, no re-embedding). Elsewhere nothing changes.
CREATE TABLE rag.keyword_settings (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    languages text[] NOT NULL
);
INSERT INTO rag.keyword_settings (languages)
SELECT CASE WHEN EXISTS (SELECT 1 FROM rag.chunks c
                         WHERE c.metadata->>'sourceType' IN ('markdown', 'text', 'pdf')
                           AND (c.context ~ '[\u0400-\u04ff]' OR c.content ~ '[\u0400-\u04ff]'))
            THEN '{english}'::text[] ELSE '{english,russian}'::text[] END;

DROP FUNCTION IF EXISTS rag._keyword_terms(text);
DROP FUNCTION IF EXISTS rag._text_frequencies(text, text, jsonb);
DROP FUNCTION IF EXISTS rag._stem(text);
