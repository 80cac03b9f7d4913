"""Stand-ins for models in database tests (the real providers are tested in tests/providers)."""

import hashlib
import math
from typing import Any


class HashEmbedder:
    """Deterministic unit vectors from a text's hash: equal texts, equal vectors."""

    def __init__(self, dimensions: int = 8, name: str = "test") -> None:
        self.dimensions = dimensions
        self.model_id = f"{name}@{dimensions}"
        self.embedded_texts: list[str] = []

    def embed_documents(self, texts: list[str], progress: Any = None) -> list[list[float]]:
        self.embedded_texts.extend(texts)
        if progress:
            progress(len(texts))
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        vector = [b - 127.5 for b in (digest * (1 + self.dimensions // 32))[: self.dimensions]]
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector]
