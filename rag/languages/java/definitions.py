"""What Java declares: classes, records, interfaces, annotation types, enums, methods and constructors."""

from collections.abc import Mapping

from rag.languages.syntax import Rules

RULES: Mapping[str, Rules] = {
    "java": Rules(
        {"class_declaration": "CLASS", "interface_declaration": "INTERFACE",
         "enum_declaration": "ENUM", "record_declaration": "CLASS",
         "annotation_type_declaration": "INTERFACE", "method_declaration": "METHOD",
         "constructor_declaration": "METHOD", "compact_constructor_declaration": "METHOD"},
        {},
        {},
    ),
}
