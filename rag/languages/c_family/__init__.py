"""C and C++ (and, for definitions, the grammars built on theirs: Objective-C, GLSL, ISPC, CUDA,
Arduino, HLSL): ``definitions.py`` (functions, ``Box::size`` as a method, structs, unions, enums,
classes, typedefs, macros, namespaces, templates), ``references.py`` (``#include`` as an
import of a whole module, ``using``, namespace aliases) with ``c.scm`` (shared) and ``cpp.scm``.
Before parsing, ``preprocessor.py`` keeps one branch of each ``#if`` and ``attribute_macros.py``
blanks ``FORCE_INLINE``-style macros before a declaration (``rag.languages.syntax.parse_tree``).

Rules in SQL: ``sql/052_graph_resolve.sql``: ``rag._include_candidates`` (``#include "x.h"``
takes x.h and x.c whole, umbrella headers 3 deep; a source file passes nothing on) and
``rag._resolve_kinds`` (C++ overloads stay candidates); ``sql/050_graph_store.sql``:
``rag._note_members_above`` (a method defined outside its class); ``sql/056_graph_read.sql``:
``rag._is_module_import``.
"""
