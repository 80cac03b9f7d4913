"""The documents match the code: every CLI command has help text with an example, its own
section in the generated docs/cli.md (up to date, with each of its options), a row in
docs/reference.md's command table and a place in README's overview table; README stays within 250
lines; README's SQL API table with docs/reference.md's "SQL functions"
lists exactly the public ``rag.*`` functions the schema installs."""

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
import typer.core
import typer.main

from rag import db
from rag.cli import app

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
REFERENCE = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
CLI_MD_PATH = ROOT / "docs" / "cli.md"
CLI_MD = CLI_MD_PATH.read_text(encoding="utf-8")


def _commands() -> list[tuple[str, Any]]:
    """Every command a user runs, as its words after `rag` (`graph find`), groups left out.
    Commands are typed Any: typer carries its own click, with no public command type."""
    found = []

    def walk(group: typer.core.TyperGroup, prefix: str) -> None:
        for name, command in group.commands.items():
            full = f"{prefix} {name}".strip()
            if isinstance(command, typer.core.TyperGroup):
                walk(command, full)
            else:
                found.append((full, command))

    root = typer.main.get_command(app)
    assert isinstance(root, typer.core.TyperGroup)
    walk(root, "")
    return found


COMMANDS = _commands()


def _long_options(command: Any) -> set[str]:
    return {opt for param in command.params for opt in getattr(param, "opts", ()) if opt.startswith("--")}


def _section(markdown: str, heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    level = heading.split(" ")[0]
    start = markdown.index(f"\n{heading}\n")
    after = markdown[start + len(heading) + 2:]
    next_heading = re.search(rf"^#{{1,{len(level)}}} ", after, flags=re.MULTILINE)
    return after[: next_heading.start()] if next_heading else after


def _table_first_cells(text: str) -> list[str]:
    return [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ")]


def test_commands_are_found() -> None:
    names = {name for name, _ in COMMANDS}
    assert {"index", "search", "db url", "graph find", "graph callers"} <= names


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_command_has_help_with_an_example(name: str, command: Any) -> None:
    assert command.help and "Example:" in command.help, f"rag {name} needs a docstring with an example"


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_command_options_are_in_its_own_section(name: str, command: Any) -> None:
    section = _section(CLI_MD, f"## `rag {name}`")
    missing = sorted(opt for opt in _long_options(command) if opt not in section)
    assert missing == [], f"docs/cli.md's section on `rag {name}` lacks {missing}; run `make docs`"


def test_global_options_are_in_the_root_section() -> None:
    section = _section(CLI_MD, "## `rag`")
    missing = sorted(opt for opt in _long_options(typer.main.get_command(app)) if opt not in section)
    assert missing == [], f"docs/cli.md's section on `rag` lacks {missing}; run `make docs`"


def test_every_command_is_in_readme_overview_table() -> None:
    """A row may name a few related commands (`rag db url`, `rag db stop`, `rag psql`)."""
    cells = _table_first_cells(_section(README, "## CLI"))
    missing = [name for name, _ in COMMANDS if not any(f"`rag {name}`" in cell for cell in cells)]
    assert missing == [], f"README's command table lacks {missing}"


def test_every_command_is_in_the_reference_table() -> None:
    rows = _table_first_cells(_section(REFERENCE, "## Commands"))
    missing = [name for name, _ in COMMANDS if not any(row.startswith(f"`rag {name}`") for row in rows)]
    assert missing == [], f"docs/reference.md's command table lacks {missing}"


def test_readme_is_short() -> None:
    """README is a newcomer's page: what it is, install, a sample, the setup. Details go to docs/."""
    lines = len(README.splitlines())
    assert lines <= 250, f"README.md has {lines} lines; move details to docs/ (at most 250)"


def test_cli_reference_is_up_to_date() -> None:
    """docs/cli.md is what docs/gen_cli.py makes now (a process of its own: typer reads the
    terminal width once, at import)."""
    generated = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "gen_cli.py"), "--stdout"],
        capture_output=True, check=True, encoding="utf-8",
    ).stdout
    assert generated == CLI_MD, "docs/cli.md is out of date: run `make docs`"


def _readme_sql_names() -> set[str]:
    """The functions README's SQL API table names, with the rest in docs/reference.md."""
    cells = _table_first_cells(_section(README, "## SQL API"))
    cells += _table_first_cells(_section(REFERENCE, "## SQL functions"))
    return {name for cell in cells for name in re.findall(r"`rag\.(\w+)", cell)}


def test_readme_sql_table_matches_the_catalog(rag_db: db.DatabaseTarget) -> None:
    with psycopg.connect(rag_db.url) as conn:
        functions = {row[0] for row in conn.execute(
            "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = 'rag' AND p.proname NOT LIKE '\\_%'")}
        relations = {row[0] for row in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'rag' AND c.relkind IN ('v', 'r')")}
    documented = _readme_sql_names()
    assert sorted(functions - documented) == [], "public rag.* functions in neither README's SQL API table nor docs/reference.md"
    assert sorted(documented - functions - relations) == [], "README or docs/reference.md names a function that does not exist"
