-- Documents are chunked differently: consecutive sections that fit the bound
-- together make one chunk (rag/chunking/markdown.py), and their text posts
-- stem: terms (rag._text_frequencies, sql/015_keywords.sql). As 0008 did, a
-- size no file has and a sha256 none has make the next index run read and
-- chunk these files again. Notebooks are code by sourceType but chunked by
-- sections too. Code files keep their chunks and postings.
UPDATE rag.files SET size = -1, sha256 = ''
WHERE source_type IS DISTINCT FROM 'code' OR path LIKE '%.ipynb';
