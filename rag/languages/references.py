"""How the code graph reads each language's references, by grammar name: ``LANGUAGES``, which
``rag.graph.extract`` consults (a language not here gets definitions only).

Each entry comes from its language's folder (``rag/languages/<lang>/references.py``: its import
reader, builtins and self names over the tree-sitter queries in the ``.scm`` files beside it).
"""

from collections.abc import Mapping

from rag.graph.references import Language
from rag.languages.c_family import references as c_family
from rag.languages.go import references as go
from rag.languages.java import references as java
from rag.languages.javascript import references as javascript
from rag.languages.python import references as python
from rag.languages.ruby import references as ruby
from rag.languages.rust import references as rust

LANGUAGES: Mapping[str, Language] = {
    **python.LANGUAGES, **javascript.LANGUAGES, **go.LANGUAGES, **java.LANGUAGES, **rust.LANGUAGES,
    **c_family.LANGUAGES, **ruby.LANGUAGES,
}
