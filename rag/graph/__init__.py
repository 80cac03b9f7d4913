"""The code graph: definitions and references read from the chunker's syntax tree
(``extract``, called by ``rag.dispatcher``; what each language contributes, its import
reader and tree-sitter queries, is in its folder under ``rag/languages/``), stored,
resolved and walked in SQL (``sql/05x_graph_*.sql``), and asked from Python through
``api``, whose names this package re-exports."""

from rag.errors import GraphError
from rag.graph.api import DIRECTIONS, EDGES, RELATIONS, find_symbols, named_relation, traverse

__all__ = ["DIRECTIONS", "EDGES", "RELATIONS", "GraphError", "find_symbols", "named_relation", "traverse"]
