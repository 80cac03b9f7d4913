"""Everything local-rag knows about a programming language, in one place, read by both the
chunker (``rag.chunking``) and the code graph (``rag.graph``), which do not import each other.

Shared modules:

* ``detection``: which language a file is in (extension, file name, shebang), and the
  language names a user may type.
* ``syntax``: ``parse_tree`` (one tree-sitter parser per grammar and thread) and what rules are
  written with (``Definition``, ``Rules``, node helpers).
* ``definitions``: what a node declares (``find_definition``, ``may_define``), from the
  ``RULES`` of each language folder, or generically for every other grammar.
* ``references``: the code graph's reference readers by grammar name (``LANGUAGES``), from
  each language folder's ``references.py``.

One folder per language (family): ``python``, ``javascript`` (JavaScript, TypeScript, JSX,
TSX), ``go``, ``java``, ``rust``, ``c_family`` (C, C++ and the grammars built on them),
``ruby``, ``make``. A folder holds ``definitions.py`` (its ``RULES``: what the chunker cuts
and the graph names), ``references.py`` (how the graph reads its imports and calls) and the
tree-sitter queries that file loads (``*.scm``); its docstring says where the language's
rules in SQL are. Resolution stays in PostgreSQL by design (``sql/05x_graph_*.sql``, notes in
``sql/GRAPH.md``): a folder points to those rules, it does not hold them.

Adding a language: a folder with its ``definitions.py`` (and ``references.py`` + queries for
the graph), one entry in ``definitions._RULES`` (and ``references.LANGUAGES``), the package in
pyproject.toml's ``packages`` (and its ``*.scm`` in ``package-data``).
"""
