"""The pieces a code chunk is made of, and what is done to them without a syntax tree.

Owns ``Rows`` (a file's lines addressed by inclusive row ranges, as syntax nodes are),
``Scope`` (what the code being cut belongs to), ``Piece`` (a chunk to be) and ``to_chunk``,
and ``Packer``: merging pieces up to the token bound (siblings, or windows with overlap) and
cutting what has no syntax to cut along (paragraphs, lines, enormous lines). ``code._Chunker``
builds on it, cutting along the syntax tree (``rag.chunking.code``).
"""

from collections.abc import Iterator
from dataclasses import dataclass, replace

from rag.chunking.lines import Lines
from rag.chunking.model import Chunk, count_tokens

# Pieces under max_tokens / 4 are "small": neighbours that are small merge
# into one chunk; bigger definitions keep a chunk of their own.
_SMALL_FRACTION = 4
# A line over twice the bound is minified or generated: cut it inside.
_ENORMOUS_FACTOR = 2
# When cutting an enormous line, prefer to cut after one of these.
_CUT_AFTER = frozenset(" \t;,}){]>")


# --- the text, by line ----------------------------------------------------------


class Rows:
    """The file's ``Lines`` (cut at "\\n" like tree-sitter rows), addressed by
    inclusive row ranges as syntax nodes are."""

    def __init__(self, text: str) -> None:
        self._lines = Lines(text)
        self.lines = self._lines.strings
        self.last_row = len(self.lines) - 1

    def slice(self, start: int, end: int) -> str:
        """Rows ``start``..``end`` as they are in the file, without the last newline."""
        return "\n".join(self.lines[start : end + 1])

    def tokens(self, start: int, end: int) -> int:
        return self._lines.tokens_in(start, end + 1)

    def row_tokens(self, row: int) -> int:
        return self._lines.tokens[row]

    def is_blank(self, row: int) -> bool:
        return self._lines.tokens[row] == 0  # any non-space character is a token

    def trim(self, start: int, end: int) -> tuple[int, int] | None:
        """The range without blank lines at either end; None if all blank."""
        first, stop = self._lines.trimmed(start, end + 1)
        return (first, stop - 1) if first < stop else None


# --- what is cut ------------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    """What the code being cut belongs to."""

    kind: str  # fragmentType of code that is not a definition of its own
    fqn: str | None  # the enclosing definition, prefix of the definitions inside
    methods: bool  # inside a class-like definition: its functions are methods
    header: tuple[int, ...]  # rows of enclosing signatures, put in front of pieces
    header_tokens: int
    depth: int


@dataclass(frozen=True)
class Piece:
    """A chunk to be: rows of the file, what they are, and the context put in front."""

    start: int
    end: int
    kind: str
    fqn: str | None
    tokens: int  # of its own rows, without the header
    header: tuple[int, ...]
    whole: bool  # a complete unit that may merge with neighbours
    fqns: tuple[str, ...] = ()  # every definition in it
    text: str | None = None  # a cut of an enormous line, instead of the rows


def to_chunk(piece: Piece, source: Rows, base: dict[str, str]) -> Chunk:
    header = [row for row in piece.header if row < piece.start]
    body = piece.text if piece.text is not None else source.slice(piece.start, piece.end)
    content = "\n".join([*(source.lines[row] for row in header), body])
    metadata: dict[str, object] = {
        **base,
        "startLine": piece.start + 1,
        "endLine": piece.end + 1,
        "fragmentType": piece.kind,
    }
    if piece.fqn:
        metadata["fqn"] = piece.fqn
    if piece.fqns and piece.fqns != (piece.fqn,):
        metadata["fqns"] = list(piece.fqns)
    if header:
        metadata["contextLines"] = [row + 1 for row in header]
    return Chunk(content, metadata)


class Packer:
    """Merges pieces of one file up to the bound, and cuts them by lines where syntax gives no cut."""

    def __init__(self, source: Rows, max_tokens: int, overlap: int) -> None:
        self.source = source
        self.max_tokens = max_tokens
        self.overlap = overlap

    def _budget(self, scope: Scope) -> int:
        return self.max_tokens - scope.header_tokens

    # --- merging pieces ---

    def _pack(self, pieces: list[Piece], scope: Scope, windows: bool) -> list[Piece]:
        """Merge runs of whole pieces up to the bound: as windows (parts of one
        thing, with overlap), or as siblings, where at most one piece of a run
        may be big: two big definitions keep a chunk each."""
        budget = self._budget(scope)
        if not windows:
            pieces = self._join_code_runs(pieces, scope, budget)
        limit = budget - self.overlap if windows else budget
        small = self.max_tokens // _SMALL_FRACTION
        packed: list[Piece] = []
        group: list[Piece] = []
        group_tokens, group_has_big = 0, False
        for piece in pieces:
            big = piece.tokens > small and not windows
            if (
                piece.whole
                and group
                and group_tokens + piece.tokens <= limit
                and not (big and group_has_big)
            ):
                group.append(piece)
                group_tokens, group_has_big = group_tokens + piece.tokens, group_has_big or big
                continue
            if group:
                packed.append(self._merge(group, scope, windows))
            if piece.whole and piece.tokens <= limit:
                group, group_tokens, group_has_big = [piece], piece.tokens, big
            else:
                group, group_tokens, group_has_big = [], 0, False
                packed.append(piece)
        if group:
            packed.append(self._merge(group, scope, windows))
        if windows and self.overlap and packed:
            floor = packed[0].start
            packed = [packed[0], *(self._with_overlap(p, budget, floor) for p in packed[1:])]
        return packed

    def _join_code_runs(self, pieces: list[Piece], scope: Scope, budget: int) -> list[Piece]:
        """Consecutive plain code (statements, imports, comments) becomes one piece."""
        joined: list[Piece] = []
        for piece in pieces:
            previous = joined[-1] if joined else None
            if (
                previous is not None
                and previous.whole
                and piece.whole
                and not previous.fqns
                and not piece.fqns
                and previous.tokens + piece.tokens <= budget
            ):
                joined[-1] = self._merge([previous, piece], scope)
            else:
                joined.append(piece)
        return joined

    @staticmethod
    def _merge(group: list[Piece], scope: Scope, windows: bool = False) -> Piece:
        """One piece of several. Among siblings where a single definition makes
        up most of it (a function and its imports), it is that definition's;
        else it is part of the enclosing scope (the module, the class, the
        function split into windows) and lists the definitions it holds."""
        if len(group) == 1:
            return group[0]
        fqns = tuple(dict.fromkeys(fqn for piece in group for fqn in piece.fqns))
        # Pieces are consecutive and only blank lines lie between them: counts add up.
        tokens = sum(piece.tokens for piece in group)
        definitions = [piece for piece in group if piece.fqns]
        single = len(definitions) == 1 and not windows and definitions[0].tokens * 2 >= tokens
        owner = definitions[0] if single else group[0]
        kind, fqn = (owner.kind, owner.fqn) if single else (scope.kind, scope.fqn)
        return replace(owner, start=group[0].start, end=group[-1].end, kind=kind, fqn=fqn,
                       tokens=tokens, fqns=fqns)

    def _with_overlap(self, piece: Piece, budget: int, floor: int) -> Piece:
        """Start the piece earlier, by lines worth up to ``overlap`` tokens, not before ``floor``."""
        if not piece.whole:
            return piece
        start, tokens, added = piece.start, piece.tokens, 0
        while start > floor:
            row_tokens = self.source.row_tokens(start - 1)
            if added + row_tokens > self.overlap or tokens + row_tokens > budget:
                break
            start, tokens, added = start - 1, tokens + row_tokens, added + row_tokens
        span = self.source.trim(start, piece.end)
        return replace(piece, start=span[0], tokens=tokens) if span else piece

    # --- cutting without syntax ---

    def _line_pieces(self, piece: Piece, scope: Scope) -> list[Piece]:
        """The piece's paragraphs (runs of non-blank lines) as whole pieces, or
        its lines where a paragraph is over a window."""
        window = self._budget(scope) - self.overlap
        parts: list[Piece] = []
        for start, end in self._paragraphs(piece.start, piece.end):
            tokens = self.source.tokens(start, end)
            if tokens <= window:
                parts.append(replace(piece, start=start, end=end, tokens=tokens, whole=True))
                continue
            for row in range(start, end + 1):
                line = replace(piece, start=row, end=row, tokens=self.source.row_tokens(row))
                parts.extend([line] if line.tokens <= window else self._cut_line(line, scope))
        return parts

    def _paragraphs(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        paragraph_start = None
        for row in range(start, end + 1):
            blank = self.source.is_blank(row)
            if paragraph_start is None and not blank:
                paragraph_start = row
            elif paragraph_start is not None and blank:
                yield paragraph_start, row - 1
                paragraph_start = None
        if paragraph_start is not None:
            yield paragraph_start, end

    def _cut_line(self, piece: Piece, scope: Scope) -> list[Piece]:
        """A line over the bound: kept whole, unless enormous (minified): then cut."""
        tokens = self.source.row_tokens(piece.start)
        line_piece = replace(piece, end=piece.start, tokens=tokens, whole=False)
        if tokens <= self.max_tokens * _ENORMOUS_FACTOR:
            return [line_piece]
        budget = self._budget(scope)
        return [
            replace(line_piece, text=part, tokens=count_tokens(part))
            for part in _cut_text(self.source.lines[piece.start], tokens, budget)
        ]

def _cut_text(line: str, tokens: int, budget: int) -> Iterator[str]:
    """Consecutive parts of ``line`` of at most ``budget`` tokens, cut after a
    space or punctuation mark where there is one near the end of a part."""
    chars_per_token = len(line) / max(tokens, 1)
    position = 0
    while position < len(line):
        size = max(1, int(budget * chars_per_token * 0.9))
        while True:
            end = _cut_position(line, position, min(len(line), position + size))
            part = line[position:end]
            if size == 1 or count_tokens(part) <= budget:
                break
            size = max(1, size * 3 // 4)
        yield part
        position = end


def _cut_position(line: str, start: int, end: int) -> int:
    """``end``, or a bit before it right after a space or punctuation mark."""
    if end >= len(line):
        return len(line)
    floor = start + (end - start) * 3 // 4
    for position in range(end, floor, -1):
        if line[position - 1] in _CUT_AFTER:
            return position
    return end
