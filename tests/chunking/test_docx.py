"""Word chunking: headings give sections, tables give rows, broken files give
errors. The documents are built here with python-docx."""

import zipfile
from io import BytesIO

import pytest
from docx import Document
from docx.document import Document as WordDocument
from fixtures.docs.invariants import assert_chunk_invariants

from rag.chunking.docx import chunk_docx
from rag.chunking.model import Chunk
from rag.dispatcher import chunk_bytes

# These tests look at the sections the parser finds; merging them: test_section_merging.py
pytestmark = pytest.mark.usefixtures("sections_unmerged")


def saved(document: WordDocument) -> bytes:
    out = BytesIO()
    document.save(out)
    return out.getvalue()


def sample_docx() -> bytes:
    document = Document()
    document.add_heading("Manual", level=0)  # the Title style
    document.add_paragraph("What this manual covers.")
    document.add_heading("Setup", level=1)
    document.add_heading("Linux", level=2)
    linux = document.add_paragraph("Install the package.")
    linux.add_run().add_break()
    linux.add_run("Then run it.")
    document.add_paragraph("# not a heading, just a paragraph")
    document.add_paragraph("```")  # nor a code fence
    document.add_heading("Reference", level=1)
    table = document.add_table(rows=3, cols=3)
    for row, cells in zip(table.rows, [["key", "value", "note"], ["a", "1", "x|y"]], strict=False):
        for cell, text in zip(row.cells, cells, strict=True):
            cell.text = text
    merged = table.rows[2].cells[0].merge(table.rows[2].cells[1])
    merged.text = "wide"
    table.rows[2].cells[2].text = "end"
    return saved(document)


def chunk(data: bytes, max_tokens: int = 1000, overlap: int = 0) -> tuple[str, list[Chunk]]:
    text, chunks, warnings = chunk_docx(data, "manual.docx", max_tokens=max_tokens, overlap=overlap)
    assert warnings == []
    assert_chunk_invariants(text, chunks, max_tokens, unsplit_line_tokens=8)
    return text, chunks


def test_stored_text_reads_like_markdown() -> None:
    text, _ = chunk(sample_docx())
    assert text == (
        "# Manual\n\nWhat this manual covers.\n\n"
        "# Setup\n\n## Linux\n\nInstall the package.\nThen run it.\n\n"
        "# not a heading, just a paragraph\n\n```\n\n"
        "# Reference\n\n| key | value | note |\n| --- | --- | --- |\n| a | 1 | x\\|y |\n"
        "| wide | end |\n\n"
    )


def test_headings_give_header_paths() -> None:
    _, chunks = chunk(sample_docx())
    assert [(c.metadata["headerPath"], c.metadata["headerLevel"]) for c in chunks] == [
        ("# Manual", 1),
        ("# Setup > ## Linux", 2),  # "Setup" has no text of its own: folded in
        ("# Reference", 1),
    ]
    assert "# not a heading" in chunks[1].content
    assert chunks[0].metadata == {
        "path": "manual.docx",
        "sourceType": "text",
        "language": "docx",
        "startLine": 1,
        "endLine": 3,
        "headerPath": "# Manual",
        "headerLevel": 1,
    }


def test_long_table_is_split_by_rows_with_its_header() -> None:
    document = Document()
    document.add_heading("Prices", level=1)
    table = document.add_table(rows=41, cols=2)
    for index, row in enumerate(table.rows):
        row.cells[0].text, row.cells[1].text = ("item", "price") if index == 0 else (f"i{index}", "9")
    _, chunks = chunk(saved(document), max_tokens=60, overlap=10)
    assert len(chunks) > 3
    for piece in chunks:
        assert piece.content.startswith("# Prices\n")
        assert "| item | price |\n| --- | --- |\n" in piece.content


def test_long_paragraph_text_is_split() -> None:
    document = Document()
    document.add_heading("Essay", level=1)
    for number in range(30):
        document.add_paragraph(" ".join(f"p{number}w{word}" for word in range(20)))
    _, chunks = chunk(saved(document), max_tokens=100, overlap=20)
    assert len(chunks) >= 7
    assert all(piece.content.startswith("# Essay\n") for piece in chunks)


def empty_zip() -> bytes:
    out = BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hello.txt", "not a word document")
    return out.getvalue()


@pytest.mark.parametrize(
    "data",
    [b"", b"PK\x03\x04 truncated zip", empty_zip(), b"\xd0\xcf\x11\xe0 an OLE file (encrypted .docx)"],
)
def test_unreadable_docx_gives_an_error(data: bytes) -> None:
    result = chunk_bytes(data, "broken.docx")
    assert result.chunks == []
    assert result.error is not None and result.error.startswith("unreadable .docx"), result.error


def test_chunk_bytes_routes_docx() -> None:
    result = chunk_bytes(sample_docx(), "docs/manual.DOCX")
    assert result.error is None
    assert result.text.startswith("# Manual\n")
    assert {c.metadata["language"] for c in result.chunks} == {"docx"}
