"""Dockerfiles cut by build stage.

Owns ``dockerfile_stages``: every ``FROM`` instruction starts a section of
kind STAGE, named by its ``AS`` alias, else by its image (``python:3.12``);
the comment lines right above it are its own, and what comes before the first
``FROM`` (``ARG``, a ``# syntax=`` line) is unnamed code. tree-sitter's
Dockerfile grammar has no stage node: its instructions are one flat list.
"""

import re

from rag.chunking.sections import Section, start_with_comments

_FROM = re.compile(r"\s*FROM\s+(?:--\S+\s+)*(?P<image>\S+)(?:\s+AS\s+(?P<alias>\S+))?", re.I)


def dockerfile_stages(text: str) -> list[Section] | None:
    """The stages of a Dockerfile as sections, or None when it has no FROM."""
    lines = text.split("\n")
    sections: list[Section] = []
    floor, continued = 0, False
    for row, line in enumerate(lines):
        match = None if continued else _FROM.match(line)
        continued = line.rstrip().endswith("\\")  # an instruction's next line, never a FROM
        if match is None:
            continue
        start = start_with_comments(lines, row, floor, ("#",))
        sections.append(Section(start, row, "STAGE", match["alias"] or match["image"]))
        floor = row + 1
    return sections or None
