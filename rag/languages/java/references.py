"""Java's references: ``import a.b.Cart;`` and ``import static a.b.Util.go;``,
``this``, and unqualified calls of the class's own (or inherited) members."""

from collections.abc import Iterator, Mapping

from rag.graph.model import Reference
from rag.graph.references import Captures, Language, References, query_text


def read_import(refs: References, captures: Captures) -> Iterator[Reference]:
    """``import a.b.Cart;`` binds Cart; ``import static a.b.Util.go;`` binds go."""
    node = captures["import"][0]
    target = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")),
                  None)
    if target is None or any(c.type == "asterisk" for c in node.named_children):
        return
    parts = refs.text(target).split(".")
    static = any(c.type == "static" for c in node.children)
    if static and len(parts) >= 3:
        stem, fqn = "/".join(parts[:-1]), ".".join(parts[-2:])
    else:
        stem, fqn = "/".join(parts), parts[-1]
    refs.imports[parts[-1]] = (stem, fqn)
    index = refs.scope_index(node.start_byte)
    yield Reference("import", parts[-1], node.start_point.row + 1, None, index,
                    targets=((stem, fqn),), imported=True)


JAVA = Language(query_text("rag.languages.java", "java"),
                self_names=frozenset({"this"}), implicit_members=True,
                read_import=read_import)


LANGUAGES: Mapping[str, Language] = {"java": JAVA}
