"""JavaScript and TypeScript (JSX, TSX): ``definitions.py`` (classes, functions, arrow functions
bound to names, methods, exported constants; TypeScript's interfaces, types, enums, namespaces),
``references.py`` (ES imports and re-exports, ``require``, ``this``, builtins, ``index`` as a
folder's module) with ``ecmascript.scm`` (shared) and ``javascript.scm``/``typescript.scm``.

Rules in SQL: ``sql/052_graph_resolve.sql``: ``rag._resolve_kinds`` (a dynamic language: a later
definition replaces an earlier one, one candidate per fqn and file) and
``rag._include_candidates`` (``export * from`` takes a module whole); ``sql/056_graph_read.sql``:
``rag._is_module_import``.
"""
