"""Who may use ``rag serve``: the tokens, each with a name, a scope and the sources it may read.

Tokens come from ``RAG_SERVE_TOKENS`` (a JSON list) or the YAML file ``serve.tokensFile``
names, never from the command line (it shows in ``ps``). Each is ``{name, token, scope:
read|admin, sources: [...]}``; only a sha256 of the secret is kept. A read token runs its
requests as a database role of its own (``rag_token_<name>``, a member of ``rag_reader``)
that PostgreSQL lets read its sources only (``rag.grant_sources``); an admin token, and the
server without tokens (loopback only), run as the server's own database user.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rag.config import ServeConfig, describe_validation_error
from rag.errors import ConfigError

TOKENS_VARIABLE = "RAG_SERVE_TOKENS"
MIN_SECRET_CHARS = 16
Scope = Literal["read", "admin"]


class TokenEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$")
    token: str = Field(min_length=MIN_SECRET_CHARS)
    scope: Scope = "read"
    sources: list[str] | None = None

    @field_validator("sources")
    @classmethod
    def _some_sources(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError("an empty list grants nothing; leave sources out for every source")
        return value


@dataclass(frozen=True)
class Principal:
    """Who a request runs as: a token's name and scope, its sources (None: all), its database
    role (None: the server's own user)."""

    name: str
    scope: Scope
    sources: tuple[str, ...] | None
    role: str | None

    @property
    def admin(self) -> bool:
        return self.scope == "admin"


LOCAL = Principal("local", "admin", None, None)  # no tokens configured: the loopback user


def role_name(token_name: str) -> str:
    return "rag_token_" + token_name.replace("-", "_")


@dataclass(frozen=True)
class Tokens:
    """The configured tokens by the sha256 of their secret; empty: no tokens (loopback only)."""

    by_digest: dict[bytes, Principal]

    def __bool__(self) -> bool:
        return bool(self.by_digest)

    def principals(self) -> list[Principal]:
        return sorted(self.by_digest.values(), key=lambda p: p.name)

    def authenticate(self, header: str | None) -> Principal | None:
        """The principal of an ``Authorization: Bearer <token>`` header, None when it names none."""
        if not header:
            return None
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            return None
        digest = hashlib.sha256(secret.strip().encode()).digest()
        found = None
        for known, principal in self.by_digest.items():  # every one compared: no timing by position
            if hmac.compare_digest(known, digest):
                found = principal
        return found


def load_tokens(settings: ServeConfig, config_dir: Path | None = None) -> Tokens:
    """The tokens of ``RAG_SERVE_TOKENS`` and of ``serve.tokensFile`` (relative to the config's folder)."""
    entries: list[tuple[str, Any]] = []
    raw = os.environ.get(TOKENS_VARIABLE, "").strip()
    if raw:
        try:
            entries.append((TOKENS_VARIABLE, json.loads(raw)))
        except ValueError as exc:
            raise ConfigError(f"{TOKENS_VARIABLE} is not JSON ({exc}); expected "
                              '[{"name": "ci", "token": "...", "scope": "read", "sources": ["docs"]}]'
                              ) from None
    if settings.tokens_file:
        path = Path(settings.tokens_file).expanduser()
        if not path.is_absolute() and config_dir is not None:
            path = config_dir / path
        try:
            entries.append((str(path), yaml.safe_load(path.read_text(encoding="utf-8"))))
        except OSError as exc:
            raise ConfigError(f"serve.tokensFile {path}: cannot read it ({exc.strerror})") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"serve.tokensFile {path}: not YAML ({first_problem(exc)})") from None
    by_digest: dict[bytes, Principal] = {}
    names: set[str] = set()
    for origin, data in entries:
        if not isinstance(data, list):
            raise ConfigError(f"{origin}: expected a list of tokens, each with name, token, scope, sources")
        for number, item in enumerate(data, 1):
            try:
                entry = TokenEntry.model_validate(item)
            except ValidationError as exc:
                raise ConfigError(f"{origin}: token {number}: {describe_validation_error(exc)}") from None
            digest = hashlib.sha256(entry.token.encode()).digest()
            if role_name(entry.name) in names or digest in by_digest:
                raise ConfigError(f"{origin}: token {entry.name!r} repeats the name (- and _ alike) or "
                                  "the secret of another token")
            names.add(role_name(entry.name))  # (ci-bot and ci_bot would share a database role)
            sources = tuple(entry.sources) if entry.sources is not None else None
            if entry.scope == "admin" and sources is not None:
                raise ConfigError(f"{origin}: token {entry.name!r}: an admin token reads every source; "
                                  "drop sources or make it a read token")
            role = None if entry.scope == "admin" else role_name(entry.name)
            by_digest[digest] = Principal(entry.name, entry.scope, sources, role)
    return Tokens(by_digest)


def first_problem(exc: yaml.YAMLError) -> str:
    return re.sub(r"\s+", " ", str(exc)).strip()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")


def loopback_host_header(value: str | None) -> bool:
    """Whether a request's Host names this machine's loopback (a page of another site that
    rebinds its name to 127.0.0.1 sends its own name)."""
    if not value:
        return False
    name = value.rsplit(":", 1)[0] if not value.endswith("]") else value
    return name.lower() in LOOPBACK_NAMES


def check_bind(host: str, tokens: Tokens) -> None:
    """Without tokens the server listens on loopback only: anyone who reaches it reads everything."""
    if not tokens and not is_loopback(host):
        raise ConfigError(f"--host {host}: without tokens rag serve listens on 127.0.0.1 only; configure "
                          f"tokens ({TOKENS_VARIABLE} or serve.tokensFile) to serve other machines")
