-- An imperfective Russian verb takes its perfective partner's lemma where the
-- two differ only after the partner's Snowball stem (удалять -> удалить;
-- rag/lemmas.py, decision 033, session 32). A row of rag.lemmas is never
-- changed once written, so an index posted with lemmas makes them again, once:
-- the table is emptied and lemmas turned off, the postings are rebuilt from the
-- stored chunks by their stems in this rag init (rag.ensure_keyword_data, as
-- after a crash), and where search.lemmas is on, the same rag init (or the
-- first command) lemmatizes the stored documents' words afresh and posts them
-- again (lemmas.apply, rag.set_lemmas). No re-chunking, no re-embedding; an
-- index without lemmas has nothing to redo.
DELETE FROM rag.keyword_data_intact
WHERE EXISTS (SELECT 1 FROM rag.keyword_settings WHERE lemmas) AND EXISTS (SELECT 1 FROM rag.chunks);
UPDATE rag.keyword_settings SET lemmas = false WHERE lemmas;
DELETE FROM rag.lemmas;
