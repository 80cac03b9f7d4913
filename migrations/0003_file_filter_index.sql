-- Search filters by path prefix, source type and language resolve to file ids
-- (rag._file_ids). This index answers all three from its pages alone: the
-- files' rows are wide (they hold each file's text), and reading them cost a
-- path-filtered search 3-4 ms per arm at 20k files.
CREATE INDEX files_path_idx ON rag.files (path) INCLUDE (id, source_type, language);
