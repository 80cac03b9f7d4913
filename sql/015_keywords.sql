-- Keyword-search text: the tokenizer shared by documents and queries, the
-- language of each word (Snowball stems per script), and the names field of
-- code chunks. Their statistics and postings: 016_bm25_stats.sql, 017_bulk_load.sql.

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
-- _scripts: a text's words counted by script
CREATE OR REPLACE FUNCTION rag._scripts(
    content text
)
RETURNS jsonb
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, rag, public
AS $$
    -- Words with a letter, by rag._script_slot: {"1": 3, "2": 2} is three Latin words and two Cyrillic.
    SELECT coalesce(jsonb_object_agg(s.slot, s.words), '{}')
    FROM (SELECT rag._script_slot(w) AS slot, count(*) AS words
          FROM regexp_split_to_table(coalesce(content, ''), '[^[:alnum:]]+') AS w
          WHERE w ~ '[[:alpha:]]' GROUP BY 1) s
$$;
COMMENT ON FUNCTION rag._scripts(text) IS
    'Private: a text''s words with a letter counted by script slot (rag._script_slot), as jsonb {"slot": words}.';

-- ---------------------------------------------------------------------------
-- _readable_share: how much of a parsed query a model of some languages can read
CREATE OR REPLACE FUNCTION rag._readable_share(
    scripts   jsonb,   -- rag._scripts(text), or (rag.parse_query(query)).scripts
    languages text[]   -- the languages the embedding model reads; NULL: any
)
RETURNS double precision
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, rag, public
AS $$
    -- The share of the query's words written in the script of one of the
    -- languages: the weight of the vector arm of an English-only model is
    -- scaled by it, so that it never outvotes BM25 on a Russian question it
    -- cannot read (docs/decisions).
    SELECT CASE WHEN languages IS NULL THEN 1.0::double precision
           ELSE coalesce(coalesce(sum(s.words::double precision) FILTER (
                             WHERE s.slot::integer IN (SELECT rag._language_slot(l) FROM unnest(languages) AS l)), 0)
                         / nullif(sum(s.words::double precision), 0), 1.0) END
    FROM jsonb_each_text(scripts) AS s(slot, words)
$$;
COMMENT ON FUNCTION rag._readable_share(jsonb, text[]) IS
    'Private: the share (0 to 1) of the words counted in scripts (rag._scripts) written in a script of one of languages (NULL: any, 1).';

-- ---------------------------------------------------------------------------
-- readable_share
CREATE OR REPLACE FUNCTION rag.readable_share(
    query     text,
    languages text[]  -- the languages the embedding model reads; NULL: any
)
RETURNS double precision
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT rag._readable_share(rag._scripts(query), languages)
$$;
COMMENT ON FUNCTION rag.readable_share(text, text[]) IS
    'The share (0 to 1) of a query''s words written in a script of one of languages (NULL: any, 1): what rag.search scales the vector arm''s weight by for a model reading only those languages.';

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

-- _prose_term: the one rule by which documents post a word and queries look it up
--
-- With Russian lemmas on (search.lemmas, rag.set_lemmas), a Cyrillic word
-- found in rag.lemmas is posted by the Snowball stem of its lemma ("людей" ->
-- человек -> stem:человек, "шёл" -> идти -> stem:идт), where Snowball alone
-- leaves forms of one word apart; any other word, or one the table lacks (a
-- query word no document holds), by its own stem, which mostly agrees with
-- its lemma's. Documents (rag._text_frequencies) and queries (rag.parse_query,
-- rag._keyword_terms) both go through this function, so a query typed in psql
-- gets the terms the CLI's does. A set-returning SQL function of one row: the
-- planner inlines it into the calling query, the table's probe included (a
-- scalar function with a subquery is never inlined: called per term).
CREATE OR REPLACE FUNCTION rag._prose_term(
    term         text,
    dictionaries regdictionary[]  -- rag._stem_dictionaries()
)
RETURNS TABLE (
    stem text
)
LANGUAGE sql
STABLE  -- (reads rag.lemmas)
PARALLEL SAFE
BEGIN ATOMIC
    -- The lemma is looked up in a subquery of its own (OFFSET 0: not pulled
    -- up), so rag._stem gets a plain column and is inlined in turn.
    SELECT rag._stem(coalesce(x.lemma, term), dictionaries)
    FROM (SELECT CASE WHEN rag._script_slot(term) = 2
                      THEN (SELECT l.lemma FROM rag.lemmas l WHERE l.word = rag._folded(term)) END AS lemma
          OFFSET 0) AS x;
END;
COMMENT ON FUNCTION rag._prose_term(text, regdictionary[]) IS
    'Private: the stem: term documents post and queries look up for a word: the Snowball stem of its lemma when rag.lemmas has one (Cyrillic words, search.lemmas), else rag._stem of the word.';

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
STABLE  -- (rag._prose_term reads rag.lemmas)
PARALLEL SAFE
BEGIN ATOMIC
    SELECT t.term, t.tf
    FROM rag.term_frequencies(rag._indexed_text(context, content)) t
    WHERE NOT rag._is_document(metadata)
    UNION ALL
    SELECT s.stem, sum(t.tf)::integer
    FROM rag.term_frequencies(rag._indexed_text(context, content)) t,
         LATERAL rag._prose_term(t.term, dictionaries) s
    WHERE rag._is_document(metadata)
    GROUP BY 1;
END;
COMMENT ON FUNCTION rag._text_frequencies(text, text, jsonb, regdictionary[]) IS
    'Private: the terms a chunk''s indexed text posts with their counts: a document''s stem: terms (rag._prose_term; sourceType markdown, text, pdf), any other chunk''s terms.';

CREATE OR REPLACE FUNCTION rag._keyword_terms(
    query        text,
    dictionaries regdictionary[]  -- rag._stem_dictionaries()
)
RETURNS text[]
LANGUAGE sql
STABLE  -- (rag._prose_term reads rag.lemmas)
PARALLEL SAFE
BEGIN ATOMIC
    SELECT coalesce(array_agg(DISTINCT x.term), '{}'::text[])
    FROM unnest(rag.query_terms(query, dictionaries)) AS q(term),
         LATERAL rag._prose_term(q.term, dictionaries) s,
         LATERAL (VALUES (q.term), (s.stem)) AS x(term);
END;
COMMENT ON FUNCTION rag._keyword_terms(text, regdictionary[]) IS
    'Private: what a query looks up in the postings: its terms (rag.query_terms) for code and their stem: terms (rag._prose_term) for documents.';

-- ---------------------------------------------------------------------------
-- lemmas: Russian words by their lemma (search.lemmas; rag._prose_term reads them)
--
-- The lemmatizer runs in Python (pymorphy3, the optional extra local-rag[ru]):
-- before a batch of chunks is stored, rag.unlemmatized_words names the
-- Cyrillic words of its texts the table lacks, and rag.add_lemmas stores
-- theirs. Rows are only ever added, so the postings of a stored chunk always
-- agree with the table; rag.set_lemmas(false) empties it and re-posts.
CREATE OR REPLACE FUNCTION rag.unlemmatized_words(
    texts text[]  -- indexed texts of chunks about to be stored (context, then content)
)
RETURNS text[]
LANGUAGE sql
STABLE
PARALLEL SAFE
SET search_path = pg_catalog, rag, public
AS $$
    -- The words as the tokenizer makes them (identifier parts and wholes), as rag._prose_term looks them up.
    SELECT coalesce(array_agg(w.word ORDER BY w.word), '{}')
    FROM (SELECT DISTINCT rag._folded(t.term) AS word
          FROM unnest(texts) AS x(body), LATERAL rag.term_frequencies(x.body) t
          WHERE x.body ~ '[\u0400-\u04ff]' AND rag._script_slot(t.term) = 2) w
    WHERE NOT EXISTS (SELECT 1 FROM rag.lemmas l WHERE l.word = w.word)
$$;
COMMENT ON FUNCTION rag.unlemmatized_words(text[]) IS
    'The Cyrillic words of texts (tokenized as rag.term_frequencies does, ё as е) that rag.lemmas has no lemma for.';

CREATE OR REPLACE FUNCTION rag.stored_unlemmatized_words()
RETURNS SETOF text
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    SELECT DISTINCT rag._folded(t.term)
    FROM rag.chunks c,
         LATERAL rag.term_frequencies(rag._indexed_text(rag._chunk_prefix(c.context, c.contextual_text), c.content)) t
    WHERE rag._is_document(c.metadata)
      AND (c.content ~ '[\u0400-\u04ff]' OR c.context ~ '[\u0400-\u04ff]' OR c.contextual_text ~ '[\u0400-\u04ff]')
      AND rag._script_slot(t.term) = 2
      AND NOT EXISTS (SELECT 1 FROM rag.lemmas l WHERE l.word = rag._folded(t.term))
$$;
COMMENT ON FUNCTION rag.stored_unlemmatized_words() IS
    'The Cyrillic words of the stored documents (as rag.unlemmatized_words reads texts) that rag.lemmas has no lemma for: what turning search.lemmas on must lemmatize first.';

CREATE OR REPLACE FUNCTION rag.add_lemmas(
    words  text[],  -- lowercase words (ё is folded to е here)
    lemmas text[]   -- the lemma of each; NULL or '' for a word the lemmatizer cannot read: the word itself
)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    added integer;
BEGIN
    IF cardinality(words) IS DISTINCT FROM cardinality(lemmas) THEN
        RAISE EXCEPTION 'add_lemmas: % words but % lemmas', coalesce(cardinality(words)::text, 'NULL'),
            coalesce(cardinality(lemmas)::text, 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A word's row is written once and never changed (rag._prose_term).
    INSERT INTO rag.lemmas (word, lemma)
    SELECT DISTINCT ON (rag._folded(lower(u.w))) rag._folded(lower(u.w)),
           rag._folded(lower(coalesce(nullif(btrim(u.l), ''), u.w)))
    FROM unnest(words, lemmas) AS u(w, l)
    WHERE u.w IS NOT NULL AND u.w <> ''
    ORDER BY rag._folded(lower(u.w))
    ON CONFLICT (word) DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END
$$;
COMMENT ON FUNCTION rag.add_lemmas(text[], text[]) IS
    'Stores the lemma of each word (both lowercased, ё as е; a NULL or empty lemma: the word) where rag.lemmas has none yet; returns how many were new.';

-- Verbal nouns (rag.verbal_nouns, filled by the lemmatizer beside rag.lemmas):
-- a query beginning with one also looks up its verb (rag._title_verb).
CREATE OR REPLACE FUNCTION rag.underived_nouns()
RETURNS SETOF text
LANGUAGE sql
STABLE
SET search_path = pg_catalog, rag, public
AS $$
    -- Only while rag.verbal_nouns is empty (an index lemmatized before it): from
    -- then on the lemmatizer stores each new noun's row with its lemma, and every
    -- command's check costs one probe, not a scan of rag.lemmas.
    SELECT DISTINCT l.lemma FROM rag.lemmas l
    WHERE NOT EXISTS (SELECT 1 FROM rag.verbal_nouns)
      AND (l.lemma LIKE '%ние' OR l.lemma LIKE '%тие')
$$;
COMMENT ON FUNCTION rag.underived_nouns() IS
    'While rag.verbal_nouns is empty (an index lemmatized before it), the lemmas of rag.lemmas in -ние/-тие: what the lemmatizer looks at for a verb (rag.add_verbal_nouns), once.';

CREATE OR REPLACE FUNCTION rag.add_verbal_nouns(
    nouns text[],  -- lemmas in -ние/-тие (ё is folded to е here)
    verbs text[]   -- the lemma of each one's verb; NULL or '' where it has none
)
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
DECLARE
    added integer;
BEGIN
    IF cardinality(nouns) IS DISTINCT FROM cardinality(verbs) THEN
        RAISE EXCEPTION 'add_verbal_nouns: % nouns but % verbs', coalesce(cardinality(nouns)::text, 'NULL'),
            coalesce(cardinality(verbs)::text, 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO rag.verbal_nouns (noun, verb)
    SELECT DISTINCT ON (rag._folded(lower(u.n))) rag._folded(lower(u.n)), rag._folded(lower(nullif(btrim(u.v), '')))
    FROM unnest(nouns, verbs) AS u(n, v)
    WHERE u.n IS NOT NULL AND u.n <> ''
    ORDER BY rag._folded(lower(u.n))
    ON CONFLICT (noun) DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
    RETURN added;
END
$$;
COMMENT ON FUNCTION rag.add_verbal_nouns(text[], text[]) IS
    'Stores the verb (its lemma; NULL or empty: none) of each verbal noun lemma rag.verbal_nouns has no row for yet; returns how many were new.';

-- The verb of a query's first word where that is a verbal noun (rag.lemmas ->
-- rag.verbal_nouns): "Переименование файлов" -> переименовать. A title-like
-- query, a noun phrase headed by the action, whose section mostly says it with
-- the verb; a verbal noun further on (a man page's "запуск заданий ... для
-- последующего выполнения") is left alone (decision 033, session 32). Only a
-- verb the documents use (its stem is posted): a verb the suffix rules got
-- wrong (чтение -> чтить) adds nothing but noise to the word order.
CREATE OR REPLACE FUNCTION rag._title_verb(
    query text
)
RETURNS text
LANGUAGE sql
STABLE  -- (reads rag.lemmas, rag.verbal_nouns, rag.term_stats)
PARALLEL SAFE
BEGIN ATOMIC
    SELECT v.verb
    FROM rag.lemmas l JOIN rag.verbal_nouns v ON v.noun = l.lemma
    WHERE l.word = rag._folded(lower(substring(btrim(query) FROM '^[\u0400-\u04ff]+')))
      AND v.verb IS NOT NULL
      AND EXISTS (SELECT 1 FROM rag.term_stats s WHERE s.term = rag._stem(v.verb, rag._stem_dictionaries()));
END;
COMMENT ON FUNCTION rag._title_verb(text) IS
    'Private: the verb (rag.verbal_nouns) of the verbal noun a query begins with, where documents use that verb (its stem is posted), else NULL; rag.parse_query looks it up too.';

CREATE OR REPLACE FUNCTION rag.set_lemmas(
    enabled boolean
)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, rag, public
AS $$
BEGIN
    IF enabled IS NULL THEN
        RAISE EXCEPTION 'set_lemmas: enabled must be true or false, not NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Concurrent callers one at a time, and never during a bulk load.
    PERFORM pg_advisory_xact_lock(rag._bulk_lock_key());
    IF (SELECT s.lemmas FROM rag.keyword_settings s) = enabled THEN
        RETURN false;
    END IF;
    IF enabled AND EXISTS (SELECT 1 FROM rag.stored_unlemmatized_words()) THEN
        RAISE EXCEPTION 'set_lemmas: the stored documents hold Cyrillic words without a lemma; add theirs first (rag.stored_unlemmatized_words, rag.add_lemmas)'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    UPDATE rag.keyword_settings SET lemmas = enabled;
    IF NOT enabled THEN
        TRUNCATE rag.lemmas, rag.verbal_nouns;
    END IF;
    -- The documents' stems change with it: posted again from the stored chunks.
    PERFORM rag._rebuild_postings();
    RETURN true;
END
$$;
COMMENT ON FUNCTION rag.set_lemmas(boolean) IS
    'Turns Russian lemmas in the keyword index on (every stored document''s Cyrillic words must have theirs in rag.lemmas) or off (rag.lemmas and rag.verbal_nouns emptied); when that changes, re-posts every chunk''s keywords and returns true.';

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

-- Stemmed names: a code chunk's names also post the Snowball stem of each of
-- their words made of letters alone (path and identifier parts, wholes such as
-- spylisteners), prefixed 'name:stem:' (listeners -> name:stem:listen), and a
-- query's name terms include its words' stems (rag.parse_query), so the names
-- arm meets "serializes" in serialize(), "levels" in levels.js. Only names:
-- the same stems in the chunks' text lifted the code base's common words
-- (decision 034, session 31). Their document frequencies are among code
-- chunks, as the names' (rag._field_idf).
CREATE OR REPLACE FUNCTION rag._name_stem(
    term         text,
    dictionaries regdictionary[]  -- rag._stem_dictionaries()
)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
-- NULL for a term with a digit or a joint (utf8, spy_listeners), a stop word
-- and a word of a script without a dictionary.
RETURN CASE WHEN term ~ '^[[:alpha:]]+$'
            THEN 'name:stem:' || (ts_lexize(dictionaries[rag._script_slot(term)], rag._folded(term)))[1] END;
COMMENT ON FUNCTION rag._name_stem(text, regdictionary[]) IS
    'Private: the name:stem: term a code chunk''s names post, and a query looks up, for a word of letters: its Snowball stem by the dictionary of its script; NULL for other terms, stop words and scripts without a dictionary.';

CREATE OR REPLACE FUNCTION rag._name_stem_frequencies(
    context      text,
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
    SELECT s.term, sum(n.tf)::integer
    FROM rag._name_frequencies(context, metadata) n,
         LATERAL (SELECT rag._name_stem(substr(n.term, 6), dictionaries) AS term) s
    WHERE s.term IS NOT NULL
    GROUP BY 1;
END;
COMMENT ON FUNCTION rag._name_stem_frequencies(text, jsonb, regdictionary[]) IS
    'Private: the name:stem: terms of a code chunk (rag._name_stem of its name: terms) with their counts; none for other chunks.';

