"""The kinds of source by the name the config and the catalog give them: the one place a kind is
chosen by its name (``SourceSpec.type``); everything else asks the ``Source`` it gets."""

from __future__ import annotations

from typing import Any

from rag.config import RagConfig, SourceSpec
from rag.errors import ConfigError
from rag.sources.base import Source
from rag.sources.confluence.space import ConfluenceSpace
from rag.sources.folder import LocalFolder
from rag.sources.repository import GitRepository

KINDS: dict[str, type[Source]] = {kind.kind: kind for kind in (LocalFolder, GitRepository, ConfluenceSpace)}


def source_for(spec: SourceSpec, config: RagConfig) -> Source:
    """The source ``spec`` defines, of its kind."""
    return _kind(spec.type)(spec, config)


def catalog_source(row: dict[str, Any]) -> SourceSpec:
    """A source as ``rag.list_sources`` recorded it."""
    return _kind(row["type"]).catalog_spec(row["name"], row["location"], row["branch"], row["config"] or {})


def _kind(name: str) -> type[Source]:
    try:
        return KINDS[name]
    except KeyError:
        raise ConfigError(f"unknown source type {name!r}; use one of {', '.join(KINDS)}") from None
