; C++ (after c.scm): using, namespace aliases, calls through a path, `new`,
; base classes, declared types of variables and what `new` makes.
(using_declaration) @import
(namespace_alias_definition) @import
(call_expression function: (qualified_identifier) @call.path)
(new_expression type: [(type_identifier) (qualified_identifier)] @new)
(base_class_clause [(type_identifier) (qualified_identifier)] @inherits)
(base_class_clause (template_type name: [(type_identifier) (qualified_identifier)] @inherits))
(parameter_declaration type: (type_identifier) @typed.type
                       declarator: [(identifier) @typed.var
                                    (reference_declarator (identifier) @typed.var)
                                    (pointer_declarator declarator: (identifier) @typed.var)])
(declaration type: (type_identifier) @typed.type
             declarator: [(identifier) @typed.var (init_declarator declarator: (identifier) @typed.var)])
(init_declarator declarator: (identifier) @made.var
                 value: (new_expression type: (type_identifier) @made.type))
