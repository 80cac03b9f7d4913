"""Ruby's references: ``self``, unqualified calls of the class's members,
``X.new`` as a construction of X, and builtins. ``require`` binds no name, so
Ruby has no import reader; ``include``/``extend``/``prepend`` are in ruby.scm."""

from collections.abc import Mapping

from rag.graph.references import Language, query_text

_BUILTINS = frozenset({
    "require", "require_relative", "include", "extend", "prepend", "attr_accessor", "attr_reader",
    "attr_writer", "puts", "print", "p", "raise", "private", "protected", "public", "lambda",
    "proc", "loop", "format", "sprintf", "block_given?", "module_function", "define_method",
})

RUBY = Language(query_text("rag.languages.ruby", "ruby"),
                self_names=frozenset({"self"}), implicit_members=True,
                builtins=_BUILTINS, constructor="new")


LANGUAGES: Mapping[str, Language] = {"ruby": RUBY}
