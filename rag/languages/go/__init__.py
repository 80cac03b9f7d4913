"""Go: ``definitions.py`` (functions, methods named ``Type.method`` after their receiver, structs,
interfaces, types, constants), ``references.py`` (imports bind a package, a file is imported as
its folder) with ``go.scm``.

Rules in SQL: ``sql/054_graph_go_interfaces.sql`` (interface satisfaction: ``rag._go_method_sets``,
``rag._go_satisfied``); ``sql/052_graph_resolve.sql``: ``rag._import_candidates`` (a module's root
package named by ``go.mod``), ``rag._base_members`` (a type's methods in any file of its
package), ``rag._ref_candidates`` (the same folder is the same package);
``sql/056_graph_read.sql``: ``rag._graph_edges`` (a method's type, and the interfaces it
satisfies); ``sql/050_graph_store.sql``: ``rag._note_members_above`` (members by fqn: a method
is written outside its struct).
"""
