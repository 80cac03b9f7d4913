; Ruby: calls, superclasses, and include/extend/prepend of a module (no imports: require binds nothing).
(call receiver: (_) @call.recv method: (identifier) @call.name)
(call !receiver method: (identifier) @call.name)
(class superclass: (superclass [(constant) (scope_resolution)] @inherits))
((call !receiver method: (identifier) @mixin
       arguments: (argument_list [(constant) (scope_resolution)] @implements))
 (#any-of? @mixin "include" "extend" "prepend"))
