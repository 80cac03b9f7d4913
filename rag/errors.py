"""The package's one exception tree; the CLI turns these into one-line messages.

RagError                 anything the user can fix, shown without a traceback
├── ConfigError          a config file is missing, unreadable or invalid
├── DatabaseError        the database cannot be reached, set up or used, or refused a call
│   ├── SchemaMissingError        `rag init` has not run (or ran with an older version)
│   └── UnexpectedDatabaseError   a statement failed for a reason nobody foresaw (a bug)
├── SourceError          a source folder, repository or Confluence site cannot be scanned or synced
│   └── FileUnreadableError       one file or page cannot be read (recorded per file, never fatal)
│       └── FileGoneError         … and the source says it is no longer to be read (a page's 403/404):
│                                 its stored version leaves the index
├── ProviderError        an embedding/rerank provider cannot be set up or used
├── IndexingError        a source cannot be indexed
│   └── SourceBusyError           another run holds the source's lock (a watcher waits for it)
├── ChunkingError        a file cannot be chunked (recorded per file, never fatal)
├── GraphError           a symbol names no definition or several, or a graph call's argument is bad
└── AccessDenied         a token of rag serve may not do this (its scope or its sources)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.hints import Hint, Interface


class RagError(Exception):
    """An error with a message that tells the user what is wrong and what to do; ``hint``
    (a ``rag.hints.Hint``) is the next step, rendered by the front end that shows the error."""

    def __init__(self, message: str = "", hint: Hint | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class ConfigError(RagError):
    pass


class DatabaseError(RagError):
    pass


class SchemaMissingError(DatabaseError):
    pass


class UnexpectedDatabaseError(DatabaseError):
    pass


class SourceError(RagError):
    pass


class FileUnreadableError(SourceError):
    pass


class FileGoneError(FileUnreadableError):
    pass


class ProviderError(RagError):
    pass


class IndexingError(RagError):
    pass


class SourceBusyError(IndexingError):
    pass


class ChunkingError(RagError):
    pass


class GraphError(RagError):
    """A symbol that names no definition or several, or a bad argument."""


class AccessDenied(RagError):
    """What a token asked for is beyond its scope or its sources (HTTP 403)."""


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line (its class name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def explained(exc: RagError, interface: Interface) -> str:
    """The error's message with its hint as ``interface`` says it."""
    from rag.hints import with_hint

    return with_hint(str(exc), exc.hint, interface)
