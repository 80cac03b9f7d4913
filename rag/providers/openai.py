"""OpenAI's embeddings API and the servers that copy it (Ollama, LM Studio, vLLM, OpenRouter).

With a ``base_url`` other than OpenAI's, the API key is optional.
"""

from typing import Any

from rag.providers.remote import Purpose, RemoteEmbedder


class OpenAIEmbedder(RemoteEmbedder):
    provider = "openai"
    api_key_env = "OPENAI_API_KEY"
    default_model = "text-embedding-3-small"
    default_base_url = "https://api.openai.com/v1"
    default_batch_size = 128
    native_dimensions = {  # noqa: RUF012 (read-only table)
        "text-embedding-3-small": 1536,
        "text-embedding-3-large": 3072,
        "text-embedding-ada-002": 1536,
    }
    missing_key_advice = (
        "set OPENAI_API_KEY, or set base_url to an OpenAI-compatible server "
        "that needs none (e.g. Ollama at http://localhost:11434/v1)"
    )

    def request_body(self, texts: list[str], purpose: Purpose) -> dict[str, Any]:
        # OpenAI-style APIs embed queries and documents alike.
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        # Only ask for a size the model would not produce anyway: older models
        # (ada-002) reject the parameter even when it matches.
        wanted = self._configured_dimensions
        if wanted is not None and wanted != self.native_dimensions.get(self.model):
            body["dimensions"] = wanted
        return body
