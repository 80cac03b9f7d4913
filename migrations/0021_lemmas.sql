-- Russian words by their lemma in the keyword index (decision 033): a word ->
-- lemma table filled at index time by the optional lemmatizer (pymorphy3,
-- `pip install local-rag[ru]`, rag/lemmas.py), read by the tokenizer of
-- documents and of queries alike (rag._prose_term, sql/015_keywords.sql), so a
-- query typed in psql gets the same terms. A row is never changed once
-- written: every Cyrillic word of a stored document has its row before the
-- document is posted, so a posting never disagrees with the table. Logged,
-- unlike the postings: rebuilding them after a crash reads it.
CREATE TABLE rag.lemmas (
    word  text PRIMARY KEY,  -- lowercase, ё as е (rag._folded)
    lemma text NOT NULL      -- the same form; its Snowball stem is what is posted
);

-- Whether the postings are made with rag.lemmas (search.lemmas, set by
-- rag.set_lemmas): off everywhere until a configuration turns it on.
ALTER TABLE rag.keyword_settings ADD COLUMN lemmas boolean NOT NULL DEFAULT false;
