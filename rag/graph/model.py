"""What extraction hands the indexer: a file's symbols and references (``CodeGraph``),
and the JSON shape ``rag.replace_files`` stores them in (``CodeGraph.payload``)."""

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Symbol:
    fqn: str
    kind: str
    start_line: int  # 1-based, inclusive
    end_line: int
    signature: str  # the line the name is on, stripped
    parent: int  # position of the enclosing definition in the list, -1 at top level


@dataclass(slots=True)  # not frozen: Django makes 190k of them, and frozen init is slower
class Reference:
    """A use of a name, with where the resolver may find what it names.

    ``kind``: call | import | inherits | implements. ``owner``: for a
    whole-source lookup, None wants a top-level definition, "" any member
    (a method called on a receiver of unknown type), else the simple name of
    the class the definition must be in (for an imported reference, the
    receiver's class, whose bases may define it). ``targets``: (module stem, fqn)
    pairs from the file's imports; a stem starting with "/" is a path from
    the source root, any other matches a file whose path ends with it.
    """

    kind: str
    name: str
    line: int
    scope: str | None  # fqn of the enclosing definition, None at module level
    scope_index: int  # its position in ``CodeGraph.symbols``, -1 at module level
    owner: str | None = None
    keys: tuple[str, ...] = ()  # fqns to look for in the same file, then folder; an import's alias
    targets: tuple[tuple[str, str], ...] = ()
    self_class: str | None = None  # the class self/this/super means; its bases are searched
    inherited_only: bool = False  # super.f(): the class's own members are skipped
    imported: bool = False  # the name is bound by an import: only ``targets`` may resolve it
    explicit_class: bool = False  # Cls.f(): the call names its class, so runs no override of f


@dataclass(frozen=True)
class CodeGraph:
    symbols: list[Symbol] = field(default_factory=list)
    refs: list[Reference] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)  # stems the file is imported by, longest first
    truncated: bool = False  # more than extract.MAX_REFS_PER_FILE references

    def payload(self) -> dict[str, list[Any]]:
        """The JSON ``rag.replace_files`` stores (``graph`` of a file): symbols as rows,
        references as objects without their default fields (most are: the SQL
        side reads them with one jsonb_to_recordset, lists straight into arrays)."""
        return {
            "modules": self.modules,
            "symbols": [[s.fqn, s.kind, s.start_line, s.end_line, s.signature, s.parent]
                        for s in self.symbols],
            "refs": [_ref_payload(r) for r in self.refs],
        }


def _ref_payload(ref: Reference) -> dict[str, Any]:
    """One reference for ``CodeGraph.payload``: a field left out is null, empty or false."""
    row: dict[str, Any] = {"kind": ref.kind, "name": ref.name, "line": ref.line}
    if ref.scope_index >= 0:
        row["scope"] = ref.scope_index
    if ref.owner is not None:
        row["owner"] = ref.owner
    if ref.keys:
        row["keys"] = ref.keys
    if ref.targets:
        row["stems"] = [stem for stem, _ in ref.targets]
        row["fqns"] = [fqn for _, fqn in ref.targets]
    if ref.self_class is not None:
        row["self"] = ref.self_class
    if ref.inherited_only:
        row["super"] = True
    if ref.imported:
        row["imported"] = True
    if ref.explicit_class:
        row["explicit"] = True
    return row
