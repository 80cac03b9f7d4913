"""Text for a terminal (the CLI's text output and the index progress): what was indexed (file
names, contents, symbol names) may hold control characters, and printed raw an ESC sequence
recolours, moves or clears the user's terminal.
``printable`` shows each as an escape (``\\x1b``); line breaks and tabs stay. ``--json`` output
needs none of it (JSON escapes them itself)."""

import re

# C0 controls but tab and newline, DEL, and the C1 controls (U+0080-U+009F, CSI among them).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control character but tab and newline written as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", text)
