"""Confluence sources indexed into a real database from a fake Confluence (both flavors):
incremental runs that fetch only changed bodies, removal of deleted and moved-out pages,
per-page errors, page fields and restrictions stored, a search over a Confluence source
and a local folder together, reading a page by id or title, the CLI, kill-safety,
attachments and the watcher's polling."""

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fake_confluence import Attachment, FakeConfluence, Page, sample_site
from fakes import HashEmbedder
from typer.testing import CliRunner

from rag import db
from rag.cli import app
from rag.config import ConfluencePages, LoadedConfig, RagConfig, SourceSpec
from rag.errors import SourceError
from rag.search import SearchRequest
from rag.service import RagService, folder_source


@pytest.fixture(params=["cloud", "server"])
def site(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeConfluence]:
    fake = sample_site(request.param).start()
    for name, value in fake.environ().items():
        monkeypatch.setenv(name, value)
    yield fake
    fake.stop()


@pytest.fixture
def service(rag_db: db.DatabaseTarget) -> Iterator[RagService]:
    made = RagService(loaded=LoadedConfig(RagConfig(), None, "test"), embedder=HashEmbedder(8))
    made._target = rag_db
    yield made
    made.close()


def wiki(site: FakeConfluence, spaces: tuple[str, ...] = ("ENG", "OPS"), **kw: Any) -> SourceSpec:
    return SourceSpec("wiki", "confluence", site.base_url, pages=ConfluencePages(spaces, flavor=site.flavor, **kw))


def files(target: db.DatabaseTarget) -> dict[str, dict[str, Any]]:
    with psycopg.connect(target.url, row_factory=psycopg.rows.dict_row) as conn:
        rows = conn.execute("SELECT f.path, f.size, f.metadata, f.content, count(c.id) AS chunks "
                            "FROM rag.files f LEFT JOIN rag.chunks c ON c.file_id = f.id "
                            "GROUP BY f.id ORDER BY f.path").fetchall()
    return {r["path"]: r for r in rows}


def test_first_run_stores_pages_and_the_next_fetches_only_what_changed(
    site: FakeConfluence, service: RagService, rag_db: db.DatabaseTarget
) -> None:
    first = service.index(wiki(site))
    assert (first.status, first.files_found, first.new) == ("succeeded", 9, 8)
    assert [(e.path, e.error) for e in first.file_errors] == [
        ("ENG/104-Salary-bands", "page 104 (Salary bands): restricted: the token may not read it")]
    stored = files(rag_db)
    assert "ENG/104-Salary-bands" not in stored and all(f["chunks"] for f in stored.values())
    deploy = stored["ENG/102-Deploy-the-billing-service"]
    assert deploy["content"].startswith("# Deploy the billing service\n\n## Overview\n")
    assert deploy["metadata"]["restrictions"] == {"users": ["alice"], "groups": ["billing-team"]}
    assert deploy["metadata"]["ancestors"] == ["Engineering home", "Runbooks"]
    assert (deploy["size"], deploy["metadata"]["pageId"], deploy["metadata"]["space"]) == (1, "102", "ENG")
    assert site.body_requests == 9

    site.pages["103"].edit("<p>Page the <em>secondary</em> after 10 minutes.</p>")
    site.pages["105"].version += 1  # a new version with the same text: touched, not re-chunked
    del site.pages["201"]  # deleted
    site.add_space("HR", "People")
    site.pages["106"].space = "HR"  # moved out of the selected spaces
    site.add(Page("107", "Release train", "ENG", "<p>Trains leave on Thursdays.</p>", parent="101"))
    site.body_requests = 0
    second = service.index(wiki(site))
    assert (second.new, second.changed, second.deleted, second.unchanged) == (1, 1, 2, 5)
    # 103, 105 and 107 changed or new; the restricted 104 is asked again (it was never stored).
    assert site.body_requests == 4
    stored = files(rag_db)
    assert "OPS/201-Postmortems" not in stored and "ENG/106-Старый-релиз" not in stored
    assert "secondary" in stored["ENG/103-On-call-rules"]["content"]
    assert stored["ENG/103-On-call-rules"]["metadata"]["version"] == 2
    assert stored["ENG/107-Release-train"]["metadata"]["ancestors"] == ["Engineering home", "Runbooks"]

    site.body_requests = 0
    third = service.index(wiki(site))
    assert (third.new, third.changed, third.deleted, site.body_requests) == (0, 0, 0, 1)


def test_every_chunk_carries_the_page_and_its_breadcrumb(
    site: FakeConfluence, service: RagService, rag_db: db.DatabaseTarget
) -> None:
    service.index(wiki(site, ("ENG",)))
    with psycopg.connect(rag_db.url, row_factory=psycopg.rows.dict_row) as conn:
        rows = conn.execute("SELECT c.metadata, c.context FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id "
                            "WHERE f.path = 'ENG/103-On-call-rules'").fetchall()
    meta = rows[0]["metadata"]
    assert {k: meta[k] for k in ("pageId", "space", "title", "version", "author", "lastModified")} == {
        "pageId": "103", "space": "ENG", "title": "On-call rules", "version": 1, "author": "alice",
        "lastModified": "2026-11-01T10:00:00.000Z"}
    assert meta["url"].startswith(site.base_url + ("/spaces/ENG/pages/103" if site.flavor == "cloud" else "/display/"))
    assert meta["headerPath"].startswith("# On-call rules")
    assert rows[0]["context"].split("\n")[:2] == [
        "ENG/103-On-call-rules", "Engineering › Engineering home › Runbooks › On-call rules"]


def test_a_confluence_source_and_a_local_folder_answer_one_query(
    site: FakeConfluence, service: RagService, tmp_path: Path
) -> None:
    docs = tmp_path / "billing-repo"
    docs.mkdir()
    (docs / "DEPLOY.md").write_text("# Deploying billing\n\nRun make deploy from the billing repository.\n")
    service.index(folder_source(docs))
    service.index(wiki(site))
    out = service.search(SearchRequest("deploy the billing service", top_k=10, keyword_only=True))
    by_source = {r.source_name: r for r in reversed(out.results)}
    assert set(by_source) == {"billing-repo", "wiki"}
    page = by_source["wiki"]
    assert page.path == "ENG/102-Deploy-the-billing-service" and page.url is not None
    assert page.url.startswith(site.base_url) and by_source["billing-repo"].url is None


def test_a_page_is_read_back_by_path_id_or_title(site: FakeConfluence, service: RagService) -> None:
    service.index(wiki(site))
    by_id = service.read_source(source="wiki", path="103")
    by_title = service.read_source(path="on-call RULES")
    by_path = service.read_source(path="ENG/103-On-call-rules")
    assert by_id.path == by_title.path == by_path.path == "ENG/103-On-call-rules"
    assert by_id.content == by_title.content and by_id.content.startswith("# On-call rules\n")
    section = service.read_source(source="wiki", path="103", header_path="# On-call rules > ## Paging")
    assert "primary" in section.content


def test_401_stops_the_run_in_one_line(site: FakeConfluence, service: RagService,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name in site.environ():
        monkeypatch.delenv(name)
    with pytest.raises(SourceError) as caught:
        service.index(wiki(site))
    assert "HTTP 401" in str(caught.value) and "CONFLUENCE_" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_page_that_fails_is_an_error_of_the_run_not_its_end(
    site: FakeConfluence, service: RagService
) -> None:
    site.pages["105"].body = "<p>fine</p>"
    original = site.answer

    def flaky(method: str, target: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if "/105" in target.split("?")[0]:
            return 500, {"Content-Type": "application/json"}, b'{"message": "boom"}'
        return original(method, target, headers)

    site.answer = flaky  # type: ignore[method-assign]
    service.config_path = None
    fast = RagConfig.model_validate({"indexing": {"confluence": {"timeout": 2}}})
    service._loaded = LoadedConfig(fast, None, "test")
    out = service.index(wiki(site, ("ENG",)))
    assert out.status == "succeeded" and out.new == 5
    assert {e.path for e in out.file_errors} == {"ENG/104-Salary-bands", "ENG/105-Coding-style"}


def test_a_killed_run_leaves_every_page_old_or_new_and_the_next_finishes(
    site: FakeConfluence, service: RagService, rag_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag.sources.confluence.client import ConfluenceClient

    service.index(wiki(site))
    for page_id in ("100", "101", "102", "103", "105"):
        site.pages[page_id].edit(f"<p>Rewritten page {page_id} about gardening.</p>")
    real_body, calls = ConfluenceClient.body, []

    def dies_on_the_third(self: ConfluenceClient, page: Any) -> Any:
        calls.append(page.id)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_body(self, page)

    monkeypatch.setattr(ConfluenceClient, "body", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        service.index(wiki(site))
    stored = files(rag_db)
    for path, row in stored.items():
        assert row["chunks"] > 0, path
        assert ("gardening" in row["content"]) == (row["metadata"]["version"] == 2), path
    already = sum(1 for row in stored.values() if row["metadata"]["version"] == 2)
    monkeypatch.setattr(ConfluenceClient, "body", real_body)
    out = service.index(wiki(site))
    assert (out.status, out.changed) == ("succeeded", 5 - already)
    rewritten = [row for row in files(rag_db).values() if "gardening" in row["content"]]
    assert len(rewritten) == 5 and all(row["chunks"] == 1 for row in rewritten)


def test_pdf_and_docx_attachments_are_indexed_with_their_page(site: FakeConfluence, service: RagService,
                                                              rag_db: db.DatabaseTarget) -> None:
    import io

    import docx

    document = docx.Document()
    document.add_paragraph("Checklist: drain the queue before deploying.")
    data = io.BytesIO()
    document.save(data)
    site.pages["102"].attachments.append(Attachment(
        "check list.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        data.getvalue()))
    out = service.index(wiki(site, ("ENG",), attachments=True))
    assert out.status == "succeeded"
    stored = files(rag_db)
    attached = stored["ENG/102-Deploy-the-billing-service/check-list.docx"]
    assert attached["chunks"] == 1 and "drain the queue" in attached["content"]
    assert (attached["metadata"]["pageId"], attached["metadata"]["attachment"]) == ("102", "check list.docx")
    assert not any(p.endswith(".png") for p in stored)  # only PDF and .docx
    broken = "ENG/102-Deploy-the-billing-service/checklist.pdf"  # the fixture's is no real PDF
    assert [e.path for e in out.file_errors if e.path.endswith(".pdf")] == [broken]

    site.body_requests = 0
    again = service.index(wiki(site, ("ENG",), attachments=True))
    assert (again.changed, again.new, site.body_requests) == (0, 0, 1)  # (the restricted page)


def test_rag_index_confluence_from_the_command_line(
    site: FakeConfluence, rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    config = tmp_path / "rag.config.yaml"
    config.write_text("embeddings: {provider: none}\n")
    runner = CliRunner()

    def rag(*args: str) -> Any:
        return runner.invoke(app, ["--config", str(config), *args], catch_exceptions=False)

    result = rag("index", "--confluence", site.base_url, "--space", "OPS", "--name", "wiki",
                 "--flavor", site.flavor, "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["new"] == 2
    result = rag("search", "severity all hands", "--json")
    hit = json.loads(result.stdout)["results"][0]
    assert hit["path"] == "OPS/200-Incident-guide" and hit["url"].startswith(site.base_url)
    assert site.base_url in rag("search", "severity all hands").stdout
    assert rag("read", "200", "--source", "wiki").stdout.startswith("# Incident guide")
    listed = rag("list").stdout
    assert "confluence" in listed
    dry = rag("index", "--confluence", site.base_url, "--space", "ENG", "--name", "eng", "--flavor", site.flavor,
              "--dry-run")
    assert dry.stdout.splitlines()[:2] == ["ENG/100-Engineering-home", "ENG/101-Runbooks"]
    shown = rag("config", "--json").stdout
    secret = next(v for k, v in site.environ().items() if "TOKEN" in k)
    assert secret not in shown and '"****"' in shown
    again = rag("index", "wiki", "--json")  # by name: the catalog remembers the spaces and flavor
    assert json.loads(again.stdout)["unchanged"] == 2
    refused = runner.invoke(app, ["--config", str(config), "index", "--confluence", site.base_url, "--space", "OPS"])
    assert refused.exit_code != 0 and "--name" in refused.stderr


def test_a_configured_confluence_source_is_validated(tmp_path: Path) -> None:
    from rag.config import parse_config_file
    from rag.errors import ConfigError

    config = tmp_path / "c.yaml"
    config.write_text("sources:\n  - {name: wiki, type: confluence, url: https://acme.atlassian.net/wiki}\n")
    with pytest.raises(ConfigError, match="needs 'spaces'"):
        parse_config_file(config)
    config.write_text("sources:\n  - {name: wiki, type: confluence, url: https://acme.atlassian.net/wiki, "
                      "spaces: [ENG], cql: 'label = runbook', attachments: true}\n")
    spec = parse_config_file(config).sources[0].spec()
    assert spec.pages == ConfluencePages(("ENG",), "label = runbook", None, True)


def test_the_watcher_polls_a_confluence_source(site: FakeConfluence, service: RagService,
                                               rag_db: db.DatabaseTarget) -> None:
    from rag.watcher import Watcher

    events: list[Any] = []
    watcher = Watcher(service, [wiki(site, ("OPS",))], events.append, confluence_poll_s=0.3)
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while "OPS/200-Incident-guide" not in files(rag_db) and time.monotonic() < deadline:
            time.sleep(0.1)
        site.add(Page("202", "Status page", "OPS", "<p>Update the status page every 30 minutes.</p>"))
        while "OPS/202-Status-page" not in files(rag_db) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        watcher.stop()
        thread.join(10)
    assert "OPS/202-Status-page" in files(rag_db)
    assert any(e.event == "sync" for e in events)


def test_mcp_search_shows_the_url_and_read_source_takes_a_title(
    site: FakeConfluence, rag_db: db.DatabaseTarget, make_harness: Any
) -> None:
    harness = make_harness({"embeddings": {"provider": "none"}})
    harness.service._target = rag_db
    harness.service.index(wiki(site, ("OPS",)))
    out = harness.ok("search", {"query": "postmortems within five days"})
    hit = out["results"][0]
    assert hit["path"] == "OPS/201-Postmortems" and hit["url"].startswith(site.base_url)
    page = harness.ok("read_source", {"source": "wiki", "path": "Postmortems"})
    assert page["path"] == "OPS/201-Postmortems" and page["content"].startswith("# Postmortems\n")
    assert harness.ok("list_sources", {"sourceType": "confluence"})["sources"][0]["name"] == "wiki"


def test_a_deeply_nested_or_nul_holding_page_is_that_page_alone(
    site: FakeConfluence, service: RagService, rag_db: db.DatabaseTarget
) -> None:
    """#56: 10,000 nested ``<div>``s or ``<ul><li>``s, and a NUL in a title or a body, once
    ended the run (a RecursionError traceback; jsonb's 'unsupported Unicode escape sequence')."""
    site.add(Page("300", "Nested divs", "OPS", "<div>" * 10_000 + "deep divs" + "</div>" * 10_000))
    site.add(Page("301", "Nested lists", "OPS", "<ul><li>" * 10_000 + "deep item" + "</li></ul>" * 10_000))
    site.add(Page("302", "Title\x00with NUL", "OPS", "<p>a body with a NUL\x00 inside</p>"))
    out = service.index(wiki(site, ("OPS",)))
    assert out.status == "succeeded" and out.new == 5
    stored = files(rag_db)
    assert "deep divs" in stored["OPS/300-Nested-divs"]["content"]
    assert "deep item" in stored["OPS/301-Nested-lists"]["content"]
    nul = stored["OPS/302-Title-with-NUL"]
    assert nul["metadata"]["title"] == "Title\ufffdwith NUL" and "NUL\ufffd inside" in nul["content"]
    hits = service.search(SearchRequest("deep divs", top_k=3, keyword_only=True)).results
    assert hits and hits[0].path == "OPS/300-Nested-divs"


def test_a_page_the_token_can_no_longer_read_leaves_the_index(
    site: FakeConfluence, service: RagService, rag_db: db.DatabaseTarget
) -> None:
    """#56: after an edit, a body answering 403 (restricted) or 404 left the old text searchable."""
    assert service.index(wiki(site, ("ENG",))).new == 6
    site.pages["103"].edit("<p>Now secret.</p>")
    site.pages["103"].restricted = True
    site.pages["105"].edit("<p>Gone meanwhile.</p>")
    original = site.answer

    def gone(method: str, target: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if target.split("?")[0].endswith("/105"):
            return 404, {"Content-Type": "application/json"}, b'{"message": "No content found"}'
        return original(method, target, headers)

    site.answer = gone  # type: ignore[method-assign]
    out = service.index(wiki(site, ("ENG",)))
    assert out.status == "succeeded" and out.deleted == 2
    errors = {e.path: e.error for e in out.file_errors}
    assert errors["ENG/103-On-call-rules"].endswith("restricted: the token may not read it; removed from the index")
    assert errors["ENG/105-Coding-style"].endswith("gone since the listing; removed from the index")
    stored = files(rag_db)
    assert "ENG/103-On-call-rules" not in stored and "ENG/105-Coding-style" not in stored
    assert not service.search(SearchRequest("escalate primary", keyword_only=True)).results
    assert service.index(wiki(site, ("ENG",))).deleted == 0  # (still listed, still unreadable: nothing to remove)


def test_a_page_over_max_file_size_is_that_page_s_error(
    site: FakeConfluence, service: RagService, rag_db: db.DatabaseTarget
) -> None:
    """#56: a 50 MB page became 25,701 chunks; pages obey indexing.maxFileSize as files do."""
    site.add(Page("300", "Huge", "OPS", "<p>" + "lorem ipsum dolor " * 6_000 + "</p>"))  # 108 KB
    site.add(Page("301", "Huge markup", "OPS", "<p><b></b></p>" * 30_000 + "<p>little text</p>"))  # 420 KB
    service._loaded = LoadedConfig(RagConfig.model_validate({"indexing": {"maxFileSize": 100_000}}), None, "test")
    out = service.index(wiki(site, ("OPS",)))
    assert out.status == "succeeded" and out.new == 2
    errors = {e.path: e.error for e in out.file_errors}
    assert "its text is 0.1 MB, over indexing.maxFileSize (100,000 bytes)" in errors["OPS/300-Huge"]
    assert "its body is 0.4 MB, over 4 × indexing.maxFileSize" in errors["OPS/301-Huge-markup"]
    assert set(files(rag_db)) == {"OPS/200-Incident-guide", "OPS/201-Postmortems"}


def test_a_page_moved_without_a_new_version_gets_its_new_breadcrumb_unfetched(
    site: FakeConfluence, service: RagService, rag_db: db.DatabaseTarget
) -> None:
    service.index(wiki(site, ("ENG",)))
    site.pages["102"].parent = "100"  # Deploy…: from Runbooks up to the home page; same version
    site.body_requests = 0

    moved = service.index(wiki(site, ("ENG",)))

    assert (moved.changed, moved.new, moved.deleted) == (1, 0, 0)
    assert site.body_requests == 1  # the restricted page, asked again as every run does; not 102
    stored = files(rag_db)["ENG/102-Deploy-the-billing-service"]
    assert stored["metadata"]["ancestors"] == ["Engineering home"]
    assert stored["metadata"]["restrictions"] == {"users": ["alice"], "groups": ["billing-team"]}
    assert stored["metadata"]["version"] == 1
    crumb = "Engineering › Engineering home › Deploy the billing service"
    with psycopg.connect(rag_db.url, row_factory=psycopg.rows.dict_row) as conn:
        chunks = conn.execute("SELECT c.context, c.metadata FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id "
                              "WHERE f.path = 'ENG/102-Deploy-the-billing-service'").fetchall()
    assert chunks and all(c["context"].split("\n")[1] == crumb for c in chunks)
    assert all(c["metadata"]["breadcrumb"] == crumb for c in chunks)
    again = service.index(wiki(site, ("ENG",)))
    assert (again.changed, again.unchanged) == (0, 6)
