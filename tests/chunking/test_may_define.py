"""``may_define``: the code graph's definitions walk skips every node whose type it
rejects, so it must accept the type of every node ``find_definition`` finds one at."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from tree_sitter import Node

from rag.languages.definitions import find_definition, may_define
from rag.languages.detection import detect_language
from rag.languages.syntax import parse_tree

_TESTS = Path(__file__).resolve().parents[1]
_SOURCES = sorted(
    path
    for folder in (_TESTS / "chunking" / "fixtures" / "code", _TESTS / "graph" / "fixtures")
    for path in folder.rglob("*")
    if path.is_file() and not path.name.endswith(".json")
)


def _named_nodes(text: str, language: str) -> Iterator[Node]:
    root = parse_tree(text, language)
    assert root is not None
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.named_children)


@pytest.mark.parametrize("path", _SOURCES, ids=lambda p: str(p.relative_to(_TESTS)))
def test_every_definition_is_at_a_node_type_that_may_define(path: Path) -> None:
    text = path.read_text()
    language = detect_language(str(path), text)
    assert language is not None
    for node in _named_nodes(text, language):
        if find_definition(node, language) is not None:
            assert may_define(node.type, language), (node.type, language)


def test_fixtures_have_definitions_of_many_languages() -> None:
    languages = set()
    for path in _SOURCES:
        text = path.read_text()
        language = detect_language(str(path), text) or ""
        if any(find_definition(node, language) for node in _named_nodes(text, language)):
            languages.add(language)
    assert {"python", "typescript", "javascript", "go", "java", "rust", "c", "ruby", "kotlin"} <= languages


@pytest.mark.parametrize(
    ("node_type", "language", "expected"),
    [
        ("function_definition", "python", True),
        ("decorated_definition", "python", True),
        ("expression_statement", "python", False),
        ("if_statement", "python", False),
        ("expression_statement", "typescript", True),  # module.exports.f = function () {}
        ("lexical_declaration", "javascript", True),
        ("return_statement", "javascript", False),
        ("class_declaration", "kotlin", True),  # no rules: read from the type's name
        ("call_expression", "kotlin", False),
    ],
)
def test_node_types(node_type: str, language: str, expected: bool) -> None:
    assert may_define(node_type, language) is expected
