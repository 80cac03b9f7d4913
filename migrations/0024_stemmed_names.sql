-- Code chunks' names also post their stems (name:stem: terms, rag._name_stem in
-- sql/015_keywords.sql; decision 034, session 31). The postings of an existing
-- index are made again from the stored chunks, once: clearing the row that says
-- they are intact has rag init rebuild them (rag.ensure_keyword_data) after
-- the new functions are in place, as after a crash. No re-chunking, no
-- re-embedding; a database without chunks has nothing to rebuild.
DELETE FROM rag.keyword_data_intact WHERE EXISTS (SELECT 1 FROM rag.chunks);
