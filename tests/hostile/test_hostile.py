"""Issue 22's cases, each a tree or a server built to break `rag`, run through the real command."""

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from harness import RAG, Rag, siblings

pytestmark = pytest.mark.slow  # `rag` subprocesses

KEY = "sk-hostile-0123456789abcdef"


def openai_config(base_url: str, *, timeout: float = 60, dimensions: int = 3) -> str:
    return (
        "embeddings:\n  provider: openai\n  openai:\n    apiKey: ${OPENAI_API_KEY}\n"
        f"    baseUrl: {base_url}\n    model: fake\n    dimensions: {dimensions}\n    timeout: {timeout}\n"
    )


def vectors(body: dict[str, Any], value: str = "0.5") -> bytes:
    data = ",".join(f'{{"index": {i}, "embedding": [{value}, 0.1, 0.2]}}' for i in range(len(body["input"])))
    return f'{{"data": [{data}]}}'.encode()


# ---------------------------------------------------------------------------
# Trees


def test_a_file_name_that_is_not_utf8(rag: Rag, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    kept = siblings(root)
    open(os.path.join(bytes(root), b"caf\xe9.py"), "wb").close()
    os.mkdir(os.path.join(bytes(root), b"dir\xff"))
    for _ in range(2):  # and on every run after
        result = rag("index", "--path", str(root), "--name", "tree", "--json")
        assert result.code == 0, result.stderr
        [summary] = result.json_lines()
        named = {e["path"] for e in summary["fileErrors"]}
        assert named == {"caf\\xe9.py", "dir\\xff/"}
        assert rag.stored_paths("tree") == kept
    assert {e["path"] for e in rag.last_run()["errors"]} == {"caf\\xe9.py", "dir\\xff/"}
    dry = rag("index", "--path", str(root), "--name", "tree", "--dry-run")
    assert dry.code == 0 and set(dry.stdout.split()) == kept
    assert "#   error: caf\\xe9.py: the file name is not valid UTF-8; rename it to index it" in dry.stderr


def test_a_path_longer_than_the_key_allows(rag: Rag, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    kept = siblings(root)
    deep = root.joinpath(*["d" * 199] * 12)
    deep.mkdir(parents=True)
    (deep / "long.py").write_text("x = 1\n", encoding="utf-8")
    result = rag("index", "--path", str(root), "--name", "tree")
    assert result.code == 0, result.stderr
    assert "longer than 2048 bytes" in result.stderr
    assert rag.stored_paths("tree") == kept


def test_fifos_sockets_and_unreadable_files(rag: Rag, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    kept = siblings(root)
    os.mkfifo(root / "pipe.py")
    os.mkfifo(root / ".gitignore")  # an ignore file that is a FIFO is no ignore file
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(root / "sock.py"))
    (root / "locked.py").write_text("x = 1\n", encoding="utf-8")
    (root / "locked.py").chmod(0)
    try:
        result = rag("index", "--path", str(root), "--name", "tree", "--json", timeout=120)
    finally:
        listener.close()
    assert result.code == 0, result.stderr
    stored = rag.stored_paths("tree")
    assert kept <= stored and not {"pipe.py", "sock.py", ".gitignore"} & stored
    if os.geteuid() != 0:  # root reads any file
        assert "locked.py" not in stored


def test_dry_run_of_proc(rag: Rag) -> None:
    result = rag("index", "--path", "/proc", "--name", "proc", "--dry-run", timeout=600)
    assert result.code == 0
    assert "# proc: " in result.stderr and "skipped (unreadable)" in result.stderr


def test_dry_run_of_the_root_folder_asks_for_a_name(rag: Rag) -> None:
    result = rag("index", "--path", "/", "--dry-run")
    assert result.code == 1
    assert result.stderr == "error: cannot derive a source name from '/'; pass --name\n"


def test_secret_bearing_files_are_not_searchable(rag: Rag, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    kept = siblings(root)
    secrets = {
        "prod.env": "DB_PASSWORD=zebracorn1\n",
        ".envrc": "export TOKEN=zebracorn2\n",
        ".env.local": "KEY=zebracorn3\n",
        "deploy/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\nzebracorn4\n-----END OPENSSH PRIVATE KEY-----\n",
        "deploy/tls.pem": "-----BEGIN PRIVATE KEY-----\nzebracorn5\n-----END PRIVATE KEY-----\n",
        ".npmrc": "//registry.npmjs.org/:_authToken=zebracorn6\n",
        ".netrc": "machine h login u password zebracorn7\n",
    }
    for path, text in secrets.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    (root / ".env.example").write_text("DB_PASSWORD=\n", encoding="utf-8")
    result = rag("index", "--path", str(root), "--name", "tree")
    assert result.code == 0, result.stderr
    assert rag.stored_paths("tree") == kept | {".env.example"}
    for n in range(1, 8):
        found = rag("search", f"zebracorn{n}", "--json")
        assert found.code == 0
        assert not [r for r in json.loads(found.stdout)["results"] if "zebracorn" in r["snippet"]]


def test_invalid_utf8_content_warns_in_output_and_run_record(rag: Rag, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    kept = siblings(root)
    (root / "latin1.txt").write_bytes(b"caf\xe9 cr\xe8me\n")
    result = rag("index", "--path", str(root), "--name", "tree")
    assert result.code == 0
    assert "Warning: latin1.txt: invalid UTF-8 decoded with replacement characters" in result.stderr
    assert rag.stored_paths("tree") == kept | {"latin1.txt"}
    assert {"path": "latin1.txt", "warning": "invalid UTF-8 decoded with replacement characters"} in (
        rag.last_run()["errors"])


# ---------------------------------------------------------------------------
# Configuration and connection strings


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("postgressql://app:typo-pw-1@127.0.0.1:1/x", "typo-pw-1"),
        ("postgresql://app:at@sign@pw@127.0.0.1:1/x", "sign@pw"),
        ("host=127.0.0.1 port=1 user=app password=kv-pw-3 dbname=x", "kv-pw-3"),
        ("host=127.0.0.1 port=1 password='quoted pw 4' dbname=x", "quoted pw 4"),
    ],
)
def test_no_password_in_any_message(rag: Rag, url: str, secret: str) -> None:
    for command in (["status"], ["list"], ["init"]):
        result = rag(*command, env={"RAG_DATABASE_URL": url})
        assert result.code == 1 and result.stderr.startswith("error: ")
        assert result.stderr.count("\n") == 1 and secret not in result.stderr + result.stdout
    rag.write_config(KEYWORD_ONLY_WITH_URL.format(url=url.replace("'", "''")))
    shown = rag("config", env={"RAG_DATABASE_URL": ""})
    assert shown.code == 0 and secret not in shown.stdout and "****" in shown.stdout


KEYWORD_ONLY_WITH_URL = "embeddings: {{provider: none}}\ndatabase:\n  url: '{url}'\n"


def test_an_unset_variable_in_a_number_key_means_its_default(rag: Rag) -> None:
    rag.write_config("search:\n  finalTopK: ${HOSTILE_TOP_K}\n")
    result = rag("config")
    assert result.code == 0 and "finalTopK: 10" in result.stdout, result.stderr


# ---------------------------------------------------------------------------
# Providers


def test_an_error_body_echoing_the_key_is_scrubbed(rag: Rag, tmp_path: Path, fake_api: Any) -> None:
    url = fake_api(lambda body: (400, json.dumps(
        {"error": {"message": f"bad request from Bearer {KEY}; Authorization: Bearer {KEY}"}}).encode()))
    rag.write_config(openai_config(url))
    root = tmp_path / "tree"
    siblings(root)
    result = rag("index", "--path", str(root), "--name", "tree", env={"OPENAI_API_KEY": KEY})
    assert result.code == 1
    assert "request rejected (HTTP 400): bad request from Bearer ****" in result.stderr
    record = rag.last_run()
    assert record["status"] == "failed" and "HTTP 400" in record["errors"][0]["error"]
    assert KEY not in result.stderr + result.stdout + json.dumps(record["errors"])


def test_a_provider_that_never_answers_fails_within_its_deadline(rag: Rag, tmp_path: Path) -> None:
    with socket.socket() as server:  # accepts (the kernel's backlog), never answers
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        rag.write_config(openai_config(f"http://127.0.0.1:{server.getsockname()[1]}/v1", timeout=3))
        root = tmp_path / "tree"
        siblings(root)
        started = time.monotonic()
        result = rag("index", "--path", str(root), "--name", "tree", env={"OPENAI_API_KEY": KEY})
        took = time.monotonic() - started
    assert result.code == 1
    assert "no answer within the 3 s deadline after 1 attempt" in result.stderr
    assert took < 20
    assert "deadline" in rag.last_run()["errors"][0]["error"]


def test_a_nan_vector_is_a_provider_error(rag: Rag, tmp_path: Path, fake_api: Any) -> None:
    rag.write_config(openai_config(fake_api(lambda body: (200, vectors(body, "NaN")))))
    root = tmp_path / "tree"
    siblings(root)
    result = rag("index", "--path", str(root), "--name", "tree", env={"OPENAI_API_KEY": KEY})
    assert result.code == 1
    last_line = result.stderr.splitlines()[-1]
    assert last_line.startswith("error: openai: model 'fake' returned a vector holding NaN")


def test_a_killed_run_is_not_shown_as_running(rag: Rag, tmp_path: Path) -> None:
    with socket.socket() as server:  # the run waits on it while embedding
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        rag.write_config(openai_config(f"http://127.0.0.1:{server.getsockname()[1]}/v1"))
        root = tmp_path / "tree"
        siblings(root)
        env = {**os.environ, "RAG_DATABASE_URL": rag.target.url, "OPENAI_API_KEY": KEY}
        proc = subprocess.Popen([RAG, "--config", str(rag.config), "index", "--path", str(root),
                                 "--name", "tree"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while not rag.stored_paths("tree") and time.monotonic() < deadline:
                time.sleep(0.2)
            assert "running" in rag("status").stdout
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    for _ in range(50):  # the server notices the dead connection and lets go of its lock
        status = rag("status").stdout
        if "running" not in status:
            break
        time.sleep(0.1)
    assert "last run:     tree interrupted" in status
