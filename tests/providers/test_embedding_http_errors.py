"""Retries and error messages of the hosted embedders (shared by Jina and OpenAI)."""

import email.utils
import logging
import socket
import time

import httpx
import pytest

from rag.providers import ProviderError
from rag.providers._http import RetryPolicy
from rag.providers.jina import JinaEmbedder
from rag.providers.openai import OpenAIEmbedder

JINA_KEY = "jina_secret_key_123"
OPENAI_KEY = "sk-proj-secret-456"


@pytest.fixture
def jina(api, sleeps):
    api.dimensions = 1024
    return JinaEmbedder(JINA_KEY, transport=api.transport, sleep=sleeps.append)


@pytest.fixture
def openai(api, sleeps):
    api.dimensions = 1536
    return OpenAIEmbedder(OPENAI_KEY, transport=api.transport, sleep=sleeps.append)


def openai_error(status, message, code=None, headers=None):
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    return httpx.Response(status, json={"error": error}, headers=headers)


def test_429_waits_as_long_as_retry_after_says(api, sleeps, jina):
    api.script = [httpx.Response(429, json={"detail": "Rate limit"}, headers={"Retry-After": "7"})]

    assert len(jina.embed_query("q")) == 1024
    assert sleeps == [7.0]
    assert len(api.requests) == 2


def test_retry_after_may_be_an_http_date(api, sleeps, jina):
    in_30_seconds = email.utils.formatdate(time.time() + 30, usegmt=True)
    api.script = [httpx.Response(429, headers={"Retry-After": in_30_seconds})]

    jina.embed_query("q")

    (slept,) = sleeps
    assert 28 <= slept <= 31


def test_server_errors_back_off_exponentially(api, sleeps, openai):
    api.script = [openai_error(503, "overloaded"), openai_error(502, "bad gateway")]

    openai.embed_query("q")

    first, second = sleeps
    assert 0.5 <= first <= 1.0
    assert 1.0 <= second <= 2.0


def test_connection_errors_are_retried(api, sleeps, openai):
    api.script = [httpx.ConnectError("refused"), httpx.ReadTimeout("slow")]

    assert len(openai.embed_query("q")) == 1536
    assert len(sleeps) == 2


def test_gives_up_after_six_attempts_with_the_last_error(api, sleeps, jina):
    api.script = [httpx.Response(503, json={"detail": "Service busy"})] * 6

    with pytest.raises(ProviderError) as error:
        jina.embed_query("q")

    assert str(error.value) == ("jina: giving up after 6 attempts; last error: HTTP 503: Service busy")
    assert len(api.requests) == 6
    assert len(sleeps) == 5


def test_unreachable_server_names_the_url(api, sleeps, jina):
    api.script = [httpx.ConnectError("connection refused")] * 6

    with pytest.raises(ProviderError, match=r"cannot reach https://api.jina.ai/v1/embeddings"):
        jina.embed_query("q")


def test_a_retry_after_beyond_reason_fails_at_once(api, sleeps, openai):
    api.script = [openai_error(429, "Rate limit reached", headers={"Retry-After": "3600"})]

    with pytest.raises(ProviderError, match="asked to wait 3600 s; try again later"):
        openai.embed_query("q")
    assert sleeps == []


def test_exhausted_quota_is_not_retried(api, sleeps, openai):
    api.script = [openai_error(429, "You exceeded your current quota.", code="insufficient_quota")]

    with pytest.raises(ProviderError, match=r"out of credit or quota \(HTTP 429\)"):
        openai.embed_query("q")
    assert len(api.requests) == 1


@pytest.mark.parametrize("status", [401, 403])
def test_rejected_key_says_what_to_set_and_never_shows_it(api, sleeps, jina, status):
    api.script = [httpx.Response(status, json={"detail": f"Invalid API key {JINA_KEY}"})]

    with pytest.raises(ProviderError) as error:
        jina.embed_query("q")

    assert str(error.value) == f"jina: API key rejected (HTTP {status}); set JINA_API_KEY"
    assert JINA_KEY not in repr(error.value)
    assert len(api.requests) == 1


def test_compatible_server_asking_for_a_key(api, sleeps):
    api.script = [openai_error(401, "Missing bearer token")]
    embedder = OpenAIEmbedder(base_url="http://gpu-box:8000/v1", dimensions=8, transport=api.transport)

    with pytest.raises(ProviderError, match=r"openai: API key required \(HTTP 401\)"):
        embedder.embed_query("q")


def test_retries_log_neither_key(api, sleeps, jina, openai, caplog):
    api.script = [httpx.Response(500, text="oops")] * 2
    with caplog.at_level(logging.DEBUG):
        jina.embed_query("q")
        openai.embed_query("q")

    assert "retrying" in caplog.text
    assert JINA_KEY not in caplog.text
    assert OPENAI_KEY not in caplog.text


def test_unknown_openai_model(api, sleeps):
    api.script = [
        openai_error(
            404,
            "The model `text-embedding-4` does not exist or you do not have access to it.",
            code="model_not_found",
        )
    ]
    embedder = OpenAIEmbedder(OPENAI_KEY, "text-embedding-4", 8, transport=api.transport, sleep=sleeps.append)

    with pytest.raises(ProviderError) as error:
        embedder.embed_query("q")

    assert str(error.value) == (
        "unknown model 'text-embedding-4' for openai: The model `text-embedding-4` does not "
        "exist or you do not have access to it."
    )


def test_unknown_jina_model_from_a_validation_error(api, sleeps):
    api.script = [
        httpx.Response(
            422,
            json={
                "detail": [
                    {
                        "loc": ["body", "model"],
                        "msg": "Input should be 'jina-embeddings-v3' or 'jina-clip-v2'",
                        "type": "literal_error",
                    }
                ]
            },
        )
    ]
    embedder = JinaEmbedder(JINA_KEY, "jina-embedings-v3", 8, transport=api.transport)

    with pytest.raises(ProviderError, match=r"^unknown model 'jina-embedings-v3' for jina: body"):
        embedder.embed_query("q")


def test_ollama_style_missing_model(api, sleeps):
    api.script = [httpx.Response(404, json={"error": 'model "bge-m3" not found, try pulling it'})]
    embedder = OpenAIEmbedder(
        model="bge-m3", dimensions=8, base_url="http://localhost:11434/v1", transport=api.transport
    )

    with pytest.raises(ProviderError, match=r"^unknown model 'bge-m3' for openai: model \"bge"):
        embedder.embed_query("q")


def test_unsupported_dimensions_are_not_blamed_on_the_model(api, sleeps):
    api.script = [openai_error(400, "This model does not support specifying dimensions.")]
    embedder = OpenAIEmbedder(OPENAI_KEY, "text-embedding-ada-002", 256, transport=api.transport)

    with pytest.raises(ProviderError, match="does not accept dimensions=256"):
        embedder.embed_query("q")


def test_other_rejections_show_the_server_message(api, sleeps, openai):
    api.script = [openai_error(400, "'$.input' is invalid. Please check the API reference.")]

    with pytest.raises(ProviderError) as error:
        openai.embed_query("")

    assert str(error.value) == (
        "openai: request rejected (HTTP 400): '$.input' is invalid. Please check the API reference."
    )


def test_wrong_base_url_is_suggested_on_404(api, sleeps):
    api.script = [httpx.Response(404, text="404 page not found")]
    embedder = OpenAIEmbedder(base_url="http://localhost:1234", dimensions=8, transport=api.transport)

    with pytest.raises(ProviderError, match=r"http://localhost:1234/embeddings not found .*base_url"):
        embedder.embed_query("q")


def test_an_error_body_echoing_the_key_is_scrubbed(api, sleeps, openai):
    api.script = [openai_error(400, f"bad request from Bearer {OPENAI_KEY} (Authorization: Bearer {OPENAI_KEY})")]

    with pytest.raises(ProviderError) as error:
        openai.embed_query("q")

    assert OPENAI_KEY not in str(error.value)
    assert str(error.value) == (
        "openai: request rejected (HTTP 400): bad request from Bearer **** (Authorization: ****)"
    )


def test_a_retried_error_body_is_scrubbed_too(api, sleeps, jina):
    api.script = [httpx.Response(503, text=f"upstream refused token {JINA_KEY}")] * 6

    with pytest.raises(ProviderError) as error:
        jina.embed_query("q")

    assert JINA_KEY not in str(error.value) and "token ****" in str(error.value)


def test_each_attempt_gets_only_what_is_left_of_the_deadline(api, sleeps):
    timeouts: list[dict[str, float]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        timeouts.append(request.extensions["timeout"])
        raise httpx.ReadTimeout("no answer")

    embedder = OpenAIEmbedder(OPENAI_KEY, dimensions=8, transport=httpx.MockTransport(answer),
                              retry=RetryPolicy(deadline=5.0, base_delay=1.0), sleep=sleeps.append)
    with pytest.raises(ProviderError) as error:
        embedder.embed_query("q")

    assert all(t["read"] <= 5.0 and t["connect"] <= 5.0 for t in timeouts)
    assert str(error.value).startswith(f"openai: no answer within the 5 s deadline after {len(timeouts)} attempt")
    assert "last error: cannot reach https://api.openai.com/v1/embeddings (ReadTimeout: no answer)" in str(error.value)


def test_a_server_that_never_answers_fails_within_the_deadline():
    with socket.socket() as server:  # accepts connections (the kernel's backlog), never answers
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        embedder = OpenAIEmbedder(base_url=f"http://127.0.0.1:{port}/v1", dimensions=8,
                                  retry=RetryPolicy(deadline=1.5))
        started = time.monotonic()
        with pytest.raises(ProviderError, match=r"no answer within the 1.5 s deadline after \d+ attempts?"):
            embedder.embed_query("q")
        assert time.monotonic() - started < 3.0


def test_the_default_deadline_is_about_a_minute():
    assert 30 <= RetryPolicy().deadline <= 90


@pytest.mark.parametrize("bad", ["NaN", "Infinity"])
def test_a_nan_vector_is_a_provider_error(bad):
    def answer(request: httpx.Request) -> httpx.Response:  # Python's json reads NaN as servers write it
        return httpx.Response(200, content=f'{{"data": [{{"index": 0, "embedding": [0.1, {bad}, 0.3]}}]}}')

    embedder = OpenAIEmbedder(OPENAI_KEY, dimensions=3, transport=httpx.MockTransport(answer))
    with pytest.raises(ProviderError, match="openai: model 'text-embedding-3-small' returned a vector holding NaN"):
        embedder.embed_query("q")


def test_an_all_zero_vector_is_a_provider_error():
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": [0.1, 0.2, 0.3]},
                                                  {"index": 1, "embedding": [0.0, 0.0, 0.0]}]})

    embedder = OpenAIEmbedder(OPENAI_KEY, dimensions=3, transport=httpx.MockTransport(answer))
    with pytest.raises(ProviderError, match="openai: model 'text-embedding-3-small' returned an all-zero vector"):
        embedder.embed_documents(["a", "b"])
