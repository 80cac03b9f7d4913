"""Jina and OpenAI embedders against a fake /embeddings API: what they send and what they return."""

import threading
import time

import httpx
import pytest

from rag.providers import ProviderError
from rag.providers.jina import JinaEmbedder
from rag.providers.openai import OpenAIEmbedder
from rag.providers.remote import plan_batches

KEY = "jina_secret_key_123"


def jina(api, sleeps, **options):
    return JinaEmbedder(KEY, transport=api.transport, sleep=sleeps.append, **options)


def test_jina_request_has_the_documented_shape(api, sleeps):
    api.dimensions = 1024
    embedder = jina(api, sleeps)

    vectors = embedder.embed_documents(["def f(): pass", "class A: ..."])
    embedder.embed_query("where is f defined")

    for request in api.requests:
        assert (request.method, str(request.url)) == ("POST", "https://api.jina.ai/v1/embeddings")
        assert request.headers["authorization"] == f"Bearer {KEY}"
        assert request.headers["content-type"] == "application/json"
    document_body, query_body = api.bodies
    assert document_body == {
        "model": "jina-embeddings-v3",
        "task": "retrieval.passage",
        "dimensions": 1024,
        "late_chunking": False,
        "truncate": True,
        "input": ["def f(): pass", "class A: ..."],
    }
    assert query_body["task"] == "retrieval.query"
    assert query_body["input"] == ["where is f defined"]
    assert vectors == [api.vector("def f(): pass", 1024), api.vector("class A: ...", 1024)]
    assert embedder.model_id == "jina:jina-embeddings-v3@1024"


def test_jina_dimensions_are_sent_and_part_of_the_model_id(api, sleeps):
    embedder = jina(api, sleeps, dimensions=256)

    assert len(embedder.embed_query("q")) == 256
    assert api.bodies[0]["dimensions"] == 256
    assert embedder.model_id == "jina:jina-embeddings-v3@256"


@pytest.mark.parametrize("max_in_flight", [1, 4])
def test_jina_sends_batches_of_64_and_keeps_order(api, sleeps, max_in_flight):
    texts = [f"chunk {i}" for i in range(150)]
    done: list[int] = []

    vectors = jina(api, sleeps, dimensions=8, max_in_flight=max_in_flight).embed_documents(
        texts, progress=done.append
    )

    assert sorted(len(body["input"]) for body in api.bodies) == [22, 64, 64]
    assert vectors == [api.vector(text, 8) for text in texts]
    assert sorted(done) == [22, 64, 64]


def test_concurrent_batches_keep_order_when_answered_out_of_order(api, sleeps):
    """Later batches answer first; results must still line up with their texts."""
    in_flight = 0
    most_in_flight = 0
    lock = threading.Lock()

    def slow_for_early_batches(body):
        nonlocal in_flight, most_in_flight
        with lock:
            in_flight += 1
            most_in_flight = max(most_in_flight, in_flight)
        batch_number = int(body["input"][0].split()[1]) // 10
        time.sleep(0.02 * (6 - batch_number))
        with lock:
            in_flight -= 1

    api.before_answer = slow_for_early_batches
    texts = [f"chunk {i}" for i in range(60)]

    vectors = jina(api, sleeps, dimensions=8, batch_size=10).embed_documents(texts)

    assert vectors == [api.vector(text, 8) for text in texts]
    assert 1 < most_in_flight <= 4


def test_failed_batch_fails_the_whole_call(api, sleeps):
    api.script = [httpx.Response(200, json={"data": []})]
    with pytest.raises(ProviderError, match="asked for 10 embeddings but got 0"):
        jina(api, sleeps, dimensions=8, batch_size=10).embed_documents(["t"] * 40)


def test_empty_input_makes_no_request(api, sleeps):
    assert jina(api, sleeps).embed_documents([]) == []
    assert api.requests == []


def test_jina_without_key_says_which_variable_to_set():
    with pytest.raises(ProviderError, match="JINA_API_KEY"):
        JinaEmbedder("")


def test_vectors_of_the_wrong_size_are_reported(api, sleeps):
    api.dimensions = 512
    embedder = OpenAIEmbedder("sk-test", transport=api.transport, sleep=sleeps.append)

    with pytest.raises(ProviderError) as error:
        embedder.embed_query("q")

    assert str(error.value) == (
        "openai: model 'text-embedding-3-small' returned 512-dimensional vectors but 1536 "
        "were expected; set dimensions to 512 or use a model that supports 1536"
    )


def test_an_answer_without_embeddings_is_reported(api, sleeps):
    api.script = [httpx.Response(200, json={"object": "list", "results": []})]

    with pytest.raises(ProviderError, match=r"unexpected answer .* check base_url"):
        jina(api, sleeps).embed_query("q")


def test_openai_request_has_the_documented_shape(api, sleeps):
    api.dimensions = 1536
    embedder = OpenAIEmbedder("sk-test", transport=api.transport, sleep=sleeps.append)

    embedder.embed_documents(["a", "b"])

    (request,) = api.requests
    assert str(request.url) == "https://api.openai.com/v1/embeddings"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert api.bodies == [
        {"model": "text-embedding-3-small", "input": ["a", "b"], "encoding_format": "float"}
    ]
    assert embedder.model_id == "openai:text-embedding-3-small@1536"


def test_openai_sends_dimensions_only_when_they_change_the_size(api, sleeps):
    shortened = OpenAIEmbedder(
        "sk-test", "text-embedding-3-large", 256, transport=api.transport, sleep=sleeps.append
    )
    legacy = OpenAIEmbedder(
        "sk-test", "text-embedding-ada-002", 1536, transport=api.transport, sleep=sleeps.append
    )

    shortened.embed_query("q")
    api.dimensions = 1536
    legacy.embed_query("q")

    assert api.bodies[0]["dimensions"] == 256
    assert "dimensions" not in api.bodies[1]
    assert shortened.model_id == "openai:text-embedding-3-large@256"


def test_openai_batches_by_count_and_by_size(api, sleeps):
    api.dimensions = 1536
    embedder = OpenAIEmbedder("sk-test", transport=api.transport, sleep=sleeps.append)

    embedder.embed_documents([f"t{i}" for i in range(300)])

    assert sorted(len(body["input"]) for body in api.bodies) == [44, 128, 128]


def test_batches_respect_the_token_budget():
    texts = ["x" * 3000, "x" * 3000, "x" * 3000, "small", "x" * 90_000]

    batches = plan_batches(texts, max_items=64, max_tokens=2500)

    assert [len(batch) for batch in batches] == [2, 2, 1]
    assert [text for batch in batches for text in batch] == texts


def test_openai_compatible_server_without_key_and_unknown_size(api, sleeps):
    """Ollama-style: no key, a model OpenAI never heard of; its size is asked once."""
    api.dimensions = 768
    embedder = OpenAIEmbedder(
        model="nomic-embed-text",
        base_url="http://localhost:11434/v1/",
        transport=api.transport,
        sleep=sleeps.append,
    )

    assert embedder.model_id == "openai:nomic-embed-text@768"
    assert embedder.dimensions == 768
    vectors = embedder.embed_documents(["a", "b", "c"])

    assert len(api.requests) == 2  # the size probe, then the documents
    assert str(api.requests[0].url) == "http://localhost:11434/v1/embeddings"
    assert all("authorization" not in request.headers for request in api.requests)
    assert "dimensions" not in api.bodies[1]
    assert [len(vector) for vector in vectors] == [768, 768, 768]


def test_openai_own_api_needs_a_key():
    with pytest.raises(ProviderError, match="set OPENAI_API_KEY, or set base_url"):
        OpenAIEmbedder("")


def test_repr_shows_the_model_but_never_the_key(api, sleeps):
    embedder = jina(api, sleeps)

    assert repr(embedder) == "JinaEmbedder(model='jina-embeddings-v3', dimensions=1024)"
    assert KEY not in repr(embedder)
    assert KEY not in repr(vars(embedder))
