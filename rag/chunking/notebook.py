"""Jupyter notebook chunking (.ipynb, nbformat 4), through the Markdown
section chunker.

The notebook is rendered as Markdown: a markdown cell as its own lines (its
headers give the sections and headerPath of the cells after them), a code
cell as a fence in the notebook's language (never split while it fits, cut
at lines otherwise), each cell ending at a blank line; outputs, raw cells and
attachments are dropped. A block never reaches past its cell. Chunk contents
are that rendered text; startLine/endLine are lines of the .ipynb file: those
of the JSON strings holding the cell's source (a fence's lines are its
cell's first and last source lines; a source kept as one JSON string lies on
one line).

Chunks get sourceType "code" and the notebook's language (kernelspec or
language_info, "python" when neither names one), so language filters find
notebooks with the rest of that language's code.
"""

import json
import re
from bisect import bisect_right
from json.decoder import scanstring  # type: ignore[attr-defined]  # not in typeshed
from json.scanner import py_make_scanner  # type: ignore[attr-defined]
from typing import Any

from rag.chunking.markdown import Block, add_markdown_blocks
from rag.chunking.model import Chunk
from rag.chunking.rendered import Rendering
from rag.errors import ChunkingError

_BACKTICKS = re.compile("`+")
_NEWLINE = re.compile("\n")


class _Located(str):
    """A JSON string value that knows the offset of its opening quote."""

    offset: int


def _located_string(string: str, end: int, strict: bool) -> tuple[_Located, int]:
    value, after = scanstring(string, end, strict)
    result = _Located(value)
    result.offset = end - 1
    return result, after


class _LocatingDecoder(json.JSONDecoder):
    """The standard decoder, its pure-Python scanner making every string value
    a ``_Located`` (the C scanner takes no hooks; keys stay plain strings)."""

    def __init__(self) -> None:
        super().__init__()
        self.parse_string = _located_string
        self.scan_once = py_make_scanner(self)


def chunk_notebook(text: str, path: str, *, max_tokens: int, overlap: int) -> list[Chunk]:
    """Chunks of a notebook's markdown and code cells, each with headerPath."""
    notebook = _load(text)
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise ChunkingError('not a Jupyter notebook: no "cells" list (nbformat 4 is read)')
    language = _language(notebook)
    newlines = [match.start() for match in _NEWLINE.finditer(text)]
    rendering = Rendering()
    for number, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("markdown", "code"):
            continue
        source = _source_lines(cell.get("source"), newlines)
        if source is None:
            raise ChunkingError(f"cell {number + 1}: source must be a string or a list of strings")
        while source and not source[-1][0].strip():
            source.pop()
        if not source:
            continue
        if cell["cell_type"] == "markdown":
            first = len(rendering.lines)
            for line, origin in source:
                rendering.append(line, origin, origin)
            add_markdown_blocks(rendering.sections, rendering.lines, first, len(rendering.lines))
        else:
            _add_code(rendering, source, language)
        rendering.add_blank()
    return rendering.chunks(
        path, source_type="code", language=language, max_tokens=max_tokens, overlap=overlap
    )


def _load(text: str) -> Any:
    """The notebook's JSON, with every string value a ``_Located``."""
    try:
        return _LocatingDecoder().decode(text)
    except json.JSONDecodeError as error:
        raise ChunkingError(f"invalid notebook JSON: {error}") from error
    except RecursionError as error:
        raise ChunkingError("invalid notebook JSON: nested too deeply") from error


def _language(notebook: dict[str, Any]) -> str:
    metadata = notebook.get("metadata")
    if isinstance(metadata, dict):
        for key, field in (("kernelspec", "language"), ("language_info", "name")):
            section = metadata.get(key)
            name = section.get(field) if isinstance(section, dict) else None
            if isinstance(name, str) and name.strip():
                return name.strip().lower()
    return "python"


def _source_lines(source: object, newlines: list[int]) -> list[tuple[str, int]] | None:
    """The cell's source lines, each with the 1-based line of the JSON string
    it comes from; None when ``source`` is neither a string nor a list of them."""
    parts = [source] if isinstance(source, str) else source
    if not isinstance(parts, list) or not all(isinstance(part, _Located) for part in parts):
        return None
    lines: list[tuple[str, int]] = []
    pending, pending_origin = "", 0
    for part in parts:
        origin = bisect_right(newlines, part.offset) + 1
        pieces = (pending + part).split("\n")
        lines.extend((piece, origin) for piece in pieces[:-1])
        pending = pieces[-1]
        if pending:
            pending_origin = origin
    if pending:
        lines.append((pending, pending_origin))
    return lines


def _add_code(rendering: Rendering, source: list[tuple[str, int]], language: str) -> None:
    """A code cell as a fence longer than any run of backticks inside it."""
    longest = max((len(run) for line, _ in source for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    first_origin, last_origin = source[0][1], source[-1][1]
    first = rendering.append(fence + language, first_origin, first_origin)
    for line, origin in source:
        rendering.append(line, origin, origin)
    rendering.append(fence, last_origin, last_origin)
    rendering.sections.add(Block(first, first + len(source) + 2, "fence"))
