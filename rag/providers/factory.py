"""Choosing and building an embedder: from plain settings (``make_embedder``) or from the
``embeddings`` section of the config (``configured_embedder``); and the text form in which
vectors go to pgvector."""

import os
from collections.abc import Sequence
from typing import Any

from rag.config import EmbeddingsConfig
from rag.errors import ProviderError
from rag.providers.base import Embedder, NoneEmbedder
from rag.providers.local import LocalEmbedder, is_bundled

PROVIDERS = ("local", "jina", "openai", "none")


def make_embedder(
    provider: str,
    *,
    model: str | None = None,
    dimensions: int | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    batch_size: int | None = None,
    device: str | None = None,
    timeout: float | None = None,
    runtime: str | None = None,
    query_prefix: str | None = None,
    document_prefix: str | None = None,
    precision: str | None = None,
) -> Embedder:
    """The embedder for ``provider``; settings left as None take the provider's default.

    Settings a provider has no use for (a device for Jina, a key for local) are ignored.
    Without ``api_key``, hosted providers read JINA_API_KEY / OPENAI_API_KEY.
    ``timeout`` is a hosted provider's deadline for one request, retries included;
    ``runtime`` the local model's ("auto", or "sentence-transformers" to skip ONNX Runtime);
    ``query_prefix`` / ``document_prefix`` what it puts before every query / document;
    ``precision`` the local model's (fp32, int8 or auto).
    """
    name = provider.strip().lower()
    if name == "none":
        return NoneEmbedder()
    if name == "local":
        if dimensions is not None:
            raise ProviderError("local: dimensions come from the model and cannot be set")
        return LocalEmbedder(**_given(model=model, device=device, batch_size=batch_size, runtime=runtime,
                                      query_prefix=query_prefix, document_prefix=document_prefix,
                                      precision=precision))
    if name not in ("jina", "openai"):
        raise ProviderError(f"unknown embedding provider '{provider}'; choose one of: {', '.join(PROVIDERS)}")
    from rag.providers._http import DEFAULT_RETRY, RetryPolicy
    from rag.providers.jina import JinaEmbedder  # httpx: imported when a hosted provider is used
    from rag.providers.openai import OpenAIEmbedder

    remote = JinaEmbedder if name == "jina" else OpenAIEmbedder
    key = api_key if api_key is not None else os.environ.get(remote.api_key_env, "")
    retry = RetryPolicy(deadline=timeout) if timeout is not None else DEFAULT_RETRY
    return remote(key, model, dimensions, base_url, **_given(batch_size=batch_size), retry=retry)


def configured_embedder(config: EmbeddingsConfig) -> Embedder:
    """The embedder the config's ``embeddings`` section describes."""
    provider = config.provider
    if provider == "local":
        local = config.local
        return make_embedder("local", model=local.model, device=local.device, batch_size=local.batch_size,
                             runtime=local.runtime, query_prefix=local.query_prefix,
                             document_prefix=local.document_prefix, precision=local.precision)
    if provider in ("jina", "openai"):
        remote = config.jina if provider == "jina" else config.openai
        key = remote.api_key.get_secret_value() if remote.api_key else None
        return make_embedder(provider, model=remote.model, dimensions=remote.dimensions,
                             api_key=key, base_url=remote.base_url, timeout=remote.timeout)
    return make_embedder("none")


def model_languages(config: EmbeddingsConfig) -> list[str] | None:
    """The languages the configured embedding model reads (``embeddings.local.languages``); None: any.

    Unset, the bundled all-MiniLM-L6-v2 reads English only; hosted models are multilingual.
    """
    if config.provider != "local":
        return None
    if config.local.languages is not None:
        return config.local.languages
    return ["english"] if is_bundled(config.local.model) else None


def vector_literal(vector: Sequence[float]) -> str:
    """A vector as pgvector's text input, ``[0.1,0.2,...]``, at float4 precision."""
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def _given(**settings: Any) -> dict[str, Any]:
    """The settings that were actually set, so the rest keep the class defaults."""
    return {name: value for name, value in settings.items() if value is not None}
