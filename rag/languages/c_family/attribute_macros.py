"""C declarations led by an attribute macro: ``LZ4_FORCE_INLINE int f(...)``, ``XXH_PUBLIC_API
unsigned XXH32(...)``, ``static FORCE_INLINE void g(...)``.

tree-sitter's C grammar reads the macro as the return type and the real type as an error, so
the function is no definition at all: no chunk of its own, no symbol, and a question naming it
finds only its callers. Before parsing, such a macro is blanked with as many spaces: the tree's
lines and byte offsets stay those of the file, which the chunk's text is cut from.
"""

import re

# An upper-case identifier at a line's start (after static/inline/extern), followed by at least a
# type and a name with "(": "U32 XXH32(" (a real upper-case type) has no second word and stays.
_LEADING_MACRO = re.compile(
    r"^((?:[ \t]*(?:static|inline|extern|__inline)[ \t]+)*[ \t]*)"
    r"([A-Z][A-Z0-9_]*[A-Z0-9])(?=[ \t]+"
    r"(?:(?:static|inline|const|unsigned|signed|struct|enum|union|extern|[A-Z][A-Z0-9_]*[A-Z0-9])\s+)*"
    r"[A-Za-z_]\w*[\s*]+[A-Za-z_]\w*\s*\()",
    re.MULTILINE,
)


def blank_attribute_macros(text: str) -> str:
    """``text`` with every leading attribute macro of a function declaration replaced by spaces."""
    if not _LEADING_MACRO.search(text):
        return text
    # Repeated: a declaration may carry two ("LZ4LIB_API LZ4_FORCE_O2 int f(").
    for _ in range(4):
        blanked = _LEADING_MACRO.sub(lambda m: m[1] + " " * len(m[2]), text)
        if blanked == text:
            break
        text = blanked
    return text
