; Java: calls, `new`, imports, extends/implements, declared types of variables and fields.
(method_invocation object: (_) @call.recv name: (identifier) @call.name)
(method_invocation !object name: (identifier) @call.name)
(object_creation_expression type: [(type_identifier) (scoped_type_identifier)] @new)
(import_declaration) @import
(superclass (type_identifier) @inherits)
(super_interfaces (type_list (type_identifier) @implements))
(extends_interfaces (type_list (type_identifier) @inherits))
(formal_parameter type: (type_identifier) @typed.type name: (identifier) @typed.var)
(local_variable_declaration type: (type_identifier) @typed.type
                            declarator: (variable_declarator name: (identifier) @typed.var))
(field_declaration type: (type_identifier) @typed.type
                   declarator: (variable_declarator name: (identifier) @typed.var))
