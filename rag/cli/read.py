"""``rag read``: indexed text by chunk id, or lines or a section of an indexed file."""

from __future__ import annotations

import re
from typing import Annotated

import typer

from rag.cli.root import app, echo_json, state
from rag.errors import RagError
from rag.terminal import printable, printable_name


@app.command()
def read(
    ctx: typer.Context,
    what: Annotated[str, typer.Argument(
        help="A chunkId from search results, or a file path as search shows it (a Confluence page: "
             "its path, id or title; an id with --source).")],
    source: Annotated[str | None, typer.Option("--source", help="The source holding the path.")] = None,
    lines: Annotated[str | None, typer.Option(
        "--lines", help="START-END, START- or START (with a path).")] = None,
    section: Annotated[str | None, typer.Option(
        "--section", help='A markdown section, e.g. "# Guide > ## Install", or a unique end of its path: '
                          '"Install" (with a path).')] = None,
    context: Annotated[int, typer.Option("--context", "-C", min=0, max=500,
                                         help="Extra lines before and after.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print indexed text: a chunk by its id, or lines or a section of an indexed file.

    Example: rag read src/api/auth.py --lines 40-80

    Example: rag read "Deploy the billing service" --source wiki
    """
    service = state(ctx).service
    if what.isdigit() and not source:  # (digits with --source: a Confluence page id)
        if lines or section:
            raise RagError("a chunk id already names the lines to read; drop --lines and --section")
        out = service.read_source(chunk_id=int(what), context=context)
    else:
        first, last = _line_range(lines)
        out = service.read_source(source=source, path=what, start_line=first, end_line=last,
                                  header_path=section, context=context)
    if as_json:
        echo_json(out)
        return
    where = (f"{out.source_name}: {printable_name(out.path)}:{out.start_line}-{out.end_line} "
             f"of {out.total_lines}")
    typer.echo(printable(f"# {where}" + (" (truncated)" if out.truncated else "")), err=True)
    if out.contextual_text:
        typer.echo(printable(f"# context: {out.contextual_text}"), err=True)
    typer.echo(printable(out.content))


def _line_range(lines: str | None) -> tuple[int | None, int | None]:
    if lines is None:
        return None, None
    match = re.fullmatch(r"\s*(\d+)\s*(?:(-)\s*(\d*)\s*)?", lines)
    if not match or int(match[1]) < 1:
        raise RagError(f"--lines {lines}: give START-END, START- or START (line numbers from 1)")
    first = int(match[1])
    if match[2] is None:
        return first, first
    last = int(match[3]) if match[3] else None
    if last is not None and last < first:
        raise RagError(f"--lines {lines}: the end is before the start")
    return first, last
