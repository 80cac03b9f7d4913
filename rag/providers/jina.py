"""Jina AI's hosted embeddings (jina-embeddings-v3 and later)."""

from typing import Any

from rag.providers.remote import Purpose, RemoteEmbedder

_TASKS = {Purpose.DOCUMENT: "retrieval.passage", Purpose.QUERY: "retrieval.query"}


class JinaEmbedder(RemoteEmbedder):
    provider = "jina"
    api_key_env = "JINA_API_KEY"
    default_model = "jina-embeddings-v3"
    default_base_url = "https://api.jina.ai/v1"
    default_batch_size = 64
    native_dimensions = {  # noqa: RUF012 (read-only table)
        "jina-embeddings-v3": 1024,
        "jina-embeddings-v4": 2048,
        "jina-clip-v2": 1024,
    }
    missing_key_advice = (
        "set JINA_API_KEY (free keys at https://jina.ai/embeddings) or use the local embedding provider"
    )

    def request_body(self, texts: list[str], purpose: Purpose) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "task": _TASKS[purpose],
            "late_chunking": False,
            # Drop the tail of an over-long chunk instead of failing its whole batch.
            "truncate": True,
            "input": texts,
        }
        if self._dimensions is not None:  # unknown until probed for an unlisted model
            body["dimensions"] = self._dimensions
        return body
