-- The embedding bookkeeping takes the languages the model reads (texts it
-- cannot read are not embedded): an added parameter would make a second
-- function beside the old one, so the old signatures go here, once.
DROP FUNCTION IF EXISTS rag.chunks_without_embedding(bigint, text, integer);
DROP FUNCTION IF EXISTS rag.count_chunks_without_embedding(bigint, text);
