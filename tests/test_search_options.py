"""rag.search's options (#50): one SQL function holds their defaults; the sample configuration and
SearchConfig say the same; Python sends only what a configuration sets; psql and the CLI rank a
query the same way, in one round trip."""

from pathlib import Path
from typing import Any

import yaml
from fakes import HashEmbedder
from helpers import rows
from test_languages import index_mixed_project

from rag import db, sqlapi
from rag.config import RagConfig, SearchConfig
from rag.providers import vector_literal
from rag.providers.rerank_base import NoReranker
from rag.search import Searcher, SearchRequest, search_options

ROOT = Path(__file__).resolve().parent.parent
NOT_RANKING = {"finalTopK", "languages", "lemmas"}  # the search section's keys that are no rag.search option


def test_the_sql_defaults_are_the_configuration_defaults(rag_db: db.DatabaseTarget) -> None:
    sql = rows(rag_db, "SELECT rag.search_options() AS o")[0]["o"]
    python = SearchConfig().model_dump(mode="json", by_alias=True, exclude={"final_top_k", "languages", "lemmas"})
    sample = {k: v for k, v in yaml.safe_load((ROOT / "rag.config.yaml").read_text())["search"].items()
              if k not in NOT_RANKING}
    assert {k: v for k, v in sql.items() if k not in {"includeTests", "model"}} == python == sample
    assert (sql["includeTests"], sql["model"]) == (False, None)  # per request, not configured


def test_python_sends_only_what_a_configuration_sets() -> None:
    assert search_options(RagConfig().search) == {}
    set_some = RagConfig.model_validate({"search": {"namesWeight": 0.2, "bm25": {"b": 0.5}, "finalTopK": 5,
                                                   "languages": ["english"], "lemmas": False}})
    assert search_options(set_some.search) == {"namesWeight": 0.2, "bm25": {"b": 0.5}}


def test_overrides_keep_the_other_defaults(rag_db: db.DatabaseTarget) -> None:
    merged = rows(rag_db, """SELECT rag.search_options('{"bm25": {"b": 0.4}, "perFile": 1}') AS o""")[0]["o"]
    defaults = rows(rag_db, "SELECT rag.search_options() AS o")[0]["o"]
    assert merged == {**defaults, "perFile": 1, "bm25": {**defaults["bm25"], "b": 0.4}}


def test_psql_ranks_a_query_as_the_cli_does(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    """Russian and English questions against an English-only model: the vector arm's scaling by the
    query's script happens inside rag.search, so a psql call with the stored query vector gets the
    CLI's ranking, scores included."""
    index_mixed_project(rag_db, tmp_path / "p")
    embedder = HashEmbedder()
    with db.connect(rag_db) as conn:
        sqlapi.set_model_languages(conn, embedder.model_id, embedder.dimensions, ["english"])
        for question in ("Как сделать резервную копию базы данных", "how to back up the database"):
            cli = Searcher(conn, SearchConfig(), embedder, NoReranker()).search(SearchRequest(question, 5)).hits
            vector = vector_literal(embedder.embed_query(question))
            by_vector: list[dict[str, Any]] = rows(
                rag_db, "SELECT chunk_id, score FROM rag.search(%s, %s::vector, 5)", question, vector)
            by_text = rows(rag_db, "SELECT chunk_id, score FROM rag.search(%s, top_k => 5)", question)
            assert [(h.chunk_id, h.score) for h in cli] == [(r["chunk_id"], r["score"]) for r in by_vector]
            assert by_text == by_vector, "the CLI kept the query's vector for psql"


def test_one_round_trip_per_search(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    index_mixed_project(rag_db, tmp_path / "p")
    with db.connect(rag_db) as conn:
        searcher = Searcher(conn, SearchConfig(), HashEmbedder(), NoReranker())
        statements: list[str] = []
        conn.add_notice_handler(lambda _: None)
        original = conn.execute

        def counting(query: Any, *args: Any, **kwargs: Any) -> Any:
            statements.append(str(query))
            return original(query, *args, **kwargs)

        conn.execute = counting  # type: ignore[method-assign]
        searcher.search(SearchRequest("how to back up the database", 5))
    assert len(statements) == 1 and "rag.search(" in statements[0]


def test_what_a_search_finds_out_becomes_a_warning(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    index_mixed_project(rag_db, tmp_path / "p")
    other = HashEmbedder(8, name="other")
    with db.connect(rag_db) as conn:
        found = Searcher(conn, SearchConfig(), other, NoReranker()).search(SearchRequest("pg_dump", 5))
    assert found.hits and all(h.vector_rank is None for h in found.hits)
    assert found.warnings == ["no vectors of the embedding model other@8 are stored, so this answer is "
                              "keyword-only; index again (rag index --all) to embed with it"]


def test_a_query_is_read_once_into_what_every_step_needs(rag_db: db.DatabaseTarget) -> None:
    def parsed(query: str) -> dict[str, Any]:
        return rows(rag_db, "SELECT (rag.parse_query(%s)).*", query)[0]

    sentence = parsed("  How do I refresh the tokens in tests?  ")
    assert sentence["text"] == "How do I refresh the tokens in tests?"
    assert sentence["terms"] == ["refresh", "tests", "tokens"]  # stop words dropped
    assert {"refresh", "stem:refresh", "tokens", "stem:token"} <= set(sentence["keyword_terms"])
    assert sentence["name_terms"] == ["name:refresh", "name:stem:refresh", "name:stem:test", "name:stem:token",
                                      "name:tests", "name:tokens"]
    assert (sentence["identifier"], sentence["names"]) == (False, [])
    assert (sentence["asks_for_tests"], sentence["asks_for_prose"]) == (True, True)
    assert sentence["scripts"] == {"1": 8}

    name = parsed("shop.Cart.total()")
    assert name["identifier"] and {"module": "shop", "fqn": "Cart.total"} in name["names"]
    assert (name["asks_for_tests"], name["asks_for_prose"]) == (False, False)
    assert parsed("как настроить ssh_config")["scripts"] == {"1": 2, "2": 2}
