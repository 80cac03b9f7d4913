"""Reranking through an HTTP ``/rerank`` API: Jina's, or a compatible server.

Two request shapes exist, chosen with ``api``:

- ``jina``: ``{model, query, documents, top_n, return_documents}`` answered by
  ``{results: [{index, relevance_score}]}``. Jina, Cohere (v1 and v2), Infinity and
  vLLM all speak it.
- ``tei``: Hugging Face text-embeddings-inference, ``{query, texts, truncate}``
  answered by a bare list ``[{index, score}]``. TEI serves one model, so none is sent.

Either answer shape is understood whatever was asked. Retries, backoff and the
wording of HTTP errors are JsonApi's.
"""

import logging
import time
from collections.abc import Callable
from typing import Any, ClassVar, Literal, get_args

import httpx

from rag.errors import ProviderError
from rag.providers._http import DEFAULT_RETRY, JsonApi, RetryPolicy
from rag.providers.rerank_base import RerankResult, best_first

RerankApi = Literal["jina", "tei"]
RERANK_APIS: tuple[str, ...] = get_args(RerankApi)
JINA_RERANK_URL = "https://api.jina.ai/v1"
JINA_RERANK_MODEL = "jina-reranker-v2-base-multilingual"


class JinaCompatibleReranker:
    """Reranks with Jina's hosted API, or any server answering the same ``/rerank`` request.

    An API key is required for Jina's own URL and optional elsewhere. Documents go in
    requests of at most ``batch_size`` (Jina/Cohere: 1000; TEI refuses more than 32 by
    default, its ``--max-client-batch-size``); scores from all requests are merged.
    """

    default_batch_sizes: ClassVar[dict[str, int]] = {"jina": 1000, "tei": 32}

    def __init__(
        self,
        api_key: str = "",
        model: str = JINA_RERANK_MODEL,
        base_url: str = JINA_RERANK_URL,
        transport: httpx.BaseTransport | None = None,
        *,
        api: str = "jina",
        batch_size: int | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if api not in RERANK_APIS:
            raise ProviderError(f"unknown rerank api '{api}'; choose one of: {', '.join(RERANK_APIS)}")
        base_url = base_url.strip().rstrip("/")
        if not base_url.startswith(("http://", "https://")):
            raise ProviderError(
                f"{api} reranker: base_url '{base_url}' must start with http:// or https://, "
                "e.g. http://localhost:8080 for a server on this machine"
            )
        hosted = base_url == JINA_RERANK_URL
        if hosted and api != "jina":
            raise ProviderError(f"{api} reranker: set base_url to your {api} server's address")
        if hosted and not api_key:
            raise ProviderError(
                "jina reranker: no API key; set JINA_API_KEY (free keys at https://jina.ai/reranker) "
                "or choose the local reranker, or none"
            )
        self.model = model
        self.api = api
        self._batch_size = batch_size or self.default_batch_sizes[api]
        if self._batch_size <= 0:
            raise ProviderError(f"{api} reranker: batch size must be positive, not {self._batch_size}")
        self._url = f"{base_url}/rerank"
        self._api = JsonApi(
            provider=f"{api} reranker",
            base_url=base_url,
            api_key=api_key,
            # Only Jina's own URL falls back to the environment (see make_reranker).
            api_key_env="JINA_API_KEY" if hosted else "reranker.jina.apiKey to a ${VAR} holding the key",
            transport=transport,
            retry=retry,
            sleep=sleep,
            # A search waits for the answer; if none comes, its one warning line says why.
            retry_log_level=logging.INFO,
        )

    @property
    def name(self) -> str:
        return f"{self.api}:{self.model}"

    def rerank(self, query: str, documents: list[str], top_k: int) -> list[RerankResult]:
        if not documents or top_k <= 0:
            return []
        scores: list[tuple[int, float]] = []
        for start in range(0, len(documents), self._batch_size):
            batch = documents[start : start + self._batch_size]
            answer = self._post(self._request_body(query, batch, top_k))
            scores.extend((start + index, score) for index, score in self._scores_in(answer, len(batch)))
        return best_first(scores, top_k)

    def close(self) -> None:
        self._api.close()

    def __repr__(self) -> str:
        return f"JinaCompatibleReranker(api={self.api!r}, model={self.model!r}, url={self._url!r})"

    def _request_body(self, query: str, documents: list[str], top_k: int) -> dict[str, Any]:
        if self.api == "tei":
            # Without truncate, TEI rejects a text longer than the model's limit.
            return {"query": query, "texts": documents, "truncate": True, "return_text": False}
        return {
            "model": self.model,
            "query": query,
            "documents": documents,
            "top_n": min(top_k, len(documents)),
            "return_documents": False,
        }

    def _post(self, body: dict[str, Any]) -> Any:
        try:
            return self._api.post("/rerank", body)
        except ProviderError as error:
            if self.api == "jina" and "texts" in str(error):
                # TEI's complaint about the missing field it expects.
                raise ProviderError(
                    f"{error}; this looks like a text-embeddings-inference server: set the rerank api to tei"
                ) from None
            raise
        except httpx.HTTPError as exc:  # the errors JsonApi does not retry, e.g. a bad proxy
            raise ProviderError(
                f"{self.api} reranker: cannot send the request to {self._url} ({type(exc).__name__}: {exc})"
            ) from None

    def _scores_in(self, answer: Any, count: int) -> list[tuple[int, float]]:
        """(index, score) pairs from either answer shape, each index within the batch."""
        items: Any = answer.get("results", answer.get("data")) if isinstance(answer, dict) else answer
        pairs: list[tuple[int, float]] = []
        try:
            for item in items:
                index = item["index"]
                score = item["relevance_score"] if "relevance_score" in item else item["score"]
                if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
                    raise ValueError(f"index {index!r} is not a position among {count} documents")
                if isinstance(score, bool) or not isinstance(score, int | float):
                    raise ValueError(f"score {score!r} is not a number")
                pairs.append((index, float(score)))
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            problem = f"a result has no {exc} field" if isinstance(exc, KeyError) else str(exc)
            raise ProviderError(
                f"{self.api} reranker: unexpected answer from {self._url} ({problem}); expected "
                "results[] of {index, relevance_score} or a list of {index, score}; check that "
                "base_url points at a rerank API"
            ) from None
        if len({index for index, _ in pairs}) != len(pairs):
            raise ProviderError(f"{self.api} reranker: {self._url} scored the same document twice")
        return pairs
