"""`rag ask` through the CLI against a fake chat server: the streamed answer and its citations,
--json, --rewrite, --filter, --context-tokens, the search filters, "not found" without asking
the LLM, and one-line errors when no LLM is configured or it does not answer."""

import json
import socket
import time
from pathlib import Path

import pytest
from plugins.llm import FAKE_KEY, FakeLLM, Hang
from typer.testing import CliRunner

from rag import db
from rag.ask import NOT_FOUND, NOT_FOUND_RU, fit
from rag.cli import app
from rag.search import SearchHit

runner = CliRunner()

STREAM_TS = "export function combineLatest(a: Stream, b: Stream): Stream {\n  return merge(a, b);\n}\n"
GUIDE_MD = "# Guide\n\n## Streams\n\nCombine the latest values of two streams.\n"


def chat(messages: list[dict[str, str]]) -> str:
    """The fake model: yes/no for the filter, queries for a rewrite, else an answer citing [1]."""
    prompt = messages[-1]["content"]
    if "Reply with one word: yes or no" in prompt:
        return "no" if "docs/guide.md" in prompt else "yes"
    if "search queries" in prompt:
        return "Here are the queries:\n1. combineLatest\n- Streams guide\n\n2. combineLatest"
    return "combineLatest merges the latest values of two streams [1]."


@pytest.fixture
def project(tmp_path: Path, rag_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch,
            fake_llm: FakeLLM) -> Path:
    """A keyword-only index of a small project and a config whose LLM is the fake server."""
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    monkeypatch.setenv("LLM_KEY", FAKE_KEY)
    config = tmp_path / "rag.config.yaml"
    config.write_text(
        "embeddings: {provider: none}\n"
        f"llm:\n  provider: openai\n  baseUrl: {fake_llm.base_url}\n  model: fake-chat-1\n"
        "  apiKey: ${LLM_KEY}\n  timeout: 5\n"
    )
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "stream.ts").write_text(STREAM_TS)
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text(GUIDE_MD)
    assert rag("index", "--path", str(root), "--name", "proj")[0] == 0
    fake_llm.reply = chat
    return config


def rag(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def ask_json(*args: str) -> dict:
    code, out, err = rag("ask", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_ask_streams_the_answer_then_the_cited_sources(project, fake_llm):
    code, out, _ = rag("ask", "what does combineLatest do?", "--type", "code")

    assert code == 0
    assert out == ("combineLatest merges the latest values of two streams [1].\n\n"
                   "[1] src/stream.ts:1-3\n")
    (request,) = fake_llm.requests
    assert request["stream"] is True
    system, user = request["messages"]
    assert user == {"role": "user", "content": "what does combineLatest do?"}
    assert "Answer in the language of the question" in system["content"]
    assert f"[1] src/stream.ts:1-3\n{STREAM_TS.strip()}" in system["content"]


def test_ask_json_tells_answer_citations_queries_tokens_and_timings(project):
    out = ask_json("combine latest streams")

    assert out["answer"] == "combineLatest merges the latest values of two streams [1]."
    assert out["found"] is True
    assert out["queries"] == ["combine latest streams"]
    assert (out["model"], out["prompt"], out["llmCalls"]) == ("openai:fake-chat-1", "ask_v2", 1)
    first, *others = out["citations"]
    assert first["cited"] is True and first["number"] == 1
    assert {"chunkId", "sourceName", "path", "startLine", "endLine", "score", "location"} <= first.keys()
    assert all(not c["cited"] for c in others)
    assert {c["path"] for c in out["citations"]} == {"src/stream.ts", "docs/guide.md"}
    assert out["tokens"]["prompt"] > 0 and out["tokens"]["completion"] == 9 and out["tokens"]["context"] > 0
    assert out["timings"]["firstTokenMs"] is not None
    assert out["timings"]["totalMs"] >= out["timings"]["answerMs"] >= out["timings"]["firstTokenMs"]


def test_nothing_retrieved_is_not_found_without_asking_the_llm(project, fake_llm):
    code, out, _ = rag("ask", "zebra quantum")

    assert (code, out) == (0, f"{NOT_FOUND}\n")
    assert fake_llm.requests == []
    out_json = ask_json("zebra quantum")
    assert (out_json["found"], out_json["citations"], out_json["llmCalls"]) == (False, [], 0)


def test_filter_drops_what_the_llm_judges_irrelevant(project, fake_llm):
    out = ask_json("combine latest streams", "--filter")

    assert [c["path"] for c in out["citations"]] == ["src/stream.ts"]
    assert out["filteredOut"] == 1
    assert out["llmCalls"] == 3  # two judgements, one answer
    judgements = [r for r in fake_llm.requests if not r["stream"]]
    assert len(judgements) == 2 and all(r["max_tokens"] == 3 for r in judgements)


def test_rewrite_searches_the_question_and_the_llm_queries_and_fuses_them(project):
    out = ask_json("how do I merge two observables?", "--rewrite")

    assert out["queries"] == ["how do I merge two observables?", "combineLatest", "Streams guide"]
    assert {c["path"] for c in out["citations"]} == {"src/stream.ts", "docs/guide.md"}
    assert out["timings"]["rewriteMs"] is not None and out["llmCalls"] == 2


def test_search_filters_and_k_apply(project):
    assert [c["path"] for c in ask_json("combine latest", "--type", "markdown")["citations"]] == ["docs/guide.md"]
    assert [c["path"] for c in ask_json("combine latest", "--path-prefix", "src/")["citations"]] == ["src/stream.ts"]
    assert len(ask_json("combine latest", "-k", "1")["citations"]) == 1


def test_context_tokens_bound_the_sources_given(project, fake_llm):
    out = ask_json("combine latest streams", "--context-tokens", "40")

    assert len(out["citations"]) == 1 and out["tokens"]["context"] <= 40


def test_an_answer_citing_nothing_is_not_found_and_lists_no_sources(project, fake_llm):
    fake_llm.reply = lambda messages: "They are combined."

    code, out, _ = rag("ask", "combine latest", "--type", "code")

    assert (code, out) == (0, "They are combined.\n")
    assert ask_json("combine latest", "--type", "code")["found"] is False


def test_a_russian_not_found_answer_is_not_found_whatever_its_words(project, fake_llm):
    fake_llm.reply = lambda messages: "Не найдено в проиндексированных источниках."

    code, out, _ = rag("ask", "что делает combineLatest?")

    assert (code, out) == (0, "Не найдено в проиндексированных источниках.\n")
    assert ask_json("что делает combineLatest?")["found"] is False


@pytest.mark.parametrize(("question", "line"), [("что делает combineLatest?", NOT_FOUND_RU),
                                                ("what does combineLatest do?", NOT_FOUND)])
def test_the_not_found_marker_becomes_the_line_in_the_question_language(project, fake_llm, question, line):
    fake_llm.reply = lambda messages: "NOT_FOUND"

    code, out, _ = rag("ask", question)

    assert (code, out) == (0, f"{line}\n")
    system = fake_llm.requests[0]["messages"][0]["content"]
    assert "reply with exactly NOT_FOUND and nothing else" in system
    out_json = ask_json(question)
    assert (out_json["answer"], out_json["found"]) == (line, False)


def test_an_answer_starting_like_the_marker_streams_whole(project, fake_llm):
    fake_llm.reply = lambda messages: "No merge: combineLatest combines [1]."

    assert rag("ask", "combine latest", "--type", "code")[1] == ("No merge: combineLatest combines [1].\n\n"
                                                                 "[1] src/stream.ts:1-3\n")


def test_a_source_header_echoed_from_the_prompt_is_no_citation(project, fake_llm):
    fake_llm.reply = lambda messages: "Sources:\n[1] src/stream.ts:1-3\nexport function combineLatest"

    out = ask_json("combine latest", "--type", "code")

    assert [c["cited"] for c in out["citations"]] == [False]


def test_the_model_saying_not_found_lists_no_sources(project, fake_llm):
    fake_llm.reply = lambda messages: "Not found in the indexed sources."

    code, out, _ = rag("ask", "combine latest")

    assert (code, out) == (0, "Not found in the indexed sources.\n")
    assert ask_json("combine latest")["found"] is False


def test_help_shows_the_citation_mark():
    code, out, _ = rag("ask", "--help")
    assert code == 0 and "citing them as [n]." in " ".join(out.split())


def test_no_llm_configured_is_one_line(project):
    project.write_text("embeddings: {provider: none}\n")

    code, _, err = rag("ask", "combine latest")

    assert code == 1
    assert err.startswith("error: no LLM is configured (llm.provider: none); set llm.provider: openai")
    assert err.count("\n") == 1


def test_an_llm_that_does_not_answer_is_one_line_without_the_key(project, fake_llm):
    project.write_text(project.read_text().replace("timeout: 5", "timeout: 1"))
    fake_llm.script = [Hang(10)] * 3

    code, out, err = rag("ask", "combine latest")

    assert code == 1
    assert err.startswith("error: llm: no answer within the 1 s deadline")
    assert err.count("\n") == 1
    assert FAKE_KEY not in out + err


def test_an_llm_that_is_down_is_one_line_at_once_naming_llm_base_url(project, fake_llm):
    with socket.socket() as probe:  # a port nothing listens on: the connection is refused
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    project.write_text(project.read_text().replace(fake_llm.base_url, closed))

    started = time.monotonic()
    code, _, err = rag("ask", "combine latest")

    assert time.monotonic() - started < 3  # six attempts took ~26 s
    assert code == 1 and err.count("\n") == 1
    assert err.startswith(f"error: llm: cannot reach {closed}/chat/completions (ConnectError: ")
    assert err.endswith("check llm.baseUrl\n")


def test_a_rejected_key_names_where_it_comes_from(project, monkeypatch):
    monkeypatch.setenv("LLM_KEY", "sk-wrong-key-0000000000")

    code, _, err = rag("ask", "combine latest")

    assert (code, err) == (1, "error: llm: API key rejected (HTTP 401); set the variable llm.apiKey names\n")


def hit(number: int, content: str) -> SearchHit:
    return SearchHit(chunk_id=number, source_name="s", path=f"f{number}.py", source_type="code",
                     content=content, coordinates={"startLine": 1, "endLine": 2}, bm25=None, bm25_rank=None,
                     vector=None, vector_rank=None, score=1.0 / number, fusion="rrf")


def test_fit_keeps_rank_order_and_cuts_only_a_first_source_too_big():
    small, big = hit(1, "x" * 30), hit(2, "y" * 300)

    assert [s.number for s in fit([(small, 1.0), (big, 0.5), (hit(3, "z"), 0.2)], 40)] == [1]
    (only,) = fit([(big, 1.0)], 40)
    assert only.text == "y" * (40 - 5) * 3 and len(only.text) < 300


def test_a_rewrite_holding_nul_and_an_answer_holding_the_key_are_cleaned(project, fake_llm):
    """#56: a NUL from the LLM once ended `rag ask --rewrite` with a database error, and a key
    the server put in the answer was printed."""
    def leaky(messages: list[dict[str, str]]) -> str:
        if "search queries" in messages[-1]["content"]:
            return "1. combine\x00Latest\n2. Streams\x00guide"
        return f"combineLatest merges streams [1]; key {FAKE_KEY}."

    fake_llm.reply = leaky
    code, out, err = rag("ask", "how do I merge two observables?", "--rewrite")
    assert code == 0, err
    assert FAKE_KEY not in out + err and "key ****." in out and "\x00" not in out
    assert "\n[1] " in out


def test_an_answer_far_over_max_tokens_is_cut_and_says_so(project, fake_llm):
    fake_llm.reply = lambda messages: "word " * 200_000  # 1 MB
    code, out, _ = rag("ask", "what does combineLatest do?")
    assert code == 0 and len(out) < 10_000 and "[the answer was cut: it passed" in out
