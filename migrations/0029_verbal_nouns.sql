-- Russian verbal nouns and their verbs (decision 033, session 32): a query that
-- begins with a verbal noun ("Переименование файлов", a section's title) also
-- looks up its verb's stem (rag._title_verb, read by rag.parse_query), as the
-- section under such a title mostly says it with the verb. Filled by the
-- lemmatizer beside rag.lemmas (rag/lemmas.py): one row per lemma in -ние/-тие
-- it has looked at, the verb NULL where it found none. Emptied with rag.lemmas.
CREATE TABLE rag.verbal_nouns (
    noun text PRIMARY KEY,  -- a lemma of rag.lemmas (удаление)
    verb text               -- its verb's lemma (удалить), as rag.lemmas gives it; NULL: none found
);
