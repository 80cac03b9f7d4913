-- Read-back: the stored text of a chunk or of a line range / markdown section of
-- an indexed file, and a query's stored embedding. Text comes from rag.files.content,
-- so it works for git sources and remote databases alike; a path the index does
-- not hold is refused, with the indexed paths that look like it.

-- ---------------------------------------------------------------------------
-- _text_lines: lines start..end of a text, widened by context, within limits
CREATE OR REPLACE FUNCTION rag._text_lines(
    body       text,
    file_path  text,
    first_line integer,
    last_line  integer,   -- NULL: to the end
    context    integer
)
RETURNS TABLE (
    start_line  integer,
    end_line    integer,
    total_lines integer,
    content     text,
    truncated   boolean
)
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    max_lines CONSTANT integer := 2000;     -- lines per call
    max_chars CONSTANT integer := 200000;   -- characters per call
    lines     text[] := string_to_array(body, E'\n');  -- cut at "\n" only, as the chunkers count
    total     integer;
    first_    integer;
    last_     integer;
    size      integer := 0;
    cut       boolean := false;
    picked    text;
BEGIN
    IF lines[cardinality(lines)] = '' THEN
        lines := lines[1:cardinality(lines) - 1];
    END IF;
    total := cardinality(lines);
    IF first_line > greatest(total, 1) THEN
        RAISE EXCEPTION 'read: % has % lines; startLine % is past its end',
            quote_literal(file_path), to_char(total, 'FM999,999,999,990'), first_line
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    first_ := greatest(1, first_line - context);
    last_ := least(total, coalesce(last_line, total) + context);
    IF last_ - first_ + 1 > max_lines THEN
        last_ := first_ + max_lines - 1;
        cut := true;
    END IF;
    FOR n IN first_..last_ LOOP
        size := size + length(lines[n]) + 1;
        IF size > max_chars AND n > first_ THEN
            last_ := n - 1;
            cut := true;
            EXIT;
        END IF;
    END LOOP;
    picked := array_to_string(lines[first_:last_], E'\n');
    IF length(picked) > max_chars THEN  -- one enormous line
        picked := left(picked, max_chars);
        cut := true;
    END IF;
    RETURN QUERY SELECT first_, greatest(last_, first_ - 1), total, coalesce(picked, ''), cut;
END
$$;
COMMENT ON FUNCTION rag._text_lines(text, text, integer, integer, integer) IS
    'Lines first_line..last_line (1-based, inclusive) of a text widened by context lines each side; '
    'at most 2,000 lines and 200,000 characters (truncated says when cut).';

-- ---------------------------------------------------------------------------
-- read_chunk
CREATE OR REPLACE FUNCTION rag.read_chunk(
    chunk_id bigint,
    context  integer DEFAULT 0
)
RETURNS SETOF rag.excerpt  -- (migration 0013)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    wanted    CONSTANT bigint := chunk_id;
    hit       record;
    first_    integer;
    last_     integer;
    n_lines   integer;
BEGIN
    IF context IS NULL OR context < 0 THEN
        RAISE EXCEPTION 'read_chunk: context must be 0 or more, not %', coalesce(context::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT c.id, c.metadata, c.content AS chunk_content, nullif(c.contextual_text, '') AS contextual_text,
           f.path, f.source_type, f.language,
           f.content AS file_content, s.name AS source_name
      INTO hit
      FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id JOIN rag.sources s ON s.id = c.source_id
     WHERE c.id = wanted;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'read_chunk: chunk % is not in the index (its file may have been re-indexed '
            'since that search); search again for fresh chunkIds', coalesce(wanted::text, 'NULL')
            USING ERRCODE = 'no_data_found';
    END IF;
    IF jsonb_typeof(hit.metadata -> 'startLine') = 'number' AND jsonb_typeof(hit.metadata -> 'endLine') = 'number' THEN
        first_ := (hit.metadata ->> 'startLine')::integer;
        last_ := (hit.metadata ->> 'endLine')::integer;
    END IF;
    IF hit.file_content IS NULL OR first_ IS NULL OR last_ IS NULL THEN
        -- No stored file text or no line numbers (a PDF page): the chunk itself.
        n_lines := cardinality(regexp_split_to_array(hit.chunk_content, E'\n'));
        RETURN QUERY SELECT hit.source_name, hit.path, hit.source_type, hit.language,
            1, n_lines, n_lines, hit.chunk_content, false, coalesce(hit.metadata, '{}'), hit.contextual_text;
        RETURN;
    END IF;
    RETURN QUERY
        SELECT hit.source_name, hit.path, hit.source_type, hit.language,
               t.start_line, t.end_line, t.total_lines, t.content, t.truncated, coalesce(hit.metadata, '{}'),
               hit.contextual_text
        FROM rag._text_lines(hit.file_content, hit.path, first_, last_, context) t;
END
$$;
COMMENT ON FUNCTION rag.read_chunk(bigint, integer) IS
    'The stored lines of one chunk (by the chunk_id search returns), with context lines around it.';

-- ---------------------------------------------------------------------------
-- _indexed_path: a path as the index stores it (relative to the source root, POSIX)
CREATE OR REPLACE FUNCTION rag._indexed_path(
    source    text,
    file_path text
)
RETURNS text
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    given text := btrim(file_path, E' \t\n\r\f\v');
    root  text;
    parts text;
BEGIN
    IF starts_with(given, '/') THEN
        -- An absolute path inside a local source's folder is made relative to it.
        SELECT s.location INTO root FROM rag.sources s
         WHERE s.type = 'local' AND (_indexed_path.source IS NULL OR s.name = _indexed_path.source)
           AND starts_with(given, s.location || '/')
         ORDER BY length(s.location) DESC LIMIT 1;
        RETURN CASE WHEN root IS NULL THEN given ELSE substr(given, length(root) + 2) END;
    END IF;
    -- A Confluence page may be named by its id or title (sql/060_confluence.sql).
    parts := rag._page_path(source, given);
    IF parts IS NOT NULL THEN
        RETURN parts;
    END IF;
    given := replace(given, E'\\', '/');
    SELECT string_agg(part, '/' ORDER BY n) INTO parts
      FROM unnest(string_to_array(given, '/')) WITH ORDINALITY AS t(part, n)
     WHERE part NOT IN ('', '.');
    RETURN CASE WHEN starts_with(given, '/') THEN '/' ELSE '' END || coalesce(parts, '.');
END
$$;
COMMENT ON FUNCTION rag._indexed_path(text, text) IS
    'A path as given (relative, ./-prefixed, backslashed, absolute inside a local source, or a Confluence page''s '
    'id or title) as the index stores it.';

-- ---------------------------------------------------------------------------
-- read_file_range
CREATE OR REPLACE FUNCTION rag.read_file_range(
    source      text,                   -- NULL: whichever source holds the path (only one may)
    file_path   text,
    first_line  integer DEFAULT NULL,   -- NULL: from the first line
    last_line   integer DEFAULT NULL,   -- NULL: to the last line
    header_path text DEFAULT NULL,      -- instead of lines: a markdown section with its subsections
                                        -- (its whole path, or a unique end of it: 'Install')
    context     integer DEFAULT 0
)
RETURNS SETOF rag.excerpt  -- (migration 0013)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    wanted_source CONSTANT text := source;
    wanted_header CONSTANT text := header_path;
    section  text := header_path;  -- the whole header path wanted_header names
    suffixed text[];
    rel      text;
    file     record;
    matches  integer;
    names    text;
    base     text;
    lookalikes  text;
    span     record;
    sections jsonb;
BEGIN
    IF file_path IS NULL OR btrim(file_path) = '' THEN
        RAISE EXCEPTION 'read_file_range: file_path is required (a path relative to the source root)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF context IS NULL OR context < 0 THEN
        RAISE EXCEPTION 'read_file_range: context must be 0 or more, not %', coalesce(context::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF wanted_header IS NOT NULL AND (first_line IS NOT NULL OR last_line IS NOT NULL) THEN
        RAISE EXCEPTION 'read_file_range: give header_path or first_line/last_line, not both'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF first_line IS NOT NULL AND last_line IS NOT NULL AND last_line < first_line THEN
        RAISE EXCEPTION 'read_file_range: last_line % is before first_line %', last_line, first_line
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF wanted_source IS NOT NULL AND NOT EXISTS (SELECT 1 FROM rag.sources s WHERE s.name = wanted_source) THEN
        RAISE EXCEPTION 'read_file_range: source % not found; known: %', quote_literal(wanted_source),
            coalesce((SELECT string_agg(s.name, ', ' ORDER BY s.name) FROM rag.sources s), 'none (index one first)')
            USING ERRCODE = 'no_data_found';
    END IF;
    rel := rag._indexed_path(wanted_source, file_path);

    SELECT count(*), string_agg(s.name, ', ' ORDER BY s.name) INTO matches, names
      FROM rag.files f JOIN rag.sources s ON s.id = f.source_id
     WHERE f.path = rel AND (wanted_source IS NULL OR s.name = wanted_source);
    IF matches = 0 THEN
        base := regexp_replace(rel, '^.*/', '');
        IF base NOT IN ('', '.', '..') THEN
            SELECT string_agg(format('%s (%s)', m.path, m.name), ', ' ORDER BY length(m.path), m.path) INTO lookalikes
              FROM (SELECT f.path, s.name FROM rag.files f JOIN rag.sources s ON s.id = f.source_id
                    WHERE (f.path = base OR f.path LIKE '%/' || replace(replace(replace(base, E'\\', E'\\\\'),
                                                           '%', E'\\%'), '_', E'\\_'))
                      AND (wanted_source IS NULL OR s.name = wanted_source)
                    ORDER BY length(f.path), f.path LIMIT 5) m;
        END IF;
        RAISE EXCEPTION 'read_file_range: path % is not in the index of %', quote_literal(rel),
            CASE WHEN wanted_source IS NULL THEN 'any source' ELSE 'source ' || quote_literal(wanted_source) END
            || CASE WHEN lookalikes IS NOT NULL THEN '; did you mean: ' || lookalikes
                    ELSE '; only indexed files can be read' END
            USING ERRCODE = 'no_data_found',
                  HINT = CASE WHEN lookalikes IS NULL THEN 'rag.list_sources() shows the sources' ELSE '' END;
    END IF;
    IF matches > 1 THEN
        RAISE EXCEPTION 'read_file_range: path % is in several sources (%)', quote_literal(rel), names
            USING ERRCODE = 'invalid_parameter_value', HINT = 'pass source';
    END IF;

    SELECT f.id, f.path, f.source_type, f.language, f.content, f.error, s.name AS source_name INTO file
      FROM rag.files f JOIN rag.sources s ON s.id = f.source_id
     WHERE f.path = rel AND (wanted_source IS NULL OR s.name = wanted_source);
    IF file.content IS NULL THEN
        RAISE EXCEPTION 'read_file_range: the index holds no text for % in source %', quote_literal(rel),
            quote_literal(file.source_name) || coalesce(' (' || file.error || ')', '')
            USING ERRCODE = 'no_data_found';
    END IF;

    IF wanted_header IS NOT NULL THEN
        -- Every chunk at or below the path, as search returns it, and every
        -- section a chunk of merged sections lists with its own path and lines.
        SELECT coalesce(jsonb_agg(e.entry), '[]') INTO sections
          FROM (SELECT c.metadata AS entry FROM rag.chunks c
                 WHERE c.file_id = file.id AND c.metadata ? 'headerPath'
                UNION ALL
                SELECT p.part FROM rag.chunks c, jsonb_array_elements(c.metadata -> 'sections') AS p(part)
                 WHERE c.file_id = file.id AND c.metadata ? 'sections') e;
        IF NOT EXISTS (SELECT 1 FROM jsonb_array_elements(sections) AS x WHERE x ->> 'headerPath' = wanted_header) THEN
            -- The end of a header path, its "#" marks optional ('Install', 'Setup > ## Install').
            SELECT array_agg(DISTINCT x ->> 'headerPath' ORDER BY x ->> 'headerPath') INTO suffixed
              FROM jsonb_array_elements(sections) AS x,
                   LATERAL (SELECT regexp_replace(x ->> 'headerPath', '(^|> )#+ ', '\1', 'g') AS have,
                                   regexp_replace(btrim(wanted_header), '(^|> )#+ ', '\1', 'g') AS want) n
             WHERE n.have = n.want OR right(n.have, length(n.want) + 3) = ' > ' || n.want;
            IF cardinality(suffixed) > 1 THEN
                RAISE EXCEPTION 'read_file_range: section % is in several places of %: %; give more of its path',
                    quote_literal(wanted_header), quote_literal(rel), array_to_string(suffixed[1:10], '; ')
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            section := coalesce(suffixed[1], wanted_header);
        END IF;
        SELECT min((x ->> 'startLine')::integer) AS first_, max((x ->> 'endLine')::integer) AS last_
          INTO span
          FROM jsonb_array_elements(sections) AS x
         WHERE x ->> 'headerPath' = section OR starts_with(x ->> 'headerPath', section || ' > ');
        IF span.first_ IS NULL THEN
            RAISE EXCEPTION 'read_file_range: no section % in %; its sections: %', quote_literal(wanted_header),
                quote_literal(rel),
                coalesce((SELECT string_agg(h.hp, '; ' ORDER BY h.hp)
                          FROM (SELECT DISTINCT x ->> 'headerPath' AS hp FROM jsonb_array_elements(sections) AS x
                                WHERE x ? 'headerPath' ORDER BY 1 LIMIT 30) h),
                         'none (no headings)')
                USING ERRCODE = 'no_data_found';
        END IF;
        RETURN QUERY
            SELECT file.source_name, file.path, file.source_type, file.language,
                   t.start_line, t.end_line, t.total_lines, t.content, t.truncated, NULL::jsonb, NULL::text
            FROM rag._text_lines(file.content, file.path, span.first_, span.last_, context) t;
        RETURN;
    END IF;
    RETURN QUERY
        SELECT file.source_name, file.path, file.source_type, file.language,
               t.start_line, t.end_line, t.total_lines, t.content, t.truncated, NULL::jsonb, NULL::text
        FROM rag._text_lines(file.content, file.path, coalesce(first_line, 1), last_line, context) t;
END
$$;
COMMENT ON FUNCTION rag.read_file_range(text, text, integer, integer, text, integer) IS
    'Lines of an indexed file (a range, or a markdown section by header_path, whole or a unique end of it) with context lines; '
    'source may be NULL when one source holds the path. Paths outside the index are refused.';

-- ---------------------------------------------------------------------------
-- stored_query_embedding
CREATE OR REPLACE FUNCTION rag.stored_query_embedding(
    embedding_model text,
    query           text
)
RETURNS vector
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- Qualified: a bare "query" would name the column q.query, and every row would match.
    SELECT q.embedding FROM rag.query_embeddings q
    WHERE q.model = stored_query_embedding.embedding_model
      AND q.query_hash = md5(stored_query_embedding.query)
$$;
COMMENT ON FUNCTION rag.stored_query_embedding(text, text) IS
    'The embedding rag.remember_query_embedding stored for this query text and model, or NULL.';
