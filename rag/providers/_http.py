"""One JSON POST to a hosted embedding API (or any request to a remote service), made
reliable and explained.

Owns the retry policy (429, 5xx, timeouts and connection errors, with exponential
backoff, jitter and ``Retry-After``), the deadline of one request (all its attempts
and waits together: a server that accepts connections and never answers fails
within it), and turning HTTP failures into ProviderError messages a user can act
on. The API key lives only in the client's headers; a server's error text passes
through ``rag.secrets.scrub`` first, since some echo the key or the header back.
"""

import datetime
import email.utils
import logging
import random
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from rag.errors import ProviderError
from rag.secrets import scrub

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10.0
# One request, all attempts and waits included: a dead endpoint fails within
# about a minute. Configurable per provider section (``timeout``).
DEFAULT_DEADLINE = 60.0
_SERVER_MESSAGE_LIMIT = 300
MAX_STREAM_LINE = 2**20  # characters in one line of a streamed answer
_MODEL_NOT_FOUND_PHRASES = (
    "not found",
    "does not exist",
    "unknown",
    "invalid",
    "no such",
    "not supported",
    "should be",
)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 30.0
    # A longer Retry-After means a quota window, not a blip: fail now rather than hang.
    max_retry_after: float = 120.0
    deadline: float = DEFAULT_DEADLINE  # seconds for one request, every attempt included
    # Set (the setting to check, e.g. "llm.baseUrl"): a refused connection or an unknown host
    # fails at once naming it, rather than after every retry (a local server that is down).
    unreachable_setting: str | None = None

    def backoff(self, attempt: int) -> float:
        """Delay before retry number ``attempt`` (1-based): exponential, with jitter."""
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return ceiling * random.uniform(0.5, 1.0)


DEFAULT_RETRY = RetryPolicy()


def attempt_timeout(left: float) -> httpx.Timeout:
    """The timeout of one attempt that has ``left`` seconds of its request's deadline."""
    return httpx.Timeout(left, connect=min(CONNECT_TIMEOUT, left))


class Retrying:
    """One request's attempts within its deadline: 429 (a rate limit, not an exhausted quota),
    408 and 5xx but 501, timeouts and connection errors are tried again after a backoff or
    the server's ``Retry-After``; every other answer is the caller's to read."""

    def __init__(
        self,
        provider: str,
        retry: RetryPolicy = DEFAULT_RETRY,
        scrub_text: Callable[[str], str] = lambda text: text,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        log_level: int = logging.WARNING,
    ) -> None:
        self.provider, self.retry = provider, retry
        self._scrub, self._sleep, self._clock, self._log_level = scrub_text, sleep, clock, log_level

    def send(self, url: str, attempt: Callable[[float], httpx.Response]) -> httpx.Response:
        """The first answer retrying will not change (``attempt`` is given the seconds left of
        the deadline); ProviderError once retrying no longer makes sense."""
        deadline = self._clock() + self.retry.deadline
        for number in range(1, self.retry.max_attempts + 1):
            left = max(deadline - self._clock(), 0.001)
            try:
                response = attempt(left)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                failure = f"cannot reach {url} ({type(exc).__name__}: {self._scrub(str(exc))})"
                if isinstance(exc, httpx.ConnectError) and self.retry.unreachable_setting:
                    raise ProviderError(f"{self.provider}: {failure}; is the server running? "
                                        f"check {self.retry.unreachable_setting}") from None
                delay = self.retry.backoff(number)
            else:
                if response.is_success or not _is_retryable(response):
                    return response
                # Scrubbed before it is cut: a cut could leave half a key unrecognised.
                message = self._scrub(_server_message(response))[:_SERVER_MESSAGE_LIMIT]
                failure = f"HTTP {response.status_code}: {message}"
                delay = self._delay_for(response, number)
            if number == self.retry.max_attempts:
                raise ProviderError(
                    f"{self.provider}: giving up after {number} attempts; last error: {failure}"
                )
            if self._clock() + delay >= deadline:
                raise ProviderError(
                    f"{self.provider}: no answer within the {self.retry.deadline:g} s deadline "
                    f"after {number} attempt{'s' if number > 1 else ''}; last error: {failure}; "
                    "check the server, or raise the provider's timeout setting"
                )
            log.log(
                self._log_level,
                "%s: %s; retrying in %.1f s (attempt %d of %d)",
                self.provider,
                failure,
                delay,
                number + 1,
                self.retry.max_attempts,
            )
            self._sleep(delay)
        raise AssertionError("unreachable: the loop returns or raises")

    def _delay_for(self, response: httpx.Response, attempt: int) -> float:
        wait = _retry_after_seconds(response.headers.get("Retry-After"))
        if wait is None:
            return self.retry.backoff(attempt)
        if wait > self.retry.max_retry_after:
            raise ProviderError(
                f"{self.provider}: rate limited (HTTP {response.status_code}) and asked to wait "
                f"{wait:.0f} s; try again later or check your plan's limits"
            )
        return wait


class JsonApi:
    """POSTs JSON bodies to one API base URL for one provider, retrying what can be retried."""

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        api_key: str,
        api_key_env: str,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        retry_log_level: int = logging.WARNING,
    ) -> None:
        self.provider = provider
        self._api_key_env = api_key_env
        self._api_key = api_key
        self._retrying = Retrying(provider, retry, self.scrub, sleep=sleep, clock=clock,
                                  log_level=retry_log_level)
        self._clock = clock
        self._base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=self._base_url,
            headers=headers,
            transport=transport,
        )

    def close(self) -> None:
        self._client.close()

    def post(self, path: str, body: dict[str, Any]) -> Any:
        """The decoded JSON answer; ProviderError once retrying no longer makes sense."""
        response = self._send(path, body, stream=False)
        return self._decode(response, f"{self._base_url}{path}")

    def post_stream(self, path: str, body: dict[str, Any], *, stop_at: float | None = None) -> Iterator[str]:
        """The answer's lines as they arrive (a server-sent event stream).

        Retries and the deadline cover reaching the server and its status line, as in
        ``post``. Once it streams, a pause longer than the time that was left ends it, and
        so does the clock reaching ``stop_at`` (the lines then just end: the caller says why);
        a line longer than ``MAX_STREAM_LINE`` characters is an error.
        """
        response = self._send(path, body, stream=True)
        url = f"{self._base_url}{path}"
        try:
            yield from _lines(response.iter_text(), self._clock, stop_at, url, self.provider)
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise ProviderError(
                f"{self.provider}: the answer from {url} broke off "
                f"({type(exc).__name__}: {self.scrub(str(exc))})"
            ) from None
        finally:
            response.close()

    def _send(self, path: str, body: dict[str, Any], *, stream: bool) -> httpx.Response:
        """A successful response (open, for a stream), retrying what can be retried."""
        url = f"{self._base_url}{path}"

        def attempt(left: float) -> httpx.Response:
            request = self._client.build_request("POST", path, json=body, timeout=attempt_timeout(left))
            response = self._client.send(request, stream=stream)
            if not response.is_success:
                try:
                    response.read()  # an error's body, whole, even from a stream (a timeout here is retried)
                finally:
                    response.close()
            return response

        response = self._retrying.send(url, attempt)
        if response.is_success:
            return response
        raise self._rejection(response, body, url)

    def _decode(self, response: httpx.Response, url: str) -> Any:
        try:
            return response.json()
        except ValueError:
            raise ProviderError(
                f"{self.provider}: {url} answered with something that is not JSON; "
                "check base_url points at the API"
            ) from None

    def _rejection(self, response: httpx.Response, body: dict[str, Any], url: str) -> ProviderError:
        """The error for a response that retrying will not fix."""
        status = response.status_code
        provider = self.provider
        if status in (401, 403):
            # The server's own text may echo part of the key, so it is left out.
            problem = "API key rejected" if self._api_key else "API key required"
            return ProviderError(f"{provider}: {problem} (HTTP {status}); set {self._api_key_env}")
        message = self._server_message(response)
        model = str(body.get("model", ""))
        lowered = message.lower()
        if status == 402 or _is_quota_exhausted(response):
            return ProviderError(
                f"{provider}: out of credit or quota (HTTP {status}): {message}; check your account's billing"
            )
        if status in (400, 404, 422):
            if "dimensions" in body and "dimension" in lowered:
                return ProviderError(
                    f"{provider}: model '{model}' does not accept dimensions="
                    f"{body['dimensions']}: {message}; change or remove the dimensions setting"
                )
            if _mentions_unknown_model(lowered, model):
                return ProviderError(f"unknown model '{model}' for {provider}: {message}")
            if status == 404:
                return ProviderError(f"{provider}: {url} not found (HTTP 404): {message}; check base_url")
            return ProviderError(f"{provider}: request rejected (HTTP {status}): {message}")
        return ProviderError(f"{provider}: request failed (HTTP {status}): {message}")


    def _server_message(self, response: httpx.Response) -> str:
        # Scrubbed before it is cut: a cut could leave half a key unrecognised.
        return self.scrub(_server_message(response))[:_SERVER_MESSAGE_LIMIT]

    def scrub(self, text: str) -> str:
        """``text`` without this API's key or any Authorization value: safe to show or log."""
        return scrub(text, [self._api_key] if self._api_key else [])


def _lines(
    texts: Iterator[str], clock: Callable[[], float], stop_at: float | None, url: str, provider: str
) -> Iterator[str]:
    """The lines of a streamed body (``\n``, ``\r\n`` or ``\r`` ends one) until ``stop_at``."""
    pending = ""
    for text in texts:
        if stop_at is not None and clock() >= stop_at:
            return
        pending += text
        if "\n" in text or "\r" in text:
            *lines, pending = re.split(r"\r\n|\r|\n", pending)
            yield from lines
        if len(pending) > MAX_STREAM_LINE:
            raise ProviderError(f"{provider}: the answer from {url} holds a line of over "
                                f"{MAX_STREAM_LINE:,} characters; check the server")
    if pending:
        yield pending


def _is_retryable(response: httpx.Response) -> bool:
    status = response.status_code
    if status == 429:
        return not _is_quota_exhausted(response)
    return status == 408 or (status >= 500 and status != 501)


def _is_quota_exhausted(response: httpx.Response) -> bool:
    # OpenAI answers 429 for both; only a rate limit recovers by waiting.
    return response.status_code == 429 and "insufficient_quota" in response.text


def _mentions_unknown_model(lowered_message: str, model: str) -> bool:
    # Servers word it differently, but all name the model (or the word) and say it is missing.
    names_model = "model" in lowered_message or (bool(model) and model.lower() in lowered_message)
    return names_model and any(phrase in lowered_message for phrase in _MODEL_NOT_FOUND_PHRASES)


def _retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` as seconds from now; it may be a number or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # HTTP dates are always UTC
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - time.time())


def _server_message(response: httpx.Response) -> str:
    """The human part of an error body, whichever of the common shapes it has."""
    try:
        payload = response.json()
    except ValueError:
        text = response.text.strip() or response.reason_phrase
    else:
        text = _message_in(payload)
    return text


def _message_in(payload: Any) -> str:
    if isinstance(payload, str):
        return payload
    if isinstance(payload, list):  # FastAPI validation errors: [{"loc": [...], "msg": ...}]
        return "; ".join(_message_in(item) for item in payload)
    if isinstance(payload, dict):
        if "loc" in payload and "msg" in payload:
            location = ".".join(str(part) for part in payload["loc"])
            return f"{location}: {payload['msg']}"
        # OpenAI and most compatible servers use "error"; Jina uses "detail"; vLLM "message".
        for key in ("error", "detail", "message"):
            if key in payload:
                return _message_in(payload[key])
    return str(payload)
