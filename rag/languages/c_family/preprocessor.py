"""C text as its grammar can read it: one branch of each preprocessor conditional.

tree-sitter's C grammar parses ``#if``/``#else`` as syntax, so a function whose body holds a
conditional (``#if 0 … #else … #endif``, a fast path per platform) splits into loose pieces
with errors: no definition, no chunk of its own, no symbol, and a question naming the function
finds only its callers. As a compiler does, the parser is shown one branch: the first (``#if``,
``#ifdef``, ``#ifndef``); the directive lines and the other branches (``#elif``, ``#else``)
become blank. Every line keeps its length, so the tree's lines and byte offsets are the file's,
which the chunks' text is cut from.
"""

import re

_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b")


def first_branches(text: str) -> str:
    """``text`` with conditional directives and every branch but the first blanked."""
    if "#" not in text:
        return text
    lines = text.split("\n")
    skipping: list[bool] = []  # per open conditional: whether its current branch is left out
    continued = False  # the line continues a directive (a trailing backslash)
    for index, line in enumerate(lines):
        directive = None if continued else _DIRECTIVE.match(line)
        if directive is not None:
            word = directive[1]
            if word.startswith("if"):
                skipping.append(False)
            elif word == "endif":
                if skipping:
                    skipping.pop()
            elif skipping:
                skipping[-1] = True
        if continued or directive is not None or any(skipping):
            continued = (continued or directive is not None) and line.endswith("\\")
            lines[index] = re.sub(r"[^\t\r]", " ", line)
    return "\n".join(lines)
