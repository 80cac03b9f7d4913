"""Building embedders from plain settings, and the keyword-only provider."""

import subprocess
import sys

import pytest

from rag.providers import LocalEmbedder, NoneEmbedder, ProviderError, make_embedder
from rag.providers.jina import JinaEmbedder
from rag.providers.openai import OpenAIEmbedder


def test_each_provider_by_name():
    assert isinstance(make_embedder("local"), LocalEmbedder)
    assert isinstance(make_embedder("Jina", api_key="k"), JinaEmbedder)
    assert isinstance(make_embedder("openai", api_key="k"), OpenAIEmbedder)
    assert isinstance(make_embedder("none"), NoneEmbedder)


def test_unset_settings_keep_provider_defaults():
    assert make_embedder("jina", api_key="k").model_id == "jina:jina-embeddings-v3@1024"
    assert make_embedder("openai", api_key="k").model_id == "openai:text-embedding-3-small@1536"
    assert make_embedder("local").model_id == "local:all-MiniLM-L6-v2@384"


def test_settings_are_passed_on():
    embedder = make_embedder(
        "openai", model="text-embedding-3-large", dimensions=1024, api_key="k", batch_size=16
    )

    assert embedder.model_id == "openai:text-embedding-3-large@1024"


def test_hosted_keys_fall_back_to_the_environment(monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", "from-env")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    assert isinstance(make_embedder("jina"), JinaEmbedder)
    with pytest.raises(ProviderError, match="OPENAI_API_KEY"):
        make_embedder("openai")


def test_unknown_provider_lists_the_choices():
    with pytest.raises(ProviderError, match="'cohere'; choose one of: local, jina, openai, none"):
        make_embedder("cohere")


def test_local_dimensions_cannot_be_set():
    with pytest.raises(ProviderError, match="dimensions come from the model"):
        make_embedder("local", dimensions=768)


def test_none_provider_has_no_vectors():
    embedder = make_embedder("none")

    assert (embedder.model_id, embedder.dimensions) == ("none", 0)
    with pytest.raises(ProviderError, match="only keyword search"):
        embedder.embed_documents(["text"])
    with pytest.raises(ProviderError, match="only keyword search"):
        embedder.embed_query("text")


def test_importing_providers_and_the_indexer_imports_nothing_heavy():
    """`rag index` with nothing to do must start fast: no torch, no httpx, no PDF or Word reader."""
    heavy = ("torch", "sentence_transformers", "transformers", "numpy", "huggingface_hub", "httpx", "pypdf", "docx")
    code = ("import sys, rag.providers, rag.service, rag.cli;"
            f" print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))")

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert result.stdout.strip() == "[]"


def test_the_configured_timeout_is_each_request_deadline() -> None:
    from rag.config import EmbeddingsConfig, RerankerConfig
    from rag.providers import configured_embedder
    from rag.providers.rerankers import configured_reranker

    embedder = configured_embedder(EmbeddingsConfig.model_validate(
        {"provider": "openai", "openai": {"apiKey": "sk-x", "timeout": 7.5}}))
    reranker = configured_reranker(RerankerConfig.model_validate(
        {"provider": "jina", "jina": {"apiKey": "j-x", "timeout": 4}}))
    assert embedder._api._retrying.retry.deadline == 7.5  # type: ignore[attr-defined]
    assert reranker._api._retrying.retry.deadline == 4  # type: ignore[attr-defined]
