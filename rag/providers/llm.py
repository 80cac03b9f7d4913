"""Chatting with an LLM: the ChatModel protocol and its OpenAI-compatible client.

Owns what ``rag ask`` (and contextual chunk text) need from an LLM: a whole answer
(``complete``) or its pieces as they are written (``stream``, server-sent events), from
any server that speaks OpenAI's ``/chat/completions`` (OpenAI, Ollama, LM Studio,
llama.cpp's server, vLLM); many requests a few at a time (``complete_each``); and
building the client from the ``llm`` config section. Retries, the deadline and keeping
the API key out of every message are JsonApi's, as for the embedders.
"""

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from rag.config import LlmConfig
from rag.errors import ProviderError
from rag.providers._http import DEFAULT_RETRY, JsonApi, RetryPolicy

OPENAI_URL = "https://api.openai.com/v1"
_PROVIDER = "llm"
_WRONG_SHAPE = (
    "unexpected answer from the chat API (no choices[0].{part}); "
    "check llm.baseUrl points at an OpenAI-compatible /chat/completions API"
)


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class ChatResult:
    text: str
    prompt_tokens: int | None  # None: the server did not say
    completion_tokens: int | None


class ChatModel(Protocol):
    """One chat model behind one server."""

    @property
    def model_id(self) -> str:
        """Stable id, e.g. ``openai:gemma-3-270m``; a cache key for what the model wrote."""
        ...

    def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> ChatResult:
        """The whole answer to a conversation."""
        ...

    def stream(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> Iterator[str]:
        """The answer in pieces, as the model writes them."""
        ...


class ChatStream(Iterator[str]):
    """An answer's pieces as they arrive; its token counts are known once it is exhausted."""

    def __init__(self, events: Iterator[dict[str, Any]]) -> None:
        self._events = events
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None

    def __next__(self) -> str:
        for event in self._events:
            usage = event.get("usage")
            if isinstance(usage, dict):
                self.prompt_tokens = _count(usage, "prompt_tokens")
                self.completion_tokens = _count(usage, "completion_tokens")
            piece = _delta_text(event)
            if piece:
                return piece
        raise StopIteration

    def close(self) -> None:
        """Stops reading: the response is closed, freeing the connection and the model's work
        (a client of ``rag serve`` that went away)."""
        close = getattr(self._events, "close", None)
        if close is not None:
            close()


class OpenAIChatModel:
    """A chat model behind an OpenAI-compatible ``/chat/completions`` API.

    An API key is required for OpenAI's own URL and optional elsewhere (a local server
    needs none). ``temperature`` 0 keeps answers, and what is cached from them, repeatable.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = OPENAI_URL,
        api_key: str = "",
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.0,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        base_url = base_url.strip().rstrip("/")
        if not model:
            raise ProviderError(f"{_PROVIDER}: no model set; set llm.model to a model {base_url} serves")
        if not base_url.startswith(("http://", "https://")):
            raise ProviderError(
                f"{_PROVIDER}: baseUrl '{base_url}' must start with http:// or https://, "
                "e.g. http://127.0.0.1:8080/v1 for llama.cpp's server on this machine"
            )
        if not api_key and base_url == OPENAI_URL:
            raise ProviderError(
                f"{_PROVIDER}: no API key; set {api_key_env}, or set llm.baseUrl to an "
                "OpenAI-compatible server that needs none (e.g. Ollama at http://localhost:11434/v1)"
            )
        self.model = model
        self.temperature = temperature
        self._api = JsonApi(
            provider=_PROVIDER,
            base_url=base_url,
            api_key=api_key,
            api_key_env=api_key_env,
            transport=transport,
            retry=retry,
            sleep=sleep,
        )

    @property
    def model_id(self) -> str:
        return f"openai:{self.model}"

    def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> ChatResult:
        payload = self._api.post("/chat/completions", self._body(messages, max_tokens, stream=False))
        try:
            text = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ProviderError(f"{_PROVIDER}: {_WRONG_SHAPE.format(part='message.content')}") from None
        if not isinstance(text, str):
            # Some servers send null content when the model wrote nothing (or only a tool call).
            text = ""
        usage = payload.get("usage") if isinstance(payload, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        return ChatResult(text, _count(usage, "prompt_tokens"), _count(usage, "completion_tokens"))

    def stream(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> ChatStream:
        lines = self._api.post_stream("/chat/completions", self._body(messages, max_tokens, stream=True))
        return ChatStream(self._events(lines))

    def close(self) -> None:
        self._api.close()

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r})"

    def _body(
        self, messages: Sequence[ChatMessage], max_tokens: int | None, *, stream: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": self.temperature,
            "stream": stream,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if stream:
            body["stream_options"] = {"include_usage": True}  # the last event then carries the counts
        return body

    def _events(self, lines: Iterator[str]) -> Iterator[dict[str, Any]]:
        """The JSON events of a server-sent event stream, up to ``[DONE]``; closing them closes ``lines``."""
        try:
            yield from self._parsed(lines)
        finally:
            close = getattr(lines, "close", None)
            if close is not None:
                close()

    def _parsed(self, lines: Iterator[str]) -> Iterator[dict[str, Any]]:
        for line in lines:
            if not line.startswith("data:"):
                continue  # blank separators, ": keep-alive" comments, "event:" names
            data = line.removeprefix("data:").strip()
            if data == "[DONE]":
                return
            try:
                event = json.loads(data)
            except ValueError:
                raise ProviderError(
                    f"{_PROVIDER}: the answer stream holds something that is not JSON; "
                    "check llm.baseUrl points at an OpenAI-compatible /chat/completions API"
                ) from None
            if not isinstance(event, dict):
                raise ProviderError(f"{_PROVIDER}: {_WRONG_SHAPE.format(part='delta.content')}")
            if "error" in event:
                message = self._api.scrub(str(_error_message(event["error"])))
                raise ProviderError(f"{_PROVIDER}: the server stopped the answer: {message}")
            yield event


def complete_each(
    model: ChatModel,
    conversations: Sequence[Sequence[ChatMessage]],
    *,
    max_concurrency: int,
    max_tokens: int | None = None,
) -> list[ChatResult | ProviderError]:
    """Each conversation's answer, in order, ``max_concurrency`` requests at a time.

    A request that fails gives its ProviderError in its place, so one failure does not
    lose the other answers; callers decide what a failure means.
    """

    def answer(messages: Sequence[ChatMessage]) -> ChatResult | ProviderError:
        try:
            return model.complete(messages, max_tokens=max_tokens)
        except ProviderError as exc:
            return exc

    if max_concurrency <= 1 or len(conversations) <= 1:
        return [answer(messages) for messages in conversations]
    with ThreadPoolExecutor(max_workers=min(max_concurrency, len(conversations)),
                            thread_name_prefix="llm") as pool:
        return list(pool.map(answer, conversations))


def build_chat_model(config: LlmConfig) -> OpenAIChatModel:
    """The chat model the config's ``llm`` section describes.

    Without ``apiKey`` the key is read from the variable named by ``apiKeyEnv``.
    """
    if config.provider == "none":
        raise ProviderError(
            "no LLM is configured (llm.provider: none); set llm.provider: openai, llm.baseUrl and "
            "llm.model to use any OpenAI-compatible server (Ollama, llama.cpp, vLLM, a cloud API)"
        )
    if config.api_key is not None:
        key, key_variable = config.api_key.get_secret_value(), "the variable llm.apiKey names"
    else:
        key, key_variable = os.environ.get(config.api_key_env, ""), config.api_key_env
    return OpenAIChatModel(
        config.model or "",
        base_url=config.base_url,
        api_key=key,
        api_key_env=key_variable,
        temperature=config.temperature,
        retry=RetryPolicy(deadline=config.timeout),
    )


def _delta_text(event: dict[str, Any]) -> str:
    choices = event.get("choices")
    if not choices:  # the usage event has none
        return ""
    try:
        text = choices[0]["delta"].get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ProviderError(f"{_PROVIDER}: {_WRONG_SHAPE.format(part='delta.content')}") from None
    return text if isinstance(text, str) else ""


def _count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    return value if isinstance(value, int) else None


def _error_message(error: Any) -> Any:
    return error.get("message", error) if isinstance(error, dict) else error
