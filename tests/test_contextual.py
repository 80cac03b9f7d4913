"""Contextual chunk text (indexing.context: llm) against a real database and the fake LLM server:
what is asked, what is cached and reused, what a failure leaves, and what BM25, the embedder,
search results and read-back see."""

import json
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes import HashEmbedder
from helpers import rows
from plugins.llm import Fail, FakeLLM

from rag import contextual, db
from rag.chunking.model import content_hash, indexed_text
from rag.config import IndexingConfig, LoadedConfig, RagConfig
from rag.search import SearchRequest
from rag.service import RagService, folder_source

DOC = """# Billing guide

How invoices are produced for customers.

## Refunds

A refund is issued within five days.

## Taxes

Taxes follow the customer's country.
"""
CODE = "def total(items):\n    return sum(i.price for i in items)\n"

pytestmark = pytest.mark.usefixtures("sections_unmerged")  # one chunk per section


def situating(messages: list[dict[str, str]]) -> str:
    """The fake LLM's answer: a sentence naming the chunk's first words, plus a word no file holds."""
    prompt = messages[-1]["content"]
    chunk = prompt.split("<chunk>\n", 1)[1].split("\n</chunk>", 1)[0]
    return f"  Zanzibarian context:\n  this part covers {' '.join(chunk.split()[:3])}.  "


@pytest.fixture
def llm(fake_llm: FakeLLM) -> FakeLLM:
    fake_llm.reply = situating
    return fake_llm


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "guide.md").write_text(DOC)
    (root / "billing.py").write_text(CODE)
    return root


def make_service(target: db.DatabaseTarget, llm: FakeLLM, context: str = "llm", **llm_settings: Any) -> RagService:
    config = RagConfig(indexing=IndexingConfig(context=context), llm=llm.config(**llm_settings))  # type: ignore[arg-type]
    service = RagService(loaded=LoadedConfig(config, None, "test"), embedder=HashEmbedder(8))
    service._target = target
    return service


@pytest.fixture
def service(rag_db: db.DatabaseTarget, llm: FakeLLM) -> Iterator[RagService]:
    service = make_service(rag_db, llm)
    yield service
    service.close()


def chunk_rows(target: db.DatabaseTarget) -> list[dict[str, Any]]:
    return rows(target, "SELECT f.path, c.ordinal, c.context, c.contextual_text, c.contextual_model, c.content,"
                        " c.content_hash FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id ORDER BY 1, 2")


def test_every_chunk_gets_a_text_indexed_after_its_context(service: RagService, rag_db: db.DatabaseTarget,
                                                             llm: FakeLLM, project: Path) -> None:
    out = service.index(folder_source(project))
    chunks = chunk_rows(rag_db)
    assert out.status == "succeeded" and out.errors == 0
    assert out.contextualized == len(chunks) == len(llm.requests) > 2
    for chunk in chunks:
        words = " ".join(chunk["content"].split()[:3])
        assert chunk["contextual_text"] == f"Zanzibarian context: this part covers {words}."
        assert chunk["contextual_model"] == service.context_writer().model_id  # type: ignore[union-attr]
        prefix = f"{chunk['context']}\n{chunk['contextual_text']}"
        assert chunk["content_hash"] == content_hash(indexed_text(prefix, chunk["content"]))
    prompt = llm.requests[0]["messages"][0]["content"]
    assert "Billing guide" in prompt or "def total" in prompt  # the document goes in the prompt
    embedded = service.embedder().embedded_texts  # type: ignore[attr-defined]
    assert all("Zanzibarian context" in text for text in embedded)

    # BM25 finds a chunk by a word only its contextual text holds (each chunk alone: adjacent hits
    # merged show their best chunk's text); results and read-back show the text.
    alone = json.dumps({"mergeAdjacent": {"documents": False, "code": False}})
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.search('zanzibarian', NULL, 10, options => %s)",
                alone)[0]["n"] == len(chunks)
    found = service.search(SearchRequest("zanzibarian", keyword_only=True, top_k=10))
    assert 0 < len(found.results) <= len(chunks)
    assert all(r.contextual_text and r.contextual_text.startswith("Zanzibarian") for r in found.results)
    assert service.search(SearchRequest("refund issued", keyword_only=True)).results[0].contextual_text == (
        "Zanzibarian context: this part covers ## Refunds A.")
    read = service.read_source(chunk_id=found.results[0].chunk_id)
    assert read.contextual_text == found.results[0].contextual_text


def test_keyword_data_after_rewriting_is_what_a_rebuild_makes(service: RagService, rag_db: db.DatabaseTarget,
                                                              project: Path) -> None:
    service.index(folder_source(project))
    assert rows(rag_db, """
        SELECT t.term, c.id, t.tf FROM rag.chunks c,
               LATERAL rag._chunk_terms(rag._chunk_prefix(c.context, c.contextual_text), c.context, c.content,
                                        c.metadata, rag._stem_dictionaries()) t
        EXCEPT SELECT p.term, p.chunk_id, p.tf FROM rag.postings p""") == []
    assert rows(rag_db, """
        SELECT p.term, p.chunk_id FROM rag.postings p
        EXCEPT SELECT t.term, c.id FROM rag.chunks c,
               LATERAL rag._chunk_terms(rag._chunk_prefix(c.context, c.contextual_text), c.context, c.content,
                                        c.metadata, rag._stem_dictionaries()) t""") == []
    assert rows(rag_db, """
        SELECT s.term, s.df, (SELECT count(*) FROM rag.postings p WHERE p.term = s.term) AS n
        FROM rag.term_stats s WHERE s.df <> (SELECT count(*) FROM rag.postings p WHERE p.term = s.term)""") == []
    totals = rows(rag_db, "SELECT s.chunks, s.total_terms, (SELECT count(*) FROM rag.chunks) AS n,"
                          " (SELECT sum(term_count) FROM rag.chunks) AS t FROM rag.corpus_stats s")[0]
    assert (totals["chunks"], totals["total_terms"]) == (totals["n"], totals["t"])
    # A document's passages are embedded with its contextual text too.
    passages = rows(rag_db, """
        SELECT p.content_hash, c.context, c.contextual_text, c.content, p.end_offset,
               lag(p.end_offset, 1, 0) OVER (PARTITION BY p.chunk_id ORDER BY p.ordinal) AS start_offset
        FROM rag.passages p JOIN rag.chunks c ON c.id = p.chunk_id""")
    for p in passages:
        prefix = f"{p['context']}\n{p['contextual_text']}"
        assert p["content_hash"] == content_hash(indexed_text(prefix, p["content"][p["start_offset"]:p["end_offset"]]))


def test_reindex_force_and_copies_never_ask_again(service: RagService, rag_db: db.DatabaseTarget,
                                                  llm: FakeLLM, project: Path, tmp_path: Path) -> None:
    first = service.index(folder_source(project))
    asked = len(llm.requests)
    texts = chunk_rows(rag_db)

    again = service.index(folder_source(project))
    forced = service.index(folder_source(project), force=True)
    assert len(llm.requests) == asked
    assert (again.contextualized, again.contextual_reused) == (0, 0)
    assert (forced.contextualized, forced.contextual_reused) == (0, first.contextualized)
    assert forced.embedded == 0  # the same indexed texts: their vectors are reused
    assert chunk_rows(rag_db) == texts

    copy = shutil.copytree(project, tmp_path / "copy")
    (copy / "guide.md").rename(copy / "moved.md")  # the same document elsewhere
    copied = service.index(folder_source(copy))
    assert len(llm.requests) == asked and copied.contextual_reused == first.contextualized


def test_a_new_model_or_prompt_asks_again_lazily(service: RagService, rag_db: db.DatabaseTarget, llm: FakeLLM,
                                                 project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    service.index(folder_source(project))
    asked = len(llm.requests)
    other = make_service(rag_db, llm, model="another-model")
    try:
        switched = other.index(folder_source(project))
        assert switched.new == switched.changed == 0  # no file is read again, the chunks are asked about
        assert switched.contextualized == asked and len(llm.requests) == 2 * asked
        monkeypatch.setattr(contextual, "PROMPT_VERSION", "chunk-context-test")
        assert other.index(folder_source(project)).contextualized == asked
        assert len(llm.requests) == 3 * asked
        assert {r["contextual_model"] for r in chunk_rows(rag_db)} == {other.context_writer().model_id}  # type: ignore[union-attr]
    finally:
        other.close()


def test_a_failed_request_keeps_the_structural_context_and_is_asked_next_run(
        service: RagService, rag_db: db.DatabaseTarget, llm: FakeLLM, project: Path) -> None:
    (project / "guide.md").unlink()  # one chunk: one request
    llm.script = [Fail(400, "the model cannot read this")]
    out = service.index(folder_source(project))
    assert out.status == "succeeded" and out.contextualized == 0
    assert [(e.path, e.error) for e in out.file_errors] == [
        ("billing.py", "contextual text of billing.py:1-2: " + out.file_errors[0].error.split(": ", 1)[1])]
    assert "the model cannot read this" in out.file_errors[0].error
    chunk = chunk_rows(rag_db)[0]
    assert (chunk["contextual_text"], chunk["contextual_model"]) == ("", None)
    assert chunk["content_hash"] == content_hash(indexed_text(chunk["context"], chunk["content"]))
    recorded = rows(rag_db, "SELECT errors FROM rag.index_runs ORDER BY id DESC LIMIT 1")[0]["errors"]
    assert recorded[0]["path"] == "billing.py" and "contextual text" in recorded[0]["error"]

    retried = service.index(folder_source(project))
    assert retried.contextualized == 1 and retried.errors == 0 and len(llm.requests) == 2


def test_a_silent_llm_stops_the_phase_not_the_run(service: RagService, rag_db: db.DatabaseTarget,
                                                  llm: FakeLLM, tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    files = contextual.DOCUMENTS_PER_PAGE + 5  # a page of one-chunk files, then more
    for i in range(files):
        (root / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    llm.script = [Fail(400)] * 1000
    out = service.index(folder_source(root))
    assert out.status == "succeeded" and out.chunks_total == files
    # A few requests (the fifth failure, and those other workers had sent), not the whole page.
    failed = len(llm.requests)
    assert contextual.FAILURES_IN_A_ROW <= failed < contextual.FAILURES_IN_A_ROW + service.config.llm.max_concurrency
    assert out.file_errors[-1].error == (f"the LLM failed {failed} requests in a row, so it was not asked about "
                                         f"the rest; {files} chunks keep their structural context alone until "
                                         "the next run")


def test_an_llm_that_is_down_fails_at_once_and_stops_the_phase(rag_db: db.DatabaseTarget, llm: FakeLLM,
                                                               tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for i in range(contextual.DOCUMENTS_PER_PAGE):
        (root / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    with socket.socket() as probe:  # a port nothing listens on: connections are refused
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    with make_service(rag_db, llm, base_url=closed) as service:
        started = time.monotonic()
        out = service.index(folder_source(root))
    assert time.monotonic() - started < 5  # no retries: each refusal fails at once (was ~26 s each)
    assert out.status == "succeeded" and out.contextualized == 0
    first = out.file_errors[0].error
    assert "cannot reach" in first and "ConnectError" in first and first.endswith("check llm.baseUrl")
    assert len(out.file_errors) <= contextual.FAILURES_IN_A_ROW + service.config.llm.max_concurrency
    assert out.file_errors[-1].error.startswith("the LLM failed ")
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.chunks WHERE contextual_model IS NULL")[0]["n"] == (
        out.chunks_total)


def test_context_none_removes_the_texts(service: RagService, rag_db: db.DatabaseTarget, llm: FakeLLM,
                                        project: Path) -> None:
    service.index(folder_source(project))
    off = make_service(rag_db, llm, context="none")
    try:
        out = off.index(folder_source(project))
        assert off.search(SearchRequest("zanzibarian", keyword_only=True)).results == []
    finally:
        off.close()
    assert out.contextual_reused == len(chunk_rows(rag_db))
    for chunk in chunk_rows(rag_db):
        assert (chunk["contextual_text"], chunk["contextual_model"]) == ("", None)
        assert chunk["content_hash"] == content_hash(indexed_text(chunk["context"], chunk["content"]))


def test_dry_run_counts_the_requests_a_run_would_make(service: RagService, llm: FakeLLM, project: Path) -> None:
    spec = folder_source(project)
    before = service.dry_run(spec)
    assert before.contextual_calls is not None and before.contextual_calls > 2 and llm.requests == []
    service.index(spec)
    assert before.contextual_calls == len(llm.requests)
    (project / "billing.py").write_text(CODE + "\n\ndef tax(x):\n    return x\n")
    assert service.dry_run(spec).contextual_calls == 1  # only the changed file's chunk


def test_mcp_search_results_carry_the_text(service: RagService, project: Path) -> None:
    from plugins.mcp import Harness

    service.index(folder_source(project))
    out = Harness(service).ok("search", {"query": "zanzibarian"})
    assert out["results"] and all(r["contextualText"].startswith("Zanzibarian") for r in out["results"])


def test_cli_chunk_read_and_dry_run_show_it(rag_db: db.DatabaseTarget, llm: FakeLLM, project: Path,
                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from rag.cli import app

    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    monkeypatch.setenv("TEST_LLM_KEY", llm.api_key or "")
    config = tmp_path / "rag.config.yaml"
    config.write_text("embeddings: {provider: none}\nindexing: {context: llm}\n"
                      f"llm: {{provider: openai, baseUrl: '{llm.base_url}', model: m, apiKey: '${{TEST_LLM_KEY}}'}}\n")
    runner = CliRunner()

    def rag(*args: str) -> str:
        result = runner.invoke(app, ["--config", str(config), *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    chunked = [json.loads(line) for line in rag("chunk", "--json", str(project / "billing.py")).splitlines()]
    assert [c["contextualText"] for c in chunked] == [None]  # not asked for yet
    dry = rag("index", "--dry-run", "--path", str(project))
    assert "# proj: 2 files would be indexed" in dry and "contextual text: 4 LLM requests" in dry
    rag("index", "--path", str(project))
    assert "contextual text: 0 LLM requests" in rag("index", "--dry-run", "--path", str(project))
    chunked = [json.loads(line) for line in rag("chunk", "--json", str(project / "billing.py")).splitlines()]
    assert [c["contextualText"] for c in chunked] == ["Zanzibarian context: this part covers def total(items): return."]
    found = json.loads(rag("search", "zanzibarian total", "--json"))["results"][0]
    assert found["contextualText"] == chunked[0]["contextualText"]
    assert f"# context: {found['contextualText']}" in rag("read", str(found["chunkId"]))


def test_a_long_document_is_shown_by_its_head_and_the_chunks_surroundings() -> None:
    document = "".join(f"line {i} of a long document\n" for i in range(2000))
    chunk = "line 1500 of a long document\nline 1501 of a long document\n"
    shown = contextual.document_window(document, chunk)
    assert len(shown) <= contextual.DOCUMENT_CHARS + len("\n[...]\n")
    assert shown.startswith("line 0 of") and "\n[...]\n" in shown and chunk in shown
    assert contextual.document_window("short\n", "short\n") == "short\n"
    [message] = contextual.prompt_messages(document, chunk)
    assert message.role == "user" and f"<chunk>\n{chunk}\n</chunk>" in message.content


@pytest.mark.parametrize(("answer", "kept"), [
    ("  One sentence\n with version 1.2 in it. A second!  A third.", "One sentence with version 1.2 in it. A second!"),
    ("The answer.\n\nAnother paragraph the model went on with.", "The answer."),
    ("Covers hashing. </chunk> <document> echoed", "Covers hashing."),
    ("no end punctuation", "no end punctuation"),
])
def test_an_answer_is_kept_to_its_first_two_sentences(answer: str, kept: str) -> None:
    assert contextual.clean_answer(answer) == kept
