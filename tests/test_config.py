"""Config loading: lookup order, substitution, validation and the messages users see."""

from pathlib import Path

import pytest

from rag.config import RagConfig, load_config, masked_dump
from rag.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_work_without_any_file() -> None:
    loaded = load_config()
    assert loaded.path is None
    assert loaded.origin == "built-in defaults"
    cfg = loaded.config
    assert cfg.database.url is None  # the embedded server
    assert cfg.embeddings.provider == "local"
    assert (cfg.search.bm25_weight, cfg.search.vector_weight) == (0.5, 0.5)
    assert (cfg.search.retrieve_top_k, cfg.search.final_top_k, cfg.search.rrf.k) == (50, 10, 10)
    assert cfg.indexing.chunk_size.max_tokens == 256


def test_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home_file = write(Path.home() / ".config/rag/config.yaml", "search: {finalTopK: 1}\n")
    assert load_config().path == home_file
    cwd_file = write(tmp_path / "rag.config.yaml", "search: {finalTopK: 2}\n")
    assert load_config().path == cwd_file
    env_file = write(tmp_path / "env.yaml", "search: {finalTopK: 3}\n")
    monkeypatch.setenv("RAG_CONFIG", str(env_file))
    assert load_config().config.search.final_top_k == 3
    explicit = write(tmp_path / "explicit.yaml", "search: {finalTopK: 4}\n")
    loaded = load_config(str(explicit))
    assert (loaded.config.search.final_top_k, loaded.origin) == (4, "--config")


@pytest.mark.parametrize("via_env", [False, True])
def test_named_missing_file_says_which_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, via_env: bool
) -> None:
    missing = tmp_path / "nope.yaml"
    write(tmp_path / "rag.config.yaml", "{}\n")  # must not be used as a silent fallback
    if via_env:
        monkeypatch.setenv("RAG_CONFIG", str(missing))
    with pytest.raises(ConfigError) as err:
        load_config(None if via_env else str(missing))
    message = str(err.value)
    assert str(missing) in message
    assert ("RAG_CONFIG" if via_env else "--config") in message
    assert "does not exist" in message


def test_env_substitution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_TEST_DB", "postgresql://u@h/db")
    monkeypatch.setenv("MY_JINA", "jina_secret_123")
    cfg_file = write(
        tmp_path / "c.yaml",
        "database:\n  url: ${RAG_TEST_DB}\n"
        "embeddings:\n  jina:\n    apiKey: ${MY_JINA}\n    model: ${JINA_MODEL:-jina-embeddings-v3}\n"
        "indexing:\n  git:\n    cloneDir: ${UNSET_VAR_XYZ:-/srv/repos}/x\n",
    )
    cfg = load_config(str(cfg_file)).config
    assert cfg.database.url == "postgresql://u@h/db"
    assert cfg.embeddings.jina.api_key is not None
    assert cfg.embeddings.jina.api_key.get_secret_value() == "jina_secret_123"
    assert cfg.embeddings.jina.model == "jina-embeddings-v3"
    assert cfg.indexing.git.clone_dir == "/srv/repos/x"


def test_unset_variable_means_not_set(tmp_path: Path) -> None:
    cfg = load_config(str(write(tmp_path / "c.yaml", "database:\n  url: ${NOT_SET_ANYWHERE}\n")))
    assert cfg.config.database.url is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("search:\n  bm25Wieght: 0.3\n", "search.bm25Wieght: unknown key"),
        ("search:\n  rrf:\n    k: -1\n", "search.rrf.k: Input should be greater than 0"),
        ("search:\n  finalTopK: many\n", "search.finalTopK: Input should be a valid integer"),
        ("embeddings:\n  provider: cohere\n", "embeddings.provider: Input should be 'local', 'jina'"),
        ("sources:\n  - name: a\n    type: local\n", "sources[0]: a local source needs 'path'"),
        ("sources:\n  - {name: a, type: git}\n", "sources[0]: a git source needs 'url'"),
        (
            "sources:\n  - {name: a, type: local, path: /x}\n  - {name: a, type: local, path: /y}\n",
            "source names must be unique; repeated: a",
        ),
        ("colour: blue\n", "colour: unknown key"),
        (
            "sources:\n  - {name: \"${NAME_NOT_SET}\", type: local, path: /x}\n",
            "sources[0].name: ${NAME_NOT_SET} is not set (export NAME_NOT_SET, or write ${NAME_NOT_SET:-default})",
        ),
        ("- just\n- a list\n", "the top level must be a mapping"),
        ("search: [unclosed\n", "invalid YAML at line 2"),
        (
            "embeddings:\n  jina:\n    apiKey: jina_literal_key\n",
            "embeddings.jina.apiKey: API keys are read from the environment only; "
            "write apiKey: ${JINA_API_KEY}",
        ),
    ],
)
def test_bad_config_gives_one_line_with_file_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path / "bad.yaml", text)
    with pytest.raises(ConfigError) as err:
        load_config(str(path))
    message = str(err.value)
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert "\n" not in message
    assert "jina_literal_key" not in message


def test_unreadable_config_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(str(path))


def test_masked_dump_hides_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    monkeypatch.setenv("PGPASS_X", "hunter2")
    path = write(
        tmp_path / "c.yaml",
        "database:\n  url: postgresql://rag:hunter2@db:5432/rag\n  password: ${PGPASS_X}\n"
        "embeddings:\n  openai:\n    apiKey: ${OPENAI_API_KEY}\n",
    )
    dumped = masked_dump(load_config(str(path)).config)
    text = repr(dumped)
    assert "sk-very-secret" not in text and "hunter2" not in text
    assert dumped["embeddings"]["openai"]["apiKey"] == "****"
    assert dumped["database"]["url"] == "postgresql://rag:****@db:5432/rag"
    assert dumped["database"]["password"] == "****"
    assert "bm25Weight" in dumped["search"]  # camelCase out, as in


def test_repository_config_file_is_valid() -> None:
    repo_file = Path(__file__).resolve().parent.parent / "rag.config.yaml"
    cfg = load_config(str(repo_file)).config
    assert cfg.embeddings.provider == "local"
    assert cfg.database.url is None  # RAG_DATABASE_URL unset: embedded
    assert cfg == RagConfig(
        embeddings=cfg.embeddings, reranker=cfg.reranker, database=cfg.database
    ), "the shipped file should state the defaults"


def test_a_lone_unset_variable_means_not_set_so_the_default_applies(tmp_path: Path) -> None:
    text = ("search:\n  finalTopK: ${TOP_K_NOT_SET}\n  rrf:\n    k: ${RRF_K_NOT_SET}\n"
            "embeddings:\n  openai:\n    timeout: ${OPENAI_TIMEOUT_NOT_SET}\n")
    config = load_config(str(write(tmp_path / "unset.yaml", text))).config
    defaults = RagConfig()
    assert config.search.final_top_k == defaults.search.final_top_k
    assert config.search.rrf.k == defaults.search.rrf.k
    assert config.embeddings.openai.timeout == defaults.embeddings.openai.timeout
