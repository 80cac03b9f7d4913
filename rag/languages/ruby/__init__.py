"""Ruby: ``definitions.py`` (classes, modules, methods, singleton methods), ``references.py``
(``self``, implicit member calls, ``X.new`` as a construction, builtins; ``require`` binds no
name) with ``ruby.scm`` (also ``include``/``extend``/``prepend``).

Rules in SQL: ``sql/052_graph_resolve.sql``: ``rag._resolve_kinds`` (a dynamic language: a later
definition replaces an earlier one, one candidate per fqn and file).
"""
