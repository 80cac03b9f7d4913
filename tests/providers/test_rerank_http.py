"""Rerankers behind HTTP: Jina's API and compatible servers, served through httpx.MockTransport.

The fake answers in the shapes the real servers use; scores are the number of
query words a document contains, so the right order is plain to see.
"""

import json
import logging
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.errors import ProviderError
from rag.providers._http import RetryPolicy
from rag.providers.rerank_base import RerankResult
from rag.providers.rerank_http import JinaCompatibleReranker

KEY = "jina_secret_rerank_key_789"
TEI_URL = "http://tei.internal:8080"
DOCUMENTS = [
    "pandas reads CSV files",  # 0 query words
    "install the package with pip",  # 2: install, pip
    "pip install requirements from a file with pip install -r",  # 3: pip, install, requirements
    "the package index",  # 0
]
QUERY = "pip install requirements"


def relevance(query: str, document: str) -> float:
    return float(len(set(query.split()) & set(document.split())))


class FakeRerankApi:
    """Jina-shaped answers (results[] in index order, cut to top_n) or TEI's bare list (reversed).

    ``script`` holds responses (or exceptions) to give, in order, before answering normally.
    """

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.script: list[httpx.Response | Exception] = []

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.script:
            scripted = self.script.pop(0)
            if isinstance(scripted, Exception):
                raise scripted
            return scripted
        body = json.loads(request.content)
        if "texts" in body:  # TEI
            scores = [relevance(body["query"], text) for text in body["texts"]]
            answer: Any = [{"index": i, "score": s} for i, s in enumerate(scores)][::-1]
            return httpx.Response(200, json=answer)
        scores = [relevance(body["query"], document) for document in body["documents"]]
        best = sorted(range(len(scores)), key=lambda i: -scores[i])[: body["top_n"]]
        results = [{"index": i, "relevance_score": scores[i]} for i in sorted(best)]
        usage = {"total_tokens": 42}
        return httpx.Response(200, json={"model": body["model"], "usage": usage, "results": results})


@pytest.fixture
def api() -> FakeRerankApi:
    return FakeRerankApi()


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def jina(api, sleeps) -> JinaCompatibleReranker:
    return JinaCompatibleReranker(KEY, transport=api.transport, sleep=sleeps.append)


@pytest.fixture
def tei(api, sleeps) -> JinaCompatibleReranker:
    return JinaCompatibleReranker(base_url=TEI_URL, api="tei", transport=api.transport, sleep=sleeps.append)


def test_jina_request_shape(api, jina):
    jina.rerank(QUERY, DOCUMENTS, top_k=2)

    (request,) = api.requests
    assert (request.method, str(request.url)) == ("POST", "https://api.jina.ai/v1/rerank")
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.headers["Content-Type"] == "application/json"
    assert api.bodies[0] == {
        "model": "jina-reranker-v2-base-multilingual",
        "query": QUERY,
        "documents": DOCUMENTS,
        "top_n": 2,
        "return_documents": False,
    }
    assert jina.name == "jina:jina-reranker-v2-base-multilingual"


def test_results_are_sorted_best_first_and_cut_to_top_k(jina):
    assert jina.rerank(QUERY, DOCUMENTS, top_k=2) == [RerankResult(2, 3.0), RerankResult(1, 2.0)]


def test_top_k_at_least_the_documents_returns_them_all(api, jina):
    results = jina.rerank(QUERY, DOCUMENTS, top_k=50)

    assert api.bodies[0]["top_n"] == 4
    assert [r.index for r in results] == [2, 1, 0, 3]  # equal scores keep the given order
    assert [r.score for r in results] == [3.0, 2.0, 0.0, 0.0]


def test_nothing_to_rerank_sends_nothing(api, jina):
    assert jina.rerank(QUERY, [], top_k=10) == []
    assert jina.rerank(QUERY, DOCUMENTS, top_k=0) == []
    assert api.requests == []


def test_tei_request_shape_and_bare_list_answer(api, tei):
    results = tei.rerank(QUERY, DOCUMENTS, top_k=3)

    (request,) = api.requests
    assert str(request.url) == f"{TEI_URL}/rerank"
    assert "Authorization" not in request.headers  # self-hosted: no key needed
    assert api.bodies[0] == {"query": QUERY, "texts": DOCUMENTS, "truncate": True, "return_text": False}
    assert results == [RerankResult(2, 3.0), RerankResult(1, 2.0), RerankResult(0, 0.0)]
    assert tei.name == "tei:jina-reranker-v2-base-multilingual"


def test_tei_gets_batches_of_32_and_indexes_are_merged(api, tei):
    documents = [f"document {i}" for i in range(50)]
    documents[40] = "pip install requirements"
    documents[7] = "pip install"

    results = tei.rerank(QUERY, documents, top_k=50)

    assert [len(body["texts"]) for body in api.bodies] == [32, 18]
    assert [r.index for r in results[:2]] == [40, 7]
    assert sorted(r.index for r in results) == list(range(50))


def test_jina_shape_can_be_batched_too(api):
    reranker = JinaCompatibleReranker(KEY, transport=api.transport, batch_size=3)

    results = reranker.rerank(QUERY, DOCUMENTS, top_k=2)

    assert [body["documents"] for body in api.bodies] == [DOCUMENTS[:3], DOCUMENTS[3:]]
    assert [body["top_n"] for body in api.bodies] == [2, 1]
    assert results == [RerankResult(2, 3.0), RerankResult(1, 2.0)]


ANSWERS = {
    "jina": {
        "model": "jina-reranker-v2-base-multilingual",
        "usage": {"total_tokens": 30},
        "results": [{"index": 1, "relevance_score": 0.2}, {"index": 0, "relevance_score": 0.9}],
    },
    "cohere": {
        "id": "07734bd2",
        "results": [{"index": 0, "relevance_score": 0.9}, {"index": 1, "relevance_score": 0.2}],
        "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}},
    },
    "infinity": {
        "object": "rerank",
        "results": [
            {"relevance_score": 0.2, "index": 1, "document": None},
            {"relevance_score": 0.9, "index": 0, "document": None},
        ],
        "model": "mixedbread-ai/mxbai-rerank-xsmall-v1",
        "usage": {"prompt_tokens": 12, "total_tokens": 12},
        "id": "infinity-5f1a",
        "created": 1730000000,
    },
    "vllm": {
        "id": "rerank-a1b2",
        "model": "BAAI/bge-reranker-v2-m3",
        "usage": {"total_tokens": 18},
        "results": [
            {"index": 1, "document": {"text": "b"}, "relevance_score": 0.2},
            {"index": 0, "document": {"text": "a"}, "relevance_score": 0.9},
        ],
    },
    "voyage": {
        "object": "list",
        "data": [{"relevance_score": 0.9, "index": 0}, {"relevance_score": 0.2, "index": 1}],
    },
    "tei": [{"index": 1, "score": 0.2}, {"index": 0, "score": 0.9}],
}


@pytest.mark.parametrize("server", ANSWERS)
@pytest.mark.parametrize("flavor", ["jina", "tei"])
def test_every_server_answer_shape_is_understood(api, server, flavor):
    api.script = [httpx.Response(200, json=ANSWERS[server])]
    reranker = JinaCompatibleReranker(base_url="http://rerank.local/v1", api=flavor, transport=api.transport)

    assert reranker.rerank("q", ["a", "b"], top_k=5) == [RerankResult(0, 0.9), RerankResult(1, 0.2)]


def test_429_waits_as_long_as_retry_after_says(api, sleeps, jina):
    api.script = [httpx.Response(429, json={"detail": "Rate limit exceeded"}, headers={"Retry-After": "3"})]

    assert jina.rerank(QUERY, DOCUMENTS, top_k=1) == [RerankResult(2, 3.0)]
    assert sleeps == [3.0]
    assert len(api.requests) == 2


def test_rejected_key_is_explained_but_never_shown(api, jina, caplog):
    echo = {"detail": f"Invalid API key {KEY}"}
    api.script = [httpx.Response(503, json={"detail": "busy"}), httpx.Response(401, json=echo)]

    with caplog.at_level(logging.DEBUG), pytest.raises(ProviderError) as error:
        jina.rerank(QUERY, DOCUMENTS, top_k=1)

    message = str(error.value)
    assert "API key rejected (HTTP 401)" in message
    assert "JINA_API_KEY" in message
    assert KEY not in message
    assert KEY[:12] not in caplog.text
    assert KEY not in repr(jina)


def test_self_hosted_server_asking_for_a_key_says_where_to_set_it(api, tei):
    api.script = [httpx.Response(401, text="Unauthorized")]

    with pytest.raises(ProviderError, match=r"tei reranker: API key required .*reranker\.jina\.apiKey"):
        tei.rerank(QUERY, DOCUMENTS, top_k=1)


def test_server_errors_give_up_after_the_last_attempt(api, sleeps):
    reranker = JinaCompatibleReranker(
        KEY, transport=api.transport, retry=RetryPolicy(max_attempts=3), sleep=sleeps.append
    )
    api.script = [httpx.Response(503, json={"detail": "overloaded"})] * 3

    with pytest.raises(ProviderError, match=r"giving up after 3 attempts; last error: HTTP 503: overloaded"):
        reranker.rerank(QUERY, DOCUMENTS, top_k=1)
    assert len(sleeps) == 2


def test_retries_of_a_reranker_are_not_warnings(api, sleeps, caplog):
    """A search shows the reranker's failure as its one warning line; retries are not repeated on stderr."""
    reranker = JinaCompatibleReranker(
        KEY, transport=api.transport, retry=RetryPolicy(max_attempts=3), sleep=sleeps.append
    )
    api.script = [httpx.Response(503, json={"detail": "overloaded"})] * 3
    with caplog.at_level("INFO"), pytest.raises(ProviderError):
        reranker.rerank(QUERY, DOCUMENTS, top_k=1)
    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 2 and all(r.levelname == "INFO" for r in retries)


def test_unreachable_server_is_retried_then_reported(api, sleeps):
    reranker = JinaCompatibleReranker(
        base_url=TEI_URL,
        api="tei",
        transport=api.transport,
        retry=RetryPolicy(max_attempts=2),
        sleep=sleeps.append,
    )
    api.script = [httpx.ConnectError("connection refused")] * 2

    with pytest.raises(ProviderError, match=r"cannot reach http://tei.internal:8080/rerank"):
        reranker.rerank(QUERY, DOCUMENTS, top_k=1)


def test_transport_errors_that_are_not_retried_are_still_provider_errors(api, tei):
    api.script = [httpx.ProxyError("407 Proxy Authentication Required")]

    with pytest.raises(ProviderError, match=r"cannot send the request to .*ProxyError"):
        tei.rerank(QUERY, DOCUMENTS, top_k=1)


def test_unknown_model(api):
    reranker = JinaCompatibleReranker(KEY, model="jina-reranker-v9", transport=api.transport)
    api.script = [httpx.Response(422, json={"detail": "Model jina-reranker-v9 not found"})]

    with pytest.raises(ProviderError, match=r"unknown model 'jina-reranker-v9' for jina reranker"):
        reranker.rerank(QUERY, DOCUMENTS, top_k=1)


def test_jina_request_to_a_tei_server_suggests_the_tei_api(api):
    reranker = JinaCompatibleReranker(base_url=TEI_URL, transport=api.transport)
    tei_complaint = (
        "Failed to deserialize the JSON body into the target type: missing field `texts` at line 1"
    )
    api.script = [httpx.Response(422, text=tei_complaint)]

    with pytest.raises(ProviderError, match=r"missing field `texts`.*set the rerank api to tei"):
        reranker.rerank(QUERY, DOCUMENTS, top_k=1)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"object": "error"}, "not iterable"),
        ({"results": [{"relevance_score": 0.5}]}, "a result has no 'index' field"),
        ({"results": [{"index": 0}]}, "a result has no 'score' field"),
        ({"results": [{"index": 9, "relevance_score": 0.5}]}, "index 9 is not a position among 4 documents"),
        ({"results": [{"index": True, "relevance_score": 0.5}]}, "index True"),
        ({"results": [{"index": 0, "relevance_score": "high"}]}, "score 'high' is not a number"),
        ([{"index": 0, "score": 1.0}, {"index": 0, "score": 0.5}], "scored the same document twice"),
        ([{"index": 0, "score": 10**400}], "int too large to convert to float"),
    ],
)
def test_unexpected_answers_are_provider_errors(api, tei, answer, problem):
    api.script = [httpx.Response(200, json=answer)]

    with pytest.raises(ProviderError, match="tei reranker") as error:
        tei.rerank(QUERY, DOCUMENTS, top_k=2)
    assert problem in str(error.value)


def test_an_answer_that_is_not_json(api, tei):
    api.script = [httpx.Response(200, text="<html>login</html>")]

    with pytest.raises(ProviderError, match="not JSON; check base_url"):
        tei.rerank(QUERY, DOCUMENTS, top_k=2)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 6) | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(["index", "score", "relevance_score", "results", "data"]), children)
    ),
    max_leaves=12,
)
# Nearly right answers, so that some examples get past the shape checks.
plausible_results = st.lists(
    st.fixed_dictionaries(
        {"index": st.integers(-1, 5), "score": st.floats(allow_nan=True) | st.integers() | st.none()}
    ),
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(
    answer=json_values | plausible_results | st.builds(dict, results=plausible_results),
    top_k=st.integers(0, 6),
)
def test_any_answer_gives_valid_results_or_a_provider_error(answer, top_k):
    # json.dumps, unlike httpx, writes NaN, as some Python servers do.
    content = json.dumps(answer).encode()
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=content))
    reranker = JinaCompatibleReranker(base_url=TEI_URL, api="tei", transport=transport)

    try:
        results = reranker.rerank(QUERY, DOCUMENTS, top_k=top_k)
    except ProviderError:
        return
    indexes = [r.index for r in results]
    assert len(results) <= top_k
    assert len(set(indexes)) == len(indexes)
    assert all(0 <= i < len(DOCUMENTS) for i in indexes)
    assert all(isinstance(r.score, float) for r in results)


@pytest.mark.parametrize("base_url", ["localhost:8080", "api.jina.ai/v1", "ftp://host/v1"])
def test_base_url_needs_a_scheme(base_url):
    with pytest.raises(ProviderError, match="must start with http:// or https://"):
        JinaCompatibleReranker("k", base_url=base_url)


def test_jina_itself_needs_a_key():
    with pytest.raises(ProviderError, match=r"no API key; set JINA_API_KEY"):
        JinaCompatibleReranker("")


def test_tei_needs_its_own_server_address():
    with pytest.raises(ProviderError, match="set base_url to your tei server"):
        JinaCompatibleReranker("k", api="tei")


def test_unknown_api_lists_the_choices():
    with pytest.raises(ProviderError, match="unknown rerank api 'cohere'; choose one of: jina, tei"):
        JinaCompatibleReranker("k", api="cohere")
