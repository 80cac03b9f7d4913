"""Building rerankers from plain settings, the no-op reranker, and ranking helpers."""

import math
import subprocess
import sys

import pytest

from rag.errors import ProviderError
from rag.providers.rerankers import (
    JinaCompatibleReranker,
    LocalReranker,
    NoReranker,
    Reranker,
    RerankResult,
    best_first,
    make_reranker,
)


def authorization(reranker: Reranker) -> str | None:
    assert isinstance(reranker, JinaCompatibleReranker)
    return reranker._api._client.headers.get("Authorization")


def test_each_provider_by_name():
    assert isinstance(make_reranker("none"), NoReranker)
    assert isinstance(make_reranker("Jina", api_key="k"), JinaCompatibleReranker)
    assert isinstance(make_reranker("local"), LocalReranker)


def test_unset_settings_keep_provider_defaults():
    assert make_reranker("none").name == "none"
    assert make_reranker("jina", api_key="k").name == "jina:jina-reranker-v2-base-multilingual"
    assert make_reranker("local").name == "local:cross-encoder/ms-marco-MiniLM-L-6-v2"


def test_settings_are_passed_on():
    local = make_reranker("local", model="BAAI/bge-reranker-base", device="cpu", batch_size=8, max_length=256)
    tei = make_reranker("jina", base_url="http://localhost:8080/", api="tei", model="bge-reranker-base")

    assert local.name == "local:BAAI/bge-reranker-base"
    assert isinstance(local, LocalReranker) and local._batch_size == 8 and local._max_length == 256
    assert tei.name == "tei:bge-reranker-base"
    assert isinstance(tei, JinaCompatibleReranker) and tei._url == "http://localhost:8080/rerank"


def test_jina_key_comes_from_the_environment_for_jina_only(monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", "from-env")

    assert authorization(make_reranker("jina")) == "Bearer from-env"
    assert authorization(make_reranker("jina", base_url="https://api.jina.ai/v1/")) == "Bearer from-env"
    # A self-hosted server is not sent the Jina key; it gets one only when given one.
    assert authorization(make_reranker("jina", base_url="http://localhost:7997")) is None
    assert authorization(make_reranker("jina", base_url="http://h:7997", api_key="own")) == "Bearer own"


def test_jina_without_a_key(monkeypatch):
    monkeypatch.delenv("JINA_API_KEY", raising=False)

    with pytest.raises(ProviderError, match="JINA_API_KEY"):
        make_reranker("jina")


def test_unknown_provider_lists_the_choices():
    with pytest.raises(ProviderError, match="'cohere'; choose one of: none, jina, local"):
        make_reranker("cohere")


def test_no_reranker_keeps_the_given_order():
    reranker = NoReranker()

    assert reranker.rerank("q", ["a", "b", "c"], top_k=2) == [RerankResult(0, 0.0), RerankResult(1, 0.0)]
    assert [r.index for r in reranker.rerank("q", ["a", "b", "c"], top_k=10)] == [0, 1, 2]
    assert reranker.rerank("q", [], top_k=10) == []
    assert reranker.rerank("q", ["a"], top_k=0) == []


def test_best_first_breaks_ties_by_position_and_puts_nan_last():
    scores = [(0, 0.5), (1, math.nan), (2, 0.9), (3, 0.5)]

    assert [r.index for r in best_first(scores, 10)] == [2, 0, 3, 1]
    assert best_first(scores, 1) == [RerankResult(2, 0.9)]
    assert best_first(scores, 0) == []


def test_importing_rerankers_does_not_import_torch():
    heavy = ("torch", "sentence_transformers", "transformers", "numpy", "huggingface_hub")
    code = (
        "import sys, rag.providers.rerankers; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))"
    )

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert result.stdout.strip() == "[]"
