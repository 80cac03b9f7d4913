"""What the command line prints for a failure: one ``error: ...`` line for an error we can
explain, a traceback for a bug. Without typer, so that ``rag mcp``'s path (``rag.cli.main``)
says a bad config the way every other command does."""

from __future__ import annotations

import sys

from rag.errors import RagError, UnexpectedDatabaseError, explained


def one_line(exc: BaseException) -> str | None:
    """The message for an error we can explain, None for a bug (shown as a traceback)."""
    if "psycopg" in sys.modules:  # not imported: no database error can have happened
        import psycopg

        if isinstance(exc, psycopg.Error):
            from rag import db

            exc = db.rag_error(exc)
    if isinstance(exc, UnexpectedDatabaseError):
        return f"{exc} (run with --debug for the details)"
    if isinstance(exc, RagError):
        return explained(exc, "cli")
    return None


def error_line(message: str) -> str:
    """``error: message`` with connection passwords masked and control characters made visible."""
    from rag.secrets import mask_connection
    from rag.terminal import printable

    return printable(f"error: {mask_connection(message)}")
