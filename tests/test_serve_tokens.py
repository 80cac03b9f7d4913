"""The tokens of ``rag serve`` (rag/serve/access.py): where they come from, what is refused."""

import json
from pathlib import Path

import pytest

from rag.config import ServeConfig
from rag.errors import ConfigError
from rag.serve.access import TOKENS_VARIABLE, Principal, check_bind, load_tokens, loopback_host_header

SECRET = "0123456789abcdef-secret"


def tokens_from_env(monkeypatch: pytest.MonkeyPatch, tokens: object) -> None:
    monkeypatch.setenv(TOKENS_VARIABLE, tokens if isinstance(tokens, str) else json.dumps(tokens))


def test_tokens_from_the_environment_and_a_file_next_to_the_config(monkeypatch, tmp_path: Path) -> None:
    tokens_from_env(monkeypatch, [{"name": "ci", "token": SECRET, "sources": ["docs"]}])
    (tmp_path / "tokens.yaml").write_text(f"- {{name: ops, token: {SECRET}-2, scope: admin}}\n")
    tokens = load_tokens(ServeConfig(tokens_file="tokens.yaml"), tmp_path)
    assert tokens.principals() == [Principal("ci", "read", ("docs",), "rag_token_ci"),
                                   Principal("ops", "admin", None, None)]
    assert tokens.authenticate(f"Bearer {SECRET}") == tokens.principals()[0]
    assert tokens.authenticate(f"bearer {SECRET}-2").name == "ops"
    for header in (None, "", SECRET, f"Basic {SECRET}", "Bearer ", "Bearer nope-nope-nope-nope"):
        assert tokens.authenticate(header) is None


@pytest.mark.parametrize(("tokens", "message"), [
    ("[{", "RAG_SERVE_TOKENS is not JSON"),
    ({"name": "ci"}, "expected a list of tokens"),
    ([{"name": "ci", "token": "short"}], "token 1: token: String should have at least 16 characters"),
    ([{"name": "CI!", "token": SECRET}], "token 1: name: String should match pattern"),
    ([{"name": "ci", "token": SECRET, "scope": "root"}], "token 1: scope: Input should be 'read' or 'admin'"),
    ([{"name": "ci", "token": SECRET, "sources": []}], "an empty list grants nothing"),
    ([{"name": "ci", "token": SECRET, "scope": "admin", "sources": ["a"]}], "an admin token reads every source"),
    ([{"name": "ci-bot", "token": SECRET}, {"name": "ci_bot", "token": SECRET + "x"}], "repeats the name"),
    ([{"name": "a", "token": SECRET}, {"name": "b", "token": SECRET}], "or the secret of another token"),
])
def test_a_bad_token_list_is_one_line_naming_the_problem(monkeypatch, tokens, message) -> None:
    tokens_from_env(monkeypatch, tokens)
    with pytest.raises(ConfigError) as err:
        load_tokens(ServeConfig())
    assert message in str(err.value) and "\n" not in str(err.value) and SECRET not in str(err.value)


def test_a_missing_tokens_file_is_named(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(TOKENS_VARIABLE, raising=False)
    with pytest.raises(ConfigError, match=r"serve\.tokensFile .*none\.yaml: cannot read it"):
        load_tokens(ServeConfig(tokens_file=str(tmp_path / "none.yaml")))


def test_without_tokens_only_loopback(monkeypatch) -> None:
    monkeypatch.delenv(TOKENS_VARIABLE, raising=False)
    none = load_tokens(ServeConfig())
    assert not none
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        check_bind(host, none)
    for host in ("0.0.0.0", "192.168.1.5", "rag.example.com"):
        with pytest.raises(ConfigError, match=r"without tokens rag serve listens on 127\.0\.0\.1 only"):
            check_bind(host, none)
    assert [loopback_host_header(h) for h in ("127.0.0.1:8765", "localhost", "[::1]:80", "evil.test:8765", None)] \
        == [True, True, True, False, False]
