"""``rag watch``: keep sources fresh with ``rag.watcher``, printing one line per sync."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from rag.cli.root import app, exit_at_once, state
from rag.errors import RagError


@app.command()
def watch(
    ctx: typer.Context,
    names: Annotated[list[str] | None, typer.Argument(
        help="Sources to watch (default: every source in the config or the database).")] = None,
    path: Annotated[str | None, typer.Option("--path", help="Watch this folder ad hoc.")] = None,
    source_name: Annotated[str | None, typer.Option(
        "--name", help="Source name for --path (default: the folder name).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Keep sources fresh: re-index the files that change, as they change, until Ctrl-C.

    Prints one line per sync (app: +3 -1 chunks, 2 files, 0.4 s). Git sources are fetched
    every indexing.git.pollInterval seconds and synced when their branch moved.

    Example: rag watch --path ~/code/app --name app
    """
    import signal

    from rag.sources.folder import folder_source
    from rag.watcher import Watcher, describe

    service = state(ctx).service
    if path and names:
        raise RagError("give source NAMEs or --path DIR, not both")
    if source_name and not path:
        raise RagError("--name goes with --path; a known source is named by NAME")
    if path:
        folder = Path(path).expanduser().resolve()
        if not folder.is_dir():
            raise RagError(f"--path {path}: not a directory")
        specs = [folder_source(folder, source_name)]
    else:
        specs = service.sources_to_watch(names or ())
        if not specs:
            raise RagError("no sources to watch; index one first (rag index --path DIR) "
                           "or use --path DIR")
    service.embedder()  # a model that cannot load fails now, not at the first edit

    def emit(event: Any) -> None:
        typer.echo(json.dumps(event.model_dump(mode="json", by_alias=True), ensure_ascii=False)
                   if as_json else describe(event))

    watcher = Watcher(service, specs, emit, git_poll_s=service.config.indexing.git.poll_interval,
                      confluence_poll_s=service.config.indexing.confluence.poll_interval)
    # SIGTERM stops it as Ctrl-C does: a sync under way ends between two per-file transactions.
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        watcher.run()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    exit_at_once()
