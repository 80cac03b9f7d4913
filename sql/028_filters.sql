-- The search filters (sources, source types, languages, a path prefix), resolved
-- once and applied inside both arms: the keyword arm (030_bm25.sql) and the
-- vector arm (032_vector.sql).

-- ---------------------------------------------------------------------------
-- _source_ids: validated source filter (NULL: all sources)
CREATE OR REPLACE FUNCTION rag._source_ids(
    source_names text[],
    caller       text    -- the function whose argument it is, named by the error
)
RETURNS bigint[]
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    unknown text;
    ids     bigint[];
BEGIN
    IF source_names IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT string_agg(quote_literal(n), ', ') INTO unknown
    FROM unnest(source_names) AS n WHERE NOT EXISTS (SELECT 1 FROM rag.sources s WHERE s.name = n);
    IF unknown IS NOT NULL THEN
        RAISE EXCEPTION '%: unknown source %; known: %', caller, unknown,
            coalesce((SELECT string_agg(s.name, ', ' ORDER BY s.name) FROM rag.sources s), 'none')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT array_agg(s.id) INTO ids FROM rag.sources s WHERE s.name = ANY (source_names);
    RETURN ids;
END
$$;
COMMENT ON FUNCTION rag._source_ids(text[], text) IS
    'Private: ids of the named sources, NULL for all; an unknown name is an error of caller listing the known ones.';

-- ---------------------------------------------------------------------------
-- _file_ids: the per-file filters of a search, resolved once
CREATE OR REPLACE FUNCTION rag._file_ids(
    source_types text[],
    languages text[],
    path_prefix text
)
RETURNS bigint[]
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT CASE WHEN source_types IS NULL AND languages IS NULL AND path_prefix IS NULL THEN NULL
           ELSE ARRAY(
               SELECT f.id FROM rag.files f
               WHERE (source_types IS NULL OR f.source_type = ANY (source_types))
                 AND (languages IS NULL OR f.language = ANY (languages))
                 AND (path_prefix IS NULL OR starts_with(f.path, path_prefix)))
           END
$$;
COMMENT ON FUNCTION rag._file_ids(text[], text[], text) IS
    'Private: ids of the files passing the source-type, language and path-prefix filters; NULL when there are none.';

-- ---------------------------------------------------------------------------
-- _filtered_chunks: the chunks passing the filters, when there are few
CREATE OR REPLACE FUNCTION rag._filtered_chunks(
    source_filter bigint[],
    file_filter bigint[],
    max_rows integer
)
RETURNS bigint[]
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
-- A generic plan cannot tell which filter is NULL; once cached (a session
-- of folder filters), it scanned every chunk for a source filter: 0.5 -> 19 ms.
SET plan_cache_mode = force_custom_plan
AS $$
    -- At most max_rows + 1 ids: the caller learns "more than max_rows" without
    -- reading a broad filter to the end.
    SELECT ARRAY(
        SELECT c.id FROM rag.chunks c
        WHERE (source_filter IS NULL OR c.source_id = ANY (source_filter))
          -- one index scan stepping through the sorted ids: a probe per file
          -- cost twice as much for a folder of 2k files (the ids hidden from
          -- the planner as in bm25_search: 3.3 -> 2.3 ms for 2k files)
          AND (file_filter IS NULL OR c.file_id = ANY ((SELECT file_filter)::bigint[]))
        LIMIT max_rows + 1)
$$;
COMMENT ON FUNCTION rag._filtered_chunks(bigint[], bigint[], integer) IS
    'Private: ids of the chunks passing resolved source/file filters, at most max_rows + 1 of them.';

-- ---------------------------------------------------------------------------
-- path_class: what a file is by its path (here, before its readers: the file
-- vectors of 032_vector.sql are stored for files in no class; 036_ranking.sql's priors)
CREATE OR REPLACE FUNCTION rag.path_class(
    path text
)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- (standard body, no SET: inlined into the ranking statement)
RETURN CASE
    WHEN lower(path) ~ '(^|/)(vendor|vendored|_vendor|third_party|thirdparty|node_modules)/' THEN 'vendored'
    WHEN lower(path) ~ '(\.min\.(js|css|mjs)$|_pb2(_grpc)?\.pyi?$|\.pb\.go$|[._]generated\.[a-z]+$|(^|/)(generated|__generated__|dist)/)'
        THEN 'generated'
    WHEN lower(path) ~ '(\.pyi|\.d\.[cm]?ts)$' THEN 'stub'
    WHEN lower(path) ~ '(^|/)(fixtures?|testdata|test_data|__fixtures__|__mocks__|__snapshots__)/' THEN 'fixture'
    WHEN lower(path) ~ '(^|/)(tests?|__tests__|spec|specs|testing)/'
      OR path ~ '(^|/)(test_[^/]*\.py|[^/]*_tests?\.py|conftest\.py|[^/]*_test\.go|[^/]*\.(test|spec)\.[cm]?[jt]sx?|[^/]*Tests?\.(java|kt|cs|scala)|[^/]*_spec\.rb|[^/]*Spec\.(java|kt|scala))$'
        THEN 'test'
    WHEN lower(path) ~ '(^|/)(bench|benches|benchmarks?|evals?|evaluation)/|(^|/)bench_[^/]*$|_bench(mark)?s?\.[a-z]+$' THEN 'benchmark'
    WHEN lower(path) ~ '(^|/)(examples?|samples?|demos?|docs_src)/' THEN 'example'
    WHEN lower(path) ~ '(^|/)(_?compat[^/]*\.[a-z]+|compat/)' THEN 'compat'
    WHEN lower(path) ~ ('(^|/)(change[-_]?log|changes|history|news|release[-_]?notes)(\.(md|markdown|rst|txt|adoc))?$'
                        '|(^|/)(releases|changelogs?|whatsnew|release[-_]?notes)/[^/]*\.(md|markdown|rst|txt|adoc)$')
        THEN 'changelog'
END;
COMMENT ON FUNCTION rag.path_class(text) IS
    'What a file is by its path, for rag.search''s priors (rag.ranking_priors): vendored, generated (minified too), stub, fixture, test, benchmark, example, compat or changelog (release notes); NULL for anything else.';

-- ---------------------------------------------------------------------------
-- _copy_folder: the folder of a path that may hold an older copy of an API
CREATE OR REPLACE FUNCTION rag._copy_folder(
    path text
)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- (standard body, no SET: inlined)
-- The innermost folder (with its parent, ending in '/') named legacy, deprecated,
-- old or obsolete, or a version: v1, v2, api_v1, api-v2, _v1. Files (uuid's
-- v1.ts ... v7.ts) are not folders; whether a version folder is an older copy
-- depends on the tree (rag._older_copy).
RETURN substring(path from '^((?:.*/)?(?:legacy|deprecated|old|obsolete|(?:[[:alnum:]_.-]*[_-])?v[0-9]+)/).+$');
COMMENT ON FUNCTION rag._copy_folder(text) IS
    'Private: the innermost folder of a path (its path, ending in /) named legacy, deprecated, old, obsolete or a version (v1, api_v2, _v1), which may hold an older copy of an API (rag._older_copy); NULL if none. A file named v1.ts is not a folder.';

-- ---------------------------------------------------------------------------
-- _older_copy: is a folder of a source an older copy of the API beside it?
CREATE OR REPLACE FUNCTION rag._older_copy(
    target_source_id bigint,
    folder           text     -- rag._copy_folder of one of its paths
)
RETURNS boolean
LANGUAGE sql
STABLE
PARALLEL SAFE
-- (standard body, no SET: inlined into the ranking statement)
-- Decided by the tree, never by a project's name:
--   legacy/, deprecated/, old/, obsolete/: always;
--   vN/ (or stem_vN/, stem-vN/): when a sibling of the same stem with a higher
--   version exists (v1/ beside v2/; Go's highest vN/ stays current), or when
--   it is v1/ (or v0/) and holds a file whose name its parent folder holds too
--   (pydantic/v1/main.py beside pydantic/main.py: the parent is a later
--   version). A v2/ repeating its parent's files is Go's major-version folder,
--   the current copy of the tree above it; a vN/ that is the only version and
--   repeats nothing of its parent (api/v1/) is current.
RETURN CASE
    WHEN folder IS NULL THEN false
    WHEN folder ~ '(^|/)(legacy|deprecated|old|obsolete)/$' THEN true
    ELSE EXISTS (  -- a higher version beside it: the same stem and 'v' (a cheap test first), then a number
             SELECT 1
             FROM (SELECT substring(folder from '^(.*)v[0-9]+/$') || 'v' AS prefix,  -- its parent, stem and v
                          substring(folder from 'v([0-9]+)/$')::numeric AS version) me
             JOIN rag.files g ON g.source_id = target_source_id AND starts_with(g.path, me.prefix)
             WHERE substring(substring(g.path from length(me.prefix) + 1) from '^([0-9]+)/')::numeric > me.version)
      OR (substring(folder from 'v([0-9]+)/$')::numeric <= 1
          AND EXISTS (  -- or it is v1 and its parent holds a file of the same name (not a package's front or metadata)
             SELECT 1
             FROM rag.files a
             JOIN rag.files b
               ON b.source_id = a.source_id
              AND b.path = coalesce(substring(folder from '^(.*/)?[^/]+/$'), '') || substring(a.path from length(folder) + 1)
             WHERE a.source_id = target_source_id
               AND starts_with(a.path, folder)
               AND strpos(substring(a.path from length(folder) + 1), '/') = 0
               AND lower(substring(a.path from length(folder) + 1))
                   !~ '^(__init__\.py|index\.[[:alnum:]]+|mod\.rs|lib\.rs|go\.(mod|sum)|package\.json|py\.typed|readme(\.[[:alnum:]]+)?|license(\.[[:alnum:]]+)?)$'))
END;
COMMENT ON FUNCTION rag._older_copy(bigint, text) IS
    'Private: whether a folder of a source (rag._copy_folder) is an older copy of an API, decided by the tree: legacy/, deprecated/, old/, obsolete/ always; a version folder (v1/, api_v1/) when a sibling of the same stem has a higher version, or when it is v1 (or v0) and its parent holds a file of the same name as one in it (the parent is a later version; a v2/ repeating its parent is Go''s current major-version folder).';

-- ---------------------------------------------------------------------------
-- _names_copy: does a query ask for the older copy by its folder's name?
CREATE OR REPLACE FUNCTION rag._names_copy(
    query  text,
    folder text     -- rag._copy_folder
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- "pydantic v1 validator", "version 1", "the deprecated json encoder",
-- "legacy api", "устаревший": the query wants the copy it names.
RETURN CASE
    WHEN folder ~ '(^|/)deprecated/$' THEN lower(query) ~ '\mdeprecat|\mустаревш'
    WHEN folder ~ '(^|/)(legacy|old|obsolete)/$' THEN lower(query) ~ ('\m(' || substring(folder from '([^/]+)/$') || ')\M|\mустаревш|\mстар(ый|ая|ое|ые|ого|ой|ом|ых)\M')
    ELSE lower(query) ~ ('\m(v|version\s*|верси[яиюей]\s*)' || substring(folder from 'v([0-9]+)/$') || '\M')
END;
COMMENT ON FUNCTION rag._names_copy(text, text) IS
    'Private: whether a query names the older copy a folder holds (rag._copy_folder): "deprecated"/"устаревший" for deprecated/, its name for legacy/, old/, obsolete/, "v1"/"version 1"/"версия 1" for a v1 folder; the ranking then leaves the copy undemoted.';
