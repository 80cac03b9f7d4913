"""Rust: ``definitions.py`` (functions, structs, enums, traits, modules, constants, types, macros,
impl blocks named after their type), ``references.py`` (``use`` trees, paths through file
modules, ``self``/``Self``, ``mod.rs`` as a folder's module) with ``rust.scm``.

Rules in SQL: none of its own; the shared resolution in ``sql/052_graph_resolve.sql``.
"""
