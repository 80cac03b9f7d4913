"""man(7) pages as Markdown, for the Russian evaluation sets (``build_ru_man.py``).

Debian's ``mandoc -T markdown`` converts mdoc(7) only ("-Tmarkdown unsupported for man(7)
input"), and the translated pages of manpages-ru are man(7), as most Linux pages are. This
covers what those pages use: ``.TH`` becomes the title, ``.SH``/``.SS`` headings, each ``.TP``
item (an option, a variable, an exit code) a heading one level below with its tag as title,
``.nf``/``.EX`` blocks fenced code; font changes and spacing requests are dropped, escapes
turned into the characters they stand for.
"""

import re
from dataclasses import dataclass, field

_SPECIAL = {
    "em": "—", "en": "–", "hy": "-", "aq": "'", "dq": '"', "lq": "“", "rq": "”", "Fo": "«", "Fc": "»",
    "oq": "‘", "cq": "’", "bu": "•", "co": "©", "rg": "®", "tm": "™", "ti": "~", "ha": "^", "ga": "`",
    "mu": "×", "di": "÷", "<=": "≤", ">=": "≥", "->": "→", "<-": "←", "bv": "|", "or": "|", "pl": "+",
    "mi": "−", "eq": "=", "de": "°", "ua": "↑", "da": "↓", "sl": "/", "rs": "\\", "lB": "[", "rB": "]",
    "lC": "{", "rC": "}", "at": "@", "sh": "#", "Do": "$", "ct": "¢", "Eu": "€", "ss": "ß", "r!": "¡",
}
_SIMPLE = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " ", "t": "\t", "'": "'", "`": "`",
           ".": ".", '"': '"'}
_ESCAPE = re.compile(r"\\(\((..)|\[([^\]]*)\]|[fF](?:\(..|\[[^\]]*\]|.)|s[+-]?\d+|\*(?:\(..|\[[^\]]*\]|.)"
                     r"|[nk](?:\(..|\[[^\]]*\]|.)|[hvwlLoDbxXYZ]'[^']*'|.)")
_FONTS_ALTERNATING = {"BR", "BI", "IB", "IR", "RB", "RI"}
_FONTS = {"B", "I", "R", "SM", "SB"}
_PARAGRAPH = {"PP", "P", "LP", "sp", "HP"}
_BLOCK_START, _BLOCK_END = {"nf", "EX"}, {"fi", "EE"}


def _unescape(match: re.Match[str]) -> str:
    name = match.group(2) or match.group(3)
    if name is not None:
        if name.startswith("u") and re.fullmatch(r"u[0-9A-Fa-f]{4,6}", name):
            return chr(int(name[1:], 16))
        return _SPECIAL.get(name, "")
    return _SIMPLE.get(match.group(1), "")


def inline(text: str) -> str:
    """A line of roff text as plain text: comments cut, escapes replaced, font changes dropped."""
    text = re.sub(r'\\".*$', "", text)
    return _ESCAPE.sub(_unescape, text)


def _arguments(line: str) -> list[str]:
    """A request's arguments: space-separated, "double quoted" ones keeping their spaces."""
    return [a[1:-1].replace('""', '"') if a.startswith('"') else a
            for a in re.findall(r'"(?:[^"]|"")*"?|\S+', line)]


@dataclass
class _Writer:
    lines: list[str] = field(default_factory=list)
    paragraph: list[str] = field(default_factory=list)
    in_block: bool = False
    level: int = 2  # the level of the current .SH / .SS heading

    def text(self, words: str) -> None:
        if self.in_block:
            self.lines.append(words)
        elif words.strip():
            self.paragraph.append(words.strip())

    def flush(self) -> None:
        if self.paragraph:
            self.lines.extend([" ".join(self.paragraph), ""])
            self.paragraph = []

    def heading(self, level: int, title: str) -> None:
        self.flush()
        self.lines.extend([f"{'#' * level} {' '.join(title.split())}", ""])


def man_to_markdown(source: str) -> str:
    """The Markdown text of one man(7) page."""
    out = _Writer()
    pending: str | None = None  # a heading or item tag whose title is on the next text line
    skip_until: str | None = None
    for raw in source.split("\n"):
        if skip_until is not None:
            if raw.strip().startswith(skip_until):
                skip_until = None
            continue
        if (raw.startswith((".", "'")) and not out.in_block) or raw.startswith((".fi", ".EE")):
            request = raw[1:].strip()
            if not request or request.startswith(('\\"', '"')):
                continue
            name, _, rest = request.partition(" ")
            args = _arguments(rest)
            if name in ("de", "ig", "am"):
                skip_until = ".."
                continue
            if name in ("if", "ie", "el") and "\\{" in rest:
                skip_until = ".\\}" if not rest.rstrip().endswith("\\}") else None
                continue
            text = None
            if name == "TH":
                out.heading(1, f"{inline(args[0])}({inline(args[1]) if len(args) > 1 else ''})")
            elif name in ("SH", "SS"):
                out.level = 2 if name == "SH" else 3
                if args:
                    out.heading(out.level, inline(" ".join(args)))
                else:
                    out.flush()
                    pending = name
            elif name in ("TP", "TQ"):
                out.flush()
                pending = name
            elif name == "IP":
                out.flush()
                tag = inline(args[0]) if args else ""
                if tag and tag != "•":
                    out.text(tag)
                    out.flush()
            elif name in _PARAGRAPH:
                out.flush()
            elif name == "br":
                if out.in_block:
                    continue
                out.flush()
            elif name in _BLOCK_START and not out.in_block:
                out.flush()
                out.lines.append("```")
                out.in_block = True
            elif name in _BLOCK_END and out.in_block:
                out.lines.extend(["```", ""])
                out.in_block = False
            elif name in _FONTS_ALTERNATING:
                text = "".join(inline(a) for a in args)
            elif name in _FONTS:
                text = inline(" ".join(args))
            elif name in ("UR", "MT"):
                text = inline(args[0]) if args else None
            elif name in ("SY", "OP"):
                text = inline(" ".join(args)) if name == "SY" else f"[{inline(' '.join(args))}]"
            if text is None:
                continue
            line = text
        else:
            line = inline(raw)
        if pending in ("SH", "SS"):
            out.heading(out.level, line)
            pending = None
        elif pending in ("TP", "TQ"):
            tag = " ".join(line.split())
            last = out.lines[-2] if len(out.lines) >= 2 else ""
            if pending == "TQ" and last.startswith("#"):  # another tag of the same item
                out.lines[-2] = f"{last}, {tag}"
            else:
                out.heading(out.level + 1, tag)
            pending = None
        else:
            out.text(line)
    out.flush()
    if out.in_block:
        out.lines.append("```")
    text = "\n".join(out.lines).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", text) + "\n"
