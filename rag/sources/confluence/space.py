"""A Confluence selection as a source: the pages of some spaces and/or of a CQL query, listed and
fetched through the site's REST API (``client``, ``pages``), polled by a watcher (a listing of
the pages' versions is the check: every poll syncs it, fetching only changed pages).

Imports no HTTP client until it is resolved: the registry of kinds loads this module always.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rag.config import ConfluencePages, SourceSpec
from rag.errors import RagError
from rag.sources.base import Described, Documents, PollIntervals, Preview, Resolved, Source


class ConfluenceSpace(Source):
    """The pages ``spec.pages`` chooses on the site at ``spec.location``."""

    kind = "confluence"

    def resolve(self, *, sync: bool) -> Resolved:
        """The pages through a client of the site (credentials from the environment,
        ``indexing.confluence.timeout`` per request); nothing is fetched before a scan."""
        from rag.sources.confluence.client import ConfluenceClient
        from rag.sources.confluence.pages import ConfluenceDocuments

        flavor = self.spec.pages.flavor if self.spec.pages is not None else None
        client = ConfluenceClient(self.spec.location, flavor, timeout=self.config.indexing.confluence.timeout)
        documents = ConfluenceDocuments(self.spec, client, self.config.indexing.max_file_size)
        return Resolved(documents, self.spec.location)

    def dry_run(self, documents: Documents) -> Preview:
        """Every page listed; a page's body is fetched only to count LLM requests, for new and
        changed pages."""
        return Preview(files=documents.scan(None).files, fetched=True)

    def poll(self) -> None:
        return None  # (the sync's listing is the check)

    def poll_interval(self, polls: PollIntervals) -> float:
        return polls.confluence

    def describe(self, commit_sha: str | None) -> Described:
        pages = self.spec.pages or ConfluencePages()
        return Described(fields={"spaces": list(pages.spaces), "cql": pages.cql})

    @classmethod
    def catalog_spec(cls, name: str, location: str, branch: str | None, config: dict[str, Any]) -> SourceSpec:
        return replace(super().catalog_spec(name, location, branch, config),
                       pages=ConfluencePages.from_config(config))


def confluence_source(base_url: str, spaces: tuple[str, ...], cql: str | None, name: str,
                      flavor: str | None = None) -> SourceSpec:
    """An ad hoc Confluence source: the pages of ``spaces`` and/or those ``cql`` finds."""
    if not (spaces or cql):
        raise RagError("say which pages to index: --space KEY (repeatable) and/or --cql QUERY")
    return SourceSpec(name, ConfluenceSpace.kind, base_url.rstrip("/"),
                      pages=ConfluencePages(spaces, cql, flavor))
