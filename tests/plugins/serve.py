"""A running ``rag serve`` for tests: uvicorn on a free port of 127.0.0.1, in a thread, over
a test database holding two sources, alpha and beta, and three tokens.

``served`` is the fixture (this module is a plugin of tests/conftest.py): it yields a
``Served`` with the base URL, the tokens' secrets and an httpx client per token. The LLM is
``plugins.llm``'s fake server.
"""

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakes import HashEmbedder

from rag import db
from rag.config import LoadedConfig, RagConfig
from rag.service import RagService, folder_source

SECRETS = {
    "boss": "admin-secret-0123456789",
    "alice": "alice-secret-0123456789",  # reads alpha only
    "all": "reader-secret-0123456789",  # reads every source
    "early": "early-secret-0123456789",  # reads alpha and gamma, which is not indexed yet
}
TOKENS = [
    {"name": "boss", "token": SECRETS["boss"], "scope": "admin"},
    {"name": "alice", "token": SECRETS["alice"], "scope": "read", "sources": ["alpha"]},
    {"name": "all", "token": SECRETS["all"], "scope": "read"},
    {"name": "early", "token": SECRETS["early"], "scope": "read", "sources": ["alpha", "gamma"]},
]
ALPHA_PY = "def alpha_secret_handler(x):\n    \"\"\"Shared words about the handler.\"\"\"\n    return x\n"
BETA_PY = "def beta_secret_handler(x):\n    \"\"\"Shared words about the handler.\"\"\"\n    return x\n"
BETA_MD = "# Beta guide\n\n## Handler\n\nShared words about the beta secret handler.\n"


@dataclass
class Served:
    url: str
    app: Any
    service: RagService
    clients: dict[str, httpx.Client] = field(default_factory=dict)

    def client(self, token: str | None) -> httpx.Client:
        key = token or ""
        if key not in self.clients:
            headers = {"Authorization": f"Bearer {SECRETS[token]}"} if token else {}
            self.clients[key] = httpx.Client(base_url=self.url, headers=headers, timeout=30)
        return self.clients[key]

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Running:
    """uvicorn serving ``app`` on 127.0.0.1 in a thread until ``stop``."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_config=None,
                                                    access_log=False, lifespan="on",
                                                    timeout_graceful_shutdown=5))
        self.thread = threading.Thread(target=self.server.run, name="test-serve", daemon=True)

    def start(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("rag serve did not start")
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


def index_two_sources(service: RagService, root: Path) -> None:
    for name, files in (("alpha", {"alpha.py": ALPHA_PY}), ("beta", {"beta.py": BETA_PY, "guide.md": BETA_MD})):
        folder = root / name
        folder.mkdir()
        for file, text in files.items():
            (folder / file).write_text(text)
        summary = service.index(folder_source(folder, name))
        assert summary.status == "succeeded", summary


def serve_config(llm: Any = None, **serve: Any) -> LoadedConfig:
    data: dict[str, Any] = {"serve": {"watch": False, **serve}}
    if llm is not None:
        data["llm"] = llm
    return LoadedConfig(RagConfig.model_validate(data), None, "test")


@pytest.fixture
def serve_app(rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              fake_llm: Any) -> Iterator[Any]:
    """A factory: ``serve_app(tokens=True, **serve settings)`` starts a server over the two sources."""
    from rag.serve.access import TOKENS_VARIABLE, load_tokens
    from rag.serve.app import create_app

    made: list[tuple[Running, Served]] = []
    indexed = [False]

    def make(tokens: bool = True, **settings: Any) -> Served:
        loaded = serve_config(fake_llm.config(), **settings)
        service = RagService(loaded=loaded, embedder=HashEmbedder(8))
        service._target = rag_db
        if not indexed[0]:
            index_two_sources(service, tmp_path)
            indexed[0] = True
        monkeypatch.setenv(TOKENS_VARIABLE, json.dumps(TOKENS) if tokens else "")
        app = create_app(service, load_tokens(loaded.config.serve), loaded.config.serve)
        running = Running(app)
        served = Served(running.start(), app, service)
        made.append((running, served))
        return served

    yield make
    for running, served in made:
        served.close()
        running.stop()
        served.service.close()
