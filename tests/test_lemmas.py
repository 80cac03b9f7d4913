"""Russian lemmas in the keyword index (``search.lemmas``, rag/lemmas.py, decision 033): one rule
for documents and queries (rag._prose_term), psql included; without the package, or turned off,
the index is Snowball's as before; turning it on or off re-posts the stored chunks; no word, however
odd, breaks an index run."""

from pathlib import Path
from typing import Any

import psycopg
import pytest
from fakes import HashEmbedder
from helpers import rows

from rag import db, lemmas, sqlapi
from rag.config import ChunkSettings, SearchConfig, SourceSpec
from rag.errors import ConfigError
from rag.indexer import index_source

LANGUAGES = ["english", "russian"]
needs_pymorphy3 = pytest.mark.skipif(not lemmas.available(), reason="local-rag[ru] (pymorphy3) not installed")


def write_guide(root: Path) -> None:
    root.mkdir(exist_ok=True)
    (root / "people.md").write_text(
        "# Люди\n\nМного людей шёл по дороге, а ФАЙЛа нет.\n", encoding="utf-8")
    (root / "years.md").write_text("# Годы\n\nПрошло пять лет с тех пор.\n", encoding="utf-8")
    (root / "code.py").write_text("def people():\n    # людей много\n    return 1\n", encoding="utf-8")


def index(target: db.DatabaseTarget, root: Path) -> None:
    if not root.exists():
        write_guide(root)
    with db.connect(target) as conn:
        index_source(conn, SourceSpec("guide", "local", str(root)), root, HashEmbedder(), ChunkSettings())


def postings(target: db.DatabaseTarget, path: str) -> set[str]:
    return {r["term"] for r in rows(
        target, "SELECT p.term FROM rag.postings p JOIN rag.chunks c ON c.id = p.chunk_id"
                " JOIN rag.files f ON f.id = c.file_id WHERE f.path = %s", path)}


def found(target: db.DatabaseTarget, query: str) -> list[str]:
    return sorted({r["path"] for r in rows(
        target, "SELECT f.path FROM rag.bm25_search(%s, 10) b JOIN rag.chunks c ON c.id = b.chunk_id"
                " JOIN rag.files f ON f.id = c.file_id", query)})


def statistics(target: db.DatabaseTarget) -> list[dict[str, Any]]:
    return rows(target, "SELECT term, df FROM rag.term_stats WHERE df > 0 ORDER BY term")


@needs_pymorphy3
def test_documents_and_psql_queries_post_and_look_up_one_lemma(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    with db.connect(rag_db) as conn:
        lemmas.apply(conn, "auto", LANGUAGES)
        assert sqlapi.keyword_lemmas(conn) is True
    index(rag_db, tmp_path / "p")
    # людей -> человек, шёл -> идти, лет -> год: forms Snowball leaves apart.
    assert {"stem:человек", "stem:идт", "stem:дорог"} <= postings(rag_db, "people.md")
    assert {"stem:год", "stem:пят"} <= postings(rag_db, "years.md")
    assert {"людей", "много"} <= postings(rag_db, "code.py")  # code keeps its exact words
    # A query from psql goes through the same function: its terms are the documents'.
    assert rows(rag_db, "SELECT s.stem FROM rag._prose_term('людей', rag._stem_dictionaries()) s") == [
        {"stem": "stem:человек"}]
    terms = rows(rag_db, "SELECT (rag.parse_query('человек шёл')).keyword_terms AS t")[0]["t"]
    assert {"stem:человек", "stem:идт"} <= set(terms)
    assert found(rag_db, "человек") == ["people.md"]
    assert found(rag_db, "год") == ["years.md"]
    assert found(rag_db, "шёл человек") == ["people.md"]
    # A word no document holds is looked up by its own stem, as without lemmas.
    assert rows(rag_db, "SELECT s.stem FROM rag._prose_term('копию', rag._stem_dictionaries()) s") == [
        {"stem": "stem:коп"}]
    # Every Cyrillic word of the stored documents has its row, the split parts of ФАЙЛа too.
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.stored_unlemmatized_words()") == [{"n": 0}]
    assert {"фай", "ла", "файла"} <= {r["word"] for r in rows(rag_db, "SELECT word FROM rag.lemmas")}


def test_without_the_package_the_index_is_snowballs(rag_db: db.DatabaseTarget, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lemmas, "available", lambda: False)
    assert lemmas.wanted("auto", LANGUAGES) is False
    with pytest.raises(ConfigError, match=r"pymorphy3 is not installed: pip install 'local-rag\[ru\]'"):
        lemmas.wanted(True, LANGUAGES)
    with db.connect(rag_db) as conn:
        lemmas.apply(conn, "auto", LANGUAGES)
        assert sqlapi.keyword_lemmas(conn) is False
    index(rag_db, tmp_path / "p")
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.lemmas") == [{"n": 0}]
    assert {"stem:люд", "stem:шел"} <= postings(rag_db, "people.md")
    assert "stem:человек" not in postings(rag_db, "people.md")
    assert found(rag_db, "люди") == ["people.md"]
    assert found(rag_db, "человек") == []


def test_the_setting_defaults_to_auto_and_needs_russian() -> None:
    assert SearchConfig().lemmas == "auto"
    assert SearchConfig.model_validate({"lemmas": False}).lemmas is False
    assert lemmas.wanted(False, LANGUAGES) is False
    assert lemmas.wanted("auto", ["english"]) is False
    with pytest.raises(ConfigError, match=r"search\.languages does not name russian"):
        lemmas.wanted(True, ["english", "ukrainian"])


@needs_pymorphy3
def test_turning_lemmas_on_and_off_posts_the_stored_chunks_again(rag_db: db.DatabaseTarget, rag_dbs: Any,
                                                                 tmp_path: Path) -> None:
    write_guide(tmp_path / "p")
    index(rag_db, tmp_path / "p")
    stems = statistics(rag_db)
    assert found(rag_db, "человек") == []
    with db.connect(rag_db) as conn:
        lemmas.apply(conn, True, LANGUAGES)  # the stored words lemmatized first, then re-posted
        lemmas.apply(conn, True, LANGUAGES)  # unchanged: nothing to do
    assert found(rag_db, "человек") == ["people.md"]
    assert "stem:люд" not in postings(rag_db, "people.md")
    # The same postings as a first index with lemmas on makes: no mix of stems and lemmas.
    fresh = rag_dbs()
    with db.connect(fresh) as conn:
        lemmas.apply(conn, True, LANGUAGES)
    index(fresh, tmp_path / "p")
    assert statistics(rag_db) == statistics(fresh)
    with db.connect(rag_db) as conn:
        lemmas.apply(conn, False, LANGUAGES)
        assert sqlapi.keyword_lemmas(conn) is False
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.lemmas") == [{"n": 0}]
    assert statistics(rag_db) == stems


def test_set_lemmas_refuses_documents_without_their_lemmas(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    index(rag_db, tmp_path / "p")
    with db.connect(rag_db) as conn, pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState,
                                                   match="set_lemmas: the stored documents hold Cyrillic words"):
        conn.execute("SELECT rag.set_lemmas(true)")


def test_add_lemmas_writes_a_word_once(rag_db: db.DatabaseTarget) -> None:
    with db.connect(rag_db) as conn:
        assert sqlapi.add_lemmas(conn, ["Людей", "шёл", "ѣ", ""], ["человек", "идти", "", "x"]) == 3
        assert sqlapi.add_lemmas(conn, ["людей", "годы"], ["люди", None]) == 1  # (людей is kept)
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="add_lemmas: 2 words but 1 lemmas"):
            conn.execute("SELECT rag.add_lemmas('{а,б}', '{а}')")
        assert sqlapi.unlemmatized_words(conn, ["Людей и годы", "ФАЙЛа", "plain English"]) == [
            "и", "ла", "фай", "файла"]
    assert rows(rag_db, "SELECT word, lemma FROM rag.lemmas ORDER BY word") == [
        {"word": "годы", "lemma": "годы"}, {"word": "людей", "lemma": "человек"},
        {"word": "шел", "lemma": "идти"}, {"word": "ѣ", "lemma": "ѣ"}]


@needs_pymorphy3
@pytest.mark.parametrize(
    ("word", "lemma"),
    [
        ("людей", "человек"),
        ("ёлки", "елка"),            # ё folded, as the tokenizer's lookup folds it
        ("какой-то", "какой-то"),
        ("ошибка123", "ошибка123"),  # not a word of letters: itself
        ("ѣ", "ѣ"),
        ("", ""),
        ("а" * 80, "а" * 80),        # longer than the tokenizer keeps: itself
        ("-", "-"),
    ],
)
def test_the_lemmatizer_gives_every_word_a_lemma(word: str, lemma: str) -> None:
    assert lemmas.Lemmatizer().lemma(word) == lemma


@needs_pymorphy3
def test_an_odd_word_never_breaks_an_index_run(rag_db: db.DatabaseTarget, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    class Failing:
        def parse(self, word: str) -> list[Any]:
            if word == "сломанное":
                raise ValueError("no parse")
            return []

    broken = lemmas.Lemmatizer()
    monkeypatch.setattr(broken, "_morph", Failing())
    monkeypatch.setattr(lemmas, "_shared", broken)
    root = tmp_path / "p"
    root.mkdir()
    (root / "odd.md").write_text(
        "# Странное\n\nсломанное слово, ѣ, Ӂ, а́кцент, " + "ж" * 70 + " и ОФАЙЛу_ШАБЛОНУ ошибка123\n",
        encoding="utf-8")
    with db.connect(rag_db) as conn:
        lemmas.apply(conn, True, LANGUAGES)
    index(rag_db, root)
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.stored_unlemmatized_words()") == [{"n": 0}]
    assert rows(rag_db, "SELECT lemma FROM rag.lemmas WHERE word = 'сломанное'") == [{"lemma": "сломанное"}]
    assert found(rag_db, "сломанное") == ["odd.md"]


@needs_pymorphy3
@pytest.mark.parametrize(
    ("word", "lemma"),
    [
        ("удаляет", "удалить"),        # an imperfective's forms take the perfective's lemma
        ("удаляемый", "удалить"),      # (participles and gerunds too)
        ("удаляя", "удалить"),
        ("удалит", "удалить"),
        ("создавал", "создать"),
        ("добавляет", "добавить"),     # добавл-ять, добав-ить
        ("представляет", "представить"),  # (представать is another verb, not a rival)
        ("увеличивает", "увеличить"),
        ("открывается", "открыться"),  # reflexive verbs pair as their bases do
        ("показывает", "показывать"),  # показ-ать: its stem показа does not begin показывать
        ("выводит", "выводить"),       # вывести: another root
        ("делает", "делать"),          # делить is no perfective: a false friend
        ("начинает", "начинать"),      # начинить is начинять's perfective, not начинать's
        ("стоят", "стоять"),
    ],
)
def test_an_aspect_pair_shares_the_perfectives_lemma(word: str, lemma: str) -> None:
    assert lemmas.Lemmatizer().lemma(word) == lemma


@needs_pymorphy3
def test_without_aspects_each_verb_keeps_its_own_lemma() -> None:
    assert lemmas.Lemmatizer(aspects=False).lemma("удаляет") == "удалять"
    assert lemmas.Lemmatizer().perfective("удалять") == "удалить"
    assert lemmas.Lemmatizer().perfective("удалить") is None  # a perfective has no partner to take


def write_commands(root: Path) -> None:
    root.mkdir(exist_ok=True)
    (root / "rm.md").write_text("# rm\n\nКоманда удаляет файлы и создаёт журнал.\n", encoding="utf-8")
    (root / "ls.md").write_text("# ls\n\nКоманда показывает содержимое каталога.\n", encoding="utf-8")


@needs_pymorphy3
def test_a_query_from_psql_finds_the_other_aspect(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    with db.connect(rag_db) as conn:
        lemmas.apply(conn, True, LANGUAGES)
    write_commands(tmp_path / "p")
    index(rag_db, tmp_path / "p")
    assert {"stem:удал", "stem:созда"} <= postings(rag_db, "rm.md")
    assert rows(rag_db, "SELECT s.stem FROM rag._prose_term('удаляет', rag._stem_dictionaries()) s") == [
        {"stem": "stem:удал"}]
    assert found(rag_db, "удалить файлы") == ["rm.md"]
    assert found(rag_db, "создать журнал") == ["rm.md"]
    assert found(rag_db, "показать") == []  # показывать/показать: not joined (its stem показа does not begin it)


@needs_pymorphy3
def test_migration_0028_lemmatizes_an_index_again(rag_db: db.DatabaseTarget, rag_dbs: Any, tmp_path: Path) -> None:
    """An index posted with lemmas before aspect pairs (удаляет -> удалять) is posted again by the
    new lemmas at the next rag init, as a first index with them posts it."""
    write_commands(tmp_path / "p")
    with db.connect(rag_db) as conn:
        lemmas.apply(conn, True, LANGUAGES)
        sqlapi.add_lemmas(conn, ["удаляет", "создает"], ["удалять", "создавать"])  # as an earlier version did
    index(rag_db, tmp_path / "p")
    assert "stem:удаля" in postings(rag_db, "rm.md")
    assert found(rag_db, "удалить") == []
    with db.connect(rag_db) as conn:
        conn.execute("DELETE FROM rag._yoyo_migration WHERE migration_id = '0028_aspect_pair_lemmas'")
    assert db.install_schema(rag_db).migrations_applied == 1
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.lemmas") == [{"n": 0}]
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.keyword_data_intact") == [{"n": 1}]  # posted by stems
    with db.connect(rag_db) as conn:
        assert sqlapi.keyword_lemmas(conn) is False
        lemmas.apply(conn, True, LANGUAGES)  # what rag init does next
    assert rows(rag_db, "SELECT lemma FROM rag.lemmas WHERE word = 'удаляет'") == [{"lemma": "удалить"}]
    assert found(rag_db, "удалить") == ["rm.md"]
    fresh = rag_dbs()
    with db.connect(fresh) as conn:
        lemmas.apply(conn, True, LANGUAGES)
    index(fresh, tmp_path / "p")
    assert statistics(rag_db) == statistics(fresh)
