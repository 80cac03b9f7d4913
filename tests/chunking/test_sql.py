"""SQL files cut by statement: statements found whole whatever their bodies
hold, named by what they create, big ones cut into windows that keep the name."""

import re
from pathlib import Path

import pytest
from fixtures.docs.invariants import assert_chunk_invariants

from rag.chunking.model import Chunk
from rag.chunking.sql import sql_sections
from rag.dispatcher import chunk_bytes, chunk_file

REPO = Path(__file__).parents[2]

SCHEMA = """\
-- Orders and what is known about them.
CREATE TABLE IF NOT EXISTS shop.orders (
    id      bigint PRIMARY KEY,
    note    text DEFAULT 'a; b',   -- a default with a semicolon
    "begin" date
);
COMMENT ON TABLE shop.orders IS 'One row per order; never deleted.';
COMMENT ON COLUMN shop.orders.note IS 'Free text';

CREATE UNIQUE INDEX CONCURRENTLY orders_note_idx ON shop.orders (note);

/* Totals; the view /* nests */ is read by reports; */
CREATE OR REPLACE VIEW shop.order_totals AS
SELECT id, count(*) AS lines FROM shop.orders GROUP BY id;

CREATE MATERIALIZED VIEW shop.daily AS SELECT 1 AS one;

-- ------------------------------------------------------------
-- total: the amount of an order, in its currency
CREATE OR REPLACE FUNCTION shop.total(
    order_id bigint
)
RETURNS numeric
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, shop
AS $fn$
DECLARE
    result numeric := 0;  -- the body's semicolons end nothing
BEGIN
    IF order_id IS NULL THEN
        RAISE EXCEPTION 'total: order_id must not be NULL; got %', order_id;
    END IF;
    SELECT sum(price) INTO result FROM shop.lines WHERE id = order_id AND label <> 'costs $5; $$ apart';
    RETURN result;
END;
$fn$;
COMMENT ON FUNCTION shop.total(bigint) IS 'The amount of an order; NULL for none.';

CREATE PROCEDURE shop.archive(days integer) LANGUAGE sql
BEGIN ATOMIC
    DELETE FROM shop.orders WHERE id < days;
    SELECT CASE WHEN days > 1 THEN 'many' ELSE 'one' END;
END;

CREATE TYPE shop.status AS ENUM ('new', 'paid');
CREATE TRIGGER orders_touch BEFORE UPDATE ON shop.orders
    FOR EACH ROW EXECUTE FUNCTION shop.touch();

DO $$
BEGIN
    PERFORM shop.total(1);  -- a semicolon in a DO block
END
$$;
SELECT E'it\\'s; fine', 'dollar $ sign; too';
"""


def names(text: str) -> list[tuple[str, str | None]]:
    return [(section.kind, section.name) for section in sql_sections(text)]


def test_statements_are_named_by_what_they_create() -> None:
    assert names(SCHEMA) == [
        ("TABLE", "shop.orders"),  # with its COMMENTs
        ("INDEX", "orders_note_idx"),
        ("VIEW", "shop.order_totals"),
        ("VIEW", "shop.daily"),
        ("FUNCTION", "shop.total"),  # with its COMMENT
        ("PROCEDURE", "shop.archive"),
        ("TYPE", "shop.status"),
        ("TRIGGER", "orders_touch"),
        ("MODULE", None),  # the DO block
        ("MODULE", None),
    ]


def section_texts(text: str) -> dict[str | None, str]:
    lines = text.split("\n")
    sections = sql_sections(text)
    ends = [section.start for section in sections[1:]] + [len(lines)]
    return {s.name: "\n".join(lines[s.start : end]).strip() for s, end in zip(sections, ends, strict=True)}


def test_bodies_strings_and_comments_do_not_split_statements() -> None:
    texts = section_texts(SCHEMA)
    total = texts["shop.total"]
    assert total.startswith("-- ----")  # the comments above it are its own
    assert total.endswith("IS 'The amount of an order; NULL for none.';")
    assert "label <> 'costs $5; $$ apart'" in total
    assert texts["shop.orders"].endswith("COMMENT ON COLUMN shop.orders.note IS 'Free text';")
    assert texts["shop.order_totals"].startswith("/* Totals;")
    assert texts["shop.archive"].endswith("END;")
    assert texts["orders_touch"].endswith("EXECUTE FUNCTION shop.touch();")


def test_heads_are_the_declaring_lines() -> None:
    lines = SCHEMA.split("\n")
    heads = {s.name: lines[s.head] for s in sql_sections(SCHEMA)}
    assert heads["shop.total"] == "CREATE OR REPLACE FUNCTION shop.total("
    assert heads["shop.orders"] == "CREATE TABLE IF NOT EXISTS shop.orders ("


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ('CREATE TABLE "Shop"."Order Lines" (id int);', ("TABLE", "Shop.Order Lines")),
        ("create or replace function public.f() returns int language sql return 1;", ("FUNCTION", "public.f")),
        ("CREATE UNLOGGED TABLE t (a int);", ("TABLE", "t")),
        ("CREATE INDEX ON t (a);", ("INDEX", None)),
        ("CREATE DOMAIN email AS text;", ("TYPE", "email")),
        ("CREATE SCHEMA IF NOT EXISTS rag;", ("SCHEMA", "rag")),
        ("CREATE CONSTRAINT TRIGGER t AFTER INSERT ON x FOR EACH ROW EXECUTE FUNCTION f();", ("TRIGGER", "t")),
        ("COMMENT ON FUNCTION rag.f(text) IS 'x';", ("COMMENT", "rag.f")),
        ("ALTER TABLE t ADD COLUMN b int;", ("MODULE", None)),
        ("CREATE TABLE `shop`.`items` (id int);", ("TABLE", "shop.items")),
    ],
)
def test_one_statement(statement: str, expected: tuple[str, str | None]) -> None:
    assert names(statement) == [expected]


def test_a_comment_apart_from_its_object_is_named_by_it() -> None:
    text = "CREATE TABLE a (x int);\nCOMMENT ON FUNCTION rag.f(text) IS 'About f; only.';\n"
    assert names(text) == [("TABLE", "a"), ("COMMENT", "rag.f")]


def test_statements_sharing_a_line_are_one_section_named_only_when_unambiguous() -> None:
    assert names("BEGIN; CREATE TABLE a (x int);\nCREATE TABLE b (x int); CREATE VIEW c AS SELECT 1;\n") == [
        ("TABLE", "a"), ("MODULE", None)
    ]


def test_transactions_and_a_begin_column_open_no_body() -> None:
    text = "BEGIN;\nCREATE TABLE t (begin int, b int);\nEND;\nCREATE VIEW v AS SELECT 1;\n"
    assert names(text) == [("MODULE", None), ("TABLE", "t"), ("MODULE", None), ("VIEW", "v")]


def test_mysql_procedure_body_stays_whole() -> None:
    text = (
        "CREATE PROCEDURE shop.refresh()\nBEGIN\n  IF 1 THEN\n    DELETE FROM t;\n  END IF;\n"
        "  UPDATE t SET a = 1;\nEND;\nCREATE TABLE u (a int);\n"
    )
    assert names(text) == [("PROCEDURE", "shop.refresh"), ("TABLE", "u")]


@pytest.mark.parametrize(
    "text",
    [
        "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; -- never closed\nSELECT 2;\n",
        "SELECT 'unterminated;\nCREATE TABLE t (a int);\n",
        "/* unterminated comment\nCREATE TABLE t (a int);\n",
        ";;;\n$$\n'\n\"\n`\nE'\\",
        "CREATE FUNCTION\n",
    ],
)
def test_broken_sql_is_still_chunked_whole(text: str) -> None:
    result = chunk_bytes(text.encode(), "db/broken.sql", max_tokens=50, overlap=5)
    assert (result.error, result.warnings) == (None, [])
    assert_chunk_invariants(text, result.chunks, 50)


def chunk_names(chunk: Chunk) -> set[str]:
    return {chunk.metadata.get("fqn"), *chunk.metadata.get("fqns", [])} - {None}


def test_the_dispatcher_names_chunks_after_statements() -> None:
    result = chunk_bytes(SCHEMA.encode(), "db/shop.sql", max_tokens=300, overlap=10)
    assert (result.error, result.warnings) == (None, [])
    assert {(c.metadata["sourceType"], c.metadata["language"]) for c in result.chunks} == {("code", "sql")}
    assert_chunk_invariants(SCHEMA, result.chunks, 300, unsplit_line_tokens=40)
    named = {name for chunk in result.chunks for name in chunk_names(chunk)}
    assert {"shop.orders", "shop.total", "shop.archive", "shop.order_totals", "orders_touch"} <= named
    for line in ("RETURN result;", "COMMENT ON FUNCTION shop.total", "DELETE FROM shop.orders"):
        holding = [chunk for chunk in result.chunks if line in chunk.content]
        assert holding and all(chunk_names(chunk) for chunk in holding), line


def test_a_function_too_big_to_merge_is_a_chunk_of_its_own() -> None:
    result = chunk_bytes(SCHEMA.encode(), "db/shop.sql", max_tokens=220, overlap=10)
    total = [c for c in result.chunks if "shop.total" in chunk_names(c)]
    assert [c.metadata.get("fqn") for c in total] == ["shop.total"]
    assert total[0].metadata["fragmentType"] == "FUNCTION"
    assert "RETURN result;" in total[0].content and "COMMENT ON FUNCTION shop.total" in total[0].content


def test_a_big_function_is_cut_into_windows_that_keep_its_name() -> None:
    body = "\n".join(f"    PERFORM step_{i}(order_id, 'label; {i}');" for i in range(60))
    text = f"CREATE FUNCTION shop.big(order_id bigint)\nRETURNS void LANGUAGE plpgsql AS $$\nBEGIN\n{body}\nEND;\n$$;\n"
    result = chunk_bytes(text.encode(), "db/big.sql", max_tokens=100, overlap=10)
    assert len(result.chunks) > 3
    assert {c.metadata["fqn"] for c in result.chunks} == {"shop.big"}
    assert {c.metadata["fragmentType"] for c in result.chunks} == {"FUNCTION"}
    assert_chunk_invariants(text, result.chunks, 100)
    for chunk in result.chunks[1:]:  # later windows start with the declaring line
        assert chunk.metadata["contextLines"] == [1]
        assert chunk.content.startswith("CREATE FUNCTION shop.big(order_id bigint)\n")


def test_the_repository_sql_functions_are_chunks_named_after_them() -> None:
    """Every ``CREATE OR REPLACE FUNCTION x`` of sql/ lies in a chunk that names x (rag.search too)."""
    named: set[str] = set()
    for path in sorted((REPO / "sql").glob("*.sql")):
        rel_path = f"sql/{path.name}"
        result = chunk_file(path, rel_path, max_tokens=256, overlap=32)
        assert (result.error, result.warnings) == (None, [])
        assert_chunk_invariants(result.text, result.chunks, 256)
        for number, line in enumerate(result.text.split("\n"), start=1):
            match = re.match(r"CREATE OR REPLACE FUNCTION ([\w.]+)\(", line)
            if match:
                covering = [c for c in result.chunks
                            if c.metadata["startLine"] <= number <= c.metadata["endLine"]]
                assert any(match[1] in chunk_names(c) for c in covering), (rel_path, number)
        named.update(name for chunk in result.chunks for name in chunk_names(chunk))
    assert "rag.search" in named
