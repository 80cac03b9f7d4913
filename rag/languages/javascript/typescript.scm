; TypeScript's (and TSX's) bases and type annotations (after ecmascript.scm).
(extends_clause value: [(identifier) (member_expression)] @inherits)
(implements_clause [(type_identifier) (nested_type_identifier)] @implements)
(extends_type_clause type: [(type_identifier) (nested_type_identifier)] @inherits)
([(required_parameter pattern: (identifier) @typed.var type: (type_annotation _ @typed.type))
  (optional_parameter pattern: (identifier) @typed.var type: (type_annotation _ @typed.type))
  (variable_declarator name: (identifier) @typed.var type: (type_annotation _ @typed.type))
  (public_field_definition name: (property_identifier) @typed.var type: (type_annotation _ @typed.type))])
