"""The CLI through typer's CliRunner against a real database."""

import logging
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag import db
from rag.cli import app
from rag.embedded import data_dir
from rag.service import RagService

runner = CliRunner()


def rag(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_init_twice_then_status(empty_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", empty_db.url)
    code, out, _ = rag("init")
    assert code == 0
    newest = db.migration_files()[-1].stem
    assert f"schema:     {newest} ({len(db.migration_files())} migrations applied now)" in out
    assert "PostgreSQL: " in out and "pgvector:   0." in out
    [exported] = (data_dir() / "models").glob("*/embedding.onnx")  # the default provider's model, once
    assert f"model:      local:all-MiniLM-L6-v2@384 on ONNX Runtime, {exported}\n" in out
    written = exported.stat().st_mtime_ns
    code, out, _ = rag("init")
    assert code == 0 and "(0 migrations applied now)" in out
    assert f"on ONNX Runtime, {exported}\n" in out and exported.stat().st_mtime_ns == written, "reused"
    code, out, _ = rag("status")
    assert code == 0
    assert "(RAG_DATABASE_URL)" in out
    assert "chunks:       0" in out and "last indexed: never" in out


@pytest.mark.parametrize("provider", ["none", "jina", "openai"])
def test_init_loads_no_model_without_the_local_provider(
    provider: str, rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    config = tmp_path / "rag.config.yaml"
    config.write_text(f"embeddings: {{provider: {provider}}}\n")  # no API key: nothing may be called
    service = RagService(str(config))

    report = service.init()

    assert report.local_model is None and service._embedder is None, "no model made"
    assert not (data_dir() / "models").exists()
    code, out, err = rag("--config", str(config), "init")
    assert code == 0 and "model:" not in out and err == ""


def test_init_on_the_torch_runtime_without_the_extra_says_what_to_install(
    rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # the torch extra not installed
    config = tmp_path / "rag.config.yaml"
    config.write_text("embeddings: {local: {runtime: sentence-transformers}}\n")

    code, _, err = rag("--config", str(config), "init")

    assert code == 1
    assert "needs sentence-transformers, which is not installed; pip install 'local-rag[torch]'" in err
    assert err.count("\n") == 1


@pytest.mark.torch
def test_init_on_the_torch_runtime_says_so(
    rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    config = tmp_path / "rag.config.yaml"
    config.write_text("embeddings: {local: {runtime: sentence-transformers}}\n")

    code, out, err = rag("--config", str(config), "init")

    # stderr may hold transformers' loading bar when an earlier test imported it before HF_HUB_DISABLE_PROGRESS_BARS
    assert code == 0 and "local:" not in err, "asked for: no fallback note"
    assert "model:      local:all-MiniLM-L6-v2@384 on sentence-transformers (torch)\n" in out
    assert not list((data_dir() / "models").glob("*/*.onnx")), "nothing exported"


def test_init_with_an_unwritable_home_keeps_the_model_in_memory_and_names_the_folder(
    rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where RAG_HOME should be a folder")
    monkeypatch.setenv("RAG_HOME", str(blocker / "home"))
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)

    with caplog.at_level(logging.WARNING, logger="rag.providers"):  # the CLI prints warnings to stderr
        code, out, _ = rag("init")

    assert code == 0
    assert "on ONNX Runtime, kept in memory only: the models folder is not writable" in out
    [warning] = [r.getMessage() for r in caplog.records]
    assert f"cannot store the ONNX model in {blocker / 'home' / 'models'}" in warning
    assert "set RAG_HOME to a writable folder" in warning


def test_init_names_a_local_model_it_cannot_prepare(
    rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    config = tmp_path / "rag.config.yaml"
    config.write_text(f"embeddings: {{local: {{model: {tmp_path / 'no-model'}}}}}\n")

    code, out, err = rag("--config", str(config), "init")

    assert code == 1 and out == ""
    newest = db.migration_files()[-1].stem
    assert err == (f"error: schema {newest} is installed, but local: model directory "
                   f"{tmp_path / 'no-model'} does not exist\n")


def test_config_command_shows_origin_and_masks_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JINA_API_KEY", "jina_abcdef123456")
    cfg = tmp_path / "my.yaml"
    cfg.write_text("embeddings:\n  provider: jina\n  jina:\n    apiKey: ${JINA_API_KEY}\n")
    code, out, _ = rag("--config", str(cfg), "config")
    assert code == 0
    assert out.startswith(f"# configuration from {cfg} (--config)")
    assert "provider: jina" in out and "apiKey: '****'" in out
    assert "jina_abcdef123456" not in out


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--config", "/nowhere/rag.yaml", "status"], {}, "config file /nowhere/rag.yaml (from --config) does not exist"),
        (["status"], {"RAG_CONFIG": "/nowhere/x.yaml"}, "(from RAG_CONFIG) does not exist"),
        (["status"], {"RAG_DATABASE_URL": "postgresql://u:pw@127.0.0.1:1/x"}, "cannot connect to postgresql://u:****@127.0.0.1:1/x"),
    ],
)
def test_bad_input_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str], expected: str
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code, out, err = rag(*args)
    assert code == 1
    assert out == ""
    assert err.startswith("error: ") and expected in err
    assert err.count("\n") == 1, "one line, no traceback"


def test_invalid_config_file_is_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("search:\n  rrf: {k: zero}\n")
    code, _, err = rag("--config", str(cfg), "status")
    assert code == 1
    assert err == f"error: {cfg}: search.rrf.k: Input should be a valid integer, unable to parse string as an integer\n"


def test_debug_shows_the_traceback() -> None:
    from rag.errors import ConfigError

    with pytest.raises(ConfigError):
        runner.invoke(app, ["--debug", "--config", "/nowhere.yaml", "status"], catch_exceptions=False)


def test_db_url_prints_the_configured_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", "postgresql://u@example.invalid/x")
    assert rag("db", "url") == (0, "postgresql://u@example.invalid/x\n", "")


@pytest.mark.parametrize("args", [["index", "--path", ".", "--name", "t"], ["list"], ["search", "words"]])
def test_commands_install_the_schema_on_first_use(
    args: list[str], empty_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Zero setup: no `rag init` first; the schema is installed once, said once on stderr."""
    monkeypatch.setenv("RAG_DATABASE_URL", empty_db.url)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    config = tmp_path / "rag.config.yaml"
    config.write_text("embeddings: {provider: none}\n")
    code, _, err = rag("--config", str(config), *args)
    assert code == 0, err
    assert err.count("installing the local-rag schema") == 1, err
    code, _, err = rag("--config", str(config), *args)
    assert code == 0 and "installing" not in err, err


@pytest.mark.parametrize(
    ("database", "secret"),
    [
        ("  url: 'host=db.example user=app password=kv-s3cret dbname=rag'\n", "kv-s3cret"),
        ("  url: 'postgres://app:p@ss@w0rd@db.example/rag'\n", "ss@w0rd"),  # all of it
        ("  url: 'postgressql://app:typo-s3cret@db.example/rag'\n", "typo-s3cret"),
        ("  host: 127.0.0.1\n  port: 1\n  user: app\n  password: 'parts s3cret'\n", "parts s3cret"),
    ],
)
def test_config_and_status_never_show_a_database_password(
    tmp_path: Path, database: str, secret: str
) -> None:
    cfg = tmp_path / "rag.yaml"
    cfg.write_text("database:\n" + database, encoding="utf-8")
    code, out, _ = rag("--config", str(cfg), "config")
    assert code == 0 and secret not in out and "****" in out
    code, out, err = rag("--config", str(cfg), "status")  # nothing listens there: an error
    assert code == 1 and err.startswith("error: ") and err.count("\n") == 1
    assert secret not in out + err


def test_version_and_json_of_list_status_config(
    rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from rag import __version__

    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdef123456")
    monkeypatch.delenv("JINA_API_KEY", raising=False)
    config = tmp_path / "rag.config.yaml"
    config.write_text("embeddings: {provider: none}\n")  # mentions no key
    assert rag("--version") == (0, f"local-rag {__version__}\n", "")
    code, out, _ = rag("--config", str(config), "status")
    assert code == 0 and f"local-rag:    {__version__}" in out
    code, out, _ = rag("--config", str(config), "status", "--json")
    status = json.loads(out)
    assert status["version"] == __version__ and status["database"]["totalSources"] == 0
    code, out, _ = rag("--config", str(config), "list", "--json")
    assert code == 0 and json.loads(out) == {"sources": []}
    code, out, _ = rag("--config", str(config), "config", "--json")
    shown = json.loads(out)
    assert shown["environmentApiKeys"] == {"OPENAI_API_KEY": "****"} and shown["config"]["embeddings"]["provider"] == "none"
    code, out, _ = rag("--config", str(config), "config")
    assert "# API keys in the environment: OPENAI_API_KEY=****" in out and "abcdef" not in out


def test_shell_completion_is_offered() -> None:
    code, out, _ = rag("--help")
    assert code == 0 and "--install-completion" in out and "--show-completion" in out
