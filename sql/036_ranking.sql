-- Ranking that knows code: rag.search's last step over its fused candidates.
--
-- What a developer means is rarely the literal best BM25/cosine match: a
-- query naming a definition wants that definition (rag.symbols knows where
-- each is), a behaviour question wants the implementation rather than its
-- tests, a question about what a module does wants the module, and ten
-- chunks of one file are one answer. Each factor is a named entry of
-- rag.ranking_priors (defaults overridable per call, config search.priors)
-- but for the files arm's weight (search.filesWeight, rag.search's
-- files_weight); the measurements behind every default are in eval/README.md
-- ("Ranking that knows code") and eval/questions/README.md.
--
--   fused += files_weight / (rrf_k + rank of its file by mean chunk vector)
--            (the file's best candidate, else its chunk nearest the query: rag._file_lifts)
--   fused += tested x the fused scores of the tests named after the chunk's module
--            (its chunk nearest the query only: rag._tested_lifts; both run by rag.search)
--   score = (fused + (definition or entry) strength x best fused) x path-class prior
--           x docs prior (prose without a class, unless the query asks for prose)
--           x decay ^ (chunks of its file ranked above it + 1 - per_file, if positive)
--             or, for a query asking how parts fit together (rag._asks_how_built), if less:
--             spread ^ (chunks of its file ranked above it)
--
-- Then rag.search returns hits next to each other in a file as one hit of
-- their lines (rag._merged_places, rag._merged_hit; options mergeAdjacent).

-- ---------------------------------------------------------------------------
-- ranking_priors: every factor of the ranking step, defaults and overrides
CREATE OR REPLACE FUNCTION rag.ranking_priors(
    overrides jsonb DEFAULT NULL
)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    defaults CONSTANT jsonb := jsonb_build_object(
        -- path classes (rag.path_class): a multiplier of a chunk's score
        'test', 0.1,        -- tests (tests/, test_*.py, *.spec.ts, *_test.go ...)
        'fixture', 0.1,     -- test data (fixtures/, testdata/, __mocks__/)
        'example', 0.7,     -- examples/, samples/, demo/, docs_src/
        'benchmark', 0.7,   -- bench/, benchmarks/, bench_*.py, eval/ (evaluation harnesses)
        'vendored', 0.5,    -- vendor/, third_party/, node_modules/
        'generated', 0.5,   -- *.min.js, *_pb2.py, *.pb.go, generated/, dist/
        'compat', 0.7,      -- compat shims: _compat.py, compat/
        'older', 0.5,       -- an older copy of an API in the tree: v1/ beside v2/ or inside the current
                            -- package, legacy/, deprecated/ (rag._older_copy), unless the query names it
        'reexport', 0.6,    -- an __init__.py / index.ts chunk of imports and exports only
        'stub', 0.6,        -- type stubs: .pyi, .d.ts
        'changelog', 0.5,   -- release history: CHANGELOG.md, HISTORY.rst, NEWS, docs/releases/ ...
        -- prose (markdown, text, pdf, no class above) unless the query asks how to do
        -- something or what changed (rag._asks_for_prose)
        'docs', 0.5,
        -- a share of the best fused score added to the chunk defining what the query names
        'definition', 2.0,
        -- a share of tests' fused scores given to the module each is named after (rag._tested_lifts)
        'tested', 0.1,
        -- diversity: a file's chunks after its first per_file are multiplied by decay per extra chunk
        'decay', 0.8,
        -- and when the query asks how parts fit together or which files do something
        -- (rag._asks_how_built), its chunks after its first by spread per extra chunk (1: off)
        'spread', 0.3,
        -- a share of the best fused score added to a chunk of each entry file of a package
        -- (package.json: rag._entry_chunks) when the query asks what a package exports
        -- (rag._asks_for_exports)
        'entry', 1.0);
    unknown text;
    bad     text;
BEGIN
    IF overrides IS NULL THEN
        RETURN defaults;
    END IF;
    IF jsonb_typeof(overrides) <> 'object' THEN
        RAISE EXCEPTION 'search: priors must be a JSON object such as {"test": 0.5}, not %', overrides
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT string_agg(quote_literal(k), ', ') INTO unknown
    FROM jsonb_object_keys(overrides) AS k WHERE NOT defaults ? k;
    IF unknown IS NOT NULL THEN
        RAISE EXCEPTION 'search: unknown prior %; known: %', unknown,
            (SELECT string_agg(k, ', ' ORDER BY k) FROM jsonb_object_keys(defaults) AS k)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT string_agg(format('%s: %s', e.key, e.value), ', ') INTO bad
    FROM jsonb_each(overrides) AS e
    WHERE jsonb_typeof(e.value) <> 'number' OR e.value::text::double precision < 0;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'search: priors must be numbers of 0 or more, not %', bad
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN defaults || overrides;
END
$$;
COMMENT ON FUNCTION rag.ranking_priors(jsonb) IS
    'The factors of rag.search''s ranking step, the defaults with overrides applied: path-class multipliers (test, fixture, example, benchmark, vendored, generated, compat, older, reexport, stub, changelog), the docs multiplier of prose, the definition boost (a share of the best fused score), the tested share (of tests'' fused scores given to the module each is named after), the per-file decay, the spread (a decay from a file''s second chunk on, for a query asking how parts fit together), and the entry share (of the best fused score, given to a package''s entry files when the query asks what it exports); an unknown key or a negative value is an error.';

-- ---------------------------------------------------------------------------
-- _tested_stem: the name of the module a test file tests
CREATE OR REPLACE FUNCTION rag._tested_stem(
    path text
)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- test_fields.py, fields_test.go, fields.test.ts, fields.spec.js, FieldsTest.java,
-- fields_spec.rb and test/fields.js all test "fields".
RETURN nullif(lower(regexp_replace(regexp_replace(regexp_replace(path, '^.*/', ''), '(\.[[:alnum:]]+)$', ''),
                                   '^(test_|tests_)|(_tests?|\.test|\.spec|_spec|Tests?|Spec)$', '', 'g')), '');
COMMENT ON FUNCTION rag._tested_stem(text) IS
    'Private: the module name a test file''s name points at (test_fields.py, fields_test.go, fields.spec.ts, FieldsTest.java: fields).';

-- ---------------------------------------------------------------------------
-- _tested_lifts: tests vote for the code they test
CREATE OR REPLACE FUNCTION rag._tested_lifts(
    ids          bigint[],            -- the fused candidates
    scores       double precision[],  -- their fused scores
    query_vector vector,
    model        text,
    share        double precision     -- of a test's score given to its module's chunk
)
RETURNS TABLE (
    chunk_id bigint,
    lift     double precision
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- A behaviour question matches the tests of the code that does it (they
    -- repeat its vocabulary), which the test prior demotes. Their score goes,
    -- in part, to the module each test is named after: to its chunk nearest
    -- the query, which neither arm may have found.
    WITH tests AS (
        SELECT c.source_id, f.language, rag._tested_stem(f.path) AS stem, sum(u.score) AS score
        FROM unnest(ids, scores) AS u(id, score)
        JOIN rag.chunks c ON c.id = u.id
        JOIN rag.files f ON f.id = c.file_id
        WHERE strpos(lower(f.path), 'test') + strpos(lower(f.path), 'spec') > 0  -- (cheap: most paths are not)
          AND rag.path_class(f.path) = 'test'
        GROUP BY 1, 2, 3
    ),
    named AS MATERIALIZED (
        -- (a cheap test first and apart: the regular expressions below then run on few paths)
        SELECT f.id, f.path, t.source_id, t.language, t.stem, t.score
        FROM tests t
        JOIN rag.files f ON f.source_id = t.source_id AND f.language = t.language AND strpos(lower(f.path), t.stem) > 0
        WHERE t.stem IS NOT NULL
    ),
    modules AS (
        SELECT n.id, n.source_id, n.language, n.stem, n.score
        FROM named n
        WHERE lower(regexp_replace(n.path, '^(.*/)?_*([^/]*?)(\.[[:alnum:]]+)?$', '\2')) = n.stem
          AND rag.path_class(n.path) IS NULL
          AND NOT rag._older_copy(n.source_id, rag._copy_folder(n.path))
    ),
    tested AS (
        -- A name several modules share (utils.py in every package) splits its tests' vote.
        SELECT m.id AS file_id, sum(m.score / m.namesakes) AS score
        FROM (SELECT m.*, count(*) OVER (PARTITION BY m.source_id, m.language, m.stem) AS namesakes FROM modules m) m
        GROUP BY m.id
    )
    SELECT n.id, share * t.score
    FROM tested t
    CROSS JOIN LATERAL rag._nearest_chunk(t.file_id, query_vector, _tested_lifts.model) AS n(id)
    WHERE n.id IS NOT NULL;
$$;
COMMENT ON FUNCTION rag._tested_lifts(bigint[], double precision[], vector, text, double precision) IS
    'Private: for fused candidates that are tests, the chunk nearest the query of each module a test is named after (rag._tested_stem; same source and language, not in a path class), lifted by share times the sum of its tests'' scores, split evenly among the modules of one name.';

-- ---------------------------------------------------------------------------
-- _file_lifts: the files arm
CREATE OR REPLACE FUNCTION rag._file_lifts(
    ids          bigint[],            -- the fused candidates
    scores       double precision[],  -- their fused scores
    query_vector vector,
    model        text,
    weight       double precision,
    rrf_k        integer,
    fusion       text,
    sources      text[] DEFAULT NULL, -- the search's filters
    source_types text[] DEFAULT NULL,
    languages    text[] DEFAULT NULL,
    path_prefix  text DEFAULT NULL,
    files        integer DEFAULT 20   -- the nearest files lifted
)
RETURNS TABLE (
    chunk_id bigint,
    lift     double precision
)
LANGUAGE sql
VOLATILE  -- rag._nearest_files sets hnsw.* for its transaction
SET search_path = pg_catalog, rag, public
AS $$
    -- A question about what code does names the module's purpose, which few
    -- of its chunks say alone: the mean of a code file's chunk vectors
    -- (rag.file_vectors) finds the module, and the arm lifts its best
    -- candidate, or its chunk nearest the query when the other arms had none.
    -- Documents are left out: a section is an answer of its own.
    -- Tests, examples, vendored code ... are not the module asked about: they
    -- have no file vector (rag.refresh_file_vectors), so take none of its places.
    WITH ranked AS MATERIALIZED (
        SELECT n.file_id, n.distance, row_number() OVER (ORDER BY n.distance, n.file_id) AS rank
        FROM rag._nearest_files(query_vector, _file_lifts.model, files, rag._source_ids(sources, 'search'),
                                rag._file_ids(source_types, languages, path_prefix)) n
    ),
    best AS (
        SELECT DISTINCT ON (c.file_id) c.file_id, u.id
        FROM unnest(ids, scores) AS u(id, score)
        JOIN rag.chunks c ON c.id = u.id
        WHERE c.file_id IN (SELECT r.file_id FROM ranked r)
        ORDER BY c.file_id, u.score DESC, u.id
    )
    SELECT coalesce(b.id, rag._nearest_chunk(r.file_id, query_vector, _file_lifts.model)),
           weight * CASE fusion
                        WHEN 'rrf' THEN 1.0 / (rrf_k + r.rank)
                        -- 'scores': the distance spread over 0..1 between the worst and the best file
                        ELSE coalesce((max(r.distance) OVER () - r.distance)
                                      / nullif(max(r.distance) OVER () - min(r.distance) OVER (), 0), 1)
                    END
    FROM ranked r
    LEFT JOIN best b ON b.file_id = r.file_id;
$$;
COMMENT ON FUNCTION rag._file_lifts(bigint[], double precision[], vector, text, double precision, integer, text, text[], text[], text[], text, integer) IS
    'Private: rag.search''s files arm: the code files (not in a path class) whose mean chunk vector is nearest the query, ranked, each lifting its best candidate (or its chunk nearest the query) by weight/(rrf_k + rank), or with fusion ''scores'' by weight times the distance spread over 0..1.';

-- ---------------------------------------------------------------------------
-- _reexports_only: a package's front file that only gathers names from elsewhere
CREATE OR REPLACE FUNCTION rag._reexports_only(
    path    text,
    content text
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- One expression, so that it is inlined: a line that is none of these
-- (a negative lookahead at a line start, newline-sensitive) is real code.
RETURN path ~ '(^|/)(__init__\.py|index\.[cm]?[jt]sx?|mod\.rs)$'
    AND content ~ '(^|\n)[ \t]*(import|from|export|pub[ \t]+use|use)[ \t]'
    AND content !~ ('(?n)^(?![ \t]*($|#|//|/?\*|"""|''''''|import[ \t]|from[ \t]+[^ \t]+[ \t]+import[ \t]'
                    '|export[ \t]+(\*|\{|type[ \t]+\{)|export[ \t]+[^=]*[ \t]from[ \t]|\}[ \t]*from[ \t]|\)[ \t]*;?[ \t]*$'
                    '|__all__|["'']?[[:alnum:]_$]+["'']?[ \t]*(as[ \t]+[[:alnum:]_$]+)?[ \t]*,?[ \t]*[]\)}]?;?[ \t]*$'
                    '|pub[ \t]+(use|mod)[ \t]|use[ \t]|mod[ \t]|module\.exports[ \t]*=[ \t]*require\())');
COMMENT ON FUNCTION rag._reexports_only(text, text) IS
    'Private: whether a chunk of a package''s front file (__init__.py, index.ts/js, mod.rs) holds only imports, re-exports and comments (the reexport prior).';

-- ---------------------------------------------------------------------------
-- _asks_for_prose: a query that a guide or the release notes answer
CREATE OR REPLACE FUNCTION rag._asks_for_prose(
    query text
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- A question of how to do something ("how do I ...", "what is the best way
-- to ...", "как настроить ...", "можно ли ...") or of what changed between
-- releases, in English or Russian: documents and release notes at full
-- weight (the docs and changelog priors). A Russian "how" asks for a guide
-- when an infinitive follows it ("как добавить", not "как устроен").
RETURN lower(btrim(query)) ~ ('^(how (do|can|should|would|could) (i|we|you|one)|how to|where (do|can|should) (i|we)'
                               '|(can|should) (i|we)|what(''s| is) the (best|right|recommended|correct) way|is there a way'
                               '|как (мне |нам |можно |лучше |правильно )?[[:alpha:]]*(ть|ти|чь)(ся)?'
                               '|каким образом|можно ли|есть ли (способ|возможность)|где (мне |нам )?(настроить|задать|указать))\M')
    OR lower(query) ~ ('\m(changelog|releases?|released|upgrad(e|es|ed|ing)|migrat(e|es|ed|ing|ion)|deprecat(ed|ion)|history'
                       '|релиз[[:alpha:]]*|выпуск[[:alpha:]]*|обновлени[[:alpha:]]*|миграци[[:alpha:]]*|устаревш[[:alpha:]]*'
                       '|устарел[[:alpha:]]*|истори[[:alpha:]]* изменений|список изменений)\M');
COMMENT ON FUNCTION rag._asks_for_prose(text) IS
    'Private: whether a search query asks how to do something (how do I, what is the best way, как настроить, можно ли ...) or what changed between releases, in English or Russian: then documents and release notes keep their full weight (rag.ranking_priors docs, changelog).';

-- ---------------------------------------------------------------------------
-- _asks_how_built: a query whose answer is several files
CREATE OR REPLACE FUNCTION rag._asks_how_built(
    query text
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- How something is built or works ("how does X find ...", "how are X merged",
-- "where are X defined", "which files ...", "in which order ...", "как устроен
-- ...", "где определены ...", "какие модули ..."), in English or Russian: its
-- answer is a set of files, so a second chunk of one file covers nothing new
-- (the spread prior). "How do I ..." asks how to use it (rag._asks_for_prose).
RETURN lower(btrim(query)) ~ ('^(how (is|are|does|do|did|was|were|can|could|should|would|will)\s(?!(i|we|you|one)\M)'
                               '|in (what|which) order\M|where (is|are|does|do)\s(?!(i|we|you|one)\M)'
                               '|(which|what) (files?|modules?|packages?|classes|components|parts|layers)\M'
                               '|what is the (public api|structure|architecture|design|entry point)\M'
                               '|what (does|do) (the|this|its) (package|module|library|crate)s? '
                               '|как (устроен|работа[ею]т|реализован|организован|связан|взаимодейству)[[:alpha:]]*'
                               '|где (определ|объявл|обрабатыва|реализ|хран)[[:alpha:]]*|в каком порядке'
                               '|(какие|какой|из каких) (файл|модул|класс|функци|компонент|част)[[:alpha:]]*)')
    OR lower(query) ~ '\m(and|but|и|а) (how (is|are|does|do)\s(?!(i|we|you|one)\M)|как (устроен|работа[ею]т|реализован))';
COMMENT ON FUNCTION rag._asks_how_built(text) IS
    'Private: whether a search query asks how something is built or works, where it is defined or which files do it (how does, how are, where are, which modules, как устроен, где определены, какие файлы ...), in English or Russian: its answer is a set of files (rag.ranking_priors spread).';

-- ---------------------------------------------------------------------------
-- _asks_for_exports: a query about what a package offers
CREATE OR REPLACE FUNCTION rag._asks_for_exports(
    query text
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- A question (what, which, where ...) about what a package exports or exposes, its public
-- API or its entry point, in English or Russian: its answer is the package's entry files
-- (package.json's main, exports ...: rag._entry_chunks). A statement ("This is the entry
-- point for ...", a docstring) is not a question.
RETURN lower(btrim(query)) ~ ('^(what|which|where|how)\M.*\m(exports?|exported|expose[sd]?|public (api|interface)'
                               '|entry[- ]?points?)\M'
                               '|^(что|какие|какой|где|как)\M.*(экспортир[[:alpha:]]*|публичн[[:alpha:]]* (api|интерфейс)'
                               '|точк[[:alpha:]]* входа)');
COMMENT ON FUNCTION rag._asks_for_exports(text) IS
    'Private: whether a search query asks what a package exports or exposes, its public API or entry point (what does the package export, which functions are exported, где точка входа ...), in English or Russian: then the package''s entry files are lifted (rag.ranking_priors entry).';

-- ---------------------------------------------------------------------------
-- _entry_chunks: a chunk of each entry file of the packages searched
CREATE OR REPLACE FUNCTION rag._entry_chunks(
    ids           bigint[],            -- the fused candidates
    scores        double precision[],  -- their fused scores
    source_filter bigint[],            -- rag._source_ids of the search, NULL: every source
    source_types  text[],              -- the search's per-file filters (NULL: none)
    languages     text[],
    path_prefix   text,
    max_files     integer DEFAULT 8
)
RETURNS TABLE (
    chunk_id bigint
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- A package.json's entry files are its whole-module imports (rag/languages/javascript/
    -- packages.py), found through the (source, name) index of references: "*".
    WITH searched AS (
        SELECT s.id FROM rag.sources s WHERE source_filter IS NULL OR s.id = ANY (source_filter)
    ),
    entry_files AS (
        SELECT DISTINCT m.file_id
        FROM searched src
        JOIN rag.refs e ON e.source_id = src.id AND e.name = '*' AND e.kind = 'import' AND e.from_id IS NULL
        JOIN rag.files pj ON pj.id = e.file_id AND (pj.path = 'package.json' OR right(pj.path, 13) = '/package.json')
                         AND rag.path_class(pj.path) IS NULL  -- (not a vendored, example or test package)
        CROSS JOIN LATERAL unnest(e.target_stems) AS t(stem)
        JOIN rag.code_modules m ON m.source_id = src.id AND m.stem = ltrim(t.stem, '/') AND m.full_stem
    ),
    candidates AS (
        SELECT c.file_id, u.id, u.score
        FROM unnest(ids, scores) AS u(id, score)
        JOIN rag.chunks c ON c.id = u.id
    ),
    picked AS (
        -- The file's best candidate, else its first chunk; files the arms found first.
        SELECT coalesce(best.id, head.id) AS chunk_id, best.score
        FROM entry_files ef
        JOIN rag.files f ON f.id = ef.file_id
        LEFT JOIN LATERAL (SELECT k.id, k.score FROM candidates k WHERE k.file_id = ef.file_id
                           ORDER BY k.score DESC, k.id LIMIT 1) best ON true
        LEFT JOIN LATERAL (SELECT c.id FROM rag.chunks c WHERE c.file_id = ef.file_id
                           ORDER BY c.ordinal LIMIT 1) head ON true
        WHERE (source_types IS NULL OR f.source_type = ANY (source_types))
          AND (languages IS NULL OR f.language = ANY (languages))
          AND (path_prefix IS NULL OR starts_with(f.path, path_prefix))
        ORDER BY best.score DESC NULLS LAST, f.path
        LIMIT max_files
    )
    SELECT p.chunk_id FROM picked p WHERE p.chunk_id IS NOT NULL
$$;
COMMENT ON FUNCTION rag._entry_chunks(bigint[], double precision[], bigint[], text[], text[], text, integer) IS
    'Private: for the entry files package.json files name (main, module, source, types, exports ...; not those of a package in a path class: vendored, example, test ...), within the search''s filters, at most max_files (those among the candidates first): each one''s best candidate chunk, else its first chunk.';

-- ---------------------------------------------------------------------------
-- _asks_for_tests: a query about tests
CREATE OR REPLACE FUNCTION rag._asks_for_tests(
    query text
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- English words whole; Russian by their stem, whatever the ending
-- (тест, тесты, тестах, тестирование, фикстура).
RETURN lower(query) ~ '\m(tests?|testing|specs?|fixtures?|тест[[:alpha:]]*|фикстур[[:alpha:]]*)\M';
COMMENT ON FUNCTION rag._asks_for_tests(text) IS
    'Private: whether a search query asks about tests (test, spec, fixture, тест, тестирование, фикстура ...): then test files keep their full weight (the tests prior).';

-- ---------------------------------------------------------------------------
-- _identifier_shaped: a query that is one identifier
CREATE OR REPLACE FUNCTION rag._identifier_shaped(
    query text
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN regexp_replace(replace(btrim(query), '::', '.'), '\(\)$', '')
       ~ '^[[:alpha:]_$][[:alnum:]_$]*([./#:][[:alpha:]_$][[:alnum:]_$]*)*$';
COMMENT ON FUNCTION rag._identifier_shaped(text) IS
    'Private: whether a search query is one identifier, possibly qualified (a.b, A::B, pkg/mod.Name, path:fqn, name()): a query naming a definition.';

-- ---------------------------------------------------------------------------
-- _query_names: the definition a query names
CREATE OR REPLACE FUNCTION rag._query_names(
    query text
)
RETURNS TABLE (
    module text,  -- a module stem the definition must be in (rag.code_modules), or NULL
    fqn    text   -- the fqn (Cart.total) or name looked for
)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
BEGIN ATOMIC
    -- A query that is one identifier, possibly qualified (a.b, A::B, pkg/mod.Name,
    -- path:fqn, a trailing ()), names a definition. Every split of a dotted
    -- name into module and fqn is a reading: django.db.models.QuerySet is the
    -- fqn QuerySet in the module django/db/models, or the fqn models.QuerySet
    -- in django/db, ... (Identifiers inside a sentence were tried too, and
    -- lost: eval/README.md.)
    WITH shaped AS (
        SELECT regexp_replace(replace(btrim(query), '::', '.'), '\(\)$', '') AS ident
    ),
    split AS (
        -- path:fqn and pkg/mod.fqn name their module; # is Ruby's and JSDoc's method separator
        SELECT CASE WHEN s.ident ~ '[:/]' THEN regexp_replace(split_part(s.ident, ':', 1), '^(.*/[^.]*)\..*$', '\1') END
                   AS path_module,
               replace(CASE WHEN position(':' IN s.ident) > 0 THEN substr(s.ident, position(':' IN s.ident) + 1)
                            WHEN s.ident ~ '/' THEN substring(s.ident FROM '^.*/[^.]*\.(.*)$')
                            ELSE s.ident END, '#', '.') AS dotted
        FROM shaped s
        WHERE rag._identifier_shaped(query)
    )
    SELECT DISTINCT
           coalesce(regexp_replace(s.path_module, '\.[[:alnum:]]+$', ''),
                    nullif(array_to_string((string_to_array(s.dotted, '.'))[1:k], '/'), '')),
           array_to_string((string_to_array(s.dotted, '.'))[k + 1:], '.')
    FROM split s
    CROSS JOIN LATERAL generate_series(0, CASE WHEN s.path_module IS NULL
                                               THEN cardinality(string_to_array(s.dotted, '.')) - 1 ELSE 0 END) AS k
    WHERE s.dotted IS NOT NULL AND s.dotted <> '';
END;
COMMENT ON FUNCTION rag._query_names(text) IS
    'Private: the definition a search query names when it is one identifier (qualified names a.b, A::B, pkg/mod.Name, path:fqn and name() included), as its readings (module stem or NULL, fqn).';

-- ---------------------------------------------------------------------------
-- _named_definitions: the chunks defining what a query names
CREATE OR REPLACE FUNCTION rag._named_definitions(
    names           jsonb,      -- (rag.parse_query(query)).names: [{"module", "fqn"}]
    source_filter   bigint[],   -- rag._source_ids of the search, NULL: every source
    source_types    text[],     -- the search's per-file filters (NULL: none), checked on the few files matched
    languages       text[],
    path_prefix     text,
    candidate_files bigint[],   -- the files of the fused candidates
    max_rows        integer DEFAULT 20
)
RETURNS TABLE (
    chunk_id bigint,
    exact    boolean    -- by its fqn or name as written; else as the tail of its fqn, or in another case
)
LANGUAGE sql
STABLE
ROWS 20
SET search_path = pg_catalog, rag, public
-- rag.search plans its last statement generic, a setting that would reach
-- this one too: planned blind to candidate_files, it read every symbol (~12 ms).
SET plan_cache_mode = auto
AS $$
    WITH wanted AS MATERIALIZED (
        SELECT n.module, n.fqn, (regexp_match(n.fqn, '([^.]*)$'))[1] AS name
        FROM jsonb_to_recordset(names) AS n(module text, fqn text)
    ),
    searched AS (
        SELECT s.id FROM rag.sources s WHERE source_filter IS NULL OR s.id = ANY (source_filter)
    ),
    matched AS (
        -- By name through the (source_id, name) index: the fqn itself, or as the
        -- tail of a longer fqn (Cart.total in shop.Cart.total); in the named module when one is.
        SELECT s.file_id, s.start_line, s.fqn = w.fqn AS exact
        FROM wanted w
        JOIN searched src ON true
        JOIN rag.symbols s ON s.source_id = src.id AND s.name = w.name
        WHERE (s.fqn = w.fqn OR right(s.fqn, length(w.fqn) + 1) = '.' || w.fqn)
          AND s.kind <> 'IMPL'  -- a Rust impl block is named after its type; the type is the definition
          AND (w.module IS NULL OR EXISTS (
                  SELECT 1 FROM rag.code_modules m
                  WHERE m.source_id = s.source_id AND m.stem = w.module AND m.file_id = s.file_id))
        UNION ALL
        -- Re-exported by the named module under that name (export { X } from, from .m import X,
        -- module.exports.x = require(...)): the definition its module-level import resolved to.
        SELECT s.file_id, s.start_line, true
        FROM wanted w
        JOIN searched src ON true
        JOIN rag.code_modules m ON m.source_id = src.id AND m.stem = w.module
        JOIN rag.refs e ON e.file_id = m.file_id AND e.kind = 'import' AND e.from_id IS NULL
                       AND coalesce(e.keys[1], e.name) = w.fqn
        JOIN rag.ref_resolution x ON x.ref_id = e.id AND x.target_id IS NOT NULL
        JOIN rag.symbols s ON s.id = x.target_id
        WHERE w.module IS NOT NULL
        UNION ALL
        -- In another case (client for Client): only among the candidates' files.
        SELECT s.file_id, s.start_line, false
        FROM wanted w
        JOIN rag.symbols s ON s.file_id = ANY (candidate_files) AND lower(s.name) = lower(w.name)
        WHERE s.name <> w.name AND w.module IS NULL AND lower(s.fqn) = lower(w.fqn) AND s.kind <> 'IMPL'
    ),
    best AS (
        SELECT m.file_id, m.start_line, bool_or(m.exact) AS exact
        FROM matched m
        JOIN rag.files f ON f.id = m.file_id
        WHERE (source_types IS NULL OR f.source_type = ANY (source_types))
          AND (languages IS NULL OR f.language = ANY (languages))
          AND (path_prefix IS NULL OR starts_with(f.path, path_prefix))
        GROUP BY m.file_id, m.start_line
        ORDER BY bool_or(m.exact) DESC, m.file_id = ANY (candidate_files) DESC,
                 m.file_id, m.start_line
        LIMIT max_rows
    )
    -- The chunk holding the definition's first line (its header, where a long one is split).
    SELECT DISTINCT ON (c.id) c.id, b.exact
    FROM best b
    CROSS JOIN LATERAL (
        SELECT c.id FROM rag.chunks c
        WHERE c.file_id = b.file_id
          AND (c.metadata->>'startLine')::integer <= b.start_line AND (c.metadata->>'endLine')::integer >= b.start_line
        ORDER BY c.ordinal
        LIMIT 1) c
    ORDER BY c.id, b.exact DESC
$$;
COMMENT ON FUNCTION rag._named_definitions(jsonb, bigint[], text[], text[], text, bigint[], integer) IS
    'Private: the chunks holding the first line of definitions a query names (names: rag.parse_query), within the search''s filters, at most max_rows: by fqn, as the tail of a longer fqn, re-exported under that name by the module named (the definition its import resolved to), or (among the candidates'' files only) in another case.';

-- ---------------------------------------------------------------------------
-- _ranked: rag.search's last step
CREATE OR REPLACE FUNCTION rag._ranked(
    ids           bigint[],            -- the fused candidates
    scores        double precision[],  -- their fused scores
    q             rag.parsed_query,
    priors        jsonb,               -- rag.ranking_priors(overrides)
    include_tests boolean,
    per_file      integer,
    source_filter bigint[],            -- rag._source_ids of the search
    source_types  text[],              -- and its other filters
    languages     text[],
    path_prefix   text,
    top_k         integer
)
RETURNS TABLE (
    chunk_id bigint,
    score    double precision
)
LANGUAGE sql
STABLE
-- A standard body and no SET: inlined into rag.search's statement, planned
-- with it (planned at every call, it cost ~10 ms).
BEGIN ATOMIC
    WITH candidates AS MATERIALIZED (
        SELECT u.id, u.score FROM unnest(ids, scores) AS u(id, score)
    ),
    full_tests AS MATERIALIZED (  -- tests at full weight: asked for, or the query is about tests
        SELECT include_tests OR (q).asks_for_tests AS yes
    ),
    defined AS (
        -- (a one-time filter: the function runs only for a query shaped as a name)
        SELECT d.chunk_id, d.exact
        FROM rag._named_definitions(
            (q).names, source_filter, source_types, languages, path_prefix,
            (SELECT array_agg(DISTINCT c.file_id) FROM candidates k JOIN rag.chunks c ON c.id = k.id)) d
        WHERE (priors->>'definition')::double precision > 0 AND (q).identifier
    ),
    entries AS (
        -- (a one-time filter: only for a query asking what a package exports)
        SELECT e.chunk_id
        FROM rag._entry_chunks(ids, scores, source_filter, source_types, languages, path_prefix) e
        WHERE (priors->>'entry')::double precision > 0 AND rag._asks_for_exports((q).text)
    ),
    pooled AS (
        -- The candidates, the definitions named and the entry files, which the arms may have missed.
        SELECT p.id, max(p.score) AS score, max(p.strength) AS strength
        FROM (SELECT k.id, k.score, 0::double precision AS strength FROM candidates k
              UNION ALL
              SELECT d.chunk_id, 0, (priors->>'definition')::double precision * CASE WHEN d.exact THEN 1 ELSE 0.8 END
              FROM defined d
              UNION ALL
              SELECT e.chunk_id, 0, (priors->>'entry')::double precision FROM entries e) p
        GROUP BY p.id
    ),
    prose AS MATERIALIZED (  -- documents and release notes at full weight
        SELECT (q).asks_for_prose AS yes
    ),
    pathed AS MATERIALIZED (  -- (each chunk's class computed once, not at every use)
        SELECT p.id, c.file_id, f.source_id, f.path, c.content_hash, p.score, p.strength,
               rag._is_document(c.metadata) AS document, rag._copy_folder(f.path) AS folder,
               CASE WHEN rag._reexports_only(f.path, c.content) THEN 'reexport' ELSE rag.path_class(f.path) END AS class
        FROM pooled p
        JOIN rag.chunks c ON c.id = p.id
        JOIN rag.files f ON f.id = c.file_id
    ),
    copies AS MATERIALIZED (  -- older copies of an API the query does not name, by folder (few: most paths have none)
        SELECT DISTINCT pa.source_id, pa.folder
        FROM pathed pa
        WHERE pa.folder IS NOT NULL AND NOT rag._names_copy((q).text, pa.folder)
          AND rag._older_copy(pa.source_id, pa.folder)
    ),
    classed AS (
        SELECT pa.id, pa.file_id, pa.path, pa.content_hash, pa.score, pa.strength, pa.document,
               coalesce(pa.class, CASE WHEN cp.folder IS NOT NULL THEN 'older' END) AS class
        FROM pathed pa
        LEFT JOIN copies cp ON cp.source_id = pa.source_id AND cp.folder = pa.folder
    ),
    weighed AS (
        SELECT cl.id, cl.file_id, cl.path, cl.content_hash,
               (cl.score + cl.strength * (SELECT coalesce(max(k.score), 1) FROM candidates k))
               * CASE WHEN cl.class IS NULL THEN 1
                      WHEN cl.class IN ('test', 'fixture') AND (SELECT t.yes FROM full_tests t) THEN 1
                      WHEN cl.class = 'changelog' AND (SELECT pr.yes FROM prose pr) THEN 1
                      ELSE (priors->>cl.class)::double precision
                 END
               * CASE WHEN cl.document AND cl.class IS NULL AND NOT (SELECT pr.yes FROM prose pr)
                      THEN (priors->>'docs')::double precision ELSE 1 END AS score
        FROM classed cl
    ),
    built AS MATERIALIZED (  -- the answer is a set of files: the spread prior from a file's second chunk
        SELECT rag._asks_how_built((q).text) AS yes
    ),
    placed AS (
        SELECT w.id, w.score,
               row_number() OVER (PARTITION BY w.file_id ORDER BY w.score DESC, w.id) AS nth,
               -- one folder indexed under two names: its text at its path is one answer
               row_number() OVER (PARTITION BY w.path, w.content_hash ORDER BY w.score DESC, w.id) AS copy
        FROM weighed w
    ),
    spread AS (
        SELECT p.id, p.copy,
               p.score * least(power((priors->>'decay')::double precision, greatest(0, p.nth - per_file)),
                               CASE WHEN (SELECT b.yes FROM built b)
                                    THEN power((priors->>'spread')::double precision, p.nth - 1) ELSE 1 END)
                   AS score
        FROM placed p
    )
    SELECT s.id, s.score FROM spread s WHERE s.copy = 1 ORDER BY s.score DESC, s.id LIMIT top_k;
END;
COMMENT ON FUNCTION rag._ranked(bigint[], double precision[], rag.parsed_query, jsonb, boolean, integer, bigint[], text[], text[], text, integer) IS
    'Private: rag.search''s ranking step over its fused candidates: the definitions the query names added and boosted by a share of the best fused score, path-class priors (tests at full weight with include_tests; an older copy of an API, rag._older_copy, unless the query names it), prose demoted unless the query asks how to do something or what changed, and a decay per chunk of a file beyond per_file (the spread from its second chunk when the query asks how parts fit together); the same text at the same path (one folder in two sources) once; the top_k with their final scores.';

-- ---------------------------------------------------------------------------
-- _token_count: a text's size as rag.chunking.model.count_tokens counts it
CREATE OR REPLACE FUNCTION rag._token_count(
    body text
)
RETURNS integer
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- Words and punctuation marks: the chunker's token estimate (close to a model's).
RETURN (SELECT count(*)::integer FROM regexp_matches(body, '\w+|[^\w\s]', 'g'));
COMMENT ON FUNCTION rag._token_count(text) IS
    'Private: the tokens of a text as the chunkers estimate them (words and punctuation marks: rag.chunking.model.count_tokens), for the bound of a merged hit.';

-- ---------------------------------------------------------------------------
-- _merged_places: rag.search's hits, adjacent chunks of one file as one hit
CREATE OR REPLACE FUNCTION rag._merged_places(
    ids        bigint[],  -- the ranked hits, best first (more than top_k: merging frees places)
    top_k      integer,
    documents  boolean,   -- documents' chunks merge (rag._is_document)
    code       boolean,   -- code chunks merge
    max_tokens integer    -- a merged hit's bound (rag._token_count of the chunks it spans)
)
RETURNS TABLE (
    place    integer,   -- 1..top_k
    chunk_id bigint,    -- the hit that gives the place its rank and scores: the best of its chunks
    members  bigint[]   -- the chunks it spans in file order (NULL: itself alone)
)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
#variable_conflict use_column
-- In rank order, a hit whose chunk is next to a place's chunks in its file (the
-- ordinal before its first or after its last) joins that place instead of taking
-- one, when the chunks of the place then still hold at most max_tokens; a place
-- that comes to touch another of its file joins the better one likewise. The
-- places freed go to the hits below. Two chunks of one passage are one answer,
-- and a reader of the top k sees k passages, not one passage cut in two.
DECLARE
    files   bigint[] := '{}';   -- each place's file, first and last ordinal, hit
    firsts  integer[] := '{}';
    lasts   integer[] := '{}';
    leads   bigint[] := '{}';
    sizes   integer[] := '{}';  -- tokens of its chunks (NULL: not counted yet)
    n       integer := 0;
    tokens  integer;            -- of the hit (NULL: not counted yet)
    joined  integer;
    size    integer;
    hit     record;
BEGIN
    FOR hit IN
        SELECT c.id, c.file_id, c.ordinal, rag._is_document(c.metadata) AS document
        FROM unnest(ids) WITH ORDINALITY AS u(id, nth)
        JOIN rag.chunks c ON c.id = u.id
        ORDER BY u.nth
    LOOP
        joined := NULL;
        tokens := NULL;
        IF (hit.document AND documents) OR (NOT hit.document AND code) THEN
            FOR p IN 1..n LOOP
                CONTINUE WHEN files[p] <> hit.file_id
                              OR (hit.ordinal <> firsts[p] - 1 AND hit.ordinal <> lasts[p] + 1);
                -- (sizes counted when first needed: most hits touch no place)
                sizes[p] := coalesce(sizes[p], (SELECT rag._token_count(c.content) FROM rag.chunks c
                                                WHERE c.id = leads[p]));
                tokens := coalesce(tokens, (SELECT rag._token_count(c.content) FROM rag.chunks c WHERE c.id = hit.id));
                IF sizes[p] + tokens <= max_tokens THEN
                    joined := p;
                    firsts[p] := least(firsts[p], hit.ordinal);
                    lasts[p] := greatest(lasts[p], hit.ordinal);
                    sizes[p] := sizes[p] + tokens;
                    EXIT;
                END IF;
            END LOOP;
        END IF;
        IF joined IS NULL THEN
            EXIT WHEN n = top_k;
            n := n + 1;
            files := files || hit.file_id;
            firsts := firsts || hit.ordinal;
            lasts := lasts || hit.ordinal;
            leads := leads || hit.id;
            sizes := sizes || tokens;
            CONTINUE;
        END IF;
        -- The place grew: a later place of its file it now touches joins it.
        FOR p IN REVERSE n..1 LOOP
            CONTINUE WHEN p = joined OR files[p] <> files[joined]
                          OR firsts[p] > lasts[joined] + 1 OR lasts[p] < firsts[joined] - 1;
            sizes[p] := coalesce(sizes[p], (SELECT rag._token_count(c.content) FROM rag.chunks c
                                            WHERE c.id = leads[p]));
            CONTINUE WHEN sizes[p] + sizes[joined] > max_tokens;
            size := sizes[p] + sizes[joined];
            firsts[least(p, joined)] := least(firsts[p], firsts[joined]);
            lasts[least(p, joined)] := greatest(lasts[p], lasts[joined]);
            sizes[least(p, joined)] := size;
            files := files[:greatest(p, joined) - 1] || files[greatest(p, joined) + 1:];
            firsts := firsts[:greatest(p, joined) - 1] || firsts[greatest(p, joined) + 1:];
            lasts := lasts[:greatest(p, joined) - 1] || lasts[greatest(p, joined) + 1:];
            leads := leads[:greatest(p, joined) - 1] || leads[greatest(p, joined) + 1:];
            sizes := sizes[:greatest(p, joined) - 1] || sizes[greatest(p, joined) + 1:];
            n := n - 1;
            EXIT;
        END LOOP;
    END LOOP;
    RETURN QUERY
    SELECT p::integer, leads[p],
           CASE WHEN firsts[p] < lasts[p] THEN
                ARRAY(SELECT c.id FROM rag.chunks c
                      WHERE c.file_id = files[p] AND c.ordinal BETWEEN firsts[p] AND lasts[p]
                      ORDER BY c.ordinal) END
    FROM generate_series(1, n) AS p;
END
$$;
COMMENT ON FUNCTION rag._merged_places(bigint[], integer, boolean, boolean, integer) IS
    'Private: rag.search''s top_k places over ranked hits (ids, best first) where a document''s (documents) or code''s (code) chunk next to a place''s chunks in its file joins that place, its chunks then holding at most max_tokens (rag._token_count); each place''s best hit and, when it spans several, its chunks in file order.';

-- ---------------------------------------------------------------------------
-- _joined_texts: texts of consecutive chunks as one, lines two overlapping ones share once
CREATE OR REPLACE FUNCTION rag._joined_texts(
    contents    text[],     -- in file order
    first_lines integer[],  -- each one's lines in its file
    last_lines  integer[]
)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    lines    text[] := '{}';
    next     text[];
    shared   integer;
BEGIN
    FOR i IN 1..coalesce(cardinality(contents), 0) LOOP
        next := string_to_array(contents[i], E'\n');
        shared := 0;
        IF i > 1 AND first_lines[i] <= last_lines[i - 1] THEN
            -- the most lines that end the text so far and start this one
            FOR k IN REVERSE least(cardinality(lines), cardinality(next))..1 LOOP
                IF lines[cardinality(lines) - k + 1:] = next[:k] THEN
                    shared := k;
                    EXIT;
                END IF;
            END LOOP;
        END IF;
        lines := lines || next[shared + 1:];
    END LOOP;
    RETURN array_to_string(lines, E'\n');
END
$$;
COMMENT ON FUNCTION rag._joined_texts(text[], integer[], integer[]) IS
    'Private: the texts of consecutive chunks of a file joined by newlines, where two chunks'' lines overlap the lines the second repeats left out (the text of a merged hit whose chunks are not the file''s lines verbatim: rag._merged_hit).';

-- ---------------------------------------------------------------------------
-- _merged_hit: what rag.search shows of a hit spanning several chunks
CREATE OR REPLACE FUNCTION rag._merged_hit(
    members bigint[]  -- consecutive chunks of one file, in file order
)
RETURNS TABLE (
    start_line integer,
    end_line   integer,
    page_start integer,
    page_end   integer,
    content    text,
    metadata   jsonb    -- the union's lines and its chunks' sections, fqns and ids
)
LANGUAGE sql
STABLE
-- A standard body and no SET: inlined into rag.search's statement (a function
-- of its own planned at every call cost ~1 ms a merged hit).
BEGIN ATOMIC
    -- The text of the union: the file's stored lines from the first chunk's to the
    -- last one's (what lies between them included), after what the first chunk
    -- shows above its lines (a long section's piece repeats its header), when each
    -- chunk's text ends with its lines of the file; otherwise (text rendered from
    -- HTML, a PDF) the chunks' texts joined (rag._joined_texts).
    WITH parts AS MATERIALIZED (
        SELECT u.nth, c.file_id, c.content, c.metadata, rtrim(c.content, E'\n') AS body,
               (c.metadata->>'startLine')::integer AS first_line, (c.metadata->>'endLine')::integer AS last_line
        FROM unnest(members) WITH ORDINALITY AS u(id, nth)
        JOIN rag.chunks c ON c.id = u.id
    ),
    file AS MATERIALIZED (
        SELECT string_to_array(f.content, E'\n') AS lines
        FROM rag.files f
        WHERE f.id = (SELECT p.file_id FROM parts p WHERE p.nth = 1)
    ),
    own AS (  -- each chunk's lines of the file, and whether its text ends with them
        SELECT p.*, o.own, o.own <> '' AND right(p.body, length(o.own)) = o.own AS verbatim
        FROM parts p
        LEFT JOIN LATERAL (SELECT rtrim(array_to_string(fl.lines[p.first_line:p.last_line], E'\n'), E'\n') AS own
                           FROM file fl) o ON true
    ),
    sections AS (
        -- each chunk's sections: those it lists (merged small sections), else its own
        SELECT p.nth, e.section, e.k
        FROM parts p
        CROSS JOIN LATERAL jsonb_array_elements(p.metadata->'sections') WITH ORDINALITY AS e(section, k)
        WHERE jsonb_typeof(p.metadata->'sections') = 'array'
        UNION ALL
        SELECT p.nth, jsonb_build_object('headerPath', p.metadata->'headerPath', 'startLine', p.metadata->'startLine',
                                         'endLine', p.metadata->'endLine'), 1
        FROM parts p
        WHERE jsonb_typeof(p.metadata->'sections') IS DISTINCT FROM 'array' AND p.metadata ? 'headerPath'
    ),
    span AS (
        SELECT min(o.first_line) AS first_line, max(o.last_line) AS last_line,
               min((o.metadata->>'pageStart')::integer) AS page_start, max((o.metadata->>'pageEnd')::integer) AS page_end,
               coalesce(bool_and(o.verbatim), false) AS verbatim,
               (array_agg(left(o.body, length(o.body) - length(o.own)) ORDER BY o.nth))[1] AS lead,
               (array_agg(substr(o.content, length(o.body) + 1) ORDER BY o.nth DESC))[1] AS ending,
               array_agg(o.content ORDER BY o.nth) AS contents, array_agg(o.first_line ORDER BY o.nth) AS firsts,
               array_agg(o.last_line ORDER BY o.nth) AS lasts
        FROM own o
    )
    SELECT s.first_line, s.last_line, s.page_start, s.page_end,
           CASE WHEN s.verbatim
                THEN s.lead || rtrim(array_to_string((SELECT fl.lines[s.first_line:s.last_line] FROM file fl), E'\n'),
                                     E'\n') || s.ending
                ELSE rag._joined_texts(s.contents, s.firsts, s.lasts) END,
           jsonb_strip_nulls(jsonb_build_object(
               'startLine', s.first_line, 'endLine', s.last_line, 'pageStart', s.page_start, 'pageEnd', s.page_end,
               'sections', (SELECT jsonb_agg(x.section ORDER BY x.nth, x.k) FROM sections x),
               'fqns', (SELECT jsonb_agg(DISTINCT f.fqn)
                        FROM parts p
                        CROSS JOIN LATERAL (SELECT p.metadata->>'fqn'
                                            UNION
                                            SELECT jsonb_array_elements_text(coalesce(p.metadata->'fqns', '[]'))) AS f(fqn)
                        WHERE f.fqn IS NOT NULL),
               'mergedChunks', to_jsonb(members)))
    FROM span s;
END;
COMMENT ON FUNCTION rag._merged_hit(bigint[]) IS
    'Private: a hit spanning consecutive chunks of one file (members, in file order): the union of their lines and pages; as text the file''s stored lines over that union (after what the first chunk shows above its lines) when each chunk''s text ends with its lines of the file, else their texts joined (rag._joined_texts); metadata with those lines, every section the chunks hold (headerPath, startLine, endLine), their fqns and mergedChunks (their ids).';
