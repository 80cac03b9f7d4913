"""Builds what commands need from the configuration: source specs and the embedder.

Shared by the CLI and the MCP server so both resolve names, paths and
providers the same way.
"""

import re
from pathlib import Path
from typing import TYPE_CHECKING

from rag.config import EmbeddingsConfig, RagConfig, RerankerConfig, SourceConfig
from rag.embedded import data_dir
from rag.errors import RagError
from rag.indexer import ChunkSettings, SourceSpec
from rag.providers import Embedder, make_embedder

if TYPE_CHECKING:
    from rag.providers.rerankers import Reranker


def make_configured_embedder(config: EmbeddingsConfig) -> Embedder:
    provider = config.provider
    if provider == "local":
        local = config.local
        return make_embedder("local", model=local.model, device=local.device,
                             batch_size=local.batch_size)
    if provider in ("jina", "openai"):
        remote = config.jina if provider == "jina" else config.openai
        key = remote.api_key.get_secret_value() if remote.api_key else None
        return make_embedder(provider, model=remote.model, dimensions=remote.dimensions,
                             api_key=key, base_url=remote.base_url, timeout=remote.timeout)
    return make_embedder("none")


def make_configured_reranker(config: RerankerConfig) -> "Reranker":
    from rag.providers.rerankers import make_reranker  # httpx: only for commands that rerank

    if config.provider == "jina":
        jina = config.jina
        key = jina.api_key.get_secret_value() if jina.api_key else None
        return make_reranker("jina", model=jina.model, api_key=key, base_url=jina.base_url, api=jina.api,
                             timeout=jina.timeout)
    if config.provider == "local":
        return make_reranker("local", model=config.local.model, device=config.local.device)
    return make_reranker("none")


def chunk_settings(config: RagConfig) -> ChunkSettings:
    size = config.indexing.chunk_size
    return ChunkSettings(size.max_tokens, size.overlap, config.indexing.max_file_size,
                         config.indexing.phase_timeout)


def clone_dir(config: RagConfig) -> Path:
    configured = config.indexing.git.clone_dir
    return Path(configured).expanduser() if configured else data_dir() / "repos"


def spec_from_config(source: SourceConfig) -> SourceSpec:
    location = source.url if source.type == "git" else str(Path(source.path or "").expanduser().resolve())
    assert location is not None
    return SourceSpec(source.name, source.type, location, source.branch,
                      tuple(source.include), tuple(source.exclude))


def configured_source(config: RagConfig, name: str) -> SourceSpec:
    for source in config.sources:
        if source.name == name:
            return spec_from_config(source)
    known = ", ".join(s.name for s in config.sources) or "none configured"
    raise RagError(
        f"source {name!r} is not in the config (known: {known}); "
        "add it under sources: or use --path/--git"
    )


def source_root(config: RagConfig, spec: SourceSpec, *, sync: bool) -> Path:
    """The folder to scan: a local source's path, or a git source's clone (updated when ``sync``)."""
    if spec.type == "local":
        return Path(spec.location)
    from rag.sources.git import sync_git_source

    dest = clone_dir(config) / spec.name
    if sync or not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        sync_git_source(spec.location, dest, branch=spec.branch)
    return dest


def default_source_name(location: str) -> str:
    """A source name from a folder path or git URL: its last part, made name-safe."""
    last = location.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", last).strip("-._")
    if not name:
        raise RagError(f"cannot derive a source name from {location!r}; pass --name")
    return name
