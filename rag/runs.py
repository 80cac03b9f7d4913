"""What an index run reports and records, apart from the run itself (``rag.indexer``) so that its
phases in other modules (``rag.contextual``) can take them without importing the indexer:
the run's summary, the reporter a front end gives it, and a phase's deadline."""

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from rag.errors import IndexingError


class PhaseDeadline:
    """Ends a run phase (storing files, embedding chunks) that outlives its limit.

    Checked between units of work: a unit that never ends is bounded by its own
    limit (a provider request's deadline, a non-blocking file open).
    """

    def __init__(self, phase: str, limit: float | None) -> None:
        self.phase, self.limit = phase, limit
        self._end = None if limit is None else time.monotonic() + limit

    def check(self) -> None:
        if self._end is not None and time.monotonic() > self._end:
            raise IndexingError(
                f"{self.phase} took longer than indexing.phaseTimeout ({self.limit:g} s); what was "
                "stored is kept and the next run goes on from there; raise the limit for a large source"
            )


@dataclass
class RunSummary:
    source: str
    run_id: int | None = None
    status: str = "running"
    files_found: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    deleted: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_total: int = 0
    embedded: int = 0
    reused: int = 0
    unreadable: int = 0  # texts left unembedded: the embedding model does not read their language
    contextualized: int = 0  # chunks given a contextual text the LLM wrote in this run
    contextual_reused: int = 0  # chunks given a cached one (or, context off, stripped of theirs)
    errors: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)  # {"path", "warning"}
    seconds: float = 0.0

    def counts(self) -> dict[str, Any]:
        return {
            "filesFound": self.files_found, "skipped": self.skipped, "new": self.new,
            "changed": self.changed, "unchanged": self.unchanged, "deleted": self.deleted,
            "chunksAdded": self.chunks_added, "chunksRemoved": self.chunks_removed,
            "embedded": self.embedded, "reused": self.reused, "unreadable": self.unreadable,
            "contextualized": self.contextualized,
            "contextualReused": self.contextual_reused, "errors": len(self.errors),
            "warnings": len(self.warnings),
        }


class Reporter(Protocol):
    """What the CLI (or MCP) is told while a run goes on."""

    def scanned(self, found: int, skipped: dict[str, int]) -> None: ...
    def planned(self, to_index: int, unchanged: int, deleted: int) -> None: ...
    def chunked(self, chunks: int, files: int) -> None: ...
    def embedding_started(self, total: int) -> None: ...
    def embedded(self, count: int) -> None: ...
    def contextualizing_started(self, calls: int) -> None: ...
    def contextualized(self, count: int) -> None: ...


class SilentReporter:
    def scanned(self, found: int, skipped: dict[str, int]) -> None:
        pass

    def planned(self, to_index: int, unchanged: int, deleted: int) -> None:
        pass

    def chunked(self, chunks: int, files: int) -> None:
        pass

    def embedding_started(self, total: int) -> None:
        pass

    def embedded(self, count: int) -> None:
        pass

    def contextualizing_started(self, calls: int) -> None:
        pass

    def contextualized(self, count: int) -> None:
        pass
