"""Embedding providers: turning chunks and queries into vectors.

``make_embedder`` builds one from plain settings. Importing this package is cheap:
the local provider imports ONNX Runtime (or, for a model it cannot export,
torch) only when it first embeds something, and the
hosted ones (``rag.providers.jina``, ``rag.providers.openai``, which need httpx)
are imported when one is made.
"""

from rag.errors import ProviderError
from rag.providers.base import Embedder, NoneEmbedder, ProgressCallback
from rag.providers.factory import (
    PROVIDERS,
    configured_embedder,
    make_embedder,
    model_languages,
    vector_literal,
)
from rag.providers.local import LocalEmbedder

__all__ = [
    "PROVIDERS",
    "Embedder",
    "LocalEmbedder",
    "NoneEmbedder",
    "ProgressCallback",
    "ProviderError",
    "configured_embedder",
    "make_embedder",
    "model_languages",
    "vector_literal",
]
