"""The typed results of the service (``rag.service``): what ``--json`` prints and what the
MCP tools return as structured output, one model per answer, camelCase on the wire.
"""

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator
from pydantic.alias_generators import to_camel

SourceType = Literal["code", "markdown", "text", "pdf"]
SOURCE_TYPES: tuple[str, ...] = ("code", "markdown", "text", "pdf")


class _Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, defer_build=True)


class Scores(_Out):
    bm25: float | None
    vector: float | None
    score: float  # the fused score
    fusion: str  # how it was fused: rrf (reciprocal rank fusion) or scores (search.fusion)
    rerank: float | None
    bm25_rank: int | None = None  # the rank in each arm, as the text output shows them
    vector_rank: int | None = None

    @field_validator("bm25", "vector", "rerank")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        """A score that is not a number (a zero vector stored before they were refused) is no
        score: JSON has no NaN, and a client's parser would refuse the whole answer."""
        return value if value is None or math.isfinite(value) else None

    @field_validator("score")
    @classmethod
    def _finite_fused(cls, value: float) -> float:
        return value if math.isfinite(value) else 0.0


class Coordinates(_Out):
    start_line: int | None = None
    end_line: int | None = None
    fqn: str | None = None
    fragment_type: str | None = None
    header_path: str | None = None
    page_start: int | None = None
    page_end: int | None = None


class SearchResult(_Out):
    chunk_id: int
    source_name: str
    path: str
    source_type: str
    language: str | None = None
    absolute_path: str | None = None  # local sources: the file as a user can open it
    url: str | None = None  # a Confluence page: where a browser opens it
    fqns: list[str] | None = None  # a chunk holding several small definitions: all their names
    header_paths: list[str] | None = None  # a chunk holding several small sections: all their headerPaths
    contextual_text: str | None = None  # what an LLM wrote to situate the chunk (indexing.context: llm)
    start_line: int | None
    end_line: int | None
    coordinates: Coordinates
    snippet: str
    scores: Scores


class SearchOutput(_Out):
    query: str
    results: list[SearchResult]
    warnings: list[str]


class SourceText(_Out):
    source_name: str
    path: str
    source_type: str | None
    language: str | None
    start_line: int
    end_line: int
    total_lines: int
    content: str
    truncated: bool
    chunk_id: int | None = None
    metadata: dict[str, Any] | None = None
    contextual_text: str | None = None  # a chunk's, when an LLM situated it (indexing.context: llm)


class SourceInfo(_Out):
    id: int
    name: str
    type: str
    path: str
    branch: str | None
    file_count: int
    chunk_count: int
    last_indexed_at: datetime | None
    indexing: bool
    commit_sha: str | None = None  # git: the commit indexed last
    spaces: list[str] | None = None  # Confluence: the spaces it holds
    cql: str | None = None  # Confluence: the query choosing its pages


class SourcesOutput(_Out):
    sources: list[SourceInfo]


class DatabaseInfo(_Out):
    connected: bool
    url: str | None
    origin: str | None
    schema_version: str | None = None
    postgres_version: str | None = None
    pgvector_version: str | None = None
    total_sources: int | None = None
    total_files: int | None = None
    total_chunks: int | None = None
    total_embeddings: int | None = None
    error: str | None = None


class ProviderInfo(_Out):
    provider: str
    model: str | None
    configured: bool


class EmbeddingProviderInfo(ProviderInfo):
    languages: list[str] | None = None  # what the model reads; None: any language


class Providers(_Out):
    embeddings: EmbeddingProviderInfo
    reranker: ProviderInfo


class Coverage(_Out):
    model: str
    embedded_chunks: int
    total_chunks: int


class ActiveRun(_Out):
    source: str
    run_id: int | None
    started_at: datetime | None


class LastRun(_Out):
    source: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    chunks_added: int
    chunks_removed: int
    errors: int


class WatchedBy(_Out):
    """A source a watcher keeps fresh, in any process (``rag.watched_sources``)."""

    source: str
    pid: int
    since: datetime | None
    last_sync_at: datetime | None


class IndexingInfo(_Out):
    active: bool
    active_runs: list[ActiveRun]
    last_indexed_at: datetime | None
    last_run: LastRun | None
    watched: list[WatchedBy] = []


class ConfigInfo(_Out):
    path: str | None
    origin: str


class ConfigOutput(_Out):
    """``rag config``: the resolved configuration, secrets masked, and the provider API keys
    found in the environment (masked), whether or not the file mentions them."""

    path: str | None
    origin: str
    config: dict[str, Any]
    environment_api_keys: dict[str, str]


class GitCommit(_Out):
    name: str
    branch: str | None
    commit_sha: str | None


class GraphCounts(_Out):
    """One source's code graph: unresolved references are calls the resolver cannot follow
    (dynamic dispatch, builtins, other packages); pending ones wait for an interrupted run;
    dynamic: the calls on a receiver of unknown type among them (ambiguous by name or unresolved);
    modules: imports of a whole module (import *, #include), which name no definition;
    awaiting_rebuild: code files whose graph a database crash emptied (the next graph call or
    index run of the source extracts it again)."""

    source: str
    symbols: int
    refs: int
    resolved: int
    ambiguous: int
    unresolved: int
    pending: int
    dynamic: int
    modules: int
    awaiting_rebuild: int = 0


class ConfigChange(_Out):
    """A configured source whose definition differs from the one its index was made with: a
    background sync keeps the stored one; ``apply`` says how to index with the config's."""

    source: str
    changes: list[str]  # e.g. "exclude: [] in the index, ['tests/**'] in the config"
    apply: str


class StatusOutput(_Out):
    version: str
    database: DatabaseInfo
    providers: Providers
    embedding_coverage: list[Coverage]
    indexing: IndexingInfo
    config: ConfigInfo
    watch: "WatchStatus | None" = None  # the sources this process keeps fresh (MCP server)
    git_sources: list[GitCommit] = []  # the commit each git source's last run read
    graph: list[GraphCounts] = []
    config_changes: list[ConfigChange] = []  # configured sources the index holds otherwise


class FileError(_Out):
    path: str
    error: str


class FileWarning(_Out):
    path: str
    warning: str


class IndexOutput(_Out):
    source: str
    location: str
    run_id: int | None
    status: str
    seconds: float
    files_found: int
    skipped: dict[str, int]
    new: int
    changed: int
    unchanged: int
    deleted: int
    chunks_added: int
    chunks_removed: int
    chunks_total: int
    embedded: int
    reused: int
    unreadable: int = 0  # texts not embedded: in languages the embedding model does not read
    contextualized: int = 0  # chunks given a contextual text the LLM wrote in this run
    contextual_reused: int = 0  # chunks given a cached one (or stripped of theirs: context off)
    errors: int
    file_errors: list[FileError]
    file_warnings: list[FileWarning]
    warnings: list[str] = []  # about the source as a whole (its folder indexed under another name)


class RemoveOutput(_Out):
    name: str
    removed_chunks: int
    deleted_clone: str | None = None  # a git source's clone, deleted with it


class GcOutput(_Out):
    pruned_embeddings: int


class LocalModel(_Out):
    """The local embedding model as ``rag init`` left it: loaded, and exported to ONNX if it can be."""

    model: str  # the id stored with its vectors
    runtime: Literal["onnx", "sentence-transformers"]
    file: str | None  # the ONNX file it runs from; None on sentence-transformers or if kept in memory


class InitOutput(_Out):
    url: str
    origin: str
    schema_version: str
    postgres_version: str
    pgvector_version: str
    migrations_applied: int
    local_model: LocalModel | None = None  # only with embeddings.provider local


class DryRunOutput(_Out):
    source: str
    root: str
    files: list[str]
    skipped: dict[str, int]  # reason -> paths skipped, a folder (not walked) counting as one
    skipped_folders: dict[str, int] = {}  # reason -> how many of those are folders
    skipped_paths: dict[str, list[str]] | None = None  # reason -> paths, with --verbose
    file_errors: list[FileError]
    contextual_calls: int | None = None  # indexing.context llm: the LLM requests a run would make
    # What a run would do with them, as the index stands (changed: size/time or version differ;
    # moved: a Confluence page under other parents).
    new: int = 0
    changed: int = 0
    moved: int = 0
    unchanged: int = 0
    deleted: int = 0


class WatchEvent(_Out):
    """One line of ``rag watch``: a sync of a source, or a change of its watch (missing, back...)."""

    source: str
    event: Literal["sync", "watching", "missing", "stat-scan", "error"]
    chunks_added: int = 0
    chunks_removed: int = 0
    files: int = 0
    seconds: float = 0.0
    full: bool = False  # the whole source was scanned (first sync, ignore rules changed, folder back)
    errors: list[FileError] = []
    message: str | None = None


class WatchedSource(_Out):
    name: str
    path: str
    state: str  # watching | missing | stat-scan | starting
    last_sync_at: datetime | None
    pending_changes: int
    full_sync_pending: bool
    syncs: int
    last_sync: WatchEvent | None


class WatchStatus(_Out):
    sources: list[WatchedSource]


class SymbolRow(_Out):
    fqn: str
    kind: str
    source: str
    path: str
    start_line: int
    end_line: int
    signature: str


class SymbolsOutput(_Out):
    results: list[SymbolRow]
    total: int  # matched, of which at most the cap are listed


class GraphRow(_Out):
    fqn: str | None  # None: module-level code of the file
    kind: str
    source: str  # a traversal stays in the source of its start
    path: str
    start_line: int
    end_line: int
    depth: int
    ambiguous: bool  # one candidate of a reference the resolver could not decide
    relation: str
    ref_line: int | None
    edge_path: list[str]


class TraversalOutput(_Out):
    results: list[GraphRow]


StatusOutput.model_rebuild()  # its watch field names WatchStatus, defined below it


class Citation(_Out):
    """A chunk given to the LLM as source ``[number]``."""

    number: int
    chunk_id: int
    source_name: str
    path: str
    start_line: int | None
    end_line: int | None
    location: str  # path:start-end, as printed under the answer (a Confluence page: title — url)
    url: str | None = None  # a Confluence page: where a browser opens it
    title: str | None = None  # a Confluence page's title
    score: float  # the search's (reranker's, or fused over the rewritten queries)
    cited: bool  # the answer names it


class AskTokens(_Out):
    prompt: int | None  # the answer's request, as the server counted it (None: it did not say)
    completion: int | None
    context: int  # the sources' estimated size, what --context-tokens bounds


class AskTimings(_Out):
    retrieve_ms: float
    rewrite_ms: float | None
    filter_ms: float | None
    first_token_ms: float | None  # from the answer's request to its first piece
    answer_ms: float
    total_ms: float


class AskOutput(_Out):
    question: str
    answer: str
    found: bool  # False: nothing relevant was retrieved, or the model said so
    model: str
    prompt: str  # the prompt's versioned name, e.g. ask_v1
    queries: list[str]  # the searches run: the question, or its rewrites
    citations: list[Citation]
    filtered_out: int  # chunks the LLM judged irrelevant
    llm_calls: int
    tokens: AskTokens
    timings: AskTimings
    warnings: list[str]
