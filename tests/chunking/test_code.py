"""The syntax-tree code chunker: golden chunk lists per language, and behaviour.

Goldens: ``fixtures/code/<file>.golden.json`` holds, per chunk of ``<file>``,
[startLine, endLine, fragmentType, fqn]. Regenerate with ``OVERWRITE_GOLDEN=1``
and review the diff by eye: a golden must be right, not merely what the code
prints today.
"""

import json
import os
import time
from itertools import pairwise
from pathlib import Path

import pytest

from rag.chunking.code import chunk_code
from rag.chunking.model import Chunk, count_tokens
from rag.languages.detection import detect_language

FIXTURES = Path(__file__).parent / "fixtures" / "code"
# Small enough that classes split into methods and long functions into windows.
GOLDEN_MAX_TOKENS = 100
GOLDEN_OVERLAP = 16

GOLDEN_FILES = [
    "user_service.ts",
    "user_card.tsx",
    "cart.js",
    "todo_list.jsx",
    "inventory.py",
    "server.go",
    "shapes.rs",
    "OrderService.java",
    "account.rb",
    "ring_buffer.c",
    "Playlist.kt",
]


def chunk(text: str, language: str, max_tokens: int = 100, overlap: int = 10) -> list[Chunk]:
    return chunk_code(text, f"src/file.{language}", language, max_tokens=max_tokens,
                      overlap=overlap)


def spans(chunks: list[Chunk]) -> list[list[object]]:
    return [
        [c.metadata["startLine"], c.metadata["endLine"], c.metadata["fragmentType"],
         c.metadata.get("fqn")]
        for c in chunks
    ]


def assert_covers_every_line(text: str, chunks: list[Chunk]) -> None:
    covered = set()
    for c in chunks:
        covered.update(range(c.metadata["startLine"], c.metadata["endLine"] + 1))
    lost = [n for n, line in enumerate(text.split("\n"), 1) if line.strip() and n not in covered]
    assert not lost, f"lines in no chunk: {lost}"


@pytest.mark.parametrize("name", GOLDEN_FILES)
def test_golden(name: str) -> None:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    language = detect_language(name, text)
    assert language is not None
    chunks = chunk_code(text, name, language, max_tokens=GOLDEN_MAX_TOKENS,
                        overlap=GOLDEN_OVERLAP)
    golden = FIXTURES / f"{name}.golden.json"
    if os.environ.get("OVERWRITE_GOLDEN"):
        rows = ",\n".join("  " + json.dumps(row) for row in spans(chunks))
        golden.write_text(f"[\n{rows}\n]\n", encoding="utf-8")
    assert spans(chunks) == json.loads(golden.read_text(encoding="utf-8"))
    assert_covers_every_line(text, chunks)
    for c in chunks:
        assert c.metadata["path"] == name
        assert c.metadata["sourceType"] == "code"
        assert c.metadata["language"] == language
        assert c.tokens <= GOLDEN_MAX_TOKENS


# --- definitions, names and context ---------------------------------------------


def test_small_file_is_one_chunk_per_big_definition_and_small_ones_merge() -> None:
    text = (
        "import os\n\nLIMIT = 3\n\n"
        "def small():\n    return 1\n\n"
        "def tiny():\n    return 2\n"
    )
    [only] = chunk(text, "python")
    assert (only.metadata["startLine"], only.metadata["endLine"]) == (1, 9)
    assert only.metadata["fragmentType"] == "MODULE"
    assert only.metadata["fqns"] == ["small", "tiny"]
    assert only.content == text.rstrip("\n")


def test_two_big_definitions_keep_a_chunk_each() -> None:
    body = "".join(f"    value_{i} = compute({i}, other_{i})\n" for i in range(6))
    text = f"def first():\n{body}\n\ndef second():\n{body}"
    chunks = chunk(text, "python", max_tokens=200)
    assert spans(chunks) == [[1, 7, "FUNCTION", "first"], [10, 16, "FUNCTION", "second"]]


def test_method_chunk_starts_with_its_class_signature() -> None:
    methods = "".join(
        f"  method{i}(a: number): number {{\n"
        + "".join(f"    a = a * {j} + {i};\n" for j in range(5))
        + "    return a;\n  }\n\n"
        for i in range(3)
    )
    text = f"export class Calculator extends Base {{\n{methods}}}\n"
    chunks = chunk(text, "typescript", max_tokens=80)
    second = next(c for c in chunks if c.metadata.get("fqn") == "Calculator.method1")
    assert second.metadata["fragmentType"] == "METHOD"
    assert second.content.startswith("export class Calculator extends Base {\n  method1(")
    assert second.metadata["contextLines"] == [1]
    assert second.metadata["startLine"] == 11  # the method's own first line


def test_nested_java_classes_get_dotted_names_and_both_signatures() -> None:
    inner_methods = "".join(
        f"        int get{i}() {{\n            return compute({i}, {i} * 2, {i} + 1);\n        }}\n"
        for i in range(6)
    )
    text = (
        "public class Outer {\n"
        "    static class Inner {\n" + inner_methods + "    }\n"
        "}\n"
    )
    chunks = chunk(text, "java", max_tokens=60)
    getter = next(c for c in chunks if c.metadata.get("fqn") == "Outer.Inner.get3")
    assert getter.content.startswith(
        "public class Outer {\n    static class Inner {\n        int get3() {"
    )


@pytest.mark.parametrize(
    ("language", "source", "expected"),
    [
        ("go", "func (s *Server[T]) Start(port int) error {\n\treturn nil\n}\n",
         ("METHOD", "Server.Start")),
        ("rust", "impl<T: Clone> fmt::Display for a::Wrapper<T> {\n"
                 "    fn fmt(&self) {}\n}\n", ("IMPL", "Wrapper")),
        ("typescript", "export const handler = async (event: Event) => {\n  run(event);\n};\n",
         ("FUNCTION", "handler")),
        ("typescript", "export const RETRIES = 3;\n", ("CONST", "RETRIES")),
        ("typescript", "export type Id = string | number;\n", ("TYPE", "Id")),
        ("typescript", "export enum Color { Red, Green }\n", ("ENUM", "Color")),
        ("typescript", "namespace Api { export function get() {} }\n", ("MODULE", "Api")),
        ("javascript", "module.exports.parse = function (text) {\n  return text;\n};\n",
         ("FUNCTION", "parse")),
        ("javascript", "Cart.prototype.total = function () {\n  return 0;\n};\n",
         ("FUNCTION", "Cart.total")),
        ("javascript", "export default function () {\n  return 1;\n}\n",
         ("FUNCTION", "default")),
        ("cpp", "int Box::size() const {\n  return 1;\n}\n", ("METHOD", "Box.size")),
        ("c", "typedef struct {\n  int x;\n} point_t;\n", ("STRUCT", "point_t")),
        # a conditional inside the body, an attribute macro before the type
        ("c", "FORCE_INLINE int\nhash(const char *s)\n{\n#if defined(FAST)\n  if (s) {\n#else\n  if (!s) {\n#endif\n"
              "    return 1;\n  }\n  return 0;\n}\n", ("FUNCTION", "hash")),
        ("c", "API_EXPORT unsigned int sum(int a, int b)\n{\n#if 0\n  return 0;\n#else\n  return a + b;\n#endif\n}\n",
         ("FUNCTION", "sum")),
        ("ruby", "class Admin::User < Base\n  def name; end\nend\n", ("CLASS", "Admin.User")),
        ("python", "@dataclass\nclass Point:\n    x: int\n", ("CLASS", "Point")),
        ("php", "<?php\nfunction greet($name) {\n  return $name;\n}\n", ("FUNCTION", "greet")),
        ("kotlin", "fun main() {\n    println(1)\n}\n", ("FUNCTION", "main")),
        ("bash", "deploy() {\n  rsync -a . host:\n}\n", ("FUNCTION", "deploy")),
    ],
)
def test_definition_kind_and_name(language: str, source: str, expected: tuple[str, str]) -> None:
    [only] = chunk(source, language)
    assert (only.metadata["fragmentType"], only.metadata["fqn"]) == expected


def test_plain_module_code_has_no_fqn() -> None:
    [only] = chunk("import os\nimport sys\n\nprint(os.sep)\n", "python")
    assert only.metadata["fragmentType"] == "MODULE"
    assert "fqn" not in only.metadata


@pytest.mark.parametrize(
    ("language", "source"),
    [
        ("typescript", "/**\n * Docs.\n */\n@Component({})\nexport class A {\n  x = 1;\n}\n"),
        ("rust", "/// Docs.\n#[derive(Debug)]\npub struct S {\n    a: u8,\n}\n"),
        ("java", "/** Docs. */\n@Entity\npublic class E {\n    int id;\n}\n"),
        ("python", "# Docs.\n@decorator\ndef f():\n    return 1\n"),
        ("go", "// Run runs.\nfunc Run() {\n}\n"),
    ],
)
def test_leading_comments_and_decorators_stay_with_their_definition(
    language: str, source: str
) -> None:
    preamble = "".join(f"// filler {i} with words to make this big\n" for i in range(12))
    if language == "python":
        preamble = preamble.replace("//", "#")
    text = preamble + "\n" + source
    chunks = chunk(text, language, max_tokens=60)
    definition = chunks[-1]
    assert "fqn" in definition.metadata
    # Its first comment line (14) is in the definition's chunk, not left behind.
    assert definition.metadata["startLine"] <= 14
    assert all(c.metadata["endLine"] < 14 for c in chunks[:-1])


# --- size bounds ------------------------------------------------------------------


def test_big_function_is_split_into_overlapping_windows_with_its_signature() -> None:
    body = "".join(f"    total += price_{i} * quantity_{i}\n" for i in range(60))
    text = f"def checkout(cart):\n    total = 0\n{body}    return total\n"
    chunks = chunk(text, "python", max_tokens=80, overlap=12)
    assert len(chunks) > 3
    assert all(c.metadata["fqn"] == "checkout" for c in chunks)
    assert all(c.tokens <= 80 for c in chunks)
    for c in chunks[1:]:
        assert c.content.startswith("def checkout(cart):\n    total += ")
    for before, after in pairwise(chunks):
        assert after.metadata["startLine"] <= before.metadata["endLine"]  # overlap
    assert_covers_every_line(text, chunks)


def test_giant_minified_line_is_cut_into_bounded_pieces_quickly() -> None:
    unit = "function a(b,c){var d=b+c;if(d>10){return d*2}return c}var x={k:[1,2,3]};"
    text = unit * (2_000_000 // len(unit))
    started = time.process_time()
    chunks = chunk(text, "javascript", max_tokens=512, overlap=64)
    assert time.process_time() - started < 10
    assert "".join(c.content for c in chunks) == text
    assert all(c.tokens <= 512 for c in chunks)
    assert all(c.metadata["startLine"] == c.metadata["endLine"] == 1 for c in chunks)


def test_long_but_not_enormous_line_stays_whole() -> None:
    line = "values = [" + ", ".join(str(i) for i in range(70)) + "]"
    [only] = chunk(line + "\n", "python", max_tokens=100)
    assert only.content == line
    assert only.tokens > 100


# --- bad input --------------------------------------------------------------------


def test_empty_and_blank_files_have_no_chunks() -> None:
    assert chunk("", "python") == []
    assert chunk("\n  \n\t\n", "go") == []


def test_syntax_errors_are_chunked_anyway() -> None:
    text = "def broken(:\n    return [1, 2\n\nclass Fine:\n    x = 1\n\n}}} ))) def\n"
    chunks = chunk(text, "python", max_tokens=20)
    assert_covers_every_line(text, chunks)


def test_unknown_language_falls_back_to_blocks() -> None:
    blocks = "".join(f"block{i} start\n  indented {i} body with words\n\n" for i in range(8))
    chunks = chunk(blocks, "no-such-language", max_tokens=20)
    assert {c.metadata["fragmentType"] for c in chunks} == {"BLOCK"}
    assert all(c.metadata["startLine"] % 3 == 1 for c in chunks)  # cut at blank lines
    assert_covers_every_line(blocks, chunks)


def test_crlf_files_keep_their_line_numbers() -> None:
    text = "def a():\r\n    return 1\r\n\r\n\r\ndef b():\r\n    return 2\r\n"
    chunks = chunk(text, "python", max_tokens=8)
    assert spans(chunks) == [[1, 2, "FUNCTION", "a"], [5, 6, "FUNCTION", "b"]]


def test_content_is_the_lines_and_hashes_are_stable() -> None:
    text = (FIXTURES / "inventory.py").read_text(encoding="utf-8")
    first = chunk(text, "python", max_tokens=100)
    again = chunk(text, "python", max_tokens=100)
    assert [c.content_hash for c in first] == [c.content_hash for c in again]
    lines = text.split("\n")
    for c in first:
        own = "\n".join(lines[c.metadata["startLine"] - 1 : c.metadata["endLine"]])
        assert c.content.endswith(own)
        assert count_tokens(c.content) == c.tokens
