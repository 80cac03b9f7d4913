"""``rag chunk``: how files are cut into chunks, without indexing them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rag.cli.root import app, state
from rag.errors import RagError

if TYPE_CHECKING:
    from rag.chunking.model import Chunk
    from rag.config import ChunkSettings
    from rag.service import RagService


@app.command()
def chunk(
    ctx: typer.Context,
    paths: Annotated[
        list[Path], typer.Argument(help="Files or folders (folders are scanned as sources are).")
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per chunk, content included.")
    ] = False,
    max_tokens: Annotated[int | None, typer.Option(help="Default: indexing.chunkSize.maxTokens.")] = None,
    overlap: Annotated[int | None, typer.Option(help="Default: indexing.chunkSize.overlap.")] = None,
) -> None:
    """Show how files are cut into chunks: lines, type, fqn or headerPath, tokens.

    Example: rag chunk rag/db.py README.md --json
    """
    from rag.chunking.passages import chunk_passages
    from rag.dispatcher import chunk_file

    settings = state(ctx).service.config.chunk_settings()
    limit = max_tokens or settings.max_tokens
    window_overlap = settings.overlap if overlap is None else overlap
    if limit < 1 or window_overlap < 0 or window_overlap >= limit:
        raise RagError("--max-tokens must be positive and --overlap between 0 and max-tokens - 1")
    failed = 0
    for file, shown in _files_to_chunk(paths, settings):
        result = chunk_file(file, shown, max_tokens=limit, overlap=window_overlap)
        contextual = _contextual_texts(state(ctx).service, file, result.chunks) if as_json else {}
        for warning in result.warnings:
            typer.echo(f"warning: {shown}: {warning}", err=True)
        if result.error:
            failed += 1
            typer.echo(f"error: {shown}: {result.error}", err=True)
        for piece in result.chunks:
            if as_json:
                typer.echo(json.dumps({**piece.metadata, "context": piece.context,
                                       "contentHash": piece.content_hash, "tokens": piece.tokens,
                                       "passageEnds": [p.end for p in chunk_passages(piece)],
                                       **contextual.get(piece.content, {}), "content": piece.content},
                                      ensure_ascii=False))
            else:
                typer.echo(_describe_chunk(piece.metadata, piece.tokens))
    if failed:  # every file was shown; the exit code says some could not be chunked
        raise typer.Exit(1)


def _contextual_texts(
    service: RagService, file: Path, chunks: list[Chunk]
) -> dict[str, dict[str, str | None]]:
    """With indexing.context llm: each chunk's cached contextual text (null until an index run
    asks the LLM), by content, as ``{"contextualText": ...}``; nothing otherwise."""
    from rag.chunking.model import content_hash

    document = hashlib.sha256(file.read_bytes()).hexdigest()
    keys = [(document, content_hash(c.content)) for c in chunks]
    cached = service.cached_contextual_texts(keys)
    if cached is None:
        return {}
    return {c.content: {"contextualText": cached.get(key)} for c, key in zip(chunks, keys, strict=True)}


def _files_to_chunk(paths: list[Path], settings: ChunkSettings) -> Iterator[tuple[Path, str]]:
    from rag.sources.folder import folder_source, scan

    for given in paths:
        if given.is_dir():
            spec = folder_source(given.resolve(), given.name or "folder")
            for scanned in scan(given, spec, settings).files:
                yield scanned.abs_path, str(given / scanned.path)
        elif given.is_file():
            yield given, str(given)
        else:
            raise RagError(f"{given}: no such file or folder")


def _describe_chunk(meta: dict[str, Any], tokens: int) -> str:
    lines = f"{meta['path']}:{meta.get('startLine', '?')}-{meta.get('endLine', '?')}"
    kind = meta.get("fragmentType") or meta.get("sourceType", "")
    name = meta.get("fqn") or meta.get("headerPath") or ""
    if "sections" in meta:  # merged sections: under the path they share
        name = f"{name} ({len(meta['sections'])} sections)".strip()
    if "pageStart" in meta:
        name = f"{name} pages {meta['pageStart']}-{meta['pageEnd']}".strip()
    return f"{lines:<40} {kind:<10} {tokens:>5} tok  {name}"
