"""What every kind of source is to the rest of local-rag: a ``Source`` and the ``Documents`` it
resolves to.

``Source`` is one source of one kind (a local folder, a git repository, a Confluence
selection; ``rag.sources.registry`` maps a ``SourceSpec`` to its kind, the one place a kind is
chosen by its name). The service and the watcher ask it, whatever its kind:

- ``resolve``: what to index, as ``Documents`` (a git clone fetched first when asked);
- ``dry_run``: what an index run would read of them and what it would skip, changing nothing;
- ``folder`` / ``poll_interval`` / ``poll``: how a watcher keeps it fresh (file-system events
  on its folder, or a poll every so many seconds that says whether it changed);
- ``describe``: what ``rag sources`` and ``rag status`` show of it beyond the catalog's columns;
- ``kept_copy``: what local-rag keeps of it on disk (a clone), deleted with the source.

``Documents`` is what an index run (``rag.indexer``) reads a source through: it lists the
documents with a path, a size and an mtime that change when the document does, reads and
chunks them.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from rag.config import ChunkSettings, IndexingConfig, RagConfig, SourceSpec
from rag.errors import RagError

if TYPE_CHECKING:
    from rag.dispatcher import FileChunks
    from rag.schemas import GitCommit
    from rag.sources.scan import ScannedFile, ScanResult


class Documents(Protocol):
    """What an index run reads a source through."""

    def scan(self, paths: list[str] | None) -> ScanResult:
        """The documents (all, or only those at or under ``paths``) with path, size and mtime."""
        ...

    def prefetch(self, files: list[ScannedFile]) -> None:
        """The documents the run will ``read``, in order: a remote source may start fetching them."""
        ...

    def read(self, file: ScannedFile) -> bytes:
        """A document's bytes; FileUnreadableError when this one alone cannot be read."""
        ...

    def chunk(self, data: bytes, file: ScannedFile, settings: ChunkSettings) -> FileChunks:
        """The chunks of a document read."""
        ...

    def reread(self, file: ScannedFile, text: str, metadata: dict[str, Any]) -> bytes:
        """A document from what the index stored of it (``text``, ``metadata``), for one that only
        moved (``ScannedFile.place`` changed): to be chunked again without being fetched."""
        ...

    def close(self) -> None:
        """Release what reading needed (a remote site's client); nothing for a folder."""
        ...


@dataclass
class Resolved:
    """What to index of a source: its documents, where they are, and the commit a git clone was
    just brought to (None when nothing was fetched). Closes the documents when used as a block."""

    documents: Documents
    root: str  # the folder scanned (a local source's, a clone's), or a remote source's URL
    commit: str | None = None

    def __enter__(self) -> Resolved:
        return self

    def __exit__(self, *exc: object) -> None:
        self.documents.close()


@dataclass
class Preview:
    """What an index run would read of a source (``files``) and what it would skip, changing nothing."""

    files: list[ScannedFile]
    skipped: dict[str, list[str]] = field(default_factory=dict)  # reason -> paths (a folder ends with /)
    problems: list[dict[str, str]] = field(default_factory=list)  # per-file errors: {path, error}
    # Reading a document fetches it: a dry run reads only the new and changed ones (to count the
    # LLM requests of their contextual text), not every one.
    fetched: bool = False


@dataclass(frozen=True)
class Described:
    """What ``rag sources`` and ``rag status`` show of a source beyond the catalog's columns."""

    fields: dict[str, Any] = field(default_factory=dict)  # SourceInfo's fields of its kind
    commit: GitCommit | None = None  # rag status's line for a source checked out at a commit


@dataclass(frozen=True)
class PollIntervals:
    """Seconds between a watcher's polls of the sources it cannot watch by file-system events,
    by kind (0: such a source is not watched)."""

    git: float = 0
    confluence: float = 0

    @classmethod
    def configured(cls, indexing: IndexingConfig) -> PollIntervals:
        return cls(git=indexing.git.poll_interval, confluence=indexing.confluence.poll_interval)


class Source(ABC):
    """One source as the service and the watcher use it, whatever its kind (module docstring).

    Made from its spec and the configuration, reading nothing: only its methods touch the disk
    or the network.
    """

    kind: ClassVar[str]  # SourceSpec.type, as the config and the catalog name it

    def __init__(self, spec: SourceSpec, config: RagConfig) -> None:
        self.spec = spec
        self.config = config

    @abstractmethod
    def resolve(self, *, sync: bool) -> Resolved:
        """What to index; with ``sync`` a remote copy is brought up to date first (a git clone
        is fetched; one that does not exist yet is cloned either way)."""

    @abstractmethod
    def dry_run(self, documents: Documents) -> Preview:
        """What an index run would read of ``documents`` (those ``resolve`` gave) and skip."""

    @abstractmethod
    def poll(self) -> str | None:
        """Check for changes: a version that differs from the last poll's when the source changed
        (a git branch's commit after a fetch), or None when it cannot tell cheaply (every poll
        then syncs it whole, which reads only what changed)."""

    @abstractmethod
    def describe(self, commit_sha: str | None) -> Described:
        """What ``rag sources`` and ``rag status`` show of it, ``commit_sha`` being the commit
        the catalog says its last run indexed."""

    def folder(self) -> Path | None:
        """The folder on this machine it indexes in place (watched by file-system events);
        None when it is read from elsewhere."""
        return None

    def poll_interval(self, polls: PollIntervals) -> float:
        """Seconds between a watcher's polls of it when it has no ``folder`` (0: not watched)."""
        return 0

    def watched(self, polls: PollIntervals) -> bool:
        """Whether a watcher asked for every source keeps it fresh: its folder is on this
        machine, or it is polled."""
        folder = self.folder()
        return folder.is_dir() if folder is not None else self.poll_interval(polls) > 0

    def kept_copy(self) -> Path | None:
        """A folder local-rag keeps the source in (a git clone), deleted with the source."""
        return None

    @classmethod
    def catalog_spec(cls, name: str, location: str, branch: str | None, config: dict[str, Any]) -> SourceSpec:
        """A source of this kind as the catalog recorded it (``config``: the run's include and
        exclude globs, and what else the kind keeps there)."""
        return SourceSpec(name, cls.kind, location, branch, tuple(config.get("include") or ()),
                          tuple(config.get("exclude") or ()))


def default_source_name(location: str) -> str:
    """A source name from a folder path or git URL: its last part, made name-safe."""
    last = location.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", last).strip("-._")
    if not name:
        raise RagError(f"cannot derive a source name from {location!r}; pass --name")
    return name
