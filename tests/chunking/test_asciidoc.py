"""AsciiDoc chunking: = titles, delimited blocks kept whole and not read for titles."""

from pathlib import Path

import pytest
from fixtures.docs.invariants import assert_chunk_invariants

from rag.chunking.asciidoc import chunk_asciidoc
from rag.chunking.model import Chunk

# These tests look at the sections the parser finds; merging them: test_section_merging.py
pytestmark = pytest.mark.usefixtures("sections_unmerged")

MANUAL = Path(__file__).parent / "fixtures" / "structured" / "manual.adoc"


def chunk(text: str, max_tokens: int = 1000, overlap: int = 0) -> list[Chunk]:
    chunks = chunk_asciidoc(text, "docs/manual.adoc", max_tokens=max_tokens, overlap=overlap)
    assert_chunk_invariants(text, chunks, max_tokens)
    return chunks


def test_fixture_sections_lines_and_header_paths() -> None:
    chunks = chunk(MANUAL.read_text())
    assert [(c.metadata["startLine"], c.metadata["endLine"], c.metadata["headerPath"]) for c in chunks] == [
        (1, 4, "# Tool Manual"),
        (6, 16, "# Tool Manual > ## Installing"),
        (18, 20, "# Tool Manual > ## Installing > ### From source"),
        (22, 29, "# Tool Manual > ## Searching"),
    ]
    assert {(c.metadata["sourceType"], c.metadata["language"]) for c in chunks} == {("text", "asciidoc")}
    # The "== ..." line inside the listing block stays its text.
    assert "[source,bash]\n.Install command\n----\npip install tool\n\n== not a title" in chunks[1].content


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("= Doc\n\n== A ==\n\na\n\n=== B\n\nb\n", ["# Doc > ## A", "# Doc > ## A > ### B"]),
        ("## Markdown style\n\nx\n", ["## Markdown style"]),
        ("====\nexample block\n====\n", [""]),
        ("==no space is text\n", [""]),
        ("....\n== literal\n", [""]),  # an unclosed block runs to the end
    ],
)
def test_what_is_a_title(text: str, expected: list[str]) -> None:
    assert [c.metadata["headerPath"] for c in chunk(text)] == expected


def test_a_delimited_block_is_kept_whole_while_it_fits() -> None:
    listing = "[source,python]\n----\n" + "".join(f"step_{i}()\n" for i in range(15)) + "----\n"
    text = "== Steps\n\n" + "".join(f"Words of paragraph {i}.\n\n" for i in range(10)) + listing
    chunks = chunk(text, max_tokens=80, overlap=10)
    assert len(chunks) > 1
    assert any(listing in c.content for c in chunks)


def test_crlf_files_have_the_same_sections() -> None:
    text = MANUAL.read_text()
    def spans(chunks: list[Chunk]) -> list[tuple[int, int, str]]:
        return [(c.metadata["startLine"], c.metadata["endLine"], c.metadata["headerPath"]) for c in chunks]
    assert spans(chunk(text.replace("\n", "\r\n"))) == spans(chunk(text))
