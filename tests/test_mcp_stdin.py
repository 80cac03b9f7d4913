"""The MCP server's stdin repair: lone surrogate escapes become U+FFFD, nothing else changes."""

import json

import pytest

from rag.mcp_stdio import replace_lone_surrogates


@pytest.mark.parametrize(
    ("line", "text"),
    [
        ('{"q": "a\\ud800b"}', "a\ufffdb"),
        ('{"q": "a\\uDC00"}', "a\ufffd"),
        ('{"q": "\\ud83d\\ude00"}', "\U0001f600"),  # a valid pair stays
        ('{"q": "\\\\ud800"}', "\\ud800"),  # an escaped backslash, then text
        ('{"q": "\\\\\\ud800"}', "\\\ufffd"),
        ('{"q": "\\ud800\\ud800\\udc00"}', "\ufffd\U00010000"),
        ('{"q": "plain \\u00e9"}', "plain \u00e9"),
    ],
)
def test_replace_lone_surrogates(line: str, text: str) -> None:
    assert json.loads(replace_lone_surrogates(line))["q"] == text
