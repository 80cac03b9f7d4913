; JavaScript and TypeScript alike: calls, `new`, imports, re-exports (ES and CommonJS),
; require() and what `new` makes. (Bases are in javascript.scm and typescript.scm.)
(call_expression function: (identifier) @call.name)
(call_expression function: (member_expression object: (_) @call.recv
                                               property: (property_identifier) @call.name))
(new_expression constructor: [(identifier) (member_expression)] @new)
(import_statement) @import
(export_statement source: (string)) @import
(variable_declarator name: (identifier) @require.var
                     value: (call_expression function: (identifier) @require.fn
                                             arguments: (arguments (string) @require.module))) @import
; CommonJS, at the top level: module.exports(.x) = / exports.x = require("m"), { a: require("m"), b }, or a name
(program (expression_statement
  (assignment_expression left: (member_expression) @cjs.target
                         right: [(call_expression function: (identifier)) (object) (identifier)] @cjs.value) @import))
(variable_declarator name: (identifier) @made.var
                     value: (new_expression constructor: [(identifier) (member_expression)] @made.type))
