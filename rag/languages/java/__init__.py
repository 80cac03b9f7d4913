"""Java: ``definitions.py`` (classes, records, interfaces, annotation types, enums, methods,
constructors), ``references.py`` (``import`` and ``import static``, ``this``, implicit member
calls) with ``java.scm``.

Rules in SQL: ``sql/052_graph_resolve.sql``: ``rag._ref_candidates`` (the same folder is the
same package) and ``rag._resolve_kinds`` (overloads are distinct methods and stay candidates).
"""
