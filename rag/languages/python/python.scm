; Python: calls, imports, bases, and the types of variables (annotations, quoted too, cast(T, ...),
; SomeProxy[T], constructor calls).
(call function: (identifier) @call.name)
(call function: (attribute object: (_) @call.recv attribute: (identifier) @call.name))
(import_statement) @import
(import_from_statement) @import
(class_definition superclasses: (argument_list [(identifier) (attribute)] @inherits))
(typed_parameter (identifier) @typed.var type: (type [(identifier) (attribute)] @typed.type))
(typed_default_parameter name: (identifier) @typed.var type: (type [(identifier) (attribute)] @typed.type))
(assignment left: (identifier) @typed.var type: (type [(identifier) (attribute)] @typed.type))
(assignment left: (identifier) @typed.var type: (type (string (string_content) @typed.type)))
; a proxy of T (werkzeug's LocalProxy[T]) is used as a T
(assignment left: (identifier) @typed.var
  type: (type (generic_type (identifier) @_proxy (type_parameter . (type [(identifier) (attribute)] @typed.type))))
  (#match? @_proxy "Proxy$"))
(assignment left: (identifier) @typed.var
  type: (type (subscript value: [(identifier) (attribute)] @_proxy subscript: [(identifier) (attribute)] @typed.type))
  (#match? @_proxy "Proxy$"))
(assignment left: (identifier) @typed.var
  right: (call function: [(identifier) (attribute)] @_cast
               arguments: (argument_list . [(identifier) (attribute)] @typed.type))
  (#match? @_cast "^(.*[.])?cast$"))
(assignment left: (identifier) @typed.var
  right: (call function: [(identifier) (attribute)] @_cast
               arguments: (argument_list . (string (string_content) @typed.type)))
  (#match? @_cast "^(.*[.])?cast$"))
(assignment left: (identifier) @made.var right: (call function: [(identifier) (attribute)] @made.type))
