"""Embedding providers: turning chunks and queries into vectors.

``make_embedder`` builds one from plain settings. Importing this package is cheap:
the local provider imports torch only when it first embeds something.
"""

from rag.errors import ProviderError
from rag.providers.base import Embedder, NoneEmbedder, ProgressCallback
from rag.providers.factory import PROVIDERS, make_embedder
from rag.providers.jina import JinaEmbedder
from rag.providers.local import LocalEmbedder
from rag.providers.openai import OpenAIEmbedder

__all__ = [
    "PROVIDERS",
    "Embedder",
    "JinaEmbedder",
    "LocalEmbedder",
    "NoneEmbedder",
    "OpenAIEmbedder",
    "ProgressCallback",
    "ProviderError",
    "make_embedder",
]
