-- The files arm lifts modules only: rag.refresh_file_vectors no longer stores a
-- vector for a file in a path class (tests, examples, vendored code ...), and
-- those stored before go here, once. Before, they filled the arm's nearest
-- files and left it few modules (pino: 4 of its 20). rag.path_class exists
-- when an earlier install stored vectors (a fresh schema has none to drop).
DO $$
BEGIN
    IF to_regprocedure('rag.path_class(text)') IS NOT NULL THEN
        EXECUTE 'DELETE FROM rag.file_vectors v USING rag.files f '
                'WHERE f.id = v.file_id AND rag.path_class(f.path) IS NOT NULL';
    END IF;
END
$$;
