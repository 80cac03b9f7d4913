; Rust: calls (plain, on a receiver, through a path), struct literals, `use`,
; impl Trait for Type, supertraits, typed variables and Type::new() results.
(call_expression function: (identifier) @call.name)
(call_expression function: (field_expression value: (_) @call.recv
                                              field: (field_identifier) @call.name))
(call_expression function: (scoped_identifier) @call.path)
(struct_expression name: [(type_identifier) (scoped_type_identifier)] @new)
(use_declaration) @import
(impl_item trait: [(type_identifier) (scoped_type_identifier)] @implements)
(impl_item trait: (generic_type type: [(type_identifier) (scoped_type_identifier)] @implements))
(trait_item bounds: (trait_bounds [(type_identifier) (scoped_type_identifier)] @inherits))
(parameter pattern: (identifier) @typed.var
           type: [(type_identifier) @typed.type (reference_type type: (type_identifier) @typed.type)])
(let_declaration pattern: (identifier) @typed.var type: (type_identifier) @typed.type)
(let_declaration pattern: (identifier) @made.var
                 value: (call_expression function: (scoped_identifier path: (identifier) @made.type)))
