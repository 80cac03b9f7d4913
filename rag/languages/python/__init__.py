"""Python: ``definitions.py`` (classes and functions, decorated or not), ``references.py``
(imports, ``self``/``cls``, builtins, ``__init__`` as a folder's module) with ``python.scm``.

Rules in SQL: ``sql/052_graph_resolve.sql``: ``rag._include_candidates`` (``from m import *``
takes a module whole) and ``rag._resolve_kinds`` (a later definition replaces an earlier one:
one candidate per fqn and file, as for the other dynamic languages; a ``.pyi`` stub only where
no module defines the name).
"""
