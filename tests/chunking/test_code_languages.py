"""Which grammar a file gets: by name, by extension, by shebang or content."""

import pytest

from rag.languages.detection import detect_language


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("src/app.ts", "typescript"),
        ("src/App.tsx", "tsx"),
        ("src/app.js", "javascript"),
        ("src/App.jsx", "javascript"),
        ("lib/index.mjs", "javascript"),
        ("lib/index.cjs", "javascript"),
        ("lib/index.mts", "typescript"),
        ("lib/index.cts", "typescript"),
        ("types/index.d.ts", "typescript"),
        ("pkg/mod.py", "python"),
        ("pkg/mod.pyi", "python"),
        ("MAIN.PY", "python"),
        ("cmd/main.go", "go"),
        ("src/lib.rs", "rust"),
        ("src/Main.java", "java"),
        ("src/ring.c", "c"),
        ("src/ring.hpp", "cpp"),
        ("app/models/user.rb", "ruby"),
        ("build.gradle.kts", "kotlin"),
        ("Dockerfile", "dockerfile"),
        ("Makefile", "make"),
        ("docker/Dockerfile.dev", "dockerfile"),
        ("Containerfile.prod", "dockerfile"),
        ("api.dockerfile", "dockerfile"),
        ("Makefile.am", "make"),
        ("GNUmakefile", "make"),
        ("rules/common.mk", "make"),
        ("bin/deploy.sh", "bash"),
        ("bin/setup.bash", "bash"),
        ("db/schema.sql", "sql"),
        ("CMakeLists.txt", "cmake"),
        ("go.mod", "gomod"),
        ("config/settings.yaml", "yaml"),
        ("README.md", None),
        ("notes.txt", None),
        ("paper.pdf", None),
        ("report.docx", None),
        ("data.csv", None),
        ("server.log", None),
        ("docs/index.rst", None),
        ("image.png", None),
        ("LICENSE", None),
    ],
)
def test_by_file_name(path: str, expected: str | None) -> None:
    assert detect_language(path) == expected


@pytest.mark.parametrize(
    ("first_line", "expected"),
    [
        ("#!/usr/bin/env python3", "python"),
        ("#!/usr/bin/python3.11 -u", "python"),
        ("#!/bin/bash", "bash"),
        ("#!/bin/sh -e", "bash"),
        ("#! /usr/bin/env zsh", "bash"),
        ("#!/usr/bin/env node", "javascript"),
        ("#!/usr/bin/env -S node --no-warnings", "javascript"),
        ("#!/usr/bin/env -S deno run --allow-net", "typescript"),
        ("#!/usr/bin/env ruby", "ruby"),
        ("#!/usr/bin/perl -w", "perl"),
        ("<?php", "php"),
        ("#!/usr/bin/env some-unknown-tool", None),
        ("just some text", None),
    ],
)
def test_extensionless_scripts_by_content(first_line: str, expected: str | None) -> None:
    assert detect_language("bin/tool", first_line + "\nrest of the file\n") == expected


def test_a_text_file_with_a_shebang_is_still_text() -> None:
    assert detect_language("notes.txt", "#!/bin/bash\necho hi\n") is None


def test_ambiguous_extensions_look_at_the_content() -> None:
    assert detect_language("ring.h", "int ring_push(ring_t *r);\n") == "c"
    assert detect_language("box.h", "namespace app {\nclass Box {};\n}\n") == "cpp"
    assert detect_language("View.m", "#import <UIKit/UIKit.h>\n@interface View\n@end\n") == "objc"
    assert detect_language("solve.m", "x = linspace(0, 1, 10);\nplot(x)\n") == "matlab"
