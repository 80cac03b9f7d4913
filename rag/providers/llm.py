"""Chatting with an LLM: the ChatModel protocol and its OpenAI-compatible client.

Owns what ``rag ask`` (and contextual chunk text) need from an LLM: a whole answer
(``complete``) or its pieces as they are written (``stream``, server-sent events), from
any server that speaks OpenAI's ``/chat/completions`` (OpenAI, Ollama, LM Studio,
llama.cpp's server, vLLM); many requests a few at a time (``complete_each``); and
building the client from the ``llm`` config section. Retries, the deadline and keeping
the API key out of every message are JsonApi's, as for the embedders.

What a model writes is bounded and cleaned here, before anyone prints, stores or returns it:
an answer ends at ``llm.timeout`` seconds (counted from the request, so a server that streams
forever stops) and at ``CHARS_PER_TOKEN`` characters per ``max_tokens`` asked (a server that
ignores it), with ``[the answer was cut: …]`` at its end; NUL and lone surrogates become
U+FFFD, and the configured secrets (``secrets``: the key, and whatever the caller adds)
``****`` — in a stream too, where a secret may come split over pieces (``_Cleaner``).
"""

import json
import os
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from rag.config import LlmConfig
from rag.errors import ProviderError
from rag.providers._http import DEFAULT_RETRY, JsonApi, RetryPolicy
from rag.secrets import without_secrets
from rag.storable import make_storable

OPENAI_URL = "https://api.openai.com/v1"
_PROVIDER = "llm"
_WRONG_SHAPE = (
    "unexpected answer from the chat API (no choices[0].{part}); "
    "check llm.baseUrl points at an OpenAI-compatible /chat/completions API"
)
# Characters an answer may hold per token asked for: text runs 3-5 a token, so a model
# that keeps to max_tokens is never cut, and one whose server ignores it is.
CHARS_PER_TOKEN = 8
MAX_ANSWER_CHARS = 200_000  # an answer asked for without max_tokens
_LATE = "_late"  # the event _events gives when the answer's time is up


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


class _Cleaner:
    """Text a model wrote made safe to show and store: NUL and lone surrogates as U+FFFD, each
    secret as ``****``. Fed pieces, it holds back an end that begins a secret until the next
    piece (or ``flush``) tells."""

    def __init__(self, secrets: Sequence[str]) -> None:
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._pending = ""

    def clean(self, text: str) -> str:
        return without_secrets(make_storable(text)[0], self.secrets)

    def feed(self, piece: str) -> str:
        self._pending = self.clean(self._pending + piece)
        cut = len(self._pending) - self._secret_start(self._pending)
        shown, self._pending = self._pending[:cut], self._pending[cut:]
        return shown

    def _secret_start(self, text: str) -> int:
        """The length of the longest end of ``text`` that a secret begins with."""
        longest = 0
        for secret in self.secrets:
            for length in range(min(len(secret) - 1, len(text)), longest, -1):
                if text.endswith(secret[:length]):
                    longest = length
                    break
        return longest

    def flush(self) -> str:
        shown, self._pending = self._pending, ""
        return shown


def _cut_note(why: str) -> str:
    return f"\n\n[the answer was cut: {why}]"


class ChatStream(Iterator[str]):
    """An answer's pieces as they arrive, cleaned and bounded (``cut`` says why it was cut, and
    the last piece says so too); its token counts are known once it is exhausted."""

    def __init__(
        self,
        events: Iterator[dict[str, Any]],
        *,
        secrets: Sequence[str] = (),
        max_chars: int = MAX_ANSWER_CHARS,
        timeout: float | None = None,
    ) -> None:
        self._events = events
        self._cleaner = _Cleaner(secrets)
        self._max_chars, self._timeout = max_chars, timeout
        self._chars = 0
        self.cut: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self._pieces: Generator[str] = self._generate()

    def __next__(self) -> str:
        return next(self._pieces)

    def close(self) -> None:
        """Stops reading: the response is closed, freeing the connection and the model's work
        (a client of ``rag serve`` that went away)."""
        self._pieces.close()
        close = getattr(self._events, "close", None)
        if close is not None:
            close()

    def _generate(self) -> Generator[str]:
        try:
            for event in self._events:
                if event.get(_LATE):
                    self.cut = f"it ran past llm.timeout ({self._timeout:g} s)"
                    break
                usage = event.get("usage")
                if isinstance(usage, dict):
                    self.prompt_tokens = _count(usage, "prompt_tokens")
                    self.completion_tokens = _count(usage, "completion_tokens")
                shown = self._bounded(self._cleaner.feed(_delta_text(event)))
                if shown:
                    yield shown
                if self.cut is not None:
                    break
            if self.cut is None or self._chars < self._max_chars:
                tail = self._bounded(self._cleaner.flush())
                if tail:
                    yield tail
            if self.cut is not None:
                yield _cut_note(self.cut)
        finally:
            close = getattr(self._events, "close", None)
            if close is not None:
                close()

    def _bounded(self, text: str) -> str:
        room = self._max_chars - self._chars
        if len(text) > room:
            text = text[:max(room, 0)]
            self.cut = f"it passed {self._max_chars:,} characters"
        self._chars += len(text)
        return text



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
        secrets: Sequence[str] = (),
        clock: Callable[[], float] = time.monotonic,
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
        self._secrets = [api_key, *secrets] if api_key else list(secrets)
        self._timeout, self._clock = retry.deadline, clock
        self._api = JsonApi(
            provider=_PROVIDER,
            base_url=base_url,
            api_key=api_key,
            api_key_env=api_key_env,
            transport=transport,
            retry=retry,
            sleep=sleep,
            clock=clock,
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
        text, limit = _Cleaner(self._secrets).clean(text), _max_chars(max_tokens)
        if len(text) > limit:
            text = text[:limit] + _cut_note(f"it passed {limit:,} characters")
        usage = payload.get("usage") if isinstance(payload, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        return ChatResult(text, _count(usage, "prompt_tokens"), _count(usage, "completion_tokens"))

    def stream(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> ChatStream:
        stop_at = self._clock() + self._timeout
        lines = self._api.post_stream("/chat/completions", self._body(messages, max_tokens, stream=True),
                                      stop_at=stop_at)
        return ChatStream(self._events(lines, stop_at), secrets=self._secrets,
                          max_chars=_max_chars(max_tokens), timeout=self._timeout)

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

    def _events(self, lines: Iterator[str], stop_at: float) -> Iterator[dict[str, Any]]:
        """The JSON events of a server-sent event stream, up to ``[DONE]``; ``{_LATE: True}``
        last when ``stop_at`` passed first; closing them closes ``lines``."""
        try:
            yield from self._parsed(lines, stop_at)
        finally:
            close = getattr(lines, "close", None)
            if close is not None:
                close()

    def _parsed(self, lines: Iterator[str], stop_at: float) -> Iterator[dict[str, Any]]:
        for line in lines:
            if self._clock() >= stop_at:
                yield {_LATE: True}
                return
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
        if self._clock() >= stop_at:  # (the lines ended because the time was up)
            yield {_LATE: True}


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


def build_chat_model(config: LlmConfig, secrets: Sequence[str] = ()) -> OpenAIChatModel:
    """The chat model the config's ``llm`` section describes; ``secrets`` (besides its key)
    never appear in what it returns.

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
        retry=RetryPolicy(deadline=config.timeout, unreachable_setting="llm.baseUrl"),
        secrets=secrets,
    )


def _max_chars(max_tokens: int | None) -> int:
    return MAX_ANSWER_CHARS if max_tokens is None else max(max_tokens, 1) * CHARS_PER_TOKEN


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
