"""Configuration: the pydantic model, ``${VAR}`` substitution, lookup order (the YAML itself is
read by ``rag.config_yaml``).

Keys are camelCase, as in the original design (``bm25Weight``, ``maxTokens``).
Lookup: ``--config PATH`` > ``RAG_CONFIG`` > ``./rag.config.yaml`` >
``~/.config/rag/config.yaml`` > built-in defaults (embedded database, local model).
API keys are only ever read from the environment: in a file they must be a
``${VAR}`` reference.
"""

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from rag.config_yaml import load_yaml
from rag.errors import ConfigError
from rag.secrets import mask_connection

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )


class DatabaseConfig(_Section):
    """Where the data lives. Nothing set: the embedded server under the data directory."""

    url: str | None = None
    host: str | None = None
    port: int = 5432
    name: str = "local_rag"
    user: str | None = None
    password: SecretStr | None = None


class JinaEmbeddings(_Section):
    api_key: SecretStr | None = None
    model: str = "jina-embeddings-v3"
    dimensions: int = Field(default=1024, gt=0)
    base_url: str = "https://api.jina.ai/v1"
    timeout: float = Field(default=60.0, gt=0)  # seconds per request, every retry included


class OpenAIEmbeddings(_Section):
    api_key: SecretStr | None = None
    model: str = "text-embedding-3-small"
    dimensions: int | None = Field(default=1536, gt=0)
    base_url: str = "https://api.openai.com/v1"
    timeout: float = Field(default=60.0, gt=0)  # seconds per request, every retry included


class LocalEmbeddings(_Section):
    model: str = "all-MiniLM-L6-v2"
    device: str = "cpu"
    batch_size: int = Field(default=32, gt=0)
    # auto: ONNX Runtime when the model can be exported; sentence-transformers: always torch (to compare)
    runtime: Literal["auto", "sentence-transformers"] = "auto"
    # fp32 | int8 (ONNX Runtime's dynamic quantization; vectors under a model id of their own) |
    # auto: int8 where a check measured it faster on this CPU (docs/how-it-works.md, "Precision")
    precision: Literal["auto", "fp32", "int8"] = "fp32"
    # Put before every query / document text (e5: "query: " / "passage: "; FRIDA: "search_query: " /
    # "search_document: "), besides any prompt the model's own config declares.
    query_prefix: str = ""
    document_prefix: str = ""
    # Languages (search.languages names) the model reads; unset: english for the bundled
    # all-MiniLM-L6-v2, any for another model. The vector arm of a query in other scripts weighs less.
    languages: list[str] | None = None


class EmbeddingsConfig(_Section):
    provider: Literal["local", "jina", "openai", "none"] = "local"
    jina: JinaEmbeddings = JinaEmbeddings()
    openai: OpenAIEmbeddings = OpenAIEmbeddings()
    local: LocalEmbeddings = LocalEmbeddings()


class JinaReranker(_Section):
    api_key: SecretStr | None = None
    model: str = "jina-reranker-v2-base-multilingual"
    base_url: str = "https://api.jina.ai/v1"
    api: Literal["jina", "tei"] = "jina"  # request shape: Jina/Cohere/Infinity/vLLM, or HF TEI
    top_k: int = Field(default=10, gt=0)
    timeout: float = Field(default=60.0, gt=0)  # seconds per request, every retry included


class LocalReranker(_Section):
    model: str = "cross-encoder/ms-marco-MiniLM-L-6-v2"
    device: str = "cpu"


class RerankerConfig(_Section):
    provider: Literal["none", "jina", "local"] = "none"
    jina: JinaReranker = JinaReranker()
    local: LocalReranker = LocalReranker()


class RrfConfig(_Section):
    k: int = Field(default=10, gt=0)


class Bm25Config(_Section):
    k1: float = Field(default=1.2, ge=0)
    b: float = Field(default=0.75, ge=0, le=1)
    # A document chunk's BM25 counts the words of this many chunks each side, weighted
    # neighbour_share per chunk of distance (rag._bm25_neighbours); 0: its own words alone.
    neighbours: int = Field(default=2, ge=0, le=10)
    neighbour_share: float = Field(default=0.15, ge=0, le=1)
    # A document chunk is ordered by its window's score plus page_weight times its page's BM25
    # (the whole file as one text), each as a share of the candidates' best; 0: off.
    page_weight: float = Field(default=0.3, ge=0)
    # And plus phrase_weight times the share of the query's consecutive words it holds near each other.
    phrase_weight: float = Field(default=0.5, ge=0)
    # The weight of a short query's words (at most three prose terms) standing close in a document
    # chunk: ln(0.3 + exp(-d / 5)) for the fewest words d between two of them (rag._proximity),
    # added to its window's BM25 (its word pairs, phrase_weight, then do not count); 0: off.
    proximity: float = Field(default=10, ge=0, le=100)


class MergeAdjacentConfig(_Section):
    # Hits next to each other in a file (consecutive chunks) as one hit of their lines, while it
    # holds at most max_tokens (rag._merged_places): documents' chunks, code's.
    documents: bool = True
    code: bool = True
    max_tokens: int = Field(default=600, ge=1)


class SearchConfig(_Section):
    fusion: Literal["rrf", "scores"] = "rrf"
    bm25_weight: float = Field(default=0.5, ge=0)
    vector_weight: float = Field(default=0.5, ge=0)
    graph_weight: float = Field(default=0.1, ge=0)
    names_weight: float = Field(default=0.4, ge=0)
    files_weight: float = Field(default=0.4, ge=0)
    retrieve_top_k: int = Field(default=50, gt=0, le=1000)
    final_top_k: int = Field(default=10, gt=0, le=100)
    # The ranking step's factors over their defaults (rag.ranking_priors), e.g. {test: 0.5, example: 0.7}.
    priors: dict[str, float] = {}
    per_file: int = Field(default=3, ge=1)  # chunks of one file before the rest of it decays
    # Text-search dictionaries whose Snowball stems prose is keyword-indexed by, one per script
    # (a language stands for its <language>_stem); a change re-posts the stored chunks' keywords.
    languages: list[str] = Field(default=["english", "russian"], min_length=1)
    # Russian words of prose by the Snowball stem of their pymorphy3 lemma (the optional extra
    # local-rag[ru]): auto is on when it is installed and languages names russian; a change
    # re-posts the stored chunks' keywords.
    lemmas: bool | Literal["auto"] = "auto"
    rrf: RrfConfig = RrfConfig()
    bm25: Bm25Config = Bm25Config()
    merge_adjacent: MergeAdjacentConfig = MergeAdjacentConfig()


# What rag.upsert_source accepts, and what may name a folder under $RAG_HOME/repos.
SOURCE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
SOURCE_NAME_MAX = 100  # characters: a folder name (255 bytes at most) with room to spare


class SourceConfig(_Section):
    name: str = Field(min_length=1, max_length=SOURCE_NAME_MAX, pattern=SOURCE_NAME_PATTERN)
    type: Literal["local", "git", "confluence"]
    path: str | None = None
    url: str | None = None  # a git repository, or a Confluence base URL (https://SITE.atlassian.net/wiki)
    branch: str | None = None
    include: list[str] = []
    exclude: list[str] = []
    # Confluence only: the spaces (keys) and/or a CQL query choosing the pages.
    spaces: list[str] = []
    cql: str | None = None
    flavor: Literal["cloud", "server"] | None = None  # default: cloud for *.atlassian.net
    attachments: bool = False  # also index the pages' PDF and .docx attachments

    @model_validator(mode="after")
    def _location_matches_type(self) -> "SourceConfig":
        if self.type == "local" and not self.path:
            raise ValueError("a local source needs 'path'")
        if self.type in ("git", "confluence") and not self.url:
            raise ValueError(f"a {self.type} source needs 'url'")
        if self.type == "confluence" and not (self.spaces or self.cql):
            raise ValueError("a confluence source needs 'spaces' (keys) or 'cql'")
        if self.type != "confluence" and (self.spaces or self.cql or self.flavor or self.attachments):
            raise ValueError("'spaces', 'cql', 'flavor' and 'attachments' are for confluence sources")
        return self

    def spec(self) -> "SourceSpec":
        """The source as an index run takes it: a local path made absolute."""
        location = self.url if self.type != "local" else str(Path(self.path or "").expanduser().resolve())
        assert location is not None
        pages = None
        if self.type == "confluence":
            pages = ConfluencePages(tuple(self.spaces), self.cql, self.flavor, self.attachments)
        return SourceSpec(self.name, self.type, location, self.branch,
                          tuple(self.include), tuple(self.exclude), pages)


@dataclass(frozen=True)
class ConfluencePages:
    """Which pages of a Confluence site a source holds, and how the site is asked."""

    spaces: tuple[str, ...] = ()
    cql: str | None = None
    flavor: str | None = None  # cloud | server; None: told by the base URL
    attachments: bool = False

    def as_config(self) -> dict[str, Any]:
        """As the catalog keeps it with the source (``from_config`` reads it back)."""
        return {"spaces": list(self.spaces), "cql": self.cql, "flavor": self.flavor,
                "attachments": self.attachments}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "ConfluencePages":
        return cls(tuple(config.get("spaces") or ()), config.get("cql"), config.get("flavor"),
                   bool(config.get("attachments")))


@dataclass(frozen=True)
class SourceSpec:
    """One source as an index run takes it, whether from the config, the catalog or ad hoc."""

    name: str
    type: str  # local | git | confluence
    location: str  # absolute path, git URL, or Confluence base URL
    branch: str | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    pages: ConfluencePages | None = None  # confluence only

    def __post_init__(self) -> None:
        # Checked before anything touches the disk: a git source is cloned to a folder of its name.
        if not re.fullmatch(SOURCE_NAME_PATTERN, self.name):
            raise ConfigError(f"source name {self.name!r}: use letters, digits, '.', '_' or '-', "
                              "starting with a letter or digit")
        if len(self.name) > SOURCE_NAME_MAX:
            raise ConfigError(f"source name {self.name[:20]}… ({len(self.name)} characters): "
                              f"use at most {SOURCE_NAME_MAX}, whatever the kind of source")


@dataclass(frozen=True)
class ChunkSettings:
    """How files are cut: chunk size, window overlap, and the largest file read."""

    max_tokens: int = 256
    overlap: int = 32
    max_file_size: int = 1_000_000
    phase_timeout: float | None = None  # seconds the store phase and the embed phase may each take


class GitIndexing(_Section):
    clone_dir: str | None = None  # default: <data dir>/repos
    # Seconds between fetches of a git source by rag watch and the MCP server; 0: never.
    poll_interval: int = Field(default=300, ge=0)


class ConfluenceIndexing(_Section):
    # Seconds between polls of a Confluence source by rag watch and the MCP server; 0: never.
    poll_interval: int = Field(default=600, ge=0)
    timeout: float = Field(default=60.0, gt=0)  # seconds per request, every retry included


class ChunkSize(_Section):
    # 256 matches the default local model's window (MiniLM truncates at 256 word
    # pieces) and measured best on both evaluation sets (see make eval).
    max_tokens: int = Field(default=256, gt=0)
    overlap: int = Field(default=32, ge=0)


class IndexingConfig(_Section):
    git: GitIndexing = GitIndexing()
    confluence: ConfluenceIndexing = ConfluenceIndexing()
    chunk_size: ChunkSize = ChunkSize()
    max_file_size: int = Field(default=1_000_000, gt=0)
    # Seconds the store phase and the embed phase of a run may each take; unset: no limit.
    phase_timeout: float | None = Field(default=None, gt=0)
    # llm: the llm section's model situates every chunk in its document in a sentence or two,
    # indexed with it (rag/contextual/); none: chunks are indexed as they are.
    context: Literal["none", "llm"] = "none"


class LlmConfig(_Section):
    """An OpenAI-compatible chat model (a cloud API, Ollama, llama.cpp's server, vLLM) for ``rag ask``."""

    provider: Literal["none", "openai"] = "none"
    base_url: str = "https://api.openai.com/v1"
    model: str | None = None  # required once provider is set: no default fits every server
    api_key: SecretStr | None = None  # a ${VAR} reference, like every key
    api_key_env: str = "OPENAI_API_KEY"  # read when apiKey is not set; optional off OpenAI's URL
    timeout: float = Field(default=120.0, gt=0)  # seconds per request, every retry included
    max_concurrency: int = Field(default=4, gt=0)  # requests in flight at once
    temperature: float = Field(default=0.0, ge=0, le=2)
    # The model's context window in tokens (the server's, if smaller): sizes rag ask's budget.
    context_tokens: int = Field(default=8192, gt=0)


class McpConfig(_Section):
    # The server keeps the local sources it serves fresh with a background watcher;
    # off for read-only or remote-database setups.
    watch: bool = True


class ServeConfig(_Section):
    """``rag serve``: the team server's tokens, limits and access log."""

    # A YAML file of tokens (name, token, scope, sources); RAG_SERVE_TOKENS holds the same as JSON.
    tokens_file: str | None = None
    # Seconds a request may take (an ask's stream: between two pieces of the answer).
    deadline: float = Field(default=30.0, gt=0)
    max_concurrent: int = Field(default=8, gt=0)  # requests doing work at once; the rest wait their turn
    per_token_concurrent: int = Field(default=4, gt=0)  # of them, per token
    log_queries: bool = False  # the access log names the query text too
    watch: bool = True  # keep the local sources fresh, as rag mcp does


class RagConfig(_Section):
    database: DatabaseConfig = DatabaseConfig()
    embeddings: EmbeddingsConfig = EmbeddingsConfig()
    reranker: RerankerConfig = RerankerConfig()
    search: SearchConfig = SearchConfig()
    sources: list[SourceConfig] = []
    indexing: IndexingConfig = IndexingConfig()
    llm: LlmConfig = LlmConfig()
    mcp: McpConfig = McpConfig()
    serve: ServeConfig = ServeConfig()

    @model_validator(mode="after")
    def _unique_source_names(self) -> "RagConfig":
        names = [s.name for s in self.sources]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"source names must be unique; repeated: {', '.join(dupes)}")
        return self

    def chunk_settings(self) -> ChunkSettings:
        size = self.indexing.chunk_size
        return ChunkSettings(size.max_tokens, size.overlap, self.indexing.max_file_size,
                             self.indexing.phase_timeout)


@dataclass(frozen=True)
class LoadedConfig:
    config: RagConfig
    path: Path | None  # None: built-in defaults
    origin: str  # how the file was chosen, e.g. "--config", "RAG_CONFIG", "defaults"


def find_config_file(explicit: str | None) -> tuple[Path | None, str]:
    """The config file to use and why, following the documented lookup order."""
    if explicit:
        return _must_exist(Path(explicit).expanduser(), "--config"), "--config"
    from_env = os.environ.get("RAG_CONFIG")
    if from_env:
        return _must_exist(Path(from_env).expanduser(), "RAG_CONFIG"), "RAG_CONFIG"
    for candidate, origin in (
        (Path.cwd() / "rag.config.yaml", "./rag.config.yaml"),
        (Path.home() / ".config" / "rag" / "config.yaml", "~/.config/rag/config.yaml"),
    ):
        if candidate.is_file():
            return candidate, origin
    return None, "built-in defaults"


def _must_exist(path: Path, named_by: str) -> Path:
    if not path.is_file():
        raise ConfigError(
            f"config file {path} (from {named_by}) does not exist; "
            "fix the path or drop it to use ./rag.config.yaml or the built-in defaults"
        )
    return path


def load_config(explicit: str | None = None) -> LoadedConfig:
    """Find, read, substitute and validate the configuration."""
    path, origin = find_config_file(explicit)
    if path is None:
        return LoadedConfig(RagConfig(), None, origin)
    return LoadedConfig(parse_config_file(path), path, origin)


def parse_config_file(path: Path) -> RagConfig:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc}") from None
    try:
        raw = load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}: invalid YAML{where}: {problem}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid YAML: nested too deeply") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    _check_api_keys_are_env_refs(raw, path, ())
    unset: dict[tuple[str | int, ...], str] = {}
    data = _substitute_env(raw, (), unset)
    try:
        return RagConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {describe_validation_error(exc, unset)}") from None


def _check_api_keys_are_env_refs(node: Any, path: Path, where: tuple[str, ...]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            here = (*where, str(key))
            if key in ("apiKey", "api_key") and value is not None:
                if not (isinstance(value, str) and _ENV_REF.fullmatch(value.strip())):
                    var = f"{where[-1].upper()}_API_KEY" if where else "API_KEY"
                    raise ConfigError(
                        f"{path}: {'.'.join(here)}: API keys are read from the environment only; "
                        f"write {key}: ${{{var}}} and export {var}"
                    )
            else:
                _check_api_keys_are_env_refs(value, path, here)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            _check_api_keys_are_env_refs(item, path, (*where, f"[{i}]"))


def _substitute_env(
    node: Any, where: tuple[str | int, ...], unset: dict[tuple[str | int, ...], str]
) -> Any:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in every string; unset and no default: empty.

    Keys whose lone reference named an unset variable are noted in ``unset``
    (key path -> variable), so a validation error there can name the variable.
    """
    if isinstance(node, dict):
        present: dict[Any, Any] = {}
        for key, value in node.items():
            substituted = _substitute_env(value, (*where, key), unset)
            if substituted is None and (*where, key) in unset:
                continue  # "not set": the key keeps its default, a required key says which variable
            present[key] = substituted
        return present
    if isinstance(node, list):
        return [_substitute_env(v, (*where, i), unset) for i, v in enumerate(node)]
    if isinstance(node, str):
        whole = _ENV_REF.fullmatch(node.strip())
        if whole:  # a lone reference to an unset variable means "not set", not ""
            value = os.environ.get(whole.group(1)) or whole.group(2)
            if not value:
                unset[where] = whole.group(1)
            return value if value else None
        return _ENV_REF.sub(lambda m: os.environ.get(m.group(1)) or m.group(2) or "", node)
    return node


def describe_validation_error(
    exc: ValidationError, unset: dict[tuple[str | int, ...], str] | None = None
) -> str:
    """One line per problem, joined: ``search.rrf.k: Input should be greater than 0``.

    ``unset`` maps key paths whose lone ``${VAR}`` was unset to the variable.
    """
    problems = []
    for err in exc.errors():
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
        message = err["msg"]
        variable = (unset or {}).get(tuple(err["loc"]))
        if variable is not None:
            message = f"${{{variable}}} is not set (export {variable}, or write ${{{variable}:-default}})"
        elif err["type"] == "extra_forbidden":
            message = "unknown key (check the spelling; keys are camelCase)"
        elif message.startswith("Value error, "):
            message = message.removeprefix("Value error, ")
        problems.append(f"{loc}: {message}" if loc else message)
    return "; ".join(problems)


# Variables whose values are credentials wherever they are read (the providers', Confluence's).
SECRET_VARIABLES = ("OPENAI_API_KEY", "JINA_API_KEY", "CONFLUENCE_API_TOKEN", "CONFLUENCE_TOKEN")


def configured_secrets(config: RagConfig, environ: dict[str, str] | None = None) -> list[str]:
    """Every credential the configuration holds or names: its keys and passwords, the values of
    the variables keys are read from, and the password of the database URL."""
    from psycopg.conninfo import conninfo_to_dict

    environ = dict(os.environ) if environ is None else environ
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, SecretStr):
            found.append(node.get_secret_value())

    walk(config.model_dump(mode="python"))
    found.extend(environ.get(name, "") for name in (*SECRET_VARIABLES, config.llm.api_key_env))
    for url in (config.database.url, environ.get("RAG_DATABASE_URL")):
        try:
            found.append(str(conninfo_to_dict(url or "").get("password") or ""))
        except Exception:  # (an unparsable URL: its own message masks it)
            continue
    return sorted({s for s in found if s}, key=len, reverse=True)


def masked_dump(config: RagConfig) -> dict[str, Any]:
    """The configuration as camelCase data with secrets shown as ``****``."""
    masked: dict[str, Any] = _mask(config.model_dump(by_alias=True, mode="python"))
    return masked


def _mask(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _mask(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_mask(v) for v in node]
    if isinstance(node, SecretStr):
        return "****" if node.get_secret_value() else None
    if isinstance(node, str):
        return mask_connection(node)
    return node


