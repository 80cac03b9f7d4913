-- The keyword arm's document windows take the proximity of the query's words
-- (bm25.proximity: rag._bm25_neighbours, rag._fused_candidates, rag._proximity):
-- an added parameter would make a second function beside each old one, so the
-- signatures 0026 left (with page_weight, query_text, phrase_weight) go here, once.
DROP FUNCTION IF EXISTS rag._fused_candidates(rag.parsed_query, vector, text, integer, integer, text[], text[], text[],
                                              text, double precision, double precision, integer, double precision,
                                              double precision, text, integer, double precision, double precision,
                                              double precision);
DROP FUNCTION IF EXISTS rag._bm25_neighbours(text[], bigint[], double precision[], integer, double precision,
                                             double precision, double precision, double precision, text,
                                             double precision);
