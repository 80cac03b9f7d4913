"""Jupyter notebook chunking: markdown and code cells, outputs dropped, lines
of the .ipynb file, and notebooks that are not what they claim."""

import json
from pathlib import Path

import pytest

from rag.chunking.model import Chunk
from rag.chunking.notebook import chunk_notebook
from rag.errors import ChunkingError

# These tests look at the sections the parser finds; merging them: test_section_merging.py
pytestmark = pytest.mark.usefixtures("sections_unmerged")

STRUCTURED = Path(__file__).parent / "fixtures" / "structured"


def chunk(text: str, max_tokens: int = 1000, overlap: int = 0) -> list[Chunk]:
    return chunk_notebook(text, "nb/train.ipynb", max_tokens=max_tokens, overlap=overlap)


def notebook(*cells: dict[str, object], language: str | None = "python") -> str:
    metadata = {"kernelspec": {"language": language, "name": "k"}} if language else {}
    return json.dumps({"cells": list(cells), "metadata": metadata, "nbformat": 4}, indent=1)


def markdown(source: str | list[str]) -> dict[str, object]:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def code(source: str | list[str]) -> dict[str, object]:
    return {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 1, "source": source}


def test_fixture_cells_sections_and_json_lines() -> None:
    text = (STRUCTURED / "train.ipynb").read_text()
    chunks = chunk(text)
    assert [(c.metadata["startLine"], c.metadata["endLine"], c.metadata["headerPath"]) for c in chunks] == [
        (7, 29, "# Training"),  # "# Training\n" is on line 7, the code's last line on 29
        (42, 50, "# Training > ## Evaluation"),
    ]
    assert {(c.metadata["sourceType"], c.metadata["language"]) for c in chunks} == {("code", "python")}
    assert chunks[0].content == (
        "# Training\n\nWe train a model.\n\n"
        "```python\nimport numpy as np\n\ndef loss(x):\n    return (x ** 2).mean()\n```\n"
    )
    assert chunks[1].content == "## Evaluation\nWe evaluate it.\n\n```python\nprint(loss(np.ones(3)))\n```\n"
    everything = "".join(c.content for c in chunks)
    assert "OUTPUT TEXT" not in everything and "raw cell" not in everything


def test_code_cells_stay_whole_and_chunks_end_at_cell_boundaries() -> None:
    cells = [markdown("# Steps")]
    for i in range(8):
        cells.append(markdown(f"Step {i} explains what the next cell does."))
        cells.append(code([f"x_{i} = load({i})\n", f"y_{i} = fit(x_{i})\n", f"print(y_{i})"]))
    chunks = chunk(notebook(*cells), max_tokens=70, overlap=0)
    assert len(chunks) > 2
    for c in chunks:
        assert c.content.count("```python\n") == c.content.count("\n```\n")  # fences closed
        body = c.content.removeprefix("# Steps\n")
        assert body.lstrip().startswith(("Step", "```python")), c.content
    for i in range(8):  # every cell is whole in some chunk
        assert any(f"x_{i} = load({i})\ny_{i} = fit(x_{i})\nprint(y_{i})\n```" in c.content for c in chunks)


def test_a_code_cell_over_the_bound_is_cut_into_fenced_pieces() -> None:
    cell = code([f"value_{i} = compute({i})\n" for i in range(60)])
    chunks = chunk(notebook(markdown("# Big"), cell, language="julia"), max_tokens=50, overlap=5)
    assert len(chunks) > 3
    assert all(c.metadata["language"] == "julia" and c.tokens <= 50 for c in chunks)
    assert all("```julia\n" in c.content and c.content.endswith("```\n") for c in chunks)
    starts = [c.metadata["startLine"] for c in chunks]
    assert starts == sorted(starts)


def test_a_markdown_fence_left_open_ends_with_its_cell() -> None:
    chunks = chunk(notebook(markdown("```\nnot closed"), markdown("# After\ntext")))
    assert [c.metadata["headerPath"] for c in chunks] == ["", "# After"]


def test_language_falls_back_to_language_info_then_python() -> None:
    text = json.dumps({"cells": [code("1 + 1")], "metadata": {"language_info": {"name": "R"}}})
    assert chunk(text)[0].metadata["language"] == "r"
    assert chunk(notebook(code("1 + 1"), language=None))[0].metadata["language"] == "python"


def test_empty_notebooks_give_no_chunks() -> None:
    assert chunk(notebook()) == []
    assert chunk(notebook(code([]), markdown(["\n", "  "]))) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ((STRUCTURED / "broken.ipynb").read_text(), "invalid notebook JSON: .* line 20 column 6"),
        ("[1, 2]", 'no "cells" list'),
        ('{"cells": {}}', 'no "cells" list'),
        ('{"cells": [{"cell_type": "code", "source": 3}]}', "cell 1: source must be"),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_notebooks_that_cannot_be_read_raise_a_chunking_error(text: str, message: str) -> None:
    with pytest.raises(ChunkingError, match=message):
        chunk(text)
