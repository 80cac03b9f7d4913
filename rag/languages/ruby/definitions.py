"""What Ruby declares: classes, modules, methods and singleton methods (``def self.f``)."""

from collections.abc import Mapping

from rag.languages.syntax import Rules

RULES: Mapping[str, Rules] = {
    "ruby": Rules(
        {"class": "CLASS", "module": "MODULE", "method": "FUNCTION",
         "singleton_method": "METHOD"},
        {},
        {},
    ),
}
