; JavaScript's bases (after ecmascript.scm).
(class_heritage (identifier) @inherits)
(class_heritage (member_expression) @inherits)
