"""Languages of prose (issue 39): Snowball stems and stop words by the script of each word
(``search.languages``, rag.set_languages), ё folded to е, code kept exact; the vector arm of a
model that cannot read the query's script weighed down; a local model's query/document prefixes."""

from pathlib import Path

import psycopg
import pytest
from fakes import HashEmbedder
from helpers import rows

from rag import db, sqlapi
from rag.config import ChunkSettings, EmbeddingsConfig, LocalEmbeddings, SearchConfig, SourceSpec
from rag.indexer import index_source
from rag.providers import LocalEmbedder, model_languages
from rag.providers.rerankers import NoReranker
from rag.search import Searcher, SearchRequest


@pytest.mark.parametrize(
    ("term", "stem"),
    [
        ("configured", "stem:configur"),       # Latin: english_stem, as before
        ("резервную", "stem:резервн"),         # Cyrillic: russian_stem
        ("резервное", "stem:резервн"),
        ("ёлки", "stem:елк"),                  # ё folded to е
        ("елки", "stem:елк"),
        ("как", "stem:как"),                   # a stop word stays as it is
        ("the", "stem:the"),
        ("ελληνικά", "stem:ελληνικά"),         # a script without a dictionary: as it is
        ("utf8", "stem:utf8"),
    ],
)
def test_a_word_is_stemmed_by_the_dictionary_of_its_script(rag_db: db.DatabaseTarget, term: str,
                                                           stem: str) -> None:
    assert rows(rag_db, "SELECT rag._stem(%s, rag._stem_dictionaries()) AS s", term) == [{"s": stem}]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Как сделать резервную копию базы данных", ["базы", "данных", "копию", "резервную", "сделать"]),
        ("Что такое ls и на что он влияет", ["ls", "влияет", "такое"]),  # a Latin word among them
        ("Её размер в байтах", ["байтах", "размер"]),   # ё: её is russian.stop's ее
        ("как и в", ["в", "и", "как"]),                  # nothing else left: all kept
        ("резервную копию", ["копию", "резервную"]),     # under three words: kept as written
        ("how do I get the user by id", ["get", "id", "user"]),  # English as before
    ],
)
def test_query_terms_drop_the_stop_words_of_each_language(rag_db: db.DatabaseTarget, query: str,
                                                          expected: list[str]) -> None:
    assert rows(rag_db, "SELECT rag.query_terms(%s) AS t", query)[0]["t"] == expected


def index_mixed_project(target: db.DatabaseTarget, root: Path) -> None:
    """A Russian guide with English names in it, an English one, and code with a Russian comment."""
    root.mkdir()
    (root / "ru-guide.md").write_text(
        "# Резервное копирование\n\nКоманда pg_dump делает резервную копию базы данных PostgreSQL.\n"
        "Ёмкость диска проверяйте заранее.\n", encoding="utf-8")
    (root / "restore.md").write_text("# Restore\n\nThe backups are restored with pg_restore.\n", encoding="utf-8")
    (root / "dump.py").write_text(
        "def dump(database):\n    # резервную копию пишет pg_dump\n    return run('pg_dump', database)\n",
        encoding="utf-8")
    with db.connect(target) as conn:
        index_source(conn, SourceSpec("mixed", "local", str(root)), root, HashEmbedder(), ChunkSettings())


def found(target: db.DatabaseTarget, query: str) -> list[str]:
    return sorted(r["path"] for r in rows(
        target, "SELECT DISTINCT f.path FROM rag.bm25_search(%s, 10) b JOIN rag.chunks c ON c.id = b.chunk_id"
                " JOIN rag.files f ON f.id = c.file_id", query))


def test_a_mixed_russian_and_english_source(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    index_mixed_project(rag_db, tmp_path / "p")
    # Other forms of the words find the guide; the code's comment keeps its exact words.
    assert found(rag_db, "резервное копирование базы") == ["ru-guide.md"]
    assert found(rag_db, "резервную копию") == ["dump.py", "ru-guide.md"]
    assert found(rag_db, "емкость") == ["ru-guide.md"]           # ё written as е
    assert found(rag_db, "restoring backups") == ["restore.md"]  # English stems as before
    assert found(rag_db, "pg_dump") == ["dump.py", "restore.md", "ru-guide.md"]  # (pg_restore: pg)
    posted = {r["term"] for r in rows(
        rag_db, "SELECT p.term FROM rag.postings p JOIN rag.chunks c ON c.id = p.chunk_id"
                " JOIN rag.files f ON f.id = c.file_id WHERE f.path = %s", "ru-guide.md")}
    assert {"stem:резервн", "stem:коп", "stem:емкост", "stem:pg_dump", "stem:postgresql"} <= posted
    code = {r["term"] for r in rows(
        rag_db, "SELECT p.term FROM rag.postings p JOIN rag.chunks c ON c.id = p.chunk_id"
                " JOIN rag.files f ON f.id = c.file_id WHERE f.path = %s", "dump.py")}
    assert {"резервную", "копию"} <= code and not any(t.startswith("stem:") for t in code)


def test_changing_the_languages_posts_the_stored_chunks_again(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    index_mixed_project(rag_db, tmp_path / "p")
    with db.connect(rag_db) as conn:
        assert sqlapi.keyword_languages(conn) == ["english", "russian"]
        db.apply_languages(conn, ["english", "russian"])  # unchanged: nothing to do
        assert sqlapi.set_languages(conn, ["english"]) is True
    assert found(rag_db, "резервная копия") == []  # Cyrillic words now posted whole
    assert found(rag_db, "резервную копию") == ["dump.py", "ru-guide.md"]
    before = rows(rag_db, "SELECT term, df FROM rag.term_stats ORDER BY term")
    with db.connect(rag_db) as conn:
        db.apply_languages(conn, ["english", "russian"])
        assert sqlapi.set_languages(conn, ["english", "russian"]) is False
    assert found(rag_db, "резервная копия") == ["ru-guide.md"]
    assert rows(rag_db, "SELECT term, df FROM rag.term_stats ORDER BY term") != before
    # The same statistics as a first index with these languages makes.
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.postings WHERE term = 'stem:'") == [{"n": 2}]


@pytest.mark.parametrize(
    ("languages", "message"),
    [
        (["english", "klingon"], "set_languages: no text-search dictionary 'klingon'; Snowball languages here: "),
        (["english", "german"], "set_languages: 'english' and 'german' stem words of one script"),
        ([], "set_languages: languages must name one or more text-search dictionaries"),
    ],
)
def test_set_languages_names_a_bad_argument(rag_db: db.DatabaseTarget, languages: list[str],
                                            message: str) -> None:
    with db.connect(rag_db) as conn, pytest.raises(psycopg.errors.InvalidParameterValue) as caught:
        conn.execute("SELECT rag.set_languages(%s::text[])", (languages,))
    assert str(caught.value).startswith(message)


def test_other_dictionaries_and_languages_by_their_snowball_name(rag_db: db.DatabaseTarget) -> None:
    with db.connect(rag_db) as conn:
        conn.execute("SELECT rag.set_languages('{german_stem,russian}')")
    assert rows(rag_db, "SELECT rag._stem('häuser', rag._stem_dictionaries()) AS s") == [{"s": "stem:haus"}]
    assert rows(rag_db, "SELECT rag.query_terms('die Häuser und der Garten') AS t") == [{"t": ["garten", "häuser"]}]


@pytest.mark.parametrize(
    ("query", "languages", "share"),
    [
        ("Как сделать резервную копию", ["english"], 0.0),
        ("Как настроить ssh_config", ["english"], 0.5),  # как, настроить | ssh, config
        ("how to back up", ["english"], 1.0),
        ("Как сделать резервную копию", ["english", "russian"], 1.0),
        ("Как сделать резервную копию", None, 1.0),
        ("12 34", ["english"], 1.0),  # no words: nothing to weigh down
    ],
)
def test_readable_share(rag_db: db.DatabaseTarget, query: str, languages: list[str] | None,
                        share: float) -> None:
    assert rows(rag_db, "SELECT rag.readable_share(%s, %s::text[]) AS s", query, languages) == [{"s": share}]


def test_an_english_only_model_adds_nothing_to_a_russian_question(rag_db: db.DatabaseTarget,
                                                                 tmp_path: Path) -> None:
    index_mixed_project(rag_db, tmp_path / "p")
    embedder, settings = HashEmbedder(), SearchConfig(final_top_k=5)
    question = SearchRequest("Как сделать резервную копию базы данных")
    with db.connect(rag_db) as conn:  # what the model reads is in the catalog, set by each index run
        sqlapi.set_model_languages(conn, embedder.model_id, embedder.dimensions, ["english"])
        english_only = Searcher(conn, settings, embedder, NoReranker()).search(question)
        keywords = Searcher(conn, settings, embedder, NoReranker()).search(
            SearchRequest(question.query, keyword_only=True))
        sqlapi.set_model_languages(conn, embedder.model_id, embedder.dimensions, None)
        any_language = Searcher(conn, settings, embedder, NoReranker()).search(question)
    assert [(h.chunk_id, h.score) for h in english_only.hits] == [(h.chunk_id, h.score) for h in keywords.hits]
    assert [h.score for h in any_language.hits] != [h.score for h in keywords.hits]


@pytest.mark.parametrize("fusion", ["rrf", "scores"])
def test_a_chunk_the_model_cannot_read_counts_in_the_vector_arm_as_keywords_rank_it(
        rag_db: db.DatabaseTarget, tmp_path: Path, fusion: str) -> None:
    # The Russian guide is not embedded by an English-only model: its keyword rank (score)
    # stands in for the vector arm's, so English chunks found by both arms do not push it
    # down for lacking a vector it cannot have (decision 033, session 30).
    root = tmp_path / "p"
    root.mkdir()
    (root / "ru-guide.md").write_text(
        "# Резервное копирование\n\nКоманда pg_dump делает резервную копию базы данных PostgreSQL: "
        "pg_dump пишет копию, pg_dump её проверяет.\n", encoding="utf-8")
    (root / "restore.md").write_text("# Restore\n\nThe backups of PostgreSQL are restored with pg_restore.\n",
                                     encoding="utf-8")
    (root / "dump.md").write_text("# Dump\n\nRun pg_dump on the database to write a dump.\n", encoding="utf-8")
    embedder = HashEmbedder()
    with db.connect(rag_db) as conn:
        index_source(conn, SourceSpec("mixed", "local", str(root)), root, embedder, ChunkSettings(),
                     model_languages=["english"])
        sqlapi.set_model_languages(conn, embedder.model_id, embedder.dimensions, ["english"])
        settings = SearchConfig(final_top_k=5, fusion=fusion, priors={"docs": 1.0})
        hits = Searcher(conn, settings, embedder, NoReranker()).search(SearchRequest("pg_dump PostgreSQL")).hits
        best_keyword = max(h.bm25 or 0 for h in hits)
    unread = [h for h in hits if h.path == "ru-guide.md"]
    assert len(unread) == 1 and unread[0].vector_rank is None and unread[0].bm25_rank is not None
    assert all(h.vector_rank is not None for h in hits if h.path != "ru-guide.md")  # the model reads them
    expected = (2 * 0.5 / (10 + unread[0].bm25_rank) if fusion == "rrf"
                else 2 * 0.5 * (unread[0].bm25 or 0) / best_keyword)  # both arms, each weighted 0.5
    assert unread[0].score == pytest.approx(expected)


def test_the_model_languages_default_to_english_for_the_bundled_model_only() -> None:
    assert model_languages(EmbeddingsConfig()) == ["english"]
    assert model_languages(EmbeddingsConfig(local=LocalEmbeddings(model="/models/multilingual-e5-small"))) is None
    assert model_languages(EmbeddingsConfig(
        local=LocalEmbeddings(model="/models/e5", languages=["english", "russian"]))) == ["english", "russian"]
    assert model_languages(EmbeddingsConfig(provider="jina")) is None


@pytest.mark.slow  # loads the bundled model
def test_query_and_document_prefixes_reach_the_model() -> None:
    plain = LocalEmbedder()
    prefixed = LocalEmbedder(query_prefix="query: ", document_prefix="passage: ")
    assert prefixed.embed_query("резервная копия") == pytest.approx(plain.embed_query("query: резервная копия"))
    assert prefixed.embed_documents(["база данных"])[0] == pytest.approx(
        plain.embed_documents(["passage: база данных"])[0])
    assert prefixed.embed_query("база данных") != pytest.approx(prefixed.embed_documents(["база данных"])[0])
    # Other prefixes make other vectors: stored apart, as another model's.
    assert plain.model_id == "local:all-MiniLM-L6-v2@384"
    assert prefixed.model_id.startswith("local:all-MiniLM-L6-v2@384~prefixes:")
