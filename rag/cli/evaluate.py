"""``rag eval``: retrieval quality per search mode, measured by ``rag.evaluation``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from rag.cli.root import app, state


@app.command("eval")
def evaluate_retrieval(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="JSON lines of {id, query, relevant: [...]} (see README).")],
    mode: Annotated[list[str] | None, typer.Option(
        "--mode", help="bm25, vector, hybrid, hybrid+rerank (repeatable; default: all).")] = None,
    source: Annotated[str | None, typer.Option("--source", help="Search only this source.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
) -> None:
    """Measure retrieval quality: Recall@1/5/10, MRR@10, nDCG@10 per search mode, side by side.

    Example: rag eval eval/local_rag.jsonl --source local-rag
    """
    from rag import evaluation

    service = state(ctx).service
    cases = evaluation.load_cases(file)
    modes = evaluation.check_modes(mode or evaluation.MODES)
    result = service.with_db(
        lambda conn: evaluation.evaluate(service.searcher(conn), cases, modes, source=source))
    if as_json:
        typer.echo(json.dumps(result.as_dict(), ensure_ascii=False))
    else:
        typer.echo(evaluation.format_table(result.metrics, result.notes, title=str(file)))
