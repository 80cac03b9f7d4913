-- Confluence as a source (rag/sources/confluence/): a space's pages are its
-- files, keyed by the path SPACE/<page id>-<title>.

-- The source type joins local and git.
ALTER TABLE rag.sources DROP CONSTRAINT IF EXISTS sources_type_check;
ALTER TABLE rag.sources ADD CONSTRAINT sources_type_check CHECK (type IN ('local', 'git', 'confluence'));

-- What a remote document says of itself beyond its text: a page's id, space,
-- title, version, author, last modification, web URL, ancestors and read
-- restrictions (users and groups), kept with the page so that a shared
-- database can filter by them. NULL for files of a folder or a clone.
ALTER TABLE rag.files ADD COLUMN metadata jsonb;
COMMENT ON COLUMN rag.files.metadata IS
    'A remote document''s own fields (a Confluence page: pageId, space, title, version, author, '
    'lastModified, url, ancestors, restrictions); NULL for files.';

-- rag._file_batch returns the files' metadata too: a new return type, which
-- CREATE OR REPLACE in sql/022_storing.sql cannot give the old function.
DROP FUNCTION IF EXISTS rag._file_batch(jsonb);
