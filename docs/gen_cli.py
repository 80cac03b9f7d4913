"""docs/cli.md: the ``--help`` of every ``rag`` command, generated, never edited.

``make docs`` (``python docs/gen_cli.py``) writes it; ``--stdout`` prints it
instead, which tests/test_docs.py compares with the file, so the reference
cannot drift from the code. Every command and subcommand is found by walking
the click tree of ``rag.cli.app`` and its help captured with typer's
CliRunner at a fixed width, without colours, so the output is the same on
every machine. Run it in a process of its own: typer reads the width and
terminal settings when it first formats help.
"""

import os
import re
import sys
from pathlib import Path

WIDTH = "100"
# Before typer is imported: typer.rich_utils reads these once, at import.
os.environ.update({"COLUMNS": WIDTH, "TERMINAL_WIDTH": WIDTH, "NO_COLOR": "1",
                   "_TYPER_FORCE_DISABLE_TERMINAL": "1"})
for forcing_colour in ("FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS"):
    os.environ.pop(forcing_colour, None)

from typing import Any  # noqa: E402

import typer.core  # noqa: E402
import typer.main  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from rag.cli import app  # noqa: E402

CLI_MD = Path(__file__).resolve().parent / "cli.md"
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

HEADER = """\
# `rag` command reference

Generated from `rag … --help` by `docs/gen_cli.py` (`make docs`); do not edit
by hand: `tests/test_docs.py` fails when this file is out of date. README.md
has the overview; each section below is one command's own help.
"""


def command_paths() -> list[list[str]]:
    """Every command as its words after `rag`, groups before their subcommands, in help order."""
    paths: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:  # typer's own click: no public type
        paths.append(path)
        if isinstance(command, typer.core.TyperGroup):
            for name, sub in command.commands.items():
                if not sub.hidden:
                    walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def help_text(path: list[str]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="rag", catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(f"rag {' '.join(path)} --help exited with {result.exit_code}: {result.output}")
    lines = ANSI_ESCAPE.sub("", result.output).splitlines()
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def render() -> str:
    sections = [HEADER]
    for path in command_paths():
        title = " ".join(["rag", *path])
        sections.append(f"## `{title}`\n\n```text\n{help_text(path)}\n```\n")
    return "\n".join(sections)


def main() -> None:
    text = render()
    if sys.argv[1:] == ["--stdout"]:
        sys.stdout.write(text)
    else:
        CLI_MD.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
