"""``rag graph …``: the code graph from the command line, over ``rag.graph``.

Parses options and formats rows; finding and walking are SQL functions
(``sql/05x_graph_*.sql``) reached through ``rag.graph``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from rag.cli.root import FriendlyErrors, app, state
from rag.terminal import printable, printable_name

if TYPE_CHECKING:
    from rag.schemas import TraversalOutput

graph_app = typer.Typer(
    cls=FriendlyErrors, no_args_is_help=True,
    help="The code graph: definitions, callers, callees, subclasses, superclasses.",
)
app.add_typer(graph_app, name="graph")

Sources = Annotated[list[str] | None, typer.Option("--source", "-s", help="Only these sources (repeatable).")]
Depth = Annotated[int, typer.Option("--depth", "-d", min=1, max=10, help="How many edges away (1-10).")]
AsJson = Annotated[bool, typer.Option("--json", help="One JSON object with results.")]
Symbol = Annotated[str, typer.Argument(help="An fqn (Cart.total), a bare name, or path:fqn.")]
Dynamic = Annotated[bool, typer.Option(
    "--dynamic", help="Also calls x.f() on receivers of unknown type, to every method f (guesses).")]


@graph_app.command("find")
def find(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A name, an fqn or path:fqn.")],
    source: Sources = None,
    kind: Annotated[list[str] | None, typer.Option("--kind", help="CLASS, FUNCTION, METHOD, ...")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="List at most this many.")] = 50,
    as_json: AsJson = False,
) -> None:
    """Find definitions by name, fqn or path:fqn (exact fqns first, at most --limit, with the count).

    Example: rag graph find Cart.total --source shop
    """
    found = state(ctx).service.find_symbols(name, source, kind, limit)
    if as_json:
        typer.echo(found.model_dump_json(by_alias=True))
        return
    for row in found.results:
        typer.echo(printable(f"{printable_name(row.path)}:{row.start_line}-{row.end_line}  "
                             f"{row.fqn} ({row.kind})  {row.signature}"))
    shown = len(found.results)
    from rag.progress import plural

    typer.echo(f"# {plural(found.total, 'definition')}" + (f", {shown} shown" if shown < found.total else ""),
               err=True)


def _walk(ctx: typer.Context, relation: str, symbol: str, source: list[str] | None, depth: int,
          as_json: bool, dynamic: bool = False) -> None:
    from rag.graph import named_relation

    found = state(ctx).service.traverse(symbol, *named_relation(relation), depth, source, dynamic)
    _print(found, as_json)


def _print(found: TraversalOutput, as_json: bool) -> None:
    if as_json:
        typer.echo(found.model_dump_json(by_alias=True))
        return
    if not found.results:
        typer.echo("# nothing found", err=True)
    for row in found.results:
        mark = "  (ambiguous)" if row.ambiguous else ""
        what = row.fqn or "<module>"
        where = f"{printable_name(row.path)}:{row.start_line}-{row.end_line}"
        typer.echo(printable(f"{'  ' * (row.depth - 1)}{where}  {what} ({row.kind}){mark}"))


@graph_app.command("callers")
def callers(ctx: typer.Context, symbol: Symbol, source: Sources = None, depth: Depth = 1,
            as_json: AsJson = False, dynamic: Dynamic = False) -> None:
    """Who calls SYMBOL, up to --depth calls away (ambiguous calls are marked; --dynamic adds
    x.SYMBOL() calls whose receiver type is unknown).

    Example: rag graph callers Cart.total --depth 2
    """
    _walk(ctx, "callers", symbol, source, depth, as_json, dynamic)


@graph_app.command("callees")
def callees(ctx: typer.Context, symbol: Symbol, source: Sources = None, depth: Depth = 1,
            as_json: AsJson = False, dynamic: Dynamic = False) -> None:
    """What SYMBOL calls, up to --depth calls away.

    Example: rag graph callees checkout --json
    """
    _walk(ctx, "callees", symbol, source, depth, as_json, dynamic)


@graph_app.command("subclasses")
def subclasses(ctx: typer.Context, symbol: Symbol, source: Sources = None, depth: Depth = 1,
               as_json: AsJson = False) -> None:
    """Classes and interfaces that extend or implement SYMBOL.

    Example: rag graph subclasses Base --depth 3
    """
    _walk(ctx, "subclasses", symbol, source, depth, as_json)


@graph_app.command("superclasses")
def superclasses(ctx: typer.Context, symbol: Symbol, source: Sources = None, depth: Depth = 1,
                 as_json: AsJson = False) -> None:
    """What SYMBOL extends or implements.

    Example: rag graph superclasses shop/models.py:Item
    """
    _walk(ctx, "superclasses", symbol, source, depth, as_json)
