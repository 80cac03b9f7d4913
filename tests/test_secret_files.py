"""Secret files are never indexed or served to agents (#42.14): skipped as `secret` by name
(keys in .ssh under any name, .git-credentials, .aws/credentials) and by content (a private key
block in any text file, a service account's key file), also when a stored file gains one."""

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import rag_process, rows
from plugins.mcp import Harness

from rag import db
from rag.sources.ignore import holds_secret

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQUJDREVGR0g=\n-----END OPENSSH PRIVATE KEY-----\n"
SERVICE_ACCOUNT = json.dumps({
    "type": "service_account", "project_id": "demo", "private_key_id": "abc123",
    "private_key": "-----BEGIN PRIVATE KEY-----\nTUlJRXZRSUJBREFOQmdrcWhraUc5dzBCQVFFRkFBU0NCS2N3Z2dTakFnRUFBb0lCQVFD\n"
                   "-----END PRIVATE KEY-----\n",
    "client_email": "bot@demo.iam.gserviceaccount.com"}, indent=2)
SECRETS = {
    ".ssh/id_ed25519_work": KEY,
    ".ssh/known_hosts": "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n",
    ".git-credentials": "https://bob:ghp_SECRETTOKEN123@github.com\n",
    ".aws/credentials": "[default]\naws_access_key_id = AKIASECRET\naws_secret_access_key = SECRETKEY\n",
    "deploy/gcp.json": SERVICE_ACCOUNT,
    "notes/setup.md": f"# Setup\n\nThe deploy key:\n\n```\n{KEY}```\n",
}
KEPT = {
    "README.md": "# Keys\n\nA key looks like `-----BEGIN RSA PRIVATE KEY-----` ... `-----END RSA PRIVATE KEY-----`.\n",
    ".aws/config": "[default]\nregion = eu-west-1\n",
    "deploy/app.json": json.dumps({"type": "service", "name": "app"}),
}


def make_tree(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


@pytest.mark.parametrize(("text", "secret"), [
    (KEY, True), (SERVICE_ACCOUNT, True), (json.dumps(json.loads(SERVICE_ACCOUNT)), True),
    (KEPT["README.md"], False), (KEPT["deploy/app.json"], False),
    ('{"private_key": null, "type": "authorized_user"}', False)])
def test_holds_secret(text: str, secret: bool) -> None:
    assert holds_secret(text.encode()) is secret


def test_secret_files_are_skipped_and_never_served(
        tmp_path: Path, rag_db: db.DatabaseTarget, make_harness: Callable[..., Harness],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    root = make_tree(tmp_path / "home", KEPT | {"notes/later.md": "# Later\n\nNothing yet.\n"})
    assert rag_process("index", "--path", str(root), "--name", "home", database=rag_db).returncode == 0
    make_tree(root, SECRETS | {"notes/later.md": f"# Later\n\n{KEY}"})  # a stored file gains a key
    done = rag_process("index", "home", "--json", database=rag_db)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["skipped"]["secret"] == len(SECRETS) + 1
    stored = [r["path"] for r in rows(rag_db, "SELECT path FROM rag.files ORDER BY path")]
    assert stored == sorted(KEPT)
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    harness = make_harness({"embeddings": {"provider": "none"}})
    for query in ("PRIVATE KEY", "service_account private_key", "ghp_SECRETTOKEN123", "aws_secret_access_key"):
        found = harness.ok("search", {"query": query})["results"]
        assert all("SECRET" not in r["snippet"] and "b3BlbnNzaC1rZXkt" not in r["snippet"] for r in found)


# #56: secrets the third campaign found indexed.
_BODY = "TUlJRXZRSUJBREFOQmdrcWhraUc5dzBCQVFFRkFBU0NCS2N3Z2dTakFnRUFBb0lCQVFD\nQUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\n"
MORE_SECRETS = {
    "keys/backup.txt": f"-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2.0.22 (GNU/Linux)\n"
                       f"Comment: backup\n\n{_BODY}=Xy1z\n-----END PGP PRIVATE KEY BLOCK-----\n",
    "keys/server.ppk": "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: srv\nPublic-Lines: 1\n"
                       "AAAAB3NzaC1yc2E=\nPrivate-Lines: 1\nAAABAQCX==\nPrivate-MAC: 0f1e\n",
    ".pgpass": "db.example:5432:*:app:S3cretPgPass\n",
    "tools/fixture.py": '"""A test key."""\n\n' + "".join(
        f"# {line}\n" for line in f"-----BEGIN RSA PRIVATE KEY-----\n{_BODY}-----END RSA PRIVATE KEY-----".splitlines())
        + "KEY = None\n",
}


@pytest.mark.parametrize("path", sorted(MORE_SECRETS))
def test_more_secrets_are_recognised_by_content_or_name(path: str) -> None:
    from rag.sources.ignore import is_secret_file

    assert holds_secret(MORE_SECRETS[path].encode()) or is_secret_file(Path(path).name, path)


def test_a_dry_run_says_what_the_run_skips_by_content(tmp_path: Path, rag_db: db.DatabaseTarget) -> None:
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    root = make_tree(tmp_path / "home", KEPT | MORE_SECRETS | {"notes/setup.md": SECRETS["notes/setup.md"]})
    dry = rag_process("index", "--path", str(root), "--name", "home", "--dry-run", "-v", database=rag_db, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.split() == sorted(KEPT)
    assert f"#   skipped (secret): {len(MORE_SECRETS) + 1} files" in dry.stderr
    assert "#     notes/setup.md" in dry.stderr and "#     tools/fixture.py" in dry.stderr
    done = rag_process("index", "--path", str(root), "--name", "home", "--json", database=rag_db, cwd=tmp_path)
    assert json.loads(done.stdout)["skipped"]["secret"] == len(MORE_SECRETS) + 1
    stored = [r["path"] for r in rows(rag_db, "SELECT path FROM rag.files ORDER BY path")]
    assert stored == sorted(KEPT)
