-- Confluence pages (rag/sources/confluence/): a page is a file whose path is
-- SPACE/<page id>-<title>, with its own fields in rag.files.metadata. Reading
-- one back by its id or title instead of its path.

-- ---------------------------------------------------------------------------
-- _page_path: the stored path of a page named by its id or title
CREATE OR REPLACE FUNCTION rag._page_path(
    source text,   -- NULL: any source
    page   text    -- a page id, or a title (case-insensitive)
)
RETURNS text
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- A stored path wins: a file may be named like a page title.
    SELECT f.path
    FROM rag.files f JOIN rag.sources s ON s.id = f.source_id
    WHERE s.type = 'confluence' AND (_page_path.source IS NULL OR s.name = _page_path.source)
      AND (f.metadata ->> 'pageId' = btrim(page) OR lower(f.metadata ->> 'title') = lower(btrim(page)))
      AND NOT EXISTS (SELECT 1 FROM rag.files g JOIN rag.sources t ON t.id = g.source_id
                      WHERE g.path = btrim(page) AND (_page_path.source IS NULL OR t.name = _page_path.source))
    ORDER BY f.metadata ->> 'pageId' = btrim(page) DESC, f.path
    LIMIT 1
$$;
COMMENT ON FUNCTION rag._page_path(text, text) IS
    'Private: the path of the Confluence page whose id or title (case-insensitive) is page, in source '
    '(NULL: any); NULL when none is, or when a stored file has that very path.';
