-- Keyword-search data: the tokenizer shared by documents and queries, and the
-- upkeep of postings, document frequencies and corpus totals for Okapi BM25.

-- ---------------------------------------------------------------------------
-- term_frequencies
CREATE OR REPLACE FUNCTION rag.term_frequencies(
    content text
)
RETURNS TABLE (
    term text,
    tf   integer
)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- A standard body binds its names when created, so it needs no SET
-- search_path, and without one PostgreSQL inlines it into the calling query
-- (indexing tokenizes every chunk here; a per-call executor start cost ~12%).
BEGIN ATOMIC
    -- Every identifier is split into its parts (camelCase, snake_case,
    -- kebab-case, letters|digits) and lowercased; identifiers made of several
    -- parts are kept whole too, so "combine latest" and "combineLatest" both
    -- find combineLatest. Terms over 64 characters (hashes, base64, minified
    -- blobs) are dropped. Parts and wholes are counted by one aggregate over
    -- plain words: a string split is far cheaper than to_tsvector's parser
    -- (the tokenizer ~25% faster, same terms and counts on Django's chunks).
    SELECT t.term, count(*)::integer
    FROM (
        SELECT w AS term
        FROM string_to_table(lower(regexp_replace(regexp_replace(
                content,
                -- a space at every camelCase, ACRONYMWord and letter|digit boundary
                '(?<=[[:lower:]])(?=[[:upper:]])|(?<=[[:upper:]])(?=[[:upper:]][[:lower:]])'
                '|(?<=[[:alpha:]])(?=[[:digit:]])|(?<=[[:digit:]])(?=[[:alpha:]])', ' ', 'g'),
                '[^[:alnum:]]+', ' ', 'g')), ' ') AS w
        UNION ALL
        SELECT lower(m[1])
        FROM regexp_matches(
            content,
            '((?:[[:alnum:]]+[_-])+[[:alnum:]]+|[[:alnum:]]*(?:[[:lower:]][[:upper:]]|[[:upper:]][[:upper:]][[:lower:]]|[[:alpha:]][[:digit:]]|[[:digit:]][[:alpha:]])[[:alnum:]]*)',
            'g') AS m
    ) AS t
    WHERE t.term <> '' AND length(t.term) <= 64
    GROUP BY t.term;
END;
COMMENT ON FUNCTION rag.term_frequencies(text) IS
    'The BM25 tokenizer, shared by chunks and queries: lowercased identifier parts plus whole compound identifiers, with their counts.';

-- ---------------------------------------------------------------------------
-- _indexed_text: what BM25 and the embedding model see of a chunk
CREATE OR REPLACE FUNCTION rag._indexed_text(
    context text,
    content text
)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- A standard body, inlined like term_frequencies. The same rule as
-- rag.chunking.model.indexed_text, whose sha256 is the chunk's content_hash;
-- a chunk stored before its context (migration 0006) has none.
RETURN CASE WHEN context = '' THEN content ELSE context || E'\n' || content END;
COMMENT ON FUNCTION rag._indexed_text(text, text) IS
    'Private: a chunk''s indexed text, its context lines (path, fqn or headerPath) then its content; content alone without context.';

-- ---------------------------------------------------------------------------
-- _chunk_prefix: what precedes a chunk's content in its indexed text
CREATE OR REPLACE FUNCTION rag._chunk_prefix(
    context         text,
    contextual_text text
)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- Inlined like _indexed_text. A chunk is stored with its structural context
-- alone; an LLM's contextual text (migration 0014, sql/024_contextual.sql)
-- comes after it, so rag._indexed_text(rag._chunk_prefix(...), content) is
-- what BM25 and the embedding model see.
RETURN CASE WHEN contextual_text = '' THEN context
            WHEN context = '' THEN contextual_text
            ELSE context || E'\n' || contextual_text END;
COMMENT ON FUNCTION rag._chunk_prefix(text, text) IS
    'Private: the lines indexed before a chunk''s content: its context (path, fqn or headerPath), then its contextual text if it has one.';

-- ---------------------------------------------------------------------------
-- languages: which Snowball dictionary stems and stops a word
--
-- A word goes through the dictionary configured for its script: Latin words
-- through english_stem, Cyrillic ones through russian_stem by default
-- (rag.keyword_settings, set by rag.set_languages from `search.languages`).
-- The configuration reaches the IMMUTABLE functions below as an argument,
-- `dictionaries`: one slot per script (rag._script_slot), read once per
-- statement by rag._stem_dictionaries(), so stemming stays exact and inlined.
CREATE OR REPLACE FUNCTION rag._script_slot(
    word text
)
RETURNS integer
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- ASCII first: most words are, and one match settles them.
RETURN CASE
    WHEN word ~ '^[\x01-\x7f]*$' THEN 1   -- Latin
    WHEN word ~ '[\u0400-\u04ff]' THEN 2  -- Cyrillic
    WHEN word ~ '[\u0370-\u03ff]' THEN 3  -- Greek
    WHEN word ~ '[\u0530-\u058f]' THEN 4  -- Armenian
    WHEN word ~ '[\u0590-\u05ff]' THEN 5  -- Hebrew letters (Yiddish)
    WHEN word ~ '[\u0600-\u06ff]' THEN 6  -- Arabic
    WHEN word ~ '[\u0900-\u097f]' THEN 7  -- Devanagari (Hindi, Nepali)
    WHEN word ~ '[\u0b80-\u0bff]' THEN 8  -- Tamil
    ELSE 1                                -- Latin with diacritics, and the rest
END;
COMMENT ON FUNCTION rag._script_slot(text) IS
    'Private: the script of a word as a slot of rag._stem_dictionaries(): 1 Latin (and unknown), 2 Cyrillic, 3 Greek, 4 Armenian, 5 Hebrew, 6 Arabic, 7 Devanagari, 8 Tamil.';

CREATE OR REPLACE FUNCTION rag._folded(
    word text
)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- Russian text writes ё as е as often as not (and russian.stop never does).
RETURN replace(word, 'ё', 'е');
COMMENT ON FUNCTION rag._folded(text) IS
    'Private: a lowercase word with the letters prose writes either way made one (ё as е).';

CREATE OR REPLACE FUNCTION rag._language_slot(
    dictionary text
)
RETURNS integer
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- By the language a dictionary is named for (russian_stem, russian_hunspell: russian).
RETURN CASE split_part(dictionary, '_', 1)
    WHEN 'russian' THEN 2 WHEN 'ukrainian' THEN 2 WHEN 'belarusian' THEN 2 WHEN 'bulgarian' THEN 2
    WHEN 'serbian' THEN 2 WHEN 'macedonian' THEN 2
    WHEN 'greek' THEN 3 WHEN 'armenian' THEN 4 WHEN 'yiddish' THEN 5
    WHEN 'arabic' THEN 6 WHEN 'persian' THEN 6 WHEN 'hindi' THEN 7 WHEN 'nepali' THEN 7 WHEN 'tamil' THEN 8
    ELSE 1
END;
COMMENT ON FUNCTION rag._language_slot(text) IS
    'Private: the script slot (rag._script_slot) of the words a dictionary is for, by the language it is named after; Latin unless known otherwise.';

CREATE OR REPLACE FUNCTION rag._dictionary(
    language text
)
RETURNS regdictionary
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- A dictionary by its name, or a language by its Snowball dictionary (russian: russian_stem).
    SELECT d.oid::regdictionary
    FROM pg_ts_dict d
    WHERE d.dictname IN (language, language || '_stem') AND pg_ts_dict_is_visible(d.oid)
    ORDER BY d.dictname = language DESC
    LIMIT 1
$$;
COMMENT ON FUNCTION rag._dictionary(text) IS
    'Private: the text-search dictionary a search.languages entry names (itself, or <language>_stem); NULL when there is none.';

CREATE OR REPLACE FUNCTION rag._stem_dictionaries()
RETURNS regdictionary[]
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT ARRAY(
        SELECT (SELECT rag._dictionary(l.name)
                FROM unnest(s.languages) WITH ORDINALITY AS l(name, n)
                WHERE rag._language_slot(l.name) = slot
                ORDER BY l.n LIMIT 1)
        FROM generate_series(1, 8) AS slot
        ORDER BY slot)
    FROM rag.keyword_settings s
$$;
COMMENT ON FUNCTION rag._stem_dictionaries() IS
    'Private: the configured dictionary of each script slot (rag._script_slot), NULL where none is: the dictionaries argument of the keyword functions.';

-- ---------------------------------------------------------------------------
-- readable_share: how much of a query a model of some languages can read
CREATE OR REPLACE FUNCTION rag.readable_share(
    query     text,
    languages text[]  -- the languages the embedding model reads; NULL: any
)
RETURNS double precision
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
BEGIN ATOMIC
    -- The share of the query's words (those with a letter) written in the
    -- script of one of the languages: the weight of the vector arm of an
    -- English-only model is scaled by it, so that it never outvotes BM25 on
    -- a Russian question it cannot read (eval/README.md).
    SELECT CASE WHEN languages IS NULL THEN 1.0::double precision
           ELSE coalesce(avg((rag._script_slot(w) IN (SELECT rag._language_slot(l) FROM unnest(languages) AS l))::integer),
                         1.0)::double precision END
    FROM regexp_split_to_table(coalesce(query, ''), '[^[:alnum:]]+') AS w
    WHERE w ~ '[[:alpha:]]';
END;
COMMENT ON FUNCTION rag.readable_share(text, text[]) IS
    'The share (0 to 1) of a query''s words written in a script of one of languages (NULL: any, 1): what the vector arm''s weight is scaled by for a model reading only those languages.';

-- ---------------------------------------------------------------------------
-- set_languages
CREATE OR REPLACE FUNCTION rag.set_languages(
    languages text[]
)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    unknown text;
    twice   text;
BEGIN
    IF languages IS NULL OR cardinality(languages) = 0 OR array_position(languages, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'set_languages: languages must name one or more text-search dictionaries (e.g. {english,russian}), not %',
            coalesce(languages::text, 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT string_agg(quote_literal(l), ', ') INTO unknown FROM unnest(languages) AS l WHERE rag._dictionary(l) IS NULL;
    IF unknown IS NOT NULL THEN
        RAISE EXCEPTION 'set_languages: no text-search dictionary %; Snowball languages here: %', unknown,
            (SELECT string_agg(replace(d.dictname, '_stem', ''), ', ' ORDER BY d.dictname)
             FROM pg_ts_dict d JOIN pg_ts_template t ON t.oid = d.dicttemplate WHERE t.tmplname = 'snowball')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT string_agg(g.names, '; ') INTO twice
    FROM (SELECT string_agg(quote_literal(l), ' and ') AS names
          FROM unnest(languages) AS l GROUP BY rag._language_slot(l) HAVING count(*) > 1) g;
    IF twice IS NOT NULL THEN
        RAISE EXCEPTION 'set_languages: % stem words of one script; keep one of them', twice
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Concurrent callers one at a time, and never during a bulk load.
    PERFORM pg_advisory_xact_lock(rag._bulk_lock_key());
    IF (SELECT s.languages FROM rag.keyword_settings s) = languages THEN
        RETURN false;
    END IF;
    UPDATE rag.keyword_settings SET languages = set_languages.languages;
    -- The documents' stems change with it: posted again from the stored chunks.
    PERFORM rag._rebuild_postings();
    RETURN true;
END
$$;
COMMENT ON FUNCTION rag.set_languages(text[]) IS
    'Sets the text-search dictionaries (search.languages, e.g. {english,russian}) whose stems documents post, one per script; when they change, re-posts every chunk''s keywords from the stored chunks and returns true.';

-- ---------------------------------------------------------------------------
-- query_terms
CREATE OR REPLACE FUNCTION rag.query_terms(
    query        text,
    dictionaries regdictionary[]  -- rag._stem_dictionaries()
)
RETURNS text[]
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
BEGIN ATOMIC
    -- A question in English ("how do I get the user by id") matches chunks on
    -- its function words too, which code and docs hold everywhere: they add
    -- noise, not evidence. A query of three or more words drops the stop words
    -- it writes as plain lowercase words, unless nothing else is left;
    -- identifiers ("is_valid", "getTheUser", "THE_END") keep every part. A stop
    -- word is one of the English list below (measured; PostgreSQL's
    -- english.stop differs by five words) or a word the dictionary of its
    -- script has no lexeme for: its stop-word file (russian.stop: как, и, в).
    WITH words AS (
        SELECT w FROM regexp_split_to_table(coalesce(query, ''), '[[:space:]]+') AS w WHERE w <> ''
    ),
    plain AS (
        SELECT regexp_replace(w, '^[^[:alnum:]]+|[^[:alnum:]]+$', '', 'g') AS word FROM words
    ),
    dropped AS (
        SELECT DISTINCT lower(p.word) AS term
        FROM plain p
        WHERE (SELECT count(*) FROM words) >= 3
          AND p.word ~ '^([[:upper:]]|[[:upper:]]?[[:lower:]]+)$'
          AND (lower(p.word) = ANY (ARRAY[
            'a', 'about', 'above', 'after', 'again', 'against', 'all', 'am', 'an', 'and', 'any', 'are',
            'as', 'at', 'be', 'because', 'been', 'before', 'being', 'below', 'between', 'both', 'but',
            'by', 'can', 'could', 'did', 'do', 'does', 'doing', 'down', 'during', 'each', 'few', 'for',
            'from', 'further', 'had', 'has', 'have', 'having', 'he', 'her', 'here', 'hers', 'herself',
            'him', 'himself', 'his', 'how', 'i', 'if', 'in', 'into', 'is', 'it', 'its', 'itself', 'just',
            'me', 'more', 'most', 'my', 'myself', 'no', 'nor', 'not', 'now', 'of', 'off', 'on', 'once',
            'only', 'or', 'other', 'our', 'ours', 'ourselves', 'out', 'over', 'own', 'same', 'she',
            'should', 'so', 'some', 'such', 'than', 'that', 'the', 'their', 'theirs', 'them',
            'themselves', 'then', 'there', 'these', 'they', 'this', 'those', 'through', 'to', 'too',
            'under', 'until', 'up', 'very', 'was', 'we', 'were', 'what', 'when', 'where', 'which',
            'while', 'who', 'whom', 'why', 'will', 'with', 'would', 'you', 'your', 'yours', 'yourself',
            'yourselves'])
            OR ts_lexize(dictionaries[rag._script_slot(p.word)], rag._folded(lower(p.word))) = '{}')
    ),
    terms AS (
        SELECT t.term, t.term IN (SELECT d.term FROM dropped d) AS stop
        FROM rag.term_frequencies(coalesce(query, '')) t
    )
    SELECT coalesce(array_agg(t.term ORDER BY t.term) FILTER (WHERE NOT t.stop), array_agg(t.term ORDER BY t.term),
                    '{}'::text[])
    FROM terms t;
END;
COMMENT ON FUNCTION rag.query_terms(text, regdictionary[]) IS
    'The BM25 terms of a search query: rag.term_frequencies'' terms, less the stop words (the English list, and those of the dictionary of each word''s script) written as plain words in a query of three or more words (unless only they are left).';

CREATE OR REPLACE FUNCTION rag.query_terms(
    query text
)
RETURNS text[]
LANGUAGE sql
STABLE
PARALLEL SAFE
RETURN rag.query_terms(query, rag._stem_dictionaries());
COMMENT ON FUNCTION rag.query_terms(text) IS
    'The BM25 terms of a search query with the configured languages (rag.set_languages): rag.query_terms(query, dictionaries).';

-- ---------------------------------------------------------------------------
-- stems: how prose is keyword-indexed
--
-- Documents (chunks whose sourceType is markdown, text or pdf) post the
-- Snowball stems of their terms (each by the dictionary of its script:
-- "резервную" and "резервное" both post stem:резервн), each prefixed
-- 'stem:', instead of the terms themselves, so "configuring" in a query
-- finds "configured" in a guide. Code keeps its exact terms: stemming them
-- cost the code sets more than it gave the docs sets (eval/README.md). With
-- the prefix the two never meet: they are scored as two fields
-- (rag._field_idf below), so in a source of code alone every score is what
-- it was. A query looks for both: its terms (code) and their stems (prose).
CREATE OR REPLACE FUNCTION rag._is_document(
    metadata jsonb
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN coalesce(metadata->>'sourceType' IN ('markdown', 'text', 'pdf'), false);
COMMENT ON FUNCTION rag._is_document(jsonb) IS
    'Private: whether a chunk (by its metadata) is a document, keyword-indexed by its stems: sourceType markdown, text or pdf.';

CREATE OR REPLACE FUNCTION rag._stem(
    term         text,
    dictionaries regdictionary[]  -- rag._stem_dictionaries()
)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- A stop word gets no lexeme, a script without a dictionary no dictionary:
-- the word stays as it is.
RETURN 'stem:' || coalesce((ts_lexize(dictionaries[rag._script_slot(term)], rag._folded(term)))[1],
                           rag._folded(term));
COMMENT ON FUNCTION rag._stem(text, regdictionary[]) IS
    'Private: the stem: term a prose chunk posts for a term: its Snowball stem by the dictionary of its script (ё folded to е); a stop word, or a word of a script without a dictionary, as it is.';

CREATE OR REPLACE FUNCTION rag._text_frequencies(
    context      text,
    content      text,
    metadata     jsonb,
    dictionaries regdictionary[]  -- rag._stem_dictionaries()
)
RETURNS TABLE (
    term text,
    tf   integer
)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
BEGIN ATOMIC
    SELECT t.term, t.tf
    FROM rag.term_frequencies(rag._indexed_text(context, content)) t
    WHERE NOT rag._is_document(metadata)
    UNION ALL
    SELECT rag._stem(t.term, dictionaries), sum(t.tf)::integer
    FROM rag.term_frequencies(rag._indexed_text(context, content)) t
    WHERE rag._is_document(metadata)
    GROUP BY 1;
END;
COMMENT ON FUNCTION rag._text_frequencies(text, text, jsonb, regdictionary[]) IS
    'Private: the terms a chunk''s indexed text posts with their counts: a document''s stem: terms (sourceType markdown, text, pdf), any other chunk''s terms.';

CREATE OR REPLACE FUNCTION rag._keyword_terms(
    query        text,
    dictionaries regdictionary[]  -- rag._stem_dictionaries()
)
RETURNS text[]
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
BEGIN ATOMIC
    SELECT coalesce(array_agg(DISTINCT x.term), '{}'::text[])
    FROM unnest(rag.query_terms(query, dictionaries)) AS q(term),
         LATERAL (VALUES (q.term), (rag._stem(q.term, dictionaries))) AS x(term);
END;
COMMENT ON FUNCTION rag._keyword_terms(text, regdictionary[]) IS
    'Private: what a query looks up in the postings: its terms (rag.query_terms) for code and their stem: terms for documents.';

-- ---------------------------------------------------------------------------
-- names: a second keyword field of code chunks, for rag.search's names arm
--
-- A code chunk's names are its file's path, its fqn and the fqns of the
-- definitions merged into it. They are posted in rag.postings beside its
-- text, each term prefixed 'name:' (the tokenizer never makes a colon), with
-- document frequencies of their own; the length normalisation stays the
-- chunk's. A hybrid search ranks its candidates by them as a third arm
-- (rag._name_scores), so a query describing a definition ("Emits values
-- within a range") ranks the chunk named for it ahead of chunks that merely
-- use its words (measured: eval/README.md). Documents have no names:
-- their headerPath is in their context already.
CREATE OR REPLACE FUNCTION rag._name_frequencies(
    context  text,
    metadata jsonb
)
RETURNS TABLE (
    term text,
    tf   integer
)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
BEGIN ATOMIC
    -- The context of a code chunk is its path, then its fqn.
    SELECT 'name:' || t.term, t.tf
    FROM rag.term_frequencies(concat_ws(E'\n', context,
            (SELECT string_agg(f, ' ') FROM jsonb_array_elements_text(coalesce(metadata->'fqns', '[]')) AS f))) t
    WHERE metadata ? 'fqn' OR metadata ? 'fqns';
END;
COMMENT ON FUNCTION rag._name_frequencies(text, jsonb) IS
    'Private: the name: terms of a code chunk (its path, fqn and merged fqns, tokenized like its text) with their counts; none for other chunks.';

-- ---------------------------------------------------------------------------
-- The BM25 formulas and the heads' floor, each written once. SQL-standard
-- bodies without SET clauses: bound when created, so they need no
-- search_path, and inlined into the calling queries (no per-row call). The
-- same weight for k1 1.2 and b 0.75 is the heads index's key,
-- rag.posting_impact, which migration 0002 defines.

-- _bm25_idf: Lucene's non-negative inverse document frequency
CREATE OR REPLACE FUNCTION rag._bm25_idf(
    df     integer,
    n_docs double precision
)
RETURNS double precision
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN ln(1 + (n_docs - df + 0.5) / (df + 0.5));
COMMENT ON FUNCTION rag._bm25_idf(integer, double precision) IS
    'Private: a term''s BM25 inverse document frequency, ln(1 + (N - df + 0.5) / (df + 0.5)), never negative.';

-- Stems and exact terms are two fields: each term's inverse document
-- frequency counts the chunks of its own field, or in a source mostly of code
-- a stem found in a few of its documents would weigh as a rare word and lift
-- documents over code. Every document posts the term 'stem:' once (outside
-- its length), so its document frequency is the number of documents, kept by
-- the postings' own upkeep.
CREATE OR REPLACE FUNCTION rag._document_marker(
    metadata jsonb
)
RETURNS TABLE (
    term text,
    tf   integer
)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
BEGIN ATOMIC
    SELECT 'stem:', 1 WHERE rag._is_document(metadata);
END;
COMMENT ON FUNCTION rag._document_marker(jsonb) IS
    'Private: the term stem: once for a document chunk (its document frequency counts the documents), nothing for others.';

CREATE OR REPLACE FUNCTION rag._documents()
RETURNS double precision
LANGUAGE sql
STABLE
BEGIN ATOMIC
    SELECT coalesce((SELECT s.df FROM rag.term_stats s WHERE s.term = 'stem:'), 0)::double precision;
END;
COMMENT ON FUNCTION rag._documents() IS
    'Private: how many chunks are documents (those posting stem: terms): the document frequency of the term stem:.';

-- ---------------------------------------------------------------------------
-- _chunk_terms: every term a chunk posts
CREATE OR REPLACE FUNCTION rag._chunk_terms(
    prefix       text,   -- rag._chunk_prefix(context, contextual_text)
    context      text,
    content      text,
    metadata     jsonb,
    dictionaries regdictionary[]  -- rag._stem_dictionaries()
)
RETURNS TABLE (
    term    text,
    tf      integer,
    in_text boolean  -- counted in the document length (the names and the marker are not)
)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
BEGIN ATOMIC
    -- Its indexed text's terms, then its names' (from the structural context
    -- alone) or a document's marker.
    SELECT t.term, t.tf, true FROM rag._text_frequencies(prefix, content, metadata, dictionaries) t
    UNION ALL
    SELECT t.term, t.tf, false FROM rag._name_frequencies(context, metadata) t
    UNION ALL
    SELECT t.term, t.tf, false FROM rag._document_marker(metadata) t;
END;
COMMENT ON FUNCTION rag._chunk_terms(text, text, text, jsonb, regdictionary[]) IS
    'Private: the terms a chunk posts with their counts, and whether each counts in its BM25 length: '
    'its indexed text''s, its names'' and a document''s stem: marker.';

CREATE OR REPLACE FUNCTION rag._field_idf(
    term      text,
    df        integer,
    chunks    double precision,
    documents double precision
)
RETURNS double precision
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN rag._bm25_idf(df, CASE WHEN starts_with(term, 'stem:') THEN documents ELSE chunks - documents END);
COMMENT ON FUNCTION rag._field_idf(text, integer, double precision, double precision) IS
    'Private: a term''s inverse document frequency within its field: a stem: term among the documents, any other among the other chunks.';

-- _bm25_weight: one posting's share of a chunk's score
CREATE OR REPLACE FUNCTION rag._bm25_weight(
    tf         integer,
    term_count integer,
    idf        double precision,
    k1         double precision,
    b          double precision,
    avg_length double precision
)
RETURNS double precision
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- Always below idf * (k1 + 1), the bound bm25_search prunes with.
RETURN idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * term_count / avg_length));
COMMENT ON FUNCTION rag._bm25_weight(integer, integer, double precision, double precision, double precision, double precision) IS
    'Private: the Okapi BM25 weight of a term occurring tf times in a chunk of term_count terms: idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * term_count / avg_length)).';

-- _heads_floor: the lightest weight key rag.postings_heads_idx holds
CREATE OR REPLACE FUNCTION rag._heads_floor()
RETURNS integer
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- About an eighth of all postings weigh this much or more. Written into the
-- index's predicate and bm25_search's heads query as a literal, so that the
-- planner can match the two.
RETURN 800000;
COMMENT ON FUNCTION rag._heads_floor() IS
    'Private: the posting_impact key from which postings are in rag.postings_heads_idx; every posting left out weighs less.';

-- ---------------------------------------------------------------------------
-- _delete_chunks
CREATE OR REPLACE FUNCTION rag._delete_chunks(
    target_source_id bigint,
    paths text[],
    OUT chunk_delta bigint,
    OUT term_delta bigint,
    OUT terms text[],
    OUT df_deltas integer[]
)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    doomed bigint[];
    sweep  boolean;
BEGIN
    SELECT coalesce(array_agg(c.id), '{}'), -coalesce(sum(c.term_count), 0) INTO doomed, term_delta
    FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id
    WHERE c.source_id = target_source_id AND (paths IS NULL OR f.path = ANY (paths));
    chunk_delta := -cardinality(doomed);
    -- A few chunks' postings are found by key, (term, chunk_id) from the
    -- chunks' term lists; a large share of the corpus (a source removed) by
    -- one pass over all postings. One branch runs: `sweep` is a constant here.
    sweep := chunk_delta < -(SELECT s.chunks FROM rag.corpus_stats s) / 10;
    WITH by_key AS (
        DELETE FROM rag.postings p
        USING (SELECT c.id, t.term FROM rag.chunks c, unnest(c.terms) AS t(term) WHERE c.id = ANY (doomed)) d
        WHERE NOT sweep AND p.term = d.term AND p.chunk_id = d.id
        RETURNING p.term
    ),
    by_sweep AS (
        DELETE FROM rag.postings p
        WHERE sweep AND p.chunk_id IN (SELECT unnest(doomed))
        RETURNING p.term
    ),
    counted AS (
        SELECT g.term, -count(*)::integer AS n
        FROM (SELECT k.term FROM by_key k UNION ALL SELECT w.term FROM by_sweep w) g
        GROUP BY g.term
    )
    SELECT coalesce(array_agg(c.term ORDER BY c.term), '{}'), coalesce(array_agg(c.n ORDER BY c.term), '{}')
      INTO terms, df_deltas
    FROM counted c;
    DELETE FROM rag.passages p WHERE p.chunk_id = ANY (doomed);
    DELETE FROM rag.chunks c WHERE c.id = ANY (doomed);
END
$$;
COMMENT ON FUNCTION rag._delete_chunks(bigint, text[]) IS
    'Private: deletes a source''s chunks (all: paths NULL, or those of the given files) with their postings and passages; returns the (negative) changes to the BM25 statistics for rag._apply_keyword_stats.';

-- ---------------------------------------------------------------------------
-- _counting_term_stats
CREATE OR REPLACE FUNCTION rag._counting_term_stats()
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- While the postings key is missing (a first index bulk-loading, or one
    -- killed), writers leave the document frequencies alone and
    -- rag._build_postings_key counts them all at once: for Django's first
    -- index ~2.5M per-batch upserts cost more than one count. Asked by a
    -- transaction that has written postings: the key cannot be built or
    -- dropped (an ACCESS EXCLUSIVE lock) until it ends, so the answer holds.
    SELECT to_regclass('rag.postings_pkey') IS NOT NULL
$$;
COMMENT ON FUNCTION rag._counting_term_stats() IS
    'Private: whether index writers keep rag.term_stats current (false while the postings key is missing; rag._build_postings_key then recounts them).';

-- ---------------------------------------------------------------------------
-- _apply_keyword_stats
CREATE OR REPLACE FUNCTION rag._apply_keyword_stats(
    chunk_delta bigint,
    term_delta bigint,
    terms text[],
    df_deltas integer[]
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    -- The only writes to the shared statistics rows: done last in a
    -- transaction and in key order (corpus_stats after every term), so
    -- concurrent index batches wait for each other briefly, never in a cycle.
    INSERT INTO rag.term_stats AS s (term, df)
    SELECT d.term, sum(d.df)::integer
    FROM unnest(terms, df_deltas) AS d(term, df)
    WHERE rag._counting_term_stats()
    GROUP BY d.term
    HAVING sum(d.df) <> 0
    ORDER BY d.term
    ON CONFLICT (term) DO UPDATE SET df = s.df + excluded.df;
    IF chunk_delta <> 0 OR term_delta <> 0 THEN
        UPDATE rag.corpus_stats
           SET chunks = chunks + chunk_delta, total_terms = total_terms + term_delta;
    END IF;
END
$$;
COMMENT ON FUNCTION rag._apply_keyword_stats(bigint, bigint, text[], integer[]) IS
    'Private: adds changes to the BM25 statistics (chunk count, total length, per-term document frequencies), locking their rows in key order.';


-- ---------------------------------------------------------------------------
-- ensure_heads_index
CREATE OR REPLACE FUNCTION rag.ensure_heads_index()
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
SET maintenance_work_mem = '256MB'
AS $$
DECLARE
    average double precision;
    current integer;
    wanted  integer;
BEGIN
    SELECT s.total_terms::double precision / nullif(s.chunks, 0), s.heads_length INTO average, current
    FROM rag.corpus_stats s;
    IF average IS NULL THEN
        RETURN current;
    END IF;
    -- Rebuilt only when the average chunk length has drifted by more than a
    -- factor of 1.5 from the reference length, itself a power of two; until
    -- then the index is kept up to date like any other.
    IF current IS NOT NULL AND average BETWEEN current / 1.5 AND current * 1.5
       AND to_regclass('rag.postings_heads_idx') IS NOT NULL THEN
        RETURN current;
    END IF;
    wanted := (2 ^ round(log(2, greatest(average, 1)::numeric)))::integer;
    DROP INDEX IF EXISTS rag.postings_heads_idx;
    -- Only postings whose key reaches the floor: every posting missing here
    -- weighs less than that, which bounds them all.
    EXECUTE format(
        'CREATE INDEX postings_heads_idx ON rag.postings'
        ' (term, rag.posting_impact(tf, term_count, %1$s) DESC, chunk_id) INCLUDE (tf, term_count)'
        ' WHERE rag.posting_impact(tf, term_count, %1$s) >= %2$s', wanted, rag._heads_floor());
    UPDATE rag.corpus_stats SET heads_length = wanted;
    RETURN wanted;
END
$$;
COMMENT ON FUNCTION rag.ensure_heads_index() IS
    'Builds rag.postings_heads_idx (each term''s heaviest postings, for bm25_search) for the corpus''s average chunk length, if missing or built for a length 1.5 times off; returns its reference length.';

-- ---------------------------------------------------------------------------
-- Bulk loading: a first index into an empty corpus inserts its postings
-- without their key index and builds it once at the end, a sort instead of
-- millions of B-tree descents (Django: 41 -> 32 PostgreSQL CPU seconds). The
-- loading session holds an advisory lock meanwhile; a run killed during it
-- leaves the key missing, and the next index run or `rag init` rebuilds it.

-- _bulk_lock_key: advisory-lock key of a bulk load ("ragBULK")
CREATE OR REPLACE FUNCTION rag._bulk_lock_key()
RETURNS bigint
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT x'72616742554c4b00'::bigint
$$;
COMMENT ON FUNCTION rag._bulk_lock_key() IS
    'Private: the pg_advisory_lock key held by the session that bulk-loads postings.';

-- ---------------------------------------------------------------------------
-- begin_bulk_load
CREATE OR REPLACE FUNCTION rag.begin_bulk_load()
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    -- Only into an empty corpus: no other source's searches or deletions
    -- need the key meanwhile. A second run starting at once finds the lock
    -- taken and inserts as usual (into the same keyless table).
    IF EXISTS (SELECT 1 FROM rag.postings) OR to_regclass('rag.postings_pkey') IS NULL
       OR NOT pg_try_advisory_lock(rag._bulk_lock_key()) THEN
        RETURN false;
    END IF;
    ALTER TABLE rag.postings DROP CONSTRAINT postings_pkey;
    RETURN true;
END
$$;
COMMENT ON FUNCTION rag.begin_bulk_load() IS
    'If the corpus is empty, drops the postings key for a first index (until rag.end_bulk_load) and returns true.';

-- ---------------------------------------------------------------------------
-- add_postings_key
CREATE OR REPLACE FUNCTION rag.add_postings_key()
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
SET maintenance_work_mem = '256MB'
AS $$
BEGIN
    IF to_regclass('rag.postings_pkey') IS NOT NULL THEN
        RETURN false;
    END IF;
    -- As created by migration 0001.
    ALTER TABLE rag.postings ADD CONSTRAINT postings_pkey PRIMARY KEY (term, chunk_id) INCLUDE (tf, term_count);
    RETURN true;
END
$$;
COMMENT ON FUNCTION rag.add_postings_key() IS
    'Builds the postings key (term, chunk_id) INCLUDE (tf, term_count) if missing and returns true; rag.count_term_stats must follow in the same transaction (writers do not count terms without the key).';

-- ---------------------------------------------------------------------------
-- count_term_stats
CREATE OR REPLACE FUNCTION rag.count_term_stats()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
SET work_mem = '64MB'  -- the count's hash table, ~10 MB for Django's 174k terms
AS $$
BEGIN
    -- Document frequencies, which writers did not count without the key
    -- (rag._counting_term_stats). Holding the postings exclusively (as the
    -- transaction that built the key does already), no writer is half way;
    -- searches wait for the key anyway, so emptying the table and loading it
    -- without its key (then built) costs them nothing.
    LOCK TABLE rag.postings IN ACCESS EXCLUSIVE MODE;
    TRUNCATE rag.term_stats;
    ALTER TABLE rag.term_stats DROP CONSTRAINT term_stats_pkey;
    INSERT INTO rag.term_stats (term, df)
    SELECT p.term, count(*)::integer FROM rag.postings p GROUP BY p.term;
    ALTER TABLE rag.term_stats ADD CONSTRAINT term_stats_pkey PRIMARY KEY (term);
END
$$;
COMMENT ON FUNCTION rag.count_term_stats() IS
    'Counts every term''s document frequency afresh from the postings, holding them exclusively.';

-- ---------------------------------------------------------------------------
-- _build_postings_key
CREATE OR REPLACE FUNCTION rag._build_postings_key()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    PERFORM rag.add_postings_key();
    PERFORM rag.count_term_stats();
END
$$;
COMMENT ON FUNCTION rag._build_postings_key() IS
    'Private: builds the postings key if missing and counts every term''s document frequency afresh.';

-- ---------------------------------------------------------------------------
-- end_bulk_load
CREATE OR REPLACE FUNCTION rag.end_bulk_load()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    IF to_regclass('rag.postings_pkey') IS NULL THEN
        PERFORM rag._build_postings_key();
    END IF;
    PERFORM pg_advisory_unlock(rag._bulk_lock_key());
END
$$;
COMMENT ON FUNCTION rag.end_bulk_load() IS
    'Ends the bulk load begun by rag.begin_bulk_load in this session: builds the postings key, releases the lock.';

-- ---------------------------------------------------------------------------
-- ensure_postings_key
CREATE OR REPLACE FUNCTION rag.ensure_postings_key()
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    -- Missing while a bulk load runs (its session holds the lock: left
    -- alone) or after one was killed (lock free: rebuilt now).
    IF to_regclass('rag.postings_pkey') IS NOT NULL OR NOT pg_try_advisory_xact_lock(rag._bulk_lock_key())
       OR to_regclass('rag.postings_pkey') IS NOT NULL THEN  -- (built by another session meanwhile)
        RETURN false;
    END IF;
    PERFORM rag._build_postings_key();
    RETURN true;
END
$$;
COMMENT ON FUNCTION rag.ensure_postings_key() IS
    'Rebuilds the postings key if a bulk load was killed before rag.end_bulk_load; true when it did.';

-- ---------------------------------------------------------------------------
-- _needs_repair: whether a database crash emptied unlogged data, locked for its repair
CREATE OR REPLACE FUNCTION rag._needs_repair(
    intact regclass  -- the one-row table a crash empties with the data (rag.keyword_data_intact, ...)
)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    present boolean;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', intact) INTO present;
    IF present THEN
        RETURN false;
    END IF;
    -- One repair at a time; a session waiting here finds it done.
    PERFORM pg_advisory_xact_lock(rag._bulk_lock_key());
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', intact) INTO present;
    RETURN NOT present;
END
$$;
COMMENT ON FUNCTION rag._needs_repair(regclass) IS
    'Private: true when the row of intact is missing (a crash emptied its data), holding the repair lock '
    'until the transaction ends; false, without waiting, when the data is intact.';

-- ---------------------------------------------------------------------------
-- _rebuild_postings
CREATE OR REPLACE FUNCTION rag._rebuild_postings()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    dictionaries regdictionary[] := rag._stem_dictionaries();
BEGIN
    -- As a first index loads them: rows first, then the key by one sort.
    TRUNCATE rag.postings;
    DROP INDEX IF EXISTS rag.postings_heads_idx;
    ALTER TABLE rag.postings DROP CONSTRAINT IF EXISTS postings_pkey;
    INSERT INTO rag.postings (term, chunk_id, tf, term_count)
    SELECT t.term, c.id, t.tf, c.term_count
    FROM rag.chunks c,
         LATERAL rag._chunk_terms(rag._chunk_prefix(c.context, c.contextual_text), c.context, c.content,
                                  c.metadata, dictionaries) t;
    PERFORM rag._build_postings_key();
    PERFORM rag.ensure_heads_index();  -- (dropped above: built again)
END
$$;
COMMENT ON FUNCTION rag._rebuild_postings() IS
    'Private: posts every stored chunk''s keywords afresh (after a crash emptied them, or the languages changed), then builds the postings key, document frequencies and heads index.';

-- ---------------------------------------------------------------------------
-- ensure_keyword_data
CREATE OR REPLACE FUNCTION rag.ensure_keyword_data()
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    -- rag.postings is unlogged (migration 0004): a database crash empties it,
    -- and with it the row of rag.keyword_data_intact.
    IF NOT rag._needs_repair('rag.keyword_data_intact') THEN
        RETURN false;
    END IF;
    PERFORM rag._rebuild_postings();
    INSERT INTO rag.keyword_data_intact DEFAULT VALUES;
    RETURN true;
END
$$;
COMMENT ON FUNCTION rag.ensure_keyword_data() IS
    'Rebuilds the postings from the chunks if a database crash emptied them (rag.postings is unlogged); true when it did.';
