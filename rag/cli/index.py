"""``rag index``: choosing the sources to index (a name, --all, --path, --git, --confluence, or
the folder the command runs in), and ``--dry-run``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rag.cli.root import app, echo_json, state
from rag.errors import RagError
from rag.terminal import printable, printable_name

if TYPE_CHECKING:
    from rag.config import SourceSpec
    from rag.service import RagService


@app.command()
def index(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(
        help="A source from the config or the database (default: the source rooted here).")] = None,
    all_sources: Annotated[bool, typer.Option(
        "--all", help="Every source in the config and in the database.")] = False,
    path: Annotated[str | None, typer.Option("--path", help="Index this folder ad hoc.")] = None,
    git: Annotated[str | None, typer.Option("--git", help="Index this git repository ad hoc.")] = None,
    branch: Annotated[str | None, typer.Option(
        "--branch", help="Git branch (with --git; default: the one used before, else the remote's).")] = None,
    confluence: Annotated[str | None, typer.Option(
        "--confluence", help="Index pages of this Confluence site ad hoc (base URL; with --space/--cql "
        "and --name).")] = None,
    space: Annotated[list[str] | None, typer.Option(
        "--space", help="A Confluence space key (with --confluence; repeatable).")] = None,
    cql: Annotated[str | None, typer.Option(
        "--cql", help="Pages a CQL query finds (with --confluence; within the --space keys).")] = None,
    flavor: Annotated[str | None, typer.Option(
        "--flavor", help="cloud or server (with --confluence; default: cloud for *.atlassian.net).")] = None,
    source_name: Annotated[
        str | None, typer.Option("--name", help="Source name for --path/--git/--confluence (default: "
                                 "folder/repo name; required with --confluence).")
    ] = None,
    include: Annotated[list[str] | None, typer.Option(
        "--include", help="Only paths matching this glob (--path/--git; repeatable; kept with the source).")
    ] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", help="Skip paths matching this glob (--path/--git; repeatable; kept with the source).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Re-chunk every file (embeddings are still reused).")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be indexed; change nothing.")
    ] = False,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="With --dry-run: list every skipped path with its reason.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary per source.")] = False,
) -> None:
    """Index a source: only new and changed files are chunked, only new text is embedded.

    Example: rag index --path ~/code/my-project --name my-project --exclude "*.min.js"

    Example: rag index --confluence https://acme.atlassian.net/wiki --space ENG --name wiki
    """
    from rag.progress import TerminalReporter

    service = state(ctx).service
    if confluence or space or cql or flavor:
        specs = [_confluence_source(service, name, all_sources, path, git, confluence, tuple(space or ()),
                                    cql, flavor, source_name, bool(include or exclude or branch))]
    else:
        specs = _sources_to_index(service, name, all_sources, path, git, branch, source_name,
                                  tuple(include or ()), tuple(exclude or ()))
    if dry_run:
        for spec in specs:
            _dry_run(service, spec, as_json, verbose)
        return
    for spec in specs:
        try:
            with TerminalReporter(spec.name, quiet=as_json) as reporter:
                summary = service.index(spec, force=force, reporter=reporter)
                reporter.finished(summary)
        except KeyboardInterrupt:
            typer.echo(f"interrupted: the files of {spec.name} stored so far are kept; "
                       f"rag index {spec.name} goes on from there", err=True)
            raise typer.Exit(130) from None
        if as_json:
            echo_json(summary)


def _sources_to_index(
    service: RagService, name: str | None, all_sources: bool, path: str | None, git: str | None,
    branch: str | None, source_name: str | None, include: tuple[str, ...], exclude: tuple[str, ...],
) -> list[SourceSpec]:
    from rag.sources.folder import folder_source
    from rag.sources.repository import git_source

    chosen = [bool(name), all_sources, bool(path), bool(git)]
    if sum(chosen) > 1:
        raise RagError("say what to index: a source NAME, --all, --path PATH or --git URL (one of them)")
    if branch and not git:
        raise RagError("--branch goes with --git")
    if source_name and not (path or git):
        raise RagError("--name goes with --path or --git; a configured source is named by NAME")
    if (include or exclude) and not (path or git):
        raise RagError("--include/--exclude go with --path or --git; an indexed source keeps its own "
                       "(a configured one: set include/exclude in the config)")
    if name:
        spec = service.known_source(name)
        if spec is None:
            known = ", ".join(service.known_source_names()) or "none yet"
            raise RagError(f"no source {name!r} in the config or the database (known: {known}); "
                           "index a folder with --path or a repository with --git")
        return [spec]
    if all_sources:
        specs = service.every_source()
        if not specs:
            raise RagError("no sources yet, in the config or the database; use --path or --git")
        return specs
    if path:
        folder = Path(path).expanduser().resolve()
        if not folder.is_dir():
            raise RagError(f"--path {path}: not a directory")
        return [service.remembered(folder_source(folder, source_name, include, exclude))]
    if git:
        return [service.remembered(git_source(git, branch, source_name, include, exclude))]
    here = Path.cwd().resolve()
    spec = service.source_at(here)
    if spec is None:
        raise RagError(f"{here} is not the root of an indexed source; run `rag index --path .` to index it, "
                       "or give a source NAME, --all or --git URL")
    return [spec]


def _confluence_source(
    service: RagService, name: str | None, all_sources: bool, path: str | None, git: str | None,
    base_url: str | None, spaces: tuple[str, ...], cql: str | None, flavor: str | None,
    source_name: str | None, file_options: bool,
) -> SourceSpec:
    from rag.sources.confluence.space import confluence_source

    if not base_url:
        raise RagError("--space, --cql and --flavor go with --confluence BASE_URL")
    if name or all_sources or path or git:
        raise RagError("say what to index: a source NAME, --all, --path PATH, --git URL or --confluence URL "
                       "(one of them)")
    if file_options:
        raise RagError("--branch, --include and --exclude do not go with --confluence; choose pages with "
                       "--space and --cql")
    if flavor not in (None, "cloud", "server"):
        raise RagError(f"--flavor {flavor}: use cloud or server")
    if not source_name:
        raise RagError("--confluence needs --name NAME: the name the pages are searched and updated by")
    return service.remembered(confluence_source(base_url, spaces, cql, source_name, flavor))


def _dry_run(service: RagService, spec: SourceSpec, as_json: bool, verbose: bool) -> None:
    from rag.progress import plural

    out = service.dry_run(spec, verbose=verbose)
    if as_json:
        echo_json(out)
        return
    for path in out.files:
        typer.echo(printable_name(path))
    would = out.new + out.changed + out.moved
    done = ", ".join(f"{count:,} {action}" for action, count in (
        ("new", out.new), ("changed", out.changed), ("moved", out.moved), ("unchanged", out.unchanged),
        ("deleted", out.deleted)) if count)
    typer.echo(f"# {spec.name}: {plural(would, 'file')} would be indexed ({done or 'nothing found'}) "
               f"from {out.root}", err=True)
    for reason, count in out.skipped.items():
        folders = out.skipped_folders.get(reason, 0)
        what = [plural(count - folders, "file")] if count > folders else []
        what += [f"{plural(folders, 'folder')} (not walked: its files are not counted)"] if folders else []
        typer.echo(f"#   skipped ({reason}): {' and '.join(what)}", err=True)
        for path in (out.skipped_paths or {}).get(reason, []):
            typer.echo(f"#     {printable_name(path)}", err=True)
    for problem in out.file_errors:
        typer.echo(printable(f"#   error: {printable_name(problem.path)}: {problem.error}"), err=True)
    if out.contextual_calls is not None:
        typer.echo(f"#   contextual text: {plural(out.contextual_calls, 'LLM request')} "
                   "(chunks whose text is not cached yet)", err=True)
