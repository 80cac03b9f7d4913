"""Russian text as a user sees it (issue 39): unescaped UTF-8 in `--json` and MCP results,
`rag chunk`, `rag read --section` with a Cyrillic header path, and index progress lines."""

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes import HashEmbedder
from plugins.mcp import Harness
from typer.testing import CliRunner

from rag import db
from rag.cli import app

runner = CliRunner()

GUIDE = ("# Руководство\n\nВведение.\n\n## Резервное копирование\n\n"
         "Команда pg_dump делает резервную копию базы данных.\nЁмкость диска проверяйте заранее.\n")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "проект"
    (root / "документы").mkdir(parents=True)
    (root / "документы" / "руководство.md").write_text(GUIDE, encoding="utf-8")
    return root


def rag(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_cli_shows_russian_unescaped(project: Path, rag_db: db.DatabaseTarget, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    code, _, err = rag("index", "--path", str(project), "--name", "ru")
    assert code == 0, err

    code, out, _ = rag("search", "резервное копирование", "--json")
    assert code == 0 and "\\u" not in out
    [hit] = json.loads(out)["results"]
    assert hit["path"] == "документы/руководство.md" and "резервную копию" in hit["snippet"]
    code, out, _ = rag("search", "емкость диска")  # ё written as е
    assert code == 0 and out.startswith("1. документы/руководство.md")

    section = "# Руководство > ## Резервное копирование"
    code, out, err = rag("read", "документы/руководство.md", "--section", section, "--json")
    assert code == 0, err
    assert "\\u" not in out and json.loads(out)["content"].startswith("## Резервное копирование\n")
    code, out, _ = rag("read", "документы/руководство.md", "--section", section)
    assert code == 0 and "Ёмкость диска проверяйте заранее." in out

    code, out, _ = rag("chunk", str(project / "документы" / "руководство.md"))
    assert code == 0 and "# Руководство" in out
    code, out, _ = rag("chunk", "--json", str(project / "документы" / "руководство.md"))
    assert code == 0 and "\\u" not in out and "Резервное копирование" in out


def test_mcp_results_are_unescaped_utf8(project: Path, rag_db: db.DatabaseTarget,
                                        monkeypatch: pytest.MonkeyPatch,
                                        make_harness: Callable[..., Harness]) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    h = make_harness(embedder=HashEmbedder(8))
    assert h.ok("index", {"path": str(project), "name": "ru"})["status"] == "succeeded"
    result = h.call("search", {"query": "Как сделать резервную копию базы данных"})
    text = result.content[0].text  # type: ignore[union-attr]
    assert "\\u" not in text and "резервную копию" in text
    read = h.ok("read_source", {"source": "ru", "path": "документы/руководство.md",
                                "headerPath": "# Руководство > ## Резервное копирование"})
    assert "Ёмкость диска" in read["content"]
