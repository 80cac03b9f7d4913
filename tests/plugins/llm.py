"""A fake OpenAI-compatible chat server on 127.0.0.1, for every test of what uses an LLM.

Real HTTP, so the client's timeouts, retries and streaming run as they would against
llama.cpp or a cloud API. ``POST /v1/chat/completions`` answers with one JSON object, or
with server-sent events when the body says ``stream: true`` (one event per word, a
usage event when ``stream_options.include_usage`` asks for it, then ``[DONE]``).

What it answers is ``reply(messages)``, a function a test may replace (the default
echoes the last message). ``script`` holds what the next requests get instead, in
order: ``Fail(status, ...)`` (an error, optionally with ``Retry-After``, optionally
echoing the request's Authorization header as careless servers do), ``Hang(seconds)``
(answer nothing for that long: a client timeout), ``Malformed(text)`` (a 200 that is not
JSON, or a stream event that is not), ``Endless(...)`` (a stream that never ends by itself:
a piece, or only a keep-alive comment, every ``interval`` until the client leaves or
``seconds`` pass). Built with ``api_key``, it answers 401 to any other
key, echoing the header it got, so tests can check the client never repeats the key.

``fake_llm`` is the fixture (this module is a plugin of tests/conftest.py); tests import
``FakeLLM``, ``Fail``, ``Hang``, ``Malformed`` and ``FAKE_KEY`` from ``plugins.llm``.
"""

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from rag.config import LlmConfig

FAKE_KEY = "sk-fake-llm-key-0123456789abcdef"
FAKE_MODEL = "fake-chat-1"

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class Fail:
    status: int
    message: str = "scripted failure"
    retry_after: str | None = None
    echo_authorization: bool = False  # put the request's Authorization header in the error text


@dataclass(frozen=True)
class Hang:
    seconds: float


@dataclass(frozen=True)
class Malformed:
    text: str = "<html>not json</html>"


@dataclass(frozen=True)
class Endless:
    interval: float = 0.005
    seconds: float = 8.0  # the fake's own bound: a client that never stops fails, not hangs
    piece: str = " more"
    comments: bool = False  # ": keep-alive" lines only, never an event


Scripted = Fail | Hang | Malformed | Endless


def echo_last(messages: Messages) -> str:
    return f"echo: {messages[-1]['content']}"


class FakeLLM:
    def __init__(self, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.reply: Callable[[Messages], str] = echo_last
        self.script: list[Scripted] = []
        self.requests: list[dict[str, Any]] = []  # request bodies, in arrival order
        self.word_delay = 0.0  # seconds between two streamed words (a slow model)
        self.streams = {"finished": 0, "abandoned": 0}  # streamed answers sent whole / left by the client
        self.authorizations: list[str | None] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        # A short poll interval: shutdown waits for it, once per test.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def config(self, **settings: Any) -> LlmConfig:
        """An ``llm`` section pointing at this server; ``settings`` override (snake_case)."""
        values: dict[str, Any] = {"provider": "openai", "base_url": self.base_url, "model": FAKE_MODEL,
                                  "api_key": self.api_key, "timeout": 10.0}
        return LlmConfig.model_validate({**values, **settings})

    def start(self) -> "FakeLLM":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases hanging handlers
        self._server.shutdown()
        self._server.server_close()

    def next_action(self, body: dict[str, Any], authorization: str | None) -> Scripted | None:
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
            return self.script.pop(0) if self.script else None

    def hang(self, seconds: float) -> None:
        self._stopping.wait(seconds)


def _handler(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            authorization = self.headers.get("Authorization")
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._json(404, {"error": {"message": f"no route {self.path}"}})
            action = fake.next_action(body, authorization)
            if fake.api_key is not None and authorization != f"Bearer {fake.api_key}":
                return self._json(401, {"error": {"message": f"Incorrect API key provided: {authorization}"}})
            if isinstance(action, Fail):
                return self._fail(action, authorization)
            if isinstance(action, Hang):
                fake.hang(action.seconds)
                self.close_connection = True
                return None
            if isinstance(action, Malformed) and not body.get("stream"):
                return self._send(200, action.text.encode(), "text/html")
            if body.get("stream"):
                return self._stream(body, action)
            return self._json(200, _completion(body, fake.reply(body["messages"])))

        def _fail(self, failure: Fail, authorization: str | None) -> None:
            message = failure.message
            if failure.echo_authorization:
                message = f"{message}; request had Authorization: {authorization}"
            headers = {"Retry-After": failure.retry_after} if failure.retry_after else {}
            self._json(failure.status, {"error": {"message": message, "type": "server_error"}}, headers)

        def _stream(self, body: dict[str, Any], action: Scripted | None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            if isinstance(action, Malformed):
                self._event(action.text)
                return
            try:
                if isinstance(action, Endless):
                    self._endless(action)
                    return
                for event in _stream_events(body, fake.reply(body["messages"])):
                    self._event(event)
                    if fake.word_delay:
                        fake.hang(fake.word_delay)
            except OSError:  # the client closed the connection (BrokenPipeError, ConnectionResetError)
                with fake._lock:
                    fake.streams["abandoned"] += 1
                return
            with fake._lock:
                fake.streams["finished"] += 1

        def _endless(self, endless: Endless) -> None:
            event = json.dumps({"choices": [{"index": 0, "delta": {"content": endless.piece}}]})
            deadline = time.monotonic() + endless.seconds
            while time.monotonic() < deadline and not fake._stopping.is_set():
                if endless.comments:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                else:
                    self._event(event)
                time.sleep(endless.interval)

        def _event(self, data: str) -> None:
            self.wfile.write(f"data: {data}\n\n".encode())
            self.wfile.flush()

        def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            self._send(status, json.dumps(payload).encode(), "application/json", headers)

        def _send(self, status: int, data: bytes, content_type: str,
                  headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _tokens(text: str) -> int:
    return len(text.split())


def _prompt_tokens(body: dict[str, Any]) -> int:
    return sum(_tokens(m["content"]) for m in body["messages"])


def _completion(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": body.get("model"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": _prompt_tokens(body), "completion_tokens": _tokens(text),
                  "total_tokens": _prompt_tokens(body) + _tokens(text)},
    }


def _stream_events(body: dict[str, Any], text: str) -> Iterator[str]:
    words = text.split(" ")
    pieces = [word if i == 0 else f" {word}" for i, word in enumerate(words)]
    yield json.dumps({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    for piece in pieces:
        yield json.dumps({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
    yield json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": _prompt_tokens(body), "completion_tokens": _tokens(text)}
        yield json.dumps({"choices": [], "usage": usage})
    yield "[DONE]"


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A fake chat server on 127.0.0.1 that wants ``FAKE_KEY``."""
    server = FakeLLM(api_key=FAKE_KEY).start()
    try:
        yield server
    finally:
        server.stop()
