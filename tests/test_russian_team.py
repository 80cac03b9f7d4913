"""A Russian team's wiki with the default, English-only embedding model (issue 54): a search and
an index run say the vector arm cannot read Russian and name the fix, `rag status` shows what the
model reads, and Russian texts are not embedded for nothing."""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_confluence import FakeConfluence, Page, sample_site
from fakes import HashEmbedder
from helpers import rows
from plugins.llm import FakeLLM
from plugins.mcp import Harness
from typer.testing import CliRunner

from rag import db
from rag.ask import AskRequest
from rag.cli import app
from rag.config import ConfluencePages, LoadedConfig, RagConfig, SourceSpec
from rag.schemas import SearchOutput
from rag.search import SearchRequest
from rag.service import RagService, folder_source

GUIDES = {
    "ops/backup.md": "# Резервное копирование\n\n## Как восстановить базу\n\n"
                     "Восстановление базы из резервной копии выполняет команда pg_restore; "
                     "перед восстановлением остановите сервис и проверьте свободное место на диске.\n",
    "ops/release.md": "# Регламент релизов\n\nРелиз собирается по четвергам, после проверки тестов "
                      "и согласования с дежурным инженером.\n",
    "tools/dump.py": "def dump(database):\n    # резервную копию пишет pg_dump\n    return run('pg_dump', database)\n",
}


def russian_service(target: db.DatabaseTarget, config: dict[str, Any] | None = None) -> RagService:
    """The default config (the bundled English-only model) with a stand-in embedder of its id."""
    service = RagService(loaded=LoadedConfig(RagConfig.model_validate(config or {}), None, "test"),
                         embedder=HashEmbedder(8))
    service._target = target
    return service


@pytest.fixture
def wiki(tmp_path: Path) -> Path:
    root = tmp_path / "wiki"
    for path, text in GUIDES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def service(rag_db: db.DatabaseTarget) -> Iterator[RagService]:
    with russian_service(rag_db) as service:
        yield service


def test_an_index_run_embeds_only_what_the_model_reads_and_says_so(service: RagService, wiki: Path) -> None:
    out = service.index(folder_source(wiki, "wiki"))

    assert out.chunks_total == 3
    assert (out.embedded, out.unreadable) == (1, 2)  # the code with a Russian comment; not the guides
    (warning,) = out.warnings
    assert "2 texts of this source are in languages the embedding model test@8 does not read" in warning
    assert "jina-embeddings-v3" in warning and "multilingual" in warning
    again = service.index(folder_source(wiki, "wiki"))
    assert (again.embedded, again.reused, again.unreadable) == (0, 1, 2)


def test_a_russian_search_says_it_is_keyword_only_and_names_the_fix(service: RagService, wiki: Path) -> None:
    service.index(folder_source(wiki, "wiki"))

    out: SearchOutput = service.search(SearchRequest("как восстановить базу из резервной копии"))

    assert out.results[0].path == "ops/backup.md"
    assert all(r.scores.vector_rank is None for r in out.results)
    (warning,) = out.warnings
    assert warning.startswith("the embedding model test@8 reads only english, so this query was searched "
                              "by keywords alone")
    assert "jina-embeddings-v3" in warning
    mixed = service.search(SearchRequest("pg_dump резервная копия"))
    assert any("the vector arm counts 50% for this query" in w for w in mixed.warnings)
    assert service.search(SearchRequest("dump database")).warnings == []


def test_a_wiki_of_russian_alone_gets_the_language_warning_not_index_again(
        service: RagService, wiki: Path) -> None:
    (wiki / "tools" / "dump.py").unlink()  # nothing left the model reads: no vector at all
    assert service.index(folder_source(wiki, "wiki")).embedded == 0

    out = service.search(SearchRequest("как восстановить базу из резервной копии"))

    assert out.results[0].path == "ops/backup.md"
    assert all(r.scores.vector_rank is None for r in out.results)
    (warning,) = out.warnings
    assert "reads only english, so this query was searched by keywords alone" in warning
    mixed = service.search(SearchRequest("pg_restore резервная копия"))
    assert any("(texts in languages other than english are never embedded with it)" in w
               for w in mixed.warnings)


def test_status_shows_the_languages_the_model_reads(rag_db: db.DatabaseTarget) -> None:
    with russian_service(rag_db) as english:
        assert english.status().providers.embeddings.languages == ["english"]
    multilingual = {"embeddings": {"local": {"model": "/models/multilingual-e5-small"}}}
    with russian_service(rag_db, multilingual) as service:
        assert service.status().providers.embeddings.languages is None


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeConfluence]:
    fake = sample_site("cloud")
    fake.add(Page("1003", "Регламент релизов", "ENG", "<p>Релиз собирается по четвергам.</p>", parent="100"))
    fake.start()
    for name, value in fake.environ().items():
        monkeypatch.setenv(name, value)
    yield fake
    fake.stop()


def confluence_wiki(site: FakeConfluence) -> SourceSpec:
    return SourceSpec("wiki", "confluence", site.base_url, pages=ConfluencePages(("ENG",), flavor=site.flavor))


def test_an_answer_cites_a_confluence_page_by_its_title_and_url(
        rag_db: db.DatabaseTarget, site: FakeConfluence, fake_llm: FakeLLM) -> None:
    fake_llm.reply = lambda messages: "Релиз собирается по четвергам [1]."
    with russian_service(rag_db, {"llm": fake_llm.config().model_dump(by_alias=True)}) as service:
        service.index(confluence_wiki(site))
        answering = service.ask(AskRequest(SearchRequest("когда собирается релиз?", top_k=1)))
        out = answering.output()

    (citation,) = out.citations
    url = citation.url or ""
    assert url.startswith(f"{site.base_url}/spaces/ENG/pages/1003/")
    assert (citation.title, citation.cited) == ("Регламент релизов", True)
    assert citation.location == f"Регламент релизов — {url}"
    assert f"[1] Регламент релизов — {url}\n" in fake_llm.requests[0]["messages"][0]["content"]


RELEASE_BODY = (
    '<p>Статус: <ac:structured-macro ac:name="status" ac:schema-version="1">'
    '<ac:parameter ac:name="title">ГОТОВО</ac:parameter><ac:parameter ac:name="colour">Green</ac:parameter>'
    '</ac:structured-macro>, задача <ac:structured-macro ac:name="jira" ac:schema-version="1">'
    '<ac:parameter ac:name="server">Jira</ac:parameter><ac:parameter ac:name="key">REL-42</ac:parameter>'
    '</ac:structured-macro>.</p>'
    '<p>См. <ac:link><ri:page ri:content-title="Runbooks"/></ac:link>, '
    '<ac:link><ri:page ri:content-title="Отпуска" ri:space-key="HR"/>'
    '<ac:plain-text-link-body><![CDATA[кадры]]></ac:plain-text-link-body></ac:link>, '
    '<a href="https://ci.example.com/job/release">сборку</a> и '
    '<ac:link><ri:attachment ri:filename="план релиза.pdf"/></ac:link>.</p>'
    '<p><ac:image><ri:attachment ri:filename="схема.png"/></ac:image></p>'
)


def test_confluence_links_macros_and_attachments_keep_their_meaning(
        rag_db: db.DatabaseTarget, site: FakeConfluence) -> None:
    site.pages["1003"].body = RELEASE_BODY
    with russian_service(rag_db) as service:
        service.index(confluence_wiki(site))
    (page,) = rows(rag_db, "SELECT content FROM rag.files WHERE path = 'ENG/1003-Регламент-релизов'")
    text, base = page["content"], site.base_url
    assert "Статус: ГОТОВО, задача REL-42." in text
    runbooks = site.pages["101"]
    assert f"[Runbooks]({base}/spaces/ENG/pages/101/{runbooks.title})" in text  # the listed page's address
    assert f"[кадры]({base}/display/HR/%D0%9E%D1%82%D0%BF%D1%83%D1%81%D0%BA%D0%B0)" in text  # not listed
    assert "[сборку](https://ci.example.com/job/release)" in text
    assert (f"[план релиза.pdf]({base}/download/attachments/1003/"
            "%D0%BF%D0%BB%D0%B0%D0%BD%20%D1%80%D0%B5%D0%BB%D0%B8%D0%B7%D0%B0.pdf)") in text
    assert f"![схема.png]({base}/download/attachments/1003/%D1%81%D1%85%D0%B5%D0%BC%D0%B0.png)" in text


BACKUP_GUIDE = """# Резервное копирование

Копии базы снимаются каждую ночь.

## Как сделать копию

Запустите pg_dump с ключом -Fc и положите файл в хранилище.

## Как восстановить базу

Остановите сервис, затем восстановите базу командой pg_restore из последней копии.

## Кому писать

Вопросы по копиям задавайте дежурному инженеру.
"""


def test_an_answer_cites_the_section_of_a_merged_chunk_that_says_it(
        rag_db: db.DatabaseTarget, tmp_path: Path, fake_llm: FakeLLM) -> None:
    guide = tmp_path / "ops"
    guide.mkdir()
    (guide / "backup.md").write_text(BACKUP_GUIDE, encoding="utf-8")
    fake_llm.reply = lambda messages: "Остановите сервис и выполните pg_restore [3]."
    with russian_service(rag_db, {"llm": fake_llm.config().model_dump(by_alias=True)}) as service:
        assert service.index(folder_source(guide, "ops")).chunks_total == 1  # four sections, one chunk
        out = service.ask(AskRequest(SearchRequest("как восстановить базу из копии"))).output()

    assert [(c.number, c.location) for c in out.citations] == [
        (1, "backup.md:1-3"), (2, "backup.md:5-7"), (3, "backup.md:9-11"), (4, "backup.md:13-15")]
    assert [c.number for c in out.citations if c.cited] == [3] and out.found
    assert len({c.chunk_id for c in out.citations}) == 1
    prompt = fake_llm.requests[0]["messages"][0]["content"]
    assert "[3] backup.md:9-11\n## Как восстановить базу\n\nОстановите сервис" in prompt


def test_a_confluence_dry_run_counts_the_llm_requests_and_what_changed(
        rag_db: db.DatabaseTarget, site: FakeConfluence, fake_llm: FakeLLM) -> None:
    config = {"indexing": {"context": "llm"}, "llm": fake_llm.config().model_dump(by_alias=True)}
    with russian_service(rag_db, config) as service:
        before = service.dry_run(confluence_wiki(site))
        assert fake_llm.requests == [] and (before.new, before.unchanged) == (8, 0)
        service.index(confluence_wiki(site))
        assert before.contextual_calls == len(fake_llm.requests) > 0  # (was: null)

        site.pages["103"].edit("<p>Дежурный отвечает за пять минут.</p>")
        after = service.dry_run(confluence_wiki(site))
    assert (after.new, after.changed, after.unchanged) == (1, 1, 6)  # (the restricted page is new again)
    assert after.contextual_calls == 1


def test_list_shows_a_confluence_source_s_spaces_and_status_no_empty_code_graph(
        rag_db: db.DatabaseTarget, site: FakeConfluence, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with russian_service(rag_db) as service:
        service.index(confluence_wiki(site))
        assert service.list_sources().sources[0].spaces == ["ENG"]
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    config = tmp_path / "rag.config.yaml"
    config.write_text("search: {finalTopK: 5}\n")  # the default, English-only local model

    def rag(*args: str) -> str:
        result = CliRunner().invoke(app, ["--config", str(config), *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    assert f"{site.base_url} spaces ENG" in rag("list")
    status = rag("status")
    assert "model:        local all-MiniLM-L6-v2 (reads english)" in status
    assert "code graph" not in status  # (was: "code graph wiki: 0 definitions, 0 references …")


def test_mcp_has_an_ask_tool_only_with_an_llm_and_it_cites_as_rag_ask_does(
        rag_db: db.DatabaseTarget, tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch,
        make_harness: Callable[..., Harness]) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    guide = tmp_path / "ops"
    guide.mkdir()
    (guide / "backup.md").write_text(BACKUP_GUIDE, encoding="utf-8")
    fake_llm.reply = lambda messages: "Остановите сервис и выполните pg_restore [3]."
    keyword_only = {"embeddings": {"provider": "none"}}
    without = make_harness(keyword_only)
    assert "ask" not in {t.name for t in without.session(lambda client: client.list_tools()).tools}
    harness = make_harness({**keyword_only, "llm": fake_llm.config().model_dump(by_alias=True)})
    assert "ask" in {t.name for t in harness.session(lambda client: client.list_tools()).tools}
    harness.ok("index", {"path": str(guide), "name": "ops"})

    out = harness.ok("ask", {"question": "как восстановить базу из копии"})

    assert out["found"] is True and out["answer"] == "Остановите сервис и выполните pg_restore [3]."
    (cited,) = [c for c in out["citations"] if c["cited"]]
    assert (cited["location"], cited["startLine"], cited["endLine"]) == ("backup.md:9-11", 9, 11)
