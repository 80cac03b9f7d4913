"""What is indexed: ``rag list``, ``rag remove`` and ``rag gc``."""

from __future__ import annotations

from typing import Annotated

import typer

from rag.cli.root import app, echo_json, state
from rag.terminal import printable


@app.command("list")
def list_sources(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (what MCP list_sources answers).")
                       ] = False,
) -> None:
    """List indexed sources with type, location, files, chunks and last index time.

    Example: rag list --json
    """
    out = state(ctx).service.list_sources()
    if as_json:
        echo_json(out)
        return
    sources = out.sources
    if not sources:
        from rag.hints import NOTHING_INDEXED, Hint, with_hint

        typer.echo(with_hint(NOTHING_INDEXED, Hint("index_folder"), "cli"))
        return
    typer.echo(f"{'NAME':<24} {'TYPE':<10} {'FILES':>7} {'CHUNKS':>8}  {'LAST INDEXED':<19}  LOCATION")
    for s in sources:
        last = s.last_indexed_at.strftime("%Y-%m-%d %H:%M:%S") if s.last_indexed_at else "never"
        where = s.path + (f" ({s.branch})" if s.branch else "")
        where += f" @{s.commit_sha[:12]}" if s.commit_sha else ""
        where += f" spaces {', '.join(s.spaces)}" if s.spaces else ""
        where += f" cql {s.cql}" if s.cql else ""
        typer.echo(printable(f"{s.name:<24} {s.type:<10} {s.file_count:>7,} {s.chunk_count:>8,}  {last:<19}  "
                             f"{where}"))


@app.command()
def remove(ctx: typer.Context, name: Annotated[str, typer.Argument(help="Source name.")]) -> None:
    """Remove a source with its files and chunks (embeddings stay for reuse; see rag gc).

    Example: rag remove my-project
    """
    out = state(ctx).service.remove_source(name)
    typer.echo(f"removed {out.name}: {out.removed_chunks:,} chunks"
               + (f"; deleted its clone {out.deleted_clone}" if out.deleted_clone else ""))


@app.command()
def gc(ctx: typer.Context) -> None:
    """Delete embeddings that no chunk uses any more.

    Example: rag gc
    """
    typer.echo(f"pruned {state(ctx).service.gc().pruned_embeddings:,} unused embeddings")
