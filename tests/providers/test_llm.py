"""The OpenAI-compatible chat client against a fake server over real HTTP: answers whole and
streamed, retries, deadlines, malformed answers, the key kept secret, and the ``llm`` config."""

import logging
import socket
import time
from collections.abc import Callable, Iterator

import pytest
from plugins.llm import FAKE_KEY, FAKE_MODEL, Endless, Fail, FakeLLM, Hang, Malformed

from rag.config import ConfigError, LlmConfig, LoadedConfig, RagConfig, masked_dump, parse_config_file
from rag.errors import ProviderError
from rag.providers._http import RetryPolicy
from rag.providers.llm import (
    CHARS_PER_TOKEN,
    ChatMessage,
    ChatResult,
    ChatStream,
    OpenAIChatModel,
    build_chat_model,
    complete_each,
)
from rag.service import RagService

QUESTION = [ChatMessage("system", "Be brief."), ChatMessage("user", "What is RRF?")]


@pytest.fixture
def client(fake_llm: FakeLLM, sleeps: list[float]) -> Iterator[Callable[..., OpenAIChatModel]]:
    """Builds clients of the fake server that record their sleeps; all closed after the test."""
    made: list[OpenAIChatModel] = []

    def make(*, key: str = FAKE_KEY, deadline: float = 120.0) -> OpenAIChatModel:
        made.append(OpenAIChatModel(FAKE_MODEL, base_url=fake_llm.base_url, api_key=key,
                                    retry=RetryPolicy(deadline=deadline), sleep=sleeps.append))
        return made[-1]

    yield make
    for model in made:
        model.close()


def test_complete_sends_the_conversation_and_reads_answer_and_counts(fake_llm, sleeps, client):
    fake_llm.reply = lambda messages: "Reciprocal rank fusion."

    result = client().complete(QUESTION, max_tokens=50)

    assert result == ChatResult("Reciprocal rank fusion.", prompt_tokens=5, completion_tokens=3)
    (body,) = fake_llm.requests
    assert body["model"] == FAKE_MODEL
    assert body["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "What is RRF?"}]
    assert body["max_tokens"] == 50
    assert body["temperature"] == 0.0
    assert body["stream"] is False
    assert fake_llm.authorizations == [f"Bearer {FAKE_KEY}"]


def test_stream_yields_the_pieces_then_knows_the_counts(fake_llm, sleeps, client):
    fake_llm.reply = lambda messages: "Reciprocal rank fusion merges rankings."

    pieces = client().stream(QUESTION)
    received = list(pieces)

    # (" merges" ends as the key begins, "s": it waits for the next piece to tell)
    assert received == ["Reciprocal", " rank", " fusion", " merge", "s rankings."]
    assert isinstance(pieces, ChatStream)
    assert (pieces.prompt_tokens, pieces.completion_tokens) == (5, 5)
    (body,) = fake_llm.requests
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_rate_limit_waits_as_long_as_retry_after_says(fake_llm, sleeps, client):
    fake_llm.script = [Fail(429, "slow down", retry_after="3")]

    assert client().complete(QUESTION).text == "echo: What is RRF?"
    assert sleeps == [3.0]
    assert len(fake_llm.requests) == 2


def test_a_stream_is_retried_until_it_starts(fake_llm, sleeps, client):
    fake_llm.script = [Fail(500), Fail(503)]

    assert "".join(client().stream(QUESTION)) == "echo: What is RRF?"
    assert len(sleeps) == 2


def test_server_errors_give_up_after_six_attempts_naming_the_last(fake_llm, sleeps, client):
    fake_llm.script = [Fail(500, "model crashed")] * 6

    with pytest.raises(Exception) as error:
        client().complete(QUESTION)

    assert str(error.value) == "llm: giving up after 6 attempts; last error: HTTP 500: model crashed"
    assert len(sleeps) == 5


def test_a_server_that_never_answers_fails_within_the_deadline(fake_llm, client):
    fake_llm.script = [Hang(30)] * 3

    with pytest.raises(Exception) as error:
        client(deadline=0.5).complete(QUESTION)

    assert str(error.value).startswith("llm: no answer within the 0.5 s deadline")
    assert "raise the provider's timeout" in str(error.value)


def test_an_answer_that_is_not_json_is_named(fake_llm, sleeps, client):
    fake_llm.script = [Malformed()]

    with pytest.raises(Exception, match=r"is not JSON; check base_url points at the API"):
        client().complete(QUESTION)


def test_json_without_choices_is_named(fake_llm, sleeps, client):
    fake_llm.script = [Malformed('{"object": "list", "data": []}')]

    with pytest.raises(Exception, match=r"no choices\[0\]\.message\.content"):
        client().complete(QUESTION)


def test_a_stream_event_that_is_not_json_is_named(fake_llm, sleeps, client):
    fake_llm.script = [Malformed("{oops")]

    with pytest.raises(Exception, match="the answer stream holds something that is not JSON"):
        list(client().stream(QUESTION))


def test_a_rejected_key_is_named_by_its_variable_never_shown(fake_llm, sleeps, client):
    wrong = "sk-wrong-key-9876543210"

    with pytest.raises(Exception) as error:
        client(key=wrong).complete(QUESTION)

    assert str(error.value) == "llm: API key rejected (HTTP 401); set OPENAI_API_KEY"
    assert fake_llm.authorizations == [f"Bearer {wrong}"]  # the server did get it (and echoed it)


@pytest.mark.parametrize("streamed", [False, True])
def test_an_echoed_key_never_reaches_messages_or_logs(fake_llm, sleeps, client, caplog, streamed):
    fake_llm.script = [Fail(500, "upstream broke", echo_authorization=True)] * 6
    model = client()

    with caplog.at_level(logging.DEBUG), pytest.raises(Exception) as error:
        list(model.stream(QUESTION)) if streamed else model.complete(QUESTION)

    assert "upstream broke; request had Authorization: ****" in str(error.value)
    assert FAKE_KEY not in str(error.value)
    assert "Authorization: ****" in caplog.text  # the retries were logged, scrubbed
    assert FAKE_KEY not in caplog.text


def test_complete_each_keeps_order_and_puts_failures_in_place(fake_llm, sleeps, client):
    fake_llm.reply = lambda messages: messages[-1]["content"].upper()
    conversations = [[ChatMessage("user", word)] for word in ("one", "two", "three")]

    results = complete_each(client(), conversations, max_concurrency=3)

    assert [r.text for r in results if isinstance(r, ChatResult)] == ["ONE", "TWO", "THREE"]

    fake_llm.script = [Fail(400, "bad request")]
    first, *rest = complete_each(client(), conversations, max_concurrency=1)
    assert str(first) == "llm: request rejected (HTTP 400): bad request"
    assert [r.text for r in rest if isinstance(r, ChatResult)] == ["TWO", "THREE"]


def test_build_from_config_reads_the_key_from_the_named_variable(fake_llm, monkeypatch):
    monkeypatch.setenv("MY_LLM_KEY", FAKE_KEY)
    config = fake_llm.config(api_key=None, api_key_env="MY_LLM_KEY", temperature=0.3)

    model = build_chat_model(config)
    try:
        answer = model.complete(QUESTION).text
    finally:
        model.close()

    assert model.model_id == f"openai:{FAKE_MODEL}"
    assert answer == "echo: What is RRF?"
    assert fake_llm.requests[0]["temperature"] == 0.3


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"provider": "none"}, "no LLM is configured (llm.provider: none); set llm.provider: openai"),
        ({"provider": "openai"}, "llm: no model set; set llm.model"),
        ({"provider": "openai", "model": "gpt-4o-mini", "api_key_env": "UNSET_LLM_KEY"},
         "llm: no API key; set UNSET_LLM_KEY, or set llm.baseUrl"),
        ({"provider": "openai", "model": "m", "base_url": "localhost:8080"},
         "llm: baseUrl 'localhost:8080' must start with http:// or https://"),
    ],
)
def test_build_says_what_is_missing_in_one_line(monkeypatch, settings, message):
    monkeypatch.delenv("UNSET_LLM_KEY", raising=False)

    with pytest.raises(Exception) as error:
        build_chat_model(LlmConfig.model_validate(settings))

    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def test_llm_section_reads_the_key_from_the_environment_and_masks_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_KEY", FAKE_KEY)
    path = tmp_path / "rag.config.yaml"
    path.write_text(
        "llm:\n  provider: openai\n  baseUrl: http://127.0.0.1:8080/v1\n  model: gemma\n"
        "  apiKey: ${LLM_KEY}\n  contextTokens: 4096\n  maxConcurrency: 2\n"
    )

    config = parse_config_file(path)

    assert config.llm.api_key is not None and config.llm.api_key.get_secret_value() == FAKE_KEY
    assert (config.llm.context_tokens, config.llm.max_concurrency) == (4096, 2)
    dumped = masked_dump(config)["llm"]
    assert dumped["apiKey"] == "****"
    assert FAKE_KEY not in str(masked_dump(config))


def test_llm_section_refuses_a_literal_key(tmp_path):
    path = tmp_path / "rag.config.yaml"
    path.write_text("llm:\n  provider: openai\n  apiKey: sk-literal-123456\n")

    with pytest.raises(ConfigError, match=r"llm\.apiKey: API keys are read from the environment only"):
        parse_config_file(path)


def test_rag_config_shows_the_llm_key_variable_masked(monkeypatch):
    monkeypatch.setenv("MY_LLM_KEY", FAKE_KEY)
    loaded = LoadedConfig(RagConfig(llm=LlmConfig(api_key_env="MY_LLM_KEY")), None, "built-in defaults")

    shown = RagService(loaded=loaded).config_info()

    assert shown.environment_api_keys == {"MY_LLM_KEY": "****"}
    assert FAKE_KEY not in shown.model_dump_json()


# -- #56: answers bounded in time and length, cleaned of NUL and secrets -------------------


def test_an_endless_stream_ends_at_the_timeout_and_says_so(fake_llm, client):
    for endless in (Endless(), Endless(comments=True)):
        fake_llm.script = [endless]
        started = time.monotonic()
        pieces = client(deadline=1.5).stream(QUESTION)
        received = list(pieces)
        assert time.monotonic() - started < 4  # (the fake itself stops after 8 s)
        assert received[-1] == "\n\n[the answer was cut: it ran past llm.timeout (1.5 s)]"
        assert pieces.cut is not None and sum(map(len, received)) < 100_000


def test_an_answer_longer_than_max_tokens_allow_is_cut_and_says_so(fake_llm, client):
    fake_llm.reply = lambda messages: "word " * 200_000  # 1 MB, whatever max_tokens says
    model = client()
    streamed = "".join(model.stream(QUESTION, max_tokens=512))
    whole = model.complete(QUESTION, max_tokens=512).text
    for text in (streamed, whole):
        assert text.startswith("word word") and len(text) < 512 * CHARS_PER_TOKEN + 100
        assert text.endswith(f"[the answer was cut: it passed {512 * CHARS_PER_TOKEN:,} characters]")


def test_nul_and_the_key_never_leave_the_client_whole_or_streamed(fake_llm, client):
    fake_llm.reply = lambda messages: f"combine\x00Latest, and the key is {FAKE_KEY} [1]."
    model = client()
    for text in (model.complete(QUESTION).text, "".join(model.stream(QUESTION))):
        assert text == "combine\ufffdLatest, and the key is **** [1]."


def test_a_secret_split_over_pieces_is_still_masked() -> None:
    other = "confluence-token-9876543210"
    halves = [FAKE_KEY[:7], FAKE_KEY[7:20], FAKE_KEY[20:] + " and " + other[:5], other[5:], " done"]
    events = iter([{"choices": [{"delta": {"content": piece}}]} for piece in halves])
    received = list(ChatStream(events, secrets=[FAKE_KEY, other]))
    assert "".join(received) == "**** and **** done"
    assert not any(FAKE_KEY[:7] in piece or other[:5] in piece for piece in received)


def test_the_service_masks_every_configured_secret(fake_llm, monkeypatch):
    monkeypatch.setenv("CONFLUENCE_API_TOKEN", "atlassian-token-abcdef")
    fake_llm.reply = lambda messages: "token atlassian-token-abcdef"
    service = RagService(loaded=LoadedConfig(RagConfig(llm=fake_llm.config()), None, "test"))
    try:
        assert service.chat_model().complete(QUESTION).text == "token ****"
    finally:
        service.close()


@pytest.mark.parametrize("base_url", ["refused", "http://no-such-llm-host.invalid/v1"])
def test_a_configured_llm_that_is_not_there_fails_at_once_naming_the_setting(base_url, sleeps):
    if base_url == "refused":
        with socket.socket() as probe:  # a port nothing listens on
            probe.bind(("127.0.0.1", 0))
            base_url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    model = build_chat_model(LlmConfig(provider="openai", base_url=base_url, model=FAKE_MODEL))
    model._api._retrying._sleep = sleeps.append  # (a retry would show here)

    with pytest.raises(ProviderError) as error:
        model.complete(QUESTION)

    message = str(error.value)
    assert message.startswith(f"llm: cannot reach {base_url}/chat/completions (ConnectError: ")
    assert message.endswith("; is the server running? check llm.baseUrl") and "\n" not in message
    assert sleeps == []
    model.close()
