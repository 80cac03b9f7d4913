"""Every CLI command has help text with an example and is documented in README."""

from pathlib import Path
from typing import Any

import pytest
import typer.main

from rag.cli import app

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def _commands() -> list[tuple[str, Any]]:
    found = []

    def walk(group: Any, prefix: str) -> None:
        for name, command in group.commands.items():
            full = f"{prefix} {name}".strip()
            if hasattr(command, "commands"):
                walk(command, full)
            else:
                found.append((full, command))

    walk(typer.main.get_command(app), "")
    return found


@pytest.mark.parametrize(("name", "command"), _commands(), ids=lambda v: v if isinstance(v, str) else "")
def test_command_is_documented(name: str, command: Any) -> None:
    assert command.help and "Example:" in command.help, f"rag {name} needs a docstring with an example"
    assert f"`rag {name}" in README, f"README does not document `rag {name}`"


def test_every_option_is_in_readme() -> None:
    """Each long option of each command (and the global ones) appears in README with its name."""
    root = typer.main.get_command(app)
    options = {opt for param in root.params for opt in getattr(param, "opts", ())}
    for _, command in _commands():
        options |= {opt for param in command.params for opt in getattr(param, "opts", ())}
    missing = sorted(opt for opt in options if opt.startswith("--") and opt not in README)
    assert missing == [], f"README does not mention {missing}"
