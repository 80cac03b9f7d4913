; Go: calls, imports, composite literals, typed variables, embedded fields and interfaces.
(call_expression function: (identifier) @call.name)
(call_expression function: (selector_expression operand: (_) @call.recv
                                                 field: (field_identifier) @call.name))
(import_spec) @import
(parameter_declaration name: (identifier) @typed.var
                       type: [(type_identifier) @typed.type (qualified_type) @typed.type
                              (pointer_type [(type_identifier) (qualified_type)] @typed.type)])
(var_spec name: (identifier) @typed.var type: [(type_identifier) (qualified_type)] @typed.type)
(composite_literal type: (type_identifier) @new)
(short_var_declaration left: (expression_list (identifier) @typed.var)
                       right: (expression_list (composite_literal type: (type_identifier) @typed.type)))
(field_declaration !name type: [(type_identifier) (qualified_type)] @inherits)
(interface_type (type_elem . [(type_identifier) (qualified_type)] @inherits .))
