"""Russian verbal nouns on the query side (rag.verbal_nouns, rag/lemmas.py, decision 033 session
32): a query beginning with a verbal noun (a section's title, "Переименование файлов") also looks
up its verb where the documents use it, psql included; a verbal noun further on in a query does
not; the table is filled beside rag.lemmas, and for an index lemmatized before it at the next
command."""

from pathlib import Path

import pytest
from fakes import HashEmbedder
from helpers import rows

from rag import db, lemmas, sqlapi
from rag.config import ChunkSettings, SourceSpec
from rag.indexer import index_source

LANGUAGES = ["english", "russian"]
pytestmark = pytest.mark.skipif(not lemmas.available(), reason="local-rag[ru] (pymorphy3) not installed")


@pytest.mark.parametrize(
    ("noun", "verb"),
    [
        ("переименование", "переименовать"),  # -ование -> -овать
        ("удаление", "удалить"),              # -ение -> -ить
        ("добавление", "добавить"),           # добавл-ение, добав-ить
        ("освобождение", "освободить"),       # жд -> д
        ("развитие", "развить"),              # -тие -> -ть
        ("влияние", "влиять"),
        ("создание", "создать"),
        ("изменение", "изменить"),
        ("здание", None),                     # no verb здать
        ("файл", None),                       # not a verbal noun
        ("", None),
    ],
)
def test_a_verbal_noun_gives_its_verbs_lemma(noun: str, verb: str | None) -> None:
    assert lemmas.Lemmatizer().verb(noun) == verb


def write_guide(root: Path) -> None:
    root.mkdir(exist_ok=True)
    (root / "rename.md").write_text(
        "# Файлы\n\nЧтобы переименовать файлы, вызовите mv с двумя путями.\n", encoding="utf-8")
    (root / "names.md").write_text(
        "# Переименование\n\nО том, как выбирать имена каталогов. Чтение каталогов.\n", encoding="utf-8")


def index(target: db.DatabaseTarget, root: Path) -> None:
    with db.connect(target) as conn:
        lemmas.apply(conn, True, LANGUAGES)
        index_source(conn, SourceSpec("guide", "local", str(root)), root, HashEmbedder(), ChunkSettings())


def terms(target: db.DatabaseTarget, query: str) -> set[str]:
    return set(rows(target, "SELECT (rag.parse_query(%s)).keyword_terms AS t", query)[0]["t"])


def test_a_query_beginning_with_a_verbal_noun_looks_up_its_verb(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    write_guide(tmp_path / "p")
    index(rag_db, tmp_path / "p")
    assert rows(rag_db, "SELECT verb FROM rag.verbal_nouns WHERE noun = 'переименование'") == [
        {"verb": "переименовать"}]
    assert rows(rag_db, "SELECT verb FROM rag.verbal_nouns WHERE noun = 'имя'") == []  # not -ние/-тие
    # From psql as from the CLI: the title's verb is a word of the query (its stem and its order).
    assert rows(rag_db, "SELECT (rag.parse_query('Переименование файлов')).text AS t") == [
        {"t": "Переименование файлов переименовать"}]
    assert "stem:переименова" in terms(rag_db, "Переименование файлов")
    assert rows(rag_db, "SELECT rag._title_verb('ПЕРЕИМЕНОВАНИЕ') AS v") == [{"v": "переименовать"}]
    # Not where the verbal noun is not the query's first word, nor for a word no document holds.
    assert "stem:переименова" not in terms(rag_db, "файлы, их переименование")
    assert rows(rag_db, "SELECT rag._title_verb('Удаление файлов') AS v") == [{"v": None}]
    assert rows(rag_db, "SELECT rag._title_verb('rename файлов') AS v") == [{"v": None}]
    # Nor for a verb no document uses: the rules give чтение a wrong verb (чтить, not читать).
    assert rows(rag_db, "SELECT verb FROM rag.verbal_nouns WHERE noun = 'чтение'") == [{"verb": "чтить"}]
    assert rows(rag_db, "SELECT rag._title_verb('Чтение каталогов') AS v") == [{"v": None}]
    # The title alone finds the section that says it with the verb, beside the one that has the noun.
    hits = rows(rag_db, "SELECT f.path FROM rag.bm25_search('Переименование', 10) b"
                        " JOIN rag.chunks c ON c.id = b.chunk_id JOIN rag.files f ON f.id = c.file_id")
    assert sorted(h["path"] for h in hits) == ["names.md", "rename.md"]


def test_the_verbs_follow_the_lemmas(rag_db: db.DatabaseTarget, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    write_guide(tmp_path / "p")
    index(rag_db, tmp_path / "p")
    with db.connect(rag_db) as conn:
        # An index lemmatized before rag.verbal_nouns gets its nouns' verbs at the next command.
        conn.execute("DELETE FROM rag.verbal_nouns")
        assert sorted(sqlapi.underived_nouns(conn)) == ["переименование", "чтение"]
        lemmas.apply(conn, True, LANGUAGES)
        assert sqlapi.underived_nouns(conn) == []
        # Every later command checks with one probe and never loads the dictionary for it.
        with monkeypatch.context() as patched:
            patched.setattr(lemmas, "lemmatizer", lambda: pytest.fail("the dictionary was loaded"))
            lemmas.apply(conn, True, LANGUAGES)
        assert sqlapi.add_verbal_nouns(conn, ["переименование"], ["другое"]) == 0  # written once
        # Lemmas off: the table is emptied with rag.lemmas, and no query gets a verb.
        lemmas.apply(conn, False, LANGUAGES)
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.verbal_nouns") == [{"n": 0}]
    assert rows(rag_db, "SELECT rag._title_verb('Переименование файлов') AS v") == [{"v": None}]
