"""``rag ask``: a question answered by the configured LLM from the indexed sources, streamed,
with the sources it cites printed under it (or everything about it as ``--json``)."""

from __future__ import annotations

from typing import Annotated

import typer

from rag.cli.root import app, echo_json, state
from rag.cli.search import (
    LanguageOption,
    PathPrefixOption,
    SourceOption,
    TopKOption,
    TypeOption,
    check_source_types,
)


@app.command()
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="A question about the indexed code and documents.")],
    top_k: TopKOption = None,
    source: SourceOption = None,
    source_type: TypeOption = None,
    language: LanguageOption = None,
    path_prefix: PathPrefixOption = None,
    rewrite: Annotated[bool, typer.Option(
        "--rewrite", help="Let the LLM turn the question into up to three search queries first.")] = False,
    relevance_filter: Annotated[bool, typer.Option(
        "--filter", help="Let the LLM drop chunks it judges irrelevant (one request per chunk).")] = False,
    context_tokens: Annotated[int | None, typer.Option(
        "--context-tokens", min=1,
        help="Tokens of sources the LLM gets (default: llm.contextTokens less the prompt and the answer).",
    )] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the answer, citations, queries, token counts and timings as JSON.")] = False,
) -> None:
    """Answer a question from the indexed sources with the configured LLM, citing them as \\[n].

    Searches as `rag search` does (same filters), gives the best chunks that fit to the LLM
    (the `llm` config section), streams its answer and lists the sources it cites. Says
    "not found in the indexed sources" (in the question's language) when nothing relevant was
    retrieved, or the LLM finds no answer in the sources.

    Example: rag ask "how are vector and keyword results fused?" --type code --filter
    """
    from rag.ask import AskRequest
    from rag.search import SearchRequest

    check_source_types(source_type)
    search = SearchRequest(question, top_k, source or None, source_type or None, language or None,
                           path_prefix)
    answering = state(ctx).service.ask(AskRequest(search, rewrite=rewrite, filter=relevance_filter,
                                                  context_tokens=context_tokens))
    if as_json:
        out = answering.output()
        for warning in out.warnings:
            typer.echo(f"warning: {warning}", err=True)
        echo_json(out)
        return
    for warning in answering.warnings:
        typer.echo(f"warning: {warning}", err=True)
    for piece in answering.stream():
        typer.echo(piece, nl=False)
    typer.echo()
    if not answering.found():  # (the model's not-found marker, or an answer citing no source)
        return
    cited = answering.cited()
    typer.echo()
    for source_given in answering.sources:
        if source_given.number in cited:
            typer.echo(f"[{source_given.number}] {source_given.location}")
