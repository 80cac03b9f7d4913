"""What Jina and OpenAI-style embedding APIs have in common.

Owns splitting texts into request-sized batches, sending a few of them at once
while keeping results in order, reading the ``data[i].embedding`` answer and
checking every vector has the expected size and finite numbers. Subclasses only say what a
request body looks like.
"""

import math
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from enum import Enum
from typing import Any, ClassVar

import httpx

from rag.errors import ProviderError
from rag.providers._http import DEFAULT_RETRY, JsonApi, RetryPolicy
from rag.providers.base import ProgressCallback

# Code tokenizes densely: about three characters per token errs on the safe side.
_CHARS_PER_TOKEN = 3


class Purpose(Enum):
    DOCUMENT = "document"
    QUERY = "query"


def plan_batches(texts: list[str], max_items: int, max_tokens: int) -> list[list[str]]:
    """Consecutive batches of at most ``max_items`` texts and about ``max_tokens`` tokens.

    A text bigger than the whole budget still gets a batch of its own: the server,
    not us, decides whether it is too long.
    """
    batches: list[list[str]] = []
    current: list[str] = []
    current_tokens = 0
    for text in texts:
        tokens = len(text) // _CHARS_PER_TOKEN + 1
        if current and (len(current) == max_items or current_tokens + tokens > max_tokens):
            batches.append(current)
            current, current_tokens = [], 0
        current.append(text)
        current_tokens += tokens
    if current:
        batches.append(current)
    return batches


class RemoteEmbedder(ABC):
    """An embedder behind an HTTP ``/embeddings`` endpoint; subclasses build the request.

    Left unset, ``dimensions`` is the model's native size when known, else asked
    from the server once (a one-text request) when first needed.
    """

    provider: ClassVar[str]
    api_key_env: ClassVar[str]
    default_model: ClassVar[str]
    default_base_url: ClassVar[str]
    default_batch_size: ClassVar[int]
    native_dimensions: ClassVar[dict[str, int]]
    missing_key_advice: ClassVar[str]  # what to do when the provider's own API gets no key

    def __init__(
        self,
        api_key: str = "",
        model: str | None = None,
        dimensions: int | None = None,
        base_url: str | None = None,
        transport: httpx.BaseTransport | None = None,
        *,
        batch_size: int | None = None,
        max_batch_tokens: int = 100_000,
        max_in_flight: int = 4,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = model or self.default_model
        base_url = base_url or self.default_base_url
        if not api_key and base_url.rstrip("/") == self.default_base_url:
            raise ProviderError(f"{self.provider}: no API key; {self.missing_key_advice}")
        if dimensions is not None and dimensions <= 0:
            raise ProviderError(f"{self.provider}: dimensions must be positive, not {dimensions}")
        self._batch_size = batch_size or self.default_batch_size
        if self._batch_size <= 0 or max_in_flight <= 0:
            raise ProviderError(f"{self.provider}: batch size and concurrency must be positive")
        self._configured_dimensions = dimensions
        self._dimensions = dimensions or self.native_dimensions.get(self.model)
        self._dimensions_lock = threading.Lock()
        self._max_batch_tokens = max_batch_tokens
        self._max_in_flight = max_in_flight
        self._api = JsonApi(
            provider=self.provider,
            base_url=base_url,
            api_key=api_key,
            api_key_env=self.api_key_env,
            transport=transport,
            retry=retry,
            sleep=sleep,
        )

    @abstractmethod
    def request_body(self, texts: list[str], purpose: Purpose) -> dict[str, Any]:
        """The JSON body asking for the embeddings of ``texts``."""

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            # Unknown model on an OpenAI-compatible server: ask it once.
            self.embed_query("dimensions probe")
        assert self._dimensions is not None
        return self._dimensions

    @property
    def model_id(self) -> str:
        return f"{self.provider}:{self.model}@{self.dimensions}"

    def embed_documents(
        self, texts: list[str], progress: ProgressCallback | None = None
    ) -> list[list[float]]:
        batches = plan_batches(texts, self._batch_size, self._max_batch_tokens)
        results: list[list[list[float]]] = [[] for _ in batches]
        for index, vectors in self._embed_concurrently(batches):
            results[index] = vectors
            if progress is not None:
                progress(len(vectors))
        return [vector for batch in results for vector in batch]

    def embed_query(self, text: str) -> list[float]:
        return self._embed_batch([text], Purpose.QUERY)[0]

    def close(self) -> None:
        self._api.close()

    def __repr__(self) -> str:
        dimensions = self._dimensions if self._dimensions is not None else "?"
        return f"{type(self).__name__}(model={self.model!r}, dimensions={dimensions})"

    def _embed_concurrently(self, batches: list[list[str]]) -> Iterator[tuple[int, list[list[float]]]]:
        """(batch index, vectors) as batches finish; on failure, unsent batches are dropped."""
        if len(batches) <= 1 or self._max_in_flight == 1:
            for index, batch in enumerate(batches):
                yield index, self._embed_batch(batch, Purpose.DOCUMENT)
            return
        pool = ThreadPoolExecutor(
            max_workers=min(self._max_in_flight, len(batches)),
            thread_name_prefix=f"embed-{self.provider}",
        )
        try:
            futures: dict[Future[list[list[float]]], int] = {
                pool.submit(self._embed_batch, batch, Purpose.DOCUMENT): index
                for index, batch in enumerate(batches)
            }
            for future in as_completed(futures):
                yield futures[future], future.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _embed_batch(self, texts: list[str], purpose: Purpose) -> list[list[float]]:
        payload = self._api.post("/embeddings", self.request_body(texts, purpose))
        vectors = self._vectors_in(payload, len(texts))
        for vector in vectors:
            self._check_size(len(vector))
        return vectors

    def _vectors_in(self, payload: Any, expected: int) -> list[list[float]]:
        """``data[i].embedding`` ordered by ``data[i].index``, checked for completeness."""
        try:
            items = sorted(payload["data"], key=lambda item: int(item["index"]))
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (KeyError, TypeError, ValueError):
            raise ProviderError(
                f"{self.provider}: unexpected answer from the embeddings API (no data[].embedding "
                "list of numbers); check base_url points at an OpenAI-compatible /embeddings API"
            ) from None
        if len(vectors) != expected:
            raise ProviderError(f"{self.provider}: asked for {expected} embeddings but got {len(vectors)}")
        if not all(math.isfinite(x) for vector in vectors for x in vector):
            raise ProviderError(
                f"{self.provider}: model '{self.model}' returned a vector holding NaN or infinity; "
                "the server is misbehaving: try again, or use another model or server"
            )
        if not all(any(vector) for vector in vectors):  # no direction: every cosine with it is NaN
            raise ProviderError(
                f"{self.provider}: model '{self.model}' returned an all-zero vector; "
                "the server is misbehaving: try again, or use another model or server"
            )
        return vectors

    def _check_size(self, size: int) -> None:
        with self._dimensions_lock:
            if self._dimensions is None:
                self._dimensions = size
                return
        if size != self._dimensions:
            raise ProviderError(
                f"{self.provider}: model '{self.model}' returned {size}-dimensional vectors but "
                f"{self._dimensions} were expected; set dimensions to {size} or use a model "
                f"that supports {self._dimensions}"
            )
