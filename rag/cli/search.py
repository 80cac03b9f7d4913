"""``rag search``: one query printed as ranked snippets or JSON, or ``--batch`` queries as
JSON lines."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rag.cli.root import app, echo_json, state
from rag.errors import RagError

if TYPE_CHECKING:
    from rag.search import SearchHit, SearchRequest
    from rag.service import RagService


# The filters `rag search` and `rag ask` share.
TopKOption = Annotated[int | None, typer.Option("--top-k", "-k", min=1, max=100,
                                                help="Results (default: search.finalTopK).")]
SourceOption = Annotated[list[str] | None, typer.Option("--source", help="Only this source (repeatable).")]
TypeOption = Annotated[list[str] | None, typer.Option(
    "--type", help="code, markdown, text or pdf (repeatable).")]
LanguageOption = Annotated[list[str] | None, typer.Option(
    "--lang", help="A language, alias or extension: python, py, ts, golang, c++ (repeatable).")]
PathPrefixOption = Annotated[str | None, typer.Option("--path-prefix", help="e.g. src/api/")]


# --mode: its names, and bm25 as `rag eval` calls the keyword arm.
SEARCH_MODES = {"hybrid": "hybrid", "keyword": "keyword", "bm25": "keyword", "vector": "vector"}


def check_source_types(kinds: list[str] | None) -> None:
    """RagError naming a --type that is not a source type."""
    from rag.schemas import SOURCE_TYPES

    for kind in kinds or []:
        if kind not in SOURCE_TYPES:
            raise RagError(f"--type {kind}: choose one of {', '.join(SOURCE_TYPES)}")


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Argument(help="What to look for, in words or identifiers.")] = None,
    top_k: TopKOption = None,
    source: SourceOption = None,
    source_type: TypeOption = None,
    language: LanguageOption = None,
    path_prefix: PathPrefixOption = None,
    no_rerank: Annotated[bool, typer.Option("--no-rerank", help="Skip the reranker.")] = False,
    per_file: Annotated[int | None, typer.Option(
        "--per-file", min=1,
        help="Chunks of one file before the rest of it ranks lower (default: search.perFile).")] = None,
    include_tests: Annotated[bool, typer.Option(
        "--include-tests", help="Rank tests and fixtures at full weight (default: demoted).")] = False,
    mode: Annotated[str, typer.Option(
        "--mode", help="hybrid, keyword (BM25 alone) or vector (the vector arm alone).")] = "hybrid",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    batch: Annotated[Path | None, typer.Option(
        "--batch", help='JSON lines {"id", "query"} in; one JSON line per query out.')] = None,
) -> None:
    """Hybrid search (BM25 + vectors, fused by RRF or by scores, optionally reranked).

    Example: rag search "where is the embedded server started" --type code -k 5
    """
    from rag.search import SearchRequest

    if (query is None) == (batch is None):
        raise RagError("give a QUERY or --batch FILE (one of them)")
    if mode not in SEARCH_MODES:
        raise RagError(f"--mode {mode}: choose one of {', '.join(SEARCH_MODES)}")
    check_source_types(source_type)
    service = state(ctx).service

    def request(text: str) -> SearchRequest:
        return SearchRequest(text, top_k, source or None, source_type or None, language or None,
                             path_prefix, rerank=not no_rerank, per_file=per_file,
                             include_tests=include_tests, keyword_only=SEARCH_MODES[mode] == "keyword",
                             vector_only=SEARCH_MODES[mode] == "vector")

    if batch is not None:
        _search_batch(service, batch, request)
        return
    assert query is not None
    if as_json:
        out = service.search(request(query))
        _warn(out.warnings)
        echo_json(out, exclude={"warnings"})
    else:
        response = service.search_response(request(query))
        _warn(response.warnings)
        _print_hits(query, response.hits)


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        typer.echo(f"warning: {warning}", err=True)


def _search_batch(service: RagService, batch: Path, request: Callable[[str], SearchRequest]) -> None:
    try:
        lines = batch.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise RagError(f"--batch {batch}: cannot read ({exc.strerror})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            query_id, text = item["id"], item["query"]
        except (ValueError, KeyError, TypeError):
            raise RagError(f'{batch}:{number}: expected a JSON object with "id" and "query"') from None
        try:
            results = service.search(request(str(text))).results
            out: dict[str, Any] = {"id": query_id, "results": [
                r.model_dump(mode="json", by_alias=True, exclude={"snippet"}) for r in results]}
        except RagError as exc:
            out = {"id": query_id, "error": str(exc).splitlines()[0]}
        typer.echo(json.dumps(out, ensure_ascii=False))


def _print_hits(query: str, hits: list[SearchHit]) -> None:
    from rich.console import Console
    from rich.text import Text

    if not hits:
        typer.echo("no results")
        return
    from rag.terminal import printable, printable_name

    console = Console(highlight=False, soft_wrap=True)
    words = [w for w in re.split(r"\W+", query) if len(w) > 2]
    for number, hit in enumerate(hits, 1):
        lines = f"{hit.coordinates.get('startLine', '?')}-{hit.coordinates.get('endLine', '?')}"
        where = f"{printable_name(hit.path)}:{lines}"
        names = ", ".join(hit.fqns or ())  # a merged chunk: every name it holds
        label = names or hit.coordinates.get("fqn") or hit.coordinates.get("headerPath") or ""
        scores = [f"{'rrf' if hit.fusion == 'rrf' else 'fused'} {hit.score:.4f}"]
        if hit.bm25_rank:
            scores.append(f"bm25 #{hit.bm25_rank} {hit.bm25:.2f}")
        if hit.vector_rank:
            scores.append(f"vector #{hit.vector_rank} {hit.vector:.3f}")
        if hit.rerank is not None:
            scores.append(f"rerank {hit.rerank:.3f}")
        header = Text(f"{number}. ", style="bold")
        header.append(printable(where), style="bold cyan")
        # (a markdown file's type and language are one word: said once)
        kind = ", ".join(dict.fromkeys(k for k in (hit.source_name, hit.source_type, hit.language) if k))
        header.append(printable(f"  {label}  [{kind}]  {', '.join(scores)}"))
        console.print(header)
        if hit.url or hit.absolute_path:  # a Confluence page's web address, or a local file
            console.print(Text(f"   {printable_name(hit.url or hit.absolute_path or '')}", style="dim"))
        snippet = Text(printable("\n".join("   " + line for line in hit.content.strip().splitlines()[:6])))
        snippet.highlight_words(words, style="bold yellow", case_sensitive=False)
        console.print(snippet)
