-- Bulk loading of postings, and the repair of the unlogged keyword data after a
-- database crash.

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
