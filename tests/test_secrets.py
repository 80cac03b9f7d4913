"""Every connection string form loses its password; provider bodies lose keys and tokens."""

import json
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from helpers import rag_process
from hypothesis import given, settings
from hypothesis import strategies as st
from plugins.mcp import Harness
from psycopg.conninfo import conninfo_to_dict

from rag import db
from rag.errors import DatabaseError
from rag.secrets import mask_connection, scrub


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("postgresql://app:pw123@db.example/rag", "pw123"),
        ("postgressql://app:pw123@db.example/rag", "pw123"),  # misspelt scheme
        ("postgres://app:p@ss@w0rd@db.example:5432/rag", "p@ss@w0rd"),  # "@" in the password
        ("postgresql://app:p:a/s?s@db.example/rag", "p:a/s?s"),
        ("postgresql://:onlypw@db.example/rag", "onlypw"),
        ("postgresql://db.example/rag?user=app&password=s3cr3t&sslmode=require", "s3cr3t"),
        ("host=db.example port=5432 user=app password=s3cr3t dbname=rag", "s3cr3t"),
        ("host=db.example password='with space\\'s' dbname=rag", "with space"),
        ("host=db.example password = x&y!z dbname=rag", "x&y!z"),
        ('missing "=" after "postgressql://app:pw123@h/db" in connection info string', "pw123"),
        ("sslpassword=keypass host=h", "keypass"),
        # libpq's own message when an unencoded "@" split the password
        ("failed to resolve host 'sign@pw@127.0.0.1': Name or service not known", "sign@pw"),
    ],
)
def test_mask_connection_hides_every_password_form(text: str, secret: str) -> None:
    masked = mask_connection(text)
    assert secret not in masked
    assert "****" in masked


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql://app:pw@db.example:5432/rag", "postgresql://app:****@db.example:5432/rag"),
        ("postgres://app:p@ss@db/rag", "postgres://app:****@db/rag"),
        ("host=h user=app password=pw dbname=rag", "host=h user=app password=**** dbname=rag"),
        ("postgresql://app@db.example:5432/rag", "postgresql://app@db.example:5432/rag"),
        ("postgresql:///rag?host=/tmp/sock", "postgresql:///rag?host=/tmp/sock"),
        ("https://api.openai.com/v1", "https://api.openai.com/v1"),
    ],
)
def test_mask_connection_keeps_what_is_not_secret(text: str, expected: str) -> None:
    assert mask_connection(text) == expected


@pytest.mark.parametrize(
    "body",
    [
        "bad request from Bearer sk-live-abcdef123456",
        '{"headers": {"Authorization": "Bearer sk-live-abcdef123456"}}',
        "authorization: Basic dXNlcjpzay1saXZlLWFiY2RlZjEyMzQ1Ng==",
        "your key sk-live-abcdef123456 is not valid for this model",
    ],
)
def test_scrub_removes_keys_and_authorization_values(body: str) -> None:
    scrubbed = scrub(body, ["sk-live-abcdef123456"])
    assert "sk-live-abcdef123456" not in scrubbed
    assert "dXNlcjpzay1saXZl" not in scrubbed
    assert "****" in scrubbed


def test_scrub_keeps_the_rest_of_the_message() -> None:
    assert scrub("input too long (max 8192 tokens)", ["sk-live-abcdef123456"]) == (
        "input too long (max 8192 tokens)"
    )


# Connection strings as people mistype them (#42.12): a misspelt scheme or separator, a password
# holding a space or a separator, key=value pairs with an unquoted space. The password's pieces
# are upper case and digits, so no other part of the string can hold one.
_pieces = st.lists(st.from_regex(r"[A-Z0-9]{4,8}", fullmatch=True), min_size=1, max_size=3)
_joiner = st.sampled_from([" ", "@", ":", "/", "#", "?", "!", "&", "=", "%", "  "])


@st.composite
def _malformed(draw: st.DrawFn) -> tuple[str, list[str]]:
    pieces = draw(_pieces)
    password = pieces[0] + "".join(draw(_joiner) + p for p in pieces[1:])
    if draw(st.booleans()):
        scheme = draw(st.sampled_from(["postgresql", "postgres", "postgressql", "pg", "postgresql+psycopg"]))
        separator = draw(st.sampled_from(["://", ":/", "//", ":", ":///", "/", ""]))
        user = draw(st.from_regex(r"[a-z]{0,6}", fullmatch=True))
        host = draw(st.sampled_from(["h", "db.example", "db.example:5432", "[::1]"]))
        tail = draw(st.sampled_from(["", "/rag", "/rag?sslmode=require"]))
        return f"{scheme}{separator}{user}:{password}@{host}{tail}", pieces
    return f"host=h user=app password={password} dbname=rag", pieces


@settings(max_examples=400, derandomize=True, deadline=None)
@given(_malformed())
def test_no_piece_of_a_password_shows_in_a_connection_string_we_failed_to_parse(
        case: tuple[str, list[str]]) -> None:
    url, pieces = case
    target = db.DatabaseTarget(url, "RAG_DATABASE_URL")
    shown = [target.masked_url]
    try:
        conninfo_to_dict(url)
    except psycopg.ProgrammingError:  # only then: a parsed one would be tried (a DNS look-up)
        with pytest.raises(DatabaseError) as refused:
            db.connect(target)
        shown.append(str(refused.value))
    for text in shown:
        assert not [p for p in pieces if p in text], text


@pytest.mark.parametrize("url", ["postgres:/u:Secret9@h/db", "postgresql//u:Secret9@h/db",
                                 "postgresql:u:Secret9@h/db", "postgresql://u:Sec ret9@h/db"])
def test_misspelt_urls_are_masked_in_every_command(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   make_harness: Callable[..., Harness]) -> None:
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    for args in (["status"], ["search", "x"], ["index", "--path", str(tmp_path)], ["--debug", "status"],
                 ["status", "--json"]):
        done = rag_process(*args, RAG_DATABASE_URL=url)
        assert done.returncode != 0 and "invalid database URL" in done.stderr
        assert "Secret9" not in done.stdout + done.stderr and "ret9" not in done.stdout + done.stderr
    monkeypatch.setenv("RAG_DATABASE_URL", url)
    database = make_harness().ok("status")["database"]
    assert database["connected"] is False
    assert "ret9" not in json.dumps(database) and database["url"].endswith("****@h/db")


# #56: two more shapes that once showed the password: no "@" at all (libpq reads the user as
# the host and the password as the port) and a password holding a newline, a CR or a tab.
@st.composite
def _portlike_or_multiline(draw: st.DrawFn) -> tuple[str, list[str]]:
    pieces = draw(_pieces)
    scheme = draw(st.sampled_from(["postgresql", "postgres"]))
    if draw(st.booleans()):
        password = "".join(pieces) + "X"  # (a letter: an all-digit one is a port, and is shown)
        user = draw(st.sampled_from(["u", "app", "127.0.0.1"]))
        tail = draw(st.sampled_from(["", "/db", "/db?sslmode=disable"]))
        return f"{scheme}://{user}:{password}{tail}", [*pieces, password]
    password = pieces[0] + "".join(draw(st.sampled_from(["\n", "\r\n", "\t", "\r"])) + p for p in pieces[1:])
    if len(pieces) == 1:
        password += "\n"
    return f"{scheme}://app:{password}@127.0.0.1:1/db", pieces


@settings(max_examples=60, derandomize=True, deadline=None)
@given(_portlike_or_multiline())
def test_no_piece_of_a_password_shows_without_an_at_or_across_lines(case: tuple[str, list[str]]) -> None:
    url, pieces = case
    target = db.DatabaseTarget(url, "RAG_DATABASE_URL")
    shown = [target.masked_url, mask_connection(url)]
    with pytest.raises(DatabaseError) as refused:
        db.connect(target)
    shown.append(str(refused.value))
    for text in shown:
        assert not [p for p in pieces if p in text], text
        assert "\n" not in text


@pytest.mark.parametrize("url", ["postgresql://u:S3cr3tPW/db", "postgresql://u:Sec\nret9PW@127.0.0.1:1/db"])
def test_urls_without_an_at_or_with_a_newline_are_masked_in_every_command(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_harness: Callable[..., Harness]
) -> None:
    (tmp_path / "rag.config.yaml").write_text(f"embeddings: {{provider: none}}\ndatabase: {{url: {json.dumps(url)}}}\n")
    secret = "S3cr3tPW" if "S3cr3tPW" in url else "ret9PW"
    for args in (["status"], ["search", "x"], ["index", "--path", str(tmp_path)], ["list"], ["--debug", "status"],
                 ["status", "--json"], ["config"], ["config", "--json"]):
        done = rag_process(*args, cwd=tmp_path)
        assert secret not in done.stdout + done.stderr, args
    monkeypatch.setenv("RAG_DATABASE_URL", url)
    database = make_harness().ok("status")["database"]
    assert database["connected"] is False and secret not in json.dumps(database)
