"""Shell scripts by function, Makefiles by target, Dockerfiles by stage,
whatever their file is called."""

import pytest
from fixtures.docs.invariants import assert_chunk_invariants

from rag.chunking.dockerfile import dockerfile_stages
from rag.dispatcher import FileChunks, chunk_bytes

MAKEFILE = """\
PYTHON ?= python3
BIN := .venv/bin

.PHONY: install test

# Creates the virtual environment.
install: pyproject.toml
\t$(PYTHON) -m venv .venv
\t$(BIN)/pip install -e .

test lint: install
\t$(BIN)/pytest
"""

DOCKERFILE = """\
# syntax=docker/dockerfile:1
ARG PYTHON=3.12

# Wheels, built once.
FROM python:${PYTHON}-slim AS build
RUN pip wheel --wheel-dir /wheels . \\
    && echo FROM nothing AS fake
COPY . /src

FROM --platform=linux/amd64 python:3.12-slim
COPY --from=build /wheels /wheels
from build as test
RUN pytest
"""

SHELL = """\
#!/usr/bin/env bash
# Deploys the site.
set -euo pipefail

# Builds the assets.
build() {
  npm run build
}

function deploy {
  rsync -a dist/ "$1"
}

build && deploy "$@"
"""


def named(result: FileChunks) -> list[tuple[str, str | None]]:
    return [(c.metadata["fragmentType"], c.metadata.get("fqn")) for c in result.chunks]


def names_of_chunks_holding(result: FileChunks, line: str) -> list[set[str]]:
    return [{c.metadata.get("fqn"), *c.metadata.get("fqns", [])} - {None}
            for c in result.chunks if line in c.content.split("\n")]


@pytest.mark.parametrize("rel_path", ["Makefile", "GNUmakefile", "rules/common.mk", "Makefile.am"])
def test_makefile_targets(rel_path: str) -> None:
    result = chunk_bytes(MAKEFILE.encode(), rel_path, max_tokens=35, overlap=0)
    assert {c.metadata["language"] for c in result.chunks} == {"make"}
    assert named(result) == [("MODULE", None), ("TARGET", "install"), ("TARGET", "test lint")]
    assert result.chunks[0].metadata["fqns"] == [".PHONY"]  # merged with the variables
    assert result.chunks[1].content.startswith("# Creates the virtual environment.\ninstall: pyproject.toml\n")
    assert result.chunks[1].content.endswith("\t$(BIN)/pip install -e .")
    assert_chunk_invariants(MAKEFILE, result.chunks, 35)


def test_a_big_target_is_cut_into_windows_named_by_it() -> None:
    result = chunk_bytes(MAKEFILE.encode(), "Makefile", max_tokens=20, overlap=0)
    assert names_of_chunks_holding(result, "\t$(BIN)/pip install -e .") == [{"install"}]
    window = next(c for c in result.chunks if "\t$(BIN)/pip install -e ." in c.content)
    assert window.content.startswith("install: pyproject.toml\n")  # its rule line in front
    assert_chunk_invariants(MAKEFILE, result.chunks, 20)


def test_dockerfile_stages() -> None:
    stages = dockerfile_stages(DOCKERFILE)
    assert stages is not None
    assert [(s.start, s.head, s.kind, s.name) for s in stages] == [
        (3, 4, "STAGE", "build"),
        (9, 9, "STAGE", "python:3.12-slim"),  # no alias: named by its image
        (11, 11, "STAGE", "test"),
    ]


@pytest.mark.parametrize("rel_path", ["Dockerfile", "docker/Dockerfile.dev", "api.dockerfile", "Containerfile"])
def test_dockerfile_chunks_by_stage(rel_path: str) -> None:
    result = chunk_bytes(DOCKERFILE.encode(), rel_path, max_tokens=30, overlap=0)
    assert {(c.metadata["sourceType"], c.metadata["language"]) for c in result.chunks} == {("code", "dockerfile")}
    assert named(result) == [("MODULE", None), ("STAGE", "build"), ("STAGE", "build"),
                             ("STAGE", "python:3.12-slim"), ("STAGE", "test")]
    assert names_of_chunks_holding(result, "COPY . /src") == [{"build"}]
    assert_chunk_invariants(DOCKERFILE, result.chunks, 30)


def test_a_dockerfile_without_from_falls_back_to_windows() -> None:
    text = "RUN echo one\n" * 30
    assert dockerfile_stages(text) is None
    result = chunk_bytes(text.encode(), "Dockerfile", max_tokens=20, overlap=0)
    assert len(result.chunks) > 1 and result.error is None
    assert_chunk_invariants(text, result.chunks, 20)


@pytest.mark.parametrize("rel_path", ["bin/deploy.sh", "bin/deploy.bash", "bin/deploy", ".ci/run"])
def test_shell_functions(rel_path: str) -> None:
    result = chunk_bytes(SHELL.encode(), rel_path, max_tokens=15, overlap=0)
    assert {c.metadata["language"] for c in result.chunks} == {"bash"}
    assert ("FUNCTION", "build") in named(result) and ("FUNCTION", "deploy") in named(result)
    build = next(c for c in result.chunks if c.metadata.get("fqn") == "build")
    assert build.content.startswith("# Builds the assets.\nbuild() {")
    assert_chunk_invariants(SHELL, result.chunks, 15)
