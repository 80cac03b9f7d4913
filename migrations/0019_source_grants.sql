-- Which sources a database role may read: rag serve's read tokens each run as a
-- role of their own (a member of rag_reader), and the row-level security policies
-- that rag.create_roles() puts on the tables show such a role only these sources.
-- Keyed by source name, so a source removed and indexed again keeps its readers.
CREATE TABLE rag.source_grants (
    role_name   name NOT NULL,
    source_name text NOT NULL,  -- '*': every source
    PRIMARY KEY (role_name, source_name)
);
COMMENT ON TABLE rag.source_grants IS
    'The sources each reader role may read (rag.grant_sources); ''*'' grants all of them.';
