"""Properties of the files cut by sections (SQL, configs, Dockerfiles) over
mangled input: never an error, no non-blank line left out, chunks of several
lines within the bound and holding exactly their lines, the same chunks twice."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_configs import JSON, TOML, YAML
from test_sql import SCHEMA

from rag.chunking.model import count_tokens
from rag.dispatcher import chunk_bytes

DOCKERFILE = "# build\nFROM python:3.12 AS build\nRUN pip install . \\\n  && echo ok\nFROM build\nCMD run\n"
SAMPLES = {"db/schema.sql": SCHEMA, "app.yaml": YAML, "pyproject.toml": TOML, "package.json": JSON,
           "Dockerfile": DOCKERFILE}
PROPERTY_SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FRAGMENTS = ["$$", "$fn$", "'", "E'\\'", '"', "--", "/*", "*/", ";", "BEGIN", "BEGIN ATOMIC", "END;", "CASE",
             "CREATE FUNCTION f() AS", "COMMENT ON TABLE t IS", "key:", "[table]", "{", "}", "FROM x AS y", "\n"]


@st.composite
def mangled(draw: st.DrawFn) -> tuple[str, str]:
    """A sample with fragments that open or close strings, quotes, comments and bodies put anywhere."""
    path = draw(st.sampled_from(sorted(SAMPLES)))
    text = SAMPLES[path]
    for _ in range(draw(st.integers(0, 8))):
        position = draw(st.integers(0, len(text)))
        text = text[:position] + draw(st.sampled_from(FRAGMENTS)) + text[position:]
    return path, text


def assert_properties(path: str, text: str, max_tokens: int, overlap: int) -> None:
    result = chunk_bytes(text.encode(), path, max_tokens=max_tokens, overlap=overlap)
    assert (result.error, result.warnings) == (None, [])
    lines = result.text.split("\n")
    covered: set[int] = set()
    for chunk in result.chunks:
        start, end = chunk.metadata["startLine"], chunk.metadata["endLine"]
        covered.update(range(start, end + 1))
        context = len(chunk.metadata.get("contextLines", []))
        own = chunk.content.split("\n", context)[context] if context else chunk.content
        if start != end:
            assert own == "\n".join(lines[start - 1 : end])
            assert count_tokens(chunk.content) <= max_tokens
    assert not [n for n, line in enumerate(lines, 1) if line.strip() and n not in covered]
    again = chunk_bytes(text.encode(), path, max_tokens=max_tokens, overlap=overlap)
    assert [c.metadata for c in again.chunks] == [c.metadata for c in result.chunks]


@PROPERTY_SETTINGS
@given(mangled(), st.integers(5, 200), st.integers(0, 40))
def test_mangled_samples(sample: tuple[str, str], max_tokens: int, overlap: int) -> None:
    assert_properties(*sample, max_tokens, overlap)


@PROPERTY_SETTINGS
@given(st.lists(st.sampled_from([*FRAGMENTS, " ", "a", "b.c", "(", ")", "1"]), max_size=200),
       st.sampled_from(sorted(SAMPLES)), st.integers(5, 100))
def test_fragment_soup(fragments: list[str], path: str, max_tokens: int) -> None:
    assert_properties(path, " ".join(fragments), max_tokens, 3)
