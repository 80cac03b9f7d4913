"""The dispatcher: which chunker a file goes to, and content problems turned
into FileChunks instead of exceptions."""

import codecs
import time
from pathlib import Path

import pytest
from fixtures.docs.invariants import assert_chunk_invariants
from hypothesis import given, settings
from hypothesis import strategies as st

from rag import dispatcher
from rag.dispatcher import FileChunks, chunk_bytes, chunk_file

DOCS = Path(__file__).parent / "fixtures" / "docs"
STRUCTURED = Path(__file__).parent / "fixtures" / "structured"


def source_types(result: FileChunks) -> set[tuple[str, str]]:
    return {(c.metadata["sourceType"], c.metadata["language"]) for c in result.chunks}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("guide.md", ("markdown", "markdown")),
        ("notes.txt", ("text", "text")),
        ("prices.csv", ("text", "csv")),
        ("changes.rst", ("text", "rst")),
    ],
)
def test_fixture_documents_are_routed_by_extension(name: str, expected: tuple[str, str]) -> None:
    result = chunk_file(DOCS / name, f"docs/{name}", max_tokens=200, overlap=20)
    assert (result.error, result.warnings) == (None, [])
    assert result.text == (DOCS / name).read_text()
    assert source_types(result) == {expected}
    assert {c.metadata["path"] for c in result.chunks} == {f"docs/{name}"}
    assert_chunk_invariants(result.text, result.chunks, 200, unsplit_line_tokens=30)


@pytest.mark.parametrize(
    ("name", "rel_path", "expected"),
    [
        ("guide.rst", "docs/guide.rst", ("text", "rst")),
        ("notes_rst.txt", "NEWS.txt", ("text", "rst")),  # .txt that reads as reST
        ("manual.adoc", "docs/manual.adoc", ("text", "asciidoc")),
        ("manual.adoc", "docs/manual.asciidoc", ("text", "asciidoc")),
        ("page.html", "site/page.html", ("text", "html")),
        ("page.html", "site/page.HTM", ("text", "html")),
        ("train.ipynb", "nb/train.ipynb", ("code", "python")),
    ],
)
def test_structured_documents_get_sections(name: str, rel_path: str, expected: tuple[str, str]) -> None:
    data = (STRUCTURED / name).read_bytes()
    result = chunk_bytes(data, rel_path, max_tokens=200, overlap=20)
    assert (result.error, result.warnings) == (None, [])
    assert result.text == data.decode()  # stored as on disk: chunk lines point into it
    assert source_types(result) == {expected}
    assert all(c.metadata["headerPath"].startswith("# ") for c in result.chunks)


def test_plain_txt_stays_text() -> None:
    result = chunk_file(STRUCTURED / "notes_plain.txt", "notes.txt", max_tokens=200, overlap=20)
    assert source_types(result) == {("text", "text")}
    assert all("headerPath" not in c.metadata for c in result.chunks)


def test_a_broken_notebook_is_a_file_error_with_its_text_kept() -> None:
    data = (STRUCTURED / "broken.ipynb").read_bytes()
    result = chunk_bytes(data, "nb/broken.ipynb")
    assert result.chunks == []
    assert result.error == "invalid notebook JSON: Unterminated string starting at: line 20 column 6 (char 296)"
    assert result.text == data.decode()


@pytest.mark.parametrize("rel_path", ["a.rst", "a.txt", "a.adoc", "a.html", "a.ipynb"])
def test_empty_structured_documents_give_no_chunks_and_no_error(rel_path: str) -> None:
    for data in (b"", b"\n  \n"):
        assert chunk_bytes(data, rel_path) == FileChunks(data.decode(), [], [])


@pytest.mark.parametrize(
    ("rel_path", "data", "expected"),
    [
        ("README.MD", b"# Read me\n", ("markdown", "markdown")),
        ("page.mdx", b"# Page\n\n<Widget />\n", ("markdown", "markdown")),
        ("server.log", b"12:00 started\n", ("text", "log")),
        ("table.tsv", b"a\tb\n", ("text", "csv")),
        ("LICENSE", b"Permission is hereby granted\n", ("text", "text")),
        ("notes.unknown", b"whatever this is\n", ("text", "text")),
    ],
)
def test_documents_by_name(rel_path: str, data: bytes, expected: tuple[str, str]) -> None:
    assert source_types(chunk_bytes(data, rel_path)) == {expected}


@pytest.mark.parametrize(
    ("rel_path", "data"),
    [
        ("app/main.py", b"def main():\n    return 1\n"),
        ("bin/deploy", (DOCS / "deploy").read_bytes()),  # no extension: the shebang tells
    ],
)
def test_code_goes_to_the_code_chunker(rel_path: str, data: bytes) -> None:
    result = chunk_bytes(data, rel_path)
    assert result.error is None
    assert source_types(result) == {("code", "python")}
    assert_chunk_invariants(result.text, result.chunks, 1000)


def test_code_chunker_failure_falls_back_to_text(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("grammar exploded")

    monkeypatch.setattr(dispatcher, "chunk_code_with_graph", broken)
    result = chunk_bytes(b"x = 1\n", "a.py")
    assert source_types(result) == {("text", "text")}
    assert result.warnings == [
        "code chunker failed (RuntimeError: grammar exploded); chunked as text"
    ]


@pytest.mark.parametrize(
    ("data", "text", "warnings"),
    [
        (b"", "", []),
        (b"  \n\n\t\n", "  \n\n\t\n", []),
        (codecs.BOM_UTF8 + b"   \n", "   \n", []),
    ],
)
def test_empty_files_give_no_chunks_and_no_error(
    data: bytes, text: str, warnings: list[str]
) -> None:
    assert chunk_bytes(data, "empty.txt") == FileChunks(text, [], warnings, None)


@pytest.mark.parametrize(
    "data",
    [
        b"\x7fELF\x02\x01\x01\x00\x00\x00",
        b"PNG header then \x00 bytes",
        b"a" * 8000 + b"\x00",
    ],
)
def test_binary_files_give_an_error(data: bytes) -> None:
    assert chunk_bytes(data, "blob.txt") == FileChunks("", [], [], "binary file")


def test_nul_after_the_sniffed_bytes_is_replaced() -> None:
    result = chunk_bytes(b"a\n" * 5000 + b"late \x00 nul\n", "late.txt")
    assert result.error is None
    assert "late \ufffd nul" in result.text
    assert result.warnings == ["NUL characters replaced by U+FFFD"]


def test_invalid_utf8_is_decoded_with_replacement() -> None:
    result = chunk_bytes("café\n".encode("latin-1") + b"more\n", "notes.txt")
    assert result.error is None
    assert result.text == "caf\ufffd\nmore\n"
    assert result.warnings == ["invalid UTF-8 decoded with replacement characters"]
    assert len(result.chunks) == 1


@pytest.mark.parametrize(
    "data",
    [
        codecs.BOM_UTF8 + "# Título\n".encode(),
        codecs.BOM_UTF16_LE + "# Título\n".encode("utf-16-le"),
        codecs.BOM_UTF16_BE + "# Título\n".encode("utf-16-be"),
    ],
)
def test_byte_order_marks_pick_the_encoding_and_are_dropped(data: bytes) -> None:
    result = chunk_bytes(data, "title.md")
    assert (result.text, result.warnings) == ("# Título\n", [])
    assert result.chunks[0].metadata["headerPath"] == "# Título"


def test_unreadable_path_gives_an_error(tmp_path: Path) -> None:
    result = chunk_file(tmp_path / "missing.txt", "missing.txt")
    assert result.chunks == []
    assert result.error is not None and result.error.startswith("cannot read file")


def test_bad_bounds_are_a_programming_error() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_bytes(b"x", "a.txt", max_tokens=0)
    with pytest.raises(ValueError, match="overlap"):
        chunk_bytes(b"x", "a.txt", overlap=-1)


def test_huge_file_and_giant_lines_are_chunked_fast() -> None:
    paragraph = b"".join(b"line %d of a paragraph with several words\n" % i for i in range(20))
    data = (paragraph + b"\n") * 6000 + b"x" * 2_000_000 + b"\n" + b"y " * 500_000
    started = time.perf_counter()
    result = chunk_bytes(data, "huge.log", max_tokens=300, overlap=30)
    elapsed = time.perf_counter() - started
    assert result.error is None
    assert_chunk_invariants(result.text, result.chunks, 300)
    assert elapsed < 10, f"{len(data) / 1e6:.1f} MB took {elapsed:.1f} s"



@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.binary(max_size=3000), st.text(max_size=3000).map(str.encode)),
    st.sampled_from(["a.md", "a.txt", "a.csv", "a.pdf", "a.docx", "a.py", "script", "a.xyz"]),
)
def test_any_bytes_give_a_result_never_an_exception(data: bytes, rel_path: str) -> None:
    result = chunk_bytes(data, rel_path, max_tokens=50, overlap=10)
    assert result.error is None or result.chunks == []
    if not any(c.metadata["sourceType"] == "code" for c in result.chunks):  # code has own tests
        assert_chunk_invariants(result.text, result.chunks, 50)
