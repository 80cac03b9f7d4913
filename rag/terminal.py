"""Text for a terminal (the CLI's text output and the index progress): what was indexed (file
names, contents, symbol names) may hold control characters, and printed raw an ESC sequence
recolours, moves or clears the user's terminal.
``printable`` shows each as an escape (``\\x1b``); line breaks and tabs stay. Bidirectional
controls (U+202E and its kin, which make a name read as another) are shown as ``\\u202e``.
``printable_name`` escapes line breaks and tabs too: a file name that holds one must not pass for
two lines. ``--json`` output needs none of it (JSON escapes them itself)."""

import re

# C0 controls but tab and newline, DEL, and the C1 controls (U+0080-U+009F, CSI among them).
# (and the bidirectional marks, embeddings, overrides and isolates)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAME_CONTROL = re.compile(r"[\t\n]|" + _CONTROL.pattern)


def printable(text: str) -> str:
    """``text`` with every control character but tab and newline written as ``\\xNN`` (a
    bidirectional one as ``\\uNNNN``)."""
    return _CONTROL.sub(_escape, text)


def printable_name(text: str) -> str:
    """A file name or path as ``printable`` shows text, its tabs and line breaks escaped too."""
    return _NAME_CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
