-- The fused candidates take the keyword arm's neighbour windows (bm25.neighbours,
-- bm25.neighbourShare: rag._bm25_neighbours): an added parameter would make a
-- second function beside the old one, so the old signature goes here, once.
DROP FUNCTION IF EXISTS rag._fused_candidates(rag.parsed_query, vector, text, integer, integer, text[], text[], text[],
                                              text, double precision, double precision, integer, double precision,
                                              double precision, text);
