"""Cutting source code into chunks along its syntax tree.

Owns ``chunk_code`` (and ``chunk_parsed``, for a tree parsed already): parse a
file once with tree-sitter, make one chunk per top-level definition (class,
function, ...) and per run of code between them, merge small neighbours up to
the token bound, and split what is too big at its children's boundaries: a
class into its members, a function into groups of statements (then with
overlapping windows), a minified line into pieces. Files without a grammar are
cut into blocks at blank lines instead, and files whose parts a finder names
without a syntax tree (SQL statements, configuration keys, Dockerfile stages:
``sections.Section``) by those parts (``chunk_sections``), with the same
merging and splitting. What needs no tree (merging, overlap, lines, enormous
lines) is ``pieces.Packer``'s, which ``_Chunker`` builds on.

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

from rag.chunking.model import Chunk
from rag.chunking.pieces import Packer, Piece, Rows, Scope, to_chunk
from rag.chunking.sections import Section
from rag.languages.definitions import find_definition
from rag.languages.syntax import CONTAINER_KINDS, Definition, is_attachment, last_row, parse_tree

# Enclosing signatures put in front of a piece use at most max_tokens / 4.
_HEADER_FRACTION = 4
# Deeper nesting than this is split into plain line windows.
_MAX_DEPTH = 40


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
    source = Rows(text)
    chunker = _Chunker(source, language, max_tokens, overlap)
    pieces = chunker.blocks() if root is None else chunker.top_level(root)
    base = {"path": path, "sourceType": "code", "language": language}
    return [to_chunk(piece, source, base) for piece in pieces]


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
    source = Rows(text)
    pieces = _Chunker(source, language, max_tokens, overlap).sections(sections)
    base = {"path": path, "sourceType": "code", "language": language}
    return [to_chunk(piece, source, base) for piece in pieces]


# --- what is cut along the syntax tree ---------------------------------------------


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


def _join_name(prefix: str | None, name: str | None) -> str | None:
    if prefix and name:
        return f"{prefix}.{name}"
    return name or prefix


class _Chunker(Packer):
    """Cuts one file: units of whole lines along syntax nodes, cut further when
    over the budget, packed back together when small (``Packer``)."""

    def __init__(self, source: Rows, language: str, max_tokens: int, overlap: int) -> None:
        super().__init__(source, max_tokens, overlap)
        self.language = language

    # --- entry points ---

    def top_level(self, root: Node) -> list[Piece]:
        scope = Scope("MODULE", None, False, (), 0, 0)
        return self._split(root.named_children, 0, self.source.last_row, scope, windows=False)

    def blocks(self) -> list[Piece]:
        """No grammar: blocks start at an unindented line after a blank line."""
        source, scope = self.source, Scope("BLOCK", None, False, (), 0, 0)
        starts = [
            row for row in range(1, source.last_row + 1)
            if source.is_blank(row - 1) and source.lines[row][:1] not in ("", " ", "\t")
        ]
        pieces: list[Piece] = []
        for start, next_start in zip([0, *starts], [*starts, source.last_row + 1], strict=True):
            span = source.trim(start, next_start - 1)
            if span is not None:
                pieces.extend(self._cut_unit(_Unit(*span, (), None), scope))
        return self._pack(pieces, scope, windows=False)

    def sections(self, sections: Sequence[Section]) -> list[Piece]:
        """Each section one piece, or windows keeping its name and starting with its head row."""
        source, module = self.source, Scope("MODULE", None, False, (), 0, 0)
        if not sections or sections[0].start > 0:
            sections = [Section(0, 0, "MODULE", None), *sections]
        ends = [section.start - 1 for section in sections[1:]] + [source.last_row]
        pieces: list[Piece] = []
        for section, end in zip(sections, ends, strict=True):
            span = source.trim(section.start, end)
            if span is None:
                continue
            fqns = (section.name,) if section.name else ()
            piece = Piece(*span, section.kind, section.name, source.tokens(*span), (),
                           whole=True, fqns=fqns)
            if piece.tokens <= self.max_tokens:
                pieces.append(piece)
                continue
            header = self._fit_header((), range(section.head, section.head + 1))
            header_tokens = sum(source.row_tokens(row) for row in header)
            inner = Scope(section.kind, section.name, False, header, header_tokens, 1)
            lines = self._line_pieces(replace(piece, header=header), inner)
            pieces.extend(replace(part, whole=False) for part in self._pack(lines, inner, windows=True))
        return self._pack(pieces, module, windows=False)

    # --- cutting a range of rows along syntax nodes ---

    def _split(
        self, nodes: Sequence[Node], start: int, end: int, scope: Scope, windows: bool | None
    ) -> list[Piece]:
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

    def _cut_unit(self, unit: _Unit, scope: Scope) -> list[Piece]:
        """The unit as one piece if it fits, else cut into parts of its own."""
        piece = self._whole_piece(unit, scope)
        if piece.tokens <= self._budget(scope):
            return [piece]
        # Parts of a unit must not merge with the unit's neighbours.
        return [replace(part, whole=False) for part in self._cut_big(unit, piece, scope)]

    def _open_unit(self, unit: _Unit, scope: Scope) -> list[Piece]:
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

    def _cut_big(self, unit: _Unit, piece: Piece, scope: Scope) -> list[Piece]:
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

    def _whole_piece(self, unit: _Unit, scope: Scope) -> Piece:
        kind, fqn = scope.kind, scope.fqn
        definition = unit.definition
        if definition is not None:
            kind = definition.kind
            if kind == "FUNCTION" and scope.methods:
                kind = "METHOD"
            fqn = _join_name(scope.fqn, definition.name)
        tokens = self.source.tokens(unit.start, unit.end)
        return Piece(unit.start, unit.end, kind, fqn, tokens, scope.header, whole=True,
                      fqns=(fqn,) if definition is not None and fqn else ())

    def _enter(
        self, definition: Definition, piece: Piece, scope: Scope, container: bool
    ) -> Scope:
        """The scope inside a definition: its code is of its kind, its signature heads pieces."""
        header = self._fit_header(scope.header, self._signature_rows(definition))
        header_tokens = sum(self.source.row_tokens(row) for row in header)
        methods = container and piece.kind != "MODULE"
        return Scope(piece.kind, piece.fqn, methods, header, header_tokens, scope.depth + 1)

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
