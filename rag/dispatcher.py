"""What the indexer stores of a file: which chunker (``rag.chunking``) a file goes to, for
code the code graph (``rag.graph``) from the same syntax tree (for a package.json, its entry
files: ``rag.languages.javascript.packages``), and whatever is wrong with a
file's content turned into a result, never an exception. The one module that calls both
the chunkers and the graph (they do not import each other).

Documents go by extension: .md/.mdx/.markdown → markdown, .rst → reST,
.adoc/.asciidoc → AsciiDoc, .html/.htm → HTML, .ipynb → notebook, .pdf →
pdf, .docx → docx; a .txt file whose content reads as reST (``looks_like_rst``)
→ reST. Any other file is code when ``detect_language`` knows its name or
extension or sees a shebang, and text otherwise (language "csv" for
.csv/.tsv, "log", else "text"). Code in SQL, YAML, TOML, JSON or a
Dockerfile is cut by the sections its finder names (statements, top-level
keys, stages); where it finds none (a config file that does not parse, a
JSON array) the syntax tree's windows cut it as any code.

Content problems end up in ``FileChunks``: NUL bytes in the first 8 KB →
error "binary file"; an empty or blank file → no chunks; undecodable bytes →
U+FFFD and a warning; a PDF, .docx, notebook or HTML page that cannot be read
→ error.
"""

import codecs
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from rag.chunking.asciidoc import chunk_asciidoc
from rag.chunking.code import chunk_parsed, chunk_sections
from rag.chunking.configs import config_sections
from rag.chunking.dockerfile import dockerfile_stages
from rag.chunking.html import chunk_html
from rag.chunking.markdown import chunk_markdown
from rag.chunking.model import Chunk
from rag.chunking.notebook import chunk_notebook
from rag.chunking.rst import chunk_rst, looks_like_rst
from rag.chunking.sections import Section
from rag.chunking.sql import sql_sections
from rag.chunking.text import chunk_text
from rag.errors import ChunkingError
from rag.graph.extract import extract_graph
from rag.graph.model import CodeGraph
from rag.languages.detection import detect_language
from rag.languages.javascript.packages import package_graph
from rag.languages.syntax import parse_tree
from rag.storable import make_storable

_BINARY_SNIFF_BYTES = 8192

class _DocumentChunker(Protocol):
    def __call__(self, text: str, path: str, *, max_tokens: int, overlap: int) -> list[Chunk]: ...


_DOCUMENT_CHUNKERS: dict[str, _DocumentChunker] = {
    ".md": chunk_markdown,
    ".mdx": chunk_markdown,
    ".markdown": chunk_markdown,
    ".rst": chunk_rst,
    ".adoc": chunk_asciidoc,
    ".asciidoc": chunk_asciidoc,
    ".html": chunk_html,
    ".htm": chunk_html,
    ".ipynb": chunk_notebook,
}
# Code whose named parts a finder sees better than its grammar does (None: found none).
_SECTION_FINDERS: dict[str, Callable[[str], list[Section] | None]] = {
    "sql": sql_sections,
    "dockerfile": dockerfile_stages,
    **{language: partial(config_sections, language=language) for language in ("yaml", "toml", "json")},
}
_TEXT_LANGUAGES = {
    ".csv": "csv",
    ".tsv": "csv",
    ".log": "log",
}
# Longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
_BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


@dataclass(frozen=True)
class FileChunks:
    """What chunking one file gave.

    ``text`` is the file as stored for read-back (decoded, or extracted from
    a PDF or .docx); chunks' startLine/endLine point into it. ``error`` is set
    when the file could not be chunked at all, and then ``chunks`` is empty.
    ``graph``: a code file's definitions and references, when it has a grammar.
    ``metadata``: a remote document's own fields (a Confluence page's id, title, version…),
    stored with the file.
    """

    text: str
    chunks: list[Chunk]
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    graph: CodeGraph | None = None
    metadata: dict[str, Any] | None = None


def chunk_file(
    path: Path, rel_path: str, *, max_tokens: int = 1000, overlap: int = 100
) -> FileChunks:
    """Read ``path`` and chunk it; ``rel_path`` goes into every chunk's metadata."""
    try:
        data = path.read_bytes()
    except OSError as error:
        return FileChunks("", [], error=f"cannot read file: {error.strerror or error}")
    return chunk_bytes(data, rel_path, max_tokens=max_tokens, overlap=overlap)


def chunk_bytes(
    data: bytes, rel_path: str, *, max_tokens: int = 1000, overlap: int = 100
) -> FileChunks:
    """Chunk a file's bytes, already read (the indexer hashes them first)."""
    if max_tokens < 1 or overlap < 0:
        raise ValueError(f"need max_tokens >= 1 and overlap >= 0, got {max_tokens}, {overlap}")
    suffix = PurePosixPath(rel_path).suffix.lower()
    if suffix in (".pdf", ".docx"):
        # Imported on first use: pypdf and python-docx add ~0.1 s to every
        # command's start, and most runs meet neither kind of file.
        if suffix == ".pdf":
            from rag.chunking.pdf import chunk_pdf as extract
        else:
            from rag.chunking.docx import chunk_docx as extract
        try:
            text, chunks, warnings = extract(data, rel_path, max_tokens=max_tokens, overlap=overlap)
        except ChunkingError as error:
            return FileChunks("", [], error=str(error))
        return FileChunks(text, chunks, warnings)
    decoded = _decode(data)
    if decoded is None:
        return FileChunks("", [], error="binary file")
    text, warnings = decoded
    if not text.strip():
        return FileChunks(text, [], warnings)
    try:
        chunks, graph = _chunk_decoded(text, rel_path, suffix, max_tokens, overlap, warnings)
    except ChunkingError as error:  # a notebook that is not JSON, …
        return FileChunks(text, [], warnings, error=str(error))
    return FileChunks(text, chunks, warnings, graph=graph)


def chunk_code_with_graph(
    text: str, path: str, language: str, *, max_tokens: int, overlap: int, graph: bool = True
) -> tuple[list[Chunk], CodeGraph | None]:
    """``rag.chunking.code.chunk_code``'s chunks and, from the same syntax tree, the file's
    definitions and references (None without a grammar, or not asked for: ``graph=False``,
    which bench/bench_index.py sets to measure what the graph costs): parsed once, read twice."""
    if not text.strip():
        return [], None
    root = parse_tree(text, language)
    chunks = chunk_parsed(text, path, language, root, max_tokens=max_tokens, overlap=overlap)
    symbols = extract_graph(root, text, path, language) if graph and root is not None else None
    return chunks, symbols


def _manifest_graph(text: str, path: str) -> CodeGraph | None:
    """A package manifest's links to the package's entry files (package.json: main, exports, ...)."""
    return package_graph(text, path) if PurePosixPath(path).name == "package.json" else None


def _encoding(data: bytes) -> str:
    return next((name for mark, name in _BYTE_ORDER_MARKS if data.startswith(mark)), "utf-8")


def rejected_as_binary(head: bytes) -> bool:
    """Whether ``chunk_bytes`` refuses a file starting with ``head`` (its first 8 KB) as binary:
    UTF-16 and UTF-32 text is full of NUL bytes; UTF-8 text has none."""
    return _encoding(head).startswith("utf-8") and b"\x00" in head[:_BINARY_SNIFF_BYTES]


def file_rejected_as_binary(path: Path) -> bool:
    """``rejected_as_binary`` for a file on disk, read no further than its first 8 KB (a dry run
    says which files the real run would refuse); PDF and DOCX files are extracted, not decoded."""
    if path.suffix.lower() in (".pdf", ".docx"):
        return False
    from rag.sources.reading import read_head

    try:
        head = read_head(path, _BINARY_SNIFF_BYTES)
    except OSError:
        return False  # the real run reports it as unreadable
    return rejected_as_binary(head)


def _decode(data: bytes) -> tuple[str, list[str]] | None:
    """The text of a file and warnings, or None when it looks binary."""
    if rejected_as_binary(data[:_BINARY_SNIFF_BYTES]):
        return None
    encoding = _encoding(data)
    warnings: list[str] = []
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        text = data.decode(encoding, "replace")
        name = encoding.removesuffix("-sig").upper()
        warnings.append(f"invalid {name} decoded with replacement characters")
    text, replaced = make_storable(text)
    return text, warnings + replaced


def _chunk_decoded(
    text: str, rel_path: str, suffix: str, max_tokens: int, overlap: int, warnings: list[str]
) -> tuple[list[Chunk], CodeGraph | None]:
    document_chunker = _DOCUMENT_CHUNKERS.get(suffix)
    if document_chunker is None and suffix == ".txt" and looks_like_rst(text):
        document_chunker = chunk_rst
    if document_chunker is not None:
        return document_chunker(text, rel_path, max_tokens=max_tokens, overlap=overlap), None
    code_language = detect_language(rel_path, text)
    if code_language is not None:
        try:
            finder = _SECTION_FINDERS.get(code_language)
            sections = finder(text) if finder is not None else None
            if sections:
                chunks = chunk_sections(text, rel_path, code_language, sections,
                                        max_tokens=max_tokens, overlap=overlap)
                return chunks, _manifest_graph(text, rel_path)
            return chunk_code_with_graph(
                text, rel_path, code_language, max_tokens=max_tokens, overlap=overlap
            )
        except Exception as error:  # one file must not stop an index run: fall back to text
            warnings.append(f"code chunker failed ({type(error).__name__}: {error}); chunked as text")
    language = _TEXT_LANGUAGES.get(suffix, "text")
    chunks = chunk_text(text, rel_path, language=language, max_tokens=max_tokens, overlap=overlap)
    return chunks, None
