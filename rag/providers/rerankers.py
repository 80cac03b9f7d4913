"""Rerankers: reordering search candidates by how well each answers the query.

``make_reranker`` builds one from plain settings, ``configured_reranker`` from the
config's ``reranker`` section. Importing this module is cheap: the local reranker
imports ONNX Runtime (or torch) only when it first reranks something, and the HTTP
reranker (httpx: ~0.3 s of every search process's start) only when one is made; its
names are still importable from here.
"""

import os
from typing import Any

from rag.config import RerankerConfig
from rag.errors import ProviderError
from rag.providers.factory import _given
from rag.providers.rerank_base import NoReranker, Reranker, RerankResult, best_first
from rag.providers.rerank_local import LOCAL_RERANK_MODEL, LocalReranker

_HTTP_NAMES = ("JINA_RERANK_MODEL", "JINA_RERANK_URL", "RERANK_APIS", "JinaCompatibleReranker", "RerankApi")

RERANK_PROVIDERS = ("none", "jina", "local")

__all__ = [  # (and the HTTP reranker's names, _HTTP_NAMES)
    "LOCAL_RERANK_MODEL",
    "RERANK_PROVIDERS",
    "LocalReranker",
    "NoReranker",
    "RerankResult",
    "Reranker",
    "best_first",
    "configured_reranker",
    "make_reranker",
]


def __getattr__(name: str) -> Any:
    """The HTTP reranker's names, imported on first use."""
    if name in _HTTP_NAMES:
        from rag.providers import rerank_http

        return getattr(rerank_http, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_reranker(
    provider: str,
    *,
    model: str | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    api: str | None = None,
    device: str | None = None,
    batch_size: int | None = None,
    max_length: int | None = None,
    timeout: float | None = None,
) -> Reranker:
    """The reranker for ``provider``; settings left as None take the provider's default.

    ``jina`` with a ``base_url`` is any compatible server: Cohere, Infinity, vLLM
    (``api`` jina, the default) or Hugging Face TEI (``api`` tei). Without ``api_key``,
    Jina's own URL reads JINA_API_KEY; another server gets no key unless given one,
    so a Jina key is never sent elsewhere. Settings a provider has no use for are ignored.
    """
    name = provider.strip().lower()
    if name == "none":
        return NoReranker()
    if name == "local":
        return LocalReranker(
            **_given(model=model, device=device, batch_size=batch_size, max_length=max_length)
        )
    if name == "jina":
        from rag.providers._http import DEFAULT_RETRY, RetryPolicy
        from rag.providers.rerank_http import JINA_RERANK_URL, JinaCompatibleReranker

        url = (base_url or JINA_RERANK_URL).strip().rstrip("/")
        key = api_key
        if key is None:
            key = os.environ.get("JINA_API_KEY", "") if url == JINA_RERANK_URL else ""
        retry = RetryPolicy(deadline=timeout) if timeout is not None else DEFAULT_RETRY
        return JinaCompatibleReranker(
            key, **_given(model=model, base_url=url, api=api, batch_size=batch_size), retry=retry)
    choices = ", ".join(RERANK_PROVIDERS)
    raise ProviderError(f"unknown reranker provider '{provider}'; choose one of: {choices}")


def configured_reranker(config: RerankerConfig) -> Reranker:
    """The reranker the config's ``reranker`` section describes."""
    if config.provider == "jina":
        jina = config.jina
        key = jina.api_key.get_secret_value() if jina.api_key else None
        return make_reranker("jina", model=jina.model, api_key=key, base_url=jina.base_url, api=jina.api,
                             timeout=jina.timeout)
    if config.provider == "local":
        return make_reranker("local", model=config.local.model, device=config.local.device)
    return make_reranker("none")
