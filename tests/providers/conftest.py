"""A stand-in for Jina's and OpenAI's /embeddings endpoints, served through httpx.MockTransport."""

import json
import threading
import zlib
from collections.abc import Callable
from typing import Any

import httpx
import pytest


class FakeEmbeddingsApi:
    """Answers like the real APIs: data[] in reverse index order (clients must sort).

    ``script`` holds responses (or exceptions) to give, in order, before answering normally.
    """

    def __init__(self, dimensions: int = 8) -> None:
        self.dimensions = dimensions
        self.requests: list[httpx.Request] = []
        self.script: list[httpx.Response | Exception] = []
        self.before_answer: Callable[[dict[str, Any]], None] | None = None
        self._lock = threading.Lock()

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]

    @staticmethod
    def vector(text: str, dimensions: int) -> list[float]:
        """A vector that identifies its text, so tests can check which text it belongs to."""
        return [float(zlib.crc32(text.encode()))] + [0.5] * (dimensions - 1)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.requests.append(request)
            scripted = self.script.pop(0) if self.script else None
        if isinstance(scripted, Exception):
            raise scripted
        if scripted is not None:
            return scripted
        body = json.loads(request.content)
        if self.before_answer is not None:
            self.before_answer(body)
        size = body.get("dimensions", self.dimensions)
        data = [
            {"object": "embedding", "index": index, "embedding": self.vector(text, size)}
            for index, text in enumerate(body["input"])
        ]
        return httpx.Response(
            200,
            json={
                "object": "list",
                "model": body["model"],
                "data": data[::-1],
                "usage": {"prompt_tokens": 10, "total_tokens": 10},
            },
        )


@pytest.fixture
def api() -> FakeEmbeddingsApi:
    return FakeEmbeddingsApi()


@pytest.fixture
def sleeps() -> list[float]:
    """Pass ``sleep=sleeps.append`` so retries are recorded instead of slept."""
    return []


@pytest.fixture(scope="session")
def models_home(tmp_path_factory: pytest.TempPathFactory):
    """One RAG_HOME for the local models' exported ONNX files, so the suite exports each model once."""
    return tmp_path_factory.mktemp("models-home")


@pytest.fixture(autouse=True)
def _shared_models_home(monkeypatch: pytest.MonkeyPatch, models_home) -> None:
    monkeypatch.setenv("RAG_HOME", str(models_home))
