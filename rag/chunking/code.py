"""Cutting source code into chunks along its syntax tree.

Owns ``chunk_code``: parse a file once with tree-sitter, make one chunk per
top-level definition (class, function, ...) and per run of code between them,
merge small neighbours up to the token bound, and split what is too big at its
children's boundaries: a class into its members, a function into groups of
statements (then with overlapping windows), a minified line into pieces.
Files without a grammar are cut into blocks at blank lines instead, and
files whose parts a finder names without a syntax tree (SQL statements,
configuration keys, Dockerfile stages: ``sections.Section``) by those parts
(``chunk_sections``), with the same merging and splitting.

Chunks cover whole lines only (except for enormous lines), and every
non-blank line of the file lands in at least one chunk. Metadata beyond the
common keys: ``fragmentType`` (CLASS, METHOD, FUNCTION, ..., MODULE for code
between definitions, BLOCK without a grammar), ``fqn`` (``UserService.findById``),
``fqns`` (the definitions a chunk holds, when that is not just its ``fqn``) and
``contextLines``: a piece cut out of a class starts with the class's signature
line(s) so that it reads on its own, while its ``startLine``/``endLine`` stay
its own lines; ``contextLines`` are the line numbers of what was put in front.
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from tree_sitter import Node

from rag.chunking.lines import Lines
from rag.chunking.model import Chunk, count_tokens
from rag.chunking.sections import Section
from rag.languages.definitions import find_definition
from rag.languages.syntax import CONTAINER_KINDS, Definition, is_attachment, last_row, parse_tree

# Pieces under max_tokens / 4 are "small": neighbours that are small merge
# into one chunk; bigger definitions keep a chunk of their own.
_SMALL_FRACTION = 4
# A line over twice the bound is minified or generated: cut it inside.
_ENORMOUS_FACTOR = 2
# Enclosing signatures put in front of a piece use at most max_tokens / 4.
_HEADER_FRACTION = 4
# Deeper nesting than this is split into plain line windows.
_MAX_DEPTH = 40
# When cutting an enormous line, prefer to cut after one of these.
_CUT_AFTER = frozenset(" \t;,}){]>")


def chunk_code(text: str, path: str, language: str, *, max_tokens: int, overlap: int) -> list[Chunk]:
    """Chunks of the source ``text``, each within ``max_tokens`` except single long lines."""
    if not text.strip():
        return []
    return chunk_parsed(text, path, language, parse_tree(text, language), max_tokens=max_tokens,
                        overlap=overlap)


def chunk_parsed(
    text: str, path: str, language: str, root: Node | None, *, max_tokens: int, overlap: int
) -> list[Chunk]:
    """``chunk_code`` of a file already parsed (``rag.languages.syntax.parse_tree``; None:
    no grammar, blocks at blank lines), for a caller that reads the tree again
    (``rag.dispatcher``: the code graph)."""
    if not text.strip():
        return []
    max_tokens = max(max_tokens, 1)
    overlap = min(max(overlap, 0), max_tokens // 2)
    source = _Source(text)
    chunker = _Chunker(source, language, max_tokens, overlap)
    pieces = chunker.blocks() if root is None else chunker.top_level(root)
    base = {"path": path, "sourceType": "code", "language": language}
    return [_to_chunk(piece, source, base) for piece in pieces]


def chunk_sections(
    text: str, path: str, language: str, sections: Sequence[Section], *, max_tokens: int,
    overlap: int
) -> list[Chunk]:
    """Chunks of ``text`` along ``sections`` (sorted by start, rows before the
    first are code of no name): each section a chunk named by it, small ones
    merged, big ones cut into windows of lines that keep its name."""
    if not text.strip():
        return []
    max_tokens = max(max_tokens, 1)
    overlap = min(max(overlap, 0), max_tokens // 2)
    source = _Source(text)
    pieces = _Chunker(source, language, max_tokens, overlap).sections(sections)
    base = {"path": path, "sourceType": "code", "language": language}
    return [_to_chunk(piece, source, base) for piece in pieces]


# --- the text, by line ----------------------------------------------------------


class _Source:
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
class _Scope:
    """What the code being cut belongs to."""

    kind: str  # fragmentType of code that is not a definition of its own
    fqn: str | None  # the enclosing definition, prefix of the definitions inside
    methods: bool  # inside a class-like definition: its functions are methods
    header: tuple[int, ...]  # rows of enclosing signatures, put in front of pieces
    header_tokens: int
    depth: int


@dataclass
class _LineGroup:
    """Syntax nodes on a run of lines that must stay in one piece."""

    first: int
    last: int
    nodes: list[Node]
    only_attachments: bool


@dataclass(frozen=True)
class _Unit:
    """Whole lines holding one statement or definition, with the comments above it."""

    start: int
    end: int
    nodes: tuple[Node, ...]
    definition: Definition | None


@dataclass(frozen=True)
class _Piece:
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


def _to_chunk(piece: _Piece, source: _Source, base: dict[str, str]) -> Chunk:
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


def _join_name(prefix: str | None, name: str | None) -> str | None:
    if prefix and name:
        return f"{prefix}.{name}"
    return name or prefix


class _Chunker:
    """Cuts one file: units of whole lines along syntax nodes, cut further when
    over the budget, packed back together when small."""

    def __init__(self, source: _Source, language: str, max_tokens: int, overlap: int) -> None:
        self.source = source
        self.language = language
        self.max_tokens = max_tokens
        self.overlap = overlap

    # --- entry points ---

    def top_level(self, root: Node) -> list[_Piece]:
        scope = _Scope("MODULE", None, False, (), 0, 0)
        return self._split(root.named_children, 0, self.source.last_row, scope, windows=False)

    def blocks(self) -> list[_Piece]:
        """No grammar: blocks start at an unindented line after a blank line."""
        source, scope = self.source, _Scope("BLOCK", None, False, (), 0, 0)
        starts = [
            row for row in range(1, source.last_row + 1)
            if source.is_blank(row - 1) and source.lines[row][:1] not in ("", " ", "\t")
        ]
        pieces: list[_Piece] = []
        for start, next_start in zip([0, *starts], [*starts, source.last_row + 1], strict=True):
            span = source.trim(start, next_start - 1)
            if span is not None:
                pieces.extend(self._cut_unit(_Unit(*span, (), None), scope))
        return self._pack(pieces, scope, windows=False)

    def sections(self, sections: Sequence[Section]) -> list[_Piece]:
        """Each section one piece, or windows keeping its name and starting with its head row."""
        source, module = self.source, _Scope("MODULE", None, False, (), 0, 0)
        if not sections or sections[0].start > 0:
            sections = [Section(0, 0, "MODULE", None), *sections]
        ends = [section.start - 1 for section in sections[1:]] + [source.last_row]
        pieces: list[_Piece] = []
        for section, end in zip(sections, ends, strict=True):
            span = source.trim(section.start, end)
            if span is None:
                continue
            fqns = (section.name,) if section.name else ()
            piece = _Piece(*span, section.kind, section.name, source.tokens(*span), (),
                           whole=True, fqns=fqns)
            if piece.tokens <= self.max_tokens:
                pieces.append(piece)
                continue
            header = self._fit_header((), range(section.head, section.head + 1))
            header_tokens = sum(source.row_tokens(row) for row in header)
            inner = _Scope(section.kind, section.name, False, header, header_tokens, 1)
            lines = self._line_pieces(replace(piece, header=header), inner)
            pieces.extend(replace(part, whole=False) for part in self._pack(lines, inner, windows=True))
        return self._pack(pieces, module, windows=False)

    # --- cutting a range of rows along syntax nodes ---

    def _split(
        self, nodes: Sequence[Node], start: int, end: int, scope: _Scope, windows: bool | None
    ) -> list[_Piece]:
        """Pieces covering rows start..end, cut at the boundaries of ``nodes``.

        ``windows``: pack the pieces tightly with overlap (parts of one thing),
        or merge only small siblings; None decides by whether definitions are
        among them (a namespace-like block) or not (a body of statements).
        """
        units = list(self._units(nodes, start, end))
        if windows is None:
            windows = not any(unit.definition for unit in units)
        cut = self._open_unit if windows else self._cut_unit
        pieces = [piece for unit in units for piece in cut(unit, scope)]
        return self._pack(pieces, scope, windows)

    def _units(self, nodes: Sequence[Node], start: int, end: int) -> Iterator[_Unit]:
        """Units partitioning rows start..end: lines shared by nodes stay together,
        comments and decorators join the definition right below them, and the
        lines before the first node (a class's signature) join the first unit."""
        groups = self._line_groups(nodes)
        if not groups:  # no nodes, or only empty ones (a zero-width error node)
            span = self.source.trim(start, end)
            if span is not None:
                yield _Unit(*span, (), None)
            return
        starts = [start] + [group.first for group in groups[1:]]
        ends = [group.first - 1 for group in groups[1:]] + [end]
        for group, unit_start, unit_end in zip(groups, starts, ends, strict=True):
            span = self.source.trim(unit_start, unit_end)
            if span is not None:
                group_nodes = tuple(group.nodes)
                yield _Unit(*span, group_nodes, self._definition_of(group_nodes))

    @staticmethod
    def _line_groups(nodes: Sequence[Node]) -> list[_LineGroup]:
        """Nodes sharing lines, with comments and decorators attached to what follows."""
        groups: list[_LineGroup] = []
        last_group = None
        for node in nodes:
            if node.start_byte == node.end_byte:
                continue  # a MISSING node inserted by error recovery
            first, last = node.start_point.row, last_row(node)
            if last_group is not None and (
                first <= last_group.last
                or (first == last_group.last + 1 and last_group.only_attachments)
            ):
                last_group.nodes.append(node)
                last_group.last = max(last_group.last, last)
                last_group.only_attachments = last_group.only_attachments and is_attachment(node)
            else:
                last_group = _LineGroup(first, last, [node], is_attachment(node))
                groups.append(last_group)
        return groups

    def _definition_of(self, nodes: Sequence[Node]) -> Definition | None:
        code = [node for node in nodes if not is_attachment(node)]
        return find_definition(code[0], self.language) if len(code) == 1 else None

    @staticmethod
    def _code_children(unit: _Unit) -> list[Node]:
        """What plain code is made of: its comments and its nodes' children."""
        return [
            child
            for node in unit.nodes
            for child in ([node] if is_attachment(node) else node.named_children)
        ]

    # --- one unit ---

    def _cut_unit(self, unit: _Unit, scope: _Scope) -> list[_Piece]:
        """The unit as one piece if it fits, else cut into parts of its own."""
        piece = self._whole_piece(unit, scope)
        if piece.tokens <= self._budget(scope):
            return [piece]
        # Parts of a unit must not merge with the unit's neighbours.
        return [replace(part, whole=False) for part in self._cut_big(unit, piece, scope)]

    def _open_unit(self, unit: _Unit, scope: _Scope) -> list[_Piece]:
        """Like ``_cut_unit``, for a window: plain code too big to fit (a loop, an
        if, a long string) opens up into its statements or lines, which then
        pack with their neighbours."""
        piece = self._whole_piece(unit, scope)
        if piece.tokens <= self._budget(scope):
            return [piece]
        if unit.definition is not None or unit.start == unit.end:
            return [replace(part, whole=False) for part in self._cut_big(unit, piece, scope)]
        children = self._code_children(unit)
        if not children or scope.depth >= _MAX_DEPTH:
            return self._line_pieces(piece, scope)
        inner = replace(scope, depth=scope.depth + 1)
        return [
            part
            for child_unit in self._units(children, unit.start, unit.end)
            for part in self._open_unit(child_unit, inner)
        ]

    def _cut_big(self, unit: _Unit, piece: _Piece, scope: _Scope) -> list[_Piece]:
        """Parts of a unit over the budget: a definition's members or statements,
        plain code's children, or lines."""
        if unit.start == unit.end:
            return self._cut_line(piece, scope)
        definition = unit.definition
        if definition is not None:
            container = definition.kind in CONTAINER_KINDS and definition.body is not None
            inner = self._enter(definition, piece, scope, container)
            body = definition.body if definition.body is not None else definition.node
            children: Sequence[Node] = body.named_children
            windows: bool | None = not container
        else:
            inner = replace(scope, depth=scope.depth + 1)
            children = self._code_children(unit)
            windows = None
        if not children or scope.depth >= _MAX_DEPTH:
            return self._pack(self._line_pieces(piece, scope), scope, windows=True)
        parts = self._split(children, unit.start, unit.end, inner, windows)
        if definition is not None and parts[0].whole:
            # The part holding the signature is the definition's, whatever member follows.
            parts[0] = replace(parts[0], kind=inner.kind, fqn=inner.fqn)
        return parts

    def _whole_piece(self, unit: _Unit, scope: _Scope) -> _Piece:
        kind, fqn = scope.kind, scope.fqn
        definition = unit.definition
        if definition is not None:
            kind = definition.kind
            if kind == "FUNCTION" and scope.methods:
                kind = "METHOD"
            fqn = _join_name(scope.fqn, definition.name)
        tokens = self.source.tokens(unit.start, unit.end)
        return _Piece(unit.start, unit.end, kind, fqn, tokens, scope.header, whole=True,
                      fqns=(fqn,) if definition is not None and fqn else ())

    def _enter(
        self, definition: Definition, piece: _Piece, scope: _Scope, container: bool
    ) -> _Scope:
        """The scope inside a definition: its code is of its kind, its signature heads pieces."""
        header = self._fit_header(scope.header, self._signature_rows(definition))
        header_tokens = sum(self.source.row_tokens(row) for row in header)
        methods = container and piece.kind != "MODULE"
        return _Scope(piece.kind, piece.fqn, methods, header, header_tokens, scope.depth + 1)

    def _signature_rows(self, definition: Definition) -> range:
        """Rows from the definition's name to where its body opens."""
        node, body = definition.node, definition.body
        name = node.child_by_field_name("name")
        first = name.start_point.row if name is not None else node.start_point.row
        if body is None:
            return range(first, first + 1)
        last = body.start_point.row
        opening = body.child(0) if body.child_count else None
        if opening is not None and opening.is_named:  # Python: the block starts at its first line
            before = body.prev_sibling
            while before is not None and before.is_extra:  # a comment between signature and body
                before = before.prev_sibling
            last = before.end_point.row if before is not None else first
        return range(first, max(first, last) + 1)

    def _fit_header(self, outer: tuple[int, ...], signature: range) -> tuple[int, ...]:
        """Enclosing signatures and this one, or less of them when that is too long."""
        limit = self.max_tokens // _HEADER_FRACTION
        for rows in ((*outer, *signature), tuple(signature), (signature[0],)):
            if sum(self.source.row_tokens(row) for row in rows) <= limit:
                return rows
        return ()

    def _budget(self, scope: _Scope) -> int:
        return self.max_tokens - scope.header_tokens

    # --- merging pieces ---

    def _pack(self, pieces: list[_Piece], scope: _Scope, windows: bool) -> list[_Piece]:
        """Merge runs of whole pieces up to the bound: as windows (parts of one
        thing, with overlap), or as siblings, where at most one piece of a run
        may be big: two big definitions keep a chunk each."""
        budget = self._budget(scope)
        if not windows:
            pieces = self._join_code_runs(pieces, scope, budget)
        limit = budget - self.overlap if windows else budget
        small = self.max_tokens // _SMALL_FRACTION
        packed: list[_Piece] = []
        group: list[_Piece] = []
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

    def _join_code_runs(self, pieces: list[_Piece], scope: _Scope, budget: int) -> list[_Piece]:
        """Consecutive plain code (statements, imports, comments) becomes one piece."""
        joined: list[_Piece] = []
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
    def _merge(group: list[_Piece], scope: _Scope, windows: bool = False) -> _Piece:
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

    def _with_overlap(self, piece: _Piece, budget: int, floor: int) -> _Piece:
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

    def _line_pieces(self, piece: _Piece, scope: _Scope) -> list[_Piece]:
        """The piece's paragraphs (runs of non-blank lines) as whole pieces, or
        its lines where a paragraph is over a window."""
        window = self._budget(scope) - self.overlap
        parts: list[_Piece] = []
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

    def _cut_line(self, piece: _Piece, scope: _Scope) -> list[_Piece]:
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
