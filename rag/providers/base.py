"""What every embedding provider is: the Embedder protocol, its error, and the no-op provider."""

from collections.abc import Callable
from typing import Protocol

from rag.errors import ProviderError

ProgressCallback = Callable[[int], None]
"""Called after each batch with the number of texts that batch embedded."""


class Embedder(Protocol):
    """Turns texts into vectors; one instance is one model at one dimension size."""

    @property
    def model_id(self) -> str:
        """Stable id stored with each vector, e.g. ``jina:jina-embeddings-v3@1024``."""
        ...

    @property
    def dimensions(self) -> int:
        """Length of every vector; 0 means no vectors at all (keyword-only index)."""
        ...

    def embed_documents(
        self, texts: list[str], progress: ProgressCallback | None = None
    ) -> list[list[float]]:
        """One vector per text, in order; ``progress`` is told as each batch finishes."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search query (some models embed queries differently)."""
        ...


class NoneEmbedder:
    """Keyword-only indexing: no vectors. Callers check ``dimensions == 0`` and skip embedding."""

    model_id = "none"
    dimensions = 0

    def embed_documents(
        self, texts: list[str], progress: ProgressCallback | None = None
    ) -> list[list[float]]:
        raise self._unavailable()

    def embed_query(self, text: str) -> list[float]:
        raise self._unavailable()

    @staticmethod
    def _unavailable() -> ProviderError:
        return ProviderError(
            "no embedding provider is configured (provider: none), so only keyword search "
            "is available; set an embedding provider (local, jina or openai) for semantic search"
        )

    def __repr__(self) -> str:
        return "NoneEmbedder()"
