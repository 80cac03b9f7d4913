"""What Python declares: classes and functions, decorated or not."""

from collections.abc import Mapping

from rag.languages.syntax import Rules

RULES: Mapping[str, Rules] = {
    "python": Rules(
        {"class_definition": "CLASS", "function_definition": "FUNCTION"},
        {"decorated_definition": ("definition",)},
        {},
    ),
}
