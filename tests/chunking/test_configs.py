"""YAML, TOML and JSON files cut by their top-level keys; files that do not
parse, and JSON arrays, cut into plain windows without failing."""

from pathlib import Path

import pytest
from fixtures.docs.invariants import assert_chunk_invariants

from rag.chunking.configs import config_sections
from rag.dispatcher import FileChunks, chunk_bytes, chunk_file

REPO = Path(__file__).parents[2]

YAML = """\
# Service settings.

# where the database lives
database:
  url: postgresql://localhost/app   # not a key: indented
  pool: 5
  # a comment inside the block
search:
  topK: 10
  weights: {bm25: 1.0, vector: 1.0}
"quoted key": |
  a block scalar
  key: not a key
---
second: document
"""

TOML = """\
title = "demo"
# the build backend
[build-system]
requires = ["setuptools"]

[tool.ruff]
line-length = 110
text = \"\"\"
[not.a.table]
\"\"\"

[[tool.mypy.overrides]]
module = "x"
"""

JSON = """\
{
  "name": "app",
  "scripts": {"test": "pytest", "lint": "ruff"},
  "dependencies": {
    "left-pad": "1.0.0"
  }
}
"""


def sections(text: str, language: str) -> list[tuple[int, int, str, str | None]] | None:
    found = config_sections(text, language)
    return None if found is None else [(s.start, s.head, s.kind, s.name) for s in found]


def test_yaml_top_level_keys_with_the_comments_above_them() -> None:
    assert sections(YAML, "yaml") == [
        (2, 3, "KEY", "database"),
        (7, 7, "KEY", "search"),
        (10, 10, "KEY", "quoted key"),
        (14, 14, "KEY", "second"),
    ]


def test_toml_keys_tables_and_arrays_of_tables() -> None:
    assert sections(TOML, "toml") == [
        (0, 0, "KEY", "title"),
        (1, 2, "TABLE", "build-system"),
        (5, 5, "TABLE", "tool.ruff"),
        (11, 11, "TABLE", "tool.mypy.overrides"),
    ]


def test_json_object_keys() -> None:
    assert sections(JSON, "json") == [
        (1, 1, "KEY", "name"),
        (2, 2, "KEY", "scripts"),
        (3, 3, "KEY", "dependencies"),
    ]


def test_minified_json_keys_share_one_nameless_section() -> None:
    assert sections('{"a": 1, "b": {"c": 2}}', "json") == [(0, 0, "MODULE", None)]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ('[{"a": 1}, {"b": 2}]', "json"),  # an array: windows
        ('{"a": 1,\n "b": [1, 2,\n}', "json"),
        ("- one\n- two\n", "yaml"),
        ("a: [1, 2\nb: {\n", "yaml"),
        ("[table\nkey = ", "toml"),
        ("", "json"),
    ],
)
def test_no_keys_from_a_file_without_a_mapping_or_with_errors(text: str, language: str) -> None:
    assert config_sections(text, language) is None


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("broken.json", '{"a": 1,\n "b": [1, 2,\n' + '  "c": 3,\n' * 40 + "}"),
        ("list.json", "[\n" + '  {"id": 1, "tags": ["a", "b"]},\n' * 40 + "  {}\n]\n"),
        ("broken.yaml", "a: [1, 2\nb: {\n" + "  c: 1\n" * 40),
        ("broken.toml", "[table\n" + "key = 1\n" * 40),
    ],
)
def test_bad_configs_fall_back_to_windows(name: str, text: str) -> None:
    result = chunk_bytes(text.encode(), f"conf/{name}", max_tokens=40, overlap=5)
    assert (result.error, result.warnings) == (None, [])
    assert len(result.chunks) > 1
    assert all("fqn" not in c.metadata and c.metadata["sourceType"] == "code" for c in result.chunks)
    assert_chunk_invariants(text, result.chunks, 40)


def names(result: FileChunks) -> list[str | None]:
    return [c.metadata.get("fqn") for c in result.chunks]


def test_small_keys_merge_and_big_ones_are_windows_keeping_their_name() -> None:
    big = "\n".join(f"  dep{i}: ^{i}.0.0" for i in range(40))
    text = f"name: app\nversion: 1\nsearch:\n  topK: 10\ndependencies:\n{big}\nlast: true\n"
    result = chunk_bytes(text.encode(), "app.yaml", max_tokens=60, overlap=5)
    assert_chunk_invariants(text, result.chunks, 60)
    first = result.chunks[0].metadata
    assert (first["fragmentType"], first["fqns"]) == ("MODULE", ["name", "version", "search"])
    windows = [c for c in result.chunks if c.metadata.get("fqn") == "dependencies"]
    assert len(windows) > 2 and all(c.metadata["fragmentType"] == "KEY" for c in windows)
    assert all(c.content.startswith("dependencies:\n") for c in windows)
    assert result.chunks[-1].metadata.get("fqn") == "last"


def test_the_repository_configs() -> None:
    result = chunk_file(REPO / "pyproject.toml", "pyproject.toml", max_tokens=256, overlap=32)
    assert {"project", "build-system", "tool.ruff"} <= {
        name for c in result.chunks for name in [c.metadata.get("fqn"), *c.metadata.get("fqns", [])]
    }
    result = chunk_file(REPO / "rag.config.yaml", "rag.config.yaml", max_tokens=100, overlap=10)
    assert {"database", "embeddings", "search"} <= set(names(result))
    assert {(c.metadata["sourceType"], c.metadata["language"]) for c in result.chunks} == {("code", "yaml")}
