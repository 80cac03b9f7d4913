; C (and the first part of C++'s queries): #include "x.h", calls.
(preproc_include path: (string_literal)) @import
(call_expression function: (identifier) @call.name)
(call_expression function: (field_expression argument: (_) @call.recv
                                              field: (field_identifier) @call.name))
