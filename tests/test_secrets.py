"""Every connection string form loses its password; provider bodies lose keys and tokens."""

import pytest

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
